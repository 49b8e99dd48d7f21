#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The raw event stream (user/export/bincode.c, user/cmd/events.c) through
# tests/unit/events_test.c: the seed's ProfileEvent in bincode's fixint LE
# layout checked against bytes computed by hand (not by our encoder), a round
# trip of every kind, `aperture events` as JSON and summary, and truncated,
# corrupt and random files through the decoder under AddressSanitizer.
. "$(dirname "$0")/../lib.sh"

ET="$WL/events_test"
ASAN="$WL/events_test_asan"
[ -x "$ET" ] && [ -x "$ASAN" ] || { plan 1; fail "events_test and events_test_asan are built (make -C tests)"; done_testing; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=98

# --- the layout, independently of the encoder
hex=$("$ET" hex-syscall)
is "seed's Syscall example: tag 2 in bytes 0..3" "${hex:0:8}" "02000000"
is "seed's Syscall example: syscall_id 198 in bytes 20..23" "${hex:40:8}" "c6000000"
is "seed's Syscall example: the whole record" "$hex" \
"02000000""8877665544332211""11111111""22222222""c6000000""e803000000000000""0000000000000000"\
"0400000000000000""74657374"
# CpuSample { timestamp 0x0102030405060708, pid 1000, tid 1001, cpu_id 3,
# user_stack [0x400000, 0x400100], kernel_stack [], comm "test",
# user_stack_symbols [Some("main"), None], kernel_stack_symbols [] }
want_cpu="00000000"			# variant tag 0: CpuSample
want_cpu+="0807060504030201"		# timestamp u64 LE
want_cpu+="e8030000""e9030000"		# pid 1000, tid 1001 (i32)
want_cpu+="03000000"			# cpu_id u32
want_cpu+="0200000000000000"		# user_stack: 2 items
want_cpu+="0000400000000000""0001400000000000"
want_cpu+="0000000000000000"		# kernel_stack: none
want_cpu+="0400000000000000""74657374"	# comm "test"
want_cpu+="0200000000000000"		# user_stack_symbols: 2 items
want_cpu+="01""0400000000000000""6d61696e"	# Some("main")
want_cpu+="00"				# None
want_cpu+="0000000000000000"		# kernel_stack_symbols: none
is "CpuSample with two frames and one symbol, byte for byte" "$("$ET" hex-cpu)" "$want_cpu"
"$ET" write-cpu "$TMP/cpu.bin"
is "pe_write: the CpuSample is one record, its length prefix (98, counted by hand above) then those bytes" \
	"$(od -An -tu4 -N4 "$TMP/cpu.bin" | tr -d ' ') $(tail -c +5 "$TMP/cpu.bin" | od -An -tx1 -v | tr -d ' \n')" "98 $want_cpu"

# --- every kind, written, read back, encoded again
F="$TMP/all.bin"
ok "write one record of every kind" "$ET" write-all "$F"
is "file is the length-prefixed records (5 records, 484 bytes)" "$(stat -c %s "$F")" 484
is "first length prefix is the CpuSample's body length" "$(od -An -tu4 -N4 "$F" | tr -d ' ')" 131
is "round trip: every record re-encodes to the same bytes" "$("$ET" roundtrip "$F")" "5 records, 0 differ"
"$ET" events "$F" >"$TMP/all.json" 2>"$TMP/err"
is "aperture events: exit 0, nothing on stderr" "$?:$(cat "$TMP/err")" "0:"
is "aperture events --json: one object per line, the seed's field names" "$(cat "$TMP/all.json")" \
'{"CpuSample":{"timestamp":72623859790382856,"pid":1000,"tid":1001,"cpu_id":3,"user_stack":[4194304,4194560],"kernel_stack":[18446744071578845200],"comm":"cpuburn","user_stack_symbols":["main",null],"kernel_stack_symbols":["do_syscall_64"]}}
{"CpuSample":{"timestamp":1,"pid":-1,"tid":0,"cpu_id":0,"user_stack":[],"kernel_stack":[],"comm":"","user_stack_symbols":[],"kernel_stack_symbols":[]}}
{"Lock":{"timestamp":42,"pid":77,"tid":78,"lock_addr":3735928559,"hold_time_ns":0,"wait_time_ns":123456789,"stack_trace":[139637976732212,4198400,4198656],"comm":"lock\u0009burn","stack_symbols":[null,"worker \"quoted\"\\","été"]}}
{"Syscall":{"timestamp":18446744073709551615,"pid":5,"tid":6,"syscall_id":230,"duration_ns":20000000,"return_value":-9223372036854775808,"comm":"sysburn"}}
{"GpuKernel":{"timestamp":7,"pid":2147483647,"kernel_name":"vector_add<float>","duration_ns":1500,"grid_size":[4294967295,2,1],"block_size":[256,1,1]}}'
if [ -x /usr/bin/python3 ]; then
	is "every line is JSON (python's json)" "$(/usr/bin/python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)))' "$TMP/all.json")" 5
fi
"$ET" events --summary "$F" >"$TMP/sum" 2>"$TMP/err"
is "aperture events --summary: per kind and per pid, busiest first" "$?:$(cat "$TMP/sum")" "0:records 5
kind CpuSample 2
kind Lock 1
kind Syscall 1
kind GpuKernel 1
pid -1 total 1 CpuSample=1 comm=
pid 5 total 1 Syscall=1 comm=sysburn
pid 77 total 1 Lock=1 comm=lock	burn
pid 1000 total 1 CpuSample=1 comm=cpuburn
pid 2147483647 total 1 GpuKernel=1 comm="
: >"$TMP/empty"
is "an empty file is zero records" "$("$ET" events --summary "$TMP/empty" | head -1)" "records 0"

# --- truncated and corrupt files: one line, the byte offset, the records before it
# errline NAME FILE: aperture events' stderr (and its exit status) for FILE, under ASan
errline() { "$ASAN" events "$2" >"$TMP/$1.out" 2>"$TMP/$1.err"; echo "$?:$(cat "$TMP/$1.err")"; }
head -c 137 "$F" >"$TMP/cut1"		# 135 = first record; 2 bytes of the next prefix
is "truncated length prefix" "$(errline cut1 "$TMP/cut1")" \
	"1:aperture: events: $TMP/cut1: truncated record at byte 135: 2 of the 4 length bytes; 1 records decoded before it"
head -c 180 "$F" >"$TMP/cut2"
is "truncated body (never read past it)" "$(errline cut2 "$TMP/cut2")" \
	"1:aperture: events: $TMP/cut2: truncated record at byte 135: its length says 64 bytes, 41 follow; 1 records decoded before it"
is "records before the truncation are still printed" "$(wc -l <"$TMP/cut2.out")" 1
cp "$F" "$TMP/tag"; printf '\x09' | dd of="$TMP/tag" bs=1 seek=139 conv=notrunc status=none
is "unknown variant tag" "$(errline tag "$TMP/tag")" \
	"1:aperture: events: $TMP/tag: corrupt record at byte 135 (64 bytes): unknown variant tag 9; 1 records decoded before it"
cp "$F" "$TMP/len"; printf '\xff\xff\xff\x7f' | dd of="$TMP/len" bs=1 seek=135 conv=notrunc status=none
is "absurd length prefix" "$(errline len "$TMP/len")" \
	"1:aperture: events: $TMP/len: corrupt record at byte 135: length 2147483647 is out of range (4..16777216); 1 records decoded before it" 
# user_stack count of the first record (body byte 24) = 2^62: must not allocate nor read past the record
cp "$F" "$TMP/vec"; printf '\x00\x00\x00\x00\x00\x00\x00\x40' | dd of="$TMP/vec" bs=1 seek=28 conv=notrunc status=none
is "huge vector count" "$(errline vec "$TMP/vec")" \
	"1:aperture: events: $TMP/vec: corrupt record at byte 0 (131 bytes): user_stack: 4611686018427387904 items at record byte 32, the record has 99 bytes left; 0 records decoded before it"
# a record with a byte too many: its length says one more than its fields take
{ printf '\x35\x00\x00\x00'; "$ET" hex-syscall | xxd -r -p; printf '\x00'; } >"$TMP/extra"
is "bytes left over inside a record" "$(errline extra "$TMP/extra")" \
	"1:aperture: events: $TMP/extra: corrupt record at byte 0 (53 bytes): 1 bytes left over after the Syscall; 0 records decoded before it"
{ printf '\x34\x00\x00\x00'; "$ET" hex-syscall | xxd -r -p; } >"$TMP/seed.bin"
is "the seed's Syscall as a file decodes" "$(errline seed "$TMP/seed.bin"; cat "$TMP/seed.out")" \
	'0:
{"Syscall":{"timestamp":1234605616436508552,"pid":286331153,"tid":572662306,"syscall_id":198,"duration_ns":1000,"return_value":0,"comm":"test"}}'
cp "$F" "$TMP/utf"; printf '\xff' | dd of="$TMP/utf" bs=1 seek=$((4 + 72)) conv=notrunc status=none
is "invalid UTF-8 in a String" "$(errline utf "$TMP/utf")" \
	"1:aperture: events: $TMP/utf: corrupt record at byte 0 (131 bytes): comm is not UTF-8 (record byte 72); 0 records decoded before it"
is "a missing file" "$("$ET" events "$TMP/nope" 2>&1; echo "rc=$?")" \
	"aperture: events: $TMP/nope: No such file or directory
rc=1"

# --- under ASan/UBSan: every truncation, mutated copies, random bytes
"$ASAN" fuzz "$F" 3000 $$ >"$TMP/fuzz" 2>"$TMP/fuzz.err"
is "ASan: fuzzing exits 0 with nothing on stderr" "$?:$(head -c 2000 "$TMP/fuzz.err")" "0:"
is "ASan: every truncation but those at record boundaries is an error" \
	"$(head -1 "$TMP/fuzz")" "truncations 484 errors 479 clean 5"
ge "ASan: mutated files mostly caught" "$(awk '/^mutations/ { print $4 }' "$TMP/fuzz")" 1000
for i in 1 2 3 4 5; do head -c $((RANDOM * 4)) /dev/urandom >"$TMP/rand$i"; done
rc=0; for i in 1 2 3 4 5; do "$ASAN" events --summary "$TMP/rand$i" >/dev/null 2>"$TMP/rand.err"; r=$?
	{ [ $r = 0 ] || [ $r = 1 ]; } || rc=$r; grep -q 'ERROR: AddressSanitizer\|runtime error' "$TMP/rand.err" && rc=97; done
is "ASan: random files through aperture events end in 0 or 1, no sanitizer report" "$rc" 0
done_testing
