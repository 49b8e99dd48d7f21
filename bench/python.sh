#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# CPython frames (--python): what they cost and how they compare with austin.
#   P1. BPF ns per sample (bpf_stats of oncpu_sample) with --python auto and
#       --python off, both recording -p the same Debian python3.11 process at
#       once (same samples), Python frames per sample, and the loader's CPU
#       time (user+sys of each aperture process), at 99 and 999 Hz;
#   P2. Debian's austin (a sampler that reads the process from outside with
#       process_vm_readv at every sample) against aperture --python on the
#       same program at the same rate: the program's slowdown (spin
#       iterations against a run with no profiler), the profiler's own CPU
#       (austin: its user+sys; aperture: the loader's user+sys plus its BPF
#       run time) split into a cost per second of profiling in steady state
#       (measured inside runs of D_LONG seconds) and a fixed cost (start-up
#       and exit: a whole run's cost less its seconds at that rate), and the agreement of the stacks (sum over Python-only
#       stacks, function names, of the smaller of the two shares). austin
#       1.0.1 (Debian 12) does not find 3.11's interpreter state, so P2 runs
#       pyenv's 3.8 when present.
#   P3. Both at once on one running program (aperture record -p and austin -p,
#       each at the rate): each profiler's own CPU over the same D seconds, so
#       that whatever else the machine and its host do then is charged to both
#       alike (P2's runs follow each other, and this VM's speed for the BPF
#       program moves by ~2.5x for seconds at a time: see the README).
# Knobs: ROUNDS (3), D (seconds per run, 5), D_SHORT and D_LONG (4, 16: P2's cost runs), P_HZ ("99 999"),
# PARTS ("p1 p2"; p3 on request), APERTURE.
. "$(dirname "$0")/lib.sh"
D=${D:-5}
D_SHORT=${D_SHORT:-4}
D_LONG=${D_LONG:-16}
PARTS=${PARTS:-p1 p2}
P_HZ=${P_HZ:-99 999}
CHAIN=$ROOT/tests/workloads/python/chain.py
PY311=/usr/bin/python3.11
PY38=$(ls -d /root/.pyenv/versions/3.8.*/bin/python3 2>/dev/null | head -n1)

int_of() { awk -v x="$1" 'BEGIN { if (x == "n/a" || x == "") print "n/a"; else printf "%.0f\n", x }'; }

# cpu_s PID: CPU seconds of PID's threads so far, from schedstat (ns: the window's few ms are below
# /proc/PID/stat's 10 ms ticks)
cpu_s() {
	local c
	[ -n "$1" ] && [ -d "/proc/$1" ] || { echo n/a; return; }
	read -r c _ < <(cost_ns_of "$1")
	awk -v c="$c" 'BEGIN { printf "%.4f\n", c / 1e9 }'
}

# py_frames FOLDED: Python frames per sample
py_frames() {
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); p = 0
		for (i = 2; i <= k; i++) if (f[i] ~ /_\([^;]*\.py:[0-9]+\)$/) p++
		F += p * n; N += n } END { if (N) printf "%.1f\n", F / N; else print "n/a" }' "$1"
}

