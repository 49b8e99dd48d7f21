#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bounded resources under a fork storm (issue 15).  Two parents, storma and
# stormb, start about a thousand short-lived processes a second each, in a
# cgroup of their own, for STORM_SECONDS (30); pids wrap and get reused.
# `aperture run --output-dir --interval 1s` profiles the cgroup:
# - its RSS after the warm-up grows by less than a stated tolerance;
# - the stacks map stays under its cap: stacks no count refers to any more
#   are collected (stacks_collected), none is lost for room;
# - the totals map (tiny here) fills up, and the loss is in the health line;
# - no stack is named with the other binary's symbols: both run without
#   address randomization, so they have the same layout and a stack
#   symbolized with the maps of the process that had its pid before would
#   name the other side's burn function;
# - exited processes leave the symbol cache, and the stats line says so.
# Also: a tiny --stacks-max counts its loss in record's end line, and the
# agent scanning /proc while processes vanish under it neither crashes nor
# stops, and prints its stats line on SIGUSR1.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/oap.sh"
require_root
require_aperture
require_workload storma stormb cpuburn
command -v setarch >/dev/null || skip_all "setarch missing (util-linux)"
make_cgroup

SECS=${STORM_SECONDS:-30}
RATE=${STORM_RATE:-1000}	# per parent and second, at most
WARMUP=10			# seconds before the RSS reference
RSS_TOLERANCE_KIB=4096
PIN=/sys/fs/bpf/aperture_storm_$$
OUT=$TMP/out
unpin_at_exit "$PIN"

# storm SIDE SECONDS: starts storm$SIDE in the cgroup, without address randomization; sets BG_PID
storm() {
	bg bash -c "echo \$\$ > '$CG/cgroup.procs' && exec setarch -R '$WL/storm$1' $2 $RATE" >"$TMP/storm$1.out"
}

# 1. A map too small: the loss is counted in the end line, the run completes.
run_ap full record -F 199 --stacks-max 2 -o "$TMP/full.folded" -- "$WL/cpuburn" 2
is "record --stacks-max 2: exit 0" "$AP_RC" 0
ok "  the end line counts the stacks lost for room" \
	grep -Eq 'oncpu: [0-9]+ samples, [1-9][0-9]* lost \(.*stacks map full: [1-9]' "$TMP/full.err"

# 2. The storm under the daemon.
"$APERTURE" run --pin "$PIN" --oncpu -F 199 --cgroup "$CG" --output-dir "$OUT" --output-format folded \
	--interval 1s --counts-max 1024 --stacks-max 4096 2>"$TMP/daemon.err" &
D=$!; _bg_pids+=("$D")
for ((i = 0; i < 100; i++)); do [ -e "$PIN/oncpu_active" ] && break; sleep 0.1; done
ok "daemon started" test -e "$PIN/oncpu_active"
storm a "$SECS"; A=$BG_PID
storm b "$SECS"; B=$BG_PID
: >"$TMP/rss"
for ((t = 0; t < SECS; t++)); do
	echo "$t $(awk '/^VmRSS/ { print $2 }' "/proc/$D/status")" >>"$TMP/rss"
	sleep 1
done
wait "$A" "$B"
# Stacks are collected every 5 s (COLLECT_EVERY_NS, user/cmd/daemon.c): one the storm's last counts
# referred to is seen referenced at the next pass, a candidate at the one after, deleted at the
# third.  16 s after the storm every such stack is gone.
sleep 16
kill -USR1 "$D"; sleep 1.5
kill -TERM "$D"; wait "$D"; rc=$?
is "daemon exits 0 after the storm" "$rc" 0
[ "$rc" = 0 ] || tail -5 "$TMP/daemon.err" | sed 's/^/#   /'

forks=$(( $(kv "$TMP/storma.out" forks) + $(kv "$TMP/stormb.out" forks) ))
diag "$forks processes in $SECS s ($((forks / SECS))/s; pid_max $(cat /proc/sys/kernel/pid_max))"
ge "the storm ran (processes a second)" "$((forks / SECS))" 200

rss_at() { awk -v t="$1" '$1 == t { print $2 }' "$TMP/rss"; }
rss_warm=$(rss_at "$WARMUP"); rss_end=$(awk 'END { print $2 }' "$TMP/rss")
diag "RSS: $(rss_at 0) KiB at the start, $rss_warm KiB after ${WARMUP}s, $rss_end KiB at the end"
# ASan keeps freed memory in its quarantine (256 MiB by default) and LeakSanitizer checks leaks at exit.
unless_sanitized "freed memory stays in ASan's quarantine" \
	ok "RSS after the warm-up grows by less than $RSS_TOLERANCE_KIB KiB ($rss_warm -> $rss_end)" \
	test "$((rss_end - rss_warm))" -lt "$RSS_TOLERANCE_KIB"

