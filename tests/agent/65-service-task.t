#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A task created on a service, as the real OAP hands it out: one command per
# process (same TaskId, one ProcessId each), only for processes that support
# eBPF profiling and carry the task's labels.  Every process is profiled and
# its data goes under its own processId.  Also --layer, --label, and
# support_ebpf_profiling=false for an executable without symbols.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
[ -x "$APERTURE" ] && [ -x "$WL/oap_burn" ] && [ -x "$WL/cpuburn" ] && [ -x "$WL/oap_burn_nosym" ] ||
	skip_all "build aperture and tests first"

"$APERTURE" run --oap 127.0.0.1:1 -p $$ --layer NOPE 2> "$TMP/layer.err"
is "--layer NOPE: usage error" "$?" 2
ok "--layer NOPE: one line naming the known layers" \
	bash -c "[ \$(wc -l < '$TMP/layer.err') = 1 ] && grep -q 'not a layer of the OAP (.*GENERAL.*OS_LINUX' '$TMP/layer.err'"
"$APERTURE" run --oap 127.0.0.1:1 -p $$ --label '' 2> /dev/null
is "--label '': usage error" "$?" 2

PORT=$(free_port)
REC=$TMP/record.jsonl
# Tasks once both profilable processes are stored; the last one wants a label no process has.
start_oap "$PORT" "$REC" --min-duration 0 --task-min-processes 2 --task ON_CPU:5:svc-two \
	--task OFF_CPU:5:svc-two:env=test --task ON_CPU:5:svc-two:env=nope ||
	{ plan 1; fail "fake OAP starts"; done_testing; }
# Copies of our own: other tests may run the same workloads at the same time.
mkdir "$TMP/bin" && cp "$WL/oap_burn" "$WL/cpuburn" "$WL/oap_burn_nosym" "$TMP/bin/"
bg "$TMP/bin/oap_burn" 40
bg "$TMP/bin/cpuburn" 40
bg "$TMP/bin/oap_burn_nosym" 40
sleep 0.3
"$APERTURE" run --oap 127.0.0.1:$PORT --service svc-two --layer OS_LINUX --label env=test --label tier=edge \
	--exe-pattern "$TMP/bin/*" --exe-label "$TMP/bin/cpuburn=role=burner" --exe-label 'oap_burn*=lang=c' \
	--heartbeat-interval 1 --task-interval 1 --flush-interval 1 -d 12 -v 2> "$TMP/agent.log"
is "agent exits 0" "$?" 0

reg() { $PY "$OAPDIR/analyze.py" registration "$REC" "$1" > "$TMP/reg.$1"; val "$TMP/reg.$1" "$2"; }
is "--layer OS_LINUX reported" "$(reg oap_burn layer)" OS_LINUX
is "labels in the entity, --exe-label by name" "$(reg oap_burn labels)" "env=test,tier=edge,lang=c"
is "--exe-label by path: this process only" "$(reg cpuburn labels)" "env=test,tier=edge,role=burner"
is "keepAlive carries layer, labels and support_ebpf_profiling as reported" "$(reg oap_burn keepalive_ok)" 1
is "support_ebpf_profiling: oap_burn" "$(reg oap_burn support_ebpf_profiling)" true
is "support_ebpf_profiling: cpuburn" "$(reg cpuburn support_ebpf_profiling)" true
is "support_ebpf_profiling: a stripped executable" "$(reg oap_burn_nosym support_ebpf_profiling)" false
is "keepAlive says false too" "$(reg oap_burn_nosym keepalive_ok)" 1
ok "the agent says why" grep -q 'oap_burn_nosym): support_ebpf_profiling=false (no function symbols' "$TMP/agent.log"

ID_BURN=$(reg oap_burn process_id)
ID_CPU=$(reg cpuburn process_id)
C=$TMP/commands
$PY "$OAPDIR/analyze.py" commands "$REC" ON_CPU > "$C"
task=$(val "$C" task)
is "ON_CPU: two commands in one answer (one per process)" "$(val "$C" max_commands)" 2
is "ON_CPU: one ProcessId per command" "$(val "$C" singleton_ids)" 1
is "ON_CPU: for the two profilable processes only" "$(val "$C" process_ids)" "$(printf '%s\n' "$ID_BURN" "$ID_CPU" | sort | paste -sd,)"
is "ON_CPU: same TaskId, same update time" "$(val "$C" same_update_time)" 1
n=$(grep -c "task $task (ON_CPU, 5 s, process [0-9a-f]*: pid [0-9]*) accepted" "$TMP/agent.log")
is "ON_CPU: both accepted" "$n" 2
[ "$n" = 2 ] || diag "$(grep -e "task $task" -e selected -e reported "$TMP/agent.log")"

T=$TMP/all
$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU > "$T"
is "ON_CPU: data for both processes" "$(val "$T" processes)" 2
is "ON_CPU: no record overwritten by another with the same ids" "$(val "$T" overwritten)" 0
is "ON_CPU: task metadata once per process and stream" "$(val "$T" meta_bad)" 0
# Each process's data under its own processId: told apart by their own functions.
logged_for() { sed -n "s/.*task $1 (ON_CPU, process $2) finished: \([0-9]*\) .*/\1/p" "$TMP/agent.log"; }
for p in oap_burn:$ID_BURN:oap_hot_:burn_ cpuburn:$ID_CPU:burn_:oap_; do
	IFS=: read -r name id own other <<< "$p"
	$PY "$OAPDIR/analyze.py" task "$REC" ON_CPU "$name" > "$T.$name"
	ge "ON_CPU $name: samples" "$(val "$T.$name" total)" 50
	is "ON_CPU $name: what arrived under its id is what the agent sent for it" \
		"$(val "$T.$name" total)" "$(logged_for "$task" "$id")"
	ok "ON_CPU $name: its own leaves ($(val "$T.$name" leaves))" grep -q "^leaves .*$own" "$T.$name"
	ok "ON_CPU $name: none of the other's" bash -c "! grep -q '^leaves .*$other' '$T.$name'"
done

$PY "$OAPDIR/analyze.py" commands "$REC" OFF_CPU > "$C"
is "OFF_CPU task for env=test: both processes carry it" "$(val "$C" max_commands)" 2
$PY "$OAPDIR/analyze.py" task "$REC" OFF_CPU oap_burn > "$T.off"
ge "OFF_CPU env=test: oap_burn's sleeper" "$(val "$T.off" count_oap_nap)" 500
ok "a task for a label no process has is refused at creation" \
	grep -q '"reason": "The service doesn.t have processes with label(s) env=nope."' "$REC"
done_testing
