#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run against an OAP that misbehaves at the HTTP/2 level
# (tests/build/fault_oap, on nghttp2's server API; grpcio cannot misbehave
# so).  For each fault the first 3 calls it targets misbehave, then the
# server behaves: GOAWAY, RST_STREAM mid-upload, an HTML page with a 200
# (and grpc-status 0), an HTTP 500, a 64 MiB response message, no answer
# at all, an answer after the deadline, garbage protobuf with grpc-status 0,
# an HTTP/1.1 server, a TLS one; then the OAP killed in the middle of an
# upload, the OAP down when the agent starts, and a stop while it hangs.
# Each time the agent must stay up, say what went wrong in one line, keep
# profiling, reconnect, answer SIGTERM within a few seconds, and in the end
# the OAP must store exactly what the agent counted: the data of the
# intervals during the fault too (the uploads a fault held are stored later).
# FAULT_CASES="rst die" runs those cases only.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
require_aperture
require_workload fault_oap oap_burn

FAULTS=3
TASK_S=6
# The workload under a name of its own, selected by pid: other tests' oap_burn are not ours.
cp "$WL/oap_burn" "$TMP/fault_burn"
bg "$TMP/fault_burn" 900
WLPID=$BG_PID

# start_fault LOG [fault_oap options]: starts it, waits for its "listening PORT"; sets FPID and FPORT.
start_fault() {
	local log=$1 before i
	shift
	before=$(grep -c '^listening' "$log" 2>/dev/null)
	bg "$WL/fault_oap" --log "$log" "$@"
	FPID=$BG_PID
	local n
	for i in $(seq 50); do
		n=$(grep -c '^listening' "$log" 2>/dev/null)	# nothing while the log is not there yet
		if [ "${n:-0}" -gt "${before:-0}" ]; then
			FPORT=$(awk '$1 == "listening" { p = $2 } END { print p }' "$log")
			return 0
		fi
		sleep 0.1
	done
	return 1
}

stop_fault() {
	kill "$FPID" 2>/dev/null
	wait "$FPID" 2>/dev/null
	return 0
}

# start_agent NAME [OPTIONS]: aperture run against port $FPORT, its log $TMP/NAME.log (appended); sets AGENT.
start_agent() {
	local name=$1
	shift
	: >> "$TMP/$name.log"	# there before the first look at it
	"$APERTURE" run --oap 127.0.0.1:$FPORT --pid "$WLPID" --service "fault-$name" --state-dir "$TMP/state-$name" \
		--heartbeat-interval 1 --task-interval 1 --flush-interval 1 --deadline 2 --reconnect-max 1 \
		-v "$@" 2>> "$TMP/$name.log" &
	AGENT=$!
	_bg_pids+=("$AGENT")
}

# stop_agent NAME: SIGTERM; it must exit 0 within 5 s (a watchdog kills it at 8 s).
stop_agent() {
	local t0 ms rc watchdog

	t0=$(date +%s%N)
	kill -TERM "$AGENT"
	(sleep 8; kill -9 "$AGENT" 2>/dev/null) &
	watchdog=$!
	wait "$AGENT"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	kill "$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null
	is "$1: exits 0 on SIGTERM" "$rc" 0
	ok "$1: within 5 s of SIGTERM ($ms ms)" test "$ms" -lt 5000
}

# wait_for SECONDS CMD...: until CMD succeeds; fails on timeout.
wait_for() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		"${@:2}" && return 0
		sleep 0.1
	done
	return 1
}

# stored LOG: the samples the server stored, each record once (a resent one overwrites itself at the OAP).
stored() { awk '$1 == "record" && !seen[$2 " " $3 " " $4 " " $5 " " $6]++ { s += $7 } END { print s + 0 }' "$1"; }
# unsent LOG: records of uploads that arrived whole during a fault and never got stored after it.
unsent() {
	awk '{ k = $2 " " $3 " " $4 " " $5 " " $6 } $1 == "record" { r[k] = 1 } $1 == "held" { h[k] = 1 }
		END { for (k in h) if (!(k in r)) n++; print n + 0 }' "$1"
}
# uploads LOG: how many uploads (distinct currentTime) the server stored.
uploads() { awk '$1 == "record" && !seen[$5]++ { n++ } END { print n + 0 }' "$1"; }
# counted NAME: the agent's last word on its task's count ("finished: N" or "interrupted: N").
counted() { sed -n 's/.*) \(finished\|interrupted\): \([0-9]*\) samples.*/\2/p' "$TMP/$1.log" | tail -1; }
stored_is_counted() { [ "$(stored "$1")" = "$(counted "$2")" ]; }

