#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run --config FILE: the format, flags over the file, --check-config,
# one FILE:LINE line for a bad key or value, --log-format json, and SIGHUP:
# targets and filters applied live, restart keys named, a bad file refused,
# the pinned totals kept; the symbolizer's cache limit given and reloaded.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn
command -v bpftool >/dev/null || skip_all "bpftool missing"

DIR=/sys/fs/bpf/aperture_cfg_$$
CTL="$TOP/tools/aperture-ctl"
CONF=$TMP/aperture.conf
unpin_at_exit "$DIR"

# 1. The format and --check-config.
cat >"$CONF" <<CONF
# a comment, then blank lines

pin = $DIR
frequency = 49
profilers = oncpu,offcpu
min-block-us = 5
user-only = true
interval = 2s
CONF
run_ap check1 run --config "$CONF" --check-config
is "--check-config exits 0" "$AP_RC" 0
ok "pin from the file" grep -qx "pin = $DIR  # file" "$TMP/check1.out"
ok "frequency is freq, from the file" grep -qx "freq = 49  # file" "$TMP/check1.out"
ok "profilers from the file" grep -qx "profilers = oncpu,offcpu  # file" "$TMP/check1.out"
ok "a flag option set to true" grep -qx "user-only = true  # file" "$TMP/check1.out"
ok "an unset key shows its default" grep -qx "# keep-files =  # default: 0 (no limit)" "$TMP/check1.out"
ok "log-format shown with its default" grep -qx "log-format = text  # default" "$TMP/check1.out"
run_ap check2 run --config "$CONF" -F 77 --offcpu -p $$ --check-config
ok "a flag overrides the file (-F)" grep -qx "freq = 77  # flag" "$TMP/check2.out"
ok "a profiler flag overrides the file's profilers" grep -qx "profilers = offcpu  # flag" "$TMP/check2.out"
echo "pid = 1" >>"$CONF"
run_ap check3 run --config "$CONF" -p $$ --check-config
is "a repeatable key on the command line replaces the file's" "$(grep -c '^pid = ' "$TMP/check3.out")" 1
ok "  and it is the flag's" grep -qx "pid = $$  # flag" "$TMP/check3.out"
run_ap check4 run --config "$TMP/check1.out" --check-config
is "--check-config's output is itself a valid config" "$AP_RC" 0

# 2. Bad files: one line naming FILE:LINE, exit 2.
bad() {
	local name=$1 want=$2
	printf '%b' "$3" >"$TMP/$name.conf"
	run_ap "$name" run --config "$TMP/$name.conf" --check-config
	is "$name: exit 2" "$AP_RC" 2
	is "$name: one line" "$(wc -l <"$TMP/$name.err")" 1
	ok "$name: names $want" grep -q "$TMP/$name.conf:$want" "$TMP/$name.err"
}
bad bad_value "3: -F: 'fast' is not a number" "# x\npin = $DIR\nfrequency = fast\n"
bad bad_key "2: unknown key 'colour'" "pin = $DIR\ncolour = blue\n"
bad bad_line "1: expected 'key = value'" "just words\n"
bad bad_bool "1: user-only: 'maybe'" "user-only = maybe\n"
bad bad_profiler "1: profilers: 'gpux'" "profilers = oncpu,gpux\n"
bad bad_action "1: unknown key 'unpin'" "unpin = true\n"
bad bad_pid "2: -p: no process" "pin = $DIR\npid = 999999999\n"
run_ap missing run --config "$TMP/nonexistent.conf"
is "a missing file: exit 2" "$AP_RC" 2

# 3. --log-format json: one object per line with ts, level, msg.
run_ap json run --log-format json -F fast --check-config
is "json: exit 2" "$AP_RC" 2
ok "json: the error line is a JSON object with ts, level, msg" /usr/bin/python3 -c '
import json, sys
o = json.loads(open(sys.argv[1]).readline())
assert set(o) == {"ts", "level", "msg"} and o["level"] == "error" and "-F" in o["msg"], o' "$TMP/json.err"
run_ap json2 run --log-format yaml --check-config
is "an unknown log format: exit 2" "$AP_RC" 2

