#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stopping the agent while the OAP hangs (accepts, never answers): the first
# SIGINT asks for a clean stop, a second one ends calls in progress at once
# instead of waiting for their 10 s deadline.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
require_aperture

PORT=$(free_port)
bg $PY -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $PORT)); s.listen(8)
conns = []
end = time.time() + 60
while time.time() < end:
    s.settimeout(1)
    try: conns.append(s.accept()[0])
    except socket.timeout: pass
"
for i in $(seq 50); do $PY -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && break; sleep 0.1; done
bg sleep 60
target=$BG_PID
"$APERTURE" run --oap 127.0.0.1:$PORT -p "$target" --heartbeat-interval 1 --task-interval 1 2> "$TMP/agent.err" &
agent=$!
_bg_pids+=("$agent")
sleep 2	# now inside a call that the OAP never answers
kill -INT "$agent"
sleep 0.3
t0=$(date +%s.%N)
kill -INT "$agent"
wait "$agent"
rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }')
is "exit status after two SIGINTs" "$rc" 0
ok "quits within 2 s of the second SIGINT (took $secs s; the call deadline is 10 s)" \
	awk -v s="$secs" 'BEGIN { exit !(s < 2) }'
ok "says it is stopping" grep -q 'stopping' "$TMP/agent.err"
done_testing
