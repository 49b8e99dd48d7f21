#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run over TLS against a real TLS gRPC server (grpcio, tls_oap.py) and
# a test CA made here with the openssl CLI: a good chain works (by name and by
# address), a wrong CA, a wrong name and a missing client certificate each give
# one line and no call, mutual TLS works, bad TLS files are refused at start.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
command -v openssl >/dev/null || skip_all "needs the openssl command"
[ -x "$APERTURE" ] || skip_all "build aperture first"

# --- a test PKI: two CAs, a server certificate for localhost and 127.0.0.1, one
# for another name only, a client certificate ---
cd "$TMP" || exit 1
new_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$1" -keyout "$1.key" -out "$1.crt" 2>/dev/null
}
# new_cert NAME CA SUBJECT_ALT_NAMES
new_cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$1.key" -out "$1.csr" 2>/dev/null &&
	printf 'subjectAltName=%s\n' "$3" > "$1.ext" &&
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
}
new_ca test-ca && new_ca other-ca && new_cert server test-ca "DNS:localhost,IP:127.0.0.1" &&
	new_cert elsewhere test-ca "DNS:oap.example" && new_cert agent test-ca "DNS:aperture-agent" ||
	{ plan 1; fail "openssl makes the test certificates"; done_testing; }

# start_tls_oap NAME CERT [--client-ca CA]: a TLS OAP on a free port (PORT_NAME), calls in $TMP/NAME.rec
start_tls_oap() {
	local name=$1 cert=$2 port i
	shift 2
	port=$(free_port)
	bg $PY "$OAPDIR/tls_oap.py" --port "$port" --out "$TMP/$name.rec" --cert "$cert.crt" --key "$cert.key" "$@" \
		2>>"$TMP/$name.server.log"
	for i in $(seq 100); do
		$PY -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
		sleep 0.1
	done
	printf -v "PORT_$name" '%s' "$port"
	touch "$TMP/$name.rec"
}
start_tls_oap good server
start_tls_oap wrongname elsewhere
start_tls_oap mutual server --client-ca test-ca.crt

# agent NAME ARGS...: a short agent run (stderr in $TMP/NAME.err, status in AP_RC)
agent() {
	local name=$1
	shift
	run_ap "$name" run --pid $$ --heartbeat-interval 0.5 --task-interval 0.5 -d 3 "$@"
}
calls() { grep -c "^$1 " "$2" || true; }
# tls_lines NAME: the lines of the run's stderr that tell a TLS failure
tls_lines() { grep -c 'TLS handshake' "$TMP/$1.err" || true; }

# --- a good chain ---
agent byname --oap "localhost:$PORT_good" --ca test-ca.crt -v
is "by name: exits 0" "$AP_RC" 0
ok "by name: connected" grep -q "connected to localhost:$PORT_good" "$TMP/byname.err"
is "by name: registered over TLS" "$(calls reportProcesses good.rec)" 1
ge "by name: keepAlives over TLS" "$(calls keepAlive good.rec)" 2
ge "by name: queryTasks over TLS" "$(calls queryTasks good.rec)" 2
is "by name: no TLS failure" "$(tls_lines byname)" 0
[ "$AP_RC" = 0 ] || show_err byname

: > good.rec
agent byaddress --oap "127.0.0.1:$PORT_good" --ca test-ca.crt
is "by address (IP SAN): exits 0" "$AP_RC" 0
is "by address: registered" "$(calls reportProcesses good.rec)" 1
is "by address: not a line on stderr" "$(wc -l < "$TMP/byaddress.err")" 0

# --- refusals: one line each, no call reaches the server ---
: > good.rec
agent wrongca --oap "localhost:$PORT_good" --ca other-ca.crt
is "wrong CA: one line" "$(tls_lines wrongca)" 1
ok "wrong CA: says the CA did not sign it" \
	grep -q 'certificate of localhost not accepted: The certificate is not correctly signed by the trusted CA' "$TMP/wrongca.err"
