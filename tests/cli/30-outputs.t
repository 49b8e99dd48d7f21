#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Outputs: pprof (read by go tool pprof), folded, SVG (well-formed XML), several
# -o at once, --format, both profilers at once, the top list, signals.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn sleeper

export HOME="$TMP" PPROF_BINARY_PATH=/nonexistent GOCACHE="$TMP/gocache" GOFLAGS=-mod=mod
# pprof_top NAME FILE: go tool pprof -top; stdout in $TMP/NAME.top, stderr in $TMP/NAME.toperr
pprof_top() { go tool pprof -symbolize=none -top "$2" >"$TMP/$1.top" 2>"$TMP/$1.toperr"; }
# check_pprof NAME FILE FUNC
check_pprof() {
	ok "$1: go tool pprof reads it" pprof_top "$1" "$2"
	is "$1: go tool pprof has no warnings" "$(cat "$TMP/$1.toperr")" ""
	ok "$1: go tool pprof shows $3" grep -qE " $3\$" "$TMP/$1.top"
}
# check_svg NAME FILE FUNC
check_svg() {
	ok "$1: well-formed XML" xmllint --noout "$2"
	ok "$1: an <svg> document" grep -q '<svg' "$2"
	ok "$1: contains $3" grep -q "$3" "$2"
}
# check_folded NAME FILE FUNC MIN MAX: the file's total weight is what the workload did (samples
# of its CPU time, or ns it slept), MIN to MAX, and FUNC has >= its share of MIN (FUNC_SHARE
# percent: burn_50 50, sleep_50ms 100)
check_folded() {
	local total share=${FUNC_SHARE:-50}
	total=$(folded_total "$2")
	ok "$1: total weight is what the workload did ($total in $4 .. $5)" \
		awk -v t="$total" -v lo="$4" -v hi="$5" 'BEGIN { exit !(lo > 0 && t >= lo && t <= hi) }'
	is "$1: every line is 'stack weight'" "$(folded_bad_lines "$2")" 0
	is "$1: kernel frames after user frames" "$(folded_kernel_order_errors "$2")" 0
	ge "$1: $3 has its $share% share of that" "$(stack_weight "$2" ";$3(;|\$)")" \
		"$(awk -v lo="$4" -v s="$share" 'BEGIN { printf "%.0f\n", lo * s / 100 }')"
}
# samples_of FILE F [ADD]: cpuburn's cpu_ns=N in FILE at 199 Hz, times F, plus ADD (0 when cpuburn said nothing)
samples_of() { awk -v ns="$(kv "$1" cpu_ns)" -v f="$2" -v add="${3:-0}" 'BEGIN { printf "%.0f\n", ns * 199 / 1e9 * f + add }'; }

# 1. Every format from one run, format guessed from the names.
ap_ok "several -o" multi record -F 199 -d 30 -o "$TMP/p.pb.gz" -o "$TMP/p.pprof" -o "$TMP/p.folded" \
	-o "$TMP/p.txt" -o "$TMP/p.svg" -- "$WL/cpuburn" 2
check_pprof ".pb.gz" "$TMP/p.pb.gz" burn_50
check_pprof ".pprof" "$TMP/p.pprof" burn_50
ok ".pb.gz is gzip" gzip -t "$TMP/p.pb.gz"
diag "cpuburn 2: $(cat "$TMP/multi.out")"
# cpuburn says the CPU time it used: cpu_ns x 199 Hz samples, -30% .. +30% + 3 (the samples of a
# task that gets part of a CPU on a loaded machine scatter by about their square root).
check_folded ".folded" "$TMP/p.folded" burn_50 "$(samples_of "$TMP/multi.out" 0.7)" "$(samples_of "$TMP/multi.out" 1.3 3)"
check_folded ".txt" "$TMP/p.txt" burn_50 "$(samples_of "$TMP/multi.out" 0.7)" "$(samples_of "$TMP/multi.out" 1.3 3)"
# Profiles name every process and may hold kernel addresses: not for other users to read.
is "new output files are mode 0600" "$(stat -c %a "$TMP"/p.* | sort -u)" 600
check_svg ".svg" "$TMP/p.svg" burn_50
# Same profile in each: pprof's total equals the folded total.
pprof_total=$(sed -nE 's/.*of ([0-9]+) total.*/\1/p' "$TMP/.pb.gz.top" | head -1)
is "pprof total samples = folded total" "${pprof_total:-}" "$(folded_total "$TMP/p.folded")"

# 2. --format overrides the name.
ap_ok "--format folded" ffold record -F 199 -d 30 --format folded -o "$TMP/f.data" -- "$WL/cpuburn" 1
check_folded "--format folded" "$TMP/f.data" burn_50 "$(samples_of "$TMP/ffold.out" 0.7)" "$(samples_of "$TMP/ffold.out" 1.3 3)"
ap_ok "--format svg" fsvg record -F 199 -d 30 --format svg -o "$TMP/s.data" -- "$WL/cpuburn" 1
check_svg "--format svg" "$TMP/s.data" burn_50
ap_ok "--format pprof" fpprof record -F 199 -d 30 --format pprof -o "$TMP/pp.data" -- "$WL/cpuburn" 1
check_pprof "--format pprof" "$TMP/pp.data" burn_50

