#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Code objects freed and others allocated at their addresses between the
# sample and the naming: reuse.py makes f0..f23 one after another (each its
# own name and first line), spins 20M iterations in each (~0.25 s; 40M under the sanitizer build) and
# deletes it; the next code object lands where the last one was.  The BPF
# walk counts the generations of code objects at an address (python_codes):
# a new one gets other frames (another stack), named when the BPF side
# reports it; and the loader names a frame only while its generation still
# lives at its address.  The hook APERTURE_TEST_PYTHON_NO_PREFETCH=1 names
# frames only at the next drain (once a second), by then several cycles
# later: those frames must be left unnamed ([python], counted), never given
# the name of the function that lives there now, which would pile several
# cycles onto one name.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
have_feature dwarf_unwind || skip_all "no DWARF unwinding here (CPython frames need it): $(feature_why dwarf_unwind)"
PY="$(cd "$(dirname "$0")/../workloads/python" && pwd)"
CYCLES=24
# Iterations a cycle (~0.25 s): early naming must read each code object before its cycle ends and
# frees it, and the sanitizer build's loader is several times slower (check 9 missed one function
# of 24 once in a full sanitizer run): its cycles are twice as long.
SPIN=${APERTURE_SANITIZED:+40000000}
SPIN=${SPIN:-20000000}

# walked PID: the kernel has PID's unwind tables (its samples carry Python frames from now on);
# waits up to 60 s.  Its cycles start after that: under the sanitizer build the tables took over
# the 2 s reuse.py used to wait, and the first cycle went unnamed (23 of 24 functions).
walked() {
	local i key
	key=$(printf '%08x' "$1" | sed -E 's/(..)(..)(..)(..)/0x\4 0x\3 0x\2 0x\1/')
	for ((i = 0; i < 600; i++)); do
		# shellcheck disable=SC2086
		bpftool map lookup name unwind_procs key $key >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
# run_reuse NAME [ENV...]: reuse.py recorded by -p until it says done=1 (it sleeps then, alive at
# the drain), stopped by SIGINT: about 10 s here, longer on a loaded machine
run_reuse() {
	local name=$1 pid ap i
	shift
	/usr/bin/python3.11 "$PY/reuse.py" "$CYCLES" "$SPIN" "$TMP/$name.result" "$TMP/$name.go" &
	pid=$!
	_bg_pids+=("$pid")
	sleep 0.2
	env "$@" "$APERTURE" record -F 499 -p "$pid" -d 90 -o "$TMP/$name.folded" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	ap=$!
	walked "$pid" || diag "$name: no unwind tables for $pid after 60 s"
	touch "$TMP/$name.go"
	for ((i = 0; i < 800; i++)); do
		[ "$(kv "$TMP/$name.result" done 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	kill -INT "$ap"
	wait "$ap"
	AP_RC=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
# per_fn FOLDED: "NAME WEIGHT" for each fN
per_fn() {
	awk '{ w = $NF; if (match($0, /;f[0-9]+_\(reuse_gen\.py:/)) { n = substr($0, RSTART + 1, RLENGTH - 15); t[n] += w } }
		END { for (n in t) print n, t[n] }' "$1"
}
# started NAME: the cycles reuse.py began while recorded (all of them but on a loaded machine), >= 1
started() { local n; n=$(kv "$TMP/$1.result" started); echo $((${n:-0} > 0 ? ${n:-0} : 1)); }
fn_total() { stack_weight "$1" '(f[0-9]+_\(reuse_gen\.py:[0-9]+\)|;\[python\])(;|$)'; }
# over NAME: how many functions have more than 1.6 times the samples that their own cycle's CPU time
# (NAME.result.cpu, from reuse.py) gives them of the cycles' samples; one diag line for each.  A
# function named for two cycles has about twice its share.  The cycles' CPU time is measured, not
# assumed equal: their iterations are fixed, their speed is not.  (Against the mean cycle, both
# checks failed once in a full sanitizer run, and passed when run again: the cause is not known.)
over() {
	per_fn "$TMP/$1.folded" | awk -v total="$(fn_total "$TMP/$1.folded")" '
		FNR == NR { cpu_us[$1] = $2; sum_us += $2; next }
		{ fn = $1; sub(/_$/, "", fn); want = sum_us > 0 ? total * cpu_us[fn] / sum_us : 0 }
		$2 > 1.6 * want { n++; printf "# %s: %d samples, its cycle'"'"'s CPU time gives it %.0f\n", fn, $2, want > "/dev/stderr" }
		END { print n + 0 }' "$TMP/$1.result.cpu" -
}

run_reuse late APERTURE_TEST_PYTHON_NO_PREFETCH=1
is "named late: record exits 0" "$AP_RC" 0
reused=$(kv "$TMP/late.result" reused)
if [ "${reused:-0}" -ge $((CYCLES / 2)) ]; then
	total=$(fn_total "$TMP/late.folded")
	per=$((total / $(started late)))
	ge "named late: samples in the cycles" "$total" 400
	is "named late: no function with more than 1.6 times its cycle's share (a cycle ~$per)" "$(over late)" 0
	ge "named late: replaced code objects' frames left unnamed ([python] >= 25%)" \
		"$(pct "$(stack_weight "$TMP/late.folded" ';\[python\](;|$)')" "$total")" 25
	ok "named late: the end line counts the unnamed frames" \
		grep -qE 'python: [0-9]+ code objects named, [1-9][0-9]* frames unnamed' "$TMP/late.err"
else
	skip "named late" "only ${reused:-0} of $CYCLES code objects reused the last one's address here"
fi

run_reuse early
is "named early: record exits 0" "$AP_RC" 0
total=$(fn_total "$TMP/early.folded")
per=$((total / $(started early)))
is "named early (as each stack is reported): no function with more than 1.6 times its cycle's share (a cycle ~$per)" \
	"$(over early)" 0
ok "named early: almost all named ([python] < 5%)" awk -v u="$(stack_weight "$TMP/early.folded" ';\[python\](;|$)')" -v t="$total" 'BEGIN { exit !(t > 0 && u / t < 0.05) }'
is "named early: each function begun is named" "$(per_fn "$TMP/early.folded" | wc -l)" "$(started early)"

done_testing
