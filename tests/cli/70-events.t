#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The raw event stream (record --events FILE, aperture events) against
# workloads with known answers: cpuburn's CpuSample records give its 50/30/20
# leaf shares and the very counts of the pprof; sysburn's 20 ms nanosleeps are
# the only Syscall records over a 10 ms threshold; lockburn's mutex waits are
# Lock records over the lock threshold.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn sysburn lockburn pprof_decode
PY=/usr/bin/python3
[ -x $PY ] || skip_all "needs /usr/bin/python3"

# jsum FILE.json PYTHON-EXPR: evaluates EXPR with `ev` = the list of (kind, fields) of the records
jsum() {
	$PY -c '
import json, sys, collections
ev = [next(iter(json.loads(l).items())) for l in open(sys.argv[1])]
print(eval(sys.argv[2]))' "$1" "$2"
}

# --- on-CPU: every sample a CpuSample record.  -F 499: at 99 Hz the samples
# alias with cpuburn's 10 ms cycle (one 3 s run gave burn_50 58%).
ap_ok "--oncpu --raw-samples --events" cpu record --oncpu --raw-samples -F 499 --events "$TMP/cpu.ev" \
	-o "$TMP/cpu.pb.gz" --top 0 -- "$WL/cpuburn" 3
is "the event file is mode 0600" "$(stat -c %a "$TMP/cpu.ev")" 600
"$APERTURE" events --json "$TMP/cpu.ev" >"$TMP/cpu.json" 2>"$TMP/cpu.dec.err"
is "aperture events --json reads it" "$?:$(cat "$TMP/cpu.dec.err")" "0:"
samples=$(sed -n 's/^aperture: oncpu: \([0-9]*\) samples.*/\1/p' "$TMP/cpu.err")
records=$(jsum "$TMP/cpu.json" 'sum(1 for k, e in ev if k == "CpuSample")')
# 499 per CPU second cpuburn used (it prints cpu_ns= at exit; fewer on a loaded machine)
want=$(cpu_ns_samples "$TMP/cpu.out" 499)
is_within "CpuSample records: 499 per CPU second of cpuburn's" "$want" "$records" "$((want / 10 + 5))"
is "one CpuSample record per aggregated sample" "$records" "$samples"
ok "the end reports the records and 0 lost" grep -q "^aperture: events: wrote $records records to $TMP/cpu.ev (CpuSample $records), 0 lost (ring buffer full), 0 unread\$" "$TMP/cpu.err"
is "symbols vectors as long as the stacks" "$(jsum "$TMP/cpu.json" \
	'sum(1 for k, e in ev if len(e["user_stack"]) != len(e["user_stack_symbols"]) or len(e["kernel_stack"]) != len(e["kernel_stack_symbols"]))')" 0
# (the child is still aperture between its release and its exec)
is "every record is cpuburn's" "$(jsum "$TMP/cpu.json" 'sorted(set(e["comm"] for k, e in ev) - {"aperture"})')" "['cpuburn']"
ge "timestamps ascend per CPU (ns since boot, monotonic)" "$(jsum "$TMP/cpu.json" '
min(1 if all(a <= b for a, b in zip(t, t[1:])) else 0 for t in [[e["timestamp"] for k, e in ev if e["cpu_id"] == c] for c in set(e["cpu_id"] for k, e in ev)])')" 1
# The leaf: the kernel's first frame when the sample hit the kernel, else the user's.
leaves=$(jsum "$TMP/cpu.json" '" ".join("%s=%d" % (f, c) for f, c in sorted(collections.Counter(((e["kernel_stack_symbols"] or e["user_stack_symbols"] or ["-"])[0] or "?") for k, e in ev).items()))')
diag "CpuSample leaves: $leaves"
leaf() { tr ' ' '\n' <<<"$leaves" | sed -n "s/^$1=//p"; }
burn=$(( $(leaf burn_50) + $(leaf burn_30) + $(leaf burn_20) ))
is_within "records: burn_50 share" 50 "$(pct "$(leaf burn_50)" $burn)" 5
is_within "records: burn_30 share" 30 "$(pct "$(leaf burn_30)" $burn)" 5
is_within "records: burn_20 share" 20 "$(pct "$(leaf burn_20)" $burn)" 5
# The pprof of the same run: its samples per leaf are the same samples.
"$WL/pprof_decode" "$TMP/cpu.pb.gz" >"$TMP/cpu.dec"
for f in burn_50 burn_30 burn_20; do
	pp=$(awk -v f=$f '$1 == "stack" { n = split($NF, fr, ";"); split($(NF-1), v, ","); if (fr[n] == f) s += v[1] } END { print s + 0 }' "$TMP/cpu.dec")
	is "records and pprof agree on $f's samples" "$(leaf $f)" "$pp"
done

# --- syscalls over 10 ms: the 5 nanosleeps of 20 ms, not the 100 getppid
ap_ok "--syscalls --syscall-threshold-us 10000 --events" sc record --syscalls --syscall-threshold-us 10000 \
	--events "$TMP/sc.ev" -o "$TMP/sc.folded" --top 0 -- "$WL/sysburn" 100 10 5
