#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A restarted `aperture run --pin` takes over the set its predecessor left
# pinned, and applies what its own command line asks: targets, --cgroup and
# filters (as SIGHUP does); what loaded programs cannot change refuses the
# start in one line naming the way out (--unpin); a target aperture-ctl adds
# as soon as the takeover says so is counted.  Each setting is checked by
# measurement against workloads with a known answer.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn sleeper
command -v bpftool >/dev/null || skip_all "bpftool missing"

DIR=/sys/fs/bpf/aperture_takeover_$$	# bpffs refuses names with dots
CTL="$TOP/tools/aperture-ctl"
unpin_at_exit "$DIR"

# start_daemon NAME ARGS: aperture run --pin $DIR --oncpu --offcpu ARGS (pinned_daemon_start)
start_daemon() { local name=$1; shift; pinned_daemon_start "$name" "$DIR" --oncpu --offcpu "$@"; }
kill_daemon() { kill -9 "$DAEMON"; wait "$DAEMON" 2>/dev/null; }
# held NAME SECONDS [CGROUP]: a shell that waits, then execs $TMP/NAME SECONDS (a
# copy of cpuburn or sleeper: its pid stays, so it can be a -p target before it
# runs; it prints its result to $TMP/NAME.out); sets HELD
held() {
	local join=""
	mkfifo "$TMP/$1.go"
	[ -n "${3:-}" ] && join="echo \$\$ > '$3/cgroup.procs';"
	bg sh -c "read x < '$TMP/$1.go'; $join exec '$TMP/$1' $2 > '$TMP/$1.out'"
	HELD=$BG_PID
}
release() { echo go > "$TMP/$1.go"; }
# folded PROFILER: the pinned totals as folded lines (kernel frames named)
folded() { "$APERTURE" dump --pin "$DIR" "$1"; }
comm_weight() { folded oncpu | awk -v c="$1" -F';' '$1 == c { n = split($NF, a, " "); t += a[n] } END { printf "%.0f\n", t }'; }
targets() { "$CTL" -d "$DIR" status | awk '$1 == "target_pids" { print $2 }' | tr ',' '\n' | grep . | sort -n | tr '\n' ' '; }
# samples_want OUT: the samples cpuburn's CPU time (cpu_ns=N in OUT) gives at 99 Hz
samples_want() { awk -v ns="$(kv "$1" cpu_ns)" 'BEGIN { printf "%.0f\n", ns / 1e9 * 99 }'; }
# samples_slack WANT: per-CPU sampling counts a process's CPU time like a Poisson draw: 3 sigma
# (+3). On a loaded machine a 5 s burner gets 40-90 samples, where 10% would be under 1 sigma.
samples_slack() { awk -v w="$1" 'BEGIN { printf "%.0f\n", 3 * sqrt(w) + 3 }'; }
SLEEP_RE='^sleeper_[0-9];.*;do_nanosleep_\[k\]'
JOIN_RE='^sleeper_[0-9];.*;futex_wait_\[k\]'

# 1. The first daemon targets A; a sleeper under the default minimum block
#    time has its 50 ms sleeps counted (the known answer the filter below removes).
cp "$WL/cpuburn" "$TMP/burn_a"; cp "$WL/cpuburn" "$TMP/burn_b"; cp "$WL/cpuburn" "$TMP/burn_c"
cp "$WL/cpuburn" "$TMP/burn_d"; cp "$WL/sleeper" "$TMP/sleeper_0"; cp "$WL/sleeper" "$TMP/sleeper_1"
bg "$TMP/burn_a" 600 >/dev/null; A=$BG_PID	# killed at exit; alive for every check of it
held sleeper_0 2; S0=$HELD
ok "first daemon starts" start_daemon first -p "$A,$S0"
release sleeper_0
wait_gone "$S0" 10
slept=$(kv "$TMP/sleeper_0.out" slept_ns)
folded offcpu > "$TMP/off0.folded"
is_within "first daemon: the 50 ms sleeps counted (ns, 10%)" "$slept" "$(stack_weight "$TMP/off0.folded" "$SLEEP_RE")" "$((slept / 10))"
wait_cpu "$A" 1000000000 60 || diag "burn_a did not use 1 s of CPU in 60 s"
ge "first daemon: A counted (over 1 s of its CPU at least)" "$(comm_weight burn_a)" 50

