#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# test-kernels.sh: smoke-test the static aperture binary on other kernels under qemu.
#
#   tools/test-kernels.sh [--deps] [--no-lockdown] [--modes LIST] [--tests LIST] [--test-modes LIST]
#                         [VMLINUZ|DEBIAN-PACKAGE...]
#
# e.g. tools/test-kernels.sh                                    (bookworm's newest 6.1 and bullseye's newest 5.10 cloud kernels)
#      tools/test-kernels.sh linux-image-5.10-cloud-amd64       (Debian 11's, through a private apt configuration)
#      tools/test-kernels.sh linux-image-6.12-cloud-amd64 /boot/vmlinuz-$(uname -r)
#      tools/test-kernels.sh --modes normal --tests 55-degraded linux-image-6.12-cloud-amd64
#
# Each kernel image (default: Debian bookworm's newest linux-image-6.1.0-*-cloud-amd64,
# fetched with apt-get download into build/kernels/) is booted under qemu (TCG: there is no
# KVM here) with an initramfs holding busybox, the static aperture, frame-pointer workloads
# and a static pprof decoder.  The guest's /init runs a smoke subset and prints TAP lines on
# the serial console: aperture --version, doctor, record on-CPU (shares of cpuburn's
# burn_50/30/20 from the decoded pprof) and off-CPU, run --pin with takeover after kill -9,
# dump, the pinned iterator, --unpin.  Every kernel is booted three times: normally, with
# lockdown=confidentiality (bpf_probe_read_kernel and friends denied) and with lockdown=integrity.
#
# Test files: after the smoke steps, the boots of the --test-modes (default: normal) also run
# tests/{pinning/50-pinned,doctor/55-degraded,profilers/60-locks}.t (--tests) with `prove -v --exec bash`, as on the
# host: this machine's root filesystem (less what the tests do not need, a cached squashfs,
# build/kernels/hostroot.sqfs) and the tree (aperture, tests/, tools/) are two read-only virtio
# disks under a tmpfs overlay, so bash, perl, python3, go, bpftool and the workloads are there.
# The kernel's virtio, squashfs and overlay modules go into the initramfs.  Under TCG the tests'
# waits and timeouts are scaled by APERTURE_TEST_SCALE (TEST_SCALE, default 10); their known
# answers are not.
#
# Results: a table per kernel and boot on stdout and in build/kernels/results.md; console
# logs in build/kernels/logs/.  Exit status 1 when a step failed or a boot did not finish.
#
# Options:
#   --deps            only install what this needs (qemu-system-x86 busybox-static cpio file gcc
#                     protobuf-c-compiler libprotobuf-c-dev zlib1g-dev squashfs-tools xz-utils
#                     zstd kmod), then exit
#   --no-lockdown     boot each kernel normally only
#   --modes LIST      comma-separated boot modes (default normal,confidentiality,integrity):
#                     normal; confidentiality (or lockdown): lockdown=confidentiality;
#                     integrity: lockdown=integrity (what Debian's kernels do under UEFI Secure
#                     Boot, and what this host runs)
#   --tests LIST      comma-separated test files: FOLDER/NAME is tests/FOLDER/NAME.t, a path ending
#                     in .t is taken from the top of the tree, e.g. tests/python/10-frames.t
#                     (default pinning/50-pinned,doctor/55-degraded,profilers/60-locks;
#                     none: smoke steps only)
#   --test-modes LIST the boot modes that also run the test files (default normal)
#   --rebuild-root    rebuild the cached host root image (after installing packages)
# Environment:
#   APERTURE          the static binary under test (default: aperture at the top of the tree)
#   KERNELS_DIR       cache and output directory (default: build/kernels in the tree)
#   BOOT_TIMEOUT      seconds before a boot is killed (default 900)
#   QEMU_MEM QEMU_SMP guest memory (MiB, default 1024; 3072 at least with test files) and CPUs (default 2)
#   VERBOSE=1         record/run with -vv in the guest (libbpf and verifier logs on failure)
#   KERNEL_PKG        the Debian kernel package to fetch when no image is given
#   TEST_SCALE        APERTURE_TEST_SCALE in the guest (default 10)
#   TESTS_TIMEOUT     seconds before a boot that runs test files is killed (default 7200)
#   QEMU_ACCEL        the -accel argument (default tcg,thread=single: every vCPU in one host thread;
#                     tcg: a host thread per vCPU, faster, but see below)
#   KERNEL_ARGS       more kernel command line, e.g. "loglevel=7 softlockup_all_cpu_backtrace=1"
#                     (a later loglevel= wins over the default quiet loglevel=4)
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# paths given relative to where we were started; the defaults are in the tree
APERTURE=$(realpath -m "${APERTURE:-$TOP/aperture}")
KDIR=$(realpath -m "${KERNELS_DIR:-$TOP/build/kernels}")
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
QEMU_MEM=${QEMU_MEM:-1024}
QEMU_SMP=${QEMU_SMP:-2}
# One host thread for every vCPU: under multi-threaded TCG the 6.1 guest locked up at
# `record --syscalls` in 3 of 11 boots (2026-12-03): both vCPUs looping on an int3 at
# syscall_trace_enter+0xe9, the static branch the sys_enter tracepoint's attach had just patched
# (the console shows the patched jmp in memory, asm_exc_int3 in the NMI backtraces): a stale
# translation of cross-modified code, as far as we can tell.  10 of 10 boots passed with one
# thread, each ~25% slower.
QEMU_ACCEL=${QEMU_ACCEL:-tcg,thread=single}
VERBOSE=${VERBOSE:-0}
MODES=normal,confidentiality,integrity
TESTS=pinning/50-pinned,doctor/55-degraded,profilers/60-locks
TEST_MODES=normal
TEST_SCALE=${TEST_SCALE:-10}
TESTS_TIMEOUT=${TESTS_TIMEOUT:-7200}
REBUILD_ROOT=0
PKGS="qemu-system-x86 busybox-static cpio file gcc protobuf-c-compiler libprotobuf-c-dev zlib1g-dev squashfs-tools xz-utils zstd kmod"

