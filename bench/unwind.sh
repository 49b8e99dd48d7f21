#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# User stack unwinding cost: DWARF CFI unwinding in BPF (`--unwind dwarf`)
# next to the frame-pointer walk (`--unwind fp`) and perf's
# `--call-graph dwarf`; and where the time of a frame-pointer sample goes.
# Four tables (see bench/README.md):
#   U1. BPF ns per sample (bpf_stats of oncpu_sample) and user frames per
#       sample, aperture -p on one workload, at 99 and 999 Hz;
#   U2. the loader's CPU time to build the tables of a python3 process;
#   U3. slowdown of a no-frame-pointer workload under aperture --unwind dwarf
#       and under perf record --call-graph dwarf, interleaved rounds;
#   U4. the frame-pointer sample in pieces (bench/fpcost.bpf.c: the
#       product's headers with parts left out) next to bpftrace, at 997 Hz.
# Knobs: ROUNDS (3), D (seconds per run, 5), U_HZ ("99 999"), APERTURE.
. "$(dirname "$0")/lib.sh"
D=${D:-5}
U_HZ=${U_HZ:-99 999}
NCPU=$(nproc)
PY=/usr/bin/python3	# Debian's, built without frame pointers (not the pyenv shim)

build() {
	mkdir -p "$BIN"
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/cpuwork" bench/cpuwork.c &&
	gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/deepstack-fp" bench/deepstack.c &&
	gcc -O2 -g -fomit-frame-pointer -pthread -Wall -o "$BIN/deepstack-nofp" bench/deepstack.c || return 1
	# Bench-only pieces of the on-CPU program (table U4); n/a when it does not build.
	FPCOST=
	bench_bpf_build fpcost 2>"$W/fpcost.log" && FPCOST=1
	[ -n "$FPCOST" ] || log "bench: bench/fpcost.c does not build, U4's pieces are n/a: $(head -n 3 "$W/fpcost.log" | tr '\n' ' ')"
	return 0
}

# wl_cmd WORKLOAD SECONDS: the command in CMD, its copies in COPIES, its comm in COMM.
wl_cmd() {
	COPIES=1
	case $1 in
	cpuwork)	CMD=("$BIN/cpuwork" "$2"); COMM=cpuwork ;;
	deep-fp)	CMD=("$BIN/deepstack-fp" "$2" 90); COMM=deepstack-fp ;;
	deep-nofp)	CMD=("$BIN/deepstack-nofp" "$2" 90); COMM=deepstack-nofp ;;
	python3)	CMD=("$PY" "$ROOT/bench/pyloop.py" "$2"); COMM=python3; COPIES=$NCPU ;;
	esac
}

# wl_start WORKLOAD SECONDS [COPIES]: the workload's copies in the background, their pids in WL_PIDS.
wl_start() {
	local i t kid
	wl_cmd "$1" "$2"
	COPIES=${3:-$COPIES}
	WL_PIDS=()
	WL_TPIDS=()
	for i in $(seq "$COPIES"); do
		timeout -k 5 $(($2 + 30)) "${CMD[@]}" >"$W/wl.$i.out" 2>&1 &
		t=$!
		BGPIDS+=("$t")
		WL_TPIDS+=("$t")
		for _ in $(seq 20); do kid=$(pgrep -P "$t" | head -n1); [ -n "$kid" ] && break; sleep 0.1; done
		WL_PIDS+=("${kid:-$t}")
	done
}

wl_stop() {
	local p
	for p in "${WL_TPIDS[@]}"; do kill_tree "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	WL_TPIDS=()
}

