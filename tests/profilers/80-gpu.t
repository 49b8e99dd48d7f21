#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GPU kernel launches (--gpu) against a stand-in CUDA driver (no GPU here):
# tests/build/gpu/libcuda.so.1 (workloads/gpu/fake_libcuda.c, the driver's
# real entry points: a launch spins 20 us, a synchronize sleeps S ms), in a
# directory only the program's LD_LIBRARY_PATH names, dlopened by gpuapp
# after aperture started (the library is found through the process's maps).
# gpuapp launches vecAdd N times with grid (64,1,1) block (256,1,1), the
# mangled _Z6matmulPfS_S_i M times with varying grids, cuGraphLaunch K times,
# and cuCtxSynchronize J times of S ms each, and prints its own clock.
# gpurtapp does the like through a stand-in CUDA runtime
# (tests/build/gpu/libcudart.so.12, workloads/gpu/fake_libcudart.c) that
# forwards to the driver as NVIDIA's does.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload gpuapp gpurtapp gpu/libcuda.so.1 gpu/libcudart.so.12
have_feature uprobe || skip_all "no uprobes here: $(feature_why uprobe)"

N=2000; M=600; K=50; J=10; S=20
export LD_LIBRARY_PATH="$WL/gpu"
ap_ok "--gpu -- gpuapp" g record --gpu --gpu-events --events "$TMP/g.ev" --top 10 \
	-o "$TMP/g.folded" -o "$TMP/g.pb.gz" -- "$WL/gpuapp" $N $M $K $J $S
app=$(grep '^gpuapp:' "$TMP/g.out")
diag "$app"
# report rows: NAME... PID LAUNCHES SHARE AVG_US DIMS... STACK
row() { grep -E "^  $1 +[0-9]+ " "$TMP/g.out" | head -1; }
launches() { row "$1" | sed -E "s/^  $1 +[0-9]+ +([0-9]+) .*/\1/"; }
is "vecAdd: $N launches" "$(launches vecAdd)" $N
is "matmul demangled: $M launches" "$(launches 'matmul\(float\*, float\*, float\*, int\)')" $M
is "graph launches: $K" "$(launches 'graph@0x[0-9a-f]+')" $K
is "the end line counts every launch" "$(sed -n 's/^aperture: gpu: \([0-9]*\) launches, 0 lost.*/\1/p' "$TMP/g.err")" $((N + M + K))
ok "vecAdd: grid (64,1,1) block (256,1,1), not varied" sh -c "grep -E '^  vecAdd .* \(64,1,1\) \(256,1,1\) ' '$TMP/g.out' | grep -qv varied"
ok "matmul: dims varied, last grid (64,2,1) block (16,16,1)" grep -qE '^  matmul\(.* varied, last \(64,2,1\) \(16,16,1\) ' "$TMP/g.out"
ok "vecAdd's top launching stack is launch_vecadd <- main" grep -qE '^  vecAdd .* launch_vecadd <- main' "$TMP/g.out"
ok "matmul's top launching stack is launch_matmul <- main" grep -qE '^  matmul\(.* launch_matmul <- main' "$TMP/g.out"

# Launch time: at least the fake's 20 us spin, at most what the program's own clock saw around the calls.
avg_us() { row "$1" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i + 1); exit } }'; }
ge "vecAdd: mean launch call >= the 20 us spin" "$(avg_us vecAdd)" 19.5
app_launch_ns=$(echo "$app" | tr ' ' '\n' | sed -n 's/^launch_ns=//p')
ap_launch_ns=$(awk -v a="$(avg_us vecAdd)" -v b="$(avg_us 'matmul\(float\*, float\*, float\*, int\)')" \
	-v c="$(avg_us 'graph@0x[0-9a-f]+')" -v n=$N -v m=$M -v k=$K 'BEGIN { printf "%.0f\n", (a * n + b * m + c * k) * 1000 }')
