# SPDX-License-Identifier: GPL-2.0
# Helpers of the per-profiler benchmarks (bench/syscalls.sh, bench/locks.sh):
# start a tool, wait until its BPF programs are loaded, read their bpf_stats,
# stop it; every process started is killed at exit, kernel.bpf_stats_enabled
# is restored and a tracefs this script mounted is unmounted.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$PWD
APERTURE=${APERTURE:-$ROOT/aperture}
ROUNDS=${ROUNDS:-3}
BIN=$ROOT/bench/build
W=$(mktemp -d /tmp/aperture-bench.XXXXXX)
STATS_ORIG=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
TRACEFS_MOUNTED=
BGPIDS=()

log() { printf '%s\n' "$*" >&2; }
have() { [ -n "$1" ] && command -v "$1" >/dev/null 2>&1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "n/a";
	else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# cost_ns_of PID: "cpu_ns bpf_ns": the CPU time of PID's threads so far (schedstat: ns, not ticks), and
# the run time of the BPF programs it holds (fdinfo, bpf_stats on; one held by two fds counted once).
# Builtins only: it runs beside the runs it measures (~12 ms of CPU a call on an aperture with ~70 fds).
cost_ns_of() {
	local p=$1 f k v id cpu=0 bpf=0
	local -A seen=()
	for f in /proc/"$p"/task/*/schedstat; do read -r v _ 2>/dev/null <"$f" && cpu=$((cpu + v)); done
	for f in /proc/"$p"/fdinfo/*; do
		id=
		while read -r k v _; do
			case $k in
			prog_id:) id=$v ;;
			run_time_ns:) [ -n "$id" ] && [ -z "${seen[$id]:-}" ] && { seen[$id]=1; bpf=$((bpf + v)); } ;;
			esac
		done 2>/dev/null <"$f"
	done
	echo "$cpu $bpf"
}

kill_tree() {
	local pid=$1 kid
	for kid in $(pgrep -P "$pid" 2>/dev/null); do kill -KILL "$kid" 2>/dev/null; done
	kill -KILL "$pid" 2>/dev/null
}

bench_cleanup() {
	local pid
	for pid in "${BGPIDS[@]}"; do kill -0 "$pid" 2>/dev/null && kill_tree "$pid"; done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_ORIG" >/dev/null 2>&1
	[ -n "$TRACEFS_MOUNTED" ] && umount /sys/kernel/tracing 2>/dev/null
	if [ -n "${KEEP_WORK:-}" ]; then log "bench: its working files are kept in $W"; else rm -rf "$W"; fi
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# Some peers (libbpf-tools, bpftrace's tracepoint: probes) read event ids from tracefs.
need_tracefs() {
	mountpoint -q /sys/kernel/tracing && return 0
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null && TRACEFS_MOUNTED=1
}

# BPF program ids held open by PID or its children (fdinfo: not fooled by other loaders).
prog_ids_of() {
	local p
	for p in "$1" $(pgrep -P "$1" 2>/dev/null); do
		grep -hs '^prog_id:' /proc/"$p"/fdinfo/* 2>/dev/null
	done | awk '{ print $2 }' | sort -un
}

# bpf_stats_of IDS...: "id name run_time_ns run_cnt" per program.
bpf_stats_of() {
	[ $# -gt 0 ] || return 0
	local ids
	ids=$(printf '%s,' "$@")
	timeout 10 bpftool prog show -j 2>/dev/null |
		jq -r --argjson ids "[${ids%,}]" '.[] | select(.id as $i | $ids | index($i)) |
			"\(.id) \(.name // "?") \(.run_time_ns // 0) \(.run_cnt // 0)"' 2>/dev/null
}

# stats_off_begin / stats_off_end: with STATS_OFF=1, bpf_stats off around a
# timed run (its clock reads around every program run cost ~80 ns here) and
# back to what it was after it; nothing without.
stats_off_begin() {
	STATS_PREV=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null)
	if [ "${STATS_OFF:-0}" = 1 ]; then sysctl -qw kernel.bpf_stats_enabled=0; fi
}
stats_off_end() {
	if [ "${STATS_OFF:-0}" = 1 ]; then sysctl -qw kernel.bpf_stats_enabled="${STATS_PREV:-0}"; fi
}

# start_tool NAME CMD...: starts CMD in the background (PID in TOOL_PID) and
# returns once it holds BPF programs (plus 1 s to attach); 1 if it died.
start_tool() {
	local name=$1 i
	shift
	"$@" >"$W/$name.stdout" 2>"$W/$name.stderr" </dev/null &
	TOOL_PID=$!
	BGPIDS+=("$TOOL_PID")
	for i in $(seq 150); do		# 30 s: bpftrace compiles first
		kill -0 "$TOOL_PID" 2>/dev/null || break
		[ -n "$(prog_ids_of "$TOOL_PID")" ] && { sleep 1; return 0; }
		sleep 0.2
	done
	log "bench: $name did not start: $(tail -n 3 "$W/$name.stderr" | tr '\n' ' ')"
	return 1
}

# wait_running PID: with bpf_stats on, waits (60 s at most) until a program
# PID holds has run: loaded is not attached, and on a loaded machine a tool
# can hold its programs seconds before it attaches them.
wait_running() {
	local i ids=()
	for i in $(seq 300); do
		mapfile -t ids < <(prog_ids_of "$1")
		bpf_stats_of "${ids[@]}" | awk '$4 > 0 { ok = 1 } END { exit !ok }' && return 0
		sleep 0.2
	done
	log "bench: the programs of $1 did not run in 60 s"
	return 1
}

# start_perf NAME CMD...: the same for a tool without BPF programs (perf): 2 s to start.
start_perf() {
	local name=$1
	shift
	"$@" >"$W/$name.stdout" 2>"$W/$name.stderr" </dev/null &
	TOOL_PID=$!
	BGPIDS+=("$TOOL_PID")
	sleep 2
	kill -0 "$TOOL_PID" 2>/dev/null || { log "bench: $name did not start: $(tail -n 3 "$W/$name.stderr" | tr '\n' ' ')"; return 1; }
}

# stop_tool: SIGINT (each tool writes its output on it), then KILL after 30 s.
stop_tool() {
	local i
	kill -INT "$TOOL_PID" 2>/dev/null
	for i in $(seq 150); do kill -0 "$TOOL_PID" 2>/dev/null || break; sleep 0.2; done
	kill -0 "$TOOL_PID" 2>/dev/null && { log "bench: $TOOL_PID did not stop, killing it"; kill_tree "$TOOL_PID"; }
	wait "$TOOL_PID" 2>/dev/null
}

# stats_sum FILE REGEX: total run_time_ns and run_cnt of the programs whose name matches.
stats_sum() {
	awk -v re="$2" '$2 ~ re { t += $3; c += $4 } END { printf "%.0f %.0f\n", t, c }' "$1" 2>/dev/null
}

# stats_delta BEFORE AFTER: "id name dt dc" per program, the workload's share of the counters.
stats_delta() {
	awk 'NR == FNR { t[$1] = $3; c[$1] = $4; next } { print $1, $2, $3 - t[$1], $4 - c[$1] }' "$1" "$2"
}

ratio_of() {	# ratio_of A B: A / B, or n/a
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.3f\n", a / b }'
}

# bench_workload_build NAME...: bench/NAME.c to $BIN/NAME, with frame pointers (cpuwork, pingpong)
bench_workload_build() {
	local w
	mkdir -p "$BIN"
	for w in "$@"; do
		gcc -O2 -g -fno-omit-frame-pointer -pthread -Wall -o "$BIN/$w" "bench/$w.c" || return 1
	done
}

# bench_bpf_build NAME: a bench-only BPF object and its loader, bench/NAME.bpf.c to $BIN/NAME.bpf.o
# and bench/NAME.c to $BIN/NAME (hookcost, fpcost)
bench_bpf_build() {
	local arch
	arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
	clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Ivmlinux -Ibpf/include -Ibpf -I"/usr/include/$arch" \
		-c "bench/$1.bpf.c" -o "$BIN/$1.bpf.o" &&
	gcc -O2 -Wall -Ibpf/include -o "$BIN/$1" "bench/$1.c" -lbpf -lelf -lz
}
