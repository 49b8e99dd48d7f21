// SPDX-License-Identifier: GPL-2.0
/*
 * Tables for the BPF DWARF walk.  A file's rows are built once, on the
 * first process that maps it, and appended to the one rows array; processes
 * get a sorted list of their executable mappings with the bias that turns a
 * pc into the file's link-time address.  Files are keyed by device, inode and
 * mtime (so that two containers' copies of one libc share nothing, but two
 * processes of one container share everything).  The rows array is bounded
 * (--unwind-rows): when a table does not fit, the processes that are gone are
 * dropped and the rows of files no live process maps are freed (first fit
 * over the freed ranges); a table that still does not fit is counted and its
 * file walked with frame pointers.
 *
 * Each file with a mapping also gets an entry in unwind_files (its escaped
 * path and build id), keyed by its index + 1 here, so that the pinned
 * iterator prints its frames as FILE+0xADDRESS; entries of files no tracked
 * process maps go when that map is full.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <gelf.h>
#include "cfi.h"
#include "elfnote.h"
#include "python.h"
#include "rowindex.h"
#include "unwinder.h"
#include "util.h"
#include "procmaps.h"
#include "safe_open.h"

#define MAX_LOADS 8
#define ROWS_BATCH 4096
/* A BPF array keeps each value in an 8-byte aligned element: a 12-byte row takes 16 in its mapping. */
#define ROW_ELEM_BYTES ((sizeof(struct unwind_row) + 7) & ~(size_t)7)
/* An ELF file is mmapped, not read: bounded only against a sparse file of any size. */
#define MAX_ELF_SIZE (4ull << 30)

struct unwind_file {
	uint64_t dev, ino;
	int64_t mtime_ns;
	struct { uint64_t vaddr, offset, filesz; } loads[MAX_LOADS];
	int nloads;
	uint32_t first_row;
	uint32_t nrows;		/* 0: no table (none in the file, or no room): frame pointers */
	uint32_t index_rows;	/* slots of its page index, just before first_row (rowindex.h) */
	bool fp_frames;		/* its rows keep frame pointers (cfi_table.fp_frames): UNWIND_MAPPING_FP_FRAMES */
	uint32_t refs;		/* live tracked processes mapping it */
	uint64_t last_used;	/* unwinder.clock when a process last mapped it: eviction order */
	bool evicted;		/* its rows were freed: built again when a process maps it */
	bool listed;		/* it has its entry in unwind_files */
	bool unnamed;		/* its path, escaped, is too long for unwind_files: never listed */
	char build_id[UNWIND_FILE_BUILD_ID_MAX];	/* hex, "" when none */
};

/* Rows freed by evictions, sorted by first, neighbours merged. */
struct row_range {
	uint32_t first, count;
};

/* A process whose mappings are in unwind_procs, and the files they name. */
struct tracked_proc {
	uint32_t tgid;
	uint32_t nfiles;
	uint32_t *files;	/* indices into unwinder.files */
};

