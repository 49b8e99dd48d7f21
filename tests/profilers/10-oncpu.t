#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On-CPU profiling against cpuburn, whose leaf shares are known: 50/30/20 %.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn

# check_shares NAME FOLDED: burn_50/30/20 leaf shares (among the burn leaves)
# within 5 points of 50/30/20, and the burn leaves most of the samples
check_shares() {
	local name=$1 f=$2 w50 w30 w20 burn total
	w50=$(leaf_weight "$f" burn_50)
	w30=$(leaf_weight "$f" burn_30)
	w20=$(leaf_weight "$f" burn_20)
	burn=$((w50 + w30 + w20))
	total=$(folded_total "$f")
	ge "$name: burn_* leaves are most samples (%)" "$(pct "$burn" "$total")" 90
	is_within "$name: burn_50 share" 50 "$(pct "$w50" "$burn")" 5
	is_within "$name: burn_30 share" 30 "$(pct "$w30" "$burn")" 5
	is_within "$name: burn_20 share" 20 "$(pct "$w20" "$burn")" 5
}

# 1. -- CMD: the child alone, for its whole life.
ap_ok "-- cpuburn" cmd record -F 499 -d 30 -o "$TMP/cmd.folded" -- "$WL/cpuburn" 4
check_shares "-- cpuburn" "$TMP/cmd.folded"
total=$(folded_total "$TMP/cmd.folded")
# 499 samples per CPU second the workload used (it prints cpu_ns= at exit,
# which lands in aperture's stdout): 4 s on an idle machine, less when busy.
want=$(cpu_ns_samples "$TMP/cmd.out" 499)
ge "cpuburn used CPU" "$want" 500
is_within "-F 499: 499 samples per CPU second" "$want" "$total" "$((want / 10))"
is "-- CMD: only the child's comm" "$(folded_comms "$TMP/cmd.folded" | grep -v '^aperture$' | tr '\n' ' ')" "cpuburn "
ok "-- CMD ends when the child exits (not at -d 30)" awk -v s="$AP_SECS" 'BEGIN { exit !(s < 15) }'
summary=$(grep -E '^aperture: oncpu: [0-9]+ samples, [0-9]+ lost' "$TMP/cmd.err" | head -1)
ok "summary line on stderr" test -n "$summary"
[ -n "$summary" ] || show_err cmd
n=$(sed -E 's/^aperture: oncpu: ([0-9]+) samples.*/\1/' <<<"$summary")
is_within "summary sample count matches the folded total" "$total" "${n:-0}" "$((total / 50 + 1))"
top50=$(grep -E '^ +[0-9.]+% +[0-9]+ +burn_50$' "$TMP/cmd.out" | awk '{ sub(/%/, "", $1); print $1 }')
is_within "top list: burn_50 at ~50%" 50 "${top50:-}" 7
is "top list: burn_50 first" "$(grep -E '^ +[0-9.]+% +[0-9]+ +' "$TMP/cmd.out" | head -1 | awk '{ print $3 }')" burn_50

# 2. Default frequency is 99 Hz.
ap_ok "default -F" deffreq record -d 30 -o "$TMP/def.folded" -- "$WL/cpuburn" 3
want=$(cpu_ns_samples "$TMP/deffreq.out" 99)
is_within "default -F: 99 samples per CPU second" "$want" "$(folded_total "$TMP/def.folded")" "$((want / 10 + 5))"

# 3. -p PID: only that process, while another burner runs.  The burners outlive both runs
# below (killed at exit), with room for a slow start (the sanitizer build, a loaded machine).
cp "$WL/cpuburn" "$TMP/otherburn"
bg "$WL/cpuburn" 30 >/dev/null
burn_pid=$BG_PID
bg "$TMP/otherburn" 30 >/dev/null
other_pid=$BG_PID
sleep 0.3
ap_ok "-p PID" pid record -F 499 -p "$burn_pid" -d 4 -o "$TMP/pid.folded"
is "-p: only the target's comm" "$(folded_comms "$TMP/pid.folded" | tr '\n' ' ')" "cpuburn "
check_shares "-p" "$TMP/pid.folded"
ok "-d 4 ends in time" awk -v s="$AP_SECS" 'BEGIN { exit !(s >= 3.9 && s < 12) }'

# 4. -p PID,PID: both.
ap_ok "-p PID,PID" pids record -F 199 -p "$burn_pid,$other_pid" -d 2 -o "$TMP/pids.folded"
is "-p A,B: both comms" "$(folded_comms "$TMP/pids.folded" | tr '\n' ' ')" "cpuburn otherburn "

# 5. The programs built for older kernels (5.10-5.16, bpf/lib/kernel.bpf.h), forced here: the same
# shares and rate, user stacks by the kernel's frame-pointer walk.
APERTURE_DISABLE_FEATURES=bpf_loop ap_ok "older kernels' build" compat \
	record -v -F 499 -d 30 -o "$TMP/compat.folded" -- "$WL/cpuburn" 3
ok "older kernels' build: said so (-v)" grep -q '^aperture: oncpu: the programs built for older kernels' "$TMP/compat.err"
check_shares "older kernels' build" "$TMP/compat.folded"
want=$(cpu_ns_samples "$TMP/compat.out" 499)
is_within "older kernels' build: 499 samples per CPU second" "$want" "$(folded_total "$TMP/compat.folded")" "$((want / 10))"
is "older kernels' build: whole stacks to main" \
	"$(awk '$NF > 0 && $1 ~ /burn_[0-9]+$/ && $1 !~ /;main;burn_thread;burn_[0-9]+$/ { bad += $NF } END { print bad + 0 }' "$TMP/compat.folded")" 0

done_testing
