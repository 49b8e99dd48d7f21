/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel text addresses to function names.  Asked of the kernel itself where
 * it allows (bpf/ksym.bpf.c: %pS in a BPF program run by BPF_PROG_TEST_RUN,
 * 5.13+): a few microseconds an address, each asked once and remembered.
 * Else (an older kernel, lockdown of BPF, or @kallsyms_only) /proc/kallsyms
 * is read whole into a table, as before: ~45 ms and ~5 MiB.
 *
 * Names are the kernel's own choice among aliases (what perf's kallsyms and
 * the pinned iterators show) from the kernel, "global before local before
 * weak" from the table; module names are dropped in both.
 */
#ifndef KERNEL_NAMES_H
#define KERNEL_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kernel_names;

/* NULL only when out of memory.  Logs one line when it falls back to /proc/kallsyms. */
struct kernel_names *kernel_names_new(bool kallsyms_only);
void kernel_names_free(struct kernel_names *kn);

/* Whether the kernel names addresses here (else the kallsyms table does); *@step says what failed. */
int kernel_names_probe(const char **step);

/* The lowest kernel text address (0: unknown, e.g. kptr_restrict hides addresses). */
uint64_t kernel_names_text_start(const struct kernel_names *kn);

/* Asks the kernel about the @n addresses in one go (one run per 32 unknown ones). */
void kernel_names_prefetch(struct kernel_names *kn, const uint64_t *addrs, size_t n);

/*
 * The function at @addr and @addr's offset in it; false when no symbol covers
 * it.  *@name lives until kernel_names_trim() or kernel_names_free().
 */
bool kernel_names_find(struct kernel_names *kn, uint64_t addr, const char **name, uint64_t *offset);

/* Nothing found before is used any more: the remembered names go when over their bound. */
void kernel_names_trim(struct kernel_names *kn);

struct kernel_names_usage {
	size_t bytes;		/* the table, or the remembered names */
	bool from_kernel;	/* the kernel names addresses (else the kallsyms table) */
	uint64_t asked, runs;	/* addresses asked of the kernel, in so many program runs */
	uint64_t unnamed;	/* of them, ones no symbol covers (or a name past KSYM_TEXT) */
};
void kernel_names_usage(const struct kernel_names *kn, struct kernel_names_usage *out);

#endif /* KERNEL_NAMES_H */
