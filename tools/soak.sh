#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make soak`: the daemon under load for a while; fails if its memory or open files grow.
#
# Runs `aperture run --pin` with every profiler (--oncpu --offcpu --locks --syscalls --gpu) at
# 999 Hz, writing a profile a minute to an output directory, while a fork storm (short-lived
# processes, half of them exec'ing), a contended pthread mutex and a syscall loop run.  Every
# SOAK_SAMPLE seconds it reads the daemon's VmRSS, its peak RSS since the last sample (VmHWM, reset
# after each read through /proc/PID/clear_refs) and its open fds.  The first SOAK_WARMUP samples
# are the warm-up (caches of symbols and unwind tables filling, the first profiles written);
# after it, no sample may exceed
#   peak RSS: the warm-up's highest + max(4 MiB, 10%): glibc's arenas and the symbolizer's caches
#        move by a few MiB between samples; a leak of 100 bytes per short-lived process is ~10 MiB
#        a minute at 2000 forks/s.  The peak, not VmRSS at the sample: RSS moves by ~15 MiB within
#        an interval (its profiles grow to 24 MiB, then are written and freed), and a sample of it
#        read at one point of that cycle, drifting a little each minute, failed a run whose peaks
#        stayed flat (25 MiB in the warm-up, 37 after; peak 47 MiB throughout);
#   fds: the warm-up's highest + 8: files open for a moment (an ELF being read, /proc/PID/maps,
#        a profile being written) may be caught; a leak per process is hundreds a minute.
# The daemon targets a cgroup holding the workloads (SOAK_SCOPE=cgroup, the default): its caches
# of symbols and open files are bounded (symbolize.c: 4096 processes, 8192 files, 256 fds) but
# fill with every new binary the machine runs, so on a shared machine a system-wide run
# (SOAK_SCOPE=all) grows with what others do there, not with what the daemon leaks.
# SOAK_MODE=oap runs the SkyWalking agent (`run --oap`, against tests/agent/fake_oap.py, ON_CPU and
# OFF_CPU tasks for the workloads) instead of the pinned daemon.
#
# Environment: SOAK_MINUTES (10), SOAK_SAMPLE (60 s), SOAK_WARMUP (2 samples), SOAK_MODE (pin),
# SOAK_SCOPE (cgroup), SOAK_FORKERS (2 fork-storm workers), APERTURE_BIN (./aperture),
# SOAK_REPORT (build/soak.txt).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
APERTURE=${APERTURE_BIN:-$TOP/aperture}
WL=$TOP/tests/build
MINUTES=${SOAK_MINUTES:-10}
SAMPLE_S=${SOAK_SAMPLE:-60}
WARMUP=${SOAK_WARMUP:-2}
MODE=${SOAK_MODE:-pin}
SCOPE=${SOAK_SCOPE:-cgroup}
FORKERS=${SOAK_FORKERS:-2}
REPORT=${SOAK_REPORT:-$TOP/build/soak.txt}
WORK=$(mktemp -d /tmp/aperture-soak.XXXXXX)
PIN=/sys/fs/bpf/aperture_soak_$$
DURATION_S=$((MINUTES * 60))
SAMPLES=$((DURATION_S / SAMPLE_S))
LOAD_S=$((DURATION_S + 30))		# the load outlasts the last sample
CGROUP2_ROOT=${CGROUP2_ROOT:-/sys/fs/cgroup/unified}
CG=
TARGET=()
LOAD_PIDS=()
DAEMON=

say() { echo "soak: $*" | tee -a "$REPORT"; }
die() { echo "soak: $*" >&2; exit 1; }

cleanup() {
	local p
	for p in "${LOAD_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$DAEMON" ] && kill -9 "$DAEMON" 2>/dev/null
	wait 2>/dev/null
	[ "$MODE" = pin ] && "$APERTURE" run --unpin --pin "$PIN" >/dev/null 2>&1
	# the fork storm's last children leave the cgroup a moment after their parents: rmdir waits
	local i
	for ((i = 0; i < 50; i++)); do [ -z "$CG" ] || [ ! -d "$CG" ] || rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
	rm -rf "$WORK"
}
trap cleanup EXIT

