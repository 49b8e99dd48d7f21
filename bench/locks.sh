#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Lock profiler cost on two contention workloads (tests/workloads/lockburn.c):
# `mmap` (threads mmap/munmap: the kernel's mmap_lock) and `mutex` (threads on
# one pthread mutex held 50 us: futex waits).  Unprofiled, under `aperture
# record --locks`, `perf lock record -a` and a bpftrace script on
# lock:contention_begin/end (wait per lock address, as aperture keeps).  Two
# measures: the workload's throughput next to the unprofiled one (median over
# interleaved rounds), and the BPF programs' run time per contention from
# bpf_stats (one run per BPF tool; perf has no BPF programs: its ratio only).
# Knobs: ROUNDS (3), D (seconds per run, 3), THREADS (4), APERTURE.
. "$(dirname "$0")/lib.sh"
D=${D:-3}
THREADS=${THREADS:-4}
# aperture-fp: user stacks by frame pointers (--unwind fp), to tell the DWARF walk's share.
# bpftrace-stacks: the same script keyed by kernel and user stack too, which is what aperture keeps.
VARIANTS=(none aperture aperture-fp perf-lock bpftrace bpftrace-stacks)
BT_SCRIPT='tracepoint:lock:contention_begin { @start[tid] = nsecs; @lock[tid] = args->lock_addr; }
tracepoint:lock:contention_end /@start[tid]/ { @wait_ns[@lock[tid]] = sum(nsecs - @start[tid]);
	@contentions[@lock[tid]] = count(); delete(@start[tid]); delete(@lock[tid]); }'
BT_STACKS_SCRIPT='tracepoint:lock:contention_begin { @start[tid] = nsecs; @lock[tid] = args->lock_addr; }
tracepoint:lock:contention_end /@start[tid]/ { @wait_ns[pid, tid, @lock[tid], kstack, ustack] = sum(nsecs - @start[tid]);
	@contentions[pid, tid, @lock[tid], kstack, ustack] = count(); delete(@start[tid]); delete(@lock[tid]); }'

tool_cmd() {
	case $1 in
	none)		CMD=() ;;
	aperture)	CMD=("$APERTURE" record --locks -d 600 --top 0 -o "$W/ap.folded") ;;
	aperture-fp)	CMD=("$APERTURE" record --locks --unwind fp -d 600 --top 0 -o "$W/ap.folded") ;;
	perf-lock)	CMD=(perf lock record -a -o "$W/perf.data" -- sleep 600) ;;
	bpftrace)	CMD=(bpftrace -e "$BT_SCRIPT") ;;
	bpftrace-stacks) CMD=(bpftrace -e "$BT_STACKS_SCRIPT") ;;
	esac
}

available() {
	case $1 in
	none) return 0 ;;
	aperture*) [ -x "$APERTURE" ] ;;
	perf-lock) have perf ;;
	bpftrace*) have bpftrace ;;
	esac
}