# user_frames FOLDED COMM: "frames_per_sample truncated_percent samples" of COMM's
# stacks (user frames: between the comm and the first kernel frame, [truncated] not counted).
user_frames() {
	awk -v comm="$2" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";")
		if (f[1] != comm) next
		u = 0; t = 0
		for (i = 2; i <= k; i++) {
			if (f[i] ~ /_\[k\]$/) break
			if (f[i] == "[truncated]") t = 1; else u++
		}
		F += u * n; T += t * n; N += n
	} END { if (N) printf "%.1f %.1f %d\n", F / N, 100 * T / N, N; else print "n/a n/a 0" }' "$1" 2>/dev/null
}

# ---------------------------------------------------------------- U1
# start_many KEY CMD...: start_tool, the pid kept in TOOLS[KEY]; stop_many stops them all.
declare -A TOOLS
start_many() {
	local key=$1
	shift
	start_tool "$key" "$@" && TOOLS[$key]=$TOOL_PID
}

stop_many() {
	local key
	for key in "${!TOOLS[@]}"; do TOOL_PID=${TOOLS[$key]}; stop_tool; done
	TOOLS=()
}

# stats_of_tool KEY NAME_REGEX: "run_time_ns run_cnt" of the tool's busiest matching program in $W/delta.
stats_of_tool() {
	local ids
	ids=" $(prog_ids_of "${TOOLS[$1]}" | tr '\n' ' ')"
	awk -v ids="$ids" -v re="$2" 'index(ids, " " $1 " ") && $2 ~ re' "$W/delta" | sort -k4,4gr | head -n1 |
		awk '{ print $3, $4 }'
}

# u1_run WORKLOAD HZ: aperture record -p on the workload three times at once
# (-K, --unwind fp, --unwind dwarf), so that all three see the same samples.
u1_run() {
	local wl=$1 hz=$2 mode flags pids rt cnt nsr fr tr n base perframe
	wl_start "$wl" $((D + 20))
	pids=$(IFS=,; echo "${WL_PIDS[*]}")
	for mode in kernel fp dwarf; do
		flags=(--unwind "$mode"); [ "$mode" = kernel ] && flags=(-K)
		start_many "u1$mode" timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" "${flags[@]}" \
			-p "$pids" -d $((D + 60)) --top 0 -o "$W/u1$mode.folded"
	done
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/before"
	sleep "$D"
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/after"
	stats_delta "$W/before" "$W/after" >"$W/delta"
	for mode in kernel fp dwarf; do
		read -r rt cnt < <(stats_of_tool "u1$mode" '^oncpu_sample$')
		echo "${rt:-n/a} ${cnt:-n/a}" >"$W/u1.rc.$mode"
	done
	wl_stop
	stop_many
	wl_cmd "$wl" 1
	for mode in kernel fp dwarf; do
		read -r rt cnt <"$W/u1.rc.$mode"
		read -r fr tr n < <(user_frames "$W/u1$mode.folded" "$COMM")
		nsr=$(ratio_of "$rt" "$cnt")
		[ "$mode" = kernel ] && { fr=0; tr=0; }
		printf '%s %s %s %s %s %s\n' "$mode" "${rt:-n/a}" "${cnt:-n/a}" "$nsr" "$fr" "$tr" >"$W/u1.row.$mode"
	done
	base=$(awk '{ print $4 }' "$W/u1.row.kernel")
	for mode in kernel fp dwarf; do
		read -r _ rt cnt nsr fr tr <"$W/u1.row.$mode"
		perframe=n/a
		[ "$mode" != kernel ] && perframe=$(awk -v a="$nsr" -v b="$base" -v f="$fr" 'BEGIN {
			if (a == "n/a" || b == "n/a" || f == "n/a" || f + 0 <= 0) print "n/a"; else printf "%.1f", (a - b) / f }')
		printf '  %-14s %-6s %5s %9s %9s %9s %8s %7s %9s\n' "$wl" "$mode" "$hz" "$cnt" "$(int_of "$nsr")" \
			"$(int_of "$(awk -v a="$nsr" -v b="$base" 'BEGIN { print (a == "n/a" || b == "n/a") ? "n/a" : a - b }')")" \
			"$fr" "$tr" "$perframe"
	done
	log "bench: U1 $wl $hz Hz: $(grep -h 'unwind tables' "$W/u1dwarf.stderr" | head -n1)"
}

