// SPDX-License-Identifier: GPL-2.0
/*
 * Address -> name for kernel and user frames.
 *
 * Kernel: /proc/kallsyms, read once on first use.  User: /proc/PID/maps is read
 * when a process is tracked and kept, so a process that exits later still
 * symbolizes.  Each executable file is opened then through
 * /proc/PID/map_files/START-END (deleted files, memfd) or /proc/PID/root/PATH
 * (other mount namespaces) and cached by (device, inode); its fd stays open
 * until the first lookup reads its symbols, so a file deleted meanwhile still
 * works.  Anonymous executable memory is named from the JIT's
 * /tmp/perf-PID.map.
 *
 * Addresses are looked up as given: a caller with return addresses of
 * non-leaf frames that wants the call site passes addr - 1.
 * An address outside every known mapping re-reads maps (dlopen, JIT), at most
 * once a second per process.  A process is known by its pid and start time:
 * one announced again under a pid whose start time changed (the pid was
 * reused) starts afresh, never with the old process's maps.
 *
 * Memory is bounded: at most MAX_PROCS processes and MAX_FILES files, and at
 * each symbolizer_trim() (called where no frame handed out is still used)
 * the mappings and names handed out are released, processes that exited
 * are forgotten, and above the cache limit the least recently used files go
 * (their symbol tables, read again on demand while a process maps them).
 * Not thread-safe: one symbolizer per thread, or a lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <libiberty/demangle.h>
#include "elfsyms.h"
#include "kallsyms.h"
#include "kernel_names.h"
#include "procmaps.h"
#include "safe_open.h"
#include "strintern.h"
#include "cfi.h"
#include "symbolize.h"
#include "pyframes.h"
#include "unwind_tables.h"
#include "util.h"

#define PROC_BUCKETS	1024
#define FILE_BUCKETS	1024
#define MAX_PROCS	4096		/* least recently used ones are dropped beyond */
#define MAX_FILES	8192		/* files beyond are named module+0xOFF */
#define MAX_OPEN_FDS	256		/* beyond, files are read at once and closed */
#define MAX_JIT_SYMS	(1u << 20)
/* A perf map is the process's to write: every line counts, bounded in length, the file in size. */
#define MAX_JIT_LINES	(2u * MAX_JIT_SYMS)
#define MAX_JIT_LINE	4096
#define MAX_PERF_MAP_SIZE	(256ull << 20)
/* An ELF file is mmapped, not read: bounded only against a sparse file of any size. */
#define MAX_ELF_SIZE	(4ull << 30)
#define MAX_NAME_BYTES	(256u << 20)	/* interned names (module+0xOFF, JIT) */
#define CACHE_LIMIT_DEFAULT	(24u << 20)
#define REFRESH_NS	1000000000ull	/* re-read maps on a miss at most once a second */
/*
 * A process is often announced by its first event, right after its exec,
 * before the dynamic loader has mapped its libraries: its maps are read
 * again a few times in its first second (symbolizer_reread_young).
 */
#define YOUNG_NS	1000000000ull
#define YOUNG_REREADS	3
#define KERNEL_MIN	0xffff800000000000ull
#define KERNEL_PATH	"[kernel.kallsyms]"
#define ANON_PATH	"[anon]"
#define UNKNOWN		"[unknown]"
#define DELETED		" (deleted)"

struct elf_file {			/* one file, shared by every process mapping it */
	struct elf_file *next;		/* hash chain */
	dev_t dev;
	ino_t ino;
	int fd;				/* open until the symbols are read */
	int root_fd;			/* the root of a process that mapped it (its debug files), -1 */
	bool loaded;
	bool unloaded;			/* tables dropped to stay under the limit: read again on demand */
	size_t refs;			/* process mappings pointing here */
	uint64_t last_used;		/* symbolizer tick, for eviction */
	size_t bytes;			/* what its tables take, once loaded */
	char *path;			/* without " (deleted)" */
	struct elf_syms syms;
};

struct proc_map {			/* one executable mapping of a process */
	uint64_t start, end, offset;
	char *path;			/* as in maps; ANON_PATH for anonymous memory */
	struct elf_file *file;		/* NULL: anonymous, special or unreadable */
	struct sym_mapping *handed;	/* created on the first lookup in it */
};

struct proc {
	struct proc *next;		/* hash chain */
	uint32_t tgid;
	uint64_t start_time;		/* proc_start_time(): tells a reused pid apart; 0 unknown */
	bool gone;			/* had exited at the last trim: forgotten at the next */
	unsigned int perf_map_refused;	/* reads of its perf map refused (counted once in the symbolizer) */
	size_t bytes;			/* what its maps and JIT symbols take */
	uint64_t last_used;		/* symbolizer tick, for eviction */
	uint64_t refreshed_ns;
	uint64_t tracked_ns;		/* when announced: its maps grow for a while after */
	int young_rereads;
	struct proc_map *maps;		/* sorted by start */
	size_t nmaps;
	struct symtab jit;		/* from perf-PID.map */
};

struct symbolizer {
	struct proc *procs[PROC_BUCKETS];
	size_t nprocs;
	uint64_t tick;
	struct elf_file *files[FILE_BUCKETS];
	size_t nfiles, open_fds;
	struct sym_mapping **mappings;	/* every one handed out, index = id - 1 */
	size_t nmappings, mappings_cap;
	size_t mapping_bytes, file_bytes, proc_bytes;
	uint64_t files_dropped, tables_unloaded, procs_dropped, pids_reused;
	uint64_t xz_refused;		/* minidebuginfo over the decoder's memory limit */
	uint64_t files_refused, perf_maps_refused;
	struct strintern names;
	struct kernel_names *knames;	/* NULL until the first kernel frame (or out of memory) */
	bool kernel_tried, kallsyms_only;
	struct sym_mapping *kernel_map;
	struct pyframes *py;		/* CPython code objects' names */
	uint64_t young_until_ns;	/* the last announced process's first second ends (CLOCK_MONOTONIC) */
	size_t cache_limit;		/* bytes, kept at each trim */
	bool demangle;
};

