#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run --oap --jvm-perfmap (user/core/jvm_perfmap.c in the SkyWalking agent): a JVM among the
# processes of a running ON_CPU task is asked for its perf map, so the task's stacks name its
# Java methods; without --jvm-perfmap a JVM without a perf map is reported as not profilable
# (support_ebpf_profiling=false, as Rover does), and one with a perf map that names nothing (the
# control: an empty one) is profiled unnamed; the agent asks no JVM before its task runs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/oap.sh"
. "$(dirname "$0")/jvm.sh"
require_root
require_aperture
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
require_jvm

# The known answer: main calls hot() forever and hot() is never inlined, so nearly every on-CPU
# sample of the JVM is in hot() once the JIT compiled it (~2 s of warm-up), named only by the perf map.
start_jvm

HOT_RE='Hot\.hot\(long\)'

AGENT_S=3 task_agent none "$JP"
is "without --jvm-perfmap or perf map: the agent exits 0" "$AGENT_RC" 0
ok "without --jvm-perfmap or perf map: reported with support_ebpf_profiling=false" \
	grep -q "process $JP (java): support_ebpf_profiling=false" "$TMP/none.err"

: >"/tmp/perf-$JP.map"	# the control: profiled (a perf map exists), named by nothing
task_agent plain "$JP"
$PY "$OAPDIR/analyze.py" named "$TMP/plain.jsonl" ON_CPU "$HOT_RE" >"$TMP/plain.named"
is "without --jvm-perfmap: the agent exits 0" "$AGENT_RC" 0
ge "without --jvm-perfmap, an empty perf map: the task has samples enough to tell (>= 50)" \
	"$(val "$TMP/plain.named" samples)" 50
diag "without --jvm-perfmap: $(val "$TMP/plain.named" named_pct)% of $(val "$TMP/plain.named" samples) samples named Hot.hot"
ok "without --jvm-perfmap: the JIT code is unnamed (< 80%: the check below needs the perf map)" \
	awk -v h="$(val "$TMP/plain.named" named_pct)" 'BEGIN { exit !(h < 80) }'
ok "without --jvm-perfmap: the JVM was not asked (its perf map is still empty)" test ! -s "/tmp/perf-$JP.map"
rm -f "/tmp/perf-$JP.map"

task_agent jvm "$JP" --jvm-perfmap=2
is "--jvm-perfmap: the agent exits 0" "$AGENT_RC" 0
[ "$AGENT_RC" = 0 ] || show_err jvm
$PY "$OAPDIR/analyze.py" named "$TMP/jvm.jsonl" ON_CPU "$HOT_RE" >"$TMP/jvm.named"
# 6 s at 499 Hz of one busy thread is about 3000 samples on an idle machine; at load 24 on 2 cores the
# JVM's thread ran a tenth of the time or less (47 samples at 99 Hz): the share is what is checked.
ge "--jvm-perfmap: the task has samples enough to tell (>= 50)" "$(val "$TMP/jvm.named" samples)" 50
ge "--jvm-perfmap: >= 80% of the task's samples named ...Hot.hot" "$(val "$TMP/jvm.named" named_pct)" 80
ok "the JVM wrote its perf map" test -s "/tmp/perf-$JP.map"
ok "the end line: 1 JVM asked, 1 answered" grep -q 'jvm perf maps: 1 JVM asked, 1 answered' "$TMP/jvm.err"
# Asked only while the task runs: the first ask after the task started (the log's order).
ok "no JVM asked before the task started" \
	awk '/task [0-9a-f]+ \(ON_CPU, .*\) started/ { s = 1 } /jvm pid [0-9]+: perf map written/ { exit !s } END { }' "$TMP/jvm.err"

done_testing