table_u1() {
	local hz wl
	printf '\nU1. BPF cost per sample: aperture record -p WORKLOAD with -K, --unwind fp and --unwind dwarf at once, %s s\n' "$D"
	printf '  %-14s %-6s %5s %9s %9s %9s %8s %7s %9s\n' workload unwind Hz runs ns/run "-K's" frames trunc% ns/frame
	for hz in $U_HZ; do
		for wl in cpuwork deep-fp deep-nofp python3; do
			u1_run "$wl" "$hz"
		done
	done
	printf '  (runs: of oncpu_sample in the window, every CPU, other processes'"'"' samples filtered out early;\n'
	printf '   -K'"'"'s: ns/run above the -K run'"'"'s, the user stack'"'"'s cost; frames: user frames per sample of the\n'
	printf '   workload, [truncated] not counted; trunc%%: samples ending in [truncated]; ns/frame = -K'"'"'s / frames)\n'
}

# ---------------------------------------------------------------- U2
table_u2() {
	local r mode pid built cpu tables
	printf '\nU2. Loader CPU time: aperture record -p PID -d 3 on one %s (libc, libm, libz, libexpat, ld.so, vDSO), /usr/bin/time\n' "$PY"
	for mode in fp dwarf; do : >"$W/u2.$mode"; : >"$W/u2.built.$mode"; done
	if [ ! -x /usr/bin/time ]; then printf '  n/a (no /usr/bin/time)\n'; return; fi
	for r in $(seq "$ROUNDS"); do
		for mode in fp dwarf; do
			wl_start python3 15 1
			pid=${WL_PIDS[0]}
			sleep 0.5
			timeout -k 5 60 /usr/bin/time -f '%U %S' -o "$W/u2.time" "$APERTURE" record --unwind "$mode" \
				-p "$pid" -d 3 --top 0 -o "$W/u2.folded" >"$W/u2.stdout" 2>"$W/u2.stderr" </dev/null
			wl_stop
			cpu=$(awk 'NF == 2 { print $1 + $2 }' "$W/u2.time" 2>/dev/null | tail -n1)
			built=$(sed -n 's/.*built in \([0-9.]*\) ms.*/\1/p' "$W/u2.stderr" | head -n1)
			[ -n "$cpu" ] && echo "$cpu" >>"$W/u2.$mode"
			[ -n "$built" ] && echo "$built" >>"$W/u2.built.$mode"
			[ "$mode" = dwarf ] && tables=$(grep -h 'unwind tables' "$W/u2.stderr" | head -n1)
			log "bench: U2 round $r $mode: user+sys ${cpu:-n/a} s, built in ${built:-n/a} ms"
		done
	done
	printf '  %-8s %16s %22s\n' unwind "user+sys s" "tables built in ms"
	for mode in fp dwarf; do
		printf '  %-8s %16s %22s\n' "$mode" "$(median <"$W/u2.$mode")" \
			"$( [ -s "$W/u2.built.$mode" ] && median <"$W/u2.built.$mode" || echo -)"
	done
	printf '  (median of %s runs; dwarf - fp = what the tables cost the loader)\n  %s\n' "$ROUNDS" "${tables:-tables: n/a}"
}

# ---------------------------------------------------------------- U3
# u3_cmd VARIANT WORKLOAD: the command line in CMD.
u3_cmd() {
	local v=$1 wl
	wl_cmd "$2" "$D"
	wl=("${CMD[@]}")
	case $v in
	none)		CMD=("${wl[@]}") ;;
	aperture-*)	CMD=("$APERTURE" record -F "${v#aperture-}" --unwind dwarf --top 0 -o "$W/u3.folded" -- "${wl[@]}") ;;
	perf-*)		CMD=(perf record -q -e cpu-clock -F "${v#perf-}" --call-graph dwarf -o "$W/u3.perf.data" -- "${wl[@]}") ;;
	esac
}