void symbolizer_apply(struct symbolizer *sym, const struct symbolizer_settings *settings)
{
	sym->cache_limit = settings && settings->cache_limit ? settings->cache_limit : CACHE_LIMIT_DEFAULT;
	sym->demangle = !settings || !settings->no_demangle;
	sym->kallsyms_only = settings && settings->kallsyms_only;
}

struct symbolizer *symbolizer_new(const struct symbolizer_settings *settings)
{
	struct symbolizer *sym = calloc_logged(1, sizeof(*sym));

	if (!sym)
		return NULL;
	symbolizer_apply(sym, settings);
	strintern_init(&sym->names, MAX_NAME_BYTES);
	sym->py = pyframes_new();
	return sym;
}

/* ---- mappings handed out ---- */

/* Basename without " (deleted)", into @buf. */
static void path_basename(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');

	snprintf(buf, len, "%s", base ? base + 1 : path);
	if (str_ends_with(buf, DELETED))
		buf[strlen(buf) - strlen(DELETED)] = '\0';
}

static struct sym_mapping *hand_out(struct symbolizer *sym, const struct sym_mapping *tmpl)
{
	char name[NAME_MAX + 1];
	size_t plen = strlen(tmpl->path) + 1, nlen, blen = strlen(tmpl->build_id) + 1;
	struct sym_mapping *m, **arr;
	char *strs;

	path_basename(tmpl->path, name, sizeof(name));
	nlen = strlen(name) + 1;
	if (sym->nmappings == sym->mappings_cap) {
		size_t cap = sym->mappings_cap ? sym->mappings_cap * 2 : 64;

		arr = realloc(sym->mappings, cap * sizeof(*arr));
		if (!arr)
			return NULL;
		sym->mappings = arr;
		sym->mappings_cap = cap;
	}
	/* One allocation: the struct, then path, name and build id. */
	m = calloc_logged(1, sizeof(*m) + plen + nlen + blen);
	if (!m)
		return NULL;
	*m = *tmpl;
	strs = (char *)(m + 1);
	m->path = memcpy(strs, tmpl->path, plen);
	m->name = memcpy(strs + plen, name, nlen);
	m->build_id = memcpy(strs + plen + nlen, tmpl->build_id, blen);
	m->id = (uint32_t)sym->nmappings + 1;
	sym->mappings[sym->nmappings++] = m;
	sym->mapping_bytes += sizeof(*m) + plen + nlen + blen;
	return m;
}

const struct sym_mapping *const *symbolizer_mappings(struct symbolizer *sym, size_t *count)
{
	*count = sym->nmappings;
	return (const struct sym_mapping *const *)sym->mappings;
}

/* ---- frames ---- */

static void frame_unknown(struct sym_frame *out, uint64_t addr)
{
	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->name = UNKNOWN;
}

/* What to print: the function, else module+0xOFF. */
static void frame_name(struct symbolizer *sym, struct sym_frame *out)
{
	char buf[NAME_MAX + 32];

	if (out->function) {
		out->name = out->function;
		return;
	}
	if (!out->mapping)
		return;
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, out->mapping->name, out->module_offset);
	out->name = strintern(&sym->names, buf);
	if (!out->name)
		out->name = out->mapping->name;	/* over the name budget: still never NULL */
}

/*
 * C++ (_Z...) and Rust (_R..., and legacy _ZN...17h<hash>E) names as people
 * write them, with C++ parameter types so that overloads stay apart.
 * libiberty's demangler, the one binutils and gdb use.
 */
char *symbolizer_demangle_name(const struct symbolizer *sym, const char *name)
{
	if ((sym && !sym->demangle) || !name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_AUTO | DMGL_PARAMS | DMGL_ANSI);
}

static void frame_demangle(struct symbolizer *sym, struct sym_frame *out)
{
	const char *plain_interned;
	char *plain = symbolizer_demangle_name(sym, out->function);

	if (!plain)
		return;	/* not a mangled name, or demangling is off */
	plain_interned = strintern(&sym->names, plain);
	free(plain);
	if (plain_interned)
		out->function = plain_interned;
}

static void frame_symbol(struct sym_frame *out, const struct symtab *tab, uint64_t key)
{
	const struct sym *s = symtab_find(tab, key);

	if (s) {
		out->function = symtab_name(tab, s);
		out->function_offset = key - s->start;
	}
}

/* ---- kernel ---- */

static void kernel_init(struct symbolizer *sym)
{
	struct sym_mapping tmpl = { .path = KERNEL_PATH, .kernel = true, .end = UINT64_MAX };
	char build_id[ELFSYMS_BUILD_ID_HEX];
	uint64_t start;

	sym->kernel_tried = true;
	sym->knames = kernel_names_new(sym->kallsyms_only);
	kernel_build_id("/sys/kernel/notes", build_id, sizeof(build_id));
	tmpl.build_id = build_id;
	start = sym->knames ? kernel_names_text_start(sym->knames) : 0;
	tmpl.start = start ? start : KERNEL_MIN;
	sym->kernel_map = hand_out(sym, &tmpl);
}

