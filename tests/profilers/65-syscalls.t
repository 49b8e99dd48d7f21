#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Syscalls (--syscalls) against sysburn, whose calls are known: K getppid(),
# N failing close(-1) (EBADF), M nanosleep() of 20 ms.  Counts and histograms
# are kept in the kernel; the report, folded and pprof come from them.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload sysburn
require_workload threadsys

K=100000; N=1000; M=50
ap_ok "--syscalls -- sysburn" sc record --syscalls --syscall-errors --syscall-sort count --top 40 \
	-o "$TMP/sc.folded" -o "$TMP/sc.pb.gz" -- "$WL/sysburn" $K $N $M
# report row: NAME CALLS ERRORS TOTAL_MS AVG_US MAX_US
row() { awk -v n="$1" -v f="$2" '$1 == n && NF == 6 { print $f; exit }' "$TMP/sc.out"; }
is_within "getppid: $K calls counted (0.1%)" $K "$(row getppid 2)" $((K / 1000))
is "close(-1): $N errors" "$(row close 3)" $N
ok "close(-1): the errors are EBADF" grep -qE "^ +EBADF +$N\$" "$TMP/sc.out"
is "nanosleep: $M calls" "$(row clock_nanosleep 2)" $M
# 20 ms asked; a loaded machine wakes some sleepers late, past 33.5 ms: sysburn times its own.
in_slot=$(sed -n 's/^sysburn: nanosleeps_in_16_33ms=//p' "$TMP/sc.err")
diag "nanosleeps that lasted 16.8-33.5 ms by sysburn's clock: ${in_slot:-none} of $M"
is "nanosleep: the 16-33 ms slot holds those sysburn timed in it" \
	"$(sed -nE 's/^ +16ms \.\. 33ms +([0-9]+) \|.*/\1/p' "$TMP/sc.out" | head -1)" "${in_slot:-none}"
is "folded: the failed closes are a leaf of their own" "$(awk '$1 == "sysburn;close:EBADF" { print "y" }' "$TMP/sc.folded")" y
ge "folded: getppid's total latency" "$(awk '$1 == "sysburn;getppid" { print $2 }' "$TMP/sc.folded")" 1000000
ok "pprof: go tool pprof reads it" sh -c "HOME='$TMP' GOCACHE='$TMP/gocache' go tool pprof -symbolize=none -sample_index=calls -top '$TMP/sc.pb.gz' > '$TMP/sc.top' 2>/dev/null"
ok "pprof: calls of getppid" grep -qE "^ +$K .* getppid\$" "$TMP/sc.top"

# --syscall-filter: only that one reaches the maps.
ap_ok "--syscall-filter close" flt record --syscalls --syscall-filter close --top 40 -o "$TMP/flt.folded" \
	-- "$WL/sysburn" 1000 10 1
is "--syscall-filter close: only close" "$(sed 's/ [0-9]*$//; s/:.*//' "$TMP/flt.folded" | sort -u | tr '\n' ' ')" "sysburn;close "
ap_ok "--syscall-filter close,getppid" flt2 record --syscalls --syscall-filter close,getppid --top 40 --weight calls \
	-o "$TMP/flt2.folded" -- "$WL/sysburn" 1000 10 1
is "--syscall-filter close,getppid: those two only" "$(sed 's/ [0-9]*$//; s/:.*//' "$TMP/flt2.folded" | sort -u | tr '\n' ' ')" "sysburn;close sysburn;getppid "
is "--syscall-filter close,getppid: every getppid (--weight calls)" "$(awk '$1 == "sysburn;getppid" { print $2 }' "$TMP/flt2.folded")" 1000
run_ap badflt record --syscalls --syscall-filter nosuchcall -d 1
is "--syscall-filter with an unknown name exits 2" "$AP_RC" 2
run_ap badflt2 record --syscalls --syscall-filter read,nosuchcall -d 1
is "--syscall-filter with one unknown name in the list exits 2" "$AP_RC" 2
ok "... and names it" grep -q "no syscall named 'nosuchcall'" "$TMP/badflt2.err"

# --syscall-stacks: slow calls carry the caller's user stack.
ap_ok "--syscall-stacks 10000" stk record --syscalls --syscall-stacks 10000 --top 0 -o "$TMP/stk.folded" \
	-- "$WL/sysburn" 10 1 5
