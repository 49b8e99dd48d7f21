#!/usr/bin/env bash
# The symbolizer (user/symbolize/symbolize.c) through its test driver tests/build/symtest:
# PIE, shared library, minidebuginfo, debuglink, no symbols, deleted binary,
# JIT perf map, kernel, unknown addresses; names still right after the
# process exited; valgrind-clean when valgrind is installed.
. "$(dirname "$0")/../lib.sh"

SYMTEST="$WL/symtest"
[ -x "$SYMTEST" ] || skip_all "$SYMTEST not built (make -C tests)"
for f in apsym_pie apsym_lib apsym_mini apsym_nosym apsym_dlink apsym_jit sym/nosym.full; do
	[ -e "$WL/$f" ] || skip_all "$WL/$f not built (make -C tests)"
done

# field LINE KEY: the value of KEY=... in a tab-separated symtest line
field() { printf '%s\n' "$1" | tr '\t' '\n' | sed -n "s/^$2=//p"; }
# hex_add HEX N: HEX + N, in 0x-hex
hex_add() { printf '0x%x' $(( $1 + $2 )); }
# nm_addr FILE SYMBOL: link-time address of SYMBOL, 0x-hex
nm_addr() { nm "$1" | awk -v s="$2" '$3 == s { print "0x" $1; exit }'; }

# reap PID: makes sure a fixture is gone
reap() { kill -9 "$1" 2>/dev/null; }

# start NAME BINARY: runs a fixture, sets PID and ADDR (its hot function) or fails
start() {
	local out="$TMP/$1.out" i
	bg "$2" > "$out"
	PID=$BG_PID ADDR=
	disown "$PID"	# symtest kills some: no "Killed" notices from the shell
	for i in $(seq 100); do
		ADDR=$(head -n1 "$out" 2>/dev/null)
		[ -n "$ADDR" ] && return 0
		sleep 0.05
	done
	return 1
}

# --- (1) PIE: named while alive, and from the kept state after it exited
start pie "$WL/apsym_pie" || fail "apsym_pie started"
A=$(hex_add "$ADDR" 4)
out=$("$SYMTEST" track "$PID" user "$PID" "$A" user "$PID" 0x10 kill "$PID" user "$PID" "$A" mappings)
live=$(printf '%s\n' "$out" | grep '^user' | sed -n 1p)
is "PIE: function name" "$(field "$live" name)" apsym_pie_hot
is "PIE: offset in function" "$(field "$live" foff)" 0x4
is "PIE: module offset is the link-time address" "$(field "$live" modoff)" \
	"$(hex_add "$(nm_addr "$WL/apsym_pie" apsym_pie_hot)" 4)"
is "PIE: mapping name" "$(field "$live" map)" apsym_pie
is "address in no mapping" "$(field "$(printf '%s\n' "$out" | grep '^user' | sed -n 2p)" name)" "[unknown]"
is "PIE: killed" "$(printf '%s\n' "$out" | grep '^kill' | sed 's/.*rc=//')" 0
reap "$PID"
dead=$(printf '%s\n' "$out" | grep '^user' | sed -n 3p)
is "PIE: still named after the process exited" "$(field "$dead" name)" apsym_pie_hot
want_id=$(readelf -n "$WL/apsym_pie" | awk '/Build ID/ { print $3 }')
got_id=$(printf '%s\n' "$out" | grep '^mapping' | grep -P '\tname=apsym_pie\t' | head -n1)
is "PIE: mapping build id" "$(field "$got_id" build_id)" "$want_id"
ids=$(printf '%s\n' "$out" | awk '/^mapping/ { print $2 }' | tr '\n' ' ')
is "mapping ids run 1..n" "$ids" "$(seq -s ' ' 1 "$(printf '%s\n' "$out" | grep -c '^mapping')") "

# --- (2) shared library linked at a non-zero base
start lib "$WL/apsym_lib" || fail "apsym_lib started"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)")
is "shared library: function name" "$(field "$line" name)" apsym_lib_spin
is "shared library: mapping" "$(field "$line" map)" libapsym.so
is "shared library: module offset through PT_LOAD" "$(field "$line" modoff)" \
	"$(hex_add "$(nm_addr "$WL/libapsym.so" apsym_lib_spin)" 4)"