say() { printf 'test-kernels: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

install_deps() {
	local missing=() p
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing ${missing[*]}"
	[ "$(id -u)" = 0 ] || die "not root: apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends "${missing[@]}" >/dev/null; } || die "apt-get install failed"
}

images=()
pkgs=()
while [ $# -gt 0 ]; do
	case $1 in
	--deps) install_deps; exit 0 ;;
	--no-lockdown) MODES=normal ;;
	--modes) MODES=$2; shift ;;
	--modes=*) MODES=${1#--modes=} ;;
	--tests) TESTS=$2; shift ;;
	--tests=*) TESTS=${1#--tests=} ;;
	--test-modes) TEST_MODES=$2; shift ;;
	--test-modes=*) TEST_MODES=${1#--test-modes=} ;;
	--rebuild-root) REBUILD_ROOT=1 ;;
	-h|--help) sed -n '3,55p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1 (--help)" ;;
	linux-image-*) [ -f "$1" ] && images+=("$(realpath "$1")") || pkgs+=("$1") ;;
	*) [ -f "$1" ] || die "$1: no such kernel image"; images+=("$(realpath "$1")") ;;
	esac
	shift
done

cd "$TOP"
install_deps
mkdir -p "$KDIR/bin" "$KDIR/logs"
[ -x "$APERTURE" ] || die "$APERTURE is not built (make aperture), or set APERTURE"
file -L "$APERTURE" | grep -q 'static\(ally\|-pie\) linked' || die "$APERTURE is not a static binary"

# --- the default kernel: Debian's newest 6.1 cloud kernel -----------------------------------
# fetch_kernel [PKG]: the vmlinuz of Debian package PKG (a metapackage such as
# linux-image-6.12-cloud-amd64 is followed to its image), default the newest 6.1 cloud kernel
# Debian 11's kernels (5.10) come from its bullseye suite on the same Debian mirror, through a
# private apt configuration under $KDIR/apt-bullseye: the machine's own sources stay as they are.
APT_OPTS=()
use_bullseye() {
	local d="$KDIR/apt-bullseye" mirror
	mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	[ -n "$mirror" ] || die "no Debian mirror in the apt sources to take bullseye from"
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	echo "deb [trusted=yes] ${mirror%/} bullseye main" >"$d/sources.list"
	touch "$d/status"
	APT_OPTS=(-o Dir::Etc::sourcelist="$d/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$d/lists"
		-o Dir::Cache="$d/cache" -o Dir::State::status="$d/status")
	if [ -z "$(ls "$d/lists" 2>/dev/null | grep -v partial)" ]; then
		apt-get "${APT_OPTS[@]}" update >/dev/null 2>&1 || die "apt-get update of bullseye failed"
	fi
}
apt_update() { apt-get "${APT_OPTS[@]}" update >/dev/null 2>&1 || true; }

