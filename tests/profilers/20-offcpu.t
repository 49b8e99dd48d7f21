#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Off-CPU profiling against sleeper, which measures its own sleeps: the
# sleep_50ms stack's off-CPU time and switch count must match them.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload sleeper

# 1. Time (the default weight), whole life of the child.
ap_ok "--offcpu -- sleeper" ns record --offcpu -d 30 -o "$TMP/ns.folded" -- "$WL/sleeper" 3 "$TMP/ns.result"
slept=$(kv "$TMP/ns.result" slept_ns)
calls=$(kv "$TMP/ns.result" calls)
ge "sleeper ran (calls)" "${calls:-0}" 200
got=$(stack_weight "$TMP/ns.folded" ';sleep_50ms(;|$)')
is_within "off-CPU ns of sleep_50ms within 10% of slept_ns" "${slept:-0}" "$got" "$((${slept:-0} / 10))"
is "folded: valid lines" "$(folded_bad_lines "$TMP/ns.folded")" 0
# Every one of sleep_50ms's blocks is its nanosleep: >= 90% of slept_ns through the kernel's nanosleep.
ge "sleep_50ms stacks go through the kernel's nanosleep (>= 90% of slept_ns)" \
	"$(stack_weight "$TMP/ns.folded" ';sleep_50ms;.*nanosleep[a-z_0-9]*_\[k\];.*schedule[a-z_]*_\[k\]')" "$((${slept:-0} * 9 / 10))"
ok "summary line on stderr" grep -qE '^aperture: offcpu: ' "$TMP/ns.err"

# 2. --weight switches: one switch per nanosleep call.
ap_ok "--weight switches" sw record --offcpu --weight switches -d 30 -o "$TMP/sw.folded" -- "$WL/sleeper" 3 "$TMP/sw.result"
calls=$(kv "$TMP/sw.result" calls)
got=$(stack_weight "$TMP/sw.folded" ';sleep_50ms(;|$)')
is_within "switches of sleep_50ms within 10% of calls" "${calls:-0}" "$got" "$((${calls:-0} / 10 + 1))"

# 3. -p on a running sleeper for 2 s: 4 threads x 2 s of 50 ms sleeps.
bg "$WL/sleeper" 8 "$TMP/p.result" >/dev/null
sleep 0.5
ap_ok "--offcpu -p" p record --offcpu --weight switches -p "$BG_PID" -d 2 -o "$TMP/p.folded"
is_within "-p -d 2: ~160 switches in sleep_50ms" 160 "$(stack_weight "$TMP/p.folded" ';sleep_50ms(;|$)')" 24
is "-p: only the target's comm" "$(folded_comms "$TMP/p.folded" | tr '\n' ' ')" "sleeper "

# 4. The programs built for older kernels (5.10-5.17, bpf/lib/kernel.bpf.h), forced here: the
# task's state field instead of sched_switch's prev_state, each thread's start in a hash map by
# thread id instead of task storage.  The same known answers.
APERTURE_DISABLE_FEATURES=bpf_loop ap_ok "older kernels' build" compat \
	record -v --offcpu -d 30 -o "$TMP/compat.folded" -- "$WL/sleeper" 3 "$TMP/compat.result"
ok "older kernels' build: said so (-v)" grep -q '^aperture: offcpu: the programs built for older kernels' "$TMP/compat.err"
slept=$(kv "$TMP/compat.result" slept_ns)
calls=$(kv "$TMP/compat.result" calls)
is_within "older kernels' build: off-CPU ns of sleep_50ms within 10% of slept_ns" "${slept:-0}" \
	"$(stack_weight "$TMP/compat.folded" ';sleep_50ms(;|$)')" "$((${slept:-0} / 10))"
APERTURE_DISABLE_FEATURES=bpf_loop ap_ok "older kernels' build, --weight switches" compatsw \
	record --offcpu --weight switches -d 30 -o "$TMP/compatsw.folded" -- "$WL/sleeper" 3 "$TMP/compatsw.result"
calls=$(kv "$TMP/compatsw.result" calls)
is_within "older kernels' build: switches of sleep_50ms within 10% of calls" "${calls:-0}" \
	"$(stack_weight "$TMP/compatsw.folded" ';sleep_50ms(;|$)')" "$((${calls:-0} / 10 + 1))"

done_testing
