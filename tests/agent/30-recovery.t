#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run when the OAP is away or refuses: data spooled while the OAP is
# down and sent in order when it is back (nothing lost), RESOURCE_EXHAUSTED
# with a tiny spool (oldest dropped, and said so), a bad token (one clear
# error line, non-zero exit), no token on the command line.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_agent

start_burn 60
sleep 0.2
agent_cmd recovery-test

# --- the OAP goes down for 4 s in the middle of a 10 s task ---
REC=$TMP/outage.jsonl
export APERTURE_OAP_TOKEN=tok-outage
new_oap "$REC" --token tok-outage --min-duration 0 --task ON_CPU:10:recovery-test
burn_t0=$(proc_cpu_ns "$BURN_PID") wall_t0=$(date +%s.%N)
"${AGENT_CMD[@]}" --oap 127.0.0.1:$PORT --reconnect-max 1 -d 16 -v 2> "$TMP/outage.log" &
agent=$!
for i in $(seq 100); do grep -q collectProfilingData "$REC" && break; sleep 0.1; done
stop_oap
sleep 4
start_oap "$PORT" "$REC" --token tok-outage
wait $agent
is "agent exits 0 after an outage" "$?" 0
# the task's 10 s at 99 Hz of the CPU time the burner had over the agent's run (less when busy)
want=$(samples_expected 99 10 $(($(proc_cpu_ns "$BURN_PID") - burn_t0)) \
	"$(awk -v a="$wall_t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')")
ok "outage noticed, data kept" grep -q 'profiling data is kept in the spool' "$TMP/outage.log"
ok "recovery noticed" grep -q 'answers again' "$TMP/outage.log"
ok "nothing dropped" bash -c "! grep -q dropped '$TMP/outage.log'"
T=$TMP/outage.sum
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$T"
task=$(val "$T" task)
is "every sample arrived" "$(val "$T" total)" "$(logged "$task" "$TMP/outage.log")"
ge "samples of 10 s (of $want for the burner's CPU time)" "$(val "$T" total)" $((want * 7 / 10))
is "spooled streams sent in order" "$(val "$T" in_order)" 1
is "no duplicate symbol lists in a stream" "$(val "$T" dup_symbol_lists)" 0
is_within "task ran its 10 s through the outage (ms)" 10000 "$(val "$T" span_ms)" 1500
is "token from APERTURE_OAP_TOKEN on every call" "$($PY "$OAPDIR/analyze.py" auth "$REC" | cut -d' ' -f2)" tok-outage
unset APERTURE_OAP_TOKEN

# --- RESOURCE_EXHAUSTED for 4 streams, with a spool that holds about one ---
REC=$TMP/busy.jsonl
new_oap "$REC" --min-duration 0 --task ON_CPU:6:recovery-test --fail-first 4 --fail-code RESOURCE_EXHAUSTED
"${AGENT_CMD[@]}" --oap 127.0.0.1:$PORT --spool-size 600 -d 11 -v 2> "$TMP/busy.log"
is "agent exits 0 after RESOURCE_EXHAUSTED" "$?" 0
ok "RESOURCE_EXHAUSTED reported" grep -q 'RESOURCE_EXHAUSTED' "$TMP/busy.log"
ok "oldest data dropped when the spool is full" grep -q 'spool full (600 bytes): dropped the oldest data' "$TMP/busy.log"
ok "what was dropped is reported at exit" grep -q 'were dropped: the spool was full' "$TMP/busy.log"
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$TMP/busy.sum"
ge "data flows once the OAP accepts again" "$(val "$TMP/busy.sum" streams)" 2
ok "less arrived than was profiled" test "$(val "$TMP/busy.sum" total)" -lt "$(logged "$(val "$TMP/busy.sum" task)" "$TMP/busy.log")"

# --- a bad token ---
new_oap "$TMP/auth.jsonl" --token right-token
start=$(date +%s)
APERTURE_OAP_TOKEN=wrong-token "${AGENT_CMD[@]}" --oap 127.0.0.1:$PORT -d 20 2> "$TMP/auth.log"
rc=$?
is "bad token: exit 1" "$rc" 1
is "bad token: one line" "$(wc -l < "$TMP/auth.log")" 1
ok "bad token: says PERMISSION_DENIED and what to check" grep -q "refused .*PERMISSION_DENIED: bad authentication token (check the token" "$TMP/auth.log"
ok "bad token: gives up at once" test $(( $(date +%s) - start )) -le 5
"$APERTURE" run --oap 127.0.0.1:$PORT --pid $$ --token secret 2> "$TMP/argv.log"
is "--token on the command line refused" "$?" 2
ok "and told where to put it" grep -q 'token-file' "$TMP/argv.log"
done_testing
