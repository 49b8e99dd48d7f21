#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A hostile OAP (or anyone on a plaintext path) cannot grow the agent: the
# fake OAP answers queryTasks with one command whose ProcessId is ~16 MiB of
# short ids, then with 1e6 distinct well-formed tasks starting 100 years
# ahead, 40000 a reply (14 MB).  The agent keeps at most SW_MAX_COMMANDS
# commands a reply and SW_MAX_PROCESS_IDS ids a task, refuses tasks starting
# more than 7 days ahead, says each refusal once and counts them; its peak
# RSS stays bounded; and the real task created after the flood is served.
# Then 5000 tasks starting a day ahead (pending, well-formed): it holds 1024.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
[ -x "$APERTURE" ] && [ -x "$WL/oap_burn" ] || skip_all "build aperture and tests first"

FLOOD=1000000
PORT=$(free_port)
REC=$TMP/record.jsonl
SVC=$(hostname)
start_oap "$PORT" "$REC" --min-duration 0 --flood-ids --flood-tasks $FLOOD --tasks-after-flood \
	--task "ON_CPU:6:$SVC" || { plan 1; fail "fake OAP starts"; done_testing; }
BURN=$(private_burn)
bg "$BURN" 120
sleep 0.3
"$APERTURE" run --oap 127.0.0.1:$PORT --exe-pattern "$BURN" --heartbeat-interval 1 --task-interval 1 \
	--flush-interval 1 -d 240 -v 2> "$TMP/agent.log" &
agent=$!
# The agent's peak RSS (VmHWM), read until it exits: stopped (SIGTERM) 2 s after the
# real task finished, the flood taking 30-60 s of a loaded machine.
hwm=0 stop_at=
for ((i = 0; i < 480; i++)); do
	kill -0 "$agent" 2>/dev/null || break
	h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$agent/status" 2>/dev/null)
	[ -n "$h" ] && hwm=$h
	if [ -z "$stop_at" ] && grep -q ') finished: ' "$TMP/agent.log"; then
		stop_at=$((i + 4))
	fi
	[ -n "$stop_at" ] && [ "$i" -ge "$stop_at" ] && kill -TERM "$agent"
	sleep 0.5
done
wait "$agent"
rc=$?
is "agent exits 0" "$rc" 0
[ "$rc" = 0 ] || diag "$(tail -5 "$TMP/agent.log")"

sent=$($PY -c 'import json, sys
print(sum(r.get("commands", 0) for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "flood"))' "$REC")
is "the OAP sent the ids command and $FLOOD tasks" "$sent" $((FLOOD + 1))
stats=$(grep 'stats: ' "$TMP/agent.log" | tail -1)
diag "$(sed 's/.*\(refused from the OAP[^;]*\).*\(rss [0-9]* KiB\).*/\1; \2/' <<<"$stats")"
diag "peak RSS (VmHWM): $hwm KiB"
num() { sed -n "s/.*refused from the OAP: .*[ ,:]\([0-9][0-9]*\) $1.*/\1/p" <<<"$stats"; }
commands=$(sed -n 's/.*refused from the OAP: \([0-9]*\) commands.*/\1/p' <<<"$stats")
ahead=$(sed -n 's/.*, \([0-9]*\) tasks ahead.*/\1/p' <<<"$stats")
ids=$(sed -n 's/.*arguments, \([0-9]*\) process ids.*/\1/p' <<<"$stats")
is "every flood task refused: commands past the cap + tasks ahead = $FLOOD" "$(( ${commands:-0} + ${ahead:-0} ))" $FLOOD
ge "the ids past 1024 refused (~2M sent)" "${ids:-0}" 1900000
is "commands past the cap said once" "$(grep -c 'commands past 1024 in one reply refused' "$TMP/agent.log")" 1
is "tasks ahead said once" "$(grep -c 'tasks starting more than 7 days ahead refused' "$TMP/agent.log")" 1
is "ids past the cap said once" "$(grep -c 'process ids past 1024 in a task refused' "$TMP/agent.log")" 1
ok "no flood task accepted" sh -c "! grep -q 'task flood-[0-9]* .*accepted' '$TMP/agent.log'"
# The agent's own reply buffer holds up to 16 MiB; nothing it decoded may add much to that.
unless_sanitized "ASan's shadow memory and quarantine are RSS" \
	ok "peak RSS under 64 MiB ($hwm KiB)" test "$hwm" -lt 65536
# After the flood and the real task: the profiler, the symbolizer and the spool, no flood task.
rss_last=$(sed -n 's/.* rss \([0-9]*\) KiB.*/\1/p' <<<"$stats")
unless_sanitized "ASan's shadow memory and quarantine are RSS" \
	ok "RSS at the end under 32 MiB (${rss_last:-?} KiB)" test "${rss_last:-999999}" -lt 32768

T=$TMP/oncpu
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$T"
task=$(val "$T" task)
is "the real task served after the flood: its deltas add up to the agent's total" "$(val "$T" total)" "$(logged "$task" "$TMP/agent.log")"
# (99 Hz x 6 s of one busy thread is 594; the shared machine gave it 254 once: the share is the check.)
ge "its samples arrived" "$(val "$T" total)" 100
is_within "oap_hot_a leads: its share" 70 "$(val "$T" share_oap_hot_a)" 10

# Tasks held: 5000 that start in a day, 1000 a reply, to a second agent.
stop_oap
PORT=$(free_port)
REC2=$TMP/record2.jsonl
start_oap "$PORT" "$REC2" --flood-tasks 5000 --flood-per-reply 1000 --flood-ahead-ms 86400000 ||
	{ fail "second fake OAP starts"; done_testing; }
"$APERTURE" run --oap 127.0.0.1:$PORT --exe-pattern "$BURN" --heartbeat-interval 1 --task-interval 1 \
	-d 15 -v 2> "$TMP/agent2.log"
is "second agent exits 0" "$?" 0
sent=$($PY -c 'import json, sys
print(sum(r.get("commands", 0) for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "flood"))' "$REC2")
is "the OAP sent 5000 tasks starting in a day" "$sent" 5000
stats=$(grep 'stats: ' "$TMP/agent2.log" | tail -1)
diag "$(sed 's/.*\(tasks [0-9]*;\).*\(refused from the OAP[^;]*\).*/\1 \2/' <<<"$stats")"
is "the agent holds 1024 of them" "$(sed -n 's/.*; tasks \([0-9]*\); .*/\1/p' <<<"$stats")" 1024
is "and refused the others" "$(sed -n 's/.* \([0-9]*\) tasks over 1024.*/\1/p' <<<"$stats")" 3976
is "said once" "$(grep -c 'new tasks past 1024 held refused' "$TMP/agent2.log")" 1
done_testing
