#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Off-CPU stacks: a pipe reader and futex waiters, user frames then kernel frames.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload pipeblock futexblock

# 1. pipeblock: the reader sits in read() on a pipe for the whole run.
ap_ok "pipeblock" pipe record --offcpu -d 30 -o "$TMP/pipe.folded" -- "$WL/pipeblock" 2
# pipe(2) pipes read through pipe_read (anon_pipe_read since 6.16).
ge "reader's stack: wait_on_pipe then the kernel's pipe read (ns)" \
	"$(stack_weight "$TMP/pipe.folded" ';reader_thread;wait_on_pipe;(.*;)?[a-z_]*pipe_read_\[k\](;|$)')" 1500000000
is "folded: valid lines" "$(folded_bad_lines "$TMP/pipe.folded")" 0
is "folded: kernel frames after user frames" "$(folded_kernel_order_errors "$TMP/pipe.folded")" 0

# 2. futexblock: two raw futex waiters and a pthread_cond_wait waiter.
ap_ok "futexblock" futex record --offcpu -d 30 -o "$TMP/futex.folded" -- "$WL/futexblock" 2
ge "wait_on_futex stacks go through futex_wait (ns)" \
	"$(stack_weight "$TMP/futex.folded" ';wait_on_futex;(.*;)?_*futex_wait[a-z_]*_\[k\](;|$)')" 3000000000
# The cond waiter's user stack passes through libc (no frame pointers), so only
# its kernel side is sure: 2 raw waiters + 1 cond waiter = ~6 s in futex_wait.
ge "all futex_wait stacks: the cond waiter counted too (ns)" \
	"$(stack_weight "$TMP/futex.folded" ';_*futex_wait[a-z_]*_\[k\](;|$)')" 5000000000
ap_ok "futex switches" futexsw record --offcpu --weight switches -d 30 -o "$TMP/futexsw.folded" -- "$WL/futexblock" 2
# 20 wake-ups in 2 s, each waiter wakes (and blocks again) once per wake-up.
is_within "switch counts: 2 futex waiters x ~21 blocks" 42 "$(stack_weight "$TMP/futexsw.folded" ';wait_on_futex;')" 8

done_testing