# ---------------------------------------------------------------- P1
declare -A TOOLS
p1_run() {
	local hz=$1 pid mode rt cnt wl
	timeout -k 5 $((D + 40)) "$PY311" "$CHAIN" spin $((D + 20)) >"$W/p1.wl" 2>&1 &
	wl=$!
	BGPIDS+=("$wl")
	sleep 0.5
	pid=$(pgrep -P "$wl" | head -n1)	# python, under timeout
	local t0 t1
	t0=$(date +%s.%N)
	for mode in auto off; do
		start_tool "p1$mode" timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" --python "$mode" -p "$pid" \
			-d $((D + 60)) --top 0 -o "$W/p1$mode.folded" && TOOLS[$mode]=$TOOL_PID
	done
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/before"
	for mode in auto off; do echo "$(cpu_s "$(pgrep -P "${TOOLS[$mode]}" | head -n1)")" >"$W/cpu0.$mode"; done
	sleep "$D"
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/after"
	for mode in auto off; do echo "$(cpu_s "$(pgrep -P "${TOOLS[$mode]}" | head -n1)")" >"$W/cpu1.$mode"; done
	stats_delta "$W/before" "$W/after" >"$W/delta"
	kill_tree "$wl"; wait "$wl" 2>/dev/null
	for mode in auto off; do
		local ids
		ids=" $(prog_ids_of "${TOOLS[$mode]}" | tr '\n' ' ')"
		read -r rt cnt < <(awk -v ids="$ids" 'index(ids, " " $1 " ") && $2 == "oncpu_sample"' "$W/delta" | awk '{ print $3, $4 }')
		echo "${rt:-n/a} ${cnt:-n/a}" >"$W/p1.rc.$mode"
	done
	for mode in auto off; do TOOL_PID=${TOOLS[$mode]}; stop_tool; done
	t1=$(date +%s.%N)
	TOOLS=()
	local rt_off samples
	read -r rt_off _ <"$W/p1.rc.off"
	for mode in auto off; do
		read -r rt cnt <"$W/p1.rc.$mode"
		# the folded covers the tool's life; the stats the D-second window
		samples=$(awk -v d="$D" -v a="$t0" -v b="$t1" '{ t += $NF } END { printf "%.0f\n", t * d / (b - a) }' "$W/p1$mode.folded" 2>/dev/null)
		printf '  %-8s %5s %9s %9s %9s %9s %12s %12s\n' "$mode" "$hz" "$cnt" "$(int_of "$(ratio_of "$rt" "$cnt")")" \
			"${samples:-n/a}" "$( [ "$mode" = auto ] && py_frames "$W/p1$mode.folded" || echo 0)" \
			"$( [ "$mode" = auto ] && int_of "$(awk -v a="$rt" -v b="$rt_off" -v n="$samples" 'BEGIN { if (a == "n/a" || b == "n/a" || !n) print "n/a"; else print (a - b) / n }')" || echo -)" \
			"$(awk -v a="$(cat "$W/cpu0.$mode")" -v b="$(cat "$W/cpu1.$mode")" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else printf "%.4f", b - a }')"
	done
}

table_p1() {
	local hz
	printf '\nP1. aperture record -p on one %s chain.py (c spinning), --python auto and off at once, %s s\n' "$PY311" "$D"
	printf '  %-8s %5s %9s %9s %9s %9s %12s %12s\n' python Hz runs ns/run samples pyframes "+ns/sample" "loader cpu s"
	for hz in $P_HZ; do p1_run "$hz"; done
	printf '  (runs: of oncpu_sample in the window, every CPU, other processes'"'"' samples filtered out early;\n'
	printf '   samples: the workload'"'"'s, scaled from the tool'"'"'s life to the window; pyframes: Python frames per sample; +ns/sample: the BPF\n'
	printf '   run time --python adds, over the workload'"'"'s samples; loader cpu: its threads'"'"' CPU over the window)\n'
}

# ---------------------------------------------------------------- P2
# py_stacks FILE FORMAT: "share stack" of Python-only stacks (function names, root first)
py_stacks() {
	if [ "$2" = austin ]; then
		# austin 1.0: "Thread ID;func (file);L<line>;func (file);L<line>... usec"
		awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); out = ""
			for (i = 2; i <= k; i++) if (f[i] !~ /^L[0-9]+$/) { g = f[i]; sub(/ \(.*$/, "", g); out = out (out ? ";" : "") g }
			S[out] += n; T += n } END { for (x in S) printf "%.6f %s\n", S[x] / T, x }' "$1"
	else
		awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); out = ""
			for (i = 2; i <= k; i++) if (f[i] ~ /_\([^;]*\.py:[0-9]+\)$/) { g = f[i]; sub(/_\(.*$/, "", g); out = out (out ? ";" : "") g }
			S[out] += n; T += n } END { for (x in S) printf "%.6f %s\n", S[x] / T, x }' "$1"
	fi
}

agreement() {
	awk 'NR == FNR { a[$2] = $1; next } { b[$2] = $1 } END { for (x in a) if (x in b) s += (a[x] < b[x] ? a[x] : b[x]); printf "%.1f\n", 100 * s }' \
		<(py_stacks "$1" aperture) <(py_stacks "$2" austin)
}