static void kernel_frame(struct symbolizer *sym, uint64_t addr, struct sym_frame *out)
{
	const char *function;
	uint64_t offset;

	frame_unknown(out, addr);
	if (!sym->kernel_map || addr < sym->kernel_map->start)
		return;
	out->mapping = sym->kernel_map;
	out->module_offset = addr;
	if (sym->knames && kernel_names_find(sym->knames, addr, &function, &offset)) {
		out->function = function;
		out->function_offset = offset;
	}
	frame_name(sym, out);
}

void symbolizer_kernel_frames(struct symbolizer *sym, const uint64_t *addrs, size_t n, struct sym_frame *out)
{
	if (!sym->kernel_tried)
		kernel_init(sym);
	if (sym->knames)
		kernel_names_prefetch(sym->knames, addrs, n);
	for (size_t i = 0; i < n; i++)
		kernel_frame(sym, addrs[i], &out[i]);
}

/* ---- files ---- */

static size_t file_bucket(dev_t dev, ino_t ino)
{
	return (size_t)((dev * 0x9e3779b97f4a7c15ull) ^ ino) % FILE_BUCKETS;
}

static struct elf_file *file_find(struct symbolizer *sym, dev_t dev, ino_t ino)
{
	struct elf_file *f;

	for (f = sym->files[file_bucket(dev, ino)]; f; f = f->next)
		if (f->dev == dev && f->ino == ino)
			return f;
	return NULL;
}

static size_t file_tables_bytes(const struct elf_file *f)
{
	const struct elf_syms *es = &f->syms;

	return symtab_bytes(&es->tab) + es->nloads * sizeof(*es->loads) +
	       es->nfdes * (sizeof(*es->fde_starts) + sizeof(*es->fde_ends));
}

/* The root fd is held from the file's open to its load (at most MAX_OPEN_FDS of each). */
static void file_close_root(struct elf_file *f)
{
	if (f->root_fd >= 0)
		close(f->root_fd);
	f->root_fd = -1;
}

static void file_load(struct symbolizer *sym, struct elf_file *f)
{
	int err;

	if (f->loaded || f->fd < 0)
		return;
	err = elf_syms_load(&f->syms, f->fd, f->path, f->root_fd);
	if (err)
		log_info("no symbols from %s: %s", f->path, strerror(-err));
	sym->xz_refused += f->syms.xz_refused;
	close(f->fd);
	f->fd = -1;
	file_close_root(f);
	sym->open_fds--;
	f->loaded = true;
	f->unloaded = false;
	f->bytes = file_tables_bytes(f);
	sym->file_bytes += f->bytes;
}

/* Drops @f's tables to make room; a later lookup reads them again (file_reload). */
static void file_unload(struct symbolizer *sym, struct elf_file *f)
{
	char build_id[ELFSYMS_BUILD_ID_HEX];

	if (!f->loaded)
		return;
	memcpy(build_id, f->syms.build_id, sizeof(build_id));	/* handed-out mappings show it */
	elf_syms_free(&f->syms);
	memcpy(f->syms.build_id, build_id, sizeof(build_id));
	sym->file_bytes -= f->bytes;
	f->bytes = 0;
	f->loaded = false;
	f->unloaded = true;
	sym->tables_unloaded++;
}

/*
 * Whether @st is the file a maps line names @dev:@ino.  The inode always;
 * the device unless stat gives an anonymous one (major 0), as btrfs
 * subvolumes and overlayfs do where maps shows the backing device.
 */
static bool same_file(const struct stat *st, dev_t dev, ino_t ino)
{
	return st->st_ino == ino && (st->st_dev == dev || major(st->st_dev) == 0);
}

/*
 * @m's file, named @dev:@ino by its maps line: map_files works for deleted
 * files and memfd, the root path (target_open) for other namespaces.  Only
 * that file, cached under that name: a process that unmapped it meanwhile
 * would have another file at the path read and kept for every process that
 * maps @dev:@ino (under overlayfs, every container of an image).
 */
static int open_mapped(struct symbolizer *sym, uint32_t tgid, const struct proc_map *m, const char *path,
		       dev_t dev, ino_t ino)
{
	struct stat st;
	int fd = target_open_mapped(tgid, m->start, m->end, path, MAX_ELF_SIZE, &st);

	if (fd >= 0 && !same_file(&st, dev, ino)) {
		close(fd);
		fd = -ESTALE;
	}
	if (fd == -ESTALE || fd == -EINVAL || fd == -EFBIG || fd == -ELOOP)
		sym->files_refused++;
	return fd;
}

/* Into the file table; the struct and path count in the cache's bytes. */
static void file_insert(struct symbolizer *sym, struct elf_file *f)
{
	size_t b = file_bucket(f->dev, f->ino);

	f->next = sym->files[b];
	sym->files[b] = f;
	sym->nfiles++;
	sym->file_bytes += sizeof(*f) + strlen(f->path) + 1;
}

/* Out of the table and freed: only a file no process mapping points to. */
static void file_drop(struct symbolizer *sym, struct elf_file *f)
{
	struct elf_file **pp = &sym->files[file_bucket(f->dev, f->ino)];

	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	sym->nfiles--;
	sym->file_bytes -= sizeof(*f) + strlen(f->path) + 1 + f->bytes;
	if (f->fd >= 0) {
		close(f->fd);
		sym->open_fds--;
	}
	file_close_root(f);
	elf_syms_free(&f->syms);
	free(f->path);
	free(f);
	sym->files_dropped++;
}

