#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stacks and counts maps that allocate at insert (doctor's hash_alloc, 6.1+) take kernel memory as
# they fill and lose no stack at a CPU's first sample; preallocated (forced, as before 6.1) they
# hold 16384 stacks of 1 KiB per kind from the start; both give cpuburn's 50/30/20.
# Each CPU's allocation cache is primed before the programs attach: at creation it holds one
# element of a stack's size, and the first program run on a CPU that stores a user and a kernel
# stack would lose the second (it did, 1-2 a run here, before the priming).
# And python_codes' size: a quarter for a record of named processes.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn
command -v bpftool >/dev/null || skip_all "bpftool missing"

# maps_of PID: "name flags max_entries bytes_memlock" of each BPF map PID holds open (one bpftool
# call for all: the record may end soon after)
maps_of() {
	local ids
	ids=$(for f in /proc/"$1"/fdinfo/*; do awk '$1 == "map_id:" { print $2 }' "$f" 2>/dev/null; done | sort -u | tr '\n' ' ')
	bpftool map show -j 2>/dev/null | IDS=" $ids" /usr/bin/python3 -c '
import json, os, sys
ids = set(os.environ["IDS"].split())
for m in json.load(sys.stdin):
    if str(m["id"]) in ids:
        print(m["name"], m["flags"], m["max_entries"], m.get("bytes_memlock", 0))'
}

# sum_of MAPS NAME COLUMN: the sum of COLUMN (2 flags, 3 max_entries, 4 memlock) over maps NAME
sum_of() { awk -v n="$2" -v c="$3" '$1 == n { t += $c } END { printf "%.0f\n", t }' "$1"; }
# flags_of MAPS NAME: the distinct flags of the maps NAME, one line
flags_of() { awk -v n="$2" '$1 == n { print $2 }' "$1" | sort -u | tr '\n' ' '; }

# record_both MODE [ENV]: on-CPU and off-CPU of 100 short processes and then cpuburn (3 s, two
# threads), reading the record's maps once cpuburn runs (both kinds loaded): the forks put a
# first switch, with its user and kernel stacks, on every CPU
record_both() {
	local mode=$1 ap i
	shift
	cp "$WL/cpuburn" "$TMP/burn_$mode"
	env "$@" "$APERTURE" record --oncpu --offcpu -F 199 -d $((10 * TEST_SCALE)) --top 0 -o "$TMP/$mode.folded" -- \
		sh -c "for i in \$(seq 100); do /bin/true; done; exec '$TMP/burn_$mode' 3 2" \
		>"$TMP/$mode.out" 2>"$TMP/$mode.err" &
	ap=$!
	for ((i = 0; i < 100 * TEST_SCALE; i++)); do pgrep -x "burn_$mode" >/dev/null && break; sleep 0.1; done
	maps_of "$ap" >"$TMP/$mode.maps"
	wait "$ap"
	echo $? >"$TMP/$mode.rc"
}

# checks MODE: what both ways must give
checks() {
	local mode=$1
	is "$mode: record exits 0" "$(cat "$TMP/$mode.rc")" 0
	is "$mode: two stacks maps read (one per kind)" "$(awk '$1 == "stacks"' "$TMP/$mode.maps" | wc -l)" 2
	is "$mode: no line says a stack allocation failed" "$(grep -c 'stack allocation failed' "$TMP/$mode.err")" 0
	ok "$mode: on-CPU lost nothing" grep -qE '^aperture: oncpu: [0-9]+ samples, 0 lost' "$TMP/$mode.err"
	ok "$mode: off-CPU lost nothing" grep -qE '^aperture: offcpu: [0-9]+ switches, 0 lost' "$TMP/$mode.err"
	# record keeps no totals (a daemon does): one entry each, whatever the counts maps' size
	is "$mode: totals maps of one entry" "$(awk '$1 == "totals" { print $3 }' "$TMP/$mode.maps" | sort -u)" 1
	grep "^burn_$mode;" "$TMP/$mode.oncpu.folded" >"$TMP/$mode.burn.folded"
	is_within "$mode: burn_50 share" 50 "$(leaf_share "$TMP/$mode.burn.folded" burn_50)" 6
	is_within "$mode: burn_30 share" 30 "$(leaf_share "$TMP/$mode.burn.folded" burn_30)" 6
	is_within "$mode: burn_20 share" 20 "$(leaf_share "$TMP/$mode.burn.folded" burn_20)" 6
}

MiB=$((1024 * 1024))

# 1. Allocated at insert, where the kernel lets perf_event programs do it.
if have_feature hash_alloc; then
	record_both alloc
	checks alloc
	for m in stacks counts_0 counts_1 totals; do
		# BPF_F_NO_PREALLOC is flag 1
		is "alloc: $m maps allocate at insert" "$(flags_of "$TMP/alloc.maps" "$m")" "1 "
	done
	# a few hundred stacks of ~2 KiB each (the allocator's size class), not 2 x 16384 x ~1.1 KiB
	le "alloc: the stacks maps' memory (bytes)" "$(sum_of "$TMP/alloc.maps" stacks 4)" $((4 * MiB))
else
	for i in $(seq 14); do skip "allocated at insert" "$(feature_why hash_alloc)"; done
fi

# 2. Preallocated: the kernels before 6.1, forced here.
record_both prealloc APERTURE_DISABLE_FEATURES=hash_alloc
checks prealloc
for m in stacks counts_0 counts_1; do
	is "prealloc: $m maps preallocated" "$(flags_of "$TMP/prealloc.maps" "$m")" "0 "
done
# 16384 values of 1024 bytes each, per kind
ge "prealloc: the stacks maps' memory (bytes)" "$(sum_of "$TMP/prealloc.maps" stacks 4)" $((2 * 16384 * 1024))

# 3. python_codes, an LRU (filled whole when created, ~9 ms for 65536 entries here): a record of
# named processes (the command above) takes 16384 entries, a whole-machine record 65536.
if have_feature python_frames; then
	is "a command's record: python_codes of 16384 entries" \
		"$(awk '$1 == "python_codes" { print $3 }' "$TMP/prealloc.maps" | sort -u)" 16384
	"$APERTURE" record --oncpu -F 99 -d $((5 * TEST_SCALE)) --top 0 -o "$TMP/whole.folded" >/dev/null 2>&1 &
	ap=$!
	for ((i = 0; i < 100 * TEST_SCALE; i++)); do
		maps_of "$ap" >"$TMP/whole.maps"
		grep -q '^python_codes ' "$TMP/whole.maps" && break
		sleep 0.1
	done
	kill -INT "$ap" 2>/dev/null
	wait "$ap"
	is "a whole-machine record: python_codes of 65536 entries" \
		"$(awk '$1 == "python_codes" { print $3 }' "$TMP/whole.maps" | sort -u)" 65536
else
	for i in 1 2; do skip "python_codes' size" "$(feature_why python_frames)"; done
fi
done_testing
