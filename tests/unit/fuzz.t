#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libFuzzer (clang -fsanitize=fuzzer,address,undefined) on what the OAP sends
# back: the Commands / task / downstream decoders (tests/fuzz/fuzz_commands.c)
# and the gRPC response handling over HTTP/2 (tests/fuzz/fuzz_grpc.c), from the
# seed corpora in tests/fuzz/corpus, FUZZ_SECONDS each (default 30).  A crash
# leaves its input in $TMP and fails the test.  Skips only without a clang
# that links libFuzzer (Debian: clang-14 with libclang-rt-14-dev).
. "$(dirname "$0")/../lib.sh"
SECS=${FUZZ_SECONDS:-30}
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' > "$TMP/probe.c"
clang -fsanitize=fuzzer,address,undefined -o "$TMP/probe" "$TMP/probe.c" 2>/dev/null ||
	skip_all "clang -fsanitize=fuzzer does not link (install clang-14 and libclang-rt-14-dev)"
[ -f "$TOP/build/libaperture.a" ] || skip_all "build aperture first (make aperture)"
ok "the fuzz targets build" "$TOP/tests/fuzz/build.sh" "$TMP/bin"
for target in commands grpc; do
	corpus=$TMP/corpus-$target
	cp -r "$TOP/tests/fuzz/corpus/$target" "$corpus"
	(cd "$TMP" && "$TMP/bin/fuzz_$target" -max_total_time="$SECS" -rss_limit_mb=1024 -max_len=65536 \
		-print_final_stats=1 "$corpus" > "$TMP/$target.log" 2>&1)
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$target.log")
	diag "fuzz_$target: $runs runs in $SECS s, corpus $(ls "$corpus" | wc -l) inputs"
	is "fuzz_$target: no crash, leak or undefined behaviour" "$rc" 0 ||
		grep -A20 'ERROR\|runtime error' "$TMP/$target.log" | head -30 | sed 's/^/# /'
	ge "fuzz_$target: ran" "${runs:-0}" 1000
done
done_testing