# 4. SIGHUP: targets, filters; restart keys named; a bad file refused; totals kept.
cp "$WL/cpuburn" "$TMP/burn_a"; cp "$WL/cpuburn" "$TMP/burn_b"
bg "$TMP/burn_a" 600; A=$BG_PID	# killed at exit: alive for the slowest wait_cpu
bg "$TMP/burn_b" 600; B=$BG_PID
printf 'pin = %s\nprofilers = oncpu\npid = %s\ninterval = 1s\n' "$DIR" "$A" >"$CONF"
"$APERTURE" run --config "$CONF" 2>"$TMP/daemon.err" &
DAEMON=$!; _bg_pids+=("$DAEMON")
for ((i = 0; i < 100; i++)); do [ -e "$DIR/oncpu_active" ] && break; sleep 0.1; done
ok "daemon started from the config file" test -e "$DIR/oncpu_active"
# samples_at_99hz NS: what NS of CPU time give at the daemon's 99 Hz (-F, the default)
samples_at_99hz() { awk -v t="$1" 'BEGIN { printf "%.0f\n", t / 1e9 * 99 }'; }
# logged N RE: waits up to 10 s (scaled) for the Nth line of the daemon's matching RE: a signal's
# answer is awaited, not given a fixed 1.5 s (a loaded machine can take longer to schedule it)
logged() { local i; for ((i = 0; i < 100 * TEST_SCALE; i++)); do [ "$(grep -Ec "$2" "$TMP/daemon.err")" -ge "$1" ] && return 0; sleep 0.1; done; return 1; }
targets() { "$CTL" -d "$DIR" status | awk '$1 == "target_pids" { print $2 }'; }
comm_weight() { APERTURE="$APERTURE" "$CTL" -d "$DIR" dump oncpu | awk -v c="$1" -F';' '$1 == c { n = split($NF, a, " "); t += a[n] } END { print t + 0 }'; }
is "the file's pid is the target" "$(targets)" "$A"
# Each count is compared with the CPU time of a window that holds it: its CPU time read before
# the first snapshot of the totals and after the second (the samples it had when a0 was read
# were over the 2 s sleep's CPU time when counted from the start: 49 for 42 at most under load).
# The windows are 2 s of the workload's own CPU time (wait_cpu), not of wall time.
a0=$(proc_cpu_ns "$A"); w0_a=$(comm_weight burn_a)
wait_cpu "$A" 2000000000 60 || diag "burn_a did not use 2 s of CPU in 60 s"
before_a=$(comm_weight burn_a); a1=$(proc_cpu_ns "$A")
printf 'pin = %s\nprofilers = oncpu\npid = %s\nfrequency = 49\nuser-only = true\ninterval = 1s\n' "$DIR" "$B" >"$CONF"
kill -HUP "$DAEMON"; logged 1 '^aperture: reload: targets' || diag "no 'reload: targets' line in 10 s"
ok "SIGHUP: the daemon lives on" kill -0 "$DAEMON"
is "SIGHUP: the new target set" "$(targets)" "$B"
ok "SIGHUP: the filter applied (stack_mode user)" sh -c "'$CTL' -d '$DIR' status | grep -Eq '^stack_mode +1'"
ok "SIGHUP: freq named as needing the programs loaded again" grep -q "reload: --freq 49 (loaded: 99): not applied.*--unpin" "$TMP/daemon.err"
b0=$(proc_cpu_ns "$B"); b_before=$(comm_weight burn_b)
wait_cpu "$B" 2000000000 60 || diag "burn_b did not use 2 s of CPU in 60 s"
after_a=$(comm_weight burn_a)
b_after=$(comm_weight burn_b); b1=$(proc_cpu_ns "$B")
ge "SIGHUP: the totals of the old target are kept" "$after_a" "$before_a"
# Known: burn_a's CPU time over its window (proc_cpu_ns) at 99 Hz.  At least 60% of it (the
# snapshots of the totals are taken inside the window), at most all of it + 30% + 3 samples
# (samples of a task that gets a fifth of a CPU in short slices scatter by about the square root).
diag "burn_a: $((a1 - a0)) ns of CPU before the reload ($(samples_at_99hz $((a1 - a0))) samples at 99 Hz, $((before_a - w0_a)) counted); burn_b: $((b1 - b0)) ns after it"
ge "  and counted before the reload: >= 60% of burn_a's CPU time x 99 Hz" "$((before_a - w0_a))" \
	"$(samples_at_99hz $(( (a1 - a0) * 6 / 10 )))"