struct unwinder {
	/*
	 * Tables are built by a worker thread, so that the loader's reading of
	 * the ring buffer (new processes' maps, for symbols) never waits for a
	 * big binary's table: a short-lived process would be gone by then.
	 * queue_lock guards the queue; state_lock everything below it.
	 */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t queue_lock;
	pthread_cond_t queue_cond;
	uint32_t *queue;		/* tgids to (re)track, in arrival order */
	size_t nqueue, queue_cap;
	bool stop;
	pthread_mutex_t state_lock;
	int rows_fd;
	int procs_fd;
	int files_fd;
	uint32_t files_map_cap;		/* unwind_files' max_entries */
	uint32_t files_listed;		/* entries in unwind_files now */
	uint32_t rows_cap;
	uint32_t rows_used;
	bool rows_by_syscall;		/* the rows map refused a mapping (not mmapable): bpf() writes */
	struct unwind_file *files;
	size_t nfiles, files_cap;
	struct unwind_proc *scratch;	/* 4 KiB: not on the stack */
	uint32_t scratch_files[UNWIND_MAX_MAPPINGS];	/* the files of the mappings in scratch */
	uint32_t scratch_nfiles;
	uint64_t clock;			/* one tick per process tracked */
	struct row_range *free_rows;
	size_t nfree, free_cap;
	struct tracked_proc *procs;
	size_t nprocs, procs_cap;
	struct pywalker *py;		/* CPython processes (--python), or NULL */
	/* for the report */
	uint64_t eh_frame_bytes;
	size_t build_peak_bytes;	/* the largest table built, while built */
	uint64_t build_ns;
	uint32_t files_without;		/* no .eh_frame (or none the walk can use) */
	uint32_t files_refused;		/* over CFI_MAX_FILE_WORK steps to build: hostile or broken */
	uint32_t files_no_room;		/* rows array full, even after evicting */
	uint32_t files_evicted;		/* rows freed for others' (no live process mapped them) */
	uint32_t procs_written;
	uint32_t procs_full;		/* unwind_procs full even after dropping the dead */
	uint32_t mappings_dropped;	/* beyond UNWIND_MAX_MAPPINGS in one process */
	uint32_t unsupported_rows;
	uint32_t files_unnamed;		/* files whose path is too long, and tries that found no room: hex frames */
};

static struct unwind_file *file_get(struct unwinder *u, uint32_t tgid, uint64_t start, uint64_t end,
				    const char *path, uint64_t ino);

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
			file_get(u, self, 0, 0, paths[i], 0);	/* no map_files entry: the root path */
}

static int track_now(struct unwinder *u, uint32_t tgid);

/* CPython processes not initialized when last looked at: queued again (state_lock held by the caller). */
static void queue_python_retries(struct unwinder *u)
{
	uint32_t tgids[64];
	size_t n = pywalker_take_retries(u->py, tgids, 64);

	for (size_t i = 0; i < n; i++)
		unwinder_track(u, tgids[i]);
}

/* Takes the next queued tgid; false when told to stop.  Wakes every 100 ms while a CPython waits. */
static bool queue_pop(struct unwinder *u, uint32_t *tgid)
{
	bool retries;

	pthread_mutex_lock(&u->state_lock);
	retries = pywalker_has_retries(u->py);
	pthread_mutex_unlock(&u->state_lock);
	pthread_mutex_lock(&u->queue_lock);
	while (!u->nqueue && !u->stop) {
		struct timespec until;

		if (!retries) {
			pthread_cond_wait(&u->queue_cond, &u->queue_lock);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&u->queue_cond, &u->queue_lock, &until) == ETIMEDOUT) {
			pthread_mutex_unlock(&u->queue_lock);
			pthread_mutex_lock(&u->state_lock);
			queue_python_retries(u);
			retries = pywalker_has_retries(u->py);
			pthread_mutex_unlock(&u->state_lock);
			pthread_mutex_lock(&u->queue_lock);
		}
	}
	if (u->stop) {
		pthread_mutex_unlock(&u->queue_lock);
		return false;
	}
	*tgid = u->queue[0];
	memmove(u->queue, u->queue + 1, --u->nqueue * sizeof(*u->queue));
	pthread_mutex_unlock(&u->queue_lock);
	return true;
}

static void *worker_main(void *arg)
{
	struct unwinder *u = arg;
	uint32_t tgid;

	pthread_mutex_lock(&u->state_lock);
	prebuild_host_libc(u);
	pthread_mutex_unlock(&u->state_lock);
	while (queue_pop(u, &tgid)) {
		pthread_mutex_lock(&u->state_lock);
		track_now(u, tgid);	/* gone already: nothing to unwind */
		pthread_mutex_unlock(&u->state_lock);
	}
	return NULL;
}