static struct elf_file *file_get(struct symbolizer *sym, uint32_t tgid, const struct proc_map *m,
				 dev_t dev, ino_t ino)
{
	struct elf_file *f = file_find(sym, dev, ino);
	char *path;
	int fd;

	if (f || sym->nfiles >= MAX_FILES)
		return f;
	path = strdup_logged(m->path);
	if (!path)
		return NULL;
	if (str_ends_with(path, DELETED))
		path[strlen(path) - strlen(DELETED)] = '\0';
	fd = open_mapped(sym, tgid, m, path, dev, ino);
	f = fd >= 0 ? calloc_logged(1, sizeof(*f)) : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	/*
	 * Its root, taken now: the debug files are read when the frames are
	 * named, often after the process exited and /proc/PID/root went with it.
	 */
	*f = (struct elf_file){ .dev = dev, .ino = ino, .fd = fd, .root_fd = target_root_open(tgid), .path = path,
				.last_used = sym->tick };
	if (f->root_fd < 0)
		f->root_fd = -1;
	file_insert(sym, f);
	sym->open_fds++;
	if (sym->open_fds > MAX_OPEN_FDS)
		file_load(sym, f);
	return f;
}

/* The size of the [vdso] mapping at *@ctx (its start), into *@ctx; 1 once found. */
static int vdso_line(const struct maps_line *m, void *ctx)
{
	uint64_t *at = ctx;

	if (m->start != *at || strcmp(m->path, "[vdso]"))
		return 0;
	*at = m->end - m->start;
	return 1;
}

/* Our own [vdso] range, from /proc/self/maps. */
static size_t own_vdso_size(uint64_t start)
{
	FILE *f = fopen("/proc/self/maps", "re");
	uint64_t at = start;
	size_t size = 0;

	if (f && maps_each(f, vdso_line, &at) == 1)
		size = at;
	if (f)
		fclose(f);
	return size;
}

/*
 * Every 64-bit process of this kernel maps the same vDSO image, which is
 * no file: read ours (a copy in a memfd) to name __vdso_clock_gettime and
 * friends.  Kept in the file table under device and inode 0, which no file has.
 */
static struct elf_file *vdso_file(struct symbolizer *sym)
{
	uint64_t start = getauxval(AT_SYSINFO_EHDR);
	struct elf_file *f = file_find(sym, 0, 0);
	size_t size;
	int fd;

	if (f || !start || !(size = own_vdso_size(start)))
		return f;
	fd = memfd_create("aperture-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	f = calloc_logged(1, sizeof(*f));
	if (!f || write(fd, (const void *)(uintptr_t)start, size) != (ssize_t)size ||
	    !(f->path = strdup_logged("[vdso]"))) {
		free(f);
		close(fd);
		return NULL;
	}
	f->fd = fd;
	f->root_fd = -1;	/* no debug file of ours stands for a target's */
	f->last_used = sym->tick;
	file_insert(sym, f);
	sym->open_fds++;
	return f;
}

/* ---- /proc/PID/maps ---- */

static void maps_free(struct proc_map *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (maps[i].file)
			maps[i].file->refs--;
		free(maps[i].path);
	}
	free(maps);
}

/* One executable maps line @ml into @m.  0, or -ENOMEM. */
static int map_from_line(struct symbolizer *sym, uint32_t tgid, const struct maps_line *ml, struct proc_map *m)
{
	m->start = ml->start;
	m->end = ml->end;
	m->offset = ml->offset;
	m->path = strdup_logged(ml->path[0] ? ml->path : ANON_PATH);
	if (!m->path)
		return -ENOMEM;
	m->file = NULL;
	m->handed = NULL;
	if (maps_line_is_file(ml))
		m->file = file_get(sym, tgid, m, makedev(ml->major, ml->minor), (ino_t)ml->ino);
	else if (strcmp(m->path, "[vdso]") == 0)
		m->file = vdso_file(sym);
	if (m->file)
		m->file->refs++;	/* not dropped while a process maps it */
	return 0;
}

/* The executable mappings of a process, as maps_parse() collects them. */
struct maps_collect {
	struct symbolizer *sym;
	uint32_t tgid;
	struct proc_map *maps;
	size_t n, cap;
};

static int maps_collect_line(const struct maps_line *ml, void *ctx)
{
	struct maps_collect *c = ctx;
	struct proc_map *grown;
	int err;

	if (ml->perms[2] != 'x')
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;

		grown = realloc(c->maps, cap * sizeof(*c->maps));
		if (!grown)
			return -ENOMEM;
		c->maps = grown;
		c->cap = cap;
	}
	err = map_from_line(c->sym, c->tgid, ml, &c->maps[c->n]);
	if (!err)
		c->n++;
	return err;
}

/* The executable mappings of @tgid from @f, its /proc/PID/maps (or, for the fuzzer, any bytes). */
static int maps_parse(struct symbolizer *sym, uint32_t tgid, FILE *f, struct proc_map **out, size_t *nout)
{
	struct maps_collect c = { .sym = sym, .tgid = tgid };
	int ret = maps_each(f, maps_collect_line, &c);

	if (!ret && !c.n)
		ret = -ESRCH;	/* exited (zombie) or a kernel thread */
	if (ret < 0) {
		maps_free(c.maps, c.n);
		return ret;
	}
	*out = c.maps;
	*nout = c.n;
	return 0;
}

static int maps_read(struct symbolizer *sym, uint32_t tgid, struct proc_map **out, size_t *nout)
{
	FILE *f = proc_maps_open(tgid);
	int ret;

	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	ret = maps_parse(sym, tgid, f, out, nout);
	fclose(f);
	return ret;
}

static struct proc_map *maps_find(struct proc_map *maps, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < maps[mid].start)
			hi = mid;
		else if (addr >= maps[mid].end)
			lo = mid + 1;
		else
			return &maps[mid];
	}
	return NULL;
}

