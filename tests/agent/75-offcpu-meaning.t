#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# OFF_CPU tasks mean what they mean in SkyWalking Rover: every switch out of
# the process, preemption included, no minimum block time.  A busy thread
# that shares its CPU with another busy process is switched out only by
# preemption: its stacks are in the agent's OFF_CPU data, unless --state
# blocked narrows it; aperture record keeps its own default (blocked only).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/oap.sh"
require_root
have_oap_deps || skip_all "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
[ -x "$APERTURE" ] && [ -x "$WL/oap_burn" ] && [ -x "$WL/cpuburn" ] || skip_all "build aperture and tests first"

# Both busy on CPU 0: each is preempted for the other every few ms.  A copy
# of our own: other tests may run oap_burn at the same time.
mkdir "$TMP/bin" && cp "$WL/oap_burn" "$TMP/bin/"
bg taskset -c 0 "$TMP/bin/oap_burn" 60
OAP_BURN=$BG_PID
bg taskset -c 0 "$WL/cpuburn" 60
sleep 0.3

# agent_run NAME [OPTIONS]: one OFF_CPU task of 4 s; its summary in $TMP/NAME.sum
agent_run() {
	local name=$1 port rec=$TMP/$1.jsonl
	shift
	port=$(free_port)
	start_oap "$port" "$rec" --min-duration 0 --task "OFF_CPU:4:svc-$name" || return 1
	"$APERTURE" run --oap 127.0.0.1:$port --service "svc-$name" --exe-pattern "$TMP/bin/oap_burn" \
		--heartbeat-interval 1 --task-interval 1 --flush-interval 1 -d 8 "$@" 2> "$TMP/$name.log"
	is "$name: agent exits 0" "$?" 0
	stop_oap
	$PY "$OAPDIR/analyze.py" task "$rec" OFF_CPU > "$TMP/$name.sum"
}
preempted() { echo $(( $(val "$1" count_oap_hot_a) + $(val "$1" count_oap_hot_b) )); }

agent_run rover
ge "default: the sleeper's switches" "$(val "$TMP/rover.sum" count_oap_nap)" 500
ge "default: the busy thread's preemptions (leaf oap_hot_a/b)" "$(preempted "$TMP/rover.sum")" 50

agent_run blocked --state blocked --min-block-us 1
ge "--state blocked: the sleeper's switches" "$(val "$TMP/blocked.sum" count_oap_nap)" 500
is "--state blocked: no preemption counted" "$(preempted "$TMP/blocked.sum")" 0

run_ap rec record --offcpu --top 0 -p "$OAP_BURN" -d 2 -o "$TMP/rec.folded"
is "record exits 0" "$AP_RC" 0
# The sleeper thread is in oap_nap's 2 ms sleeps nearly all the time: ~2e9 ns of the 2 s window,
# at least 60% of it, and no more than aperture's whole run allows (one thread).
nap_ns=$(stack_weight "$TMP/rec.folded" ';oap_nap;')
ge "record: the sleeper's off-CPU time, >= 60% of the 2 s window (ns)" "$nap_ns" 1200000000
ok "record: ... and not more than aperture ran ($nap_ns ns in $AP_SECS s)" \
	awk -v n="$nap_ns" -v s="$AP_SECS" 'BEGIN { exit !(n <= s * 1e9) }'
is "record keeps its default (blocked sleeps only): no preemption" \
	"$(stack_weight "$TMP/rec.folded" ';oap_hot_[ab](;|$)')" 0
done_testing
