#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# --jvm-perfmap (user/lib/jvm_attach.c, user/core/jvm_perfmap.c): a JVM asked for
# its /tmp/perf-PID.map through the HotSpot attach socket names its JIT code;
# a process that is not a JVM, or one that only looks like one, is not signalled;
# a planted /tmp/.java_pidN that is not a socket is refused without a hang.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/jvm.sh"
require_root
require_aperture
require_jvm

# alive PID...: each PID runs (not a zombie: kill -0 passes on a child that died unreaped)
alive() { local p; for p in "$@"; do grep -qE '^State:\s+[^Z]' "/proc/$p/status" 2>/dev/null || return 1; done; }

# The known answer: main calls hot() forever and hot() is never inlined, so nearly every sample of the
# Java thread is in hot() once the JIT compiled it (~2 s of warm-up), named only by the perf map.
start_jvm

ap_ok "without --jvm-perfmap" plain record -F 499 -d 5 -o "$TMP/plain.folded" -p "$JP"
h=$(java_share "$TMP/plain.folded" hot)
diag "without --jvm-perfmap: $h% of the Java thread's samples named Hot.hot"
ok "without --jvm-perfmap: the JIT code is unnamed (< 80%: the check below needs the perf map)" \
	awk -v h="$h" 'BEGIN { exit !(h < 80) }'
ok "without --jvm-perfmap: no perf map written" test ! -e "/tmp/perf-$JP.map"

ap_ok "--jvm-perfmap" jvm record -F 499 -d 5 --jvm-perfmap -o "$TMP/jvm.folded" -p "$JP"
ge ">= 80% of the Java thread's samples named ...Hot.hot" "$(java_share "$TMP/jvm.folded" hot)" 80
ok "the end line: 1 JVM asked, 1 answered" grep -q 'jvm perf maps: 1 JVM asked, 1 answered' "$TMP/jvm.err"
ok "the JVM wrote its perf map" test -s "/tmp/perf-$JP.map"
ok "the JVM is still running" alive "$JP"

# The JVM started by aperture (-- COMMAND): asked each second for the first 5 s, it names its hot code
# from its first seconds; the JVM's start (~0.5 s here, interpreted) is in the 20% left.
ap_ok "-- java" cmd record -v -F 499 -d 12 --jvm-perfmap -o "$TMP/cmd.folded" -- "${HOT[@]}"
ge "-- java: >= 80% of the Java thread's samples named ...Hot.hot" "$(java_share "$TMP/cmd.folded" hot)" 80
ok "-- java: the end line: 1 JVM asked, 1 answered" grep -q 'jvm perf maps: 1 JVM asked, 1 answered' "$TMP/cmd.err"
CHILD=$(sed -n 's/.*jvm pid \([0-9]*\): perf map written.*/\1/p' "$TMP/cmd.err" | head -1)
[ -n "$CHILD" ] && rm -f "/tmp/perf-$CHILD.map" "/tmp/.java_pid$CHILD"

# A JVM in a container of its own (pid and mount namespaces, a private /tmp; no user namespace): it
# knows itself as pid 1, so its socket and map are /tmp/.java_pid1 and /tmp/perf-1.map in its root
# (/proc/PID/root/tmp), which is where aperture asks and reads (VirtualMachineImpl.java does the same).
bg unshare -m -p -f --mount-proc sh -c 'mount -t tmpfs none /mnt && cp -r "$1" /mnt/classes &&
	mount -t tmpfs none /tmp && shift && exec "$@" -cp /mnt/classes Hot' ns "$TMP/classes" "$JAVA" "${JVM_FLAGS[@]}"
sleep $((3 * TEST_SCALE))
NSJ=$(for p in $(pgrep -f 'cp /mnt/classes Hot'); do grep -q libjvm.so "/proc/$p/maps" 2>/dev/null && echo "$p"; done | head -1)
if [ -n "$NSJ" ] && grep -qE '^NSpid:\s+[0-9]+\s+1$' "/proc/$NSJ/status"; then
	at_exit "kill -9 $NSJ 2>/dev/null"
	ap_ok "a JVM in its own pid and mount namespaces" ns record -F 499 -d 4 --jvm-perfmap -o "$TMP/ns.folded" -p "$NSJ"
	ge "  >= 80% of its Java thread's samples named ...Hot.hot" "$(java_share "$TMP/ns.folded" hot)" 80
	ok "  its map is in its own /tmp, as pid 1" test -s "/proc/$NSJ/root/tmp/perf-1.map"
	ok "  and none in ours" test ! -e "/tmp/perf-$NSJ.map"
else
	skip "a JVM in its own pid and mount namespaces" "unshare -m -p could not start one here"
fi