/* A re-read keeps the mappings already handed out for ranges that did not change. */
static void maps_carry_over(struct proc_map *old, size_t nold, struct proc_map *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct proc_map *o = maps_find(old, nold, maps[i].start);

		if (o && o->start == maps[i].start && o->end == maps[i].end &&
		    o->offset == maps[i].offset && o->file == maps[i].file &&
		    !strcmp(o->path, maps[i].path))
			maps[i].handed = o->handed;
	}
}

/* ---- JIT symbols: /tmp/perf-PID.map, "START SIZE name" in hex ---- */

/* What /proc/PID/status says of a process that its perf map is checked against. */
/*
 * @tgid's /tmp/perf-PID.map, in its own root: a regular file, not a symlink,
 * not over MAX_PERF_MAP_SIZE, owned by the process's user or root.  perf's
 * dso__load refuses a map "not owned by current user or root"; run as root
 * that would accept any user's file, so the owner asked is the process's.
 * Never our own map (whoever made /tmp/perf-<our pid>.map is not us: aperture
 * has no JIT), never a file of our root for a process in another.  NULL with
 * -errno in *@err; 0 when there is simply none.
 */
static FILE *perf_map_open(uint32_t tgid, int *err)
{
	struct proc_status ids;
	char path[64];
	struct stat st;
	FILE *f;
	int fd;

	*err = 0;
	if (tgid == (uint32_t)getpid())
		return NULL;
	proc_status_read(tgid, &ids);
	if (!ids.uids_known)
		return NULL;	/* gone */
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ids.ns_pid);
	fd = target_open(tgid, path, MAX_PERF_MAP_SIZE, TARGET_NOFOLLOW, &st);
	if (fd < 0) {
		*err = fd == -ENOENT || fd == -ESRCH ? 0 : fd;
		return NULL;
	}
	if (st.st_uid && st.st_uid != ids.uid && st.st_uid != ids.euid) {
		close(fd);
		*err = -EPERM;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		*err = -errno;
		close(fd);
	}
	return f;
}

static int perf_map_line(struct symtab *tab, char *line, uint32_t lineno)
{
	uint64_t start, size;
	char *p = line, *end;

	start = strtoull(p, &end, 16);
	if (end == p)
		return 0;
	size = strtoull(p = end, &end, 16);
	if (end == p)
		return 0;
	end += strspn(end, " \t");
	end[strcspn(end, "\n")] = '\0';
	if (!*end)
		return 0;
	/* A later line for the same address replaces an earlier one (code was recompiled). */
	return symtab_add(tab, start, size, end, UINT32_MAX - lineno);
}

/*
 * The next line of @f into @buf, cut to @len - 1 bytes (the rest of a longer
 * line read and dropped, within MAX_PERF_MAP_SIZE of the file); false at the
 * end.  *@whole: the line fit.
 */
static bool perf_map_getline(FILE *f, char *buf, size_t len, bool *whole)
{
	char rest[256];
	size_t n;

	if (!fgets(buf, (int)len, f))
		return false;
	n = strlen(buf);
	*whole = n + 1 < len || buf[n - 1] == '\n' || feof(f);
	if (*whole)
		return true;
	while (fgets(rest, sizeof(rest), f) && !strchr(rest, '\n'))
		if (ftello(f) > (off_t)MAX_PERF_MAP_SIZE)
			break;
	return true;
}

/*
 * Replaces @jit with the symbols of @f, a perf map (or, for the fuzzer, any
 * bytes).  Every line counts toward MAX_JIT_LINES, parsed or not, and the
 * bytes read toward MAX_PERF_MAP_SIZE: a file that grows as it is read ends too.
 */
static void perf_map_parse(struct symtab *jit, FILE *f)
{
	char line[MAX_JIT_LINE];
	uint32_t lineno = 0;
	bool whole;

	symtab_free(jit);
	while (lineno < MAX_JIT_LINES && jit->nsyms < MAX_JIT_SYMS && perf_map_getline(f, line, sizeof(line), &whole)) {
		lineno++;
		if (whole && perf_map_line(jit, line, lineno))
			break;
		if (ftello(f) > (off_t)MAX_PERF_MAP_SIZE)
			break;
	}
	symtab_finish(jit);
}

static void perf_map_read(struct symbolizer *sym, struct proc *p)
{
	int err;
	FILE *f = perf_map_open(p->tgid, &err);

	if (!f) {
		if (err && !p->perf_map_refused)
			log_info("pid %u: /tmp/perf-PID.map not read: %s", p->tgid,
				 err == -EPERM ? "not owned by the process's user or root" :
				 err == -EINVAL ? "not a regular file" : strerror(-err));
		if (err && !p->perf_map_refused++)
			sym->perf_maps_refused++;
		return;
	}
	perf_map_parse(&p->jit, f);
	fclose(f);
}

/* ---- processes ---- */

static struct proc *proc_find(struct symbolizer *sym, uint32_t tgid)
{
	struct proc *p;

