# SPDX-License-Identifier: GPL-2.0
# Helpers for the JVM tests (tests/jvm/*.t); source after lib.sh: the JVM with a known hot method
# (tests/workloads/jvm/Hot.java), the shares of its samples, and look-alikes that are no JVMs.
JAVA=${JAVA:-/usr/bin/java}
JAVAC=${JAVAC:-/usr/bin/javac}
# HotSpot's options for Hot: hot() and late() stay methods of their own (never inlined), quietly
JVM_FLAGS=(-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Hot::hot -XX:CompileCommand=dontinline,Hot::late)

# require_jvm: java and javac, and Hot compiled into $TMP/classes; sets HOT (the command that runs it),
# or skips the file
require_jvm() {
	[ -x "$JAVA" ] && [ -x "$JAVAC" ] || skip_all "no $JAVA and $JAVAC (Debian's openjdk-17-jdk-headless)"
	"$JAVAC" -d "$TMP/classes" "$TOP/tests/workloads/jvm/Hot.java" 2>"$TMP/javac.err" ||
		skip_all "javac failed: $(head -1 "$TMP/javac.err")"
	HOT=("$JAVA" "${JVM_FLAGS[@]}" -cp "$TMP/classes" Hot)
}

# start_jvm [N]: Hot in the background (JP): hot() forever, or hot() for N seconds and late() after.
# Returns once the JIT compiled hot() (2 s, scaled), with no perf map of JP's left.
start_jvm() {
	bg "${HOT[@]}" "$@"
	JP=$BG_PID
	at_exit "rm -f /tmp/perf-$JP.map /tmp/.java_pid$JP"	# kill -9 leaves the JVM no time to remove its socket
	sleep $((2 * TEST_SCALE))
	rm -f "/tmp/perf-$JP.map"
}

# java_share FOLDED METHOD: percent of the Java main thread's samples (comm "java") with a frame named
# ...Hot.METHOD(long)
java_share() { pct "$(stack_weight "$1" "^java;.*Hot\\.$2\\(long\\)")" "$(stack_weight "$1" '^java;')"; }

# lookalike_lib: $TMP/libjvm.so, an empty library by that name: what LD_PRELOAD gives a look-alike JVM
lookalike_lib() { cc -shared -o "$TMP/libjvm.so" -x c /dev/null 2>/dev/null; }

# bg_listener MODE: a look-alike (it maps $TMP/libjvm.so) that listens on its /tmp/.java_pidN, a socket
# of mode MODE (octal; a JVM's is 600), and never answers; sets BG_PID, returns once it listens (1 s)
bg_listener() {
	bg env LD_PRELOAD="$TMP/libjvm.so" /usr/bin/python3 -c '
import os, socket, sys, time
p = "/tmp/.java_pid%d" % os.getpid()
s = socket.socket(socket.AF_UNIX); s.bind(p); os.chmod(p, int(sys.argv[1], 8)); s.listen(8); time.sleep(600)' "$1"
	at_exit "rm -f /tmp/.java_pid$BG_PID"
	sleep 1
}
