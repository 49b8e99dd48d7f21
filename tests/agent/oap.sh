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
