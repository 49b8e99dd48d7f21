#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An upgrade in place: this build's daemon takes over what an older build
# left pinned.  The older pins are made by this build in their shape: stacks
# and counts preallocated (hash_alloc switched off: builds before b38ce1b made
# them so) and the unwind rows map not mmapable (APERTURE_TEST_ROWS_NOT_MMAPABLE:
# builds before 794d049).  The taker writes its rows by bpf() (one -v line),
# the totals hold every target event the programs counted across both
# daemons, and nofp's chain (no frame pointers: only the DWARF walk finds its
# callers) is whole before and after the takeover.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload nofp
command -v bpftool >/dev/null || skip_all "bpftool missing"
have_feature dwarf_unwind || skip_all "no DWARF unwinding here: $(feature_why dwarf_unwind)"

DIR=/sys/fs/bpf/aperture_upgrade_$$	# bpffs refuses names with dots
unpin_at_exit "$DIR"
FREQ=499	# as tests/pinning/50-pinned.t: a count that follows the CPU time within 1-2%

# start_daemon NAME ARGS: aperture run -v --pin $DIR -F $FREQ --oncpu ARGS (pinned_daemon_start)
start_daemon() { local name=$1; shift; pinned_daemon_start "$name" "$DIR" -v -F $FREQ --oncpu "$@"; }
# map_flags PIN: the flags of the pinned map PIN, as bpftool shows them
map_flags() { bpftool -j map show pinned "$1" 2>/dev/null | grep -o '"flags":[0-9]*' | cut -d: -f2; }
# dump_named: the pinned on-CPU totals, user frames named by function
dump_named() { "$APERTURE" dump --pin "$DIR" --symbolize oncpu 2>/dev/null; }
# whole_share FOLDED: of nofp's samples in spin_until, the percent whose stack is whole (chain_share,
# tests/lib.sh: samples before the process's tables left out; a takeover forgets them, README,
# "Scripting it from the kernel side").  libc's __libc_start_call_main is named only where libc's
# debug symbols are (else libc.so.6+0x...), so its frame is matched by position.
whole_share() {
	chain_share "$1" '^spin_until$' '^nofp;_start;__libc_start_main;[^;]+;main;chain_a;chain_b;chain_c;spin_until$'
}

bg "$WL/nofp" chain 600 >/dev/null; N=$BG_PID

# 1. The older shape, pinned.  nofp is stopped while the daemon starts, so that
#    the CPU time counted from here is all profiled.
kill -STOP "$N"
APERTURE_DISABLE_FEATURES=hash_alloc APERTURE_TEST_ROWS_NOT_MMAPABLE=1 \
	ok "a daemon in the older shape starts" start_daemon old -p "$N"
n0_ns=$(proc_cpu_ns "$N")
kill -CONT "$N"
is "  its stacks map is preallocated (flags 0)" "$(map_flags "$DIR/oncpu_stacks")" 0
is "  its rows map is not mmapable (flags 0)" "$(map_flags "$DIR/unwind_rows")" 0
ok "  it writes its rows by bpf()" grep -q 'rows written by bpf()' "$TMP/old.err"
wait_cpu "$N" 1000000000 60 || diag "nofp did not use 1 s of CPU in 60 s"
kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null
dump_named > "$TMP/before.folded"

# 2. This build takes it over.
ok "this build takes the older pins over" start_daemon new -p "$N"
ok "  it says it took over" grep -q '^aperture: took over ' "$TMP/new.err"
ok "  the rows map refuses a mapping: rows written by bpf()" \
	grep -q 'unwind: the rows map cannot be mapped (.*): rows written by bpf()' "$TMP/new.err"
wait_cpu "$N" 2000000000 90 || diag "nofp did not use 2 s of CPU in 90 s"
kill -STOP "$N"
sleep 1.5	# the daemon's drain into the totals (every second)
n_ns=$(proc_cpu_ns "$N")
dump_named > "$TMP/after.folded"
events=$("$TOP/tools/aperture-ctl" -d "$DIR" status 2>/dev/null | awk '$1 == "oncpu" { sub(/,/, "", $3); print $3 }')
kill -9 "$N"; wait "$N" 2>/dev/null

# Samples are counted in the kernel, so the totals hold every target event the
# programs saw across both daemons (their own count, oncpu's stats); what the
# takeover changes is only who writes the rows.  Against nofp's CPU time the
# events are a diagnostic: under qemu's TCG the perf events fire up to 14%
# short of CPU time x rate with nothing lost (6.1 guest, one of four runs).
want=$(awk -v ns="$n_ns" -v n0="$n0_ns" -v hz=$FREQ 'BEGIN { printf "%.0f\n", (ns - n0) / 1e9 * hz }')
got=$(stack_weight "$TMP/after.folded" '^nofp;')
diag "nofp: $got samples in the totals, $events target events counted, $((n_ns - n0_ns)) ns of CPU since the first daemon: $want at $FREQ Hz"
is_within "the totals hold every target event across the takeover (1%)" "$events" "$got" "$((events / 100 + 2))"
ge "before the takeover: spin_until whole in >= 99%" "$(whole_share "$TMP/before.folded")" 99
# after less before, stack by stack: what was counted under the new daemon's rows
awk 'NR == FNR { w = $NF; s = $0; sub(/ [0-9]+$/, "", s); old[s] = w; next }
	{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (w - old[s] > 0) print s, w - old[s] }' \
	"$TMP/before.folded" "$TMP/after.folded" > "$TMP/since.folded"
ge "since the takeover: samples of nofp (half of 2 s of CPU at $FREQ Hz)" "$(stack_weight "$TMP/since.folded" '^nofp;')" "$FREQ"
diag "since the takeover: $(stack_weight "$TMP/since.folded" '^nofp;\[before-unwind-tables\]') samples before its tables"
ge "since the takeover: spin_until whole in >= 99%" "$(whole_share "$TMP/since.folded")" 99
done_testing