is "wrong CA: no call accepted" "$(wc -l < good.rec)" 0
is "wrong CA: the agent still exits 0 at its end (the OAP may be fixed)" "$AP_RC" 0

agent wrongname --oap "localhost:$PORT_wrongname" --ca test-ca.crt
is "wrong name: one line" "$(tls_lines wrongname)" 1
ok "wrong name: says the name does not match" grep -q 'does not match with the expected CN' "$TMP/wrongname.err"
is "wrong name: no call accepted" "$(wc -l < wrongname.rec)" 0

agent wrongaddr --oap "127.0.0.1:$PORT_wrongname" --ca test-ca.crt
is "address not in the certificate: one line" "$(tls_lines wrongaddr)" 1
ok "address not in the certificate: says so" grep -q 'not among its IP subject alternative names' "$TMP/wrongaddr.err"

agent skipverify --oap "localhost:$PORT_wrongname" --ca other-ca.crt --insecure-skip-verify
is "--insecure-skip-verify: exits 0" "$AP_RC" 0
is "--insecure-skip-verify: registered" "$(calls reportProcesses wrongname.rec)" 1
ok "--insecure-skip-verify: warned" grep -q 'insecure-skip-verify: the OAP.s certificate is not checked' "$TMP/skipverify.err"

agent plainto --oap "localhost:$PORT_good"
is "without --tls: no call accepted by a TLS server" "$(calls reportProcesses good.rec)" 0

# --- mutual TLS ---
agent nocert --oap "localhost:$PORT_mutual" --ca test-ca.crt
is "mutual TLS without a client certificate: one line" "$(tls_lines nocert)" 1
is "mutual TLS without a client certificate: no call" "$(wc -l < mutual.rec)" 0
ok "mutual TLS without a client certificate: hints at --cert" grep -q -- '--cert' "$TMP/nocert.err"
[ "$(tls_lines nocert)" = 1 ] || show_err nocert

agent othercert --oap "localhost:$PORT_mutual" --ca test-ca.crt --cert other-ca.crt --key other-ca.key
is "mutual TLS with a certificate of another CA: one line" "$(tls_lines othercert)" 1
ok "mutual TLS with a certificate of another CA: says it may be refused" grep -q 'may have refused our --cert' "$TMP/othercert.err"
is "mutual TLS with a certificate of another CA: no call" "$(wc -l < mutual.rec)" 0

agent mtls --oap "localhost:$PORT_mutual" --ca test-ca.crt --cert agent.crt --key agent.key
is "mutual TLS: exits 0" "$AP_RC" 0
is "mutual TLS: registered" "$(calls reportProcesses mutual.rec)" 1
is "mutual TLS: the server saw our certificate" "$(awk '$1 == "reportProcesses" { print $2 }' mutual.rec)" agent
is "mutual TLS: no TLS failure" "$(tls_lines mtls)" 0

# --- bad TLS files: one line at start ---
# bad NAME STATUS ERE ARGS...: the run exits STATUS with one stderr line matching ERE
bad() {
	local name=$1 status=$2 re=$3
	shift 3
	run_ap "$name" run --pid $$ -d 1 --oap "localhost:$PORT_good" "$@"
	is "$name: exit status" "$AP_RC" "$status"
	is "$name: one line" "$(wc -l < "$TMP/$name.err")" 1
	ok "$name: says why" grep -Eq -- "$re" "$TMP/$name.err"
}
echo "not a certificate" > junk.pem
bad "missing --ca" 2 '^aperture: .*--ca /nonexistent.pem: No such file' --ca /nonexistent.pem
bad "--cert without --key" 2 '--cert and --key go together' --cert agent.crt
bad "--ca not a certificate" 1 '--ca junk.pem: ' --ca junk.pem
bad "--key of another certificate" 1 '--key server.key is not the key of --cert agent.crt' \
	--ca test-ca.crt --cert agent.crt --key server.key
done_testing
