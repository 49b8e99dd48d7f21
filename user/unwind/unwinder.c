// SPDX-License-Identifier: GPL-2.0
/*
 * Tables for the BPF DWARF walk.  A file's rows are built once, on the
 * first process that maps it, and appended to the one rows array; processes
 * get a sorted list of their executable mappings with the bias that turns a
 * pc into the file's link-time address.  Files are keyed by device, inode and
 * mtime (so that two containers' copies of one libc share nothing, but two
 * processes of one container share everything).  The rows array only grows:
 * what does not fit is walked with frame pointers and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <gelf.h>
#include "cfi.h"
#include "unwinder.h"
#include "util.h"

#define MAX_LOADS 8
#define ROWS_BATCH 4096

struct unwind_file {
	uint64_t dev, ino;
	int64_t mtime_ns;
	struct { uint64_t vaddr, offset, filesz; } loads[MAX_LOADS];
	int nloads;
	uint32_t first_row;
	uint32_t nrows;		/* 0: no table (none in the file, or no room): frame pointers */
};

struct unwinder {
	int rows_fd;
	int procs_fd;
	uint32_t rows_cap;
	uint32_t rows_used;
	struct unwind_file *files;
	size_t nfiles, files_cap;
	struct unwind_proc *scratch;	/* 4 KiB: not on the stack */
	/* for the report */
	uint64_t eh_frame_bytes;
	uint64_t build_ns;
	uint32_t files_without;		/* no .eh_frame (or none the walk can use) */
	uint32_t files_no_room;		/* rows array full */
	uint32_t procs_written;
	uint32_t procs_full;		/* unwind_procs full even after dropping the dead */
	uint32_t mappings_dropped;	/* beyond UNWIND_MAX_MAPPINGS in one process */
	uint32_t unsupported_rows;
};

static struct unwind_file *file_get(struct unwinder *u, uint32_t tgid, uint64_t start, uint64_t end,
				    const char *path);

/*
 * Nearly every process maps the host's libc and dynamic loader: their tables
 * (10 ms) are built before the first sample, so that a new process's first
 * samples wait only for its own files.  Other roots (containers) are built
 * when met.
 */
static void prebuild_host_libc(struct unwinder *u)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
		"/usr/lib64/libc.so.6", "/lib/ld-musl-x86_64.so.1",
	};
	uint32_t self = (uint32_t)getpid();

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], R_OK) == 0)
			file_get(u, self, 0, 0, paths[i]);	/* no map_files entry: the root path */
}

struct unwinder *unwinder_new(int rows_fd, uint32_t rows_cap, int procs_fd)
{
	struct unwinder *u = calloc_logged(1, sizeof(*u));

	if (!u)
		return NULL;
	u->scratch = calloc_logged(1, sizeof(*u->scratch));
	if (!u->scratch) {
		free(u);
		return NULL;
	}
	u->rows_fd = rows_fd;
	u->rows_cap = rows_cap;
	u->procs_fd = procs_fd;
	prebuild_host_libc(u);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	free(u->files);
	free(u->scratch);
	free(u);
}

/* ---- files ---- */

static struct unwind_file *file_find(struct unwinder *u, uint64_t dev, uint64_t ino, int64_t mtime_ns)
{
	for (size_t i = 0; i < u->nfiles; i++)
		if (u->files[i].dev == dev && u->files[i].ino == ino && u->files[i].mtime_ns == mtime_ns)
			return &u->files[i];
	return NULL;
}

static void file_read_loads(Elf *elf, struct unwind_file *f)
{
	size_t nphdrs;

	if (elf_getphdrnum(elf, &nphdrs))
		return;
	for (size_t i = 0; i < nphdrs && f->nloads < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			f->loads[f->nloads].vaddr = ph.p_vaddr;
			f->loads[f->nloads].offset = ph.p_offset;
			f->loads[f->nloads].filesz = ph.p_filesz;
			f->nloads++;
		}
	}
}