"$APERTURE" events "$TMP/sc.ev" >"$TMP/sc.json"
is "Syscall records: 5, all clock_nanosleep (230)" "$(jsum "$TMP/sc.json" '[(k, e["syscall_id"]) for k, e in ev].count(("Syscall", 230)), len(ev)')" "(5, 5)"
is "no getppid (39) record" "$(jsum "$TMP/sc.json" 'sum(1 for k, e in ev if e["syscall_id"] == 39)')" 0
is "each >= 20 ms, returned 0" "$(jsum "$TMP/sc.json" 'sum(1 for k, e in ev if e["duration_ns"] >= 20e6 and e["return_value"] == 0)')" 5
# sysburn timed its sleeps around the calls (a loaded machine makes each longer than 20 ms)
slept=$(sed -n 's/^sysburn: nanosleep_ns=//p' "$TMP/sc.err")
is_within "their sum is what sysburn timed around them (ms)" "$((${slept:-0} / 1000000))" \
	"$(jsum "$TMP/sc.json" 'int(sum(e["duration_ns"] for k, e in ev) / 1e6)')" 5
is "one process, its threads" "$(jsum "$TMP/sc.json" 'len(set((e["pid"], e["comm"]) for k, e in ev))')" 1
pid=$(jsum "$TMP/sc.json" 'ev[0][1]["pid"]')
"$APERTURE" events --summary "$TMP/sc.ev" >"$TMP/sc.sum"
is "--summary: per kind and per pid" "$(cat "$TMP/sc.sum")" "records 5
kind CpuSample 0
kind Lock 0
kind Syscall 5
kind GpuKernel 0
pid $pid total 5 Syscall=5 comm=sysburn"
ok "the syscall profile itself is unchanged: getppid counted" grep -q '^sysburn;getppid ' "$TMP/sc.folded"

# --- lock waits over 50 us: pthread mutex contention, no hold time (not measured)
ap_ok "--locks --lock-threshold-us 50 --events" lk record --locks --lock-threshold-us 50 --events "$TMP/lk.ev" \
	-o "$TMP/lk.folded" --top 0 -- "$WL/lockburn" mutex 1 4
"$APERTURE" events "$TMP/lk.ev" >"$TMP/lk.json"
ge "Lock records: some" "$(jsum "$TMP/lk.json" 'sum(1 for k, e in ev if k == "Lock")')" 10
is "every wait >= 50 us, hold_time_ns 0" "$(jsum "$TMP/lk.json" 'sum(1 for k, e in ev if e["wait_time_ns"] < 50000 or e["hold_time_ns"])')" 0
ge "stacks name mutex_thread (%)" "$(jsum "$TMP/lk.json" 'int(100 * sum(1 for k, e in ev if "mutex_thread" in e["stack_symbols"]) / max(1, len(ev)))')" 90

# --- a forced overrun: 300k getrandom() calls of a few us each, all over a
# 1 us threshold, outrun the 100 ms reads of the 1 MiB ring buffer.  The
# refused records are counted per profiler and said at the end: records
# written + lost + unread = the calls over the threshold (from the same run's
# in-kernel histogram), none silently gone.
R=300000
ap_ok "overrun: --syscall-threshold-us 1, $R getrandom" of record --syscalls --syscall-filter getrandom \
	--syscall-threshold-us 1 --events "$TMP/of.ev" -o "$TMP/of.folded" --top 5 -- "$WL/sysburn" 0 0 0 $R
end=$(grep '^aperture: events: wrote' "$TMP/of.err")
diag "$end"
written=$(sed -n 's/^aperture: events: wrote \([0-9]*\) records.*/\1/p' <<<"$end")
lost=$(sed -n 's/.*), \([0-9]*\) lost (ring buffer full.*/\1/p' <<<"$end")
unread=$(sed -n 's/.* \([0-9]*\) unread$/\1/p' <<<"$end")
ge "the ring buffer overran: records lost" "${lost:-0}" 1000
ok "the end line names who lost them" grep -q "lost (ring buffer full: syscalls ${lost:-x})" <<<"$end"
ok "the syscalls line counts the same losses" grep -q "raw events lost (ring buffer full): ${lost:-x}" "$TMP/of.err"
is "the file holds the records written" "$("$APERTURE" events --summary "$TMP/of.ev" | head -1)" "records ${written:-x}"
is "the aggregation does not lose them: getrandom calls" "$(awk '$1 == "getrandom" && NF == 6 { print $2 }' "$TMP/of.out")" $R
# Histogram slots below 512 ns are under the threshold; the 512-1024 ns slot straddles it.
below=$(awk '$2 == ".." && $3 ~ /^[0-9]+ns$/ && $3 + 0 <= 512 { n += $4 } END { print n + 0 }' "$TMP/of.out")
straddle=$(awk '$1 == "512ns" && $3 == "1024ns" { n += $4 } END { print n + 0 }' "$TMP/of.out")
is_within "written + lost + unread = the calls over 1 us" "$(( R - below - straddle / 2 ))" \
	"$(( ${written:-0} + ${lost:-0} + ${unread:-0} ))" "$(( straddle / 2 + 1 ))"

# --- the thresholds do nothing without --events; --events alone writes an empty stream
ap_ok "--raw-samples without --events" noev record --oncpu --raw-samples -d 1 -o "$TMP/noev.folded" --top 0
ok "nothing sent" sh -c "! grep -q 'raw events sent' '$TMP/noev.err'"
ap_ok "--events with no raw source" empty record --oncpu -d 1 --events "$TMP/empty.ev" -o "$TMP/empty.folded" --top 0
is "an empty stream" "$(stat -c %s "$TMP/empty.ev"):$("$APERTURE" events --summary "$TMP/empty.ev" | head -1)" "0:records 0"
run_ap badev record --oncpu -d 1 --events /nonexistent/dir/x.ev
is "--events into a missing directory: usage error" "$AP_RC" 2
done_testing