check_ready() {
	[ "$(id -u)" = 0 ] || die "needs root"
	[ -x "$APERTURE" ] || die "$APERTURE is not built (make aperture)"
	local w
	for w in forkstorm lockburn sysburn; do
		[ -x "$WL/$w" ] || die "$WL/$w is not built (make -C tests)"
	done
	[ "$WARMUP" -lt "$SAMPLES" ] || die "SOAK_WARMUP=$WARMUP leaves no sample to check"
}

# SOAK_SCOPE=cgroup: a cgroup v2 child for the workloads, the daemon's target.
make_target() {
	[ "$SCOPE" = cgroup ] || return 0
	[ -f "$CGROUP2_ROOT/cgroup.procs" ] || die "no cgroup v2 at $CGROUP2_ROOT (SOAK_SCOPE=all profiles everything)"
	CG=$CGROUP2_ROOT/aperture-soak.$$
	mkdir "$CG" || die "cannot create $CG"
	TARGET=(--cgroup "$CG")
}

# in_target CMD...: runs CMD (in the background) inside the target cgroup, if any.
in_target() {
	( [ -z "$CG" ] || echo "$BASHPID" >"$CG/cgroup.procs"; exec "$@" ) &
	LOAD_PIDS+=($!)
}

# The load, each part for the whole run: processes born and gone, mutex waits, syscalls.
start_load() {
	in_target sh -c 'exec "$1" "$2" "$3" >"$4"' sh "$WL/forkstorm" "$LOAD_S" "$FORKERS" "$WORK/forkstorm.out"
	in_target sh -c 'exec "$1" mutex "$2" 4 >/dev/null' sh "$WL/lockburn" "$LOAD_S"
	# sysburn: 200000 getppid and 1000 failing close per run, a new process every few seconds
	in_target bash -c 'end=$((SECONDS + $2)); while [ $SECONDS -lt $end ]; do "$1" 200000 1000 0 0; done' \
		bash "$WL/sysburn" "$LOAD_S"
}

# The pinned daemon with every profiler, a profile a minute in an output directory.
start_pinned_daemon() {
	"$APERTURE" run --pin "$PIN" "${TARGET[@]}" --oncpu --offcpu --locks --syscalls $GPU_FLAG -F 999 \
		--output-dir "$WORK/out" --interval 60s --keep-files 3 2>"$WORK/daemon.log" &
	DAEMON=$!
	local i
	for ((i = 0; i < 300; i++)); do [ -e "$PIN/oncpu_active" ] && return 0; sleep 0.1; done
	return 1
}

# The SkyWalking agent serving ON_CPU and OFF_CPU tasks on the workloads for the whole run.
start_agent() {
	local port
	port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	/usr/bin/python3 "$TOP/tests/agent/fake_oap.py" --port "$port" --out "$WORK/oap.jsonl" --min-duration 0 \
		--task "ON_CPU:$DURATION_S:soak" --task "OFF_CPU:$DURATION_S:soak" >"$WORK/oap.log" 2>&1 &
	LOAD_PIDS+=($!)
	sleep 2
	"$APERTURE" run --oap "127.0.0.1:$port" "${TARGET[@]}" --service soak --state-dir "$WORK/state" -F 999 \
		--exe-pattern '*/forkstorm' --exe-pattern '*/lockburn' --exe-pattern '*/sysburn' \
		--heartbeat-interval 5 --task-interval 2 --flush-interval 5 2>"$WORK/daemon.log" &
	DAEMON=$!
	sleep 5
	kill -0 "$DAEMON" 2>/dev/null
}

# --gpu only where it attaches without libcuda (it watches for processes that map it).
pick_gpu_flag() {
	GPU_FLAG=--gpu
	timeout 5 "$APERTURE" record --gpu -d 1 -o "$WORK/gpu.folded" >/dev/null 2>"$WORK/gpu.err" || GPU_FLAG=
	[ -n "$GPU_FLAG" ] || say "--gpu left out: $(head -1 "$WORK/gpu.err")"
}

