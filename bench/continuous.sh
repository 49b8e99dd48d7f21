#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The agent's own CPU and RSS with `run --continuous` checking N idle processes every second
# (issue 24's benchmark): a fake OAP (tests/agent/fake_oap.py) with a policy on every check the
# agent measures, N copies of tests/build/cont_burn idling, the agent for D s; its utime+stime and
# VmRSS between 10 s and D-5 s.  Usage: bash bench/continuous.sh [N=50] [D=70]
# Needs root, make aperture and make -C tests.
set -u
cd "$(dirname "$0")/.."
N=${1:-50} DUR=${2:-70}
D=$(mktemp -d /tmp/aperture-cont-bench.XXXXXX)
mkdir -p "$D/bin"
P=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo '{"bench": {"uuid": "b1", "config": {"ON_CPU": {"PROCESS_CPU": {"threshold": "90", "period": 5, "count": 5}, "PROCESS_THREAD_COUNT": {"threshold": "1000", "period": 5, "count": 5}, "SYSTEM_LOAD": {"threshold": "1000", "period": 5, "count": 5}}}}}' > "$D/policy.json"
/usr/bin/python3 tests/agent/fake_oap.py --port "$P" --out "$D/rec.jsonl" --policy-file "$D/policy.json" & O=$!
pids=()
for i in $(seq "$N"); do cp tests/build/cont_burn "$D/bin/idle$i"; "$D/bin/idle$i" 99999 0 & pids+=($!); done
sleep 1
APERTURE_STATE_DIR=$D/state ./aperture run --oap "127.0.0.1:$P" --service bench --exe-pattern "$D/bin/*" \
	--continuous -d "$DUR" -v 2> "$D/agent.log" & A=$!
sleep 10
t0=$(awk '{print $14+$15}' /proc/$A/stat); r0=$(awk '/VmRSS/ {print $2}' /proc/$A/status); s0=$(date +%s.%N)
sleep $((DUR - 15))
t1=$(awk '{print $14+$15}' /proc/$A/stat); r1=$(awk '/VmRSS/ {print $2}' /proc/$A/status); s1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
awk -v t="$((t1 - t0))" -v hz="$hz" -v s0="$s0" -v s1="$s1" -v r0="$r0" -v r1="$r1" \
	'BEGIN { printf "agent: %.3f %% of one CPU over %.0f s; RSS %d -> %d KiB\n", 100 * t / hz / (s1 - s0), s1 - s0, r0, r1 }'
grep 'stats:' "$D/agent.log" | tail -1 | grep -o 'continuous:[^;]*'
wait "$A"
kill "$O" "${pids[@]}"
wait 2>/dev/null
rm -rf "$D"
