#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run --oap --config FILE, then SIGHUP: a new OAP address and a new
# service are applied without a restart (the processes are reported again to
# the new OAP under the new service), a key that needs a restart is named and
# kept, a bad file keeps the running settings, and the agent goes on.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_agent

start_burn 60
new_oap "$TMP/a.jsonl"
PORT_A=$PORT
new_oap "$TMP/b.jsonl"
PORT_B=$PORT
CONF=$TMP/agent.conf
conf() {	# conf OAP_PORT SERVICE [extra lines]
	printf 'oap = 127.0.0.1:%s\nservice = %s\nexe-pattern = %s\nheartbeat-interval = 0.5\ntask-interval = 1\n' \
		"$1" "$2" "$BURN" > "$CONF"
	shift 2
	[ $# -gt 0 ] && printf '%s\n' "$@" >> "$CONF"
	return 0
}
# wait_for PATTERN FILE: up to 10 s
wait_for() { local i; for i in $(seq 100); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

conf "$PORT_A" svc-a
"$APERTURE" run --config "$CONF" -v 2> "$TMP/agent.log" &
AGENT=$!
_bg_pids+=("$AGENT")
ok "the process is reported to OAP A under svc-a" wait_for '"svc-a"' "$TMP/a.jsonl"

conf "$PORT_B" svc-b
kill -HUP "$AGENT"
ok "SIGHUP: the new OAP is used" wait_for "reload: OAP 127.0.0.1:$PORT_B" "$TMP/agent.log"
ok "the process is reported again, to OAP B, under svc-b" wait_for '"svc-b"' "$TMP/b.jsonl"
sleep 1
n_a=$(grep -c keepAlive "$TMP/a.jsonl")
sleep 2
is "OAP A hears nothing more" "$(grep -c keepAlive "$TMP/a.jsonl")" "$n_a"
ok "OAP B gets the heartbeats" test "$(grep -c keepAlive "$TMP/b.jsonl")" -ge 2

# A key that needs a restart: named, kept; the rest applied.
conf "$PORT_B" svc-b "state-dir = $TMP/elsewhere"
kill -HUP "$AGENT"
ok "a restart key is named and kept" wait_for 'reload: state-dir changed: not applied, they need a restart' "$TMP/agent.log"

# A bad file: one error, the running settings kept, the agent goes on.
conf "$PORT_B" svc-b "heartbeat-interval = soon"
kill -HUP "$AGENT"
ok "a bad file is refused" wait_for 'reload: the settings above are wrong; the running ones are kept' "$TMP/agent.log"
ok "the error names the file and line" grep -q "$CONF:6:" "$TMP/agent.log"
n_b=$(grep -c keepAlive "$TMP/b.jsonl")
sleep 2
ok "the agent still reports to OAP B" test "$(grep -c keepAlive "$TMP/b.jsonl")" -gt "$n_b"
ok "the agent is alive" kill -0 "$AGENT"
kill -USR1 "$AGENT"
ok "SIGUSR1: a stats line (processes, tasks, spool)" \
	wait_for "stats: .*selected processes 1/.*tasks 0; spool 0/16777216 bytes" "$TMP/agent.log"
ok "  with the heap by holder" \
	grep -Eq "stats: .*memory KiB: symbol files [0-9]+,.*kallsyms [0-9]+,.*unwind [0-9]+, spool 0, other -?[0-9]+ of [0-9]+ in use" "$TMP/agent.log"
kill -TERM "$AGENT"
wait "$AGENT"
is "SIGTERM: exits 0" "$?" 0
done_testing