# 2. kill -9, and a restart with other targets and --min-block-us: A stops
#    being counted, B is counted from its first sample, the new minimum drops
#    the sleeps (the 2 s pthread_join stays: the profiler runs).
kill_daemon
held burn_b 5; B=$HELD
held sleeper_1 2; S1=$HELD
ok "restart with -p B,S --min-block-us 1000000 starts" start_daemon second -p "$B,$S1" --min-block-us 1000000
missing=""
for f in unwind_rows unwind_procs; do [ -e "$DIR/$f" ] || missing="$missing $f"; done
is "  the unwinding tables are pinned" "$missing" ""
ok "  it says it took over" grep -q 'took over .*targets (2 pids, cgroup 0) and filters of this command line applied' "$TMP/second.err"
is "  the target set is the new one, the old pid is gone from it" "$(targets)" "$(printf '%s\n' "$B" "$S1" | sort -n | tr '\n' ' ')"
a1=$(comm_weight burn_a)
release burn_b; release sleeper_1
wait_gone "$B" 20; wait_gone "$S1" 10
a2=$(comm_weight burn_a)
want=$(samples_want "$TMP/burn_b.out")
got=$(comm_weight burn_b)
diag "B: $got samples, its CPU time gives $want; A grew $((a2 - a1)) meanwhile"
ge "  B ran (enough CPU time for the next check to mean something)" "$want" 25
is_within "  B's samples = its CPU time x 99 Hz (3 sigma)" "$want" "$got" "$(samples_slack "$want")"
ok "  A is not counted any more (grew $((a2 - a1)))" test "$((a2 - a1))" -le 2
folded offcpu > "$TMP/off1.folded"
slept=$(kv "$TMP/sleeper_1.out" slept_ns)
got=$(stack_weight "$TMP/off1.folded" '^sleeper_1;.*;do_nanosleep_\[k\]')
ok "  --min-block-us 1000000: the 50 ms sleeps not counted ($got of $slept ns)" awk -v g="$got" -v s="$slept" 'BEGIN { exit !(s > 0 && g < s / 20) }'
ge "  --min-block-us 1000000: the 2 s pthread_join counted (ns)" "$(stack_weight "$TMP/off1.folded" '^sleeper_1;.*;futex_wait_\[k\]')" 1500000000

# 3. kill -9, and a restart with --cgroup: C in the cgroup is counted, D
#    (outside, running all along) and A are not.
kill_daemon
make_cgroup
bg "$TMP/burn_d" 60 >/dev/null; D=$BG_PID
held burn_c 5 "$CG"; C=$HELD
ok "restart with --cgroup starts" start_daemon third --cgroup "$CG"
is "  no target pids: the cgroup selects" "$(targets)" ""
a1=$(comm_weight burn_a); d1=$(comm_weight burn_d)
release burn_c
wait_gone "$C" 20
a2=$(comm_weight burn_a); d2=$(comm_weight burn_d)
want=$(samples_want "$TMP/burn_c.out")
got=$(comm_weight burn_c)
diag "C: $got samples, its CPU time gives $want; D grew $((d2 - d1)), A $((a2 - a1))"
is_within "  C in the cgroup: samples = its CPU time x 99 Hz (3 sigma)" "$want" "$got" "$(samples_slack "$want")"
ok "  D outside the cgroup is not counted (grew $((d2 - d1)))" test "$((d2 - d1))" -le 2
ok "  A outside the cgroup is not counted (grew $((a2 - a1)))" test "$((a2 - a1))" -le 2
kill "$D"