ge "the program's own launch time >= aperture's (the traps are outside aperture's clock)" \
	"$app_launch_ns" "$(awk -v x="$ap_launch_ns" 'BEGIN { printf "%.0f\n", x * 0.99 }')"
# Sync waits: J calls, within 10% of the program's own clock (J * S ms asked for).
sync_row=$(grep -E '^  cuCtxSynchronize ' "$TMP/g.out")
is "cuCtxSynchronize: $J calls" "$(echo "$sync_row" | awk '{ print $3 }')" $J
app_sync_ms=$(echo "$app" | tr ' ' '\n' | sed -n 's/^sync_ns=//p' | awk '{ printf "%.3f\n", $1 / 1e6 }')
is_within "sync wait total (ms) within 10% of the program's own" "$app_sync_ms" "$(echo "$sync_row" | awk '{ print $4 }')" \
	"$(awk -v x="$app_sync_ms" 'BEGIN { print x / 10 }')"
ge "sync wait >= J * S ms" "$(echo "$sync_row" | awk '{ print $4 }')" $((J * S))
ok "the waiting stack is wait_for_gpu <- main" grep -qE '^  cuCtxSynchronize .* wait_for_gpu <- main' "$TMP/g.out"

# Folded (weight: launches) and pprof.
is "folded: vecAdd launched from launch_vecadd" "$(stack_weight "$TMP/g.folded" ';main;launch_vecadd;vecAdd$')" $N
is "folded: matmul launched from launch_matmul" \
	"$(stack_weight "$TMP/g.folded" ';main;launch_matmul;matmul\(float\*,_float\*,_float\*,_int\)$')" $M
is "folded: no malformed line" "$(folded_bad_lines "$TMP/g.folded")" 0
if command -v go >/dev/null; then
	ok "pprof: go tool pprof reads it" sh -c "HOME='$TMP' GOCACHE='$TMP/gocache' go tool pprof -symbolize=none -sample_index=launches -top '$TMP/g.pb.gz' > '$TMP/g.top' 2>/dev/null"
	ok "pprof: launches of vecAdd" grep -qE "^ +$N .* vecAdd\$" "$TMP/g.top"
	HOME="$TMP" GOCACHE="$TMP/gocache" go tool pprof -raw "$TMP/g.pb.gz" >"$TMP/g.raw" 2>/dev/null
	ok "pprof: sample types launches, launch_time, syncs, sync_wait" \
		grep -qE '^launches/count(\[dflt\])? launch_time/nanoseconds syncs/count sync_wait/nanoseconds' "$TMP/g.raw"
else
	skip "pprof checks" "no go tool"
fi

# The raw event stream: one GpuKernel record per kernel launch.
"$APERTURE" events "$TMP/g.ev" --json >"$TMP/g.json"
is "events: vecAdd records" "$(grep -c '"kernel_name":"vecAdd"' "$TMP/g.json")" $N
is "events: matmul records, demangled" "$(grep -c '"kernel_name":"matmul(float\*, float\*, float\*, int)"' "$TMP/g.json")" $M
is "events: vecAdd's dims" "$(grep '"kernel_name":"vecAdd"' "$TMP/g.json" | grep -c '"grid_size":\[64,1,1\],"block_size":\[256,1,1\]')" $N
# grids (16,1,1) (32,2,1) (48,1,1) (64,2,1) in turn
is "events: matmul's four grids" "$(grep '"kernel_name":"matmul' "$TMP/g.json" | grep -o '"grid_size":\[[0-9,]*\]' | sort -u | tr -d '\n')" \
	'"grid_size":[16,1,1]"grid_size":[32,2,1]"grid_size":[48,1,1]"grid_size":[64,2,1]'
ge "events: every launch's duration_ns >= 19500" "$(sed -n 's/.*"duration_ns":\([0-9]*\).*/\1/p' "$TMP/g.json" | sort -n | head -1)" 19500
is "events: no graph or sync records" "$(grep -vc '"GpuKernel"' "$TMP/g.json")" 0

