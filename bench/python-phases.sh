#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Why the Python sample's cost moves from run to run: every second, the ns a run of aperture's
# oncpu_sample (record -p a pyenv 3.8 chain.py, Python frames on) beside three probe programs on the
# same CPU clock (bench/fpcost.bpf.c): t_pages reads 32 cache lines in 32 pages, t_lines 32 lines in
# one page, t_same one line 32 times.  What moves with t_pages alone is the cost of page walks; what
# moves with all of them, the CPU's speed for kernel code at that moment.
# usage: bash bench/python-phases.sh [HZ (99)] [SECONDS (20)]; BUSY=1 runs bench/build/cpuwork's one
# thread beside it.
. "$(dirname "$0")/lib.sh"
HZ=${1:-99}
N=${2:-20}
PY=${PY:-$(ls -d /root/.pyenv/versions/3.8*/bin/python3.8 2>/dev/null | head -n1)}
[ -x "$PY" ] || { log "python-phases: no interpreter (set PY)"; exit 1; }
mkdir -p "$BIN"
bench_bpf_build fpcost 2>"$W/fpcost.log" || { log "python-phases: bench/fpcost.c does not build: $(head -n 3 "$W/fpcost.log")"; exit 1; }
bench_workload_build cpuwork || exit 1
have jq || { log "python-phases: needs jq (bpf_stats_of)"; exit 1; }

# snap: "name run_time_ns run_cnt" of the four programs, of this record and this fpcost only
snap() {
	bpf_stats_of $(prog_ids_of "$ap") $(prog_ids_of "$fp") |
		awk '$2 ~ /^(oncpu_sample|t_pages|t_lines|t_same)$/ { print $2, $3, $4 }' | sort
}

sysctl -qw kernel.bpf_stats_enabled=1
if [ "${BUSY:-0}" = 1 ]; then "$BIN/cpuwork" $((N + 15)) 1 >/dev/null & BGPIDS+=($!); fi
"$PY" tests/workloads/python/chain.py spin $((N + 12)) >/dev/null &
wl=$!
BGPIDS+=("$wl")
start_tool ph "$APERTURE" record -F "$HZ" -p "$wl" -d $((N + 8)) --top 0 -o "$W/ph.folded" || exit 1
ap=$TOOL_PID
"$BIN/fpcost" "$BIN/fpcost.bpf.o" "$HZ" $((N + 6)) t_pages t_lines t_same &
fp=$!
BGPIDS+=("$fp")
sleep 2
printf 'ns a run each second, %s Hz%s, load average %s\n' "$HZ" "$([ "${BUSY:-0}" = 1 ] && echo ', beside a busy thread')" "$(cut -d' ' -f1 /proc/loadavg)"
printf '  %16s %8s %8s %8s\n' "oncpu_sample(runs)" t_pages t_lines t_same
prev=$(snap)
for _ in $(seq "$N"); do
	sleep 1
	cur=$(snap)
	join <(echo "$prev") <(echo "$cur") | awk '{ n = $5 - $3; v[$1] = n ? sprintf("%.0f", ($4 - $2) / n) : "-"; c[$1] = n }
		END { printf "  %10s(%4d) %8s %8s %8s\n", v["oncpu_sample"], c["oncpu_sample"], v["t_pages"], v["t_lines"], v["t_same"] }'
	prev=$cur
done
stop_tool
