/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libbpf's messages silenced around a load whose refusal is an answer (a
 * feature probe, a load with a fallback), unless -vv asked for them.
 */
#ifndef BPF_QUIET_H
#define BPF_QUIET_H

#include <bpf/libbpf.h>

/* Silences libbpf (not under -vv); returns what bpf_quiet_end() restores. */
libbpf_print_fn_t bpf_quiet_begin(void);
void bpf_quiet_end(libbpf_print_fn_t old);

#endif /* BPF_QUIET_H */