p2_round() {
	local hz=$1 tool=$2 pid it cpu0 cpu1 bpf0 bpf1 us
	us=$((1000000 / hz))
	case $tool in
	none)	timeout -k 5 $((D + 30)) "$PY38" "$CHAIN" spin "$D" >"$W/p2.out" 2>&1
		echo "$(sed -n 's/^iterations=//p' "$W/p2.out") 0" ;;
	austin)	/usr/bin/time -f '%U %S' -o "$W/p2.time" timeout -k 5 $((D + 30)) austin -i "$us" -o "$W/p2.austin.$hz" \
			"$PY38" "$CHAIN" spin "$D" >"$W/p2.out" 2>"$W/p2.err"
		echo "$(sed -n 's/^iterations=//p' "$W/p2.out") $(awk 'NF == 2 { print $1 + $2 }' "$W/p2.time" | tail -n1)" ;;
	aperture)
		start_tool p2ap timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" -d $((D + 60)) --top 0 \
			-o "$W/p2.aperture.$hz.folded" -- "$PY38" "$CHAIN" spin "$D"
		sleep $((D + 1))
		wait "$TOOL_PID" 2>/dev/null
		echo "$(sed -n 's/^iterations=//p' "$W/p2ap.stdout") n/a" ;;
	esac
}

# The program run by the cost runs: chain.py under a wrapper that writes its own user+sys (os.times) to
# $1 at exit.  Both profilers reap the program they start, so /usr/bin/time on them counts the program's
# CPU too: the profiler's own is the difference (before, P2 showed the sum: "3.5-4.0 s" for aperture).
SELF_CPU_WRAP='import atexit, os, runpy, sys; out = sys.argv[1]; atexit.register(lambda: open(out, "w").write("%.3f\n" % sum(os.times()[:2]))); sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name="__main__")'

# sleep_until USEC: one sleep until EPOCHREALTIME (in microseconds) reaches USEC (a profiler that fails
# early is then seen late, and its run gives n/a as before)
sleep_until() {
	local left=$(($1 - ${EPOCHREALTIME/./}))
	[ "$left" -gt 0 ] && sleep "$((left / 1000000)).$(printf %06d $((left % 1000000)))"
}