# 4. What loaded programs cannot change: one line naming it, its loaded value
#    and --unpin; exit 2; the pinned set is left as it was (and keeps counting).
kill_daemon
pins_before=$(ls "$DIR" | sort | tr '\n' ' ')
# refused NAME WHAT ARGS: a start with ARGS is refused naming WHAT
refused() {
	local name=$1 what=$2
	shift 2
	AP_RC=0
	timeout 10 "$APERTURE" run --pin "$DIR" "$@" >/dev/null 2>"$TMP/$name.err" || AP_RC=$?
	is "$name: refused with exit 2" "$AP_RC" 2
	is "$name: one line" "$(wc -l < "$TMP/$name.err")" 1
	ok "$name: it names $what and --unpin" grep -q -- "$what.*aperture run --unpin --pin $DIR" "$TMP/$name.err"
	[ "$AP_RC" = 2 ] || show_err "$name"
}
refused freq '--freq 199 (loaded: 99)' --oncpu --offcpu -F 199
refused kinds 'profilers oncpu (loaded: oncpu,offcpu)' --oncpu
refused stacks '--stacks-max 4096 (loaded: 16384)' --oncpu --offcpu --stacks-max 4096
is "the refusals left the pins as they were" "$(ls "$DIR" | sort | tr '\n' ' ')" "$pins_before"
g1=$(comm_weight burn_a); wait_cpu "$A" 500000000 60; g2=$(comm_weight burn_a)
is "  with the last daemon's cgroup filter (A not counted)" "$((g2 - g1))" 0

# 5. The daemon's user stacks are walked by DWARF CFI where the code has no
#    frame pointers (Debian's xz and liblzma): it builds the tables, as record
#    does, and a restarted one builds them again (for a process running all
#    along, and for one started after the takeover).
# reach FOLDED COMM: percent of COMM's samples whose stack reaches __libc_start_call_main
reach() { pct "$(stack_weight "$1" "^$2;.*;__libc_start_call_main;")" "$(stack_weight "$1" "^$2;")"; }
# short_of FOLDED COMM: the heaviest of COMM's stacks that do not reach it, as diagnostics
short_of() { grep "^$2;" "$1" | grep -v ';__libc_start_call_main;' | sort -t' ' -k2 -rn | head -5 | cut -c1-200 | sed 's/^/#   /'; }
if [ -x /usr/bin/xz ]; then
	"$APERTURE" run --unpin --pin "$DIR" 2>/dev/null
	head -c 40000000 /dev/urandom > "$TMP/rand.bin"
	cp /usr/bin/xz "$TMP/xz_a"; cp /usr/bin/xz "$TMP/xz_b"
	bg "$TMP/xz_a" -9 -T1 -c "$TMP/rand.bin" >/dev/null; XA=$BG_PID
	ok "daemon on xz starts" start_daemon xz1 -F 499 -p "$XA"
	# Its first samples wait for the tables (marked [before-unwind-tables]): 2-5% of 6 s here.  They
	# cost about the same CPU time of xz on a loaded machine, where a fixed sleep gives xz less CPU:
	# the runs are measured in xz's own CPU time (wait_cpu), 8 s of it here, 6 s after the restart.
	wait_cpu "$XA" 8000000000 120 || diag "xz_a did not use 8 s of CPU in 120 s"
	"$APERTURE" dump --pin "$DIR" --symbolize oncpu > "$TMP/xz1.folded"
	n1=$(stack_weight "$TMP/xz1.folded" '^xz_a;'); r1=$(stack_weight "$TMP/xz1.folded" '^xz_a;.*;__libc_start_call_main;')
	ge "xz: samples" "$n1" 200
	ge "xz: >= 95% of the daemon's samples reach __libc_start_call_main" "$(reach "$TMP/xz1.folded" xz_a)" 95
	short_of "$TMP/xz1.folded" xz_a
	kill_daemon
	held xz_b "-9 -T1 -c $TMP/rand.bin"; XB=$HELD
	ok "restart on xz starts" start_daemon xz2 -F 499 -p "$XA,$XB"
	release xz_b
	wait_cpu "$XB" 6000000000 120 || diag "xz_b did not use 6 s of CPU in 120 s"
	"$APERTURE" dump --pin "$DIR" --symbolize oncpu > "$TMP/xz2.folded"
	n2=$(stack_weight "$TMP/xz2.folded" '^xz_a;'); r2=$(stack_weight "$TMP/xz2.folded" '^xz_a;.*;__libc_start_call_main;')
	diag "xz_a since the restart: $((r2 - r1)) of $((n2 - n1)) samples reach main"
	ge "after the takeover: xz running all along, samples" "$((n2 - n1))" 200
	ge "  >= 95% of them reach __libc_start_call_main" "$(pct "$((r2 - r1))" "$((n2 - n1))")" 95
	ge "after the takeover: xz started since, samples" "$(stack_weight "$TMP/xz2.folded" '^xz_b;')" 200
	ge "  >= 95% of them reach __libc_start_call_main" "$(reach "$TMP/xz2.folded" xz_b)" 95
	kill "$XA" "$XB"
