#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run --jvm-perfmap (user/core/jvm_perfmap.c in the daemon): a JVM among the daemon's targets
# is asked for its perf map at the start and again every S seconds, so a method compiled
# later is named in the later profiles too; a target that never answers does not hold the
# daemon's loop (the asking runs on its own thread): the interval lines come on time.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/jvm.sh"
require_root
require_aperture
require_jvm

PIN=/sys/fs/bpf/aperture_jvm_daemon_$$
OUT=$TMP/out
unpin_at_exit "$PIN"

# daemon NAME SECONDS ARGS: the on-CPU daemon for SECONDS after its programs are active, then SIGTERM
daemon() {
	local name=$1 secs=$2 pid i
	shift 2
	"$APERTURE" run --pin "$PIN" --oncpu "$@" 2>"$TMP/$name.err" &
	pid=$!
	for ((i = 0; i < 100 * TEST_SCALE; i++)); do [ -e "$PIN/oncpu_active" ] && break; sleep 0.1; done
	sleep "$secs"
	kill -TERM "$pid"
	wait "$pid"
	DAEMON_RC=$?
	"$APERTURE" run --unpin --pin "$PIN" >/dev/null 2>&1
}
# file_end FILE: the end of the interval a daemon file holds (its name's UTC time), epoch seconds
file_end() {
	date -u -d "$(basename "$1" | sed -E 's/^[a-z]+-([0-9]{8})T([0-9]{2})([0-9]{2})([0-9]{2})Z.*/\1 \2:\3:\4/')" +%s
}
# files_between FROM TO: the on-CPU files whose interval ends in [FROM, TO] (epoch seconds), concatenated
files_between() {
	local f e
	for f in "$OUT"/oncpu-*.folded; do
		e=$(file_end "$f")
		[ "$e" -ge "$1" ] && [ "$e" -le "$2" ] && cat "$f"
	done
}

# The known answer: hot() spins for the JVM's first 14 s, late() from then on; neither is inlined, so
# nearly every sample of the Java thread is in the one of its phase once the JIT compiled it (< 1 s).
SWITCH_S=$((14 * TEST_SCALE))
J0=$(date +%s)
start_jvm "$SWITCH_S"
mkdir -m 700 "$OUT"

# Asked at the start, each second for 5 s, then every 2 s: late() (compiled at ~J0 + 14 s, after the
# first rounds) is in the map the next round writes, and the symbolizer reads it again on a miss.
daemon phases $((24 * TEST_SCALE)) -F 499 -p "$JP" --output-dir "$OUT" --output-format folded \
	--interval 2s --jvm-perfmap=2
is "the daemon exits 0 on SIGTERM" "$DAEMON_RC" 0
[ "$DAEMON_RC" = 0 ] || show_err phases
ls "$OUT"/oncpu-*.folded >/dev/null 2>&1 || fail "no on-CPU files" "$(ls "$OUT")"
SWITCH=$((J0 + SWITCH_S))
# hot(): the files from the second one on (the first round answers in the daemon's first second)
FIRST=$(for f in "$OUT"/oncpu-*.folded; do file_end "$f"; done | sort -n | head -1)
files_between $((FIRST + 1)) $((SWITCH - 1)) >"$TMP/hot.folded"
files_between $((SWITCH + 6)) $((SWITCH + 100)) >"$TMP/late.folded"
diag "hot() phase: $(stack_weight "$TMP/hot.folded" '^java;') Java-thread samples, late() phase: $(stack_weight "$TMP/late.folded" '^java;')"
ge "the hot() phase: >= 80% of the Java thread's samples named ...Hot.hot" "$(java_share "$TMP/hot.folded" hot)" 80
ge "the late() phase (from 6 s after the switch): >= 80% named ...Hot.late (asked again after it was compiled)" \
	"$(java_share "$TMP/late.folded" late)" 80
ge "  with samples enough to tell (>= 150)" "$(stack_weight "$TMP/late.folded" '^java;')" 150
ok "the stats line counts the JVM: 1 JVM asked, 1 answered" grep -q 'jvm perf maps: 1 JVM asked, 1 answered' "$TMP/phases.err"
ok "the end line too" sh -c "tail -3 '$TMP/phases.err' | grep -q 'jvm perf maps: 1 JVM asked, 1 answered'"

# A look-alike (maps a file named libjvm.so) that listens on /tmp/.java_pidN and never answers: each ask
# holds 3 s (three in a row, then no more), on the asking thread; the daemon's 1 s intervals go on.
lookalike_lib || done_testing
bg_listener 600
SILENT=$BG_PID
t0=$(date +%s.%N)
daemon silent 8 -F 99 -p "$SILENT" --interval 1s --jvm-perfmap=1
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }')
is "silent listener: the daemon exits 0 on SIGTERM" "$DAEMON_RC" 0
lines=$(grep -c 'interval 1s: ' "$TMP/silent.err")
diag "silent listener: $lines interval lines in 8 s; the daemon took ${secs}s from start to exit"
ge "silent listener: the loop is not held: >= 6 interval lines of 1 s in 8 s (3 asks of 3 s on it would leave <= 4)" "$lines" 6
ok "silent listener: one warning at the stop, no reply in time" \
	test "$(grep -c "pid $SILENT: perf map not written: no reply in time" "$TMP/silent.err")" = 1
done_testing
