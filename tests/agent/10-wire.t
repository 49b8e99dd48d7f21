#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# user/net/grpc.c against a real gRPC server (python grpcio): unary and client
# streaming calls, status from trailers and trailers-only responses, the
# authentication header, deadlines (name lookups included), reconnect with
# backoff after the server went away (GOAWAY) and came back.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
[ -x "$WL/grpc_probe" ] || skip_all "tests/build/grpc_probe not built (make -C tests)"

PORT=$(free_port)
REC=$TMP/record.jsonl
start_oap "$PORT" "$REC" --token sekret || { plan 1; fail "fake OAP starts"; done_testing; }
P="$WL/grpc_probe -t sekret 127.0.0.1:$PORT"
W=/aperture.test.Wire

is "unary echo" "$($P unary:$W/Echo:hello)" "OK len=5 reply=hello msg="
ok "authentication header sent" grep -q '"auth": "sekret", "len": 5, "method": "Echo"' "$REC"
t=$($PY -c 'import json,sys; print([r for r in map(json.loads, open(sys.argv[1])) if r.get("method") == "Echo"][0]["timeout"])' "$REC")
is_within "grpc-timeout header carries the deadline (s left)" 5 "$t" 1
is "error status from a trailers-only response" "$($P "unary:$W/Fail:RESOURCE_EXHAUSTED:too busy")" \
	"RESOURCE_EXHAUSTED len=0 reply= msg=too busy"
is "grpc-message is percent-decoded" "$($P "unary:$W/Fail:UNAVAILABLE:50% done, ünïcode")" \
	"UNAVAILABLE len=0 reply= msg=50% done, ünïcode"
is "unknown method" "$($P unary:$W/Nope:x | cut -d' ' -f1)" "UNIMPLEMENTED"
is "empty reply message" "$($P unary:/skywalking.v3.EBPFProfilingService/queryTasks:)" "OK len=0 reply= msg="
is "bad token: PERMISSION_DENIED" \
	"$($WL/grpc_probe -t wrong 127.0.0.1:$PORT unary:/skywalking.v3.EBPFProfilingService/queryTasks: | cut -d' ' -f1)" \
	"PERMISSION_DENIED"
start=$(date +%s%N)
is "deadline exceeded" "$($P -d 300 unary:$W/Sleep:3000 2>/dev/null | cut -d' ' -f1)" "DEADLINE_EXCEEDED"
out=$($WL/grpc_probe -t sekret -d 300 127.0.0.1:$PORT unary:$W/Sleep:3000 | cut -d' ' -f1)
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
is "deadline exceeded (option before target)" "$out" "DEADLINE_EXCEEDED"
ok "deadlines end calls on time (${elapsed} ms for two 300 ms calls)" test "$elapsed" -lt 2000
is "client streaming, 200 messages of 30000 bytes (flow control)" \
	"$($P stream:$W/Concat:200:30000 | cut -d' ' -f1-2)" "OK len=6000000"
ok "server saw 200 messages" grep -q '"method": "Concat", "n": 200' "$REC"
is "client streaming, no message" "$($P stream:$W/Concat:0:1 | cut -d' ' -f1-2)" "OK len=0"

# The server goes away (graceful stop: GOAWAY) between two calls on one connection and comes back.
$P unary:$W/Echo:one sleep:5000 unary:$W/Echo:two > "$TMP/reconnect.out" &
probe=$!
sleep 0.8
stop_oap
start_oap "$PORT" "$REC" --token sekret
wait $probe
is "first call before the restart" "$(sed -n 1p "$TMP/reconnect.out")" "OK len=3 reply=one msg="
is "call after GOAWAY and restart reconnects" "$(sed -n 2p "$TMP/reconnect.out")" "OK len=3 reply=two msg="

# Server down: calls fail fast with UNAVAILABLE while backing off, then succeed once it is back.
stop_oap
ops=()
for i in $(seq 30); do ops+=(unary:$W/Echo:x sleep:100); done
start=$(date +%s%N)
$WL/grpc_probe -t sekret -b 800 127.0.0.1:$PORT "${ops[@]}" > "$TMP/backoff.out" &
probe=$!
sleep 1.5
start_oap "$PORT" "$REC" --token sekret
wait $probe
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
ge "UNAVAILABLE while the server is down" "$(grep -c '^UNAVAILABLE' "$TMP/backoff.out")" 3
ok "fails fast while backing off" grep -q 'next attempt in' "$TMP/backoff.out"
is "last call succeeds after the server is back" "$(tail -1 "$TMP/backoff.out" | cut -d' ' -f1)" "OK"
ok "no call blocked long (${elapsed} ms for 30 calls)" test "$elapsed" -lt 9000

# A name server that never answers (resolver timeout 5 s x 2): the lookup must not outlive the deadline.
# It needs a private network and mount namespace (unshare -mn, as root): without root, a skip that
# says so; as root, a namespace that cannot be set up (dns_hang.sh exits 97) fails.
if [ "$(id -u)" != 0 ]; then
	skip "hanging lookup: UNAVAILABLE at the deadline" "needs root (unshare -mn)"
else
	start=$(date +%s%N)
	unshare -mn bash "$OAPDIR/dns_hang.sh" "$TMP" $WL/grpc_probe -d 300 -b 5000 hang.example.com:11800 \
		unary:$W/Echo:a unary:$W/Echo:b > "$TMP/dns.out"
	rc=$?
	elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
	ok "a private network and mount namespace with a silent name server (dns_hang.sh: $rc, 97 if not)" test "$rc" != 97
	is "hanging lookup: UNAVAILABLE at the deadline" "$(sed -n 1p "$TMP/dns.out")" \
		"UNAVAILABLE len=0 reply= msg=cannot resolve hang.example.com: no answer in time"
	ok "then fails fast while backing off" grep -q '^UNAVAILABLE .*next attempt in' "$TMP/dns.out"
	ok "lookups end with their calls (${elapsed} ms for two 300 ms calls)" test "$elapsed" -lt 4000
fi
done_testing
