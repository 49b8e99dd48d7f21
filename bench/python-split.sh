#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where one second of `record` of a CPython program goes, split: the BPF programs' run time
# (bpf_stats) and the loader's CPU (its threads' schedstat), from 3 s to 15 s of an 18 s
# `record -F HZ -- PY38 chain.py spin 18`, plus the on-CPU program's runs and ns a run.
# bench/python.sh gives the sum against austin; this says which part moved.
# usage: bash bench/python-split.sh [HZ (99)] [RUNS (3)]; PY=interpreter (pyenv's 3.8),
# PYCPU=N runs the program under taskset -c N, EXTRA="record flags".
. "$(dirname "$0")/lib.sh"
HZ=${1:-99}
RUNS=${2:-3}
PY=${PY:-$(ls -d /root/.pyenv/versions/3.8*/bin/python3.8 2>/dev/null | head -n1)}
[ -x "$PY" ] || { log "python-split: no interpreter (set PY)"; exit 1; }

# sample AP: "bpf_ns loader_ns oncpu_run_ns oncpu_runs": AP's BPF run time and CPU (cost_ns_of), and
# oncpu_sample's own figures (by name: run it where no other aperture is loaded)
sample() {
	local bpf ld run_ns runs
	read -r ld bpf < <(cost_ns_of "$1")
	read -r _ run_ns _ runs < <(bpftool prog show name oncpu_sample | grep -o 'run_time_ns [0-9]* run_cnt [0-9]*')
	echo "${bpf:-0} ${ld:-0} ${run_ns:-0} ${runs:-0}"
}

sysctl -qw kernel.bpf_stats_enabled=1
printf 'record -F %s %s of %s chain.py spin, 3 s to 15 s, load average %s\n' "$HZ" "${EXTRA:-}" "$PY" "$(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$RUNS"); do
	# shellcheck disable=SC2086
	"$APERTURE" record ${EXTRA:-} -F "$HZ" --top 0 -o "$W/split.folded" -- ${PYCPU:+taskset -c "$PYCPU"} \
		"$PY" "$ROOT/tests/workloads/python/chain.py" spin 18 >/dev/null 2>"$W/split.err" &
	ap=$!
	BGPIDS+=("$ap")
	sleep 3
	read -r b0 l0 r0 n0 < <(sample "$ap"); t0=${EPOCHREALTIME/./}
	sleep 12
	read -r b1 l1 r1 n1 < <(sample "$ap"); t1=${EPOCHREALTIME/./}
	wait "$ap"
	awk -v b=$((b1 - b0)) -v l=$((l1 - l0)) -v r=$((r1 - r0)) -v n=$((n1 - n0)) -v us=$((t1 - t0)) -v i="$r" \
		'BEGIN { printf "  run %d: BPF %.2f ms/s (oncpu_sample %d runs, %.0f ns a run), loader %.2f ms/s\n",
			i, b / us, n, n ? r / n : 0, l / us }'
done