/* Writes rows [first, first + n) of the rows map, in batches where the kernel has them. */
static int rows_write(struct unwinder *u, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	static uint32_t keys[ROWS_BATCH];

	for (uint32_t done = 0; done < n;) {
		uint32_t count = n - done < ROWS_BATCH ? n - done : ROWS_BATCH;

		for (uint32_t i = 0; i < count; i++)
			keys[i] = first + done + i;
		if (bpf_map_update_batch(u->rows_fd, keys, rows + done, &count, NULL)) {
			/* No batch ops (before 5.6): one by one. */
			for (uint32_t i = 0; i < count; i++)
				if (bpf_map_update_elem(u->rows_fd, &keys[i], &rows[done + i], BPF_ANY))
					return -errno;
		}
		done += count;
	}
	return 0;
}

/* Builds @f's rows from the ELF in @elf and puts them in the rows map, if there is room. */
static void file_build(struct unwinder *u, struct unwind_file *f, Elf *elf, const char *what)
{
	struct cfi_table t;
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	int err;

	file_read_loads(elf, f);
	err = cfi_table_build(elf, &t);
	u->build_ns += now_ns(CLOCK_MONOTONIC) - start;
	if (err) {
		u->files_without++;
		log_info("unwind: no table for %s: %s", what, strerror(-err));
		return;
	}
	u->eh_frame_bytes += t.eh_frame_bytes;
	u->unsupported_rows += t.unsupported;
	if (t.nrows > u->rows_cap - u->rows_used) {
		u->files_no_room++;
		log_info("unwind: no room for the %zu rows of %s", t.nrows, what);
	} else if ((err = rows_write(u, u->rows_used, t.rows, t.nrows)) != 0) {
		log_warn("unwind: cannot write the rows of %s: %s", what, strerror(-err));
	} else {
		f->first_row = u->rows_used;
		f->nrows = t.nrows;
		u->rows_used += t.nrows;
	}
	cfi_table_free(&t);
}

static struct unwind_file *file_add(struct unwinder *u, uint64_t dev, uint64_t ino, int64_t mtime_ns)
{
	struct unwind_file *grown;

	if (u->nfiles == u->files_cap) {
		size_t cap = u->files_cap ? u->files_cap * 2 : 64;

		grown = realloc(u->files, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		u->files = grown;
		u->files_cap = cap;
	}
	grown = &u->files[u->nfiles++];
	memset(grown, 0, sizeof(*grown));
	grown->dev = dev;
	grown->ino = ino;
	grown->mtime_ns = mtime_ns;
	return grown;
}

/* map_files works for deleted files and other mount namespaces; the root path when it does not. */
static int open_mapped(uint32_t tgid, uint64_t start, uint64_t end, const char *path)
{
	char buf[4096 + 64];
	int fd;

	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, tgid, start, end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (snprintf(buf, sizeof(buf), "/proc/%u/root%s", tgid, path) >= (int)sizeof(buf))
		return -1;
	return open(buf, O_RDONLY | O_CLOEXEC);
}

static struct unwind_file *file_get(struct unwinder *u, uint32_t tgid, uint64_t start, uint64_t end,
				    const char *path)
{
	struct unwind_file *f;
	struct stat st;
	Elf *elf;
	int fd = open_mapped(tgid, start, end, path);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	f = file_find(u, st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
	if (!f)
		f = file_add(u, st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
	else
		goto out;
	if (!f)
		goto out;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		file_build(u, f, elf, path);
	else
		u->files_without++;
	elf_end(elf);
out:
	close(fd);
	return f;
}

/* Our own vDSO: every 64-bit process of this kernel maps the same image. Device and inode 0. */
static struct unwind_file *vdso_get(struct unwinder *u)
{
	struct unwind_file *f = file_find(u, 0, 0, 0);
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	Elf *elf;

	if (f || !base)
		return f;
	f = file_add(u, 0, 0, 0);
	if (!f)
		return NULL;
	/* 64 KiB covers the vDSO (8 KiB here); elf_memory only reads what the headers name. */
	elf = elf_memory((char *)(uintptr_t)base, 64 * 1024);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		file_build(u, f, elf, "[vdso]");
	elf_end(elf);
	return f;
}

/* pc - bias = the link-time address: through the executable PT_LOAD that maps @offset. */
static bool file_bias(const struct unwind_file *f, uint64_t start, uint64_t offset, __u64 *bias)
{
	long page = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < f->nloads; i++) {
		uint64_t seg_off = f->loads[i].offset & ~(uint64_t)(page - 1);

		if (offset >= seg_off && offset < f->loads[i].offset + f->loads[i].filesz) {
			*bias = start - (f->loads[i].vaddr + offset - f->loads[i].offset);
			return true;
		}
	}
	return false;
}

/* ---- processes ---- */

/* One executable maps line into @m; false for lines the walk has no use for. */
static bool mapping_from_line(struct unwinder *u, uint32_t tgid, char *line, struct unwind_mapping *m)
{
	uint64_t start, end, offset, ino;
	unsigned int major, minor;
	char perms[5];
	const char *path;
	struct unwind_file *f = NULL;
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &start, &end, perms, &offset, &major, &minor, &ino, &pos) < 7 || !pos || perms[2] != 'x')
		return false;
	line[strcspn(line, "\n")] = '\0';
	path = line + pos;
	if (strcmp(path, "[vsyscall]") == 0)
		return false;	/* above the user address space: no walk goes there */
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	if (path[0] == '/' && ino)
		f = file_get(u, tgid, start, end, path);
	else if (strcmp(path, "[vdso]") == 0)
		f = vdso_get(u);
	/* Anonymous (JIT) code and files without a table: frame pointers (nrows 0). */
	if (f && f->nrows && file_bias(f, start, offset, &m->bias)) {
		m->first_row = f->first_row;
		m->nrows = f->nrows;
	}
	return true;
}

