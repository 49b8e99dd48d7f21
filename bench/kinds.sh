#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# What --locks, --offcpu and --syscalls cost together against the sum of
# each alone (issue 25's goal: no more than the sum, less the shared entry).
# One fixed mixed workload of D seconds: pingpong (context switches and
# pipe syscalls, pinned to one CPU), lockburn mmap (the kernel's mmap_lock
# contended by 2 threads, mmap/munmap syscalls) and lockburn mutex (2
# threads on one pthread mutex: futex waits).  It starts stopped, aperture
# `record -p` its shell (children followed) with each kind alone and all
# three, then it runs; bpf_stats of the run's programs over the workload
# (per program ns a run and runs; every event of the machine meanwhile,
# the untargeted ones' early exits included; summed per hook: the cost of
# one context switch, syscall or contention) and the workload's rate per
# CPU-second against the unprofiled run of the same round (mean of the
# three parts' ratios).  kernel.bpf_stats_enabled is on for every variant, the
# unprofiled one included (its clock reads are in every profiled figure),
# and restored at exit.  Variants interleaved, order rotated each round;
# medians.  Knobs: ROUNDS (3), D (3), APERTURE.  See bench/README.md.
. "$(dirname "$0")/lib.sh"
D=${D:-3}
VARIANTS=(none locks offcpu syscalls all)

flags_of() {
	case $1 in
	locks) echo --locks ;;
	offcpu) echo --offcpu ;;
	syscalls) echo --syscalls ;;
	all) echo --locks --offcpu --syscalls ;;
	esac
}

# The programs a variant's run has once it is fully attached (kinds load one after another).
progs_of() {
	case $1 in
	locks) echo futex_switch ;;
	offcpu) echo offcpu_switch ;;
	syscalls) echo syscall_exit ;;
	all) echo futex_switch offcpu_switch syscall_exit ;;
	esac
}

