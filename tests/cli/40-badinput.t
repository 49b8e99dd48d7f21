#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad input: one "aperture: " line on stderr and exit status 2; --help, --version.
. "$(dirname "$0")/../lib.sh"
require_aperture

# bad NAME WANT_RC ARGS...: aperture ARGS exits WANT_RC with one error line
bad() {
	local name=$1 want=$2 lines
	shift 2
	run_ap bad "$@"
	is "$name: exit status" "$AP_RC" "$want"
	lines=$(wc -l <"$TMP/bad.err")
	is "$name: one line on stderr" "$lines" 1
	ok "$name: it starts with 'aperture: '" grep -q '^aperture: ' "$TMP/bad.err"
	[ "$lines" = 1 ] || show_err bad
}

bad "unknown flag" 2 record --no-such-flag
bad "unknown command" 2 no-such-command
bad "-F 0" 2 record -F 0 -d 1 -o "$TMP/x.folded"
bad "-F abc" 2 record -F abc -d 1 -o "$TMP/x.folded"
bad "-d abc" 2 record -d abc -o "$TMP/x.folded"
bad "-p 999999 (no such process)" 2 record -p 999999 -d 1 -o "$TMP/x.folded"
bad "-p abc" 2 record -p abc -d 1 -o "$TMP/x.folded"
bad "--cgroup /tmp (not cgroup v2)" 2 record --cgroup /tmp -d 1 -o "$TMP/x.folded"
bad "--cgroup missing" 2 record --cgroup /sys/fs/cgroup/unified/no-such-cgroup -d 1 -o "$TMP/x.folded"
bad "-o in a missing directory" 2 record -d 1 -o /nonexistent/dir/x.folded
bad "--format bogus" 2 record -d 1 --format bogus -o "$TMP/x.folded"
bad "-o with an unknown suffix" 2 record -d 1 -o "$TMP/x.unknownsuffix"
bad "--state bogus" 2 record --offcpu --state bogus -d 1 -o "$TMP/x.folded"
bad "--weight bogus" 2 record --offcpu --weight bogus -d 1 -o "$TMP/x.folded"
bad "--min-block-us abc" 2 record --offcpu --min-block-us abc -d 1 -o "$TMP/x.folded"
# getopt_long would take a unique prefix: --offcp for --offcpu, --gpu for run --oap's --gpu-events.
bad "an abbreviated long option" 2 record --offcp -d 1 -o "$TMP/x.folded"
bad "run --oap --gpu (no GPU task type; not --gpu-events)" 2 run --oap 127.0.0.1:1 --gpu -p 1
bad "an abbreviated daemon option" 2 run --pin /sys/fs/bpf/aperture_none_$$ --interv 5
ok "no output file left behind" test ! -e "$TMP/x.folded"

# A command that cannot run is a runtime failure (exit 1), not an empty profile.
run_ap nocmd record -d 5 -o "$TMP/nocmd.folded" -- /nonexistent/cmd
ok "-- /nonexistent/cmd: exits non-zero (got $AP_RC)" test "$AP_RC" -ne 0
ok "-- /nonexistent/cmd: says why" grep -q '^aperture: .*/nonexistent/cmd' "$TMP/nocmd.err"

# Without root (and without CAP_BPF + CAP_PERFMON): one line, exit 1.
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$APERTURE" record -d 1 --format folded -o /dev/null >"$TMP/nr.out" 2>"$TMP/nr.err"
	is "not root: exit status 1" "$?" 1
	is "not root: one line on stderr" "$(wc -l < "$TMP/nr.err")" 1
	ok "not root: says what is needed" grep -q '^aperture: needs root, or CAP_BPF and CAP_PERFMON' "$TMP/nr.err"
	run_ap badrun run --bogus
	is "run --bogus: exit status 2" "$AP_RC" 2
fi

run_ap help --help
is "--help: exit status 0" "$AP_RC" 0
ok "--help: prints usage" grep -qi 'usage' "$TMP/help.out"
ok "--help: mentions record" grep -q 'record' "$TMP/help.out"
run_ap rhelp record --help
is "record --help: exit status 0" "$AP_RC" 0
ok "record --help: lists --offcpu" grep -q -- '--offcpu' "$TMP/rhelp.out"
run_ap version --version
is "--version: exit status 0" "$AP_RC" 0
ok "--version: prints a version" grep -qE '[0-9]+\.[0-9]+\.[0-9]+' "$TMP/version.out"

done_testing
