#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# GPU profiler cost per kernel launch: a loop of N launches (bench/gpuloop.c)
# against the stand-in CUDA driver and runtime of the tests (no GPU needed,
# a launch does no work: FAKE_CUDA_LAUNCH_US=0), unprofiled and under
# `aperture record --gpu -p PID` (DWARF stacks where the kernel walks them,
# and --unwind fp), in interleaved rounds of one run.  Two modes: `driver`
# (cuLaunchKernel: a uprobe and a uretprobe per launch) and `runtime`
# (cudaLaunchKernel, which calls cuLaunchKernel: four traps, one count).
# Also `bpftrace` with an empty-bodied count on the same uprobes and
# uretprobes: the floor, what the traps alone cost here.
# Reported: ns per launch (median over rounds) of wall time and of the loop's
# CPU time (user + system: the traps' kernel work is charged to it; other jobs
# inflate the wall figure, each trap being a chance to be scheduled out), the
# ns added per launch, the launches the tool counted (all N, or the figure
# means nothing), and the BPF programs' own time per launch from bpf_stats
# (one extra run per variant); the rest of the added time is the traps.
# Knobs: ROUNDS (3), N (launches per run, 50000), APERTURE.
. "$(dirname "$0")/lib.sh"
N=${N:-50000}
VARIANTS=(none aperture aperture-fp bpftrace)
MODES=(driver runtime)
GPU_SRC=$ROOT/tests/workloads/gpu

# The traps alone: a count on each launch function's entry and return, for the loop's pid.
bt_script() {	# bt_script MODE
	local lib=$BIN/gpu/libcuda.so.1 rt=$BIN/gpu/libcudart.so.12
	printf 'uprobe:%s:cuLaunchKernel { @calls = count(); } uretprobe:%s:cuLaunchKernel { @returns = count(); }\n' "$lib" "$lib"
	[ "$1" = runtime ] &&
		printf 'uprobe:%s:cudaLaunchKernel { @rt_calls = count(); } uretprobe:%s:cudaLaunchKernel { @rt_returns = count(); }\n' "$rt" "$rt"
}

tool_cmd() {	# tool_cmd VARIANT PID MODE
	case $1 in
	none)		CMD=() ;;
	aperture)	CMD=("$APERTURE" record --gpu -p "$2" -d 600 --top 0 -o "$W/ap.folded") ;;
	aperture-fp)	CMD=("$APERTURE" record --gpu --unwind fp -p "$2" -d 600 --top 0 -o "$W/ap.folded") ;;
	bpftrace)	CMD=(bpftrace -p "$2" -e "$(bt_script "$3")") ;;
	esac
}

available() {
	case $1 in
	bpftrace) have bpftrace ;;
	*) return 0 ;;
	esac
}

# start_loop MODE: gpuloop loaded its library and waits for $W/go (LOOP_PID); 1 if it did not get there.
start_loop() {
	local i
	rm -f "$W/go"
	GPULOOP_GO="$W/go" LD_LIBRARY_PATH="$BIN/gpu" FAKE_CUDA_LAUNCH_US=0 FAKE_CUDA_INIT_MS=0 \
		"$BIN/gpuloop" "$1" "$N" >"$W/loop.out" 2>"$W/loop.err" &
	LOOP_PID=$!
	BGPIDS+=("$LOOP_PID")
	for i in $(seq 100); do
		grep -qs 'libcuda\.so' "/proc/$LOOP_PID/maps" && return 0
		sleep 0.05
	done
	log "bench: gpuloop $1 did not load the driver: $(cat "$W/loop.err")"
	return 1
}

