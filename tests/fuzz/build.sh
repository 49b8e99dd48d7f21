#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds the libFuzzer targets into OUT (default build/fuzz) with clang
# -fsanitize=fuzzer,address,undefined: each driver with the parsers it runs
# compiled instrumented; the rest (libelf callers' helpers, logging, the
# generated protobuf code) comes from build/libaperture.a.  Needs
# `make aperture`.  build.sh OUT [TARGET...] builds only those targets.
set -e
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$TOP/build/fuzz}
shift || true
B=$TOP/build
U=$TOP/user
F=$TOP/tests/fuzz
mkdir -p "$OUT"
CC=${FUZZ_CC:-clang}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
INC="$(for d in "$U"/*/ "$TOP"/bpf/ "$TOP"/bpf/*/; do printf -- '-I%s ' "${d%/}"; done)"
INC="$INC -I$B -I$B/gen -I/usr/include/nanopb -DAPERTURE_VERSION=\"fuzz\" -D_GNU_SOURCE"
PB="$B/gen/common/Common.pb.c $B/gen/common/Command.pb.c $B/gen/ebpf/profiling/Profile.pb.c $B/gen/ebpf/profiling/Process.pb.c"
LIBS="$B/libaperture.a -Wl,--start-group -lbpf -lnghttp2 -lmbedtls -lmbedx509 -lmbedcrypto -lprotobuf-nanopb -ldw -lelf -liberty -lz -llzma -lbz2 -lzstd -Wl,--end-group -lpthread -lm"
SYMS="$U/symbolize/elfsyms.c $U/symbolize/symtab.c $U/symbolize/strintern.c $U/unwind/cfi.c"

# The drivers and the production sources each one compiles instrumented.
declare -A SRCS=(
	[commands]="$F/fuzz_commands.c $U/skywalking/skywalking.c $PB"
	[grpc]="$F/fuzz_grpc.c $U/skywalking/skywalking.c $PB"
	[config]="$F/fuzz_config.c $F/fuzz_config_daemon.c $U/cli/config.c $U/cli/cli.c $U/agent/agent_opts.c"
	[maps]="$F/fuzz_maps.c $F/fuzz_maps_unwind.c $F/fuzz_maps_lib.c $SYMS"
	[perfmap]="$F/fuzz_perfmap.c $SYMS"
	[open]="$F/fuzz_open.c $SYMS $U/lib/safe_open.c"
	[kallsyms]="$F/fuzz_kallsyms.c $U/symbolize/kallsyms.c $U/symbolize/symtab.c"
	[elf]="$F/fuzz_elf.c $SYMS"
	[events]="$F/fuzz_events.c $U/cmd/events.c $U/export/bincode.c"
	[policies]="$F/fuzz_policies.c $U/agent/agent_continuous.c $U/lib/json.c"
)
TARGETS=${*:-commands grpc config maps perfmap open kallsyms elf events policies}
for t in $TARGETS; do
	[ -n "${SRCS[$t]}" ] || { echo "build.sh: no target $t" >&2; exit 2; }
	# shellcheck disable=SC2086 # word splitting of the lists is meant
	$CC $FLAGS $INC -o "$OUT/fuzz_$t" ${SRCS[$t]} $LIBS
done