# check_delivery NAME LOG: what holds after every fault once the server behaves again.
check_delivery() {
	local name=$1 log=$2 n

	n=$(counted "$name")
	ge "$name: profiling went on (samples of the ${TASK_S} s task)" "$n" 20
	is "$name: the OAP stored all the agent counted" "$(stored "$log")" "$n"
	is "$name: uploads the fault held arrived later" "$(unsent "$log")" 0
	ge "$name: uploads of several intervals" "$(uploads "$log")" 2
	ok "$name: nothing dropped" bash -c "! grep -q 'dropped' '$TMP/$name.log'"
}

# wanted NAME: whether to run case NAME ($FAULT_CASES, e.g. "rst die": those only; unset: all).
wanted() { [ -z "${FAULT_CASES:-}" ] || [[ " $FAULT_CASES " == *" $1 "* ]]; }

# check_mode NAME MODE REGEX [fault_oap options]: one run; REGEX is the agent's line naming the fault.
check_mode() {
	local name=$1 mode=$2 regex=$3 log=$TMP/$1.srv again
	shift 3
	wanted "$name" || return 0

	start_fault "$log" --port 0 --mode "$mode" --faults $FAULTS --task-seconds $TASK_S "$@" ||
		{ fail "$name: fault_oap starts"; return; }
	start_agent "$name"
	wait_for 40 grep -q ') finished:' "$TMP/$name.log"
	wait_for 15 stored_is_counted "$log" "$name"	# the spool drained
	ok "$name: the agent is still up" kill -0 "$AGENT"
	stop_agent "$name"
	stop_fault
	is "$name: the server misbehaved $FAULTS times" "$(grep -c "^call .* fault=$mode " "$log")" $FAULTS
	is "$name: one warning names the fault, not one per call" "$(grep -Ec "$regex" "$TMP/$name.log")" 1
	grep -Eq "$regex" "$TMP/$name.log" || diag "$name: the agent's warnings: $(grep 'warning:' "$TMP/$name.log" | head -5)"
	is "$name: and no other warning about the OAP" "$(grep -c 'warning: OAP .*\(failed\|decode\)' "$TMP/$name.log")" 1
	again=$(grep -c 'answers again' "$TMP/$name.log")
	ok "$name: the end of the outage is said once at most ($again)" test "$again" -le 1
	check_delivery "$name" "$log"
}

U='warning: OAP 127\.0\.0\.1:[0-9]+: collectProfilingData failed'
check_mode goaway goaway "$U: UNAVAILABLE: stream reset by server: REFUSED_STREAM"
wanted goaway &&
	ge "goaway: reconnected after each GOAWAY" "$(grep -c 'reconnecting to .*(server sent GOAWAY)' "$TMP/goaway.log")" $FAULTS
check_mode rst rst "$U: INTERNAL: stream reset by server: INTERNAL_ERROR"
check_mode ctype ctype "$U: UNKNOWN: not a gRPC answer: HTTP status 200, content-type text/html"
check_mode http500 http500 "$U: UNKNOWN: not a gRPC answer: HTTP status 500, content-type text/plain"
check_mode huge huge "$U: RESOURCE_EXHAUSTED: response message of 67108864 bytes, more than the 16777216 accepted"
check_mode slow slow "$U: DEADLINE_EXCEEDED: no answer within the deadline \(2\.0 s\)"
check_mode late slow "$U: DEADLINE_EXCEEDED: no answer within the deadline \(2\.0 s\)" --delay-ms 3000
# The calls whose answers the agent reads, while the task runs.
check_mode badpb badpb 'warning: OAP 127\.0\.0\.1:[0-9]+: queryTasks answer does not decode' \
	--on query,report --after-task
check_mode hugequery huge \
	'warning: OAP 127\.0\.0\.1:[0-9]+: queryTasks failed: RESOURCE_EXHAUSTED: response message of 67108864 bytes' \
	--on query --after-task
