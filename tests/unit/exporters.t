#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The output formats on a hand-made profile (tests/unit/export_test.c):
# pprof read back by an independent decoder (protobuf-c) and by go tool pprof,
# folded stacks line by line, the SVG flame graph as well-formed XML.
. "$(dirname "$0")/../lib.sh"

ET="$WL/export_test"
DEC="$WL/pprof_decode"
[ -x "$ET" ] && [ -x "$DEC" ] || { plan 1; fail "export_test and pprof_decode are built (make -C tests)"; done_testing; }

# --- the format table
names=$("$ET" names)
is "exporter_names starts with the three built-in formats" "${names%%, svg*}, svg" "pprof, folded, svg"
for case in p.pb.gz:pprof p.pprof:pprof p.pb:pprof p.folded:folded stacks.txt:folded fg.svg:svg \
	    p.json:none profile:none p.gz:none; do
	is "exporter_for_path ${case%%:*}" "$("$ET" for-path "${case%%:*}")" "${case##*:}"
done

# --- pprof
"$ET" write "$TMP/p.pb.gz" 2>"$TMP/err"
is "pprof write succeeds quietly" "$?:$(cat "$TMP/err")" "0:"
"$DEC" "$TMP/p.pb.gz" >"$TMP/dec" 2>"$TMP/err"
is "protobuf-c decodes it and every id and string index resolves" "$?:$(cat "$TMP/err")" "0:"
is "sample count (the zero sample is left out)" "$(grep '^samples ' "$TMP/dec")" "samples 6"
is "samples total" "$(grep '^type samples ' "$TMP/dec")" "type samples count total 51"
is "cpu total" "$(grep '^type cpu ' "$TMP/dec")" "type cpu nanoseconds total 510000000"
is "default sample type" "$(grep '^default ' "$TMP/dec")" "default samples"
is "period" "$(grep '^period ' "$TMP/dec")" "period cpu nanoseconds 10000000"
is "time and duration" "$(grep '^time_nanos ' "$TMP/dec")" "time_nanos 1700000000000000000 duration_nanos 5000000000"
is "stacks, labels and values" "$(grep '^stack ' "$TMP/dec" | sort)" \
"stack comm=app pid=100 thread=101 30,300000000 __libc_start_main;main;hot_loop
stack comm=app pid=100 thread=102 10,100000000 __libc_start_main;main;write;entry_SYSCALL_64;vfs_write;copy_user_generic
stack comm=app pid=100 thread=103 5,50000000 __libc_start_main;main;hot_loop
stack comm=app pid=100 thread=104 1,10000000 __libc_start_main;main;libfoo.so+0x1000
stack comm=my worker;x pid=200 thread=200 2,20000000 [unknown];app+0x1200;ns::weird;name<int, char&>
stack comm=swapper/0 pid=0 thread=0 3,30000000 do_idle;default_idle"
is "mappings: main binary first, kernel last, made-up kernel mapping covers its frames" \
	"$(grep '^mapping ' "$TMP/dec")" \
"mapping 1 /usr/bin/app 0x400000 0x500000 0x0 abcd1234 functions=1
mapping 2 /usr/lib/x86_64-linux-gnu/libc.so.6 0x7f0000000000 0x7f0000200000 0x28000 - functions=1
mapping 3 /nonexistent/libfoo.so 0x7f1000000000 0x7f1000010000 0x0 - functions=1
mapping 4 [kernel.kallsyms] 0xffffffff81000000 0xffffffff82000000 0x0 - functions=1
mapping 5 [kernel.kallsyms] 0xffffffff81500000 0xffffffff81500101 0x0 - functions=1"
# 14 distinct (mapping, address), 13 distinct (name, file): main appears at two addresses
is "deduplicated tables" "$(grep '^counts ' "$TMP/dec")" "counts mappings=5 locations=14 functions=13 strings=29"

if command -v go >/dev/null; then
	export HOME=${HOME:-$TMP}
	pp() { PPROF_BINARY_PATH=/nonexistent go tool pprof -symbolize=none "$@" 2>"$TMP/pperr"; }
	pp -top "$TMP/p.pb.gz" >"$TMP/top"
	is "go tool pprof -top: exit 0, nothing on stderr" "$?:$(cat "$TMP/pperr")" "0:"
	is "go tool pprof: main binary" "$(grep '^File: ' "$TMP/top")" "File: app"
	is "go tool pprof: hottest function first" \
		"$(awk '/flat%/ { getline; print $1, $NF; exit }' "$TMP/top")" "35 hot_loop"
	pp -sample_index=cpu -top "$TMP/p.pb.gz" >"$TMP/topcpu"
	is "go tool pprof -sample_index=cpu" "$?:$(awk '/flat%/ { getline; print $1, $NF; exit }' "$TMP/topcpu")" \
		"0:350ms hot_loop"
	PPROF_BINARY_PATH=/nonexistent go tool pprof -top "$TMP/p.pb.gz" >/dev/null 2>"$TMP/pperr"
	is "go tool pprof (symbolizing on) does not re-symbolize nor warn, /nonexistent/libfoo.so included" \
		"$?:$(cat "$TMP/pperr")" "0:"
	pp -raw "$TMP/p.pb.gz" >"$TMP/raw"
	is "go tool pprof -raw: exit 0, nothing on stderr" "$?:$(cat "$TMP/pperr")" "0:"
	ok "go tool pprof -raw: labels" grep -q 'pid:\[100\] thread:\[101\]' "$TMP/raw"
