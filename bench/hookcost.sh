#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# What one more BPF program on a hook costs, and so what a shared dispatcher
# (one program per hook that calls each enabled kind) could save at most
# when two kinds share a hook (--locks and --offcpu on sched_switch).
# bench/hookcost.bpf.c's empty programs, 0, 1 and 2 of them on a hook, in
# interleaved rounds, bpf_stats off: pingpong (2 context switches a round
# trip, pinned to one CPU) with K programs on sched_switch, its CPU ns per
# round trip; sysloop (getppid) with K programs on sys_enter, CPU ns per call.
# "per program" = (K=2 - K=0) / 2, per switch or per call.  Then one run with
# bpf_stats on: an empty program's own ns per run as bpf_stats reports it
# (the clock reads around the run included: the floor under every program's
# figure).  Knobs: ROUNDS (3), D (pingpong seconds, 3), CALLS (1000000),
# STATS_OFF=1 (bpf_stats off for each timed run and back after it, when
# another job keeps it on: bench/syscalls.sh has the same).
# See bench/README.md.
. "$(dirname "$0")/lib.sh"

D=${D:-3}
STATS_OFF=${STATS_OFF:-0}
CALLS=${CALLS:-1000000}

# progs MODE K: the program names of K programs on MODE's hook
progs() {
	local i prefix=switch
	[ "$1" = enter ] && prefix=enter
	for ((i = 0; i < $2; i++)); do printf '%s%d ' "$prefix" "$i"; done
}

# one_run MODE K: the workload's figure (ns per round trip or per call)
one_run() {
	local mode=$1 k=$2
	if [ "$k" -gt 0 ]; then
		# shellcheck disable=SC2046
		start_tool hook "$BIN/hookcost" "$BIN/hookcost.bpf.o" 600 $(progs "$mode" "$k") || { echo fail; return; }
	fi
	stats_off_begin
	if [ "$mode" = switch ]; then
		"$BIN/pingpong" "$D" | awk '{ printf "%.1f\n", 1e9 / $4 }'
	else
		# The loop's own CPU time (CLOCK_PROCESS_CPUTIME_ID, read by the loop:
		# not getrusage's tick-sampled split), not the time it waited for a CPU.
		"$BIN/sysloop" "$CALLS" | sed -n 's/.*cpu_per_call=\([0-9.]*\).*/\1/p'
	fi
	stats_off_end
	[ "$k" -gt 0 ] && stop_tool
}

main() {
	local r i k mode ids=() t c
	mkdir -p "$BIN"
	bench_bpf_build hookcost &&
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/pingpong" bench/pingpong.c &&
	gcc -O2 -Wall -o "$BIN/sysloop" bench/sysloop.c || exit 1
	printf 'Hook cost: K empty programs on a hook, %s rounds, pingpong %s s, %s getppid() calls, load average %s\n' \
		"$ROUNDS" "$D" "$CALLS" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for r in $(seq "$ROUNDS"); do
		for mode in switch enter; do
			for i in 0 1 2; do
				k=$(((i + r) % 3))
				echo "$mode $k $(one_run "$mode" "$k")" >>"$W/res"
			done
		done
	done
	printf '\n  %-34s %12s %12s %12s %14s\n' workload "K=0" "K=1" "K=2" "per program"
	for mode in switch enter; do
		for k in 0 1 2; do
			awk -v m="$mode" -v k="$k" '$1 == m && $2 == k && $3 != "fail" { print $3 }' "$W/res" | median >"$W/m.$mode.$k"
		done
		printf '  %-34s %12s %12s %12s %14s\n' \
			"$([ "$mode" = switch ] && echo "pingpong, CPU ns per round trip" || echo "sysloop, CPU ns per getppid()")" \
			"$(cat "$W/m.$mode.0")" "$(cat "$W/m.$mode.1")" "$(cat "$W/m.$mode.2")" \
			"$(awk -v a="$(cat "$W/m.$mode.0")" -v b="$(cat "$W/m.$mode.2")" -v m="$mode" \
				'BEGIN { printf "%.1f%s", (b - a) / 2 / (m == "switch" ? 2 : 1), m == "switch" ? " /switch" : " /call" }')"
	done
	printf '  (rounds, K=0 K=1 K=2 per mode: spread over rounds is the noise floor)\n'
	for mode in switch enter; do
		for k in 0 1 2; do
			printf '  %s K=%s: %s\n' "$mode" "$k" "$(awk -v m="$mode" -v k="$k" '$1 == m && $2 == k { printf "%s ", $3 }' "$W/res")"
		done
	done
	# The bpf_stats floor: an empty program's ns per run as reported.
	start_tool hook "$BIN/hookcost" "$BIN/hookcost.bpf.o" 600 switch0 enter0 || exit 1
	sysctl -qw kernel.bpf_stats_enabled=1
	wait_running "$TOOL_PID"
	mapfile -t ids < <(prog_ids_of "$TOOL_PID")
	bpf_stats_of "${ids[@]}" >"$W/before"
	"$BIN/pingpong" "$D" >/dev/null
	"$BIN/sysloop" "$CALLS" >/dev/null
	bpf_stats_of "${ids[@]}" >"$W/after"
	sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG"
	stop_tool
	stats_delta "$W/before" "$W/after" >"$W/delta"
	for k in switch0 enter0; do
		read -r t c < <(stats_sum "$W/delta" "^$k\$")
		printf '  bpf_stats of an empty program on %s: %s ns per run (%s runs)\n' \
			"$([ $k = switch0 ] && echo sched_switch || echo sys_enter)" "$(ratio_of "$t" "$c")" "$c"
	done
}

main "$@"