ok "slow nanosleeps have the caller's stack" grep -qE '^sysburn;.*main;.*clock_nanosleep [0-9]+$' "$TMP/stk.folded"
ok "fast calls stay without a stack" grep -qE '^sysburn;getppid [0-9]+$' "$TMP/stk.folded"
# A new thread of a target may get the kernel stack of a dead thread of
# another process: both pinned to one CPU, the other's detached threads die
# while its main thread sleeps (nothing replaces this CPU's note of the dead
# one) and their stacks go back to the CPU's cache.  The not-target note
# names a task by its stack, and any fork makes every note stale: each of
# the target's 400 threads has its 50 calls counted.  A build without the
# fork generation in the note lost 50-250 of them (3 runs of 3).
bg taskset -c 0 "$WL/threadsys" detach 400 50 5000
ap_ok "--syscalls -- threadsys, beside another's dying threads" thr record --syscalls --syscall-filter getppid \
	--weight calls --top 5 -o "$TMP/thr.folded" -- taskset -c 0 "$WL/threadsys" join 400 50 5000
is "every call of the target's new threads counted" "$(awk '$1 == "threadsys;getppid" { print $2 }' "$TMP/thr.folded")" 20000
# Without the fork program the note is never used: the same answer, by the slower path.
bg taskset -c 0 "$WL/threadsys" detach 400 50 5000
APERTURE_DISABLE_FEATURES=tp_sched_process_fork ap_ok "--syscalls -- threadsys, no fork program" thrnf \
	record --syscalls --syscall-filter getppid --weight calls --top 5 -o "$TMP/thrnf.folded" \
	-- taskset -c 0 "$WL/threadsys" join 400 50 5000
is "no fork program: the target's calls, not the other's" "$(awk '$1 == "threadsys;getppid" { print $2 }' "$TMP/thrnf.folded")" 20000
# Live targets (a pinned daemon, -p A): the kernel caches per task whether it
# is a target, redone when control.cache_gen changes (aperture-ctl bumps it
# after each change of the set).  A and B sleep 20 ms back to back, so the
# latency they add over a window is the window's length; one call may be in
# flight at a change.
if command -v bpftool >/dev/null; then
	DIR=/sys/fs/bpf/aperture_test_sc_$$
	CTL="$TOP/tools/aperture-ctl"
	unpin_at_exit "$DIR"
	cp "$WL/sysburn" "$TMP/sc_a"; cp "$WL/sysburn" "$TMP/sc_b"
	bg "$TMP/sc_a" 0 0 3000; A=$BG_PID
	bg "$TMP/sc_b" 0 0 3000; B=$BG_PID
	bg "$APERTURE" run --pin "$DIR" --syscalls -p "$A" 2>"$TMP/pin.err"; DAEMON=$BG_PID
	for ((i = 0; i < 100 * TEST_SCALE; i++)); do [ -e "$DIR/syscalls_active" ] && break; sleep 0.1; done
	# sleep_ns COMM: the latency of COMM's clock_nanosleep calls in the pinned totals
	sleep_ns() { APERTURE="$APERTURE" "$CTL" -d "$DIR" dump syscalls |
		awk -v c="$1" -F'[; ]' '$1 == c && $2 == "@0xe6" { t += $3 } END { printf "%.0f\n", t }'; }
	# window COMM SECONDS: "MIN_NS MAX_NS GROWN_NS" of COMM over about SECONDS: the two
	# readings were taken between MIN (from the end of the first to the start of
	# the second) and MAX (from the start of the first to the end of the second) apart
	window() {
		local t0 t1 t2 t3 w0 w1
		t0=$(date +%s%N); w0=$(sleep_ns "$1"); t1=$(date +%s%N)
		sleep "$2"
		t2=$(date +%s%N); w1=$(sleep_ns "$1"); t3=$(date +%s%N)
		echo "$((t2 - t1)) $((t3 - t0)) $((w1 - w0))"
	}
	# counted NAME MIN MAX GROWN: GROWN within MIN less 10 % and MAX plus one call (40 ms)
	counted() {
		ok "$1 ($4 ns, readings $2..$3 ns apart)" awk -v lo="$2" -v hi="$3" -v g="$4" \
			'BEGIN { exit !(g >= lo * 0.9 && g <= hi + 40000000) }'
	}
	sleep 1
	read -r lo hi gr < <(window sc_a 2)
	counted "target A: its sleeping counted" "$lo" "$hi" "$gr"
	is "B, not a target, not counted" "$(sleep_ns sc_b)" 0
	"$CTL" -d "$DIR" target add "$B" >/dev/null
	"$CTL" -d "$DIR" target remove "$A" >/dev/null
	sleep 0.2
	read -r lo hi gr < <(window sc_b 2)
	counted "B added live: counted from then on" "$lo" "$hi" "$gr"
	read -r lo hi gr < <(window sc_a 1)
	ok "A removed live: not counted any more (grew $gr ns)" test "$gr" -le 0
	kill "$A" "$B"
	kill -INT "$DAEMON"; wait "$DAEMON"
	"$APERTURE" run --unpin --pin "$DIR" >/dev/null 2>&1
else
	skip "live target changes" "bpftool missing"
fi
done_testing
