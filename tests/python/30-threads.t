#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Four CPython threads, each in its own function, three spinning under the
# GIL and one hashing with the GIL released: each function's share of the
# samples is within 5 points of its thread's share of the CPU time
# (time.thread_time_ns, measured by the script).  A thread's own frames come
# from its own thread state: reading the GIL holder's instead (what a build
# that trusts _PyRuntime's current thread state does) gives f3's samples to
# the spinning thread that holds the GIL.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
have_feature dwarf_unwind || skip_all "no DWARF unwinding here (CPython frames need it): $(feature_why dwarf_unwind)"
PY="$(cd "$(dirname "$0")/../workloads/python" && pwd)"

for py in /usr/bin/python3.11 /root/.pyenv/versions/3.13.*/bin/python3 /root/.pyenv/versions/3.10.*/bin/python3; do
	[ -x "$py" ] || { skip "$py" "absent"; continue; }
	n=$((${n:-0} + 1))
	ap_ok "$py threads" thr$n record -F 999 -d 30 -o "$TMP/thr$n.folded" -- "$py" "$PY/threads.py" 6 "$TMP/thr$n.result"
	cpu_total=0
	for f in f0 f1 f2 f3; do cpu_total=$((cpu_total + $(kv "$TMP/thr$n.result" cpu_$f))); done
	prof_total=$(stack_weight "$TMP/thr$n.folded" ';f[0-3]_\(threads\.py:[0-9]+\)(;|$)')
	for f in f0 f1 f2 f3; do
		want=$(pct "$(kv "$TMP/thr$n.result" cpu_$f)" "$cpu_total")
		got=$(pct "$(stack_weight "$TMP/thr$n.folded" ";${f}_\\(threads\\.py:[0-9]+\\)(;|\$)")" "$prof_total")
		ok "$py: $f's share $got% within 5 points of its CPU share $want%" \
			awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d <= 5 && d >= -5) }'
	done
	is "$py: no stack shows two threads' functions" \
		"$(stack_weight "$TMP/thr$n.folded" 'f[0-3]_\(threads\.py:[0-9]+\);.*f[0-3]_\(threads\.py:')" 0
done

done_testing
