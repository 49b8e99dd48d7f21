#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run --continuous: the thread-count and system-load checks.  A policy
# "PROCESS_THREAD_COUNT >= 8 and SYSTEM_LOAD >= 0, each in 2 of 3 s" on the
# service; cont_nine has 9 threads, cont_one 1, both idle.  cont_nine's report
# carries both causes (9 threads; the load /proc/loadavg shows), cont_one's
# the load only.  Tasks of 2 s in an 8 s run with the default silence window
# (1200 s): the policy still trips after the first task, and no second starts.
# The window outlives a restart (the ledger keeps each task's start): an agent
# started again on the same state dir within it reports nothing in 8 s; one
# started with a window shorter than the time since then reports again at once.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_agent cont_burn

PORT=$(free_port)
REC=$TMP/record.jsonl
SVC=cont-checks-$$
cat > "$TMP/policy.json" <<JSON
{"$SVC": {"uuid": "checks-1", "config": {"ON_CPU": {
    "PROCESS_THREAD_COUNT": {"threshold": "8", "period": 3, "count": 2},
    "SYSTEM_LOAD": {"threshold": "0", "period": 3, "count": 2}}}}}
JSON
start_oap "$PORT" "$REC" --policy-file "$TMP/policy.json" || { plan 1; fail "fake OAP starts"; done_testing; }
mkdir -p "$TMP/bin"
cp "$WL/cont_burn" "$TMP/bin/cont_nine"
cp "$WL/cont_burn" "$TMP/bin/cont_one"
bg "$TMP/bin/cont_nine" 999 0 - 9
nine_pid=$BG_PID
bg "$TMP/bin/cont_one" 999 0 - 1
# Both checks must see 9 threads from the agent's first second (a loaded machine starts them late)
for i in $(seq 100); do
	[ "$(awk '$1 == "Threads:" { print $2 }' "/proc/$nine_pid/status" 2>/dev/null)" = 9 ] && break
	sleep 0.1
done
# agent SECONDS ARGS...: the agent on the policy's processes, with the test's state dir
agent() {
	local secs=$1
	shift
	"$APERTURE" run --oap 127.0.0.1:$PORT --service "$SVC" --exe-pattern "$TMP/bin/*" --continuous \
		--continuous-task 2 --heartbeat-interval 1 --task-interval 1 --flush-interval 1 -d "$secs" -v "$@"
}
t0=$(date +%s)
agent 8 2> "$TMP/agent.log" &
AGENT=$!
# The 1-minute load while the agent checks, read as the agent reads it.
loads=()
for i in 1 2 3 4 5 6; do sleep 1; loads+=("$(cut -d' ' -f1 /proc/loadavg)"); done
wait "$AGENT"
is "agent exits 0" "$?" 0

# causes PROCESS: "TYPE THRESHOLD CURRENT" per cause of its first report, sorted
causes() {
	$PY -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "continuous_task" and r["task"]["ProcessName"] == sys.argv[2]:
        for c in sorted(r["task"]["causes"], key=lambda c: c["type"]):
            print(c["type"], c["raw_threshold"], c["raw_current"])
        break' "$REC" "$1"
}
reports() { grep -c "\"ProcessName\": \"$1\"" "$REC"; }
is "one task each: none again within the silence window after the first ended" \
	"$(reports cont_nine) $(reports cont_one)" "1 1"
nine=$(causes cont_nine)
one=$(causes cont_one)
diag "cont_nine: $(echo $nine); cont_one: $(echo $one); loads seen: ${loads[*]}"
is "cont_nine: two causes" "$(echo "$nine" | grep -c .)" 2
is "cont_nine: thread count 9 >= 8" "$(echo "$nine" | grep PROCESS_THREAD_COUNT)" "PROCESS_THREAD_COUNT 8.0 9.0"
is "cont_one: the load only (1 thread < 8)" "$(echo "$one" | cut -d' ' -f1,2)" "SYSTEM_LOAD 0.0"
# The load the agent reported is one of those /proc/loadavg showed meanwhile (it moves by
# hundredths within seconds; +-0.5 for the second between the two reads).
lo=$(printf '%s\n' "${loads[@]}" | sort -g | head -1)
hi=$(printf '%s\n' "${loads[@]}" | sort -g | tail -1)
for who in nine one; do
	v=$(printf "%s\n" "${!who}" | awk '$1 == "SYSTEM_LOAD" { print $3 }')
	ok "cont_$who: load $v within /proc/loadavg's $lo..$hi (+-0.5)" \
		awk -v v="$v" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v != "" && v >= lo - 0.5 && v <= hi + 0.5) }'
done

# The window across a restart: the ledger says when each process's task started.
ledger=$(ls "$APERTURE_STATE_DIR"/agent-*/ledger)
is "the ledger keeps one silence window per process" "$(grep -c '^silence oncpu [0-9]* ' "$ledger")" 2
agent 8 2> "$TMP/again.log"
is "restarted within the window: exit 0" "$?" 0
ok "  the windows restored from the ledger" grep -q "2 continuous silence windows restored" "$TMP/again.log"
is "  no second report in 8 s (the window is 1200 s)" "$(reports cont_nine) $(reports cont_one)" "1 1"
# Over 16 s since the first tasks started: a 10 s window has ended.
diag "the third agent starts $(($(date +%s) - t0)) s after the first"
agent 5 --continuous-silence 10 2> "$TMP/after.log"
is "restarted with a window shorter than the time since: one more report each" \
	"$(reports cont_nine) $(reports cont_one)" "2 2"

# A ledger that is not a regular file is refused with a line, not followed or waited on.
rm -f "$ledger"; mkfifo "$ledger"
timeout 20 "$APERTURE" run --oap 127.0.0.1:$PORT --service "$SVC" --exe-pattern "$TMP/none/*" -d 1 2> "$TMP/fifo.log"
is "a FIFO for a ledger: the agent neither hangs nor fails" "$?" 0
ok "  one line says the ledger is unreadable" grep -q "ledger .*: ledger unreadable (Invalid argument), starting afresh" "$TMP/fifo.log"
rm -f "$ledger"; printf 'aperture-ledger 1\nsilence oncpu 99999999999999 future\nsilence nosuch 1 x\nsilence oncpu 1\n' >"$TMP/l"
ln -s "$TMP/l" "$ledger"
timeout 20 "$APERTURE" run --oap 127.0.0.1:$PORT --service "$SVC" --exe-pattern "$TMP/none/*" -d 1 2> "$TMP/link.log"
ok "a symlinked ledger is not followed" grep -q "ledger unreadable (Too many levels of symbolic links)" "$TMP/link.log"
rm -f "$ledger"; cp "$TMP/l" "$ledger"
timeout 20 "$APERTURE" run --oap 127.0.0.1:$PORT --service "$SVC" --exe-pattern "$TMP/none/*" -d 1 2> "$TMP/bad.log"
ok "silence lines in the future, of no profiler or malformed are refused and counted" \
	grep -q "3 continuous silence windows refused" "$TMP/bad.log"
done_testing