# The CUDA runtime: each launch counted once, at the runtime's call (its stack, its
# time), though the runtime's cuLaunchKernel inside it is probed too.
N2=1000; M2=300; K2=200; J2=5
ap_ok "--gpu -- gpurtapp (runtime)" rt record --gpu --gpu-events --events "$TMP/rt.ev" --top 10 \
	-o "$TMP/rt.folded" -- "$WL/gpurtapp" $N2 $M2 $K2 $J2 $S
rtapp=$(grep '^gpurtapp:' "$TMP/rt.out")
diag "$rtapp"
# rt_row NAME FILE: the report row of NAME in $TMP/FILE.out; rt_launches: its launches
rt_row() { grep -E "^  $1 +[0-9]+ " "$TMP/$2.out" | head -1; }
rt_launches() { rt_row "$1" "$2" | sed -E "s/^  $1 +[0-9]+ +([0-9]+) .*/\1/"; }
STENCIL='stencil\(float const\*, float\*, int\)'
rt_checks() {	# rt_checks FILE WHAT
	is "$2: saxpy (cudaLaunchKernel): $N2 launches" "$(rt_launches saxpy "$1")" $N2
	is "$2: stencil (cudaLaunchKernelExC): $M2 launches" "$(rt_launches "$STENCIL" "$1")" $M2
	is "$2: relu (__cudaLaunchKernel): $K2 launches" "$(rt_launches 'relu\(float\*\)' "$1")" $K2
	is "$2: the end line counts each launch once" \
		"$(sed -n 's/^aperture: gpu: \([0-9]*\) launches, 0 lost.*/\1/p' "$TMP/$1.err")" $((N2 + M2 + K2))
	ok "$2: dims and stacks" sh -c "grep -qE '^  saxpy .* \(128,1,1\) \(256,1,1\) +launch_saxpy <- main' '$TMP/$1.out' &&
		grep -qE '^  stencil.* \(32,32,1\) \(8,8,4\) +launch_stencil <- main' '$TMP/$1.out' &&
		grep -qE '^  relu.* \(8,1,1\) \(128,1,1\) +launch_relu <- main' '$TMP/$1.out'"
	is "$2: cudaDeviceSynchronize: $J2 calls, from wait_for_device" \
		"$(grep -E '^  cudaDeviceSynchronize .* wait_for_device <- main' "$TMP/$1.out" | awk '{ print $3 }')" $J2
	is "$2: its cuCtxSynchronize is not counted again" "$(grep -c '^  cuCtxSynchronize ' "$TMP/$1.out")" 0
}
rt_checks rt "runtime"
rt_sync_ms=$(echo "$rtapp" | tr ' ' '\n' | sed -n 's/^sync_ns=//p' | awk '{ printf "%.3f\n", $1 / 1e6 }')
is_within "runtime: sync wait total (ms) within 10% of the program's own" "$rt_sync_ms" \
	"$(grep -E '^  cudaDeviceSynchronize ' "$TMP/rt.out" | awk '{ print $4 }')" "$(awk -v x="$rt_sync_ms" 'BEGIN { print x / 10 }')"
"$APERTURE" events "$TMP/rt.ev" --json >"$TMP/rt.json"
is "runtime events: one GpuKernel record per launch" "$(grep -c '"GpuKernel"' "$TMP/rt.json")" $((N2 + M2 + K2))
is "runtime events: stencil's, named and with its dims" \
	"$(grep '"kernel_name":"stencil(float const\*, float\*, int)"' "$TMP/rt.json" | grep -c '"grid_size":\[32,32,1\],"block_size":\[8,8,4\]')" $M2
# A runtime whose calls into the driver the probes do not see (CUDA 12+'s reaches the driver through
# cuGetProcAddress): counted by the runtime's probes alone, named by the host stub's symbol.
FAKE_CUDART_DRIVER=unseen ap_ok "--gpu -- gpurtapp, driver unseen" rtu record --gpu --top 10 -- \
	"$WL/gpurtapp" $N2 $M2 $K2 $J2 $S