static int proc_read(struct unwinder *u, uint32_t tgid, struct unwind_proc *proc)
{
	char path[64], *line = NULL;
	size_t lcap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	memset(proc, 0, sizeof(*proc));
	while (getline(&line, &lcap, f) > 0) {
		struct unwind_mapping m;

		if (!mapping_from_line(u, tgid, line, &m))
			continue;
		if (proc->nmappings == UNWIND_MAX_MAPPINGS) {
			u->mappings_dropped++;
			continue;
		}
		proc->mappings[proc->nmappings++] = m;	/* /proc/PID/maps is sorted by address */
	}
	free(line);
	fclose(f);
	return proc->nmappings ? 0 : -ESRCH;	/* a kernel thread or a zombie */
}

/* Drops the entries of processes that are gone; the number dropped. */
static int procs_sweep(struct unwinder *u)
{
	uint32_t key, next, *prev = NULL;
	int dropped = 0;

	while (!bpf_map_get_next_key(u->procs_fd, prev, &next)) {
		key = next;
		if (kill((pid_t)key, 0) && errno == ESRCH && !bpf_map_delete_elem(u->procs_fd, &key)) {
			dropped++;
			continue;	/* prev stays: the next key after it is still right */
		}
		prev = &key;
	}
	return dropped;
}

int unwinder_track(struct unwinder *u, uint32_t tgid)
{
	int err = proc_read(u, tgid, u->scratch);

	if (err)
		return err;
	if (bpf_map_update_elem(u->procs_fd, &tgid, u->scratch, BPF_ANY)) {
		if (errno != E2BIG || !procs_sweep(u) ||
		    bpf_map_update_elem(u->procs_fd, &tgid, u->scratch, BPF_ANY)) {
			u->procs_full++;
			return -errno;
		}
	}
	u->procs_written++;
	return 0;
}

void unwinder_report(const struct unwinder *u, FILE *out)
{
	uint64_t table_bytes = (uint64_t)u->rows_used * sizeof(struct unwind_row);
	size_t with = 0;

	for (size_t i = 0; i < u->nfiles; i++)
		with += u->files[i].nrows != 0;
	fprintf(out, "aperture: unwind tables: %zu files, %u rows, %.1f MiB (%.0f KiB per MiB of .eh_frame), "
		"built in %.0f ms; %u files without, %u without room, %u mappings beyond %d per process, "
		"%u processes not tracked\n",
		with, u->rows_used, table_bytes / 1048576.0,
		u->eh_frame_bytes ? table_bytes / 1024.0 / (u->eh_frame_bytes / 1048576.0) : 0.0,
		u->build_ns / 1e6, u->files_without, u->files_no_room, u->mappings_dropped,
		UNWIND_MAX_MAPPINGS, u->procs_full);
}
