#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run --oap --pin: the agent serves its tasks with pinned profilers
# (same per-interval deltas to the OAP), the kernel side is readable with cat
# while a task runs, idle without one, and survives the agent for --unpin.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_agent

DIR=/sys/fs/bpf/aperture_agent_test_$$
unpin_at_exit "$DIR"
REC=$TMP/record.jsonl
new_oap "$REC" --min-duration 0 --task ON_CPU:5:pinned-test
start_burn 40
sleep 0.3
agent_cmd pinned-test
"${AGENT_CMD[@]}" --oap 127.0.0.1:$PORT --pin "$DIR" -d 10 -v 2> "$TMP/agent.log" &
AGENT=$!
_bg_pids+=("$AGENT")
for i in $(seq 100); do [ -e "$DIR/offcpu_active" ] && break; sleep 0.1; done
ok "pins are there while the agent runs" test -e "$DIR/oncpu_active" -a -e "$DIR/control" -a -e "$DIR/offcpu_active"
# The kernel's totals: the pinned iterator where the kernel loads it, else aperture dump.
folded() { APERTURE="$APERTURE" "$TOP/tools/aperture-ctl" -d "$DIR" dump oncpu; }
if have_feature iter_map_elem; then
	ok "the iterator is pinned" test -e "$DIR/oncpu_folded"
else
	ok "no iterator here ($(feature_why iter_map_elem)), and the agent said so" grep -q 'pinned without oncpu_folded' "$TMP/agent.log"
fi
sleep 4
during=$(folded | awk -F';' '$1 == "oap_burn" { n = split($NF, a, " "); t += a[n] } END { print t + 0 }')
ge "the pinned totals show the task's process while it runs" "$during" 100
wait "$AGENT"
is "agent exits 0" "$?" 0
T=$TMP/oncpu
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$T"
task=$(val "$T" task)
is "ON_CPU: deltas add up to the agent's total" "$(val "$T" total)" "$(logged "$task" "$TMP/agent.log")"
ge "ON_CPU: about 99 Hz x 5 s of one busy thread" "$(val "$T" total)" 330
is "ON_CPU: no duplicate symbol lists in a stream" "$(val "$T" dup_symbol_lists)" 0
# The task is over: the on-CPU profiler is disabled in the control map, not unloaded.
t1=$(folded | awk '{ t += $NF } END { print t + 0 }'); sleep 1
t2=$(folded | awk '{ t += $NF } END { print t + 0 }')
is "no task: nothing counted" "$((t2 - t1))" 0
ok "pins outlive the agent" test -e "$DIR/oncpu_link_0"
enabled=$(bpftool -j map lookup pinned "$DIR/control" key 0 0 0 0 | grep -o '"enabled":[0-9]*' | cut -d: -f2)
is "control.enabled: both profilers idle" "$enabled" 0
run_ap unpin run --unpin --pin "$DIR"
is "--unpin exits 0" "$AP_RC" 0
ok "pin directory gone" test ! -e "$DIR"
done_testing
