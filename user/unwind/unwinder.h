/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space half of DWARF unwinding: builds each mapped file's rows
 * once (shared by every process that maps it), and writes each announced
 * process's executable mappings into the BPF maps the walk reads
 * (bpf/unwind/dwarf.bpf.h).
 */
#ifndef UNWINDER_H
#define UNWINDER_H

#include <stdint.h>
#include <stdio.h>

struct unwinder;

/* --unwind */
enum unwind_mode {
	UNWIND_AUTO = 0,	/* dwarf where the kernel allows it, else frame pointers */
	UNWIND_FP,		/* frame pointers only (bpf_get_stack) */
	UNWIND_DWARF,		/* dwarf, or an error when the kernel cannot */
};

/* Default number of rows (12 bytes each) the rows map holds. */
#define UNWIND_ROWS_DEFAULT (1u << 20)
/* Processes with tables at once. */
#define UNWIND_PROCS_DEFAULT 4096
/* Files named in unwind_files at once (304 bytes each, allocated as used). */
#define UNWIND_FILES_DEFAULT 8192
/* Code object addresses whose last code object the Python walk remembers (LRU; 32 bytes each). */
#define PYTHON_CODES_DEFAULT 65536
/*
 * The same for a record of named processes: an LRU is filled whole when it is
 * created, 65536 entries ~9 ms of every such record's start (a tenth of
 * `record -- /bin/true`), and a few processes' hot code objects fit in a
 * quarter of it.  A forgotten address only starts its generations again.
 */
#define PYTHON_CODES_TARGETED 16384

/*
 * @rows_fd: the unwind_rows array (@rows_cap rows); @procs_fd: unwind_procs;
 * @files_fd: unwind_files (@files_cap entries).  Takes none of the fds.
 */
struct unwinder *unwinder_new(int rows_fd, uint32_t rows_cap, int procs_fd, int files_fd, uint32_t files_cap);
void unwinder_free(struct unwinder *u);

/*
 * Queues @tgid for the table builder thread, which (re)reads its
 * /proc/PID/maps, builds the tables of files not seen before and writes the
 * process's mappings for the walk.  0, or -ENOMEM.
 */
int unwinder_track(struct unwinder *u, uint32_t tgid);

/* Walks the frames of CPython processes too: writes their entries in @python_procs_fd (not taken). */
void unwinder_set_python(struct unwinder *u, int python_procs_fd);

/*
 * What it holds on the heap now: its files and processes, their lists, the
 * queue; and the largest table it built (freed once in the rows map: the
 * high-water mark building adds).
 */
void unwinder_bytes(struct unwinder *u, size_t *held, size_t *build_peak);

/* One line: files, rows, memory, .eh_frame read, build time, what did not fit or was not named. */
void unwinder_report(struct unwinder *u, FILE *out);

#endif /* UNWINDER_H */