else
	skip "the daemon's stacks on Debian's xz" "xz is not installed"
fi

# 6. A script steers a taken-over set as soon as the daemon says it took over (the README's rule):
#    no write of the daemon's start may come after that line, or aperture-ctl's target add is lost
#    to it (its oncpu bit dropped by the takeover's target set, or its control write overwritten
#    with an older cache_gen, and the per-CPU "not a target" note stays valid).  A fresh start is
#    ready when NAME_active is there.  The readiness is polled every 10 ms: the window the daemon
#    left open was a few ms wide.  Each round: a fresh daemon (-p 1) stopped with SIGTERM, a
#    takeover without -p, then a new cpuburn added at once; its samples must follow its CPU time.
# wait_ready WHAT: up to 10 s for the pin DIR/WHAT (a path) or the line 'took over' (WHAT = line)
wait_ready() {
	local i
	for ((i = 0; i < 1000 * TEST_SCALE; i++)); do
		if [ "$1" = line ]; then grep -qs 'took over' "$TMP/steer.err" && return 0
		else [ -e "$DIR/$1" ] && return 0; fi
		sleep 0.01
	done
	return 1
}
kill -9 "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null
"$APERTURE" run --unpin --pin "$DIR" 2>/dev/null
ROUNDS=6
lost=0
for ((r = 0; r < ROUNDS; r++)); do
	"$APERTURE" run --pin "$DIR" -F 499 --oncpu -p 1 2>"$TMP/steer.err" &
	DAEMON=$!; _bg_pids+=("$DAEMON")
	wait_ready oncpu_active || { fail "steer round $r: the fresh daemon is ready"; break; }
	kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
	cp "$WL/cpuburn" "$TMP/steer_$r"
	"$APERTURE" run --pin "$DIR" -F 499 --oncpu 2>"$TMP/steer.err" &
	DAEMON=$!; _bg_pids+=("$DAEMON")
	wait_ready line || { fail "steer round $r: the takeover says it took over"; break; }
	bg "$TMP/steer_$r" 2 >"$TMP/steer_$r.out"; Z=$BG_PID
	"$CTL" -d "$DIR" target add "$Z"
	wait_gone "$Z" 20
	# Counted from its start: no target set before the add (the takeover has no -p).
	want=$(awk -v ns="$(kv "$TMP/steer_$r.out" cpu_ns)" 'BEGIN { printf "%.0f\n", ns / 1e9 * 499 }')
	got=$(comm_weight "steer_$r")
	slack=$(samples_slack "$want")
	diag "steer round $r: $got samples, its CPU time gives $want"
	awk -v w="$want" -v g="$got" -v s="$slack" 'BEGIN { exit !(g >= w - s && g <= w + s) }' || lost=$((lost + 1))
	kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null
	"$APERTURE" run --unpin --pin "$DIR" 2>/dev/null
done
is "a target added at once after the takeover said so is counted in every round (3 sigma; rounds lost)" "$lost" 0

done_testing