struct unwinder *unwinder_new(int rows_fd, uint32_t rows_cap, int procs_fd, int files_fd, uint32_t files_cap)
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
	u->files_fd = files_fd;
	u->files_map_cap = files_cap;
	/* libelf refuses every file until a version is set; the worker may come before the symbolizer. */
	elf_version(EV_CURRENT);
	pthread_mutex_init(&u->queue_lock, NULL);
	pthread_cond_init(&u->queue_cond, NULL);
	pthread_mutex_init(&u->state_lock, NULL);
	if (thread_start(&u->worker, worker_main, u)) {
		log_warn("unwind: cannot start the table builder: stacks by frame pointers only");
		unwinder_free(u);
		return NULL;
	}
	u->worker_started = true;
	return u;
}

void unwinder_bytes(struct unwinder *u, size_t *held, size_t *build_peak)
{
	size_t bytes = heap_bytes(u) + heap_bytes(u->scratch);

	pthread_mutex_lock(&u->state_lock);
	bytes += heap_bytes(u->files) + heap_bytes(u->procs) + heap_bytes(u->free_rows);
	for (size_t i = 0; i < u->nprocs; i++)
		bytes += heap_bytes(u->procs[i].files);
	*build_peak = u->build_peak_bytes;
	pthread_mutex_lock(&u->queue_lock);
	bytes += heap_bytes(u->queue);
	pthread_mutex_unlock(&u->queue_lock);
	pthread_mutex_unlock(&u->state_lock);
	*held = bytes;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->worker_started) {
		pthread_mutex_lock(&u->queue_lock);
		u->stop = true;
		pthread_cond_signal(&u->queue_cond);
		pthread_mutex_unlock(&u->queue_lock);
		pthread_join(u->worker, NULL);
	}
	pthread_mutex_destroy(&u->queue_lock);
	pthread_cond_destroy(&u->queue_cond);
	pthread_mutex_destroy(&u->state_lock);
	free(u->queue);
	pywalker_free(u->py);
	for (size_t i = 0; i < u->nprocs; i++)
		free(u->procs[i].files);
	free(u->procs);
	free(u->free_rows);
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

/*
 * Rows [first, first + n) of the rows map stored through a shared mapping of
 * just their pages: the map is created BPF_F_MMAPABLE (profiler.c).  bpf()'s
 * batch update costs ~95 ns a row here (the kernel copies in and updates one
 * element at a time), a store only its page's first touch: `record -p` of a
 * pyenv python3.8 process (190,000 rows) 127 -> 120 ms of CPU.  The walk
 * finds rows only through a process's mappings, written after them by bpf()
 * (unwind_procs, a hash map whose update publishes with a release on this
 * CPU), so it never reads a half-stored row.  @n > 0: a mapping of no pages
 * is refused.
 */
static int rows_store(struct unwinder *u, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = first * (uint64_t)ROW_ELEM_BYTES, hi = (first + (uint64_t)n) * ROW_ELEM_BYTES;
	uint64_t map_lo = lo & ~(page - 1), map_len = ((hi + page - 1) & ~(page - 1)) - map_lo;
	char *mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, (off_t)map_lo);

	if (mem == MAP_FAILED)
		return -errno;
	for (uint32_t i = 0; i < n; i++)
		memcpy(mem + (lo - map_lo) + i * ROW_ELEM_BYTES, &rows[i], sizeof(rows[i]));
	munmap(mem, map_len);
	return 0;
}

/* Rows [first, first + n) by bpf(): in batches where the kernel has them (5.6+), else one by one. */
static int rows_update(struct unwinder *u, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	static uint32_t keys[ROWS_BATCH];

	for (uint32_t done = 0; done < n;) {
		uint32_t count = n - done < ROWS_BATCH ? n - done : ROWS_BATCH;

		for (uint32_t i = 0; i < count; i++)
			keys[i] = first + done + i;
		if (bpf_map_update_batch(u->rows_fd, keys, rows + done, &count, NULL)) {
			for (uint32_t i = 0; i < count; i++)
				if (bpf_map_update_elem(u->rows_fd, &keys[i], &rows[done + i], BPF_ANY))
					return -errno;
		}
		done += count;
	}
	return 0;
}