u3_available() {
	case $1 in
	none) return 0 ;;
	aperture-*) [ -x "$APERTURE" ] ;;
	perf-*) have perf ;;
	esac
}

# u3_ratio VARIANT COLUMN: "median min max" of the per-round ratios VARIANT / none.
u3_ratio() {
	join <(sort "$W/u3.res.$1") <(sort "$W/u3.res.none") 2>/dev/null |
		awk -v c="$2" '$c != "fail" && $(c + 2) != "fail" && $(c + 2) > 0 { print $c / $(c + 2) }' >"$W/u3.r"
	[ -s "$W/u3.r" ] || { echo "n/a n/a n/a"; return; }
	echo "$(median <"$W/u3.r") $(sort -g "$W/u3.r" | head -n1) $(sort -g "$W/u3.r" | tail -n1)"
}

table_u3() {
	local wl=$1 vs=(none) hz r i n v rate wm wn wx cm cn cx med
	for hz in $U_HZ; do vs+=("aperture-$hz" "perf-$hz"); done
	n=${#vs[@]}
	for v in "${vs[@]}"; do : >"$W/u3.res.$v"; done
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((n - 1))); do
			v=${vs[$(((i + r) % n))]}
			u3_available "$v" || continue
			u3_cmd "$v" "$wl"
			rm -f "$W/u3.perf.data"
			timeout -k 5 $((D + 90)) "${CMD[@]}" >"$W/u3.out" 2>"$W/u3.err" </dev/null
			rate=$(awk '/_per_sec/ { print $2, $4 }' "$W/u3.out")
			log "bench: U3 $wl round $r $v: ${rate:-fail}"
			echo "$r ${rate:-fail fail}" >>"$W/u3.res.$v"
		done
	done
	rm -f "$W/u3.perf.data"
	wl_cmd "$wl" "$D"
	printf '\n  %s (%s)\n' "$wl" "${CMD[*]##*/}"
	printf '  %-14s %13s  %-29s  %-29s\n' "" median "per wall second" "per CPU-second"
	printf '  %-14s %13s  %-29s  %-29s\n' variant ops/s "ratio min..max slowdown" "ratio min..max slowdown"
	for v in "${vs[@]}"; do
		med=$(awk '$2 != "fail" { print $2 }' "$W/u3.res.$v" 2>/dev/null | median)
		if [ "$med" = n/a ]; then printf '  %-14s %13s\n' "$v" n/a; continue; fi
		if [ "$v" = none ]; then
			printf '  %-14s %13.0f  spread %s\n' none "$med" "$(awk '$2 != "fail" { print $2 }' "$W/u3.res.none" | sort -g |
				awk '{ v[NR] = $1 } END { if (NR) printf "%.2f%%", 100 * (v[NR] - v[1]) / v[int((NR + 1) / 2)] }')"
			continue
		fi
		read -r wm wn wx < <(u3_ratio "$v" 2)
		read -r cm cn cx < <(u3_ratio "$v" 3)
		printf '  %-14s %13.0f  %-29s  %-29s\n' "$v" "$med" "$(u3_cell "$wm" "$wn" "$wx")" "$(u3_cell "$cm" "$cn" "$cx")"
	done
}

u3_cell() {
	[ "$1" = n/a ] && { echo n/a; return; }
	printf '%.4f %.4f..%.4f %5.2f%%' "$1" "$2" "$3" "$(awk -v r="$1" 'BEGIN { print (1 - r) * 100 }')"
}

# ---------------------------------------------------------------- U4
U4_PIECES=(v_empty v_filter v_key v_nostack v_walk_k v_walk_k_um v_walk_u v_walk_hash v_kstack v_ustack v_nocounts v_full v_walk_u_bpf)