else
	# golang-go is a test dependency (tools/deps.sh, make deps): without it the pprof checks cannot run.
	fail "go tool pprof reads the profile" "go is not installed: make deps (golang-go)"
fi

# --- folded
"$ET" write "$TMP/p.folded" 2>"$TMP/err"
is "folded write succeeds quietly" "$?:$(cat "$TMP/err")" "0:"
is "folded: merged, sorted, root first, kernel after user, separators replaced" "$(cat "$TMP/p.folded")" \
"app;__libc_start_main;main;hot_loop 35
app;__libc_start_main;main;libfoo.so+0x1000 1
app;__libc_start_main;main;write;entry_SYSCALL_64_[k];vfs_write_[k];copy_user_generic_[k] 10
my_worker_x;[unknown];app+0x1200;ns::weird_name<int,_char&> 2
swapper/0;do_idle_[k];default_idle_[k] 3"
"$ET" write "$TMP/cpu.folded" 1
is "folded by value 1 (cpu ns)" "$(awk '{ s += $NF } END { print NR, s }' "$TMP/cpu.folded")" "5 510000000"
is "folded: leaf share of hot_loop" "$(leaf_share "$TMP/p.folded" hot_loop)" "68.63"

# --- svg
"$ET" write "$TMP/p.svg" 2>"$TMP/err"
is "svg write succeeds quietly" "$?:$(cat "$TMP/err")" "0:"
ok "svg is well-formed XML" xmllint --noout "$TMP/p.svg"
ok "svg has its script" grep -q '<script type="text/ecmascript"><!\[CDATA\[' "$TMP/p.svg"
ok "svg needs nothing from outside" bash -c "! grep -Eq 'https?://[^\"]*\\.(js|css)|<script[^>]*src=' '$TMP/p.svg'"
ok "svg title" grep -q '>On-CPU flame graph<' "$TMP/p.svg"
ok "svg: hot function with its weight" grep -q '<title>hot_loop (35 samples, 68.63%)</title>' "$TMP/p.svg"
ok "svg: kernel frame" grep -q '<title>copy_user_generic (10 samples, 19.61%)</title>' "$TMP/p.svg"
ok "svg: names XML-escaped" grep -q '<title>ns::weird;name&lt;int, char&amp;&gt; (2 samples, 3.92%)</title>' "$TMP/p.svg"
"$ET" write "$TMP/cpu.svg" 1
ok "svg by value 1 shows milliseconds" grep -q '<title>hot_loop (350.00 ms, 68.63%)</title>' "$TMP/cpu.svg"
if command -v node >/dev/null; then
	ok "svg script parses" bash -c "sed -n '/<script/,/]]>/p' '$TMP/p.svg' | sed '1s/.*CDATA\\[//; \$d' >'$TMP/fg.js' && node --check '$TMP/fg.js'"
fi

# --- big profiles: 100000 distinct leaves of one sample each
"$ET" big "$TMP/big.svg" 100000
ok "big svg is well-formed" xmllint --noout "$TMP/big.svg"
size=$(stat -c %s "$TMP/big.svg")
ok "big svg leaves out frames narrower than 0.1 px ($size bytes)" test "$size" -lt 20000
"$ET" big "$TMP/big.pb.gz" 100000
is "big pprof decodes" "$("$DEC" "$TMP/big.pb.gz" | grep -E '^(samples|type samples|counts)')" \
"samples 100000
type samples count total 100000
counts mappings=1 locations=100001 functions=100001 strings=100012"

# --- errors: one line naming the path, non-zero exit
for f in p.pb.gz p.folded p.svg; do
	"$ET" write "$TMP/missing/dir/$f" 2>"$TMP/err"
	rc=$?
	ok "write to a missing directory fails ($f)" test "$rc" -ne 0
	is "one line on stderr naming the path ($f)" "$(wc -l <"$TMP/err"):$(grep -c "$TMP/missing/dir/$f" "$TMP/err")" "1:1"
done
for fmt in pprof folded svg; do
	"$ET" write-as "$fmt" /dev/full 2>"$TMP/err"
	is "full disk fails with one line ($fmt)" "$?:$(cat "$TMP/err")" "1:aperture: cannot write /dev/full: No space left on device"
done
"$ET" write "$TMP/bad.folded" 7 2>"$TMP/err"
is "a value index out of range is refused" "$?:$(wc -l <"$TMP/err")" "1:1"

done_testing