ok "  and not more than its CPU time allows ($((before_a - w0_a)) <= $(samples_at_99hz $(( (a1 - a0) * 13 / 10 + 30000000 ))))" \
	test "$((before_a - w0_a))" -le "$(samples_at_99hz $(( (a1 - a0) * 13 / 10 + 30000000 )))"
ge "SIGHUP: the new target is counted: >= 60% of burn_b's CPU time x 99 Hz over 2 s of it" "$((b_after - b_before))" \
	"$(samples_at_99hz $(( (b1 - b0) * 6 / 10 )))"
ok "  and not more than its CPU time allows ($((b_after - b_before)) <= $(samples_at_99hz $(( (b1 - b0) * 13 / 10 + 30000000 ))))" \
	test "$((b_after - b_before))" -le "$(samples_at_99hz $(( (b1 - b0) * 13 / 10 + 30000000 )))"
echo "frequency = slow" >>"$CONF"
kill -HUP "$DAEMON"; logged 1 'the running ones are kept' || diag "no refusal line in 10 s"
ok "a bad file on SIGHUP: FILE:LINE said" grep -q "$CONF:7: -F: 'slow'" "$TMP/daemon.err"
ok "  the running settings kept" grep -q "the running ones are kept" "$TMP/daemon.err"
ok "  the daemon lives on" kill -0 "$DAEMON"
is "  the targets unchanged" "$(targets)" "$B"
ge "a health line per interval" "$(grep -c 'interval 1s: oncpu: ' "$TMP/daemon.err")" 2
n_stats=$(grep -c 'stats: oncpu: ' "$TMP/daemon.err")
kill -USR1 "$DAEMON"; logged $((n_stats + 1)) 'stats: oncpu: ' || diag "no stats line in 10 s"
ok "SIGUSR1: a stats line with caps and use" grep -Eq 'stats: oncpu: stacks [0-9]+/[0-9]+ totals [0-9]+/[0-9]+ .*rss [0-9]+ KiB, [0-9]+ fds' "$TMP/daemon.err"
ok "  with the heap by holder" grep -Eq 'stats: .*memory KiB: .*unwind [0-9]+, profiles [0-9]+, other -?[0-9]+ of [0-9]+ in use' "$TMP/daemon.err"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; rc=$?
is "SIGTERM: exit 0" "$rc" 0
"$APERTURE" run --unpin --pin "$DIR" >/dev/null 2>&1
ok "unpinned" test ! -e "$DIR"

# 5. The symbolizer's settings: symbol-cache-mb given to it at the start, a SIGHUP's new value
# applied live (the stats line, every interval, says the limit).
# wait_line RE FILE: up to 10 s (scaled) for a line matching RE.
wait_line() { for ((i = 0; i < 100 * TEST_SCALE; i++)); do grep -Eq "$1" "$2" && return 0; sleep 0.1; done; return 1; }
mkdir -m 700 "$TMP/out5"
printf 'pin = %s\nprofilers = oncpu\noutput-dir = %s\ninterval = 1s\nsymbol-cache-mb = 8\n' "$DIR" "$TMP/out5" >"$CONF"
"$APERTURE" run --config "$CONF" 2>"$TMP/sym.err" &
DAEMON=$!; _bg_pids+=("$DAEMON")
ok "symbol-cache-mb = 8: the symbol cache's limit is 8192 KiB" wait_line 'symbols [0-9]+/8192 KiB' "$TMP/sym.err"
sed -i 's/^symbol-cache-mb = 8$/symbol-cache-mb = 16/' "$CONF"
kill -HUP "$DAEMON"
ok "SIGHUP, symbol-cache-mb = 16: 16384 KiB from then on" wait_line 'symbols [0-9]+/16384 KiB' "$TMP/sym.err"
kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null; rc=$?
is "  SIGTERM: exit 0" "$rc" 0
"$APERTURE" run --unpin --pin "$DIR" >/dev/null 2>&1
done_testing