# --- (3) stripped, named from .gnu_debugdata
start mini "$WL/apsym_mini" || fail "apsym_mini started"
ok "minidebuginfo fixture has no .symtab" bash -c "! readelf -S '$WL/apsym_mini' | grep -q '\.symtab'"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)")
is "minidebuginfo: function name" "$(field "$line" name)" apsym_mini_hot

# --- (3b) the same file, its .gnu_debugdata claiming a 4 GiB LZMA2 dictionary
# (tests/tools/xz_bigdict.py): the decoder's memory is bounded, the section
# refused (said, counted), not obeyed.  (Without the bound it was decoded and named.)
objcopy --dump-section .gnu_debugdata="$TMP/mini.xz" "$WL/apsym_mini" "$TMP/mini.copy"	# an output: in place is a running file
python3 "$(dirname "$0")/../tools/xz_bigdict.py" "$TMP/mini.xz" "$TMP/bigdict.xz"
objcopy --update-section .gnu_debugdata="$TMP/bigdict.xz" "$WL/apsym_mini" "$TMP/apsym_bigdict"
ok "the patched stream claims 4 GiB" sh -c "xz -lvv '$TMP/bigdict.xz' | grep -q 'Memory needed: *4097 MiB'"
start bigdict "$TMP/apsym_bigdict" || fail "apsym_bigdict started"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)" 2>"$TMP/bigdict.err")
name=$(field "$line" name)
ok "4 GiB dictionary: not named from .gnu_debugdata (got $name)" test "$name" != apsym_mini_hot
ok "4 GiB dictionary: refused, said once" \
	test "$(grep -c 'gnu_debugdata needs more than [0-9]* MiB to inflate: refused' "$TMP/bigdict.err")" = 1
reap "$PID"

# --- stripped, named from the file .gnu_debuglink points to
start dlink "$WL/apsym_dlink" || fail "apsym_dlink started"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)")
is "debuglink: function name" "$(field "$line" name)" apsym_dlink_hot

# --- a file with no symbols at all: module+0xSTART, the function's start from
# its .eh_frame FDE, for every address in it (one frame per function)
start nosym "$WL/apsym_nosym" || fail "apsym_nosym started"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)")
is "no symbols: module+function start" "$(field "$line" name)" \
	"apsym_nosym+$(hex_add "$(nm_addr "$WL/sym/nosym.full" apsym_nosym_hot)" 0)"
line=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 9)")
is "no symbols: another address in it, the same name" "$(field "$line" name)" \
	"apsym_nosym+$(hex_add "$(nm_addr "$WL/sym/nosym.full" apsym_nosym_hot)" 0)"

# --- (4) deleted while running: named live, and after exit from the fd kept at track time
cp "$WL/apsym_pie" "$TMP/apsym_deleted"
start deleted "$TMP/apsym_deleted" || fail "apsym_deleted started"
rm -f "$TMP/apsym_deleted"
A=$(hex_add "$ADDR" 4)
line=$("$SYMTEST" user "$PID" "$A")
is "deleted binary: function name" "$(field "$line" name)" apsym_pie_hot
is "deleted binary: mapping name" "$(field "$line" map)" apsym_deleted
line=$("$SYMTEST" track "$PID" kill "$PID" user "$PID" "$A" | grep '^user')
reap "$PID"
is "deleted binary, tracked then exited: function name" "$(field "$line" name)" apsym_pie_hot

# --- JIT: anonymous executable memory named by /tmp/perf-PID.map
start jit "$WL/apsym_jit" || fail "apsym_jit started"
jit_pid=$PID
out=$("$SYMTEST" user "$PID" "$(hex_add "$ADDR" 4)" user "$PID" "$(hex_add "$ADDR" 0x104)" user "$PID" "$(hex_add "$ADDR" 0x200)")
is "JIT: function name" "$(field "$(printf '%s\n' "$out" | sed -n 1p)" name)" apsym_jit_fn
is "JIT: second function" "$(field "$(printf '%s\n' "$out" | sed -n 2p)" name)" apsym_jit_other
is "JIT: no symbol" "$(field "$(printf '%s\n' "$out" | sed -n 3p)" name)" "[anon]+0x200"
reap "$jit_pid"
rm -f "/tmp/perf-$jit_pid.map"