# one_run VARIANT MODE STATS: "wall-ns cpu-ns" per launch in $W/rate, the launches the tool
# counted in $W/seen; with STATS=1 the BPF counters before and after in $W/before, $W/after.
one_run() {
	local v=$1 mode=$2 stats=$3 ids=() started=0
	echo fail fail >"$W/rate"
	: >"$W/seen"
	start_loop "$mode" || return
	tool_cmd "$v" "$LOOP_PID" "$mode"
	if [ ${#CMD[@]} -gt 0 ]; then
		start_tool "$v" timeout -k 5 700 "${CMD[@]}" || { kill_tree "$LOOP_PID"; return; }
		started=1
		mapfile -t ids < <(prog_ids_of "$TOOL_PID")
	fi
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/before"
	touch "$W/go"
	wait "$LOOP_PID"
	[ "$stats" = 1 ] && bpf_stats_of "${ids[@]}" >"$W/after"
	if [ $started = 1 ]; then
		stop_tool
		sed -n 's/^aperture: gpu: \([0-9]*\) launches.*/\1/p; s/^@calls: \([0-9]*\)/\1/p' \
			"$W/$v.stderr" "$W/$v.stdout" >"$W/seen"
	fi
	sed -n 's/^ns_per_launch=\([0-9.]*\) cpu_ns_per_launch=\([0-9.]*\) .*/\1 \2/p' "$W/loop.out" | grep . >"$W/rate" ||
		echo fail fail >"$W/rate"
}

# col FILE N: the median of column N of FILE, failures left out
col() { awk -v n="$2" '$n != "fail" { print $n }' "$1" 2>/dev/null | median; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || a == "" || b == "") print "n/a"; else printf "%.0f\n", a - b }'; }

bench_mode() {
	local mode=$1 r i v n=${#VARIANTS[@]} wall0 cpu0 wall cpu seen tdt ns
	for v in "${VARIANTS[@]}"; do : >"$W/res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${VARIANTS[$(((i + r) % n))]}
			available "$v" || continue
			one_run "$v" "$mode" 0
			log "bench: gpu $mode round $r $v: $(cat "$W/rate") ns/launch (wall cpu), counted $(cat "$W/seen")"
			echo "$(cat "$W/rate") $(cat "$W/seen")" >>"$W/res.$v"
		done
	done
	wall0=$(col "$W/res.none" 1)
	cpu0=$(col "$W/res.none" 2)
	printf '\n  %s: %s launches of %s per run\n' "$mode" "$N" \
		"$([ "$mode" = driver ] && echo cuLaunchKernel || echo 'cudaLaunchKernel (-> cuLaunchKernel)')"
	printf '  %-12s %11s %10s %11s %10s %9s %9s\n' variant "wall ns" added "CPU ns" added seen "BPF ns"
	for v in "${VARIANTS[@]}"; do
		available "$v" || continue
		wall=$(col "$W/res.$v" 1)
		cpu=$(col "$W/res.$v" 2)
		seen=$(awk '{ print $3 }' "$W/res.$v" | sort -u | tr '\n' ' ')
		ns=n/a
		if [ "$v" != none ] && sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
			one_run "$v" "$mode" 1
			sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" 2>/dev/null
			stats_delta "$W/before" "$W/after" >"$W/delta"
			awk -v v="$v" '$4 > 0 { printf "bench: %s %s: %d runs, %.0f ns/run\n", v, $2, $4, $3 / $4 }' "$W/delta" >&2
			read -r tdt _ < <(stats_sum "$W/delta" '.')
			ns=$(awk -v t="$tdt" -v n="$N" 'BEGIN { printf "%.0f\n", t / n }')
		fi
		if [ "$v" = none ]; then
			printf '  %-12s %11s %10s %11s %10s %9s %9s\n' "$v" "$wall" - "$cpu" - - -
			continue
		fi
		printf '  %-12s %11s %10s %11s %10s %9s %9s\n' "$v" "$wall" "$(minus "$wall" "$wall0")" "$cpu" \
			"$(minus "$cpu" "$cpu0")" "${seen% }" "$ns"
		minus "$cpu" "$cpu0" >"$W/added.$mode.$v"
	done
}

summary() {
	local a b
	a=$(cat "$W/added.driver.aperture" 2>/dev/null)
	b=$(cat "$W/added.driver.bpftrace" 2>/dev/null)
	printf '\n  Against a real launch (load average at the end: %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	if [ -n "$a" ]; then
		awk -v a="$a" 'BEGIN { printf "  cuLaunchKernel under --gpu: +%.1f us of CPU, %.1f-%.1f times a real launch call of 2-5 us\n", a / 1000, a / 5000, a / 2000 }'
	fi
	if [ -n "$b" ]; then
		awk -v b="$b" 'BEGIN { printf "  the same two traps with an empty count (bpftrace): +%.1f us of CPU\n", b / 1000 }'
	fi
	printf '  (2-5 us: the CPU side of a real launch, NVIDIA'"'"'s "Getting Started with CUDA Graphs",\n'
	printf '   https://developer.nvidia.com/blog/cuda-graphs/; 4-6 us measured on CUDA 13.0 / RTX 5070 Ti in\n'
	printf '   https://susun-blog.com/blog/pegainfer-3-cuda-graph. The stand-in'"'"'s call costs ~0: the added\n'
	printf '   time is the traps (uprobe + uretprobe; dear in a VM) and, for aperture, its programs (BPF ns,\n'
	printf '   the stack walk of this shallow loop included: a deeper stack, e.g. Python'"'"'s, walks longer))\n'
}

main() {
	mkdir -p "$BIN/gpu"
	gcc -O2 -g -fno-omit-frame-pointer -fPIC -shared -Wl,-soname,libcuda.so.1 -o "$BIN/gpu/libcuda.so.1" \
		"$GPU_SRC/fake_libcuda.c" || exit 1
	gcc -O2 -g -fno-omit-frame-pointer -fPIC -shared -Wl,-soname,libcudart.so.12 -o "$BIN/gpu/libcudart.so.12" \
		"$GPU_SRC/fake_libcudart.c" -ldl || exit 1
	gcc -O2 -g -fno-omit-frame-pointer -Wall -I"$GPU_SRC" -o "$BIN/gpuloop" bench/gpuloop.c -ldl || exit 1
	[ -x "$APERTURE" ] || { log "bench: $APERTURE is not built"; exit 1; }
	printf 'GPU launches: %s rounds of %s launches, %s CPUs, kernel %s, load average %s\n' \
		"$ROUNDS" "$N" "$(nproc)" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	for mode in "${MODES[@]}"; do bench_mode "$mode"; done
	summary
}

main "$@"