/*
 * Writes rows [first, first + n) of the rows map: stored through a mapping,
 * or by bpf() once the map refused one (a map pinned by a build before this
 * one was not mmapable).  No rows (a file too small for a page index) is no
 * write: asked of mmap, a page-aligned empty range would be refused and taken
 * for a map that cannot be mapped.
 */
static int rows_write(struct unwinder *u, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	int err;

	if (!n)
		return 0;
	if (!u->rows_by_syscall) {
		err = rows_store(u, first, rows, n);
		if (!err)
			return 0;
		u->rows_by_syscall = true;
		log_info("unwind: the rows map cannot be mapped (%s): rows written by bpf()", strerror(-err));
	}
	return rows_update(u, first, rows, n);
}

/* ---- room in the rows array ---- */

static int range_free(struct unwinder *u, uint32_t first, uint32_t count)
{
	size_t i = 0;

	while (i < u->nfree && u->free_rows[i].first < first)
		i++;
	if (array_reserve((void **)&u->free_rows, &u->free_cap, u->nfree, sizeof(*u->free_rows), 16))
		return -ENOMEM;	/* those rows stay lost: counted nowhere, harmless */
	memmove(&u->free_rows[i + 1], &u->free_rows[i], (u->nfree - i) * sizeof(*u->free_rows));
	u->free_rows[i] = (struct row_range){ first, count };
	u->nfree++;
	/* Merge with the next, then with the previous. */
	if (i + 1 < u->nfree && first + count == u->free_rows[i + 1].first) {
		u->free_rows[i].count += u->free_rows[i + 1].count;
		memmove(&u->free_rows[i + 1], &u->free_rows[i + 2], (u->nfree - i - 2) * sizeof(*u->free_rows));
		u->nfree--;
	}
	if (i > 0 && u->free_rows[i - 1].first + u->free_rows[i - 1].count == first) {
		u->free_rows[i - 1].count += u->free_rows[i].count;
		memmove(&u->free_rows[i], &u->free_rows[i + 1], (u->nfree - i - 1) * sizeof(*u->free_rows));
		u->nfree--;
	}
	/*
	 * The last range meeting the never-used end is that end again: apart,
	 * a request bigger than each but not than both found no room.
	 */
	if (u->nfree && u->free_rows[u->nfree - 1].first + u->free_rows[u->nfree - 1].count == u->rows_used) {
		u->rows_used = u->free_rows[u->nfree - 1].first;
		u->nfree--;
	}
	return 0;
}

/* First fit over the freed ranges, then the never-used end. */
static bool range_take(struct unwinder *u, uint32_t count, uint32_t *first)
{
	for (size_t i = 0; i < u->nfree; i++) {
		struct row_range *r = &u->free_rows[i];

		if (r->count < count)
			continue;
		*first = r->first;
		r->first += count;
		r->count -= count;
		if (!r->count) {
			memmove(r, r + 1, (u->nfree - i - 1) * sizeof(*r));
			u->nfree--;
		}
		return true;
	}
	if (count > u->rows_cap - u->rows_used)
		return false;
	*first = u->rows_used;
	u->rows_used += count;
	return true;
}

static int procs_sweep(struct unwinder *u);

/* Frees the rows of the file no live process maps that was used longest ago; false when there is none. */
static bool evict_one(struct unwinder *u)
{
	struct unwind_file *oldest = NULL;

	for (size_t i = 0; i < u->nfiles; i++) {
		struct unwind_file *f = &u->files[i];

		if (!f->refs && f->nrows && (!oldest || f->last_used < oldest->last_used))
			oldest = f;
	}
	if (!oldest || range_free(u, oldest->first_row - oldest->index_rows, oldest->index_rows + oldest->nrows))
		return false;
	oldest->nrows = 0;
	oldest->index_rows = 0;
	oldest->fp_frames = false;
	oldest->evicted = true;
	u->files_evicted++;
	return true;
}