	for (p = sym->procs[tgid % PROC_BUCKETS]; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

static void sym_proc_free(struct proc *p)
{
	maps_free(p->maps, p->nmaps);
	symtab_free(&p->jit);
	free(p);
}

/* Recounts what @p takes, after its maps or JIT symbols changed. */
static void proc_account(struct symbolizer *sym, struct proc *p)
{
	size_t bytes = sizeof(*p) + p->nmaps * sizeof(*p->maps) + symtab_bytes(&p->jit);

	for (size_t i = 0; i < p->nmaps; i++)
		bytes += strlen(p->maps[i].path) + 1;
	sym->proc_bytes += bytes - p->bytes;
	p->bytes = bytes;
}

/* Forgets @p (mappings handed out stay valid until the next trim). */
static void proc_drop(struct symbolizer *sym, struct proc *p)
{
	struct proc **pp = &sym->procs[p->tgid % PROC_BUCKETS];

	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	sym->nprocs--;
	sym->proc_bytes -= p->bytes;
	sym->procs_dropped++;
	pyframes_forget(sym->py, p->tgid);
	sym_proc_free(p);
}

/* Drops the least recently used process. */
static void proc_evict_one(struct symbolizer *sym)
{
	struct proc *p, *lru = NULL;
	size_t b;

	for (b = 0; b < PROC_BUCKETS; b++)
		for (p = sym->procs[b]; p; p = p->next)
			if (!lru || p->last_used < lru->last_used)
				lru = p;
	if (lru)
		proc_drop(sym, lru);
}

static int proc_add(struct symbolizer *sym, uint32_t tgid, struct proc **out)
{
	struct proc *p = calloc_logged(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->tgid = tgid;
	/* Before the maps: a pid reused after this read has another start time. */
	p->start_time = proc_start_time(tgid);
	err = maps_read(sym, tgid, &p->maps, &p->nmaps);
	if (err) {
		free(p);
		return err;
	}
	perf_map_read(sym, p);
	p->refreshed_ns = p->tracked_ns = now_ns(CLOCK_MONOTONIC);
	sym->young_until_ns = p->tracked_ns + YOUNG_NS;
	if (sym->nprocs >= MAX_PROCS)
		proc_evict_one(sym);
	p->next = sym->procs[tgid % PROC_BUCKETS];
	sym->procs[tgid % PROC_BUCKETS] = p;
	sym->nprocs++;
	proc_account(sym, p);
	*out = p;
	return 0;
}

static struct proc *proc_get(struct symbolizer *sym, uint32_t tgid)
{
	struct proc *p = proc_find(sym, tgid);

	if (!p && proc_add(sym, tgid, &p))
		return NULL;
	p->last_used = ++sym->tick;
	return p;
}

/* At most once a second: new code (dlopen, JIT) appears after tracking. */
static bool proc_may_refresh(struct proc *p)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (now - p->refreshed_ns < REFRESH_NS)
		return false;
	p->refreshed_ns = now;
	return true;
}

/* Re-reads maps; keeps the old ones when the process is gone. */
static void proc_refresh_maps(struct symbolizer *sym, struct proc *p)
{
	struct proc_map *maps;
	size_t n;

	if (maps_read(sym, p->tgid, &maps, &n))
		return;
	maps_carry_over(p->maps, p->nmaps, maps, n);
	maps_free(p->maps, p->nmaps);
	p->maps = maps;
	p->nmaps = n;
	perf_map_read(sym, p);
	proc_account(sym, p);
}

/*
 * A process announced again is one that exec'ed (the BPF side forgets it at
 * exec): its maps are those of a new image, so read them now, while it lives.
 * A fork child caught before its exec would otherwise keep the parent's maps
 * and a short-lived command would never be named.
 */
int symbolizer_track(struct symbolizer *sym, uint32_t tgid)
{
	struct proc *p = proc_find(sym, tgid);
	uint64_t start = p ? proc_start_time(tgid) : 0;

	/* Another process under the pid of one that exited: nothing of the old one is kept. */
	if (p && start && p->start_time && start != p->start_time) {
		proc_drop(sym, p);
		sym->pids_reused++;
		p = NULL;
	}
	if (p) {
		p->start_time = start ? start : p->start_time;
		p->last_used = ++sym->tick;
		p->refreshed_ns = p->tracked_ns = now_ns(CLOCK_MONOTONIC);
		sym->young_until_ns = p->tracked_ns + YOUNG_NS;
		p->young_rereads = 0;
		proc_refresh_maps(sym, p);
		return 0;
	}
	return proc_get(sym, tgid) ? 0 : -ESRCH;
}

bool symbolizer_has_young(const struct symbolizer *sym)
{
	return now_ns(CLOCK_MONOTONIC) <= sym->young_until_ns;
}

void symbolizer_reread_young(struct symbolizer *sym)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (now > sym->young_until_ns)
		return;	/* no process announced in the last second: no walk of every bucket */

	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		for (struct proc *p = sym->procs[b]; p; p = p->next) {
			if (p->young_rereads >= YOUNG_REREADS || now - p->tracked_ns > YOUNG_NS)
				continue;
			p->young_rereads++;
			proc_refresh_maps(sym, p);
		}
	}
}

/* ---- user frames ---- */

static struct sym_mapping *map_hand_out(struct symbolizer *sym, struct proc_map *m)
{
	struct sym_mapping tmpl = {
		.start = m->start, .end = m->end, .file_offset = m->offset, .path = m->path,
		.build_id = m->file ? m->file->syms.build_id : "",
	};

	if (!m->handed)
		m->handed = hand_out(sym, &tmpl);
	return m->handed;
}

/*
 * No symbol: the function's start from .eh_frame names it, "module+0xSTART",
 * so that the samples of one stripped function are one frame, not one per
 * instruction address.
 */
static void frame_fde(struct symbolizer *sym, struct proc_map *m, struct sym_frame *out, uint64_t vaddr)
{
	const struct elf_syms *es = &m->file->syms;
	uint64_t start = cfi_function_start(es->fde_starts, es->fde_ends, es->nfdes, vaddr);
	char base[NAME_MAX + 1], buf[NAME_MAX + 32];

	if (!start)
		return;
	path_basename(m->path, base, sizeof(base));
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, start);
	out->function = strintern(&sym->names, buf);
	out->function_offset = vaddr - start;
}

