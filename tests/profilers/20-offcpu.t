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

done_testing