# one_run VARIANT WORKLOAD STATS: the workload's operations per second in
# $W/rate; with STATS=1 the BPF counters before and after in $W/before, $W/after.
one_run() {
	local v=$1 wl=$2 stats=$3 ids=() started=0
	tool_cmd "$v"
	rm -f "$W/perf.data"
	if [ "$v" = perf-lock ]; then
		start_perf "$v" timeout -k 5 700 "${CMD[@]}" && started=1
	elif [ ${#CMD[@]} -gt 0 ]; then
		start_tool "$v" timeout -k 5 700 "${CMD[@]}" && started=1
	fi
	if [ ${#CMD[@]} -gt 0 ] && [ $started = 0 ]; then echo fail >"$W/rate"; return; fi
	[ $started = 1 ] && mapfile -t ids < <(prog_ids_of "$TOOL_PID")
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/before"
	"$BIN/lockburn" "$wl" "$D" "$THREADS" >"$W/wl.out"
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/after"
	[ $started = 1 ] && stop_tool
	tr ' ' '\n' <"$W/wl.out" | awk -v d="$D" -F= '$1 == "locks" || $1 == "maps" { printf "%.1f\n", $2 / d }' |
		head -1 >"$W/rate"
	[ -s "$W/rate" ] || echo fail >"$W/rate"
}

# contentions VARIANT: what the tool itself counted during the stats run.
contentions() {
	case $1 in
	aperture*) sed -n 's/^aperture: locks: \([0-9]*\) contentions.*/\1/p' "$W/$1.stderr" ;;
	bpftrace*) read -r _ c < <(stats_sum "$W/delta" '.'); echo $((c / 2)) ;;	# a begin and an end each
	esac
}

bench_workload() {
	local wl=$1 unit=$2 r i v n=${#VARIANTS[@]} base t c ns tdt
	for v in "${VARIANTS[@]}"; do : >"$W/res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${VARIANTS[$(((i + r) % n))]}
			available "$v" || continue
			one_run "$v" "$wl" 0
			log "bench: locks $wl round $r $v: $(cat "$W/rate") $unit/s"
			echo "$r $(cat "$W/rate")" >>"$W/res.$v"
		done
	done
	base=$(awk '$2 != "fail" { print $2 }' "$W/res.none" | median)
	printf '\n  lockburn %s (%s threads, %s s)\n' "$wl" "$THREADS" "$D"
	printf '  %-15s %12s %8s %14s %14s %10s\n' variant "$unit/s" ratio contentions "BPF ns total" "ns/cont."
	for v in "${VARIANTS[@]}"; do
		t=$(awk '$2 != "fail" { print $2 }' "$W/res.$v" 2>/dev/null | median)
		c=n/a; ns=n/a; tdt=n/a
		if [ "$v" != none ] && [ "$v" != perf-lock ]; then
			if available "$v" && sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
				one_run "$v" "$wl" 1
				sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" 2>/dev/null
				stats_delta "$W/before" "$W/after" >"$W/delta"
				awk -v v="$v" '$4 > 0 { printf "bench: %s %s: %d runs, %.0f ns/run\n", v, $2, $4, $3 / $4 }' "$W/delta" >&2
				read -r tdt _ < <(stats_sum "$W/delta" '.')
				c=$(contentions "$v")
				ns=$(ratio_of "$tdt" "$c")
				echo "$ns" >"$W/ns.$wl.$v"
			fi
		fi
		printf '  %-15s %12s %8s %14s %14s %10s\n' "$v" "${t:-n/a}" "$(ratio_of "$t" "$base")" "${c:-n/a}" "$tdt" "$ns"
		echo "$(ratio_of "$t" "$base")" >"$W/ratio.$wl.$v"
	done
}

goals() {
	local wl a b p pa
	printf '\n  Goals (load average at the end: %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	for wl in mmap mutex; do
		for bt in bpftrace bpftrace-stacks; do
			a=$(cat "$W/ns.$wl.aperture" 2>/dev/null); b=$(cat "$W/ns.$wl.$bt" 2>/dev/null)
			if [ "$wl" = mutex ]; then
				printf '  [n/a] %s: BPF ns per contention below %s'"'"'s (its script sees no futex waits)\n' "$wl" "$bt"
			elif [ -z "$a" ] || [ -z "$b" ] || [ "$a" = n/a ] || [ "$b" = n/a ]; then
				printf '  [n/a] %s: BPF ns per contention below %s'"'"'s\n' "$wl" "$bt"
			else
				awk -v a="$a" -v b="$b" -v w="$wl" -v t="$bt" 'BEGIN { printf "  [%s] %s: BPF ns per contention below %s'"'"'s: %.0f vs %.0f\n", a < b ? "PASS" : "MISS", w, t, a, b }'
			fi
		done
		pa=$(cat "$W/ratio.$wl.aperture" 2>/dev/null); p=$(cat "$W/ratio.$wl.perf-lock" 2>/dev/null)
		if [ -z "$pa" ] || [ -z "$p" ] || [ "$pa" = n/a ] || [ "$p" = n/a ]; then
			printf '  [n/a] %s: slowdown below perf lock record'"'"'s\n' "$wl"
		else
			awk -v a="$pa" -v p="$p" -v w="$wl" 'BEGIN { printf "  [%s] %s: throughput kept above perf lock record'"'"'s: %.3f vs %.3f\n", (a > p) ? "PASS" : "MISS", w, a, p }'
		fi
	done
	printf '  (ratios move with other jobs on the machine: compare them within one run;\n'
	printf '   bpftrace sees kernel lock contention only, not futex waits, so on the mutex\n'
	printf '   workload its count is of other locks; aperture'"'"'s ns include futex_switch, which\n'
	printf '   runs on every context switch of the machine and walks the stack of every futex sleep;\n'
	printf '   bpftrace walks no stack, bpftrace-stacks the kernel and user stacks aperture keeps)\n'
}

main() {
	mkdir -p "$BIN"
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/lockburn" tests/workloads/lockburn.c || exit 1
	need_tracefs || log "bench: no tracefs: bpftrace's tracepoints will be n/a"
	printf 'Locks: %s rounds of %s s, %s threads, %s CPUs, kernel %s, load average %s\n' \
		"$ROUNDS" "$D" "$THREADS" "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	bench_workload mmap maps
	bench_workload mutex locks
	goals
}

main "$@"