kib_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
fds_of() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
forks_so_far() { awk '$1 == "processes" { print $2 }' /proc/stat; }

# One line a sample: seconds, VmRSS, VmHWM (KiB: the peak since the last sample), open fds,
# threads, and the processes born per second on the whole machine (/proc/stat), the fork storm's
# and everyone else's.
sample_loop() {
	local n t0=$SECONDS forks0 forks1 line left
	forks0=$(forks_so_far)
	say "$(printf '%-6s %6s %10s %10s %5s %7s %8s' sample t_s rss_kib peak_kib fds threads forks/s)"
	for ((n = 1; n <= SAMPLES; n++)); do
		left=$((t0 + n * SAMPLE_S - SECONDS))
		[ "$left" -le 0 ] || sleep "$left"
		kill -0 "$DAEMON" 2>/dev/null || { say "the daemon died (see below)"; return 1; }
		forks1=$(forks_so_far)
		line=$(printf '%-6s %6d %10d %10d %5d %7d %8d' "$n" $((SECONDS - t0)) "$(kib_of "$DAEMON" VmRSS)" \
			"$(kib_of "$DAEMON" VmHWM)" "$(fds_of "$DAEMON")" "$(kib_of "$DAEMON" Threads)" \
			$(((forks1 - forks0) / SAMPLE_S)))
		echo 5 >"/proc/$DAEMON/clear_refs" 2>/dev/null	# VmHWM := VmRSS (else the peak since the start)
		forks0=$forks1
		say "$line"
		echo "$line" >>"$WORK/samples"
	done
}

# Fails (1) when a sample after the warm-up is over the limits the header explains.
judge() {
	awk -v warm="$WARMUP" '
		NR <= warm { if ($4 > rss) rss = $4; if ($5 > fds) fds = $5; next }
		NR == warm + 1 { rss_lim = rss + (rss * 0.10 > 4096 ? rss * 0.10 : 4096); fds_lim = fds + 8 }
		{ if ($4 > rss_max) rss_max = $4; if ($5 > fds_max) fds_max = $5 }
		END {
			printf "warm-up: peak RSS up to %d KiB, %d fds; after: peak RSS up to %d KiB (limit %d), %d fds (limit %d)\n",
				rss, fds, rss_max, rss_lim, fds_max, fds_lim
			exit !(rss_max <= rss_lim && fds_max <= fds_lim)
		}' "$WORK/samples"
}

stop_daemon() {
	local rc
	kill -TERM "$DAEMON"
	wait "$DAEMON"; rc=$?
	DAEMON=
	say "the daemon stopped on SIGTERM with exit $rc"
	return $((rc != 0))
}

main() {
	local ok=1 verdict
	check_ready
	mkdir -p "$(dirname "$REPORT")"
	: >"$REPORT"
	make_target
	say "$(date -u +%FT%TZ) mode=$MODE scope=$SCOPE minutes=$MINUTES sample=${SAMPLE_S}s warm-up=$WARMUP samples, $(nproc) CPUs, kernel $(uname -r)"
	if [ "$MODE" = oap ]; then
		start_load
		start_agent || die "the agent did not start: $(tail -3 "$WORK/daemon.log")"
	else
		pick_gpu_flag
		start_pinned_daemon || die "the daemon did not pin: $(tail -3 "$WORK/daemon.log")"
		start_load
	fi
	say "daemon pid $DAEMON: $(tr '\0' ' ' </proc/$DAEMON/cmdline)"
	sample_loop || ok=0
	verdict=$(judge) || ok=0
	say "$verdict"
	kill -USR1 "$DAEMON" 2>/dev/null; sleep 1
	stop_daemon || ok=0
	wait "${LOAD_PIDS[0]}" 2>/dev/null
	say "fork storm: $(cat "$WORK/forkstorm.out" 2>/dev/null)"
	say "daemon log (last lines):"
	tail -8 "$WORK/daemon.log" | sed 's/^/  /' | tee -a "$REPORT"
	if [ $ok = 1 ]; then say PASS; else say FAIL; fi
	[ $ok = 1 ]
}

main
