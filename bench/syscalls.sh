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
# older build, interleaved in the same rounds.  See bench/README.md.
# Knobs: ROUNDS (3), CALLS (2000000), APERTURE, APERTURE_BEFORE.
. "$(dirname "$0")/lib.sh"
CALLS=${CALLS:-2000000}
APERTURE_BEFORE=${APERTURE_BEFORE:-}
SYSCOUNT=
for c in /usr/sbin/syscount /usr/sbin/libbpf-tools/syscount "$(command -v syscount 2>/dev/null)"; do
	[ -n "$c" ] && [ -x "$c" ] && { SYSCOUNT=$c; break; }
done
VARIANTS=(none aperture ap-p-other ap-p-loop syscount syscount-L)
[ -n "$APERTURE_BEFORE" ] && VARIANTS+=(before before-p-other before-p-loop)

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
	esac
}

available() {
	case $1 in
	none) return 0 ;;
	before*) [ -x "$APERTURE_BEFORE" ] ;;
	a*) [ -x "$APERTURE" ] ;;
	syscount*) [ -n "$SYSCOUNT" ] ;;
	esac
}

# one_run VARIANT STATS: the loop's ns per call in $W/elapsed; with STATS=1
# the BPF programs' counters before and after in $W/before, $W/after.
one_run() {
	local v=$1 stats=$2 ids=() i
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
			bpf_stats_of "${ids[@]}" | grep -qE '^[0-9]+ (syscall_exit|sys_exit) ' && break
			sleep 0.2
		done
	fi
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/before"
	kill -CONT "$LOOP_PID"
	wait "$LOOP_PID"
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/after"
	[ ${#CMD[@]} -gt 0 ] && stop_tool
	sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p' "$W/loop.out" >"$W/elapsed"
}

main() {
	local r i v n=${#VARIANTS[@]} base t c cnt exitre
	mkdir -p "$BIN"
	gcc -O2 -Wall -o "$BIN/sysloop" bench/sysloop.c || exit 1
	need_tracefs || log "bench: no tracefs: syscount will be n/a"
	printf 'Syscalls: %s getppid() calls per run, %s rounds, %s CPUs, kernel %s, load average %s\n' \
		"$CALLS" "$ROUNDS" "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for v in "${VARIANTS[@]}"; do : >"$W/res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${VARIANTS[$(((i + r) % n))]}
			available "$v" || continue
			one_run "$v" 0
			log "bench: syscalls round $r $v: $(cat "$W/elapsed") ns/call"
			echo "$r $(cat "$W/elapsed")" >>"$W/res.$v"
		done
	done
	base=$(awk '$2 != "fail" { print $2 }' "$W/res.none" | median)
	printf '\n  %-15s %14s %10s %12s %14s %14s\n' variant "ns/call (loop)" ratio "added ns" "BPF ns/call" "BPF runs"
	for v in "${VARIANTS[@]}"; do
		t=$(awk '$2 != "fail" { print $2 }' "$W/res.$v" 2>/dev/null | median)
		c=n/a; cnt=n/a
		if [ "$v" != none ] && available "$v" && sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
			one_run "$v" 1
			sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" 2>/dev/null
			stats_delta "$W/before" "$W/after" >"$W/delta.$v"
			# Per syscall: every program's time over the exit program's runs (one per call).
			exitre='^(syscall_exit|sys_exit)$'
			read -r _ cnt < <(stats_sum "$W/delta.$v" "$exitre")
			read -r t_all _ < <(stats_sum "$W/delta.$v" '.')
			c=$(ratio_of "$t_all" "$cnt")
			echo "$c" >"$W/ns.$v"
		fi
		awk -v t="$t" -v b="$base" 'BEGIN { if (t == "n/a" || b == "n/a" || t == "") print "n/a"; else printf "%.0f\n", t - b }' >"$W/added.$v"
		printf '  %-15s %14s %10s %12s %14s %14s\n' "$v" "${t:-n/a}" "$(ratio_of "$t" "$base")" \
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
	goal_le "-p of the loop adds at most syscount -L's per call (loop's added ns)" \
		"$(cat "$W/added.ap-p-loop" 2>/dev/null)" "$(cat "$W/added.syscount-L" 2>/dev/null)"
	printf '  (the loop'"'"'s ratio is moved by other jobs on the machine; BPF ns/call is the steadier measure;\n'
	printf '   whole-machine tools: BPF ns/call averages over every syscall made meanwhile)\n'
}

main "$@"
