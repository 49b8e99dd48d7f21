# SPDX-License-Identifier: GPL-2.0
# Helpers for the SkyWalking OAP tests; source after lib.sh.
PY=/usr/bin/python3
OAPDIR="$TOP/tests/agent"
# Each test's agents keep their crash ledger in its own directory, removed with $TMP.
export APERTURE_STATE_DIR="$TMP/state"

free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_oap PORT RECORD [fake_oap.py options]: sets OAP_PID, waits until it listens.
start_oap() {
	local port=$1 rec=$2 i
	shift 2
	bg $PY "$OAPDIR/fake_oap.py" --port "$port" --out "$rec" "$@"
	OAP_PID=$BG_PID
	for i in $(seq 100); do
		$PY -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && return 0
		sleep 0.1
	done
	diag "fake OAP did not start"
	return 1
}

# stop_oap: SIGTERM (a graceful stop: GOAWAY), then wait for it.
stop_oap() {
	kill "$OAP_PID" 2>/dev/null
	wait "$OAP_PID" 2>/dev/null
	return 0
}

# private_burn: copies oap_burn into this test's $TMP/bin and prints its path.
# Agents select it by that exact path: a pattern like '*/oap_burn' also picks up
# other tests' workloads still running (or exiting) on the machine, whose
# threads then shift this test's shares.
private_burn() {
	mkdir -p "$TMP/bin" && cp "$WL/oap_burn" "$TMP/bin/oap_burn" && echo "$TMP/bin/oap_burn"
}

# val FILE KEY: the value of "KEY value" in FILE
val() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }

# logged TASK LOG: the count the agent logged for TASK when it finished ("task ID (TYPE) finished: N ...")
logged() { sed -n "s/.*task $1 (.*) finished: \([0-9]*\) .*/\1/p" "$2"; }

have_oap_deps() {
	$PY -c 'import grpc, google.protobuf' 2>/dev/null && command -v protoc >/dev/null
}

# require_agent [WORKLOAD...]: what an agent test needs: root, the fake OAP's Python and protoc,
# aperture and the workloads (default oap_burn); else the file is skipped
require_agent() {
	local w
	require_root
	have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
	[ -x "$APERTURE" ] || skip_all "build aperture and tests first"
	for w in "${@:-oap_burn}"; do [ -x "$WL/$w" ] || skip_all "build aperture and tests first"; done
}

# new_oap REC [fake_oap.py options]: a fake OAP on a free port (PORT, OAP_PID) recording to REC;
# one that does not start ends the file with a failed check
new_oap() {
	PORT=$(free_port)
	start_oap "$PORT" "$@" || { fail "fake OAP starts ($(basename "$1"))"; done_testing; }
}

# start_burn SECONDS: this test's own oap_burn (private_burn) for SECONDS in the background (BURN, BURN_PID)
start_burn() {
	BURN=$(private_burn)
	bg "$BURN" "$1"
	BURN_PID=$BG_PID
}

# agent_cmd SERVICE: sets AGENT_CMD, `aperture run` for $BURN under SERVICE, with a heartbeat, a task
# poll and a flush each second; the caller adds --oap and the rest
agent_cmd() {
	AGENT_CMD=("$APERTURE" run --exe-pattern "$BURN" --service "$1" --heartbeat-interval 1 --task-interval 1
		--flush-interval 1)
}

# task_agent NAME PID [run options]: one `aperture run --pid PID` (-F 499, 1 s heartbeat, task poll
# and flush) for AGENT_S seconds (default 18: slack for a loaded machine) against a fresh fake OAP
# with a 6 s ON_CPU task on this host's service; the OAP's records in $TMP/NAME.jsonl, the agent's
# log in $TMP/NAME.err, its exit status in AGENT_RC
task_agent() {
	local name=$1 pid=$2 port
	shift 2
	port=$(free_port)
	start_oap "$port" "$TMP/$name.jsonl" --min-duration 0 --task "ON_CPU:6:$(hostname)" || return 1
	"$APERTURE" run --oap 127.0.0.1:$port --pid "$pid" --heartbeat-interval 1 --task-interval 1 \
		--flush-interval 1 -F 499 -d $((${AGENT_S:-18} * TEST_SCALE)) -v "$@" 2>"$TMP/$name.err"
	AGENT_RC=$?
	stop_oap
}