/* Tables unloaded to stay under the limit: read again through @tgid, which maps the file. */
static void file_reload(struct symbolizer *sym, uint32_t tgid, struct proc_map *m)
{
	struct elf_file *f = m->file;
	int fd;

	if (f->loaded || f->fd >= 0)
		return;
	fd = open_mapped(sym, tgid, m, f->path, f->dev, f->ino);
	if (fd < 0)
		return;	/* the process is gone, or maps another file now: module+0xOFF frames */
	f->fd = fd;
	file_close_root(f);
	f->root_fd = target_root_open(tgid);
	if (f->root_fd < 0)
		f->root_fd = -1;
	sym->open_fds++;
}

static void user_file_frame(struct symbolizer *sym, struct proc *p, struct proc_map *m,
			    struct sym_frame *out)
{
	uint64_t file_off = out->addr - m->start + m->offset, vaddr;

	m->file->last_used = sym->tick;
	file_reload(sym, p->tgid, m);
	file_load(sym, m->file);
	out->module_offset = file_off;
	if (!m->file->loaded)
		return;
	if (elf_syms_vaddr(&m->file->syms, file_off, &vaddr)) {
		out->module_offset = vaddr;
		frame_symbol(out, &m->file->syms.tab, vaddr);
		if (!out->function)
			frame_fde(sym, m, out, vaddr);
		else
			frame_demangle(sym, out);
	}
}

static void user_jit_frame(struct symbolizer *sym, struct proc *p, struct proc_map *m,
			   struct sym_frame *out)
{
	out->module_offset = out->addr - m->start + m->offset;
	frame_symbol(out, &p->jit, out->addr);
	if (!out->function && proc_may_refresh(p)) {
		perf_map_read(sym, p);
		proc_account(sym, p);
		frame_symbol(out, &p->jit, out->addr);
	}
	/* The JIT's table is re-read later: hand out a copy that lives as long as we do. */
	if (out->function)
		out->function = strintern(&sym->names, out->function);
}

void symbolizer_set_python_seen(struct symbolizer *sym,
				bool (*fn)(void *ctx, uint32_t tgid, uint64_t code, uint64_t *identity,
					   uint32_t *generation),
				void *ctx)
{
	pyframes_set_seen(sym->py, fn, ctx);
}

void symbolizer_python_prefetch(struct symbolizer *sym, uint32_t tgid, const uint64_t *ips, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		pyframes_prefetch(sym->py, tgid, ips[i]);
}

/* A Python frame: "qualname (file.py:LINE)", the function qualname, its file and line. */
static void user_python_frame(struct symbolizer *sym, uint32_t tgid, struct sym_frame *out)
{
	struct pyframe_name pn;
	const char *base;
	char buf[1024];

	out->addr |= 1;		/* a caller's frame comes at ip - 1 */
	if (!pyframes_name(sym->py, tgid, out->addr, &pn)) {
		out->name = "[python]";
		return;
	}
	base = strrchr(pn.filename, '/');
	base = base ? base + 1 : pn.filename;
	snprintf(buf, sizeof(buf), "%s (%s:%u)", pn.qualname, base, pn.line);
	out->function = strintern(&sym->names, pn.qualname);
	out->file = strintern(&sym->names, pn.filename);
	out->line = pn.line;
	out->name = strintern(&sym->names, buf);
	if (!out->function || !out->file || !out->name) {
		out->function = out->file = NULL;
		out->name = "[python]";
	}
}

void symbolizer_user(struct symbolizer *sym, uint32_t tgid, uint64_t addr, struct sym_frame *out)
{
	struct proc_map *m;
	struct proc *p;

	frame_unknown(out, addr);
	/* Where the DWARF walk stopped early (the marker, or the marker - 1 of a caller frame). */
	if (addr == APERTURE_IP_TRUNCATED || addr == APERTURE_IP_TRUNCATED - 1) {
		out->addr = APERTURE_IP_TRUNCATED;
		out->name = "[truncated]";
		return;
	}
	if (addr == APERTURE_IP_NO_TABLES || addr == APERTURE_IP_NO_TABLES - 1) {
		out->addr = APERTURE_IP_NO_TABLES;
		out->name = "[before-unwind-tables]";
		return;
	}
	/* Garbage from a frame-pointer walk may have the tag's bit: only a CPython process has Python frames. */
	if (pyframes_is_frame(addr) && pyframes_is_python(sym->py, tgid)) {
		user_python_frame(sym, tgid, out);
		return;
	}
	p = proc_get(sym, tgid);
	if (!p)
		return;
	m = maps_find(p->maps, p->nmaps, addr);
	if (!m && proc_may_refresh(p)) {
		proc_refresh_maps(sym, p);
		m = maps_find(p->maps, p->nmaps, addr);
	}
	if (!m)
		return;
	if (m->file)
		user_file_frame(sym, p, m, out);
	else
		user_jit_frame(sym, p, m, out);
	out->mapping = map_hand_out(sym, m);
	frame_name(sym, out);
}

/* ---- staying under the limit ---- */

static size_t cache_bytes(const struct symbolizer *sym)
{
	struct kernel_names_usage kernel;

	kernel_names_usage(sym->knames, &kernel);
	return sym->file_bytes + sym->proc_bytes + sym->mapping_bytes + sym->names.bytes + kernel.bytes;
}