# --- kernel: named by the kernel (%pS in bpf/ksym.bpf.c, run by BPF_PROG_TEST_RUN) where doctor
#     says ksym_names works, and from the /proc/kallsyms table (SYMTEST_KALLSYMS=1) everywhere
ksym_names=0
have_feature ksym_names && ksym_names=1
ksched=$(awk '$3 == "schedule" { print "0x" $1; exit }' /proc/kallsyms)
modes="table"
[ "$ksym_names" = 1 ] && modes="kernel table"
[ "$ksym_names" = 1 ] || skip "kernel names asked of the kernel" "$(feature_why ksym_names)"
for mode in $modes; do
	export SYMTEST_KALLSYMS=0
	[ "$mode" = table ] && SYMTEST_KALLSYMS=1
	if [ -z "$ksched" ] || [ "$ksched" = 0x0000000000000000 ]; then
		diag "no kernel addresses in /proc/kallsyms"
		fail "$mode: kernel: schedule"
	else
		line=$("$SYMTEST" kernel "$(hex_add "$ksched" 4)")
		is "$mode: kernel: schedule" "$(field "$line" name)" schedule
		is "$mode: kernel: offset" "$(field "$line" foff)" 0x4
		is "$mode: kernel: mapping" "$(field "$line" map)" "[kernel.kallsyms]"
	fi
	is "$mode: kernel: address below the kernel" "$(field "$("$SYMTEST" kernel 0x1000)" name)" "[unknown]"
done
unset SYMTEST_KALLSYMS

# Every 7th text symbol of /proc/kallsyms (~17000 here, modules and BPF programs included), at
# its start and one byte in, named as one stack: each name is one of the symbols /proc/kallsyms
# lists at that address (the kernel picks its own among aliases, the table "global first"), the
# offsets 0 and 1; none is left unnamed but where /proc/kallsyms' symbol has no size (the end
# markers _etext, _einittext: the kernel says no symbol covers them).  Asked in batches of 32.
# knames_check NAMES: "WRONG UNNAMED" for symtest's "kernels" lines in NAMES against $TMP/ktext
# (/proc/kallsyms' text symbols): names not among the symbols at their address or with the wrong
# offset, and unnamed ones other than the end markers; the first wrong ones in $TMP/kwrong.
knames_check() {
	/usr/bin/python3 - "$TMP/ktext" "$1" 2>"$TMP/kwrong" <<'PY'
import collections, sys
names = collections.defaultdict(set)
for line in open(sys.argv[1]):
    addr, name = line.split()
    names[int(addr, 16)].add(name)
bad = other = 0
for line in open(sys.argv[2]):
    if not line.startswith("kernel "):
        continue
    f = line.rstrip("\n").split("\t")
    addr = int(f[0].split()[1], 16)
    name, off = f[1][len("name="):], f[3][len("foff="):]
    base, want = (addr, "0x0") if addr in names else (addr - 1, "0x1")
    if name.startswith("[kernel.kallsyms]+"):
        other += not (names[base] & {"_etext", "_einittext"})
    elif name not in names[base] or off != want:
        bad += 1
        print("wrong", line.strip(), sorted(names[base]), file=sys.stderr)
print(bad, other)
PY
}
if [ "$ksym_names" = 1 ] && [ -n "$ksched" ] && [ "$ksched" != 0x0000000000000000 ]; then
	awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' /proc/kallsyms > "$TMP/ktext"
	awk 'NR % 7 == 0 { print $1 }' "$TMP/ktext" | sort -u > "$TMP/kstarts"
	python3 -c 'import sys