static bool rows_alloc(struct unwinder *u, uint32_t count, uint32_t *first)
{
	if (range_take(u, count, first))
		return true;
	procs_sweep(u);	/* the dead's files become evictable */
	while (evict_one(u))
		if (range_take(u, count, first))
			return true;
	return false;
}

/* Builds @f's rows from the ELF in @elf and puts them in the rows map, if there is room. */
static void file_build(struct unwinder *u, struct unwind_file *f, Elf *elf, const char *what)
{
	struct cfi_table t;
	struct unwind_row *index = NULL;
	uint64_t start = now_ns(CLOCK_MONOTONIC);
	uint32_t first, nindex = 0;
	int err;

	f->nloads = 0;
	file_read_loads(elf, f);
	elf_build_id_hex(elf, f->build_id, sizeof(f->build_id));
	err = cfi_table_build(elf, &t);
	u->build_ns += now_ns(CLOCK_MONOTONIC) - start;
	if (!err && cfi_table_bytes(&t) > u->build_peak_bytes)
		u->build_peak_bytes = cfi_table_bytes(&t);
	if (err == -E2BIG) {
		u->files_refused++;
		log_warn("unwind: no table for %s: over %zu steps to build (its .eh_frame is hostile or broken)",
			 what, (size_t)CFI_MAX_FILE_WORK);
		return;
	}
	if (err) {
		u->files_without++;
		log_info("unwind: no table for %s: %s", what, strerror(-err));
		return;
	}
	if (!f->evicted) {
		u->eh_frame_bytes += t.eh_frame_bytes;
		u->unsupported_rows += t.unsupported;
	}
	f->evicted = false;
	if (rowindex_build(t.rows, t.nrows, &index, &nindex)) {
		log_warn("unwind: no page index for %s: out of memory (its rows are searched whole)", what);
		nindex = 0;
	}
	if (t.nrows > UINT32_MAX - nindex || !rows_alloc(u, nindex + (uint32_t)t.nrows, &first)) {
		u->files_no_room++;
		log_info("unwind: no room for the %zu rows of %s", t.nrows, what);
	} else if ((err = rows_write(u, first, index, nindex)) != 0 ||
		   (err = rows_write(u, first + nindex, t.rows, (uint32_t)t.nrows)) != 0) {
		log_warn("unwind: cannot write the rows of %s: %s", what, strerror(-err));
		range_free(u, first, nindex + (uint32_t)t.nrows);
	} else {
		f->first_row = first + nindex;
		f->nrows = (uint32_t)t.nrows;
		f->index_rows = nindex;
		f->fp_frames = t.fp_frames;
	}
	free(index);
	cfi_table_free(&t);
}

static struct unwind_file *file_add(struct unwinder *u, uint64_t dev, uint64_t ino, int64_t mtime_ns)
{
	struct unwind_file *grown;

	if (array_reserve((void **)&u->files, &u->files_cap, u->nfiles, sizeof(*u->files), 64))
		return NULL;
	grown = &u->files[u->nfiles++];
	memset(grown, 0, sizeof(*grown));
	grown->dev = dev;
	grown->ino = ino;
	grown->mtime_ns = mtime_ns;
	return grown;
}

/*
 * The tables of the file mapped at [@start, @end), inode @ino by its maps
 * line (0: a file of ours, no line).  Cached by what fstat says the fd is;
 * a file that is not the one mapped (replaced at its path since) is none:
 * its rows would unwind another code.
 */