# p2_cost HZ TOOL SECONDS: "whole_s program_s per_s" for a SECONDS-long program.
# whole_s: the profiler's whole own CPU. austin -i: its user+sys (process_vm_readv at each sample is its
# system time). aperture record --: the loader's user+sys (load, verify, tables, kallsyms, naming, output)
# plus the run time of its BPF programs (read at the window's ends, then every 0.1 s until it exits: the
# last 0.1 s is missed, under 1 ms at 999 Hz). Both reap the program they start, so /usr/bin/time counts the program's CPU too: it is
# subtracted, as the program reads it at exit (os.times); BPF time charged to the program it interrupted
# is then counted once, as BPF time.
# per_s: the cost of one second of profiling in steady state, measured in the same run: the profiler's
# CPU (plus its BPF time) between 3 s and SECONDS - 0.5 s after the profiler's launch (past aperture's
# start-up, 0.2-0.4 s of CPU here; the program, started after the profiler's start-up, runs past the
# window's end), over that window's wall time; n/a when the window is under 4 s (SECONDS under ~8).
p2_cost() {
	local hz=$1 tool=$2 dur=$3 us=$((1000000 / $1)) tpid pid now t0 wend c b c1 b1 t1 c2 b2 t2 bpf=0
	rm -f "$W/p2.selfcpu"
	if [ "$tool" = austin ]; then
		/usr/bin/time -f '%U %S' -o "$W/p2.cost.time" timeout -k 5 $((dur + 30)) austin -i "$us" -o "$W/p2.cost.out" \
			"$PY38" -c "$SELF_CPU_WRAP" "$W/p2.selfcpu" "$CHAIN" spin "$dur" >/dev/null 2>&1 &
	else
		/usr/bin/time -f '%U %S' -o "$W/p2.cost.time" "$APERTURE" record -F "$hz" -d $((dur + 60)) --top 0 \
			-o "$W/p2.cost.folded" -- "$PY38" -c "$SELF_CPU_WRAP" "$W/p2.selfcpu" "$CHAIN" spin "$dur" >/dev/null 2>&1 &
	fi
	tpid=$!
	BGPIDS+=("$tpid")
	t0=${EPOCHREALTIME/./}
	wend=$((t0 + (dur * 1000 - 500) * 1000))
	while kill -0 "$tpid" 2>/dev/null; do
		now=${EPOCHREALTIME/./}
		if [ -z "${pid:-}" ]; then
			if [ "$tool" = austin ]; then	# under timeout
				pid=$(pgrep -P "$tpid" | head -n1)
				[ -n "$pid" ] && pid=$(pgrep -x austin -P "$pid" | head -n1)
			else
				pid=$(pgrep -P "$tpid" | head -n1)	# not by name: APERTURE may be any file
			fi
		fi
		if [ -n "${pid:-}" ]; then
			read -r c b < <(cost_ns_of "$pid")
			[ "${b:-0}" -gt "$bpf" ] && bpf=$b
			if [ -n "$c" ] && [ "$c" -gt 0 ] && [ $((now - t0)) -ge 3000000 ] && [ "$now" -le $((wend + 200000)) ]; then
				[ -z "${t1:-}" ] && { t1=$now c1=$c b1=$b; }
				t2=$now c2=$c b2=$b
			fi
		fi
		# Read the process only at the window's two ends and while it exits: one read costs ~12 ms of
		# CPU on this 2-CPU machine (its ~70 fdinfo files), and read every 0.1 s it took 12% of the CPU
		# that the profiler's loader shares with it.
		if [ -z "${pid:-}" ] || { [ -n "${t2:-}" ] && [ "$t2" -ge "$wend" ]; }; then
			sleep 0.1
		elif [ -z "${t1:-}" ]; then
			sleep_until $((t0 + 3000000))
		else
			sleep_until "$wend"
		fi
	done
	wait "$tpid" 2>/dev/null
	awk -v py="$(cat "$W/p2.selfcpu" 2>/dev/null)" -v bpf="$bpf" -v t1="${t1:-}" -v t2="${t2:-}" \
		-v c1="${c1:-}" -v c2="${c2:-}" -v b1="${b1:-0}" -v b2="${b2:-0}" 'NF == 2 { t = $1 + $2 }
		END { r = "n/a"; if (t1 != "" && t2 - t1 >= 4e6) r = sprintf("%.5f", (c2 - c1 + b2 - b1) / 1e3 / (t2 - t1))
			if (py == "" || t == "") print "n/a n/a " r; else printf "%.3f %s %s\n", t - py + bpf / 1e9, py, r }' "$W/p2.cost.time"
}

# ms MILLI: a number of seconds as ms, or as given when not a number
ms() { awk -v k="$1" 'BEGIN { if (k == "-" || k == "n/a") print k; else printf "%.2f", 1000 * k }'; }

