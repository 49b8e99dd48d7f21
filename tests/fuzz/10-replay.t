#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The libFuzzer targets (tests/fuzz: clang -fsanitize=fuzzer,address,undefined),
# one per parser of outside input, build; and each replays its whole corpus
# (tests/fuzz/corpus/TARGET: the seeds and every past crash's input) without a
# crash, a leak, undefined behaviour or an input slower than 30 s.  With
# FUZZ_SECONDS=N each target then also fuzzes N seconds (`make fuzz` is the
# long run).  Skips only without a clang that links libFuzzer (Debian:
# clang-14 with libclang-rt-14-dev).
. "$(dirname "$0")/../lib.sh"
SECS=${FUZZ_SECONDS:-0}
FLAGS="-timeout=30 -rss_limit_mb=2048 -close_fd_mask=3"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' > "$TMP/probe.c"
clang -fsanitize=fuzzer,address,undefined -o "$TMP/probe" "$TMP/probe.c" 2>/dev/null ||
	skip_all "clang -fsanitize=fuzzer does not link (install clang-14 and libclang-rt-14-dev)"
[ -f "$TOP/build/libaperture.a" ] || skip_all "build aperture first (make aperture)"
ok "the fuzz targets build" "$TOP/tests/fuzz/build.sh" "$TMP/bin"

# replay TARGET: every input of its corpus once; a failure shows the sanitizer's report.
replay() {
	local target=$1 corpus=$TOP/tests/fuzz/corpus/$1 rc runs
	(cd "$TMP" && "$TMP/bin/fuzz_$target" $FLAGS "$corpus"/* > "$TMP/$target.replay" 2>&1)
	rc=$?
	runs=$(grep -c '^Executed ' "$TMP/$target.replay")
	is "fuzz_$target: its $(ls "$corpus" | wc -l) inputs replay without a crash, leak or undefined behaviour" "$rc" 0 ||
		grep -A20 'ERROR\|runtime error\|deadly signal' "$TMP/$target.replay" | head -30 | sed 's/^/# /'
	is "fuzz_$target: every input ran" "$runs" "$(ls "$corpus" | wc -l)"
}

# fuzz TARGET: SECS seconds from a copy of its corpus.
fuzz() {
	local target=$1 rc runs
	cp -r "$TOP/tests/fuzz/corpus/$target" "$TMP/corpus-$target"
	(cd "$TMP" && "$TMP/bin/fuzz_$target" $FLAGS -max_total_time="$SECS" -print_final_stats=1 \
		"$TMP/corpus-$target" > "$TMP/$target.log" 2>&1)
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$target.log")
	diag "fuzz_$target: $runs runs in $SECS s"
	is "fuzz_$target: $SECS s of fuzzing without a crash, leak or undefined behaviour" "$rc" 0 ||
		grep -A20 'ERROR\|runtime error\|deadly signal' "$TMP/$target.log" | head -30 | sed 's/^/# /'
}

for corpus in "$TOP"/tests/fuzz/corpus/*/; do
	target=$(basename "$corpus")
	if [ ! -x "$TMP/bin/fuzz_$target" ]; then
		fail "fuzz_$target: a corpus without its target (tests/fuzz/build.sh)"
		continue
	fi
	replay "$target"
	[ "$SECS" -gt 0 ] && fuzz "$target"
done
done_testing
