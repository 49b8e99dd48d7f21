#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# aperture benchmarks: overhead of aperture next to perf, bpftrace and
# libbpf-tools' offcputime, measured side by side in interleaved rounds.
# See bench/README.md for what is measured and how to read the table.
#
# Environment knobs: ROUNDS (default 5), D (seconds per workload run, 5),
# HZ (99), RSS_SECONDS (10), APERTURE (path of the binary, ./aperture),
# PROFILER_BENCHES (1: also bench/syscalls.sh, bench/locks.sh,
# bench/unwind.sh and bench/gpu.sh; 0: not).
# Every command runs under a timeout; the EXIT trap kills what this script
# started and restores kernel.bpf_stats_enabled.
ROUNDS=${ROUNDS:-5}
. "$(dirname "$0")/lib.sh"	# cd to the top, W, BGPIDS, the EXIT trap, log/median/prog_ids_of/bpf_stats_of
D=${D:-5}
HZ=${HZ:-99}
RSS_SECONDS=${RSS_SECONDS:-10}
CAP=$((D + 30))		# hard cap on any profiler's own duration
OFFCPUTIME=
for c in /usr/sbin/offcputime /usr/sbin/libbpf-tools/offcputime "$(command -v offcputime 2>/dev/null)"; do
	[ -n "$c" ] && [ -x "$c" ] && { OFFCPUTIME=$c; break; }
done


# ---------------------------------------------------------------- profilers
# profiler_cmd VARIANT OUTPREFIX: prints nothing, sets the array CMD.
profiler_cmd() {
	local v=$1 out=$2
	case $v in
	aperture)	CMD=("$APERTURE" record -F "$HZ" -d "$CAP" --top 0 -o "$out.folded") ;;
	aperture-off)	CMD=("$APERTURE" record --offcpu -d "$CAP" --top 0 -o "$out.folded") ;;
	perf)		CMD=(perf record -q -F "$HZ" -g -a -o "$out.perf.data" -- sleep "$CAP") ;;
	bpftrace)	CMD=(bpftrace -e "profile:hz:$HZ { @[kstack, ustack, comm] = count(); }
				interval:s:$CAP { exit(); }") ;;
	offcputime)	CMD=("$OFFCPUTIME" "$CAP") ;;
	*)		return 1 ;;
	esac
}

# available VARIANT: can this variant run here?
available() {
	case $1 in
	none) return 0 ;;
	aperture|aperture-off) [ -n "$APERTURE_OK" ] ;;
	perf) have perf ;;
	bpftrace) have bpftrace ;;
	offcputime) [ -n "$OFFCPUTIME" ] ;;
	esac
}


# wait_ready VARIANT PID: returns once the profiler is sampling, 1 if it died.
wait_ready() {
	local v=$1 pid=$2 i
	for i in $(seq 100); do		# up to 20 s: bpftrace compiles first
		kill -0 "$pid" 2>/dev/null || return 1
		if [ "$v" = perf ]; then
			[ "$i" -ge 5 ] && break
		elif [ -n "$(prog_ids_of "$pid")" ]; then
			READY_T=$(date +%s.%N)
			break
		fi
		sleep 0.2
	done
	kill -0 "$pid" 2>/dev/null || return 1
	[ "$v" = perf ] || [ -n "$(prog_ids_of "$pid")" ] || return 1
	sleep 1		# let attachment finish after the load
	kill -0 "$pid" 2>/dev/null
}

# stop_profiler PID: SIGINT (every tool writes its output on it; timeout
# passes it on to its child's process group), then KILL.
stop_profiler() {
	local pid=$1 i
	kill -INT "$pid" 2>/dev/null
	for i in $(seq 150); do		# 30 s for symbolizing and writing
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -0 "$pid" 2>/dev/null && { log "bench: profiler $pid did not stop, killing it"; kill_tree "$pid"; }
	wait "$pid" 2>/dev/null
}

