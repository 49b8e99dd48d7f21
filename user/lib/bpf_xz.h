/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The embedded BPF objects are xz streams (tools/skel-xz.py rewrites each
 * skeleton's NAME_bpf__elf_bytes() to call this): 528 KB of ELF are 110 KB
 * compressed, and liblzma is linked anyway (.gnu_debugdata).
 */
#ifndef BPF_XZ_H
#define BPF_XZ_H

#include <stddef.h>

/*
 * The ELF object of the xz stream @xz (@xzlen bytes, @rawlen once inflated),
 * into *@sz.  Inflated once per stream and kept for the process's life (libbpf
 * reads the buffer until the object is loaded; a daemon reopens objects).
 * NULL with *@sz = 0 and errno set when it cannot: the skeleton's open then
 * fails (libbpf refuses an empty object).
 */
const void *bpf_xz_elf(const char *xz, size_t xzlen, size_t rawlen, size_t *sz);

#endif /* BPF_XZ_H */
