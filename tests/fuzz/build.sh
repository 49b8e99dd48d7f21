#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds the libFuzzer targets into OUT (default build/fuzz) with clang
# -fsanitize=fuzzer,address,undefined; the agent's decoders are compiled
# instrumented, the rest comes from build/libaperture.a.  Needs `make aperture`.
set -e
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$TOP/build/fuzz}
B=$TOP/build
mkdir -p "$OUT"
CC=${FUZZ_CC:-clang}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
INC="-I$TOP/user/skywalking -I$TOP/user/lib -I$TOP/user/core -I$TOP/user/symbolize -I$TOP/user/export -I$TOP/bpf -I$B -I$B/gen -I/usr/include/nanopb -DAPERTURE_VERSION=\"fuzz\" -D_GNU_SOURCE"
PB="$B/gen/common/Common.pb.c $B/gen/common/Command.pb.c $B/gen/ebpf/profiling/Profile.pb.c $B/gen/ebpf/profiling/Process.pb.c"
LIBS="$B/libaperture.a -lbpf -lnghttp2 -lmbedtls -lmbedx509 -lmbedcrypto -lprotobuf-nanopb -ldw -lelf -liberty -lz -llzma -lbz2 -lzstd -lpthread"
$CC $FLAGS $INC -o "$OUT/fuzz_commands" "$TOP/tests/fuzz/fuzz_commands.c" "$TOP/user/skywalking/skywalking.c" $PB $LIBS
$CC $FLAGS $INC -o "$OUT/fuzz_grpc" "$TOP/tests/fuzz/fuzz_grpc.c" "$TOP/user/skywalking/skywalking.c" $PB $LIBS
