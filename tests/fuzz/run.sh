#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make fuzz`: runs each libFuzzer target built by build.sh in OUT for SECS
# seconds, one at a time (one job: the machine is shared), from its seed
# corpus in tests/fuzz/corpus plus what earlier runs found (OUT/corpus/TARGET,
# where new inputs go).  A crash, leak, undefined behaviour or an input slower
# than 10 s stops that target: its input is left as OUT/crashes/TARGET-*.
# Prints each target's libFuzzer final stats; exit 1 if one failed.
#   run.sh OUT SECS [TARGET...]    (default: every folder of tests/fuzz/corpus)
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1
SECS=$2
shift 2
TARGETS=${*:-$(ls "$TOP/tests/fuzz/corpus")}
mkdir -p "$OUT/crashes"
failed=0
printf '%-10s %10s %8s %6s %s\n' target runs exec/s cov result
for t in $TARGETS; do
	corpus=$OUT/corpus/$t
	log=$OUT/$t.log
	mkdir -p "$corpus"
	"$OUT/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-close_fd_mask=3 -artifact_prefix="$OUT/crashes/$t-" "$corpus" "$TOP/tests/fuzz/corpus/$t" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	result=ok
	if [ "$rc" != 0 ]; then
		result="FAILED (rc $rc, $log)"
		failed=1
	fi
	printf '%-10s %10s %8s %6s %s\n' "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$result"
done
exit $failed
