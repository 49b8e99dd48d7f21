/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel text symbols from /proc/kallsyms, and the kernel's build id. */
#ifndef KALLSYMS_H
#define KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "symtab.h"

struct kallsyms {
	struct symtab tab;	/* text symbols only, module names dropped */
	uint64_t text_start;	/* lowest text address */
};

/* Reads @path (normally /proc/kallsyms).  0, -errno, or -ENOENT when addresses are hidden. */
int kallsyms_load(struct kallsyms *ks, const char *path);
/*
 * The same, naming symbols as the kernel's %ps does (what the pinned
 * iterators print): "func [module]", the first of aliases in file order.
 */
int kallsyms_load_printk(struct kallsyms *ks, const char *path);
void kallsyms_free(struct kallsyms *ks);
/*
 * The kernel's lowest text address from the head of @path (its first text
 * symbol: the file is sorted, modules and BPF programs after the kernel's own
 * text), reading no further; 0 when addresses are hidden or none is found.
 */
uint64_t kallsyms_text_start(const char *path);

/* Hex GNU build id from a notes file (/sys/kernel/notes) into @hex; "" when none. */
void kernel_build_id(const char *notes_path, char *hex, size_t hexlen);

#endif /* KALLSYMS_H */