static struct unwind_file *file_get(struct unwinder *u, uint32_t tgid, uint64_t start, uint64_t end,
				    const char *path, uint64_t ino)
{
	struct unwind_file *f;
	struct stat st;
	Elf *elf;
	int fd = target_open_mapped(tgid, start, end, path, MAX_ELF_SIZE, &st);

	if (fd < 0)
		return NULL;
	if (ino && st.st_ino != ino) {
		close(fd);
		return NULL;
	}
	f = file_find(u, st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
	if (f && !f->evicted)
		goto out;
	if (!f)
		f = file_add(u, st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
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

/* ---- the files map (unwind_files) ---- */

static uint32_t file_id(const struct unwinder *u, const struct unwind_file *f)
{
	return (uint32_t)(f - u->files) + 1;	/* 0: no file */
}

/*
 * Makes room in unwind_files: the entries of files that no tracked process
 * maps (after dropping the processes that are gone) and that the process
 * being read does not map either go.  false when none could.
 */
static bool files_unlist_unused(struct unwinder *u)
{
	uint32_t before = u->files_listed;

	procs_sweep(u);
	for (size_t i = 0; i < u->nfiles; i++) {
		struct unwind_file *f = &u->files[i];
		uint32_t id = file_id(u, f);

		if (!f->listed || f->refs || f->last_used == u->clock)
			continue;
		if (bpf_map_delete_elem(u->files_fd, &id) == 0 || errno == ENOENT) {
			f->listed = false;
			u->files_listed--;
		}
	}
	return u->files_listed < before;
}

static int files_put(struct unwinder *u, uint32_t id, const struct unwind_file_info *info)
{
	if (u->files_listed >= u->files_map_cap && !files_unlist_unused(u))
		return -E2BIG;
	return bpf_map_update_elem(u->files_fd, &id, info, BPF_ANY) ? -errno : 0;
}

/*
 * The path of @tgid's mapping [@start, @end) into @buf: the map_files link's
 * text, which is the file's name as it is (/proc/PID/maps writes a newline
 * in it as the four bytes \012, and a name may hold those too); @maps_path
 * where there is no link (the vDSO).
 */
static const char *mapping_path(uint32_t tgid, uint64_t start, uint64_t end, const char *maps_path,
				char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	if (maps_path[0] != '/')
		return maps_path;
	snprintf(link, sizeof(link), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, tgid, start, end);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		return maps_path;
	buf[n] = '\0';
	return buf;
}

/*
 * Gives @f its unwind_files entry, named by the path of @tgid's mapping
 * [@start, @end) the first time: its id, or 0 when it has none (counted).
 */
static uint32_t file_list(struct unwinder *u, struct unwind_file *f, uint32_t tgid, uint64_t start,
			  uint64_t end, const char *maps_path)
{
	struct unwind_file_info info = {};
	char buf[4096];
	const char *path;
	int err;

	if (f->listed)
		return file_id(u, f);
	if (f->unnamed)
		return 0;
	path = mapping_path(tgid, start, end, maps_path, buf, sizeof(buf));
	if (!str_percent_escape(info.path, sizeof(info.path), path)) {
		f->unnamed = true;	/* the same path every time: not tried again */
		u->files_unnamed++;
		log_info("unwind: the path of %.64s... is too long for the files map: its frames stay hex", path);
		return 0;
	}
	memcpy(info.build_id, f->build_id, sizeof(info.build_id));
	err = files_put(u, file_id(u, f), &info);
	if (err) {
		u->files_unnamed++;
		log_info("unwind: no entry in the files map for %s: %s", info.path, strerror(-err));
		return 0;
	}
	f->listed = true;
	u->files_listed++;
	return file_id(u, f);
}

/* ---- processes ---- */

/* One maps line into @m; false for lines the walk has no use for (not executable). */
static bool mapping_from_line(struct unwinder *u, uint32_t tgid, const struct maps_line *ml, struct unwind_mapping *m)
{
	struct unwind_file *f = NULL;

	if (ml->perms[2] != 'x')
		return false;
	if (strcmp(ml->path, "[vsyscall]") == 0)
		return false;	/* above the user address space: no walk goes there */
	memset(m, 0, sizeof(*m));
	m->start = ml->start;
	m->end = ml->end;
	if (maps_line_is_file(ml))
		f = file_get(u, tgid, ml->start, ml->end, ml->path, ml->ino);
	else if (strcmp(ml->path, "[vdso]") == 0)
		f = vdso_get(u);
	if (f && u->scratch_nfiles < UNWIND_MAX_MAPPINGS) {
		u->scratch_files[u->scratch_nfiles++] = (uint32_t)(f - u->files);
		f->last_used = u->clock;
	}
	if (!f || !file_bias(f, ml->start, ml->offset, &m->bias))
		return true;	/* anonymous (JIT) code: frame pointers (nrows 0), hex frames (file_id 0) */
	m->file_id = file_list(u, f, tgid, ml->start, ml->end, ml->path);
	/* Files without a table: frame pointers (nrows 0). */
	if (f->nrows) {
		m->first_row = f->first_row;
		m->nrows = f->nrows;
		m->index_rows = f->index_rows;
		m->flags = f->fp_frames ? UNWIND_MAPPING_FP_FRAMES : 0;
	}
	return true;
}

/* What proc_parse() fills, line by line. */
struct proc_parse_ctx {
	struct unwinder *u;
	uint32_t tgid;
	struct unwind_proc *proc;
};

static int proc_parse_line(const struct maps_line *ml, void *ctx)
{
	struct proc_parse_ctx *c = ctx;
	struct unwind_mapping m;

	if (!mapping_from_line(c->u, c->tgid, ml, &m))
		return 0;
	if (c->proc->nmappings == UNWIND_MAX_MAPPINGS) {
		c->u->mappings_dropped++;
		return 0;
	}
	c->proc->mappings[c->proc->nmappings++] = m;	/* /proc/PID/maps is sorted by address */
	return 0;
}

/* @proc's mappings from @f, @tgid's /proc/PID/maps (or, for the fuzzer, any bytes). */
static int proc_parse(struct unwinder *u, uint32_t tgid, FILE *f, struct unwind_proc *proc)
{
	struct proc_parse_ctx c = { .u = u, .tgid = tgid, .proc = proc };

	memset(proc, 0, sizeof(*proc));
	u->scratch_nfiles = 0;
	u->clock++;
	maps_each(f, proc_parse_line, &c);
	return proc->nmappings ? 0 : -ESRCH;	/* a kernel thread or a zombie */
}

static int proc_read(struct unwinder *u, uint32_t tgid, struct unwind_proc *proc)
{
	FILE *f = proc_maps_open(tgid);
	int err;

	if (!f)
		return -ESRCH;
	err = proc_parse(u, tgid, f, proc);
	fclose(f);
	return err;
}

/* ---- tracked processes ---- */

static struct tracked_proc *tracked_find(struct unwinder *u, uint32_t tgid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].tgid == tgid)
			return &u->procs[i];
	return NULL;
}

static void tracked_unref(struct unwinder *u, struct tracked_proc *t)
{
	for (uint32_t i = 0; i < t->nfiles; i++)
		if (u->files[t->files[i]].refs)
			u->files[t->files[i]].refs--;
	free(t->files);
	t->files = NULL;
	t->nfiles = 0;
}

/* @tgid now maps the files in scratch_files: the references move to them. */
static void tracked_set(struct unwinder *u, uint32_t tgid)
{
	struct tracked_proc *t = tracked_find(u, tgid);
	uint32_t *files = malloc(u->scratch_nfiles * sizeof(*files) + 1);

	if (!files)
		return;	/* its files may be evicted under it: it then walks frame pointers */
	if (!t) {
		if (array_reserve((void **)&u->procs, &u->procs_cap, u->nprocs, sizeof(*u->procs), 64)) {
			free(files);
			return;
		}
		t = &u->procs[u->nprocs++];
		*t = (struct tracked_proc){ .tgid = tgid };
	}
	tracked_unref(u, t);
	memcpy(files, u->scratch_files, u->scratch_nfiles * sizeof(*files));
	t->files = files;
	t->nfiles = u->scratch_nfiles;
	for (uint32_t i = 0; i < t->nfiles; i++)
		u->files[files[i]].refs++;
}

/* Drops the processes that are gone (their entries and their files' references); the number dropped. */
static int procs_sweep(struct unwinder *u)
{
	int dropped = 0;

	for (size_t i = 0; i < u->nprocs;) {
		struct tracked_proc *t = &u->procs[i];

		if (proc_running(t->tgid, 0)) {	/* a zombie's tables are of no use: it runs no more */
			i++;
			continue;
		}
		bpf_map_delete_elem(u->procs_fd, &t->tgid);
		pywalker_forget(u->py, t->tgid);
		tracked_unref(u, t);
		u->procs[i] = u->procs[--u->nprocs];
		dropped++;
	}
	return dropped;
}

int unwinder_track(struct unwinder *u, uint32_t tgid)
{
	int err = 0;

	pthread_mutex_lock(&u->queue_lock);
	for (size_t i = 0; i < u->nqueue; i++)
		if (u->queue[i] == tgid)
			goto out;	/* queued already: one read of its maps will do */
	err = array_reserve((void **)&u->queue, &u->queue_cap, u->nqueue, sizeof(*u->queue), 64);
	if (err)
		goto out;
	u->queue[u->nqueue++] = tgid;
	pthread_cond_signal(&u->queue_cond);
out:
	pthread_mutex_unlock(&u->queue_lock);
	return err;
}

/* Reads @tgid's maps, builds what tables it needs and writes its entry (worker thread). */
static int track_now(struct unwinder *u, uint32_t tgid)
{
	int err = proc_read(u, tgid, u->scratch);

	if (err)
		return err;
	if (pywalker_track(u->py, tgid))
		u->scratch->flags |= UNWIND_PROC_PYTHON;
	if (bpf_map_update_elem(u->procs_fd, &tgid, u->scratch, BPF_ANY)) {
		if (errno != E2BIG || !procs_sweep(u) ||
		    bpf_map_update_elem(u->procs_fd, &tgid, u->scratch, BPF_ANY)) {
			u->procs_full++;
			return -errno;
		}
	}
	tracked_set(u, tgid);
	u->procs_written++;
	return 0;
}

void unwinder_set_python(struct unwinder *u, int python_procs_fd)
{
	pthread_mutex_lock(&u->state_lock);
	if (!u->py)
		u->py = pywalker_new(python_procs_fd);
	pthread_mutex_unlock(&u->state_lock);
}

void unwinder_report(struct unwinder *u, FILE *out)
{
	uint64_t rows = 0, index_rows = 0, table_bytes;
	size_t with = 0, queued;

	pthread_mutex_lock(&u->queue_lock);
	queued = u->nqueue;
	pthread_mutex_unlock(&u->queue_lock);
	pthread_mutex_lock(&u->state_lock);
	for (size_t i = 0; i < u->nfiles; i++) {
		with += u->files[i].nrows != 0;
		rows += u->files[i].nrows;
		index_rows += u->files[i].index_rows;
	}
	table_bytes = (rows + index_rows) * sizeof(struct unwind_row);
	fprintf(out, "aperture: unwind tables: %zu files, %" PRIu64 " rows of %u, %.1f MiB (%.0f KiB per MiB of .eh_frame, "
		"%" PRIu64 " rows of it page index), "
		"built in %.0f ms; %u files without, %u refused (over the work bound), %u evicted, %u without room, "
		"%u mappings beyond %d per process, %u processes not tracked, %zu still queued; %u files named in "
		"the files map, %u failed (hex frames)\n",
		with, rows + index_rows, u->rows_cap, table_bytes / 1048576.0,
		u->eh_frame_bytes ? table_bytes / 1024.0 / (u->eh_frame_bytes / 1048576.0) : 0.0, index_rows,
		u->build_ns / 1e6, u->files_without, u->files_refused, u->files_evicted, u->files_no_room,
		u->mappings_dropped, UNWIND_MAX_MAPPINGS, u->procs_full, queued, u->files_listed, u->files_unnamed);
	pywalker_report(u->py, out);
	pthread_mutex_unlock(&u->state_lock);
}