# "stats: oncpu: stacks U/C totals U/C counts U/C target_pids U/C stacks_collected N ..."
stacks_max=$(sed -n 's/.*stats: oncpu: stacks \([0-9]*\)\/.*/\1/p' "$TMP/daemon.err" | sort -n | tail -1)
collected=$(sed -n 's/.*stacks_collected \([0-9]*\).*/\1/p' "$TMP/daemon.err" | tail -1)
diag "stacks: at most $stacks_max of 4096 in the map, $collected collected"
ge "a stats line every interval" "$(grep -c 'stats: oncpu: stacks' "$TMP/daemon.err")" "$((SECS - 2))"
ok "the stacks map stayed under its cap ($stacks_max < 4096)" test "${stacks_max:-4096}" -lt 4096
# Once the storm is over its counts are drained and no longer refer to any stack: the stacks left
# (still pinned) must each be named by a key of the never-drained totals map, the rest collected.
# The map's own use dropped by what was collected after the storm at least.
unreferenced=$(bpftool -j map dump pinned "$PIN/oncpu_totals" >"$TMP/totals.json" &&
	bpftool -j map dump pinned "$PIN/oncpu_stacks" >"$TMP/stacks.json" && /usr/bin/python3 -c '
import json, sys
totals = json.load(open(sys.argv[1]))
ref = {k["formatted"]["key"][f] for k in totals for f in ("user_stack_id", "kernel_stack_id")}
ids = [int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little") for e in json.load(open(sys.argv[2]))]
print(sum(1 for i in ids if i not in ref) if totals and ids else "no-data")' "$TMP/totals.json" "$TMP/stacks.json")
is "stacks no count refers to were collected: none left that no totals key names" "${unreferenced:-none}" 0
used=$(sed -n 's/.*stats: oncpu: stacks \([0-9]*\)\/.*/\1/p' "$TMP/daemon.err")
drop=$(( $(sort -n <<<"$used" | tail -1) - $(tail -1 <<<"$used") ))
ge "  the collector's count covers the map's drop since its peak ($drop)" "${collected:-none}" "$drop"
is "no stack lost for room" "$(grep -c 'stacks map full' "$TMP/daemon.err")" 0
ok "the totals map filled up, and its loss is in the health line" \
	grep -Eq 'interval 1s: oncpu: [0-9]+ samples, [1-9][0-9]* lost \(totals map full [1-9]' "$TMP/daemon.err"

# comm;frames... weight: a side's comm with the other side's function is a mislabel.
cat "$OUT"/oncpu-*.folded >"$TMP/all.folded" 2>/dev/null
own_a=$(stack_weight "$TMP/all.folded" '^storma;.*storm_a_burn')
own_b=$(stack_weight "$TMP/all.folded" '^stormb;.*storm_b_burn')
ge "storma's children named (storm_a_burn)" "$own_a" 20
ge "stormb's children named (storm_b_burn)" "$own_b" 20
is "no storma stack names storm_b_burn" "$(stack_weight "$TMP/all.folded" '^storma;.*storm_b_burn')" 0
is "no stormb stack names storm_a_burn" "$(stack_weight "$TMP/all.folded" '^stormb;.*storm_a_burn')" 0

last=$(grep 'stats: oncpu' "$TMP/daemon.err" | tail -1)
ok "the stats line has the symbol cache's use and limit" \
	grep -Eq 'symbols [0-9]+/24576 KiB, processes [0-9]+/4096' <<<"$last"
dropped=$(sed -n 's/.*(forgotten: \([0-9]*\) processes.*/\1/p' <<<"$last")
ge "exited processes left the symbol cache" "${dropped:-0}" 100
"$APERTURE" run --unpin --pin "$PIN" >/dev/null 2>&1

# 3. The agent scans /proc while processes vanish under it, and runs tasks
#    on processes that may be gone when they start.
if have_oap_deps; then
	PORT=$(free_port)
	start_oap "$PORT" "$TMP/oap.jsonl" --min-duration 0 --task "ON_CPU:6:$(hostname)"
	storm a 14
	"$APERTURE" run --oap "127.0.0.1:$PORT" --exe-pattern '*/storma' --heartbeat-interval 0.3 \
		--task-interval 0.5 --flush-interval 1 -d 12 2>"$TMP/agent.err" &
	AG=$!
	sleep 8; kill -USR1 "$AG"
	wait "$AG"; rc=$?
	is "agent during a storm: exit 0" "$rc" 0
	[ "$rc" = 0 ] || tail -5 "$TMP/agent.err" | sed 's/^/#   /'
	ok "  SIGUSR1: its stats line" grep -Eq 'stats: .*symbols [0-9]+/[0-9]+ KiB.*selected processes [0-9]+/4096 .*spool [0-9]+/[0-9]+ bytes' "$TMP/agent.err"
	stop_oap
else
	skip "agent during a storm" "needs /usr/bin/python3 with grpcio and protobuf, and protoc"
fi
done_testing