# measure VARIANT WORKLOAD STATS: one run; leaves the workload's throughput
# per wall second and per CPU-second (or "fail fail") in $W/rate; with STATS=1 also leaves the profiler's last
# bpf_stats reading in $W/stats.VARIANT.  Runs in the main shell (not in $(...))
# so that the EXIT trap knows every process it started.
measure() {
	local v=$1 wl=$2 stats=$3 ppid='' wpid out=$W/run.$1 ids=() rate
	if [ "$v" != none ]; then
		profiler_cmd "$v" "$out" || return 1
		timeout -k 5 $((CAP + 10)) "${CMD[@]}" >"$out.stdout" 2>"$out.stderr" </dev/null &
		ppid=$!
		BGPIDS+=("$ppid")
		if ! wait_ready "$v" "$ppid"; then
			log "bench: $v did not start: $(tail -n 2 "$out.stderr" | tr '\n' ' ')"
			stop_profiler "$ppid"
			echo fail fail >"$W/rate"
			return 0
		fi
		mapfile -t ids < <(prog_ids_of "$ppid")
	fi
	timeout -k 5 $((D + 20)) "$BIN/$wl" "$D" >"$W/wl.out" 2>&1 &
	wpid=$!
	BGPIDS+=("$wpid")
	while kill -0 "$wpid" 2>/dev/null; do
		[ "$stats" = 1 ] && [ ${#ids[@]} -gt 0 ] && bpf_stats_of "${ids[@]}" >"$W/stats.tmp" &&
			[ -s "$W/stats.tmp" ] && mv "$W/stats.tmp" "$W/stats.$v"
		sleep 0.5
	done
	wait "$wpid" 2>/dev/null
	[ "$stats" = 1 ] && [ ${#ids[@]} -gt 0 ] && bpf_stats_of "${ids[@]}" >"$W/stats.tmp" &&
		[ -s "$W/stats.tmp" ] && mv "$W/stats.tmp" "$W/stats.$v" &&
		awk -v a="$READY_T" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' >"$W/stats.$v.secs"
	[ -n "$ppid" ] && { kill -0 "$ppid" 2>/dev/null || log "bench: $v exited during the run"; stop_profiler "$ppid"; }
	rm -f "$out".*
	rate=$(awk '/_per_sec/ { print $2, $4 }' "$W/wl.out")
	echo "${rate:-fail fail}" >"$W/rate"
}

# rounds WORKLOAD VARIANTS...: interleaved rounds, the order rotated each round
# so that drift and warm-up hit every variant alike. Results go to $W/res.V.
rounds() {
	local wl=$1 r i n v rate
	shift
	local vs=("$@")
	n=${#vs[@]}
	for v in "${vs[@]}"; do : >"$W/res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${vs[$(((i + r) % n))]}
			available "$v" || continue
			measure "$v" "$wl" 0
			rate=$(cat "$W/rate")
			log "bench: $wl round $r $v: $rate"
			echo "$r $rate" >>"$W/res.$v"
		done
	done
}

# ratios VARIANT COLUMN: per-round ratios VARIANT/none of a column of the
# results (2: per wall second, 3: per CPU-second); pairs runs close in time.
ratios() {
	join <(sort "$W/res.$1") <(sort "$W/res.none") 2>/dev/null |
		awk -v c="$2" '$c != "fail" && $(c + 2) != "fail" && $(c + 2) > 0 { print $c / $(c + 2) }'
}

# ratio_summary VARIANT COLUMN: "median min max" of the per-round ratios.
ratio_summary() {
	local rs
	rs=$(ratios "$1" "$2")
	[ -n "$rs" ] || { echo "n/a n/a n/a"; return; }
	echo "$(echo "$rs" | median) $(echo "$rs" | sort -g | head -n1) $(echo "$rs" | sort -g | tail -n1)"
}

# ratio_cell MEDIAN MIN MAX: "0.9981 (0.99..1.00) 0.19%"
ratio_cell() {
	[ "$1" = n/a ] && { printf '%-29s' n/a; return; }
	printf '%-29s' "$(printf '%.4f %.4f..%.4f %5.2f%%' "$1" "$2" "$3" \
		"$(awk -v r="$1" 'BEGIN { print (1 - r) * 100 }')")"
}

# print_table TAG TITLE UNIT VARIANTS...: leaves the unprofiled spread (a
# fraction) per column in $W/spread.TAG.2 and .3 for the goals.
print_table() {
	local tag=$1 title=$2 unit=$3 v med spread wm wn wx cm cn cx c
	shift 3
	printf '\n%s\n' "$title"
	printf '  %-13s %13s  %-29s  %-29s\n' "" "median" "per wall second" "per CPU-second"
	printf '  %-13s %13s  %-29s  %-29s\n' variant "$unit" "ratio min..max slowdown" "ratio min..max slowdown"
	for v in "$@"; do
		if ! available "$v" || ! grep -qv fail "$W/res.$v" 2>/dev/null; then
			printf '  %-13s %13s  %-29s  %-29s\n' "$v" n/a n/a n/a
			continue
		fi
		med=$(awk '$2 != "fail" { print $2 }' "$W/res.$v" | median)
		if [ "$v" = none ]; then
			for c in 2 3; do
				awk -v c="$c" '$c != "fail" { print $c }' "$W/res.none" | sort -g |
					awk '{ v[NR] = $1 } END { if (NR) print (v[NR] - v[1]) / v[int((NR + 1) / 2)] }' \
					>"$W/spread.$tag.$c"
			done
			spread=$(awk '{ printf "%.2f%% ", $1 * 100 }' "$W/spread.$tag.2" "$W/spread.$tag.3")
			printf '  %-13s %13.0f  %-29s  %-29s\n' none "$med" \
				"spread $(echo "$spread" | cut -d' ' -f1)" "spread $(echo "$spread" | cut -d' ' -f2)"
			continue
		fi
		read -r wm wn wx < <(ratio_summary "$v" 2)
		read -r cm cn cx < <(ratio_summary "$v" 3)
		printf '  %-13s %13.0f  %s  %s\n' "$v" "$med" "$(ratio_cell "$wm" "$wn" "$wx")" \
			"$(ratio_cell "$cm" "$cn" "$cx")"
		[ "$wm" != n/a ] && echo "$wm" >"$W/ratio.$v"
		[ "$cm" != n/a ] && echo "$cm" >"$W/cratio.$v"
	done
}

# ---------------------------------------------------------------- BPF cost
# stats_run VARIANT WORKLOAD NAME_REGEX LABEL: one run with bpf_stats on;
# prints ns/event of the matching program with the most runs.
stats_run() {
	local v=$1 wl=$2 re=$3 label=$4 line name ns cnt secs
	rm -f "$W/stats.$v" "$W/stats.$v.secs"
	log "bench: BPF stats run: $v"
	if available "$v" && sysctl -qw kernel.bpf_stats_enabled=1 >/dev/null 2>&1; then
		measure "$v" "$wl" 1
		sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" >/dev/null 2>&1
	fi
	line=$(awk -v re="$re" '$2 ~ re && $4 > 0' "$W/stats.$v" 2>/dev/null | sort -k4,4gr | head -n1)
	if [ -z "$line" ]; then
		printf '  %-30s %12s %12s %12s\n' "$label" n/a n/a n/a
		return
	fi
	read -r _ name ns cnt <<<"$line"
	secs=$(cat "$W/stats.$v.secs" 2>/dev/null)
	awk -v t="$ns" -v c="$cnt" 'BEGIN { print t / c }' >"$W/ns.$v"
	printf '  %-30s %12s %12.0f %12.0f\n' "$label ($name)" "$cnt" \
		"$(awk -v c="$cnt" -v d="${secs:-0}" 'BEGIN { print (d > 0) ? c / d : 0 }')" "$(cat "$W/ns.$v")"
}

stats_header() {
	printf '  %-30s %12s %12s %12s\n' program runs "~runs/s" ns/run
}

# ---------------------------------------------------------------- loader cost
# rss_run LABEL CMD...: CMD under /usr/bin/time -v while cpuwork runs.
rss_run() {
	local label=$1 wpid rss user sys
	shift
	if [ ! -x /usr/bin/time ]; then
		printf '  %-10s %12s %12s %12s\n' "$label" n/a n/a n/a
		return
	fi
	timeout -k 5 $((RSS_SECONDS + 25)) "$BIN/cpuwork" $((RSS_SECONDS + 4)) >/dev/null 2>&1 &
	wpid=$!
	BGPIDS+=("$wpid")
	sleep 0.5
	timeout -k 5 $((RSS_SECONDS + 40)) /usr/bin/time -v -o "$W/time.txt" "$@" \
		>"$W/rss.stdout" 2>"$W/rss.stderr" </dev/null
	kill_tree "$wpid"
	wait "$wpid" 2>/dev/null
	rss=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$W/time.txt" 2>/dev/null)
	user=$(awk -F: '/User time/ { print $2 }' "$W/time.txt" 2>/dev/null)
	sys=$(awk -F: '/System time/ { print $2 }' "$W/time.txt" 2>/dev/null)
	if [ -z "$rss" ]; then
		printf '  %-10s %12s %12s %12s\n' "$label" n/a n/a n/a
		log "bench: $label under time -v failed: $(tail -n 2 "$W/rss.stderr" | tr '\n' ' ')"
		return
	fi
	printf '  %-10s %12.1f %12.2f %12.2f\n' "$label" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
		"$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
		"$(awk -v u="$user" -v s="$sys" -v d="$RSS_SECONDS" 'BEGIN { print (u + s) / d * 100 }')"
	echo "$rss" >"$W/rss.$label"
	rm -f "$W"/rss.out*
}

# ---------------------------------------------------------------- goals
goal() {	# goal VERDICT TEXT
	printf '  [%s] %s\n' "$1" "$2"
}

pct() { awk -v r="$1" 'BEGIN { printf "%.2f%%", (1 - r) * 100 }'; }

# oncpu_goals KIND FILEPREFIX COLUMN: the two on-CPU goals for one kind of
# ratio; NOISY instead of a verdict when the unprofiled runs of that column
# spread wider than the 0.5% the goal is about, or when aperture is behind
# perf by less than that spread.
oncpu_goals() {
	local kind=$1 ap pf spread noisy=
	ap=$(cat "$W/$2.aperture" 2>/dev/null)
	pf=$(cat "$W/$2.perf" 2>/dev/null)
	spread=$(cat "$W/spread.on.$3" 2>/dev/null)
	awk -v s="${spread:-0}" 'BEGIN { exit !(s > 0.005) }' &&
		noisy=" (unprofiled runs spread $(awk -v s="$spread" 'BEGIN { printf "%.2f%%", s * 100 }'))"
	if [ -z "$ap" ]; then
		goal n/a "on-CPU slowdown < 0.5% at $HZ Hz, $kind (aperture did not run)"
	else
		goal "$(awk -v r="$ap" -v n="$noisy" 'BEGIN { print n != "" ? "NOISY" : (1 - r < 0.005) ? "PASS" : "MISS" }')" \
			"on-CPU slowdown < 0.5% at $HZ Hz, $kind: $(pct "$ap")$noisy"
	fi
	if [ -z "$ap" ] || [ -z "$pf" ]; then
		goal n/a "on-CPU slowdown no worse than perf's, $kind"
	else
		# Worse by less than the noise floor is not a measured difference.
		goal "$(awk -v a="$ap" -v p="$pf" -v s="${spread:-0}" 'BEGIN {
			print (a >= p) ? "PASS" : (p - a <= s) ? "NOISY" : "MISS" }')" \
			"on-CPU slowdown no worse than perf's, $kind: aperture $(pct "$ap"), perf $(pct "$pf") (unprofiled runs spread $(awk -v s="${spread:-0}" 'BEGIN { printf "%.2f%%", s * 100 }'))"
	fi
}

# ns_goal FACTOR TEXT MINE PEER: aperture's BPF ns per event (table 2's ns.MINE) at most FACTOR
# times a peer's (ns.PEER)
ns_goal() {
	local a b
	a=$(cat "$W/ns.$3" 2>/dev/null)
	b=$(cat "$W/ns.$4" 2>/dev/null)
	if [ -z "$a" ] || [ -z "$b" ]; then
		goal n/a "$2"
		return
	fi
	goal "$(awk -v a="$a" -v b="$b" -v f="$1" 'BEGIN { print (a <= f * b) ? "PASS" : "MISS" }')" \
		"$2: $(printf '%.0f' "$a") ns vs $(printf '%.0f' "$b") ns ($(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')x)"
}

print_goals() {
	local rss
	printf '\nGoals (load average at the end: %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	oncpu_goals "per wall second" ratio 2
	oncpu_goals "per CPU-second" cratio 3
	rss=$(cat "$W/rss.aperture" 2>/dev/null)
	if [ -z "$rss" ]; then
		goal n/a "loader peak RSS < 16 MB"
	else
		goal "$([ "$rss" -lt 16384 ] && echo PASS || echo MISS)" \
			"loader peak RSS < 16 MB: $(awk -v k="$rss" 'BEGIN { printf "%.1f MB", k / 1024 }')"
	fi
	ns_goal 1 "off-CPU BPF cost per switch no higher than offcputime's" aperture-off offcputime
	# issue 25's goals
	ns_goal 0.5 "on-CPU BPF cost per sample (whole machine) at most 0.5x bpftrace's" aperture bpftrace
	ns_goal 0.5 "off-CPU BPF cost per switch at most 0.5x offcputime's" aperture-off offcputime
	printf '  (a slowdown or a difference smaller than the spread of the unprofiled runs is noise;\n'
	printf '   per CPU-second leaves out the loader'"'"'s own CPU time, which table 3 shows)\n'
}

# ---------------------------------------------------------------- main
main() {
	local ncpu
	ncpu=$(nproc)
	bench_workload_build cpuwork pingpong || { log "bench: cannot build the workloads"; exit 1; }
	have jq || log "bench: jq missing: BPF costs will be n/a"
	have bpftool || log "bench: bpftool missing: BPF costs will be n/a"

	APERTURE_OK=
	# Profile a workload: an idle machine gives no samples at all.
	if [ -x "$APERTURE" ] && timeout -k 5 30 "$APERTURE" record -d 3 -o "$W/check.folded" --top 3 \
			-- "$BIN/cpuwork" 1 1 >"$W/check.out" 2>&1 && [ -s "$W/check.folded" ]; then
		APERTURE_OK=1
	else
		log "bench: $APERTURE does not work, its rows will be n/a: $(tail -n 2 "$W/check.out" 2>/dev/null | tr '\n' ' ')"
	fi

	printf 'aperture benchmarks: %s CPUs, kernel %s, %s rounds of %s s, %s Hz, load average %s\n' \
		"$ncpu" "$(uname -r)" "$ROUNDS" "$D" "$HZ" "$(cut -d' ' -f1-3 /proc/loadavg)"

	awk -v n="$ncpu" '$1 > 0.3 * n { exit 1 }' /proc/loadavg ||
		printf 'WARNING: the machine is not idle (load average above); the ratios below are noisy.\n'

	rounds cpuwork none aperture perf bpftrace
	print_table on "1. On-CPU overhead: cpuwork ($ncpu threads, hash loop), profilers on the whole machine" ops/s \
		none aperture perf bpftrace

	rounds pingpong none aperture-off offcputime
	print_table off "4. Off-CPU overhead: pingpong (2 threads, pipe round trips)" trips/s \
		none aperture-off offcputime

	printf '\n2. BPF program cost (kernel.bpf_stats_enabled=1, one run each, workload running)\n'
	stats_header
	stats_run aperture cpuwork '^oncpu_sample$' "aperture on-CPU"
	stats_run bpftrace cpuwork '.' "bpftrace profile"
	stats_run aperture-off pingpong '^offcpu_switch$' "aperture off-CPU"
	stats_run offcputime pingpong '^sched_switch' "offcputime"

	printf '\n3. Loader cost: %s s whole machine at %s Hz while cpuwork runs (/usr/bin/time -v)\n' \
		"$RSS_SECONDS" "$HZ"
	printf '  %-10s %12s %12s %12s\n' tool "peak RSS MB" "user+sys s" "% of a CPU"
	if [ -n "$APERTURE_OK" ]; then
		rss_run aperture "$APERTURE" record -F "$HZ" -d "$RSS_SECONDS" --top 0 -o "$W/rss.out.folded"
	else
		printf '  %-10s %12s %12s %12s\n' aperture n/a n/a n/a
	fi
	if have perf; then
		rss_run perf perf record -q -F "$HZ" -g -a -o "$W/rss.out.perf.data" -- sleep "$RSS_SECONDS"
	else
		printf '  %-10s %12s %12s %12s\n' perf n/a n/a n/a
	fi
	if have bpftrace; then
		rss_run bpftrace bpftrace -e "profile:hz:$HZ { @[kstack, ustack, comm] = count(); }
			interval:s:$RSS_SECONDS { exit(); }"
	else
		printf '  %-10s %12s %12s %12s\n' bpftrace n/a n/a n/a
	fi

	print_goals

	# The lock and syscall profilers' own benchmarks: tables and goals of their own.
	if [ "${PROFILER_BENCHES:-1}" = 1 ]; then
		printf '\n'
		APERTURE=$APERTURE bash bench/syscalls.sh
		printf '\n'
		APERTURE=$APERTURE D=$D bash bench/locks.sh
		printf '\n'
		APERTURE=$APERTURE D=$D bash bench/unwind.sh
		printf '\n'
		APERTURE=$APERTURE bash bench/gpu.sh
	fi
}

main "$@"
