#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On-CPU filters: --cgroup, system-wide, --include-idle, -U, -K.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn

make_cgroup
cp "$WL/cpuburn" "$TMP/otherburn"
bg "$WL/cpuburn" 15 >/dev/null
in_pid=$BG_PID
echo "$in_pid" >"$CG/cgroup.procs"
bg "$TMP/otherburn" 15 >/dev/null
other_pid=$BG_PID
sleep 0.3

# 1. --cgroup: only the process inside it.
t0=$(proc_cpu_ns "$in_pid")
ap_ok "--cgroup" cg record -F 199 --cgroup "$CG" -d 3 -o "$TMP/cg.folded"
want=$(samples_expected 199 3 $(($(proc_cpu_ns "$in_pid") - t0)) "$AP_SECS")
is "--cgroup: only the cgroup's process" "$(folded_comms "$TMP/cg.folded" | tr '\n' ' ')" "cpuburn "
# burn_50 is half of cpuburn's CPU time
ge "--cgroup: samples of it (burn_50, of $want for its CPU time)" "$(leaf_weight "$TMP/cg.folded" burn_50)" \
	$((want * 3 / 10))

# 2. System-wide: both burners; no idle task by default.
ap_ok "system-wide" all record -F 199 -d 2 -o "$TMP/all.folded"
comms=$(folded_comms "$TMP/all.folded")
ok "system-wide: cpuburn seen" grep -qx cpuburn <<<"$comms"
ok "system-wide: otherburn seen" grep -qx otherburn <<<"$comms"
is "system-wide: no idle task without --include-idle" "$(grep -c '^swapper' <<<"$comms")" 0

kill -9 "$other_pid"	# from here on, leave a CPU to each workload

# 3. -U: user frames only.
t0=$(proc_cpu_ns "$in_pid")
ap_ok "-U" user record -F 199 -U -p "$in_pid" -d 2 -o "$TMP/user.folded"
want=$(samples_expected 199 2 $(($(proc_cpu_ns "$in_pid") - t0)) "$AP_SECS")
is "-U: no kernel frames" "$(count_frames "$TMP/user.folded" '_\[k\]$')" 0
ge "-U: burn_50 seen (of $want for its CPU time)" "$(leaf_weight "$TMP/user.folded" burn_50)" $((want * 3 / 10))

# 4. -K: kernel frames only, on a process that spends its time in the kernel.
bg dd if=/dev/zero of=/dev/null bs=1M count=100000000 2>/dev/null
dd_pid=$BG_PID
sleep 0.3
t0=$(proc_cpu_ns "$dd_pid")
ap_ok "-K" kern record -F 199 -K -p "$dd_pid" -d 2 -o "$TMP/kern.folded"
want=$(samples_expected 199 2 $(($(proc_cpu_ns "$dd_pid") - t0)) "$AP_SECS")
is "-K: only kernel frames" "$(count_user_frames "$TMP/kern.folded")" 0
# dd spends nearly all of its CPU time in the kernel
ge "-K: dd's kernel stacks seen (weight, of $want for its CPU time)" \
	"$(stack_weight "$TMP/kern.folded" '^dd;.*_\[k\]')" $((want * 6 / 10))
ap_ok "-U on dd" kuser record -F 199 -U -p "$dd_pid" -d 1 -o "$TMP/kuser.folded"
is "-U on dd: no kernel frames" "$(count_frames "$TMP/kuser.folded" '_\[k\]$')" 0

# 5. --include-idle: with a CPU left idle the idle task shows up.
kill -9 "$dd_pid" 2>/dev/null
for p in "${_bg_pids[@]}"; do [ "$p" = "$in_pid" ] || kill -9 "$p" 2>/dev/null; done
# On these VMs an idle CPU that has stopped its tick takes no cpu-clock
# samples at all (perf record -e cpu-clock -a shows the same); CPU 0 keeps
# its tick.  Keep the burner on CPU 1 so that the idle time is on CPU 0.
taskset -pc 1 "$in_pid" >/dev/null 2>&1
sleep 0.3
idle0=$(idle_ticks)
ap_ok "--include-idle" idle record -F 199 --include-idle -d 2 -o "$TMP/idle.folded"
idle_s=$(awk -v a="$idle0" -v b="$(idle_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", (b - a) / hz }')
if awk -v s="$idle_s" 'BEGIN { exit !(s >= 0.5) }'; then
	# ~199 samples per idle CPU second; the run is a little longer than -d.
	ge "--include-idle: idle task seen ($idle_s s idle)" "$(stack_weight "$TMP/idle.folded" '^swapper')" \
		"$(awk -v s="$idle_s" 'BEGIN { printf "%.0f\n", s * 199 / 3 }')"
else
	skip "--include-idle: idle task seen" "the machine was busy (${idle_s} s idle)"
fi

done_testing
