#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Syscall profiler cost: a getppid loop (bench/sysloop.c) unprofiled, under
# `aperture record --syscalls` (whole machine, latency histograms in the map
# value) and under libbpf-tools' syscount (plain counts) and syscount -L
# (with latency).  Two measures: the loop's elapsed time next to the
# unprofiled one (median over interleaved rounds), and the BPF programs' own
# run time per syscall from bpf_stats (one run per tool, the counters read
# before and after the loop).  With -p: `p-other` names another process
# (the loop is not a target: what a target filter costs everyone else),
# `p-loop` the loop itself.  APERTURE_BEFORE=BINARY adds the same three for an
# older build, interleaved in the same rounds.  `empty` (two empty tp_btf
# programs, bench/hookcost.bpf.c: on sys_enter and sys_exit) and `empty-exit` (one,
# on sys_exit) are the floors of a two-program and a one-program design;
# `empty-tp` is the `empty` pair on the classic tracepoints syscount uses,
# whose trace record (filled before the program runs) bpf_stats does not see.
# The loop's cost is its CPU time per call (what it waited for a CPU that
# other jobs held is not in it) over runs with kernel.bpf_stats_enabled off:
# bpf_stats reads the clock twice around every program run, which charges
# a two-program design twice.  See bench/README.md.
# Knobs: ROUNDS (3), CALLS (2000000), APERTURE, APERTURE_BEFORE, VARIANTS
# (a subset, e.g. VARIANTS="none ap-p-other syscount empty"), STATS_OFF=1
# (bpf_stats off for each timed loop, restored after it, when another job
# keeps it on: that job's ns per run stay true, time and count stop together,
# over a shorter window).
. "$(dirname "$0")/lib.sh"
CALLS=${CALLS:-2000000}
STATS_OFF=${STATS_OFF:-0}
APERTURE_BEFORE=${APERTURE_BEFORE:-}
SYSCOUNT=
for c in /usr/sbin/syscount /usr/sbin/libbpf-tools/syscount "$(command -v syscount 2>/dev/null)"; do
	[ -n "$c" ] && [ -x "$c" ] && { SYSCOUNT=$c; break; }
done
if [ -n "${VARIANTS:-}" ]; then
	read -r -a VARIANTS <<<"$VARIANTS"
else
	VARIANTS=(none aperture ap-p-other ap-p-loop syscount syscount-L empty empty-exit empty-tp)
	[ -n "$APERTURE_BEFORE" ] && VARIANTS+=(before before-p-other before-p-loop)
fi

# tool_cmd VARIANT: the command in CMD (empty for none); the loop is LOOP_PID
tool_cmd() {
	local ap=$APERTURE
	case $1 in before*) ap=$APERTURE_BEFORE ;; esac
	case $1 in
	none)		CMD=() ;;
	aperture|before) CMD=("$ap" record --syscalls -d 600 --top 0 -o "$W/ap.folded") ;;
	*-p-other)	CMD=("$ap" record --syscalls -p $$ -d 600 --top 0 -o "$W/ap.folded") ;;
	*-p-loop)	CMD=("$ap" record --syscalls -p "$LOOP_PID" -d 600 --top 0 -o "$W/ap.folded") ;;
	syscount)	CMD=("$SYSCOUNT") ;;
	syscount-L)	CMD=("$SYSCOUNT" -L) ;;
	empty)		CMD=("$BIN/hookcost" "$BIN/hookcost.bpf.o" 600 enter0 exit0) ;;
	empty-exit)	CMD=("$BIN/hookcost" "$BIN/hookcost.bpf.o" 600 exit0) ;;
	empty-tp)	CMD=("$BIN/hookcost" "$BIN/hookcost.bpf.o" 600 tpenter0 tpexit0) ;;
	esac
}

available() {
	case $1 in
	none|empty*) return 0 ;;
	before*) [ -x "$APERTURE_BEFORE" ] ;;
	a*) [ -x "$APERTURE" ] ;;
	syscount*) [ -n "$SYSCOUNT" ] ;;
	esac
}