for l in open(sys.argv[1]): print("%x" % int(l, 16)); print("%x" % (int(l, 16) + 1))' "$TMP/kstarts" > "$TMP/kaddrs"
	"$SYMTEST" kernels "$TMP/kaddrs" > "$TMP/knames"
	total=$(wc -l < "$TMP/kaddrs")
	read -r wrong unnamed_other <<<"$(knames_check "$TMP/knames")"
	[ -s "$TMP/kwrong" ] && diag "$(head -3 "$TMP/kwrong")"
	is "kernel names of $total addresses: each one of the symbols at its address, offset right" "$wrong" 0
	is "  none unnamed but the end markers" "$unnamed_other" 0
	summary=$(tail -1 "$TMP/knames")
	is "  asked once each, 32 a run" "$summary" \
		"asked $total runs $(( (total + 31) / 32 )) unnamed $(grep -c 'name=\[kernel' "$TMP/knames") from_kernel 1"
	line=$(SYMTEST_KALLSYMS=1 "$SYMTEST" kernels "$TMP/kaddrs" | tail -1)
	is "  the table asks nothing of the kernel" "$line" "asked 0 runs 0 unnamed 0 from_kernel 0"
	# A kernel that loads the program and refuses its runs later (a test hook refuses the runs after
	# the second: its first is the trial at start): the table names the rest, none is left unnamed.
	APERTURE_TEST_KSYM_RUNS=2 "$SYMTEST" kernels "$TMP/kaddrs" > "$TMP/knames2"
	is "namer refused after one batch: every name still right, none unnamed (the table)" \
		"$(knames_check "$TMP/knames2")" "0 0"
	is "  32 asked of the kernel, then none" "$(tail -1 "$TMP/knames2")" "asked 32 runs 1 unnamed 0 from_kernel 0"
fi

# --- bounded: over the limit the tables go and come back on demand; an exited process
#     is forgotten at the second trim after it exited (its samples are drained by then)
start bounded "$WL/apsym_lib" || fail "apsym_lib started"
A=$(hex_add "$ADDR" 4)
out=$("$SYMTEST" track "$PID" user "$PID" "$A" limit 1 trim limit 67108864 user "$PID" "$A" trim \
	kill "$PID" trim trim)
reap "$PID"
trims() { printf '%s\n' "$out" | grep '^trim' | sed -n "$1p"; }
ge "over the limit: the symbol tables are dropped" "$(field "$(trims 1 | tr ' ' '\t')" tables_unloaded)" 1
is "  the frame is named again afterwards" "$(field "$(printf '%s\n' "$out" | grep '^user' | sed -n 2p)" name)" apsym_lib_spin
is "  under the limit, the live process is kept" "$(field "$(trims 2 | tr ' ' '\t')" procs)" 1
is "exited: kept at the first trim" "$(field "$(trims 3 | tr ' ' '\t')" procs)" 1
is "  forgotten at the second" "$(field "$(trims 4 | tr ' ' '\t')" procs)" 0
# A zombie, exited but never reaped (its parent only sleeps): kill(pid, 0) still finds it, yet its
# maps are empty; it is forgotten as any exited process is.
bg bash -c '"$1" > "$2" & echo "$!" > "$3"; exec sleep 600' _ "$WL/apsym_lib" "$TMP/zombie.out" "$TMP/zombie.pid"
keeper=$BG_PID
disown "$keeper"
for i in $(seq 100); do [ -s "$TMP/zombie.out" ] && break; sleep 0.05; done
zpid=$(cat "$TMP/zombie.pid" 2>/dev/null)
out=$("$SYMTEST" track "${zpid:-0}" user "${zpid:-0}" "$(hex_add "$(head -n1 "$TMP/zombie.out")" 4)" kill "${zpid:-0}" trim trim)
is "zombie: named while it ran" "$(field "$(printf '%s\n' "$out" | grep '^user')" name)" apsym_lib_spin
is "zombie: in /proc as one" "$(awk '{ print $3 }' "/proc/${zpid:-0}/stat" 2>/dev/null)" Z
is "  forgotten at the second trim" "$(field "$(trims 2 | tr ' ' '\t')" procs)" 0
reap "$keeper"
# A process whose main thread ends (pthread_exit, 500 ms after its start) while another runs on:
# tracked before, its stat says Z after (the leader's state), but it lives; kept.
bg "$WL/leaderexit" 60 500
lead=$BG_PID
disown "$lead"
out=$("$SYMTEST" track "$lead" untilz "$lead" trim trim)
is "main thread ended, another runs: tracked, then in /proc as Z with 2 threads" \
	"$(printf '%s\n' "$out" | grep -c 'rc=0$') $(awk '{ sub(/^.*\) /, ""); print $1, $18 }' "/proc/$lead/stat" 2>/dev/null)" "2 Z 2"
is "  kept at the second trim" "$(field "$(trims 2 | tr ' ' '\t')" procs)" 1
reap "$lead"

