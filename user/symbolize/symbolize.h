/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address -> name.  Kernel frames from /proc/kallsyms; user frames with libdw
 * through /proc/PID/root and /proc/PID/map_files, cached per file (build id or
 * device+inode), never per sample.  All strings and mappings returned are
 * owned by the symbolizer and live until symbolizer_trim() or symbolizer_free().
 */
#ifndef SYMBOLIZE_H
#define SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

/* One mapped file (or the kernel), as pprof's Mapping wants it. */
struct sym_mapping {
	uint32_t id;		/* 1-based, unique per symbolizer */
	uint64_t start;		/* address range in the process (kernel: [kernel] text) */
	uint64_t end;
	uint64_t file_offset;	/* file offset mapped at start */
	const char *path;	/* as in /proc/PID/maps, e.g. /usr/lib/libc.so.6, or "[kernel.kallsyms]" */
	const char *name;	/* basename of path, e.g. "libc.so.6" */
	const char *build_id;	/* hex, "" when unknown */
	bool kernel;
};

struct sym_frame {
	uint64_t addr;			/* the address as sampled */
	const char *function;		/* NULL when no symbol covers addr */
	uint64_t function_offset;	/* addr - symbol start, when function != NULL */
	const struct sym_mapping *mapping; /* NULL when addr is in no known mapping */
	uint64_t module_offset;		/* file-relative address (for module+0xOFF and addr2line) */
	const char *name;		/* what to print: function, "module+0xOFF" or "[unknown]" */
	const char *file;		/* a Python frame's source file (NULL otherwise) */
	uint32_t line;			/* and its line (0: none) */
};

/*
 * What the command line sets of a symbolizer (--symbol-cache-mb,
 * --no-demangle), given to symbolizer_new(): zeroed, the defaults.
 */
struct symbolizer_settings {
	size_t cache_limit;	/* bytes the caches may take, kept at each symbolizer_trim(); 0: 24 MiB */
	bool no_demangle;	/* C++ and Rust names as in the symbol table (_ZN...) */
	bool kallsyms_only;	/* kernel frames named from /proc/kallsyms read whole, not by the kernel */
};

/* @settings NULL: the defaults. */
struct symbolizer *symbolizer_new(const struct symbolizer_settings *settings);
/* New @settings for @sym (a SIGHUP's), from now on: the cache limit at the next trim. */
void symbolizer_apply(struct symbolizer *sym, const struct symbolizer_settings *settings);
void symbolizer_free(struct symbolizer *sym);

/*
 * Reads /proc/PID/maps of @tgid now and keeps what is needed to symbolize it
 * later, even after the process exited.  Called again for a tracked process
 * (after an exec), reads its maps again.
 * Returns 0, or -ESRCH when the process is gone (not an error for callers
 * that only want to try).
 */
int symbolizer_track(struct symbolizer *sym, uint32_t tgid);

/*
 * Reads again the maps of the processes announced in the last second (at
 * most a few times each): called periodically (every 100 ms by record while
 * symbolizer_has_young says there is one), so that a process announced
 * before its loader mapped its libraries, and gone before the next snapshot,
 * is still named.
 */
void symbolizer_reread_young(struct symbolizer *sym);

/* Whether a process was announced in the last second: its maps are still to be read again (above). */
bool symbolizer_has_young(const struct symbolizer *sym);

/* @name demangled (malloc'ed), or NULL: not mangled, or demangling is off in @sym (NULL: on). */
char *symbolizer_demangle_name(const struct symbolizer *sym, const char *name);

/*
 * What to look up for the frame at @depth (0: the leaf) of a captured stack:
 * callers' frames are return addresses, and the call is the instruction
 * before, which may belong to another function (a noreturn call ending one).
 */
static inline uint64_t symbolizer_lookup_addr(uint64_t ip, size_t depth)
{
	return depth == 0 || ip == 0 ? ip : ip - 1;
}

/* Fills @out for a user address of @tgid (tracks @tgid first if needed). Never fails: unknown frames get "[unknown]". */
void symbolizer_user(struct symbolizer *sym, uint32_t tgid, uint64_t addr, struct sym_frame *out);

/*
 * A new stack of @tgid with Python frames (EVENT_PY_STACK): reads their code
 * objects now, while the process has them.
 */
void symbolizer_python_prefetch(struct symbolizer *sym, uint32_t tgid, const uint64_t *ips, uint32_t n);

/* How to ask the BPF side which code object it last saw at an address (see pyframes.h). */
void symbolizer_set_python_seen(struct symbolizer *sym,
				bool (*fn)(void *ctx, uint32_t tgid, uint64_t code, uint64_t *identity,
					   uint32_t *generation),
				void *ctx);

/*
 * Fills out[i] for each kernel address addrs[i] (lookup addresses: see
 * symbolizer_lookup_addr), asking the kernel once per 32 new ones.
 */
void symbolizer_kernel_frames(struct symbolizer *sym, const uint64_t *addrs, size_t n, struct sym_frame *out);

/*
 * Where no frame or mapping handed out is used any more (the interval's
 * profiles are written and freed): releases them, forgets processes that
 * had exited at the previous trim, and gets under the cache limit, dropping
 * the least recently used files' tables (read again on demand) and then
 * processes.  Mapping ids start again at 1.
 */
void symbolizer_trim(struct symbolizer *sym);

struct sym_usage {
	size_t bytes, limit;		/* what the caches take (estimated), the limit */
	/* bytes, by what holds them: */
	size_t file_bytes;		/* ELF files' symbol tables and paths */
	size_t proc_bytes;		/* processes' copies of their maps, JIT symbols */
	size_t mapping_bytes;		/* mappings handed out since the last trim */
	size_t name_bytes;		/* names handed out since the last trim (demangled, module+0xOFF) */
	size_t kernel_bytes;		/* the kernel's names (kernel_names.h) */
	size_t py_bytes;		/* Python code objects' names */
	size_t procs, procs_max;
	size_t files, files_max;
	uint64_t files_dropped;		/* no process mapped them, over the limit */
	uint64_t tables_unloaded;	/* symbol tables dropped over the limit, read again on demand */
	uint64_t procs_dropped;		/* exited, or least recently used over a limit */
	uint64_t pids_reused;		/* a new process under a known pid: started afresh */
	uint64_t xz_refused;		/* minidebuginfo refused: over the decoder's memory limit */
	uint64_t files_refused;		/* opened file not the one mapped, not regular, or too large */
	uint64_t perf_maps_refused;	/* processes whose perf map was not regular, too large or not theirs */
	uint64_t py_named;		/* Python code objects named */
	uint64_t py_unnamed;		/* Python frames whose code object could not be read (or had changed) */
	bool kernel_from_kernel;	/* kernel frames named by the kernel (else the kallsyms table) */
	uint64_t kernel_asked, kernel_runs, kernel_unnamed;	/* kernel_names_usage() */
};
void symbolizer_usage(const struct symbolizer *sym, struct sym_usage *out);

/* Every mapping handed out so far, in id order (for pprof's mapping table). */
const struct sym_mapping *const *symbolizer_mappings(struct symbolizer *sym, size_t *count);

#endif /* SYMBOLIZE_H */
