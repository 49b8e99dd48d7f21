#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run against the fake OAP: registration, task discovery, ON_CPU and
# OFF_CPU tasks honoured for their duration, per-interval deltas, message
# shape (kernel then user stack, leaf first, merged symbol lists), the hot
# functions' shares, and the authentication header on every call.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
[ -x "$APERTURE" ] && [ -x "$WL/oap_burn" ] || skip_all "build aperture and tests first"

PORT=$(free_port)
REC=$TMP/record.jsonl
TOKEN=tok-$$-secret
echo "$TOKEN" > "$TMP/token"
# The tasks are on the service (the host name by default), created once the
# OAP stored oap_burn.  ghost-svc: a process of this agent that the OAP still
# lists but the agent no longer knows (it exited), with a task older than the
# real ones.  --min-duration 0: 6 s tasks (the OAP wants >= 60 s), and the
# last one is malformed (FixedTriggerDuration 0).
SVC=$(hostname)
start_oap "$PORT" "$REC" --token "$TOKEN" --min-duration 0 --ghost ghost-svc --task ON_CPU:1000:ghost-svc \
	--task "ON_CPU:6:$SVC" --task "OFF_CPU:6:$SVC" --task "NETWORK:6:$SVC" --task "ON_CPU:0:$SVC" ||
	{ plan 1; fail "fake OAP starts"; done_testing; }
BURN=$(private_burn)
bg "$BURN" 40
WLPID=$BG_PID
sleep 0.3
"$APERTURE" run --oap 127.0.0.1:$PORT --token-file "$TMP/token" --exe-pattern "$BURN" \
	--heartbeat-interval 1 --task-interval 1 --flush-interval 1 -d 11 -v 2> "$TMP/agent.log"
rc=$?
is "agent exits 0" "$rc" 0
[ "$rc" = 0 ] || diag "$(tail -5 "$TMP/agent.log")"

R=$TMP/registration
$PY "$OAPDIR/analyze.py" registration "$REC" oap_burn > "$R"
is "process reported" "$(val "$R" found)" 1
is "layer defaults to GENERAL (its service dashboard has the eBPF profiling tab)" "$(val "$R" layer)" GENERAL
is "service defaults to the host name" "$(val "$R" service)" "$(hostname)"
is "instance defaults to the process name" "$(val "$R" instance)" oap_burn
is "pid" "$(val "$R" pid)" "$WLPID"
is "property pid" "$(val "$R" prop_pid)" "$WLPID"
is "property command_line" "$(val "$R" command_line)" "${BURN}_40"
ok "property host_ip" test "$(val "$R" host_ip)" != "-"
is "property support_ebpf_profiling" "$(val "$R" support_ebpf_profiling)" true
is "agent id is a UUID" "$(val "$R" agent_uuid)" 1
is "same id as ebpfAgentID and roverInstanceId" "$(val "$R" agent_id_consistent)" 1
ge "heartbeats" "$(val "$R" keepalives)" 5
is "keepAlive carries layer, labels and support_ebpf_profiling as reported" "$(val "$R" keepalive_ok)" 1
ok "no layer refused" bash -c "! grep -q layer_refused '$REC'"
ge "full re-report on the 10th heartbeat" "$(val "$R" reports)" 2

Q=$TMP/queries
$PY "$OAPDIR/analyze.py" queries "$REC" > "$Q"
is "latestUpdateTime starts at 0" "$(val "$Q" first)" 0
is "never advanced over a task for an unknown process" "$(val "$Q" ghost_used)" 0
is "advanced to the newest known well-formed task" "$(val "$Q" last)" "$(val "$Q" max_real)"
is "latestUpdateTime never goes back" "$(val "$Q" monotonic)" 1
ok "task with FixedTriggerDuration 0 refused as malformed" grep -q 'malformed profiling task ignored' "$TMP/agent.log"
ok "NETWORK task acknowledged and ignored" grep -q 'task [0-9a-f]*: NETWORK profiling is not supported, ignored' "$TMP/agent.log"
is "authentication header on every call" "$($PY "$OAPDIR/analyze.py" auth "$REC" | cut -d' ' -f2)" "$TOKEN"

T=$TMP/oncpu
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$T"
task=$(val "$T" task)
ge "ON_CPU: data in several streams (one per flush)" "$(val "$T" streams)" 4
is "ON_CPU: deltas add up to the agent's total" "$(val "$T" total)" "$(logged "$task" "$TMP/agent.log")"
ge "ON_CPU: about 99 Hz x 6 s of one busy thread" "$(val "$T" total)" 415
# At most 99 Hz of one busy thread over the span the data covers (+10%: timer slack, the sleeper thread).
ok "ON_CPU: not more than 99 Hz allows over its span ($(val "$T" total) in $(val "$T" span_ms) ms)" \
	awk -v n="$(val "$T" total)" -v ms="$(val "$T" span_ms)" 'BEGIN { exit !(n + 0 <= 99 * ms / 1000 * 1.1) }'
is "ON_CPU: task metadata once per stream, first" "$(val "$T" meta_bad)" 0
is "ON_CPU: no duplicate symbol lists in a stream" "$(val "$T" dup_symbol_lists)" 0
is "ON_CPU: no zero-delta messages" "$(val "$T" zero_messages)" 0
is "ON_CPU: kernel stack before user stack" "$(val "$T" stack_order_bad)" 0
is "ON_CPU: symbols leaf first" "$(val "$T" leaf_order_bad)" 0
is_within "ON_CPU: oap_hot_a share" 70 "$(val "$T" share_oap_hot_a)" 10
is_within "ON_CPU: oap_hot_b share" 30 "$(val "$T" share_oap_hot_b)" 10
is_within "ON_CPU: ran for FixedTriggerDuration (ms)" 6000 "$(val "$T" span_ms)" 1200
# The agent asks for tasks every second (--task-interval 1): it starts within that of TaskStartTime, never before.
is_within "ON_CPU: started when fetched (0 to 2.5 s after TaskStartTime, ms)" 1250 "$(val "$T" start_delay_ms)" 1250

T=$TMP/offcpu
$PY "$OAPDIR/analyze.py" task "$REC" OFF_CPU > "$T"
task=$(val "$T" task)
ge "OFF_CPU: data in several streams" "$(val "$T" streams)" 4
is "OFF_CPU: switch deltas add up to the agent's total" "$(val "$T" total)" "$(logged "$task" "$TMP/agent.log")"
ge "OFF_CPU: switches of a 2 ms sleeper over 6 s" "$(val "$T" count_oap_nap)" 1000
is_within "OFF_CPU: blocked time of the sleeper (s)" 6 "$(awk -v d="$(val "$T" duration_ns_oap_nap)" 'BEGIN { print d / 1e9 }')" 1.5
# Rover's meaning: the busy thread's preemptions count too (tests/agent/75-offcpu-meaning.t),
# so how many there are depends on the machine's load; but every switch is
# either the sleeper's nap or the busy thread preempted in its loop.
ge "OFF_CPU: every switch is the nap or the busy loop preempted" "$(val "$T" share_workload)" 95
is "OFF_CPU: symbols leaf first" "$(val "$T" leaf_order_bad)" 0
is "OFF_CPU: no duplicate symbol lists in a stream" "$(val "$T" dup_symbol_lists)" 0
is_within "OFF_CPU: ran for FixedTriggerDuration (ms)" 6000 "$(val "$T" span_ms)" 1200
done_testing
