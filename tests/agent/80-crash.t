#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Crash-exact deltas: the agent (--pin, with its ledger in --state-dir) is
# killed with SIGKILL again and again during one ON_CPU task: once in each
# window of the flush protocol (after the read, after the batch file, after
# the ledger commit, after emptying the maps, after the OAP acknowledged but
# before the batch file went), then at random moments.  Each time a new agent
# takes over.  What the fake OAP stores for the task (one record per id, the
# last write winning, as the real OAP's storage) must equal what the kernel
# counted for it: the pinned totals map, which every BPF event adds to beside
# the drained generations and which no agent ever empties.  No upload time may
# carry two different contents (an interval sent twice).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_agent

DIR=/sys/fs/bpf/aperture_crash_test_$$
STATE=$TMP/crash-state
unpin_at_exit "$DIR"
REC=$TMP/record.jsonl
LOG=$TMP/agent.log
TASK_S=40
new_oap "$REC" --min-duration 0 --task ON_CPU:$TASK_S:crash-test
start_burn 120
agent_cmd crash-test

# start_agent [ENV...]: one agent, appending to $LOG; sets AGENT.
start_agent() {
	env "$@" "${AGENT_CMD[@]}" --oap 127.0.0.1:$PORT --pin "$DIR" --state-dir "$STATE" -v 2>> "$LOG" &
	AGENT=$!
	_bg_pids+=("$AGENT")
}

start_agent
for i in $(seq 300); do grep -q 'started for' "$LOG" && break; sleep 0.1; done
ok "the task started" grep -q 'started for' "$LOG"
sleep 1.5
kill -9 "$AGENT"
wait "$AGENT" 2>/dev/null

crashes=0
for point in read saved committed cleared sent; do
	start_agent APERTURE_TEST_CRASH=$point:2
	{ wait "$AGENT"; } 2>/dev/null
	rc=$?
	is "killed (SIGKILL) at '$point'" "$rc" 137
	grep -q "test: crashing at $point" "$LOG" && crashes=$((crashes + 1))
done
is "each window of the protocol was hit" "$crashes" 5
for i in 1 2 3 4; do
	start_agent
	sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.3 + 2.5 * rand() }')"
	kill -9 "$AGENT"
	{ wait "$AGENT"; } 2>/dev/null
done
ok "the task was still running through the crashes" test "$(grep -c 'finished:' "$LOG")" = 0
ge "restarted agents restored the task" "$(grep -c 'restored from the ledger: running' "$LOG")" 9
is "no agent found the ledger locked (one at a time)" "$(grep -c 'in use by another' "$LOG")" 0
ge "unacknowledged uploads were sent again" "$(grep -c 'sending them again' "$LOG")" 1

start_agent
for i in $(seq $((TASK_S * 10 + 300))); do grep -q 'finished:' "$LOG" && break; sleep 0.1; done
ok "the last agent finished the task" grep -q 'finished:' "$LOG"
sleep 1
kill "$AGENT"
wait "$AGENT"
is "the last agent exits 0" "$?" 0

kernel=$("$APERTURE" dump --pin "$DIR" oncpu | awk '{ t += $NF } END { print t + 0 }')
S=$TMP/stored
$PY "$OAPDIR/analyze.py" stored "$REC" ON_CPU > "$S"
diag "kernel counted $kernel; the OAP stores $(val "$S" stored_total) in $(val "$S" records) records" \
	"from $(val "$S" uploads) uploads ($(val "$S" sent_total) sent, $(val "$S" resent_records) records resent)"
ge "the task counted samples through the crashes" "$kernel" 1000
is "what the OAP stores equals what the kernel counted" "$(val "$S" stored_total)" "$kernel"
is "no upload time with two contents (no interval twice)" "$(val "$S" upload_conflicts)" 0
is "a resent record is the same record" "$(val "$S" conflicts)" 0
ge "records were resent (acknowledged, then the agent died)" "$(val "$S" resent_records)" 1
is "the ledger holds no batch once all is acknowledged" "$(ls "$STATE"/agent-*/ | grep -c '^batch-')" 0
done_testing