# u4_round: every variant at once (so that all see the same mix of samples:
# the machine's other jobs), whole machine at 997 Hz while cpuwork runs D s;
# appends each variant's ns per run to $W/u4.ns.LABEL.
u4_round() {
	local hz=997 k rt cnt v
	start_many ap_fp timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" --unwind fp -d $((D + 60)) --top 0 -o "$W/u4fp.folded"
	start_many ap_U timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" --unwind fp -U -d $((D + 60)) --top 0 -o "$W/u4U.folded"
	start_many ap_K timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" -K -d $((D + 60)) --top 0 -o "$W/u4K.folded"
	start_many ap_auto timeout -k 5 $((D + 90)) "$APERTURE" record -F "$hz" --unwind auto -d $((D + 60)) --top 0 -o "$W/u4auto.folded"
	have bpftrace && start_many bpftrace timeout -k 5 $((D + 90)) bpftrace -e "profile:hz:$hz { @[kstack, ustack, comm] = count(); }"
	[ -n "$FPCOST" ] && start_many fpcost timeout -k 5 $((D + 90)) "$BIN/fpcost" "$BIN/fpcost.bpf.o" "$hz" $((D + 60)) "${U4_PIECES[@]}"
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/before"
	timeout -k 5 $((D + 20)) "$BIN/cpuwork" "$D" >/dev/null 2>&1
	bpf_stats_of $(for k in "${!TOOLS[@]}"; do prog_ids_of "${TOOLS[$k]}"; done) >"$W/after"
	stats_delta "$W/before" "$W/after" >"$W/delta"
	for k in ap_fp ap_U ap_K ap_auto bpftrace; do
		[ -n "${TOOLS[$k]:-}" ] || continue
		read -r rt cnt < <(stats_of_tool "$k" "$([ $k = bpftrace ] && echo . || echo '^oncpu_sample$')")
		ratio_of "$rt" "$cnt" >>"$W/u4.ns.$k"
	done
	if [ -n "${TOOLS[fpcost]:-}" ]; then
		for v in "${U4_PIECES[@]}"; do
			read -r rt cnt < <(stats_of_tool fpcost "^$v\$")
			ratio_of "$rt" "$cnt" >>"$W/u4.ns.$v"
		done
	fi
	stop_many
}

int_of() { awk -v x="$1" 'BEGIN { if (x == "n/a" || x == "") print "n/a"; else printf "%.0f\n", x }'; }

# u4_ns LABEL: median over the rounds of LABEL's ns per run.
u4_ns() { grep -v n/a "$W/u4.ns.$1" 2>/dev/null | median; }

# u4_part TEXT EXPR: one line of the breakdown, EXPR over the pieces' ns.
u4_part() {
	local text=$1 expr=$2 v vals=() missing=
	for v in "${U4_PIECES[@]}"; do
		vals+=(-v "$v=$(u4_ns "$v")")
		[ "$(u4_ns "$v")" = n/a ] && missing=1
	done
	if [ -n "$missing" ]; then printf '  %-50s %7s\n' "$text" n/a; return; fi
	awk "${vals[@]}" -v t="$text" 'BEGIN { x = '"$expr"'; printf "  %-50s %7.0f\n", t, x }'
}