rt_checks rtu "driver unseen"

# wait_for_link PID: until aperture PID holds a BPF link (it attaches its probes then), at most 20 s
wait_for_link() {
	for _ in $(seq 200); do
		ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'anon_inode:bpf_link' && return 0
		sleep 0.1
	done
	return 1
}

# -p on a process that loads the library after aperture attached (it waits for $TMP/late.go).
bg env GPUAPP_GO="$TMP/late.go" "$WL/gpuapp" 500 0 0 0 1 >"$TMP/late.app"
"$APERTURE" record --gpu -p "$BG_PID" -d 4 --top 10 >"$TMP/late.out" 2>"$TMP/late.err" &
late_ap=$!
wait_for_link $late_ap || diag "aperture -p $BG_PID: no BPF link after 20 s"
touch "$TMP/late.go"
wait $late_ap
row2() { grep -E "^  $1 +[0-9]+ " "$TMP/late.out" | awk '{ print $3 }'; }
is "late load: all 500 vecAdd launches seen" "$(row2 vecAdd)" 500

# The daemon, whole machine: a process started after it, which dlopens the driver, is probed on
# the daemon's tick, and those probes are pinned with the rest (they outlive the daemon).
# Its own name: the machine's counts hold other processes' too.
LDIR=/sys/fs/bpf/aperture-test-gpu-late-$$
unpin_at_exit "$LDIR"
"$APERTURE" run --pin "$LDIR" --gpu 2>"$TMP/ldaemon.err" &
ldaemon=$!
_bg_pids+=("$ldaemon")
for _ in $(seq 100); do [ -e "$LDIR/gpu_active" ] && break; sleep 0.1; done
links_before=$(ls "$LDIR" | grep -c '^gpu_link_')
ln -s "$WL/gpuapp" "$TMP/gpulate"
"$TMP/gpulate" 400 0 0 0 1 0 1500 >"$TMP/ldaemon.app"	# launches 1.8 s after it starts
run_ap ldump dump --pin "$LDIR" gpu
is "daemon: a process started after it: its 400 launches" "$(stack_weight "$TMP/ldump.out" '^gpulate')" 400
ge "daemon: the new probes are pinned" "$(ls "$LDIR" | grep -c '^gpu_link_')" $((links_before + 28))
kill -TERM "$ldaemon"; wait "$ldaemon" 2>/dev/null
"$TMP/gpulate" 100 0 0 0 1 >/dev/null	# the library is probed already: no wait needed
run_ap ldump2 dump --pin "$LDIR" gpu
is "daemon stopped: the pinned probes go on counting (400 + 100)" "$(stack_weight "$TMP/ldump2.out" '^gpulate')" 500
run_ap lunpin run --unpin --pin "$LDIR"

# Pinned: run --pin --gpu on a process that already has the driver loaded.
DIR=/sys/fs/bpf/aperture-test-gpu-$$
unpin_at_exit "$DIR"
bg "$WL/gpuapp" 300 0 0 0 1 0 4000 >"$TMP/pin.app"	# launches 4.3 s after start
app_pid=$BG_PID
sleep 0.6	# loaded and in cuInit's wait
"$APERTURE" run --pin "$DIR" --gpu -p "$app_pid" 2>"$TMP/daemon.err" &
daemon=$!
_bg_pids+=("$daemon")
for _ in $(seq 50); do [ -e "$DIR/gpu_active" ] && break; sleep 0.1; done
ok "run --pin --gpu pins gpu_*" test -e "$DIR/gpu_active"
wait "$app_pid"
run_ap pdump dump --pin "$DIR" gpu
is "pinned: dump counts the 300 launches" "$(folded_total "$TMP/pdump.out")" 300
kill -TERM "$daemon"; wait "$daemon" 2>/dev/null
run_ap unpin run --unpin --pin "$DIR"
is "unpin exits 0" "$AP_RC" 0
done_testing
