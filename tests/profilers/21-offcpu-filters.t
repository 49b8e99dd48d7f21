#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Off-CPU filters: --min-block-us, --max-block-us, --state.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload sleeper cpuburn

SLEEP_RE=';sleep_50ms(;|$)'
# sleeper_run NAME ARGS...: off-CPU profile of a 2 s sleeper; sets SLEPT, GOT, TOTAL
sleeper_run() {
	local name=$1
	shift
	ap_ok "$name" "$name" record --offcpu -d 30 "$@" -o "$TMP/$name.folded" -- "$WL/sleeper" 2 "$TMP/$name.result"
	SLEPT=$(kv "$TMP/$name.result" slept_ns)
	SLEPT=${SLEPT:-0}
	GOT=$(stack_weight "$TMP/$name.folded" "$SLEEP_RE")
	TOTAL=$(folded_total "$TMP/$name.folded")
}

# The main thread blocks ~2 s in pthread_join: it stays in every profile below
# except --state uninterruptible, which shows that the profiler did run.
sleeper_run min --min-block-us 60000
ok "--min-block-us 60000 drops the 50 ms sleeps ($GOT of $SLEPT ns)" awk -v g="$GOT" -v s="$SLEPT" 'BEGIN { exit !(s > 0 && g < s / 20) }'
ge "--min-block-us 60000 keeps the 2 s join" "$TOTAL" 1500000000

sleeper_run min_low --min-block-us 40000
is_within "--min-block-us 40000 keeps them" "$SLEPT" "$GOT" "$((SLEPT / 10))"

sleeper_run max --max-block-us 1000
ok "--max-block-us 1000 drops the 50 ms sleeps ($GOT of $SLEPT ns)" awk -v g="$GOT" -v s="$SLEPT" 'BEGIN { exit !(s > 0 && g < s / 20) }'
ok "--max-block-us 1000 drops the 2 s join too ($TOTAL ns in all)" awk -v t="$TOTAL" 'BEGIN { exit !(t < 1000000000) }'

sleeper_run unint --state uninterruptible
ok "--state uninterruptible drops nanosleep ($GOT of $SLEPT ns)" awk -v g="$GOT" -v s="$SLEPT" 'BEGIN { exit !(s > 0 && g < s / 20) }'

sleeper_run intr --state interruptible
is_within "--state interruptible keeps nanosleep" "$SLEPT" "$GOT" "$((SLEPT / 10))"

# Preemption: 3 burner threads on 2 CPUs are preempted, never blocked.  They outlive both runs
# below (killed at exit), with room for a slow start (the sanitizer build, a loaded machine).
bg "$WL/cpuburn" 30 3 >/dev/null
burn_pid=$BG_PID
sleep 0.3
burn_re=';burn_(50|30|20)(;|$)'
ap_ok "--state all" all record --offcpu --state all -p "$burn_pid" -d 2 -o "$TMP/all.folded"
ge "--state all: preempted burn_* time (ns)" "$(stack_weight "$TMP/all.folded" "$burn_re")" 300000000
ap_ok "--state blocked (default)" blocked record --offcpu -p "$burn_pid" -d 2 -o "$TMP/blocked.folded"
is "default state: preemption not counted" "$(stack_weight "$TMP/blocked.folded" "$burn_re")" 0

done_testing