table_u4() {
	local r k
	printf '\nU4. The frame-pointer sample: whole machine at 997 Hz, all variants at once, while cpuwork (%s threads)\n' "$NCPU"
	printf '    runs %s s; ns per run, median of %s rounds\n' "$D" "$ROUNDS"
	for r in $(seq "$ROUNDS"); do
		u4_round
		log "bench: U4 round $r: $(for k in ap_fp ap_auto bpftrace v_full; do printf '%s %s ' "$k" "$(tail -n1 "$W/u4.ns.$k" 2>/dev/null)"; done)"
	done
	printf '  %-44s %9s\n' variant ns/run
	printf '  %-44s %9s\n' "aperture --unwind fp (oncpu_sample)" "$(int_of "$(u4_ns ap_fp)")"
	printf '  %-44s %9s\n' "aperture --unwind fp -U (user stack only)" "$(int_of "$(u4_ns ap_U)")"
	printf '  %-44s %9s\n' "aperture -K (kernel stack only)" "$(int_of "$(u4_ns ap_K)")"
	printf '  %-44s %9s\n' "aperture --unwind auto (DWARF tables)" "$(int_of "$(u4_ns ap_auto)")"
	printf '  %-44s %9s\n' "bpftrace @[kstack, ustack, comm] = count()" "$(int_of "$(u4_ns bpftrace)")"
	printf '\n  Where a frame-pointer sample'"'"'s time goes (bench/fpcost.bpf.c: oncpu_sample in pieces; ns)\n'
	for k in "${U4_PIECES[@]}"; do printf '  %-50s %7s\n' "$k" "$(int_of "$(u4_ns "$k")")"; done
	u4_part "= BPF program entry (v_empty)" 'v_empty'
	u4_part "+ control, config, idle and target filters" 'v_filter - v_empty'
	u4_part "+ key: pid, comm, process_seen (LRU lookup)" 'v_key - v_filter'
	u4_part "+ counts map: stat_inc, lookup/insert, add" 'v_nostack - v_key'
	u4_part "+ kernel stack: bpf_get_stack" 'v_walk_k - v_filter'
	u4_part "  the same, skipped for user-mode samples" 'v_walk_k_um - v_filter'
	u4_part "+ user stack: bpf_get_stack (frame pointers)" 'v_walk_u - v_filter'
	u4_part "+ FNV hash of both stacks" 'v_walk_hash - v_walk_k - v_walk_u + v_filter'
	u4_part "+ stacks map lookups (both stacks)" 'v_nocounts - v_key - (v_walk_hash - v_filter)'
	u4_part "= sum of the parts" 'v_nocounts + v_nostack - v_key'
	u4_part "  whole program (v_full, as oncpu_sample)" 'v_full'
	u4_part "  user stack walked in BPF instead (v_walk_u_bpf)" 'v_walk_u_bpf - v_filter'
}

main() {
	local wl
	build || { log "bench: cannot build the workloads"; exit 1; }
	[ -x "$PY" ] || log "bench: no $PY: the python3 rows are n/a"
	printf 'Unwinding: %s CPUs, kernel %s, %s rounds, %s s per run, load average %s\n' \
		"$NCPU" "$(uname -r)" "$ROUNDS" "$D" "$(cut -d' ' -f1-3 /proc/loadavg)"
	awk -v n="$NCPU" '$1 > 0.3 * n { exit 1 }' /proc/loadavg ||
		printf 'WARNING: the machine is not idle (load average above); the numbers below are noisy.\n'
	sysctl -qw kernel.bpf_stats_enabled=1 >/dev/null 2>&1 || log "bench: cannot enable bpf_stats: BPF costs n/a"
	[ "${U_SKIP1:-0}" = 1 ] || table_u1
	[ "${U_SKIP2:-0}" = 1 ] || table_u2
	if [ "${U_SKIP3:-0}" != 1 ]; then
		printf '\nU3. Slowdown, %s rounds of %s s: unprofiled, aperture record --unwind dwarf -- CMD, perf record --call-graph dwarf -- CMD\n' \
			"$ROUNDS" "$D"
		for wl in python3 deep-nofp; do table_u3 "$wl"; done
	fi
	[ "${U_SKIP4:-0}" = 1 ] || table_u4
	sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" >/dev/null 2>&1
	printf '\n  (BPF ns are steadier than the throughput ratios, which move with every other job on the machine;\n'
	printf '   rerun with more ROUNDS and a longer D on a quiet machine before trusting a small difference)\n'
}

main "$@"
