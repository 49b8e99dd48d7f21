/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names user frames as the pinned iterator does (bpf/iter.bpf.c), from the
 * unwinder's maps in user space: FILE+0xADDR where the process's mappings
 * (unwind_procs) put the frame in a file named in unwind_files, else 0xADDR.
 */
#ifndef FRAMEFILE_H
#define FRAMEFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct frame_files;

/* Reads @procs_fd (unwind_procs) and @files_fd (unwind_files); takes neither fd.  NULL: no memory. */
struct frame_files *frame_files_new(int procs_fd, int files_fd);
void frame_files_free(struct frame_files *ff);

/* The process of the frames that follow (one lookup of its mappings). */
void frame_files_set_process(struct frame_files *ff, uint32_t tgid);

/* ";FILE+0xADDR" or ";0xADDR" for @ip (@leaf: an exact pc, else a return address). */
void frame_files_print(struct frame_files *ff, uint64_t ip, bool leaf, FILE *out);

#endif /* FRAMEFILE_H */
