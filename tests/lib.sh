# SPDX-License-Identifier: GPL-2.0
# TAP helpers for aperture's tests.  Source it from a tests/**/*.t bash script:
#   . "$(dirname "$0")/../lib.sh"   (or ./lib.sh from tests/)
#   plan 3; ok "name" test -f x; is_within "share" 50 48.7 5; done_testing
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# APERTURE_BIN: another build to test, e.g. build/asan/aperture (make test-asan)
APERTURE="${APERTURE_BIN:-$TOP/aperture}"
WL="$TOP/tests/build"			# built workloads and test binaries
TMP=$(mktemp -d /tmp/aperture-test.XXXXXX)
_n=0; _failed=0; _bg_pids=()
# APERTURE_TEST_SCALE: a whole number that multiplies the tests' waits and timeouts (not their
# known answers) where everything runs slower: qemu TCG in tools/test-kernels.sh sets 10.
TEST_SCALE=${APERTURE_TEST_SCALE:-1}
[[ $TEST_SCALE =~ ^[1-9][0-9]*$ ]] || { echo "Bail out! APERTURE_TEST_SCALE=$TEST_SCALE is not a whole number >= 1"; exit 1; }

plan() { echo "1..$1"; }
diag() { printf '# %s\n' "$*"; }
pass() { _n=$((_n+1)); echo "ok $_n - $1"; }
fail() { _n=$((_n+1)); _failed=$((_failed+1)); echo "not ok $_n - $1"; shift; [ $# -gt 0 ] && diag "$@"; return 0; }
# ok NAME CMD...: passes when CMD exits 0
ok() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi; }
# is NAME GOT WANT
is() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi; }
# is_number X: X is a decimal number (sign, fraction and exponent allowed; not empty, not "-" or "None")
is_number() { [[ $1 =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; }
# _not_numbers WHAT=VALUE...: the arguments whose VALUE is not a number, for a diagnostic (empty when all are)
_not_numbers() { local a bad=; for a in "$@"; do is_number "${a#*=}" || bad+=" ${a%%=*}='${a#*=}'"; done; echo "${bad# }"; }
# is_within NAME WANT GOT TOLERANCE: |GOT - WANT| <= TOLERANCE (numbers, may be fractional);
# fails, saying which, when any of them is not a number
is_within() {
	local bad
	bad=$(_not_numbers want="$2" got="$3" tolerance="$4")
	if [ -n "$bad" ]; then
		fail "$1" "not a number: $bad"
	elif awk -v w="$2" -v g="$3" -v t="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= t) }'; then
		pass "$1 ($3, want $2 +- $4)"
	else
		fail "$1" "got '$3', want $2 +- $4"
	fi
}
# _bound NAME GOT BOUND OP WHAT: GOT OP BOUND (OP >= or <=; WHAT min or max); fails, saying
# which, when either is not a number
_bound() {
	local bad
	bad=$(_not_numbers got="$2" "$5=$3")
	if [ -n "$bad" ]; then
		fail "$1" "not a number: $bad"
	elif awk -v g="$2" -v m="$3" -v op="$4" 'BEGIN { exit !(op == ">=" ? g + 0 >= m + 0 : g + 0 <= m + 0) }'; then
		pass "$1 ($2 $4 $3)"
	else
		fail "$1" "got '$2', want $4 $3"
	fi
}
# ge NAME GOT MIN: GOT >= MIN
ge() { _bound "$1" "$2" "$3" ">=" min; }
# le NAME GOT MAX: GOT <= MAX
le() { _bound "$1" "$2" "$3" "<=" max; }
done_testing() { echo "1..$_n"; exit $(( _failed > 0 )); }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# bg CMD...: starts CMD in the background, killed at exit; sets BG_PID
bg() { "$@" & BG_PID=$!; _bg_pids+=("$BG_PID"); }
_cleanup() {
	local p
	for p in "${_bg_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}

require_root() { [ "$(id -u)" = 0 ] || skip_all "needs root"; }

# leaf_share FOLDED FUNC: percent of total weight whose leaf frame is FUNC
leaf_share() {
	awk -v f="$2" '{ w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";"); tot += w; if (fr[n] == f) hit += w }
		END { if (tot == 0) print 0; else printf "%.2f\n", 100 * hit / tot }' "$1"
}

# --- helpers for the end-to-end `aperture record` tests (tests/{profilers,cli,stacks,...}/*.t) ---
# Note: awk here is mawk, which prints big numbers as 1.2e+13 with `print` and
# caps printf %d at 2^31-1: off-CPU weights are nanoseconds, so use %.0f.

# at_exit 'SHELL CODE': runs after the bg processes were killed and $TMP removed
_exit_hooks=()
at_exit() { _exit_hooks+=("$1"); }
# unpin_at_exit DIR: `aperture run --unpin --pin DIR` at exit, whatever the test left pinned there
unpin_at_exit() { at_exit "'$APERTURE' run --unpin --pin '$1' >/dev/null 2>&1"; }
# pinned_daemon_start NAME DIR ARGS: `aperture run --pin DIR ARGS` in the background (stderr in
# $TMP/NAME.err, its pid in DAEMON); waits until it profiles (a takeover applied), or fails
pinned_daemon_start() {
	local name=$1 dir=$2 i
	shift 2
	"$APERTURE" run --pin "$dir" "$@" 2>"$TMP/$name.err" &
	DAEMON=$!
	_bg_pids+=("$DAEMON")
	for ((i = 0; i < 150 * TEST_SCALE; i++)); do
		grep -qs '^aperture: profiling; pinned under' "$TMP/$name.err" && return 0
		kill -0 "$DAEMON" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# chain_share FOLDED LEAF_ERE CHAIN_ERE: of the weight whose leaf user frame
# matches LEAF_ERE, the percent whose whole stack (comm first, kernel frames
# dropped) matches CHAIN_ERE.  Samples taken before the process's tables
# existed (marked "[before-unwind-tables]" by the BPF side) are left out.
chain_share() {
	LEAF="$2" CHAIN="$3" awk '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); gsub(/;[^;]*_\[k\]/, "", s)
		if (s ~ /\[before-unwind-tables\]/) next
		n = split(s, fr, ";"); if (fr[n] !~ ENVIRON["LEAF"]) next
		tot += w; if (s ~ ENVIRON["CHAIN"]) hit += w }
		END { if (tot == 0) print 0; else printf "%.2f\n", 100 * hit / tot }' "$1"
}
# The test's own shell only: bash runs the EXIT trap in a subshell that a signal reaches right after
# its fork, before it resets its traps (a watchdog `( sleep 8; kill ... ) &` killed at once: 287 of
# 300 such kills here), and that subshell would kill the test's processes and delete $TMP under it
# (agent/85-faults.t failed so, at random, in full runs).  $BASHPID is not yet the child's then;
# /proc/self is.
_cleanup_with_hooks() {
	local h me
	read -r me _ </proc/self/stat
	[ "$me" = "$$" ] || return 0
	_cleanup
	for h in "${_exit_hooks[@]}"; do eval "$h"; done
}
trap _cleanup_with_hooks EXIT

require_aperture() { [ -x "$APERTURE" ] || skip_all "aperture is not built (make aperture)"; }
require_workload() { local w; for w in "$@"; do [ -x "$WL/$w" ] || skip_all "$WL/$w is not built (make -C tests)"; done; }

# run_ap NAME ARGS...: runs aperture ARGS; stdout goes to $TMP/NAME.out, stderr
# to $TMP/NAME.err, the exit status to AP_RC and the wall time (s) to AP_SECS.
run_ap() {
	local name=$1 t0
	shift
	t0=$(date +%s.%N)
	AP_RC=0
	"$APERTURE" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || AP_RC=$?
	AP_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }')
}
# show_err NAME: the stderr of run_ap NAME as TAP diagnostics
show_err() { sed 's/^/#   /' "$TMP/$1.err" | head -20; }
# ap_ok TESTNAME NAME ARGS...: run_ap, then one test that it exited 0
ap_ok() {
	local tname=$1
	shift
	run_ap "$@"
	is "$tname exits 0" "$AP_RC" 0
	[ "$AP_RC" = 0 ] || show_err "$1"
}

# folded_total FOLDED: sum of all weights
folded_total() { awk '{ t += $NF } END { printf "%.0f\n", t }' "$1"; }
# stack_weight FOLDED ERE: total weight of lines whose stack (the line less its
# weight, `comm;f1;f2...`) matches ERE; e.g. ';wait_on_pipe;.*pipe_read_\[k\]'
stack_weight() {
	RE="$2" awk '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ ENVIRON["RE"]) t += w }
		END { printf "%.0f\n", t }' "$1"
}
# leaf_weight FOLDED FUNC: total weight of stacks whose leaf frame is FUNC
leaf_weight() { stack_weight "$1" ";$2\$"; }
# folded_comms FOLDED: the distinct comms (first field), one a line, sorted
folded_comms() { sed 's/;.*//; s/ [0-9]*$//' "$1" | sort -u; }
# folded_bad_lines FOLDED: lines that are not `comm;frame;... WEIGHT`
folded_bad_lines() { grep -Ecv '^[^;]+(;[^;]+)* [0-9]+$' "$1"; }
# folded_kernel_order_errors FOLDED: lines where a user frame follows a kernel (_[k]) frame
folded_kernel_order_errors() {
	awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); k = 0
		for (i = 2; i <= n; i++) { if (fr[i] ~ /_\[k\]$/) k = 1; else if (k) { bad++; break } } }
		END { print bad + 0 }' "$1"
}
# count_frames FOLDED ERE: how many frames (not comms) match ERE, over all lines
count_frames() {
	RE="$2" awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";")
		for (i = 2; i <= n; i++) if (fr[i] ~ ENVIRON["RE"]) c++ }
		END { print c + 0 }' "$1"
}
# kv FILE KEY: the value of KEY=VALUE in FILE (workload result lines)
kv() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }
# pct PART WHOLE: PART as a percentage of WHOLE (0 when WHOLE is 0)
pct() { awk -v p="$1" -v w="$2" 'BEGIN { if (w == 0) print 0; else printf "%.2f\n", 100 * p / w }'; }
# wait_gone PID SECONDS: waits for PID to exit; fails on timeout
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# make_cgroup: creates a cgroup v2 child (path in CG), removed at exit
CGROUP2_ROOT=${CGROUP2_ROOT:-/sys/fs/cgroup/unified}
make_cgroup() {
	[ -f "$CGROUP2_ROOT/cgroup.procs" ] || skip_all "no cgroup v2 at $CGROUP2_ROOT"
	CG="$CGROUP2_ROOT/aperture-test.$$"
	mkdir "$CG" || skip_all "cannot create $CG"
	at_exit "rmdir '$CG' 2>/dev/null || { sleep 0.5; rmdir '$CG'; }"
}
# count_user_frames FOLDED: frames (not comms) that are not kernel (_[k]) frames
count_user_frames() {
	awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";")
		for (i = 2; i <= n; i++) if (fr[i] !~ /_\[k\]$/) c++ }
		END { print c + 0 }' "$1"
}
# skip NAME REASON: a test that could not run here, counted as passed
skip() { _n=$((_n+1)); echo "ok $_n - $1 # SKIP $2"; }
# unless_sanitized REASON CHECK NAME ARGS...: runs the check (ok, is, ge, ...) NAME, or records it
# skipped under the sanitizer build (make test-asan sets APERTURE_SANITIZED): for checks bound by
# how fast aperture itself works, which ASan and UBSan slow several times.
unless_sanitized() {
	local why=$1
	shift
	if [ -n "${APERTURE_SANITIZED:-}" ]; then skip "$2" "sanitizer build: $why"; else "$@"; fi
}
# proc_cpu_ns PID: the CPU time PID's live threads used so far, in ns (sum_exec_runtime from
# /proc/PID/task/*/schedstat: exact, where utime and stime are tick samples)
proc_cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%.0f\n", t }'; }
# wait_cpu PID NS MAX_S: waits until PID's threads used NS ns more CPU time than when called
# (proc_cpu_ns), polling every 0.1 s for at most MAX_S (times TEST_SCALE) seconds of wall time;
# fails on timeout or when PID is gone.  For a check that counts a busy workload's samples: a
# fixed sleep gives it 1/3 of the samples when two other busy loops share the 2 cores, this the same.
wait_cpu() {
	local want i
	want=$(awk -v now="$(proc_cpu_ns "$1")" -v ns="$2" 'BEGIN { printf "%.0f\n", now + ns }')
	for ((i = 0; i < $3 * TEST_SCALE * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 1
		awk -v now="$(proc_cpu_ns "$1")" -v want="$want" 'BEGIN { exit !(now >= want) }' && return 0
		sleep 0.1
	done
	return 1
}
# samples_expected HZ SECONDS CPU_NS WALL: the samples at HZ of SECONDS recorded of a process that
# used CPU_NS of CPU (proc_cpu_ns before and after) over WALL seconds around the recording (its CPU
# share taken as even over WALL: a loaded machine gives it less, and fewer samples are expected)
samples_expected() {
	awk -v hz="$1" -v d="$2" -v ns="$3" -v w="$4" \
		'BEGIN { printf "%.0f\n", (w > 0 ? hz * d * (ns / 1e9) / w : 0) }'
}
# cpu_ns_samples FILE HZ: the samples at HZ of the CPU time a workload printed as cpu_ns= in FILE
cpu_ns_samples() { awk -v ns="$(kv "$1" cpu_ns)" -v hz="$2" 'BEGIN { printf "%.0f\n", ns * hz / 1e9 }'; }
# idle_ticks: machine-wide idle time so far, in USER_HZ ticks (/proc/stat)
idle_ticks() { awk '$1 == "cpu" { print $5; exit }' /proc/stat; }

# have_feature NAME: the kernel has feature NAME, as `aperture doctor --json`
# probes it (APERTURE_DISABLE_FEATURES switches features off for a test).
# Checks that need an optional feature skip only when this says no.
have_feature() {
	[ -s "$TMP/doctor.json" ] || APERTURE_DISABLE_FEATURES= "$APERTURE" doctor --json >"$TMP/doctor.json" 2>/dev/null
	grep -q "^    \"$1\": {\"ok\": true" "$TMP/doctor.json"
}
# feature_why NAME: the errno and step of a missing feature, for a TAP skip reason
feature_why() { grep "^    \"$1\":" "$TMP/doctor.json" | sed 's/^ *//; s/,$//'; }
# ap_programs NAME: how many loaded BPF programs called NAME (bpftool truncates to 15 chars) that
# nothing accounts for: no process holds them open and none of their maps is pinned.  Such a
# program outlived its loader and its pins: a leak.  A program some process holds (another
# test's, another session's) dies with it, and one whose maps are pinned belongs to a pinned set
# (another test's daemon between kill -9 and takeover): neither is counted.
ap_programs() {
	local held pinned
	held=$(grep -hs '^prog_id:' /proc/[0-9]*/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u | tr '\n' ' ')
	pinned=$(bpftool -f map show 2>/dev/null | awk '/^[0-9]+: / { id = $1; sub(/:$/, "", id) }
		/^\tpinned / { print id }' | sort -u | tr '\n' ' ')
	bpftool prog show 2>/dev/null | awk -v n="${1:0:15}" -v held=" $held" -v pinned=" $pinned" '
		function done_prog(  i, k, ids) { if (!cand) return; k = split(maps, ids, ",")
			for (i = 1; i <= k; i++) if (index(pinned, " " ids[i] " ")) { cand = 0; return }
			c++; cand = 0 }
		/^[0-9]+: / { done_prog(); maps = ""; id = $1; sub(/:$/, "", id)
			cand = $0 ~ " name " n " " && index(held, " " id " ") == 0 }
		/map_ids / { for (i = 1; i < NF; i++) if ($i == "map_ids") maps = $(i + 1) }
		END { done_prog(); print c + 0 }'
}