# Not JVMs: SIGQUIT kills them (a background job of this script ignores SIGQUIT, so each sets it back
# to the default first), so a signal would show.  The second maps a file named
# libjvm.so (a look-alike) but does not catch SIGQUIT: refused, not signalled.  Each has a planted
# /tmp/.java_pidN that is not a socket: a FIFO by nobody (a blocking open would hang), a regular file.
lookalike_lib || skip_all "no cc for the look-alike libjvm.so"
bg /usr/bin/python3 -c 'import signal, time; signal.signal(signal.SIGQUIT, signal.SIG_DFL); time.sleep(600)'
PLAIN=$BG_PID
bg env LD_PRELOAD="$TMP/libjvm.so" sleep 600
FAKE=$BG_PID
bg env LD_PRELOAD="$TMP/libjvm.so" sleep 600
FAKE2=$BG_PID
bg env LD_PRELOAD="$TMP/libjvm.so" /usr/bin/python3 -c 'import signal, time; signal.signal(signal.SIGQUIT, signal.SIG_DFL); time.sleep(600)'
FAKE3=$BG_PID	# nothing planted: would need SIGQUIT
sleep 1
mkfifo "/tmp/.java_pid$FAKE" && chown nobody "/tmp/.java_pid$FAKE"
echo planted >"/tmp/.java_pid$FAKE2"
at_exit "rm -f /tmp/.java_pid$FAKE /tmp/.java_pid$FAKE2"
ok "the look-alikes map libjvm.so" sh -c "grep -q libjvm.so /proc/$FAKE2/maps"
# What start-up and the end take beyond -d here and now (more on a loaded machine): the runs below
# are timed against it.
ap_ok "a run without --jvm-perfmap (for the times below)" base record -F 99 -d 1 -o "$TMP/base.folded" -p "$PLAIN"
OVER=$(awk -v s="$AP_SECS" 'BEGIN { print (s > 1 ? s - 1 : 0) }')
diag "start-up and end take ${OVER}s beyond -d"
ap_ok "not JVMs" fake record -F 99 -d 3 --jvm-perfmap=1 -o "$TMP/fake.folded" -p "$PLAIN" -p "$FAKE" -p "$FAKE2" -p "$FAKE3"
ok "--jvm-perfmap with look-alikes ends in time (${AP_SECS}s for -d 3, ${OVER}s more without asks)" \
	awk -v s="$AP_SECS" -v o="$OVER" 'BEGIN { exit !(s < 3 + o + 4 * '"$TEST_SCALE"') }'
ok "the non-JVM is not signalled (alive)" alive "$PLAIN"
ok "the look-alikes are not signalled (alive)" alive "$FAKE" "$FAKE2" "$FAKE3"
ok "the planted regular file is refused, one line" \
	test "$(grep -c "pid $FAKE2: perf map not written: /tmp/.java_pidN is not a socket" "$TMP/fake.err")" = 1
ok "the planted FIFO (by nobody) is refused, one line" \
	test "$(grep -c "pid $FAKE: perf map not written: /tmp/.java_pidN is not a socket" "$TMP/fake.err")" = 1
ok "the look-alike without a listener is not signalled: it does not catch SIGQUIT, one line" \
	test "$(grep -c "pid $FAKE3: perf map not written: no attach listener, and SIGQUIT is not caught" "$TMP/fake.err")" = 1
ok "the end line: 3 JVMs asked (the look-alikes), 0 answered" grep -q 'jvm perf maps: 3 JVMs asked, 0 answered' "$TMP/fake.err"

# A look-alike that listens on /tmp/.java_pidN itself (a socket owned by its user, as a JVM's) and never
# answers: each ask ends after 3 s, on the asking thread; the run ends on time, waiting at most for
# the ask in flight.
bg_listener 600
SILENT=$BG_PID
ap_ok "silent listener" silent record -F 99 -d 3 --jvm-perfmap=1 -o "$TMP/silent.folded" -p "$SILENT"
ok "a silent listener delays the run by at most the ask in flight, 3 s (${AP_SECS}s for -d 3)" \
	awk -v s="$AP_SECS" -v o="$OVER" 'BEGIN { exit !(s < 3 + o + 3 + 2 * '"$TEST_SCALE"') }'
ok "the silent listener: one line, no reply in time" \
	test "$(grep -c "pid $SILENT: perf map not written: no reply in time" "$TMP/silent.err")" = 1

# The same, its socket open to group and others (mode 0666; HotSpot's is 0600, and the JDK's client
# refuses any other): refused at once, never asked.
bg_listener 666
OPEN=$BG_PID
ap_ok "listener open to others" open record -F 99 -d 1 --jvm-perfmap=1 -o "$TMP/open.folded" -p "$OPEN"
ok "a listener socket open to group and others is refused, one line" \
	test "$(grep -c "pid $OPEN: perf map not written: /tmp/.java_pidN is not a socket owned by the JVM's user, mode 0600" "$TMP/open.err")" = 1
ok "  and not asked: the run is not held by a 3 s wait (${AP_SECS}s for -d 1, ${OVER}s more without asks)" \
	awk -v s="$AP_SECS" -v o="$OVER" 'BEGIN { exit !(s < 1 + o + 1.5 * '"$TEST_SCALE"') }'
done_testing