table_p2() {
	local hz r tool it dur base c_s c_l ps fx sl a u w ps_
	printf '\nP2. %s chain.py spin: no profiler, austin -i, aperture record -- (whole program), %s rounds\n' "${PY38:-(no pyenv 3.8)}" "$ROUNDS"
	if [ -z "$PY38" ] || ! have austin; then printf '  n/a (needs pyenv 3.8 and austin)\n'; return; fi
	printf '  load average at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '  %-9s %5s %12s %9s %7s | %9s %9s | %9s %8s | %9s\n' tool Hz iterations slowdown agree% \
		"cost ${D_SHORT}s" "cost ${D_LONG}s" "ms per s" "fixed s" "slope ms"
	for hz in $P_HZ; do
		for tool in none austin aperture; do
			: >"$W/p2.it.$tool"
			for dur in "$D_SHORT" "$D_LONG"; do : >"$W/p2.cpu.$tool.$dur"; done
			: >"$W/p2.rate.$tool"; : >"$W/p2.fixed.$tool"
		done
		for r in $(seq "$ROUNDS"); do
			for tool in none austin aperture; do
				read -r it _ < <(p2_round "$hz" "$tool")
				echo "${it:-n/a}" >>"$W/p2.it.$tool"
			done
			for dur in "$D_SHORT" "$D_LONG"; do
				for tool in austin aperture; do
					p2_cost "$hz" "$tool" "$dur" >"$W/p2.cost.res"	# not in a subshell: BGPIDS
					read -r w _ ps_ <"$W/p2.cost.res"
					[ "$w" != n/a ] && echo "$w" >>"$W/p2.cpu.$tool.$dur"
					[ "$ps_" != n/a ] && echo "$ps_" >>"$W/p2.rate.$tool"
					# the fixed cost of this run: its whole cost less its seconds at the steady rate
					[ "$w" != n/a ] && [ "$ps_" != n/a ] && awk -v w="$w" -v k="$ps_" -v d="$dur" 'BEGIN { printf "%.3f\n", w - k * d }' >>"$W/p2.fixed.$tool"
				done
			done
		done
		base=$(median <"$W/p2.it.none")
		for tool in none austin aperture; do
			it=$(median <"$W/p2.it.$tool")
			if [ "$tool" = none ]; then
				c_s=- c_l=- ps=- fx=- sl=-
			else
				c_s=$(median <"$W/p2.cpu.$tool.$D_SHORT")
				c_l=$(median <"$W/p2.cpu.$tool.$D_LONG")
				ps=$(median <"$W/p2.rate.$tool")
				fx=$(median <"$W/p2.fixed.$tool")
				sl=$(awk -v a="$c_s" -v b="$c_l" -v s="$D_SHORT" -v l="$D_LONG" 'BEGIN {
					if (a == "n/a" || b == "n/a") print "n/a"; else printf "%.5f", (b - a) / (l - s) }')
				echo "$c_s $c_l $ps" >"$W/p2.split.$tool.$hz"
			fi
			printf '  %-9s %5s %12s %9s %7s | %9s %9s | %9s %8s | %9s\n' "$tool" "$hz" "$it" \
				"$(awk -v a="$it" -v b="$base" 'BEGIN { if (a == "n/a" || b == "n/a" || a == 0) print "n/a"; else printf "%.3f", b / a }')" \
				"$( [ "$tool" = aperture ] && agreement "$W/p2.aperture.$hz.folded" "$W/p2.austin.$hz" || echo -)" \
				"$c_s" "$c_l" "$(ms "$ps")" "$fx" "$(ms "$sl")"
		done
		read -r a _ <"$W/p2.split.aperture.$hz"; read -r u _ <"$W/p2.split.austin.$hz"
		printf '  %-9s %5s aperture / austin: per second %s; whole %s s run %s; whole %s s run %s\n' ratio "$hz" \
			"$(ratio_of "$(cut -d' ' -f3 "$W/p2.split.aperture.$hz")" "$(cut -d' ' -f3 "$W/p2.split.austin.$hz")")" \
			"$D_SHORT" "$(ratio_of "$a" "$u")" \
			"$D_LONG" "$(ratio_of "$(cut -d' ' -f2 "$W/p2.split.aperture.$hz")" "$(cut -d' ' -f2 "$W/p2.split.austin.$hz")")"
	done
	printf '  (iterations, slowdown (iterations with no profiler / with it) and agree%% (of the samples, the share whose\n'
	printf '   Python-only stack, function names, both tools give equally): %s s runs, medians of %s.\n' "$D" "$ROUNDS"
	printf '   cost: the profiler'"'"'s own CPU (s) for a whole program of %s and %s s, less the program'"'"'s own CPU;\n' "$D_SHORT" "$D_LONG"
	printf '   aperture'"'"'s is its loader'"'"'s user+sys plus its BPF programs'"'"' run time. ms per s: the same, per second of\n'
	printf '   profiling in steady state, measured inside each %s s run (from 3 s to %s s after the launch);\n' "$D_LONG" "$(awk -v d="$D_LONG" 'BEGIN { print d - 0.5 }')"
	printf '   fixed s: each %s s run'"'"'s cost less its seconds at its rate (start-up and exit); slope ms: (cost %s s - cost %s s)\n' "$D_LONG" "$D_LONG" "$D_SHORT"
	printf '   / %s s, a cross-check of ms per s that start-up'"'"'s noise blurs; medians of %s)\n' "$((D_LONG - D_SHORT))" "$ROUNDS"
}