/* No frame handed out is used any more: their mappings and names go (the kernel's stays). */
static void release_handed_out(struct symbolizer *sym)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct proc *p = sym->procs[b]; p; p = p->next)
			for (size_t i = 0; i < p->nmaps; i++)
				p->maps[i].handed = NULL;
	for (size_t i = 0; i < sym->nmappings; i++)
		if (sym->mappings[i] != sym->kernel_map)
			free(sym->mappings[i]);
	sym->nmappings = 0;
	sym->mapping_bytes = 0;
	if (sym->kernel_map) {
		sym->kernel_map->id = 1;
		sym->mappings[sym->nmappings++] = sym->kernel_map;
		sym->mapping_bytes = sizeof(*sym->kernel_map) + strlen(sym->kernel_map->path) * 2 + 2 +
				     strlen(sym->kernel_map->build_id) + 1;
	}
	strintern_free(&sym->names);
	strintern_init(&sym->names, MAX_NAME_BYTES);
	kernel_names_trim(sym->knames);
}

/*
 * A process found exited (gone, a zombie or its pid reused) is forgotten at
 * the next trim: its last samples, counted before it exited, have been
 * drained and named by then.  A zombie counts as exited: kill(pid, 0) says
 * it is there until its parent reaps it, which a parent may never do.
 */
static void forget_exited(struct symbolizer *sym)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct proc *p = sym->procs[b], *next;

		for (; p; p = next) {
			next = p->next;
			if (proc_running(p->tgid, p->start_time))
				p->gone = false;
			else if (p->gone)
				proc_drop(sym, p);
			else
				p->gone = true;
		}
	}
}

static int file_older(const void *a, const void *b)
{
	const struct elf_file *x = *(struct elf_file *const *)a, *y = *(struct elf_file *const *)b;

	return (x->last_used > y->last_used) - (x->last_used < y->last_used);
}

/* Every file, least recently used first, in a malloc'ed array of sym->nfiles; NULL on ENOMEM. */
static struct elf_file **files_by_age(struct symbolizer *sym)
{
	struct elf_file **files = malloc((sym->nfiles ? sym->nfiles : 1) * sizeof(*files));
	size_t n = 0;

	if (!files)
		return NULL;
	for (size_t b = 0; b < FILE_BUCKETS; b++)
		for (struct elf_file *f = sym->files[b]; f && n < sym->nfiles; f = f->next)
			files[n++] = f;
	qsort(files, n, sizeof(*files), file_older);
	return files;
}

/*
 * Over the limit: files no process maps go first, then the tables of the
 * others (read again when needed), then the least recently used processes.
 */
static void shrink(struct symbolizer *sym)
{
	size_t nfiles = sym->nfiles;
	struct elf_file **files = files_by_age(sym);

	for (size_t i = 0; files && i < nfiles && cache_bytes(sym) > sym->cache_limit; i++) {
		if (!files[i]->refs) {
			file_drop(sym, files[i]);
			files[i] = NULL;
		}
	}
	for (size_t i = 0; files && i < nfiles && cache_bytes(sym) > sym->cache_limit; i++)
		if (files[i])
			file_unload(sym, files[i]);
	free(files);
	while (sym->nprocs && cache_bytes(sym) > sym->cache_limit)
		proc_evict_one(sym);
}

void symbolizer_trim(struct symbolizer *sym)
{
	if (!sym)
		return;
	release_handed_out(sym);
	forget_exited(sym);
	if (cache_bytes(sym) > sym->cache_limit)
		shrink(sym);
}

void symbolizer_usage(const struct symbolizer *sym, struct sym_usage *out)
{
	*out = (struct sym_usage){
		.bytes = cache_bytes(sym), .limit = sym->cache_limit,
		.procs = sym->nprocs, .procs_max = MAX_PROCS,
		.files = sym->nfiles, .files_max = MAX_FILES,
		.files_dropped = sym->files_dropped, .tables_unloaded = sym->tables_unloaded,
		.procs_dropped = sym->procs_dropped, .pids_reused = sym->pids_reused,
		.xz_refused = sym->xz_refused,
		.files_refused = sym->files_refused, .perf_maps_refused = sym->perf_maps_refused,
	};
	struct kernel_names_usage kernel;
	struct pyframes_usage py;

	kernel_names_usage(sym->knames, &kernel);
	out->kernel_bytes = kernel.bytes;
	out->kernel_from_kernel = kernel.from_kernel;
	out->kernel_asked = kernel.asked;
	out->kernel_runs = kernel.runs;
	out->kernel_unnamed = kernel.unnamed;
	pyframes_usage(sym->py, &py);
	out->py_named = py.named;
	out->py_unnamed = py.unnamed;
	out->file_bytes = sym->file_bytes;
	out->proc_bytes = sym->proc_bytes;
	out->mapping_bytes = sym->mapping_bytes;
	out->name_bytes = sym->names.bytes;
	out->py_bytes = py.bytes;
}

/* ---- teardown ---- */

static void files_free(struct symbolizer *sym)
{
	struct elf_file *f, *next;
	size_t b;

	for (b = 0; b < FILE_BUCKETS; b++) {
		for (f = sym->files[b]; f; f = next) {
			next = f->next;
			if (f->fd >= 0)
				close(f->fd);
			file_close_root(f);
			elf_syms_free(&f->syms);
			free(f->path);
			free(f);
		}
	}
}

void symbolizer_free(struct symbolizer *sym)
{
	struct proc *p, *next;
	size_t b, i;

	if (!sym)
		return;
	pyframes_free(sym->py);
	for (b = 0; b < PROC_BUCKETS; b++) {
		for (p = sym->procs[b]; p; p = next) {
			next = p->next;
			sym_proc_free(p);
		}
	}
	files_free(sym);
	for (i = 0; i < sym->nmappings; i++)
		free(sym->mappings[i]);
	free(sym->mappings);
	strintern_free(&sym->names);
	kernel_names_free(sym->knames);
	free(sym);
}