# 3. Both profilers: the kind goes into each name.
bg "$WL/cpuburn" 60 >/dev/null
burn_pid=$BG_PID
bg "$WL/sleeper" 60 >/dev/null
sleep_pid=$BG_PID
sleep 0.3
ns0=$(proc_cpu_ns "$burn_pid")
ap_ok "--oncpu --offcpu" both record --oncpu --offcpu -F 199 -p "$burn_pid,$sleep_pid" -d 2 \
	-o "$TMP/b.folded" -o "$TMP/b.pb.gz" -o "$TMP/b.svg"
for f in b.oncpu.folded b.offcpu.folded b.oncpu.pb.gz b.offcpu.pb.gz b.oncpu.svg b.offcpu.svg; do
	ok "both: $f written" test -s "$TMP/$f"
done
ok "both: no file under the plain names" test ! -e "$TMP/b.folded" -a ! -e "$TMP/b.pb.gz" -a ! -e "$TMP/b.svg"
# -p for 2 s: cpuburn's CPU time over aperture's run (proc_cpu_ns) x 199 Hz bounds the samples
# from above (+30% + 3: the samples of a task that gets part of a CPU scatter); its share of a
# CPU over the run, over the 2 s window, from below (75%: runs gave 1.25x and 1.34x that
# estimate, aperture's own start takes CPU from it).
ns=$(( $(proc_cpu_ns "$burn_pid") - ns0 ))
diag "both: cpuburn ran $ns ns in ${AP_SECS} s"
check_folded "both: on-CPU" "$TMP/b.oncpu.folded" burn_50 \
	"$(awk -v t="$ns" -v s="$AP_SECS" 'BEGIN { printf "%.0f\n", t / 1e9 / s * 2 * 199 * 0.75 }')" \
	"$(awk -v t="$ns" 'BEGIN { printf "%.0f\n", t / 1e9 * 199 * 1.3 + 3 }')"
# The sleeper's 4 threads sleep all the time: 4 x the 2 s window in sleep_50ms (60%), and at
# most 4 x aperture's whole run.
FUNC_SHARE=100 check_folded "both: off-CPU" "$TMP/b.offcpu.folded" sleep_50ms 4800000000 \
	"$(awk -v s="$AP_SECS" 'BEGIN { printf "%.0f\n", 4 * s * 1e9 }')"
# cpuburn never blocks, and preemption is not counted by default.
is "both: off-CPU has no burn_* stacks" "$(stack_weight "$TMP/b.offcpu.folded" ';burn_(50|30|20)(;|$)')" 0
check_pprof "both: off-CPU pprof" "$TMP/b.offcpu.pb.gz" sleep_50ms
check_svg "both: off-CPU svg" "$TMP/b.offcpu.svg" sleep_50ms
ok "both: oncpu summary" grep -qE '^aperture: oncpu: [0-9]+ samples, [0-9]+ lost' "$TMP/both.err"
ok "both: offcpu summary" grep -qE '^aperture: offcpu: ' "$TMP/both.err"

# 4. --top N.
TOP_RE='^ +[0-9.]+% +[0-9]+ +[^ ]'
ap_ok "--top 3" top3 record -F 199 --top 3 -p "$burn_pid" -d 1 -o "$TMP/t3.folded"
is "--top 3: three lines" "$(grep -cE "$TOP_RE" "$TMP/top3.out")" 3
is "--top 3: burn_50 first" "$(grep -E "$TOP_RE" "$TMP/top3.out" | head -1 | awk '{ print $3 }')" burn_50
ap_ok "--top 0" top0 record -F 199 --top 0 -p "$burn_pid" -d 1 -o "$TMP/t0.folded"
is "--top 0: no lines" "$(grep -cE "$TOP_RE" "$TMP/top0.out")" 0
ap_ok "default --top" topd record -F 199 -d 1 -o "$TMP/td.folded"
n=$(grep -cE "$TOP_RE" "$TMP/topd.out")
ok "default --top: 15 lines at most, some ($n)" test "$n" -ge 3 -a "$n" -le 15

# 5. SIGINT and SIGTERM end a long run early and still write the outputs.
for sig in INT TERM; do
	"$APERTURE" record -F 199 -p "$burn_pid" -d 60 -o "$TMP/sig$sig.folded" \
		>"$TMP/sig$sig.out" 2>"$TMP/sig$sig.err" &
	ap_pid=$!
	_bg_pids+=("$ap_pid")
	sleep 5	# start-up takes 1-2 s of it under a sanitizer on a loaded machine
	kill -s "$sig" "$ap_pid"
	ok "SIG$sig: exits within 10 s" wait_gone "$ap_pid" 10
	rc=0
	wait "$ap_pid" || rc=$?
	is "SIG$sig: exit status 0" "$rc" 0
	ge "SIG$sig: output written, with burn_50" "$(leaf_weight "$TMP/sig$sig.folded" burn_50)" 50
done

done_testing