# one_run VARIANT STATS: the loop's "wall-ns cpu-ns bpf_stats-state" per
# call in $W/elapsed (the state: 0 when bpf_stats was off at both ends of
# the loop, another job may turn it on); with STATS=1
# the BPF programs' counters before and after in $W/before, $W/after.
one_run() {
	local v=$1 stats=$2 ids=() i st
	# The loop starts stopped, so that a tool can be given its pid first.
	( kill -STOP "$BASHPID"; exec "$BIN/sysloop" "$CALLS" >"$W/loop.out" ) &
	LOOP_PID=$!
	BGPIDS+=("$LOOP_PID")
	for i in $(seq 500); do [ "$(awk '{ print $3 }' /proc/"$LOOP_PID"/stat 2>/dev/null)" = T ] && break; sleep 0.01; done
	tool_cmd "$v"
	if [ ${#CMD[@]} -gt 0 ]; then
		start_tool "$v" timeout -k 5 700 "${CMD[@]}" || { kill -KILL "$LOOP_PID"; echo fail >"$W/elapsed"; return; }
		# Under load a tool may still be loading programs: wait for its exit program.
		for i in $(seq 100); do
			mapfile -t ids < <(prog_ids_of "$TOOL_PID")
			bpf_stats_of "${ids[@]}" | grep -qE '^[0-9]+ (syscall_exit|sys_exit|exit0|tpexit0) ' && break
			sleep 0.2
		done
	fi
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/before"
	[ "$stats" = 0 ] && stats_off_begin
	st=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
	kill -CONT "$LOOP_PID"
	wait "$LOOP_PID"
	st=$((${st:-0} | $(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)))
	[ "$stats" = 0 ] && stats_off_end
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/after"
	[ ${#CMD[@]} -gt 0 ] && stop_tool
	echo "$(sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' "$W/loop.out") $(sed -n 's/.*cpu_per_call=\([0-9.]*\).*/\1/p' "$W/loop.out") $st" >"$W/elapsed"
	[ -n "$(cut -d' ' -f1 "$W/elapsed")" ] || echo fail >"$W/elapsed"
}

# cpu_median VARIANT: the loop's median CPU ns per call over the runs with
# bpf_stats off (over all runs, marked *, when another job kept it on)
cpu_median() {
	local m
	m=$(awk '$2 != "fail" && $4 == 0 { print $3 }' "$W/res.$1" 2>/dev/null | median)
	[ "$m" != n/a ] && { echo "$m"; return; }
	m=$(awk '$2 != "fail" { print $3 }' "$W/res.$1" 2>/dev/null | median)
	[ "$m" != n/a ] && echo "$m*" || echo n/a
}

main() {
	local r i v n=${#VARIANTS[@]} base t w c cnt exitre
	mkdir -p "$BIN"
	gcc -O2 -Wall -o "$BIN/sysloop" bench/sysloop.c && bench_bpf_build hookcost || exit 1
	need_tracefs || log "bench: no tracefs: syscount will be n/a"
	printf 'Syscalls: %s getppid() calls per run, %s rounds, %s CPUs, kernel %s, load average %s\n' \
		"$CALLS" "$ROUNDS" "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for v in "${VARIANTS[@]}"; do : >"$W/res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${VARIANTS[$(((i + r) % n))]}
			available "$v" || continue
			one_run "$v" 0
			log "bench: syscalls round $r $v: $(cat "$W/elapsed") (wall, CPU ns/call, bpf_stats)"
			echo "$r $(cat "$W/elapsed")" >>"$W/res.$v"
		done
	done
	base=$(cpu_median none)
	base=${base%\*}
	printf '\n  %-15s %10s %10s %10s %12s %14s %14s\n' variant "wall ns" "CPU ns" ratio "added CPU" "BPF ns/call" "BPF runs"
	for v in "${VARIANTS[@]}"; do
		w=$(awk '$2 != "fail" { print $2 }' "$W/res.$v" 2>/dev/null | median)
		t=$(cpu_median "$v")
		c=n/a; cnt=n/a
		if [ "$v" != none ] && available "$v" && sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
			one_run "$v" 1
			sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" 2>/dev/null
			stats_delta "$W/before" "$W/after" >"$W/delta.$v"
			# Per syscall: every program's time over the exit program's runs (one per call).
			exitre='^(syscall_exit|sys_exit|exit0|tpexit0)$'
			read -r _ cnt < <(stats_sum "$W/delta.$v" "$exitre")
			read -r t_all _ < <(stats_sum "$W/delta.$v" '.')
			c=$(ratio_of "$t_all" "$cnt")
			echo "$c" >"$W/ns.$v"
		fi
		awk -v t="${t%\*}" -v b="$base" 'BEGIN { if (t == "n/a" || b == "n/a" || t == "") print "n/a"; else printf "%.0f\n", t - b }' >"$W/added.$v"
		# The bpf_stats-off goal below only from medians of bpf_stats-off runs.
		case $t in *\*) echo n/a ;; *) cat "$W/added.$v" ;; esac >"$W/added-off.$v"
		printf '  %-15s %10s %10s %10s %12s %14s %14s\n' "$v" "${w:-n/a}" "${t:-n/a}" "$(ratio_of "${t%\*}" "$base")" \
			"$(cat "$W/added.$v")" "$c" "$cnt"
	done
	local a s
	a=$(cat "$W/ns.aperture" 2>/dev/null); s=$(cat "$W/ns.syscount" 2>/dev/null)
	printf '\n  Goal: aperture with histograms costs at most syscount'"'"'s plain count per call: '
	if [ -z "$a" ] || [ -z "$s" ] || [ "$a" = n/a ] || [ "$s" = n/a ]; then echo n/a
	else awk -v a="$a" -v s="$s" 'BEGIN { printf "%s (%.0f ns vs %.0f ns)\n", a <= s ? "PASS" : "MISS", a, s }'; fi
	goal_le() {	# goal_le TEXT A B: PASS when A <= B
		printf '  Goal: %s: ' "$1"
		if [ -z "$2" ] || [ -z "$3" ] || [ "$2" = n/a ] || [ "$3" = n/a ]; then echo n/a
		else awk -v a="$2" -v s="$3" 'BEGIN { printf "%s (%.0f ns vs %.0f ns)\n", a <= s ? "PASS" : "MISS", a, s }'; fi
	}
	goal_le "-p of another process costs the others at most syscount's plain count (BPF ns/call)" \
		"$(cat "$W/ns.ap-p-other" 2>/dev/null)" "$s"
	goal_le "the same, as the loop's added CPU ns a call, bpf_stats off" \
		"$(cat "$W/added-off.ap-p-other" 2>/dev/null)" "$(cat "$W/added-off.syscount" 2>/dev/null)"
	goal_le "-p of the loop adds at most syscount -L's per call (loop's added ns)" \
		"$(cat "$W/added.ap-p-loop" 2>/dev/null)" "$(cat "$W/added.syscount-L" 2>/dev/null)"
	printf '  (CPU ns: the loop'"'"'s own CPU time, bpf_stats off; * = every run saw bpf_stats on (another job).\n'
	printf '   BPF ns/call (bpf_stats on, one more run) charges two clock reads to every program run: a\n'
	printf '   two-program design pays them twice; whole-machine tools: averaged over every syscall meanwhile)\n'
	for v in "${VARIANTS[@]}"; do
		printf '  %s rounds (wall CPU bpf_stats): %s\n' "$v" "$(awk '{ printf "%s/%s/%s ", $2, $3, $4 }' "$W/res.$v" 2>/dev/null)"
	done
}

main "$@"
