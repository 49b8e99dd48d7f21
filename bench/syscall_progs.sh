#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Per-program BPF cost of `--syscalls -p`: bench/sysloop.c started stopped,
# `aperture record --syscalls -p PID` of another process (the loop is not a
# target) or of the loop, then the loop's calls; bpf_stats of the run's own
# syscall_enter and syscall_exit over the loop (ns per run: every syscall of
# the machine meanwhile, nearly all the loop's).  Each binary given, in
# interleaved rounds; medians.  Usage: bash bench/syscall_progs.sh BINARY...
# Knobs: ROUNDS (3), CALLS (500000).  See bench/README.md.
. "$(dirname "$0")/lib.sh"
CALLS=${CALLS:-500000}

# one_run BINARY other|loop: "enter_ns exit_ns" per run
one_run() {
	local ap=$1 mode=$2 target i ids=() loop
	( kill -STOP "$BASHPID"; exec "$BIN/sysloop" "$CALLS" >/dev/null ) &
	loop=$!
	BGPIDS+=("$loop")
	for i in $(seq 500); do [ "$(awk '{ print $3 }' /proc/"$loop"/stat 2>/dev/null)" = T ] && break; sleep 0.01; done
	target=$$; [ "$mode" = loop ] && target=$loop
	start_tool ap "$ap" record --syscalls -p "$target" -d 600 --top 0 -o "$W/ap.folded" || { kill -KILL "$loop"; echo "n/a n/a"; return; }
	for i in $(seq 100); do
		mapfile -t ids < <(prog_ids_of "$TOOL_PID")
		bpf_stats_of "${ids[@]}" | grep -q ' syscall_exit ' && break
		sleep 0.2
	done
	sysctl -qw kernel.bpf_stats_enabled=1
	bpf_stats_of "${ids[@]}" >"$W/before"
	kill -CONT "$loop"; wait "$loop"
	bpf_stats_of "${ids[@]}" >"$W/after"
	sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG"
	stop_tool
	stats_delta "$W/before" "$W/after" >"$W/delta"
	echo "$(stats_per_run syscall_enter) $(stats_per_run syscall_exit)"
}
stats_per_run() { read -r t c < <(stats_sum "$W/delta" "^$1\$"); ratio_of "$t" "$c"; }

main() {
	local r ap mode n=0
	[ $# -gt 0 ] || { echo "usage: bash bench/syscall_progs.sh BINARY..." >&2; exit 2; }
	mkdir -p "$BIN"
	gcc -O2 -Wall -o "$BIN/sysloop" bench/sysloop.c || exit 1
	printf 'Syscall programs: %s getppid() calls per run, %s rounds, load average %s\n' \
		"$CALLS" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for r in $(seq "$ROUNDS"); do
		for ap in "$@"; do
			for mode in other loop; do
				echo "$ap $mode $(one_run "$ap" "$mode")" >>"$W/res"
			done
		done
	done
	printf '\n  %-40s %-6s %10s %10s %10s\n' binary "-p" "enter ns" "exit ns" "sum"
	for ap in "$@"; do
		for mode in other loop; do
			awk -v a="$ap" -v m="$mode" '$1 == a && $2 == m { print $3 }' "$W/res" | median >"$W/en"
			awk -v a="$ap" -v m="$mode" '$1 == a && $2 == m { print $4 }' "$W/res" | median >"$W/ex"
			printf '  %-40s %-6s %10s %10s %10s\n' "$ap" "$mode" "$(cat "$W/en")" "$(cat "$W/ex")" \
				"$(awk -v a="$(cat "$W/en")" -v b="$(cat "$W/ex")" 'BEGIN { printf "%.1f", a + b }')"
		done
	done
}

main "$@"