# fetch_kernel [PKG]: the vmlinuz of Debian package PKG (a metapackage such as
# linux-image-6.12-cloud-amd64 is followed to its image), default the newest 6.1 cloud kernel;
# linux-image-5.10* (e.g. linux-image-5.10-cloud-amd64, the newest) from bullseye
fetch_kernel() {
	local pkg=${1:-${KERNEL_PKG:-}} deb x dep
	APT_OPTS=()
	case $pkg in linux-image-5.10*) use_bullseye ;; esac
	if [ "$pkg" = linux-image-5.10-cloud-amd64 ]; then	# bullseye's metapackage name, as in bookworm
		pkg=$(apt-cache "${APT_OPTS[@]}" search --names-only '^linux-image-5\.10\.0-[0-9]+-cloud-amd64$' | awk '{ print $1 }' | sort -V | tail -1)
		[ -n "$pkg" ] || die "no linux-image-5.10.0-*-cloud-amd64 in bullseye"
	fi
	if [ -n "$pkg" ] && ! apt-cache "${APT_OPTS[@]}" show "$pkg" >/dev/null 2>&1; then
		apt_update
		apt-cache "${APT_OPTS[@]}" show "$pkg" >/dev/null 2>&1 || die "$pkg: no such package in the apt sources"
	fi
	# grep reads it all: grep -q's early exit made apt-cache's SIGPIPE fail the pipe (pipefail)
	while [ -n "$pkg" ] && apt-cache "${APT_OPTS[@]}" show "$pkg" | grep '^Description:.*meta-package' >/dev/null; do
		dep=$(apt-cache "${APT_OPTS[@]}" depends --important "$pkg" | sed -n 's/^ *Depends: \(linux-image-[^ ]*\).*/\1/p' | head -1)
		[ -n "$dep" ] || die "$pkg: a metapackage without a linux-image dependency"
		pkg=$dep
	done
	if [ -z "$pkg" ]; then
		pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' | awk '{ print $1 }' | sort -V | tail -1)
		if [ -z "$pkg" ]; then
			apt-get update >/dev/null
			pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' | awk '{ print $1 }' | sort -V | tail -1)
		fi
		[ -n "$pkg" ] || die "no linux-image-6.1.0-*-cloud-amd64 in the apt sources"
	fi
	x="$KDIR/$pkg"
	if ! ls "$x"/boot/vmlinuz-* >/dev/null 2>&1; then
		deb=$(ls "$KDIR/${pkg}"_*.deb 2>/dev/null | tail -1 || true)
		if [ -z "$deb" ]; then
			say "downloading $pkg"
			(cd "$KDIR" && apt-get "${APT_OPTS[@]}" download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
			deb=$(ls "$KDIR/${pkg}"_*.deb 2>/dev/null | tail -1 || true)
			[ -n "$deb" ] || die "apt-get download $pkg failed"
		fi
		rm -rf "$x" && dpkg-deb -x "$deb" "$x"
	fi
	ls "$x"/boot/vmlinuz-* | head -1
}
for p in "${pkgs[@]}"; do images+=("$(realpath "$(fetch_kernel "$p")")"); done
[ ${#images[@]} -gt 0 ] || images=("$(realpath "$(fetch_kernel)")" "$(realpath "$(fetch_kernel linux-image-5.10-cloud-amd64)")")

# --- static guest programs ------------------------------------------------------------------
WCFLAGS="-static -O2 -g -fno-omit-frame-pointer -fno-inline -pthread"
for w in cpuburn sleeper pipeblock; do
	if [ ! -x "$KDIR/bin/$w" ] || [ "tests/workloads/$w.c" -nt "$KDIR/bin/$w" ]; then
		gcc $WCFLAGS -o "$KDIR/bin/$w" "tests/workloads/$w.c" -lm
	fi
done
# Without frame pointers: only the DWARF walk finds main -> chain_a -> chain_b -> chain_c.
if [ ! -x "$KDIR/bin/nofp" ] || [ tests/workloads/unwind/nofp.c -nt "$KDIR/bin/nofp" ]; then
	gcc -static -O2 -g -fomit-frame-pointer -fasynchronous-unwind-tables -o "$KDIR/bin/nofp" \
		tests/workloads/unwind/nofp.c tests/workloads/unwind/libnofp.c
fi
if [ ! -x "$KDIR/bin/pprof_decode" ] || [ tests/tools/pprof_decode.c -nt "$KDIR/bin/pprof_decode" ] ||
   [ proto/pprof/profile.proto -nt "$KDIR/bin/pprof_decode" ]; then
	mkdir -p "$KDIR/pprof-c"
	cp proto/pprof/profile.proto "$KDIR/pprof-c/profile.proto"
	protoc-c --c_out="$KDIR/pprof-c" -I"$KDIR/pprof-c" "$KDIR/pprof-c/profile.proto"
	gcc -static -O2 -Wall -I"$KDIR/pprof-c" -o "$KDIR/bin/pprof_decode" tests/tools/pprof_decode.c \
		"$KDIR/pprof-c/profile.pb-c.c" -lprotobuf-c -lz
fi

# --- the test files' root: this machine's, read-only --------------------------------------
RUN_TESTS=0
[ -n "$TESTS" ] && [ "$TESTS" != none ] && RUN_TESTS=1
HOSTROOT="$KDIR/hostroot.sqfs"
TREE_IMG="$KDIR/tree.sqfs"
if [ $RUN_TESTS = 1 ]; then
	# every file as a path from the top of the tree (the guest's /aperture)
	paths=
	for t in ${TESTS//,/ }; do
		case $t in *.t) ;; *) t=tests/$t.t ;; esac
		case $t in /*|*..*|*[!A-Za-z0-9._/-]*) die "$t: a test file is a path inside the tree" ;; esac
		[ -f "$t" ] || die "$t: no such test file"
		paths=${paths:+$paths,}$t
	done
	TESTS=$paths
	make -s -C tests >/dev/null || die "make -C tests failed"
	# What the test files need is bash, perl (prove), /usr/bin/python3, go (pprof), bpftool and
	# coreutils: the root less the big trees nothing runs from.  Built once (a few minutes).
	if [ $REBUILD_ROOT = 1 ] || [ ! -s "$HOSTROOT" ]; then
		say "building $HOSTROOT from / (once; --rebuild-root after installing packages)"
		rm -f "$HOSTROOT"
		nice -n 19 mksquashfs / "$HOSTROOT" -comp lz4 -no-progress -quiet -wildcards -no-xattrs \
			-e proc sys dev run tmp mnt media boot home root work farm old_root lost+found srv opt \
			'var/cache/*' 'var/lib/apt/lists/*' 'var/log/*' 'usr/local/*' usr/lib/google-cloud-sdk \
			usr/lib/jvm usr/lib/llvm-14 usr/lib/gcc usr/include usr/lib/postgresql 'usr/share/doc/*' \
			'usr/share/man/*' 'usr/share/locale/*' usr/src usr/lib/debug usr/lib32 >/dev/null ||
			{ rm -f "$HOSTROOT"; die "mksquashfs / failed"; }
	fi
	rm -f "$TREE_IMG"
	mksquashfs "$APERTURE" tests tools "$TREE_IMG" -comp lz4 -no-progress -quiet -no-xattrs \
		-e tests/build/pprof-c >/dev/null || die "mksquashfs of the tree failed"
fi

# guest_modules VMLINUZ OUTDIR: the kernel's modules for virtio disks, squashfs and overlay
# (with what they depend on, uncompressed: busybox insmod reads plain .ko) into OUTDIR, and
# OUTDIR/load: their names in load order.  Built-in ones (6.12's virtio_pci) are left out.
guest_modules() {
	local rel base want out=$2
	rel=$(basename "$1" | sed 's/^vmlinuz-//')
	base=$(dirname "$(dirname "$1")")/lib/modules/$rel
	[ -d "$base/kernel" ] || die "$base: no modules for $1 (a Debian package's image is needed for --tests)"
	# a package's modules come without modules.dep (the install makes it)
	[ -s "$base/modules.dep" ] || depmod -b "$(dirname "$(dirname "$(dirname "$base")")")" "$rel" ||
		die "depmod for $rel failed"
	rm -rf "$out" && mkdir -p "$out"
	: >"$out/load"
	# mod_load NAME: its dependencies first, then it
	mod_load() {
		local path deps d
		path=$(awk -F: -v n="$1" '{ f = $1; sub(/.*\//, "", f); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", f)
			gsub(/-/, "_", f); if (f == n) { print; exit } }' "$base/modules.dep")
		[ -n "$path" ] || return 0	# built in
		deps=${path#*:}
		path=${path%%:*}
		for d in $deps; do
			d=$(basename "$d" | sed 's/\.ko\(\.xz\|\.zst\|\.gz\)\{0,1\}$//; s/-/_/g')
			mod_load "$d"
		done
		grep -qx "$1" "$out/load" && return 0
		case $path in
		*.xz) xz -dc "$base/$path" >"$out/$1.ko" ;;
		*.zst) zstd -qdc "$base/$path" >"$out/$1.ko" ;;
		*.gz) gzip -dc "$base/$path" >"$out/$1.ko" ;;
		*) cp "$base/$path" "$out/$1.ko" ;;
		esac
		echo "$1" >>"$out/load"
	}
	for want in virtio_pci virtio_blk squashfs overlay; do mod_load "$want"; done
}

# --- the initramfs -------------------------------------------------------------------------
ROOT="$KDIR/initramfs"
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,proc,sys,dev,tmp,run,etc}
cp /bin/busybox "$ROOT/bin/busybox"
file -L "$ROOT/bin/busybox" | grep -q 'statically linked' || die "/bin/busybox is not static (install busybox-static)"
cp "$APERTURE" "$ROOT/bin/aperture"
cp "$KDIR"/bin/{cpuburn,sleeper,pipeblock,nofp,pprof_decode} "$ROOT/bin/"
cat >"$ROOT/init" <<'GUEST'
#!/bin/busybox sh
# aperture smoke test in the guest: TAP lines on the console, then power off.
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t securityfs none /sys/kernel/security 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null
ifconfig lo 127.0.0.1 up 2>/dev/null
hostname guest
echo "127.0.0.1 localhost guest" >/etc/hosts
exec </dev/null >/dev/console 2>&1

MODE=$(sed -n 's/.*aperture\.mode=\([a-z]*\).*/\1/p' /proc/cmdline)
V=; grep -q 'aperture\.verbose=1' /proc/cmdline && V=-vv
DIR=/sys/fs/bpf/ap
n=0
T0=$(cut -d' ' -f1 /proc/uptime)
diag() { echo "# $*"; }
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; shift; [ $# -gt 0 ] && diag "$@"; return 0; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# doctor_yes KEY: doctor --json says abilities.KEY is ok; doctor_why KEY: what it says is missing
doctor_yes() { grep -q "\"$1\": *{\"ok\": *true" /tmp/doctor.json 2>/dev/null; }
doctor_why() { grep -o "\"$1\": *{\"ok\": *false[^}]*}" /tmp/doctor.json 2>/dev/null | sed 's/.*"ok": *false, *//; s/["}]//g'; }
# showerr FILE [N]: its lines but libbpf's object walk (-vv), the last N (default 40): a verifier's
# refusal is at the end
showerr() {
	[ -s "$1" ] && grep -v "^libbpf: \(elf: \|sec '\|CO-RE relocating\|prog '[^']*': relo #\|map '[^']*': \(at sec\|found\|created\|setting\)\)" "$1" |
		tail -${2:-40} | sed 's/^/#   /'
	return 0
}
# step NAME CMD...: CMD's exit status decides; its stderr is shown on failure
step() {
	local name=$1 rc=0
	shift
	"$@" >/tmp/step.out 2>/tmp/step.err || rc=$?
	if [ $rc = 0 ]; then pass "$name"; else fail "$name" "exit $rc: $*"; showerr /tmp/step.err; fi
	return $rc
}
within() { awk -v w="$1" -v g="$2" -v t="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g != "" && d <= t) }'; }
# leaf_shares DECODED: "burn_50 burn_30 burn_20" shares (%) among the burn leaves, samples weight
leaf_shares() {
	awk '$1 == "stack" { split($5, v, ","); k = split($6, fr, ";"); leaf = fr[k]
		if (leaf ~ /^burn_(50|30|20)$/) { w[leaf] += v[1]; b += v[1] } t += v[1] }
		END { if (b == 0) b = 1; if (t == 0) t = 1
			printf "%.1f %.1f %.1f %.1f\n", 100 * w["burn_50"] / b, 100 * w["burn_30"] / b,
				100 * w["burn_20"] / b, 100 * b / t }' "$1"
}
wait_pins() {
	local i=0
	while [ $i -lt 1200 ]; do
		[ -e $DIR/oncpu_active ] && return 0
		kill -0 $DAEMON 2>/dev/null || return 1
		sleep 0.1; i=$((i + 1))
	done
	return 1
}

echo "APERTURE-SMOKE-BEGIN"
diag "kernel: $(uname -r)"
diag "mode: $MODE"
diag "cmdline: $(cat /proc/cmdline)"
diag "lockdown: $(cat /sys/kernel/security/lockdown 2>/dev/null || echo 'no securityfs/lockdown file')"
diag "lsm: $(cat /sys/kernel/security/lsm 2>/dev/null)"
diag "bpffs mounted before aperture: $(grep -c ' /sys/fs/bpf ' /proc/mounts)"
diag "cpus: $(grep -c ^processor /proc/cpuinfo), mem: $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"

step "aperture --version" aperture --version && diag "$(cat /tmp/step.out)"
if [ -s /sys/kernel/btf/vmlinux ]; then
	pass "kernel BTF at /sys/kernel/btf/vmlinux"
	diag "BTF: $(stat -c %s /sys/kernel/btf/vmlinux) bytes"
else
	fail "kernel BTF at /sys/kernel/btf/vmlinux"
fi
step "aperture doctor" aperture doctor
sed 's/^/#   doctor: /' /tmp/step.out | head -60
ITER="doctor --json did not say"
if step "aperture doctor --json" aperture doctor --json; then
	head -c 1 /tmp/step.out | grep -q '{' || diag "doctor --json output does not start with {"
	cp /tmp/step.out /tmp/doctor.json
	# whether pinned map iterators (DIR/NAME_folded) should work on this kernel
	grep -q '"pinned_iterators": *{"ok": *true' /tmp/step.out && ITER=yes
	grep -q '"pinned_iterators": *{"ok": *false' /tmp/step.out && ITER="doctor: $(grep -o '"pinned_iterators": *{[^}]*}' /tmp/step.out)"
fi

# On-CPU: cpuburn's leaf shares are 50/30/20 % (tests/profilers/10-oncpu.t).
cpuburn 600 >/dev/null &
BURN=$!
sleep 0.5
if step "record on-CPU -d 3 -p cpuburn" aperture record $V -d 3 -p $BURN -o /tmp/on.pb.gz -o /tmp/on.folded; then
	grep '^aperture: ' /tmp/step.err | sed 's/^/#   /'
	if pprof_decode /tmp/on.pb.gz >/tmp/on.dec 2>/tmp/on.dec.err && [ "$(awk '$1 == "samples" { print $2 }' /tmp/on.dec)" -gt 0 ]; then
		pass "on-CPU pprof decodes, has samples"
		diag "$(grep -E '^(samples|type|period) ' /tmp/on.dec | tr '\n' ' ')"
		set -- $(leaf_shares /tmp/on.dec)
		diag "shares among burn leaves: burn_50 $1% burn_30 $2% burn_20 $3%; burn leaves are $4% of samples"
		within 50 "$1" 15 && pass "on-CPU burn_50 share ~50% (+-15)" || fail "on-CPU burn_50 share ~50% (+-15)" "got $1"
		within 30 "$2" 15 && pass "on-CPU burn_30 share ~30% (+-15)" || fail "on-CPU burn_30 share ~30% (+-15)" "got $2"
		within 20 "$3" 15 && pass "on-CPU burn_20 share ~20% (+-15)" || fail "on-CPU burn_20 share ~20% (+-15)" "got $3"
	else
		fail "on-CPU pprof decodes, has samples"; showerr /tmp/on.dec.err
		for s in 50 30 20; do skip "on-CPU burn_$s share" "no profile"; done
	fi
	kf=$(grep -o '[^;]*_\[k\]' /tmp/on.folded | sort | uniq -c | sort -rn)
	diag "kernel frames in on.folded: $(echo "$kf" | awk '{ n += $1 } END { print n + 0 }'), hex/unknown: $(echo "$kf" | awk '$2 ~ /^(0x|\[unknown)/ { n += $1 } END { print n + 0 }'), e.g. $(echo "$kf" | head -3 | awk '{ printf "%s ", $2 }')"
	if grep -q ';burn_50 [0-9]*$' /tmp/on.folded; then pass "on-CPU folded has burn_50 leaves"
	else fail "on-CPU folded has burn_50 leaves"; head -5 /tmp/on.folded | sed 's/^/#   /'; fi
else
	skip "on-CPU pprof decodes, has samples" "record failed"
	for s in 50 30 20; do skip "on-CPU burn_$s share" "record failed"; done
	skip "on-CPU folded has burn_50 leaves" "record failed"
fi

# Off-CPU: sleeper's four threads sleep in sleep_50ms.
sleeper 600 >/dev/null &
SLEEPER=$!
sleep 0.5
if step "record off-CPU -d 3 -p sleeper" aperture record $V --offcpu -d 3 -p $SLEEPER -o /tmp/off.pb.gz -o /tmp/off.folded; then
	grep '^aperture: ' /tmp/step.err | sed 's/^/#   /'
	if pprof_decode /tmp/off.pb.gz >/tmp/off.dec 2>/tmp/off.dec.err; then
		tot=$(awk '$1 == "type" && $2 == "offcpu" { print $5 }' /tmp/off.dec)
		sl=$(awk '$1 == "stack" && $6 ~ /(^|;)sleep_50ms(;|$)/ { split($5, v, ","); t += v[2] } END { printf "%.0f\n", t }' /tmp/off.dec)
		diag "off-CPU total ${tot:-?} ns (4 threads x 3 s = 12e9 at most), through sleep_50ms: $sl ns"
		[ "${tot:-0}" != 0 ] && pass "off-CPU total is nonzero" || fail "off-CPU total is nonzero" "got '${tot:-}'"
		[ "$sl" != 0 ] && pass "off-CPU stacks through sleep_50ms" || fail "off-CPU stacks through sleep_50ms"
	else
		fail "off-CPU total is nonzero" "pprof_decode failed"; showerr /tmp/off.dec.err
		skip "off-CPU stacks through sleep_50ms" "no profile"
	fi
else
	skip "off-CPU total is nonzero" "record failed"
	skip "off-CPU stacks through sleep_50ms" "record failed"
fi
kill $SLEEPER 2>/dev/null

# The lock and syscall profilers load and count (their programs differ from the others': tp_btf
# on lock and syscall tracepoints, sched_switch with the sleeper's saved registers).
# Each only where doctor says yes: a yes that fails is a failure, a no is a skip with its reason.
for kind in locks syscalls; do
	if doctor_yes $kind; then
		step "record --$kind -d 2 (whole machine)" aperture record $V --$kind -d 2 --top 0 -o /tmp/$kind.folded &&
			grep "^aperture: $kind" /tmp/step.err | sed 's/^/#   /'
	else
		skip "record --$kind -d 2 (whole machine)" "doctor: $(doctor_why $kind)"
	fi
done

# DWARF unwinding (--unwind dwarf where doctor says dwarf_unwind): whole stacks without frame pointers.
if grep -q '"dwarf_unwind": *{"ok": *true' /tmp/doctor.json 2>/dev/null; then
	# Running already, so that its table (slow to build under TCG) is there for most samples.
	nofp chain 8 >/dev/null &
	NOFP=$!
	sleep 1
	if step "record --unwind dwarf -p nofp" aperture record $V --unwind dwarf -F 499 -d 4 \
		-o /tmp/nofp.folded -p $NOFP; then
		whole=$(awk '{ w = $NF; t += w; if ($0 ~ /;main;chain_a;chain_b;chain_c;spin_until/) h += w }
			END { if (t) printf "%.0f\n", 100 * h / t; else print 0 }' /tmp/nofp.folded)
		diag "samples with main;chain_a;chain_b;chain_c;spin_until: $whole%"
		[ "${whole:-0}" -ge 80 ] && pass "DWARF: >= 80% of nofp's samples are whole" ||
			fail "DWARF: >= 80% of nofp's samples are whole" "got $whole%"
	else
		skip "DWARF: >= 80% of nofp's samples are whole" "record failed"
	fi
	kill $NOFP 2>/dev/null
else
	skip "record --unwind dwarf -p nofp" "doctor: no dwarf_unwind"
	skip "DWARF: >= 80% of nofp's samples are whole" "doctor: no dwarf_unwind"
fi

# The pinned daemon: pins, kill -9, restart takes over, dump, iterator, unpin.
# Only where doctor says it can pin (a kernel without perf event links cannot pin the on-CPU kind).
if doctor_yes pinning; then
	aperture run $V --pin $DIR 2>/tmp/run1.err &
	DAEMON=$!
	if wait_pins; then
		pass "run --pin pins its maps"
		diag "pins: $(ls $DIR | tr '\n' ' ')"
		sleep 2
		kill -9 $DAEMON; wait $DAEMON 2>/dev/null
		aperture run $V --pin $DIR 2>/tmp/run2.err &
		DAEMON=$!
		grep -v '^libbpf: ' /tmp/run1.err | sed 's/^/#   first start: /' | head -10
		if wait_pins && sleep 1 && grep -q 'took over' /tmp/run2.err; then
			pass "run --pin after kill -9 takes over"
			grep 'took over' /tmp/run2.err | sed 's/^/#   /'
		else
			fail "run --pin after kill -9 takes over"; showerr /tmp/run2.err
		fi
		step "aperture dump --pin DIR oncpu" aperture dump --pin $DIR oncpu && {
			diag "dump: $(wc -l </tmp/step.out) lines"; grep -q cpuburn /tmp/step.out ||
				diag "dump has no cpuburn line"; }
		if [ -e $DIR/oncpu_folded ]; then
			if cat $DIR/oncpu_folded >/tmp/iter.folded 2>/tmp/iter.err && grep -q '^cpuburn;' /tmp/iter.folded; then
				pass "cat DIR/oncpu_folded has cpuburn stacks"
				diag "iterator: e.g. $(grep '^cpuburn;.*_\[k\]' /tmp/iter.folded | head -1 | cut -c1-160)"
				diag "iterator: $(wc -l </tmp/iter.folded) lines, cpuburn samples $(awk -F';' '$1 == "cpuburn" { n = split($NF, a, " "); t += a[n] } END { print t + 0 }' /tmp/iter.folded)"
			else
				fail "cat DIR/oncpu_folded has cpuburn stacks"; showerr /tmp/iter.err; head -3 /tmp/iter.folded | sed 's/^/#   /'
			fi
		elif [ "$ITER" = yes ]; then
			fail "cat DIR/oncpu_folded has cpuburn stacks" "doctor says pinned iterators work here, but oncpu_folded was not pinned"
			grep -iE 'warn|iter' /tmp/run1.err /tmp/run2.err | grep -v 'libbpf: \(map\|sec\|elf\)' | head -20 | sed 's/^/#   /'
		else
			skip "cat DIR/oncpu_folded has cpuburn stacks" "oncpu_folded not pinned ($ITER)"
		fi
		kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null
	else
		fail "run --pin pins its maps"; showerr /tmp/run1.err ${V:+100000}
		kill -9 $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null
		skip "run --pin after kill -9 takes over" "no pins"
		skip "aperture dump --pin DIR oncpu" "no pins"
		skip "cat DIR/oncpu_folded has cpuburn stacks" "no pins"
	fi
else
	for s in "run --pin pins its maps" "run --pin after kill -9 takes over" "aperture dump --pin DIR oncpu" \
		"cat DIR/oncpu_folded has cpuburn stacks"; do skip "$s" "doctor: $(doctor_why pinning)"; done
fi
if step "run --unpin --pin DIR" aperture run --unpin --pin $DIR; then
	[ ! -e $DIR ] && pass "unpin removed DIR" || fail "unpin removed DIR" "$(ls $DIR | tr '\n' ' ')"
else
	skip "unpin removed DIR" "--unpin failed"
fi
kill $BURN 2>/dev/null

echo "1..$n"
diag "guest time: $(awk -v a="$T0" '{ printf "%.0f s since /init, %.0f s since boot\n", $1 - a, $1 }' /proc/uptime)"
# what the kernel said while the steps ran (the boot's own lockdown lines are swapper's)
if dmesg | grep -E '[Bb][Pp][Ff]|[Ll]ockdown|BUG:|WARNING:' | grep -qv 'swapper\|Tracing disabled\|due to lockdown\|command line'; then
	diag "dmesg (lines of bpf, lockdown, BUG or WARNING):"
	dmesg | grep -E '[Bb][Pp][Ff]|[Ll]ockdown|BUG:|WARNING:' | grep -v 'swapper\|Tracing disabled\|due to lockdown\|command line' |
		sort -k3 | uniq -c -f2 | sort -k2 -n | head -20 | sed 's/^/#   /'
fi
echo "APERTURE-SMOKE-END"

# The test files, with this machine's root (disk 1, squashfs) under a tmpfs overlay and the tree
# (disk 2) at /aperture: TAP of `prove -v` between markers, one pair a file.
TESTS=$(sed -n 's/.*aperture\.tests=\([A-Za-z0-9,._/-]*\).*/\1/p' /proc/cmdline)
SCALE=$(sed -n 's/.*aperture\.scale=\([0-9.]*\).*/\1/p' /proc/cmdline)
FILE_TIMEOUT=$(sed -n 's/.*aperture\.file_timeout=\([0-9]*\).*/\1/p' /proc/cmdline)
R=/newroot
root_up() {
	local m
	for m in $(cat /modules/load 2>/dev/null); do
		insmod /modules/$m.ko || { echo "# insmod $m failed"; return 1; }
	done
	mkdir -p /lower /rw $R
	mount -t squashfs -o ro /dev/vda /lower || return 1
	mount -t tmpfs -o size=70% rw /rw && mkdir -p /rw/upper /rw/work || return 1
	mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work $R || return 1
	mkdir -p $R/aperture $R/proc $R/sys $R/dev $R/tmp $R/run $R/root
	mount -t squashfs -o ro /dev/vdb $R/aperture || return 1
	mount -t proc proc $R/proc && mount -t sysfs sysfs $R/sys && mount -t devtmpfs dev $R/dev || return 1
	mkdir -p $R/dev/shm $R/dev/pts
	# what udev would make: bash's <(...) needs /dev/fd
	ln -sf /proc/self/fd $R/dev/fd && ln -sf /proc/self/fd/0 $R/dev/stdin &&
		ln -sf /proc/self/fd/1 $R/dev/stdout && ln -sf /proc/self/fd/2 $R/dev/stderr
	mount -t tmpfs tmp $R/tmp && mount -t tmpfs run $R/run && mount -t tmpfs shm $R/dev/shm || return 1
	mount -t devpts devpts $R/dev/pts 2>/dev/null
	mount -t bpf bpf $R/sys/fs/bpf || return 1
	mount -t securityfs none $R/sys/kernel/security 2>/dev/null
	mount -t debugfs none $R/sys/kernel/debug 2>/dev/null
	mount -t tmpfs cgroup $R/sys/fs/cgroup 2>/dev/null && mkdir -p $R/sys/fs/cgroup/unified &&
		mount -t cgroup2 none $R/sys/fs/cgroup/unified 2>/dev/null
	chmod 1777 $R/tmp
	return 0
}
if [ -n "$TESTS" ]; then
	echo "APERTURE-TESTS-BEGIN"
	if root_up; then
		diag "test files: $TESTS, APERTURE_TEST_SCALE=$SCALE, $FILE_TIMEOUT s each at most"
		for t in $(echo "$TESTS" | tr ',' ' '); do
			echo "APERTURE-TEST-FILE-BEGIN $t"
			t1=$(cut -d' ' -f1 /proc/uptime)
			rc=0
			timeout -s KILL "$FILE_TIMEOUT" chroot $R /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
				PATH=/usr/sbin:/usr/bin:/sbin:/bin APERTURE_TEST_SCALE="$SCALE" \
				/bin/bash -c "cd /aperture && exec prove -v --nocolor --exec bash $t" </dev/null 2>&1 || rc=$?
			echo "APERTURE-TEST-FILE-END $t rc=$rc secs=$(awk -v a="$t1" '{ printf "%.0f", $1 - a }' /proc/uptime)"
			# a tick too slow under emulation makes the kernel lower the sampling rate it allows
			diag "after $t: kernel.perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate)"
			dmesg | grep 'perf: interrupt took too long' | tail -1 | sed 's/^/#   /'
			# whatever a killed file left behind must not change the next one
			for p in $(ls $R/sys/fs/bpf 2>/dev/null); do
				[ -d "$R/sys/fs/bpf/$p" ] && diag "left pinned: /sys/fs/bpf/$p" && rm -rf "$R/sys/fs/bpf/$p"
			done
		done
	else
		echo "# the test root could not be set up"
		dmesg | tail -20 | sed 's/^/#   /'
	fi
	echo "APERTURE-TESTS-END"
fi
sync
poweroff -f
sleep 10
reboot -f
GUEST
chmod +x "$ROOT/init"
INITRD="$KDIR/initramfs.cpio.gz"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet -R 0:0) | gzip -1 >"$INITRD"
say "initramfs: $(stat -c %s "$INITRD") bytes ($APERTURE: $(stat -c %s "$APERTURE") bytes)"

# kernel_initrd VMLINUZ: the initramfs with VMLINUZ's modules appended (for the test files; the
# kernel unpacks concatenated cpio archives in turn)
kernel_initrd() {
	local tag out
	tag=$(basename "$1" | sed 's/^vmlinuz-//')
	out="$KDIR/initramfs-$tag.cpio.gz"
	guest_modules "$1" "$KDIR/modules-$tag/modules"
	{ cat "$INITRD"; (cd "$KDIR/modules-$tag" && find . -print0 | cpio --null -o -H newc --quiet -R 0:0 | gzip -1); } >"$out"
	say "$tag: modules $(tr '\n' ' ' <"$KDIR/modules-$tag/modules/load")"
}

# --- boot -----------------------------------------------------------------------------------
boot() {	# boot VMLINUZ MODE LOG [TESTS]
	local extra="aperture.mode=$2" initrd=$INITRD secs=$BOOT_TIMEOUT mem=$QEMU_MEM disks=()
	[ "$2" = normal ] || extra="$extra lockdown=$2"
	[ "$VERBOSE" = 1 ] && extra="$extra aperture.verbose=1"
	extra="$extra ${KERNEL_ARGS:-}"
	if [ -n "${4:-}" ]; then
		initrd=$KDIR/initramfs-$(basename "$1" | sed 's/^vmlinuz-//').cpio.gz
		extra="$extra aperture.tests=$4 aperture.scale=$TEST_SCALE aperture.file_timeout=$((TESTS_TIMEOUT / 3))"
		secs=$TESTS_TIMEOUT
		[ "$mem" -ge 3072 ] || mem=3072	# the overlay's writes and the tests' /tmp are in RAM
		disks=(-drive "file=$HOSTROOT,format=raw,if=virtio,readonly=on"
		       -drive "file=$TREE_IMG,format=raw,if=virtio,readonly=on")
	fi
	timeout -k 10 "$secs" nice -n 19 qemu-system-x86_64 \
		-nographic -no-reboot -m "$mem" -smp "$QEMU_SMP" -accel "$QEMU_ACCEL" -cpu max \
		-nic none "${disks[@]}" \
		-kernel "$1" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet loglevel=4 $extra" </dev/null >"$3" 2>&1
}

RESULTS="$KDIR/results.md"
# smoke_tap LOG: the smoke steps' lines
smoke_tap() { sed -n '/APERTURE-SMOKE-BEGIN/,/^APERTURE-SMOKE-END/p' "$1" | sed 's/^.*APERTURE-SMOKE-BEGIN/APERTURE-SMOKE-BEGIN/'; }
# file_tap LOG FILE: the prove -v output of one test file
file_tap() {
	awk -v f="$2" '$0 == "APERTURE-TEST-FILE-BEGIN " f { on = 1 } on { print }
		on && index($0, "APERTURE-TEST-FILE-END " f " ") == 1 { exit }' "$1"
}
# file_counts LOG FILE: "FILE|ok|not ok|skipped|prove's result|seconds"
file_counts() {
	file_tap "$1" "$2" | awk -v f="$2" '
		/^ok [0-9]+/ { if ($0 ~ /# SKIP/) skip++; else ok++ }
		/^not ok [0-9]+/ { nok++ }
		/^Result: / { res = $2 }
		/^APERTURE-TEST-FILE-END/ { for (i = 1; i <= NF; i++) if ($i ~ /^secs=/) { secs = substr($i, 6) }
			for (i = 1; i <= NF; i++) if ($i ~ /^rc=/) rc = substr($i, 4) }
		END { if (res == "") res = (rc == "" ? "did not finish" : "no result (rc " rc ")")
			printf "%s|%d|%d|%d|%s|%s\n", f, ok, nok, skip, res, secs == "" ? "-" : secs }'
}
summary=()	# one "release|mode|secs|status|file" per boot
status=0
for img in "${images[@]}"; do
	for mode in ${MODES//,/ }; do
		case $mode in normal|confidentiality|integrity) ;; lockdown) mode=confidentiality ;; *) die "unknown mode $mode" ;; esac
		tag=$(basename "$img" | sed 's/^vmlinuz-//')
		log="$KDIR/logs/$tag.$mode.log"
		say "booting $tag ($mode), log $log"
		t0=$(date +%s)
		rc=0
		files=
		[ $RUN_TESTS = 1 ] && [[ ",$TEST_MODES," == *",$mode,"* ]] && files=$TESTS
		[ -z "$files" ] || kernel_initrd "$img"
		boot "$img" "$mode" "$log" "$files" || rc=$?
		secs=$(( $(date +%s) - t0 ))
		# no CRs, no terminal escapes (seabios and qemu print some)
		sed 's/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' "$log" >"$log.tmp" && mv "$log.tmp" "$log"
		rel=$(sed -n 's/^# kernel: //p' "$log" | head -1)
		st="done"
		grep -q '^APERTURE-SMOKE-END' "$log" || { st="incomplete (qemu exit $rc)"; status=1; }
		[ -z "$files" ] || grep -q '^APERTURE-TESTS-END' "$log" || { st="incomplete (qemu exit $rc)"; status=1; }
		grep -q '^not ok ' "$log" && status=1
		smoke_tap "$log" >"$log.smoke"
		summary+=("${rel:-$tag}|$mode|$secs|$st|$log")
		say "$tag ($mode): $st in $secs s: $(grep -c '^ok ' "$log.smoke" || true) ok, $(grep -c '^not ok ' "$log.smoke" || true) not ok"
		for t in ${files//,/ }; do
			say "  $t: $(file_counts "$log" "$t" | awk -F'|' '{ print $2 " ok, " $3 " not ok, " $4 " skipped, " $5 ", " $6 " s" }')"
		done
	done
done

# --- the table: one row per step, one column per boot ---------------------------------------
{
	echo "## aperture smoke test on other kernels ($(date -u +%Y-%m-%d), $("$APERTURE" --version 2>/dev/null | head -1))"
	echo
	printf '| step |'; for s in "${summary[@]}"; do IFS='|' read -r rel mode _ _ _ <<<"$s"
		[ "$mode" = normal ] || mode="lockdown=$mode"; printf ' %s %s |' "$rel" "$mode"; done; echo
	printf '|---|'; for s in "${summary[@]}"; do printf -- '---|'; done; echo
	# every step name seen in any log, in first-seen order
	steps=$(for s in "${summary[@]}"; do IFS='|' read -r _ _ _ _ log <<<"$s"
		sed -nE 's/^(not )?ok [0-9]+ - //p' "$log.smoke" | sed 's/ # SKIP.*//'; done | awk '!seen[$0]++')
	while IFS= read -r step; do
		[ -n "$step" ] || continue
		printf '| %s |' "$step"
		for s in "${summary[@]}"; do
			IFS='|' read -r _ _ _ _ log <<<"$s"
			line=$(grep -E "^(not )?ok [0-9]+ - " "$log.smoke" | awk -v s="$step" '{ l = $0; sub(/^(not )?ok [0-9]+ - /, "", l); t = l; sub(/ # SKIP.*/, "", t); if (t == s) { print $0; exit } }')
			case $line in
			"") printf ' - |' ;;
			"not ok"*) printf ' **FAIL** |' ;;
			*"# SKIP"*) printf ' skip |' ;;
			*) printf ' pass |' ;;
			esac
		done
		echo
	done <<<"$steps"
	printf '| boot (wall time) |'; for s in "${summary[@]}"; do IFS='|' read -r _ _ secs st _ <<<"$s"; printf ' %s, %s s |' "$st" "$secs"; done; echo
	echo
	if grep -q '^APERTURE-TEST-FILE-BEGIN' "${summary[@]##*|}" 2>/dev/null; then
		echo "### test files in the guest (prove -v --exec bash, APERTURE_TEST_SCALE=$TEST_SCALE)"
		echo
		echo '| kernel | boot | file | ok | not ok | skipped | prove | guest seconds |'
		echo '|---|---|---|---|---|---|---|---|'
		for s in "${summary[@]}"; do
			IFS='|' read -r rel mode _ _ log <<<"$s"
			[ "$mode" = normal ] || mode="lockdown=$mode"
			for t in $(sed -n 's/^APERTURE-TEST-FILE-BEGIN //p' "$log"); do
				file_counts "$log" "$t" | awk -F'|' -v r="$rel" -v m="$mode" \
					'{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r, m, $1, $2, $3, $4, $5, $6 }'
			done
		done
		echo
		for s in "${summary[@]}"; do
			IFS='|' read -r rel mode _ _ log <<<"$s"
			grep -q '^not ok ' <(sed -n '/^APERTURE-TESTS-BEGIN/,$p' "$log") || continue
			echo "Failed checks, $rel $mode:"
			echo
			echo '```'
			for t in $(sed -n 's/^APERTURE-TEST-FILE-BEGIN //p' "$log"); do
				file_tap "$log" "$t" | grep -A4 '^not ok ' | sed "s|^|$t: |" | head -60
			done
			echo '```'
			echo
		done
	fi
	for s in "${summary[@]}"; do
		IFS='|' read -r rel mode secs st log <<<"$s"
		[ "$mode" = normal ] || mode="lockdown=$mode"
		echo "### $rel, $mode boot"
		echo
		echo '```'
		sed -n '/APERTURE-SMOKE-BEGIN/,/^APERTURE-SMOKE-END/p' "$log" | grep -v 'APERTURE-SMOKE-\|^# cmdline' | head -150 || true
		grep -q 'APERTURE-SMOKE-BEGIN' "$log" || tail -40 "$log"
		echo '```'
		echo
	done
} >"$RESULTS"
cat "$RESULTS"
say "results in $RESULTS"
exit $status
