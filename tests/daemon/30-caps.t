#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The capabilities of tools/aperture.service are enough, and fewer are not:
# root's uid with the unit's CapabilityBoundingSet (setpriv, as systemd sets
# it up, NoNewPrivileges included) records, names kernel frames and another
# user's process, pins and unpins; without CAP_BPF or CAP_PERFMON it stops
# with one line naming the missing one.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn
command -v setpriv >/dev/null || skip_all "setpriv missing (util-linux, tools/deps.sh)"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"

UNIT=$TOP/tools/aperture.service
PIN=/sys/fs/bpf/aperture_caps_$$
unpin_at_exit "$PIN"
# CAP_X -> x, keeping those this machine can grant (a container may lack some: said below)
want=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
have=$(grep '^CapBnd' /proc/self/status | awk '{ print $2 }')
caps=""
for c in $want; do
	n=$(capsh --explain="${c,,}" 2>/dev/null | sed -n "1s/^[a-z_]* (\([0-9]*\)).*/\1/p")
	if [ -n "$n" ] && (( (16#$have >> n) & 1 )); then
		caps="$caps,+${c#CAP_}"
	else
		diag "$c: not in this machine's bounding set, left out"
	fi
done
caps=${caps,,}
diag "bounding set: ${caps#,}"
ok "the unit's set has CAP_BPF and CAP_PERFMON" sh -c "echo '$want' | grep -q CAP_BPF && echo '$want' | grep -q CAP_PERFMON"
ok "the unit has no CAP_SYS_ADMIN" sh -c "! echo '$want' | grep -q CAP_SYS_ADMIN"
for key in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ReadWritePaths=/sys/fs/bpf StateDirectory=aperture; do
	ok "the unit says $key" grep -qx "$key" "$UNIT"
done

# limited SET ARGS: aperture ARGS as root's uid with only SET (a setpriv cap list)
limited() { local set=$1; shift; setpriv --no-new-privs --inh-caps=-all --bounding-set="-all$set" "$APERTURE" "$@"; }

# Another user's process, to name through /proc/PID/maps (CAP_SYS_PTRACE).
su nobody -s /bin/sh -c "exec '$WL/cpuburn' 30" >/dev/null 2>&1 &
BURN=$!; _bg_pids+=("$BURN"); sleep 0.5
# A process that lives in the kernel (dd from /dev/zero to /dev/null: clear_user, about all of its
# time is system time) at a steady rate: its stime over the run, scaled to the 2 s window, is what
# its samples with kernel frames should weigh.  (The machine's kernel time was the measure before;
# the run's start, BPF loading and verification, is kernel time outside the window and grew with
# each feature: it failed a clean-clone CI at a quarter.)
dd if=/dev/zero of=/dev/null bs=64k 2>/dev/null &
DD=$!; _bg_pids+=("$DD"); sleep 0.3
stime() { awk '{ sub(/^.*\) /, ""); print $13 }' /proc/"$1"/stat; }
k0=$(stime "$DD"); t0=$(date +%s%N)
limited "$caps" record -d 2 -o "$TMP/caps.folded" >"$TMP/rec.out" 2>"$TMP/rec.err"; rc=$?
k1=$(stime "$DD"); t1=$(date +%s%N)
kill "$DD" 2>/dev/null; wait "$DD" 2>/dev/null
is "record -d 2 with the unit's capabilities: exit 0" "$rc" 0
ge "  samples taken" "$(folded_total "$TMP/caps.folded")" 20
is "the unit grants CAP_SYSLOG and CAP_SYS_PTRACE" "$(grep -o 'CAP_SYSLOG\|CAP_SYS_PTRACE' <<<"$want" | sort | tr '\n' ' ')" \
	"CAP_SYSLOG CAP_SYS_PTRACE "
if [[ $caps == *syslog* ]]; then
	# dd's system time x 99 Hz over the 2 s window: at least half of it in dd's samples with
	# named kernel frames.
	kwant=$(awk -v k=$((k1 - k0)) -v hz="$(getconf CLK_TCK)" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.0f\n", k / hz * 99 * 2e9 / ns * 0.5 }')
	diag "dd's system time in the run: $((k1 - k0)) ticks in $(( (t1 - t0) / 1000000 )) ms"
	ge "  dd's samples with named kernel frames (CAP_SYSLOG): half its system time x 99 Hz" \
		"$(stack_weight "$TMP/caps.folded" '^dd;.*_\[k\](;|$)')" "$kwant"
	is "  no kernel frame left unnamed" "$(grep -c 'kallsyms\]+0x' "$TMP/caps.folded")" 0
else
	skip "  kernel frames named (CAP_SYSLOG)" "CAP_SYSLOG is not in this machine's bounding set"
fi
if [[ $caps == *sys_ptrace* ]]; then
	ok "  another user's process named (CAP_SYS_PTRACE)" grep -Eq '^cpuburn;.*;burn_(a|b|c|thread|[0-9]+)' "$TMP/caps.folded"
else
	skip "  another user's process named (CAP_SYS_PTRACE)" "CAP_SYS_PTRACE is not in this machine's bounding set"
fi
kill -9 "$BURN" 2>/dev/null

setpriv --no-new-privs --inh-caps=-all --bounding-set="-all$caps" "$APERTURE" run --pin "$PIN" 2>"$TMP/run.err" &
D=$!; _bg_pids+=("$D")
for ((i = 0; i < 100; i++)); do [ -e "$PIN/oncpu_active" ] && break; sleep 0.1; done
ok "run --pin with the unit's capabilities pins" test -e "$PIN/oncpu_active"
kill -TERM "$D"; wait "$D"; rc=$?
is "  and stops with exit 0" "$rc" 0
limited "$caps" run --unpin --pin "$PIN" 2>"$TMP/unpin.err"; rc=$?
is "run --unpin with the unit's capabilities: exit 0" "$rc" 0
ok "  nothing left pinned" test ! -e "$PIN"

for drop in perfmon bpf; do
	fewer=$(echo "$caps" | sed "s/,+$drop//")
	limited "$fewer" record -d 1 -o "$TMP/no_$drop.folded" >/dev/null 2>"$TMP/no_$drop.err"; rc=$?
	is "without CAP_${drop^^}: record exits 1" "$rc" 1
	is "  with one line" "$(wc -l <"$TMP/no_$drop.err")" 1
	ok "  naming CAP_${drop^^}" grep -q "missing: CAP_${drop^^}" "$TMP/no_$drop.err"
	limited "$fewer" run --pin "$PIN" >/dev/null 2>"$TMP/run_no_$drop.err"; rc=$?
	is "without CAP_${drop^^}: run --pin exits 1" "$rc" 1
	ok "  and pins nothing" test ! -e "$PIN"
done
done_testing
