#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds side by side: each BINARY given runs `aperture record ARGS` at the
# same time (whole machine unless ARGS say otherwise), so that all see the
# same events, while WORKLOAD runs D seconds; bpf_stats of each one's own
# programs over that window, per program name: ns per run and runs.  ROUNDS
# rounds, medians.  Usage: bash bench/ab_progs.sh "ARGS" "WORKLOAD" BINARY...
# e.g. bash bench/ab_progs.sh "-F 997" "bench/build/cpuwork 8" ./old ./aperture
# With {PID} in ARGS the workload starts first (it must run D + 10 s or
# more), {PID} becomes its pid, and the window is D seconds of its run:
# bash bench/ab_progs.sh "-p {PID} --unwind dwarf -F 999" \
#	"bench/build/deepstack-nofp 30 90 2" ./old ./aperture
# A BINARY written cmd:COMMAND runs COMMAND as is instead (a peer beside
# the builds, e.g. "cmd:syscount -d 120": tracefs is mounted for it; {PID}
# in it is the workload's pid too: "cmd:syscount -L -p {PID} -d 120").
# Knobs: ROUNDS (3), D (8).  See bench/README.md.
. "$(dirname "$0")/lib.sh"
D=${D:-8}

main() {
	local args=$1 workload=$2 r i ap pids=() ids=() k wl
	shift 2
	[ $# -gt 0 ] || { echo 'usage: bash bench/ab_progs.sh "ARGS" "WORKLOAD" BINARY...' >&2; exit 2; }
	mkdir -p "$BIN"
	for w in cpuwork pingpong deepstack; do
		[ -x "$BIN/$w" ] || gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$BIN/$w" "bench/$w.c" || exit 1
	done
	[ -x "$BIN/deepstack-nofp" ] ||
		gcc -O2 -g -fomit-frame-pointer -pthread -o "$BIN/deepstack-nofp" bench/deepstack.c || exit 1
	printf 'Side by side: record %s, workload %s, %s s, %s rounds, load average %s\n' \
		"$args" "$workload" "$D" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for r in $(seq "$ROUNDS"); do
		pids=()
		i=0
		wl=
		if [[ $args == *"{PID}"* ]]; then
			# shellcheck disable=SC2086
			$workload >/dev/null 2>&1 &
			wl=$!
			BGPIDS+=("$wl")
		fi
		for ap in "$@"; do
			if [[ $ap == cmd:* ]]; then
				need_tracefs
				# shellcheck disable=SC2086
				cmd=${ap#cmd:}
				start_tool "ab$i" timeout -k 5 300 ${cmd//"{PID}"/$wl} || exit 1
			else
				# shellcheck disable=SC2086
				start_tool "ab$i" timeout -k 5 300 "$ap" record ${args//"{PID}"/$wl} -d 120 --top 0 -o "$W/ab$i.folded" || exit 1
			fi
			pids+=("$TOOL_PID")
			i=$((i + 1))
		done
		sysctl -qw kernel.bpf_stats_enabled=1
		for i in "${!pids[@]}"; do wait_running "${pids[$i]}"; done
		sleep 1
		for i in "${!pids[@]}"; do
			mapfile -t ids < <(prog_ids_of "${pids[$i]}")
			echo "${ids[*]}" >"$W/ids$i"
			bpf_stats_of "${ids[@]}" >"$W/before$i"
		done
		if [ -n "$wl" ]; then
			sleep "$D"
		else
			# shellcheck disable=SC2086
			$workload >/dev/null 2>&1
		fi
		for i in "${!pids[@]}"; do
			read -r -a ids <"$W/ids$i"
			bpf_stats_of "${ids[@]}" >"$W/after$i"
			stats_delta "$W/before$i" "$W/after$i" | awk -v b="$i" '$4 > 0 { printf "%s %s %.1f %d\n", b, $2, $3 / $4, $4 }' >>"$W/res"
		done
		sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG"
		for TOOL_PID in "${pids[@]}"; do stop_tool; done
		[ -n "$wl" ] && { kill "$wl" 2>/dev/null; wait "$wl" 2>/dev/null; }
	done
	printf '\n  %-36s %-24s %10s %12s\n' binary program "ns/run" "runs/round"
	i=0
	for ap in "$@"; do
		for k in $(awk -v b="$i" '$1 == b { print $2 }' "$W/res" | sort -u); do
			printf '  %-36s %-24s %10s %12s\n' "$ap" "$k" \
				"$(awk -v b="$i" -v k="$k" '$1 == b && $2 == k { print $3 }' "$W/res" | median)" \
				"$(awk -v b="$i" -v k="$k" '$1 == b && $2 == k { print $4 }' "$W/res" | median)"
		done
		i=$((i + 1))
	done
}

main "$@"
