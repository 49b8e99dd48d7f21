#!/usr/bin/env bash
# Installs every build, test and benchmark dependency with apt-get.
# Idempotent: quiet and fast when everything is already there.
set -euo pipefail
BUILD="clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libdw-dev libiberty-dev liblzma-dev libbz2-dev libzstd-dev
       libnghttp2-dev libmbedtls-dev nanopb libnanopb-dev protobuf-compiler make gcc pkg-config file"
TEST="libprotobuf-c-dev protobuf-c-compiler golang-go libxml2-utils procps
      python3-grpcio python3-protobuf elfutils binutils util-linux valgrind xz-utils
      golang-github-google-pprof-dev iproute2 libclang-rt-14-dev"
BENCH="linux-perf bpftrace libbpf-tools time jq"
KERNELS="qemu-system-x86 busybox-static cpio squashfs-tools kmod xz-utils zstd"
want="$BUILD $TEST"
[ "${1:-}" = "--bench" ] && want="$want $BENCH"
[ "${1:-}" = "--kernels" ] && want="$want $KERNELS"
missing=()
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