# wait_progs PID NAMES...: until PID holds programs of each name (60 s at most)
wait_progs() {
	local pid=$1 n p ids=()
	shift
	for _ in $(seq 300); do
		mapfile -t ids < <(prog_ids_of "$pid")
		n=0
		for p in "$@"; do bpf_stats_of "${ids[@]}" | awk -v p="$p" '$2 == p { f = 1 } END { exit !f }' && n=$((n + 1)); done
		[ "$n" = $# ] && { sleep 1; return 0; }
		sleep 0.2
	done
	log "bench: $pid did not load $*"
	return 1
}

# one_run VARIANT: appends "VARIANT rate PP MM MU" (per CPU-second of each part) and
# "VARIANT prog NAME ns runs" lines to $W/res
one_run() {
	local v=$1 mix ids=() pp mm mu
	rm -f "$W"/pp* "$W"/mm* "$W"/mu*
	( kill -STOP "$BASHPID"; exec bash "$W/mix.sh" ) &
	mix=$!
	BGPIDS+=("$mix")
	for _ in $(seq 500); do [ "$(awk '{ print $3 }' /proc/"$mix"/stat 2>/dev/null)" = T ] && break; sleep 0.01; done
	if [ "$v" != none ]; then
		# shellcheck disable=SC2046
		start_tool "$v" timeout -k 5 600 "$APERTURE" record $(flags_of "$v") -p "$mix" -d 500 --top 0 \
			-o "$W/ap.folded" || { kill -KILL "$mix"; return; }
		# shellcheck disable=SC2046
		wait_progs "$TOOL_PID" $(progs_of "$v") || { stop_tool; kill -KILL "$mix"; return; }
		mapfile -t ids < <(prog_ids_of "$TOOL_PID")
	fi
	# Another job's bench may have turned bpf_stats off meanwhile (the sysctl is
	# the machine's; a run that saw it off throughout had no BPF figures): on
	# again for each run.  Off for part of a run still gives a true ns per run
	# (time and count stop together).
	sysctl -qw kernel.bpf_stats_enabled=1
	bpf_stats_of "${ids[@]}" >"$W/before"
	kill -CONT "$mix"
	wait "$mix"
	bpf_stats_of "${ids[@]}" >"$W/after"
	[ "$v" != none ] && stop_tool
	pp=$(awk '{ print $4 }' "$W/pp" 2>/dev/null)
	mm=$(awk -v n="$(sed -n 's/^maps=//p' "$W/mm")" '{ if ($1 + $2 > 0) printf "%.0f", n / ($1 + $2) }' "$W/mm.cpu" 2>/dev/null)
	mu=$(awk -v n="$(sed -n 's/.*locks=\([0-9]*\).*/\1/p' "$W/mu")" '{ if ($1 + $2 > 0) printf "%.0f", n / ($1 + $2) }' "$W/mu.cpu" 2>/dev/null)
	echo "$v rate ${pp:-0} ${mm:-0} ${mu:-0}" >>"$W/res"
	stats_delta "$W/before" "$W/after" | awk -v v="$v" '$4 > 0 { print v, "prog", $2, $3, $4 }' >>"$W/res"
}

# col VARIANT N: the median over rounds of field N of VARIANT's rate lines
col() { awk -v v="$1" -v n="$2" '$1 == v && $2 == "rate" { print $n }' "$W/res" | median; }

# per_run VARIANT REGEX: the median over rounds of the summed ns per run of VARIANT's programs matching REGEX
# (the cost per event of that hook: every program on it)
per_run() {
	awk -v v="$1" -v re="$2" '$2 == "rate" { r[$1]++ } $1 == v && $2 == "prog" && $3 ~ re { s[r[$1]] += $4 / $5 }
		END { for (k in s) printf "%.1f\n", s[k] }' "$W/res" | median
}

main() {
	local r v vs=() ratio sum_slow=0 hook re sum
	[ -x "$APERTURE" ] || { echo "bench: $APERTURE is not built" >&2; exit 1; }
	mkdir -p "$BIN"
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/pingpong" bench/pingpong.c &&
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/lockburn" tests/workloads/lockburn.c || exit 1
	# Each part's rate per CPU-second of its own (pingpong prints it; the shell's time
	# gives the others'): what the programs cost in the workload's context, less moved by
	# the machine's other jobs than a rate per wall second.
	cat >"$W/mix.sh" <<-EOF
		TIMEFORMAT='%U %S'
		"$BIN/pingpong" $D >"$W/pp" &
		{ time "$BIN/lockburn" mmap $D 2 >"$W/mm"; } 2>"$W/mm.cpu" &
		{ time "$BIN/lockburn" mutex $D 2 >"$W/mu"; } 2>"$W/mu.cpu" &
		wait
	EOF
	printf 'Kinds together: pingpong + lockburn mmap 2 + lockburn mutex 2 for %s s, %s rounds, load average %s\n' \
		"$D" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
	sysctl -qw kernel.bpf_stats_enabled=1
	for r in $(seq "$ROUNDS"); do
		vs=("${VARIANTS[@]:$((r % ${#VARIANTS[@]}))}" "${VARIANTS[@]:0:$((r % ${#VARIANTS[@]}))}")
		for v in "${vs[@]}"; do one_run "$v"; done
	done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG"
	# Per round: each part's rate over the unprofiled run of that round (rounds are in order).
	awk '$2 == "rate" { r[$1]++; k = $1 SUBSEP r[$1]; pp[k] = $3; mm[k] = $4; mu[k] = $5 }
	     END { for (k in pp) { split(k, a, SUBSEP); b = "none" SUBSEP a[2]
		if (a[1] == "none" || !pp[b] || !mm[b] || !mu[b]) continue
		printf "%s ratio %.4f %.4f %.4f\n", a[1], pp[k] / pp[b], mm[k] / mm[b], mu[k] / mu[b] } }' \
		"$W/res" >"$W/ratios"
	printf '\n  rates per CPU-second of each part, slowdown: 1 - the mean of the three ratios to the unprofiled run\n'
	printf '  BPF ns per event: the summed ns a run of every program on the hook\n'
	printf '  %-10s %11s %11s %11s %9s %14s %14s %16s\n' variant pingpong mmap mutex slowdown \
		"sched_switch" "sys_enter+exit" "contention b+e"
	for v in none locks offcpu syscalls all; do
		ratio=$(awk -v v="$v" '$1 == v && $2 == "ratio" { print ($3 + $4 + $5) / 3 }' "$W/ratios" | median)
		printf '  %-10s %11s %11s %11s %9s %14s %14s %16s\n' "$v" "$(col "$v" 3)" "$(col "$v" 4)" "$(col "$v" 5)" \
			"$(awk -v r="$ratio" 'BEGIN { if (r != "n/a") printf "%.3f", 1 - r }')" \
			"$(per_run "$v" '^(futex_switch|offcpu_switch)$')" "$(per_run "$v" '^syscall_(enter|exit)$')" \
			"$(per_run "$v" '^lock_(begin|end)$')"
		case $v in locks|offcpu|syscalls)
			sum_slow=$(awk -v a="$sum_slow" -v r="$ratio" 'BEGIN { print a + 1 - r }') ;;
		esac
	done
	printf '  %-10s %11s %11s %11s %9s' "sum alone" "" "" "" "$(awk -v s="$sum_slow" 'BEGIN { printf "%.3f", s }')"
	for hook in '^(futex_switch|offcpu_switch)$' '^syscall_(enter|exit)$' '^lock_(begin|end)$'; do
		sum=0
		for v in locks offcpu syscalls; do
			re=$(per_run "$v" "$hook")
			[ "$re" != n/a ] && sum=$(awk -v a="$sum" -v b="$re" 'BEGIN { print a + b }')
		done
		printf ' %14s' "$sum"
	done
	printf '\n\n  %-10s %-18s %10s %12s\n' variant program "ns/run" "runs"
	for v in locks offcpu syscalls all; do
		for p in $(awk -v v="$v" '$1 == v && $2 == "prog" { print $3 }' "$W/res" | sort -u); do
			printf '  %-10s %-18s %10s %12s\n' "$v" "$p" \
				"$(awk -v v="$v" -v p="$p" '$1 == v && $2 == "prog" && $3 == p { printf "%.1f\n", $4 / $5 }' "$W/res" | median)" \
				"$(awk -v v="$v" -v p="$p" '$1 == v && $2 == "prog" && $3 == p { print $5 }' "$W/res" | median)"
		done
	done
	printf '  (rounds: rate ratios pingpong mmap mutex per variant, then BPF ns per switch, syscall and\n'
	printf '  contention per variant and round; their spread is the noise)\n'
	sort "$W/ratios" | sed 's/^/  /'
	awk '$2 == "rate" { r[$1]++ } $2 == "prog" { k = $1 SUBSEP r[$1]; v[k] = 1
		if ($3 ~ /^(futex_switch|offcpu_switch)$/) sw[k] += $4 / $5
		if ($3 ~ /^syscall_(enter|exit)$/) sc[k] += $4 / $5
		if ($3 ~ /^lock_(begin|end)$/) lk[k] += $4 / $5 }
		END { for (k in v) { split(k, a, SUBSEP); printf "  %s ns %.0f %.0f %.0f\n", a[1], sw[k], sc[k], lk[k] } }' \
		"$W/res" | sort
}

main "$@"