# Not an h2c server at all, for the first connections: the wrong port, or TLS.  Whichever call
# comes first meets it (reportProcesses, unless a slow start let keepAlive or queryTasks go first).
L='warning: OAP 127\.0\.0\.1:[0-9]+: [A-Za-z]+ failed: UNAVAILABLE: connection to 127\.0\.0\.1:[0-9]+ lost'
check_mode http1 http1 "$L: not an HTTP/2 server: it answered 'HTTP/1\.1 400 Bad Request' \(the OAP's gRPC port"
check_mode tls tls "$L: not a plaintext HTTP/2 server: it answered with TLS \(use --tls\)"

# --- the OAP dies in the middle of an upload, and is back 2 s later ---
die_case() {
	local log=$TMP/die.srv
	start_fault "$log" --port 0 --mode die --faults 1 --task-seconds $TASK_S || fail "die: fault_oap starts"
	start_agent die
	wait_for 30 grep -q 'fault=die' "$log"
	ok "die: the server died in an upload" grep -q '^call .* collect fault=die .*exiting' "$log"
	wait "$FPID" 2>/dev/null
	sleep 2
	ok "die: the agent is still up while the OAP is away" kill -0 "$AGENT"
	# A new server knows no process: it hands out no task, the agent's task runs on.
	start_fault "$log" --port "$FPORT" --mode ok --task-seconds 0 || fail "die: fault_oap restarts"
	wait_for 30 grep -q ') finished:' "$TMP/die.log"
	wait_for 15 stored_is_counted "$log" die
	ok "die: the lost connection is said" grep -Eq "$U: UNAVAILABLE: connection to 127\.0\.0\.1:[0-9]+ lost" "$TMP/die.log"
	ok "die: reconnected" grep -q 'answers again' "$TMP/die.log"
	ok "die: the agent is still up" kill -0 "$AGENT"
	stop_agent die
	stop_fault
	check_delivery die "$log"
}
wanted die && die_case

# --- the OAP is down when the agent starts ---
down_case() {
	local log=$TMP/down.srv
	FPORT=$(free_port)
	start_agent down
	sleep 3
	ok "down: the agent waits for the OAP" kill -0 "$AGENT"
	is "down: one warning while it is down, not one per call" "$(grep -c 'warning: OAP' "$TMP/down.log")" 1
	ok "down: it says why" grep -q \
		"warning: OAP 127.0.0.1:$FPORT: .* failed: UNAVAILABLE: cannot connect to 127.0.0.1:$FPORT: Connection refused" \
		"$TMP/down.log"
	start_fault "$log" --port "$FPORT" --mode ok --task-seconds $TASK_S || fail "down: fault_oap starts"
	wait_for 40 grep -q ') finished:' "$TMP/down.log"
	wait_for 15 stored_is_counted "$log" down
	ok "down: then it connects" grep -q 'answers again' "$TMP/down.log"
	stop_agent down
	stop_fault
	check_delivery down "$log"
}
wanted down && down_case

# --- a stop while the OAP hangs (the default 10 s deadline): bounded, the ledger sends the rest at the next start ---
stop_case() {
	local log=$TMP/stop.srv
	start_fault "$log" --port 0 --mode slow --faults 1000 --task-seconds 8 || fail "stop: fault_oap starts"
	start_agent stop --deadline 10
	wait_for 30 grep -q 'started for' "$TMP/stop.log"
	sleep 3
	stop_agent stop
	ok "stop: the calls were cut by the stop" grep -q 'no answer within the 3.0 s a stop allows' "$TMP/stop.log"
	ok "stop: the unsent data is said to wait in the ledger" \
		grep -q 'could not be sent to .*; the ledger keeps them for the next start' "$TMP/stop.log"
	stop_fault
	start_fault "$log" --port "$FPORT" --mode ok --task-seconds 0 || fail "stop: fault_oap restarts"
	start_agent stop
	ok "stop: the next agent sends what was left" \
		wait_for 20 grep -q 'not acknowledged before the last stop: sending them again' "$TMP/stop.log"
	wait_for 30 grep -q ') finished:' "$TMP/stop.log"
	wait_for 15 stored_is_counted "$log" stop
	stop_agent stop
	stop_fault
	check_delivery stop "$log"
}
wanted stop && stop_case
done_testing