# ---------------------------------------------------------------- P3
# p3_round HZ: "aperture_ms_per_s austin_ms_per_s pyframes": both profilers on one chain.py at once, their
# own CPU (aperture: loader plus BPF run time) over the same D seconds; n/a where one did not run.
p3_round() {
	local hz=$1 wl py ap au a0 b0 u0 t0 a1 b1 u1 t1
	timeout -k 5 $((D + 40)) "$PY38" "$CHAIN" spin $((D + 20)) >/dev/null 2>&1 &
	wl=$!
	BGPIDS+=("$wl")
	sleep 0.5
	py=$(pgrep -P "$wl" | head -n1)	# python, under timeout
	if ! start_tool p3ap "$APERTURE" record -F "$hz" -p "$py" -d $((D + 30)) --top 0 -o "$W/p3.folded"; then
		kill_tree "$wl"; wait "$wl" 2>/dev/null; echo "n/a n/a n/a n/a"; return
	fi
	ap=$TOOL_PID
	austin -i $((1000000 / hz)) -p "$py" -o "$W/p3.austin" >/dev/null 2>"$W/p3.austin.err" &
	au=$!
	BGPIDS+=("$au")
	sleep 2
	read -r a0 b0 < <(cost_ns_of "$ap"); read -r u0 _ < <(cost_ns_of "$au"); t0=${EPOCHREALTIME/./}
	sleep "$D"
	read -r a1 b1 < <(cost_ns_of "$ap"); read -r u1 _ < <(cost_ns_of "$au"); t1=${EPOCHREALTIME/./}
	kill -INT "$au" 2>/dev/null
	stop_tool
	kill_tree "$wl"; wait "$wl" "$au" 2>/dev/null
	awk -v a=$((a1 + b1 - a0 - b0)) -v b=$((b1 - b0)) -v u=$((u1 - u0)) -v us=$((t1 - t0)) -v f="$(py_frames "$W/p3.folded")" \
		'BEGIN { x = a > 0 ? sprintf("%.3f", a / us) : "n/a"; y = u > 0 ? sprintf("%.3f", u / us) : "n/a"
			print x, y, f, sprintf("%.3f", b / us) }'
}

table_p3() {
	local hz r ap au pf bp
	printf '\nP3. aperture record -p and austin -p on one %s chain.py at once, %s s, %s rounds\n' "${PY38:-(no pyenv 3.8)}" "$D" "$ROUNDS"
	if [ -z "$PY38" ] || ! have austin; then printf '  n/a (needs pyenv 3.8 and austin)\n'; return; fi
	printf '  load average at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '  %5s %6s %14s %9s %14s %9s %9s\n' Hz round "aperture ms/s" "its BPF" "austin ms/s" ratio pyframes
	for hz in $P_HZ; do
		: >"$W/p3.ratios"
		for r in $(seq "$ROUNDS"); do
			read -r ap au pf bp < <(p3_round "$hz")
			printf '  %5s %6s %14s %9s %14s %9s %9s\n' "$hz" "$r" "$ap" "$bp" "$au" "$(ratio_of "$ap" "$au")" "$pf"
			ratio_of "$ap" "$au" | grep -v n/a >>"$W/p3.ratios"
		done
		printf '  %5s median ratio %s\n' "$hz" "$(median <"$W/p3.ratios")"
	done
	printf '  (ms/s: each profiler'"'"'s own CPU per second of the window, aperture'"'"'s with its BPF run time;\n'
	printf '   the program'"'"'s slowdown is P2'"'"'s; pyframes: aperture'"'"'s Python frames per sample)\n'
}

sysctl -qw kernel.bpf_stats_enabled=1
mkdir -p "$BIN"
case " $PARTS " in *" p1 "*) table_p1 ;; esac
case " $PARTS " in *" p2 "*) table_p2 ;; esac
case " $PARTS " in *" p3 "*) table_p3 ;; esac