# --- memory by holder (the stats line's "memory KiB: symbol files .., kallsyms .."): what the
# symbolizer counts for a table grows by what the allocator hands out for it (mallinfo2), within 5%
# (kallsyms, 6 MB here) and 10% (libc's .dynsym, 300 KB: libelf's own blocks come and go with it).
# mem_field LINE KEY: KEY=N of a "memory heap=N files=N ..." line
mem_field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# within WHAT COUNTED_BEFORE COUNTED_AFTER HEAP_BEFORE HEAP_AFTER PERCENT
within() {
	local counted=$(($3 - $2)) heap=$(($5 - $4))
	diag "$1: counted $counted bytes, the heap grew $heap"
	ok "$1: counted within $6% of the heap's growth" \
		test "$heap" -gt 0 -a $((100 * (counted > heap ? counted - heap : heap - counted))) -le $(($6 * heap))
}
if [ -n "$ksched" ]; then
	out=$(SYMTEST_KALLSYMS=1 "$SYMTEST" memory kernel "$ksched" memory)
	m1=$(printf '%s\n' "$out" | grep '^memory' | sed -n 1p) m2=$(printf '%s\n' "$out" | grep '^memory' | sed -n 2p)
	within "kallsyms" "$(mem_field "$m1" kernel)" "$(mem_field "$m2" kernel)" \
		"$(mem_field "$m1" heap)" "$(mem_field "$m2" heap)" 5
else
	fail "kallsyms: counted" "no kernel addresses in /proc/kallsyms"
fi
start memlib "$WL/apsym_lib" || fail "apsym_lib started"
libc=$(awk '/\/libc[.-]/ && $2 ~ /x/ { split($1, r, "-"); print "0x" r[1]; exit }' "/proc/$PID/maps")
out=$("$SYMTEST" track "$PID" memory user "$PID" "$(hex_add "${libc:-0}" 4096)" memory)
reap "$PID"
m1=$(printf '%s\n' "$out" | grep '^memory' | sed -n 1p) m2=$(printf '%s\n' "$out" | grep '^memory' | sed -n 2p)
within "libc's symbol table" $(($(mem_field "$m1" files) + $(mem_field "$m1" names))) \
	$(($(mem_field "$m2" files) + $(mem_field "$m2" names))) "$(mem_field "$m1" heap)" "$(mem_field "$m2" heap)" 10

# --- memory: every allocation freed, no invalid access
if command -v valgrind >/dev/null; then
	# libbpf.supp: valgrind's own gaps in the bpf() syscall (the kernel names' load), nothing else.
	vg() {
		valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite,indirect,possible --suppressions="$TOP/tests/unit/libbpf.supp" \
			--show-leak-kinds=definite,indirect,possible "$SYMTEST" "$@" > "$TMP/vg.out" 2> "$TMP/vg.err"
		local rc=$?
		# its reports as diagnostics; its "--PID-- WARNING: unhandled eBPF command" lines dropped
		grep -v '^--[0-9]*--' "$TMP/vg.err" | head -40 | sed 's/^/# /'
		return $rc
	}
	if [ "$ksym_names" = 1 ]; then
		printf '%s\n' "$(hex_add "${ksched:-0}" 1)" "$(hex_add "${ksched:-0}" 2)" > "$TMP/vgk"
		ok "valgrind: clean, kernel names asked of the kernel" vg kernel "${ksched:-0}" kernels "$TMP/vgk" \
			trim kernel "${ksched:-0}"
		is "  named after a trim" "$(field "$(grep '^kernel' "$TMP/vg.out" | tail -n1)" name)" schedule
	fi
	start vg "$WL/apsym_lib" || fail "apsym_lib started"
	A=$(hex_add "$ADDR" 4)
	SYMTEST_KALLSYMS=1 ok "valgrind: clean" vg track "$PID" user "$PID" "$A" kernel "${ksched:-0}" \
		user "$PID" 0x10 limit 1 trim limit 67108864 user "$PID" "$A" trim \
		kill "$PID" user "$PID" "$A" mappings
	reap "$PID"
	is "valgrind run: named after exit" "$(field "$(grep '^user' "$TMP/vg.out" | tail -n1)" name)" apsym_lib_spin
else
	# valgrind is a test dependency (tools/deps.sh, make deps): without it the memory check cannot run.
	fail "valgrind: clean" "valgrind is not installed: make deps (valgrind)"
fi

done_testing
