#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Root among hostile processes (issue 21): files an unprivileged user plants
# for aperture to open, each checked against a run without them.
#  1. /tmp/perf-PID.map of CPU-burning `nobody` processes as a FIFO, a
#     symlink to /dev/zero and a 2 GiB sparse file without a newline, and one
#     for aperture's own pid (planted before it starts, under a wrapper that
#     execs it): `record -d 3` of the whole machine ends in its usual time, its
#     RSS stays under 64 MB, an unrelated frame-pointer workload's functions
#     come out as without them, and the refusals are counted.
#  2. A perf map owned by another user than the process's is not read; the
#     process's own one is.
#  3. A process chrooted in another mount namespace (as in a container) whose
#     /tmp is an absolute symlink to a host directory: its perf map is read in
#     its own root, never the host's; a real map in its root is; both with
#     openat2 and with the walk used without it (APERTURE_DISABLE_FEATURES).
#  4. A library replaced at its path while mapped, opened without map_files
#     (no CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE): the file now at the path is
#     not cached for the mapped one, whose frames it would name wrongly.
#  5. --gpu of the whole machine: a deleted CUDA driver's maps name
#     ("PATH (deleted)") planted as another library, a memfd named
#     libcuda.so.1, and an anonymous mapping named "[anon:DIR/libcuda.so.1]"
#     (where the kernel can name one): no uprobe lands on the planted file
#     (its launches are not counted), and the refusal is said.  The same for
#     --lock-hold's libc search (a copy of libc planted as "libc.so.6 (deleted)").
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn hostile gpu/libcuda.so.1 libburn_main libburn.so
command -v setpriv >/dev/null && command -v unshare >/dev/null || skip_all "no setpriv or unshare (util-linux)"
[ -x /usr/bin/time ] || skip_all "no /usr/bin/time (package time)"

HF=/tmp/aperture-hostile.$$
HOSTDIR=/var/tmp/aperture-hostile.$$
mkdir -p "$HF" "$HOSTDIR"
chown nobody "$HF" "$HOSTDIR"
chmod 755 "$TMP"
at_exit "rm -rf '$HF' '$HOSTDIR'"
# CMD as an unprivileged user: "${NOBODY[@]}" CMD... (setpriv execs CMD: bg's BG_PID is CMD's pid)
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
PLANTED=()
# plant PID KIND: /tmp/perf-PID.map made by nobody as a fifo, a link to /dev/zero, or a 2 GiB sparse file
plant() {
	local f=/tmp/perf-$1.map
	rm -f "$f"
	case $2 in
	fifo) as_nobody mkfifo "$f" ;;
	zero) as_nobody ln -s /dev/zero "$f" ;;
	sparse) as_nobody truncate -s 2G "$f" ;;
	esac
	PLANTED+=("$f")
}
at_exit 'rm -f "${PLANTED[@]}"'

# timed_record NAME ARGS...: `aperture record ARGS` under a wrapper whose pid it
# takes over (exec), with /tmp/perf-<that pid>.map planted as a FIFO by nobody
# when PLANT_OWN=1.  60 s at most; rc, wall seconds, max RSS (KiB) and CPU
# seconds (user + system: what a loaded machine does not stretch) in
# $TMP/NAME.{rc,secs,rss,cpu}.
timed_record() {
	local name=$1 t0
	shift
	t0=$(date +%s.%N)
	PLANT_OWN=${PLANT_OWN:-0} /usr/bin/time -f '%M %U %S' -o "$TMP/$name.time" timeout -s KILL 60 bash -c '
		# 4 GiB: a reader without bounds fails here, not the machine (ASan reserves more: none then)
		[ -n "${APERTURE_SANITIZED:-}" ] || ulimit -v 4194304
		if [ "$PLANT_OWN" = 1 ]; then
			rm -f /tmp/perf-$$.map
			setpriv --reuid=nobody --regid=nogroup --clear-groups mkfifo /tmp/perf-$$.map
			echo /tmp/perf-$$.map >"$0.own"
		fi
		exec "$@"' "$TMP/$name" "$APERTURE" record "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	echo $? >"$TMP/$name.rc"
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f\n", b - a }' >"$TMP/$name.secs"
	tail -1 "$TMP/$name.time" | awk '{ print $1 }' >"$TMP/$name.rss"
	tail -1 "$TMP/$name.time" | awk '{ printf "%.2f\n", $2 + $3 }' >"$TMP/$name.cpu"
	[ -s "$TMP/$name.own" ] && PLANTED+=("$(cat "$TMP/$name.own")")
	return 0
}
# share FOLDED FUNC: percent of fpburn's weight whose leaf is FUNC
share() { grep '^fpburn;' "$1" >"$1.fp"; leaf_share "$1.fp" "$2"; }

# The unrelated workload: a frame-pointer program as root, 50/30/20 % in burn_50/30/20.
cp "$WL/cpuburn" "$TMP/fpburn"
bg "$TMP/fpburn" 60 >/dev/null

# Baseline: the whole machine with a nobody burner as in each run below, nothing planted.
bg "${NOBODY[@]}" "$WL/cpuburn" 60 >/dev/null
base_burner=$BG_PID
timed_record base -F 499 -d 3 -o "$TMP/base.folded" --top 0
is "baseline run exits 0" "$(cat "$TMP/base.rc")" 0
base_secs=$(cat "$TMP/base.secs")
base_rss=$(tail -1 "$TMP/base.rss")
base_cpu=$(cat "$TMP/base.cpu")
diag "baseline: $base_secs s, $base_cpu s of CPU, max RSS $base_rss KiB"
# 64 MB, or 16 MB over the baseline where the whole machine's processes alone take aperture past 48 MB
rss_max=$(( base_rss + 16384 > 65536 ? base_rss + 16384 : 65536 ))
kill "$base_burner"

# 1. A CPU-burning nobody process per planted map, each in a run of its own, and aperture's own pid's.
for kind in fifo zero sparse own; do
	PLANT_OWN=0
	if [ "$kind" = own ]; then
		PLANT_OWN=1
	else
		bg "${NOBODY[@]}" "$WL/cpuburn" 60 >/dev/null
		burner=$BG_PID
		sleep 0.1
		plant "$BG_PID" "$kind"
		ls -l "/tmp/perf-$BG_PID.map" | sed 's/^/# /'
	fi
	PLANT_OWN=$PLANT_OWN timed_record "$kind" -F 499 -d 3 -o "$TMP/$kind.folded" --top 0
	rc=$(cat "$TMP/$kind.rc")
	is "$kind: the run exits 0 (137: killed after 60 s)" "$rc" 0
	[ "$rc" = 0 ] || show_err "$kind"
	secs=$(cat "$TMP/$kind.secs") cpu=$(cat "$TMP/$kind.cpu")
	diag "$kind: $secs s, $cpu s of CPU"
	# a reader that spins on the FIFO or /dev/zero costs CPU time; one that reads the 2 GiB sparse
	# file through need not much (1 MiB reads took 0.2 s here, cat 5.2 s): the refused count below
	# and the RSS bound catch that one
	unless_sanitized "slower" ok "  $kind: it costs its usual CPU time: $cpu s <= baseline $base_cpu s + 1 s" \
		awk -v s="${cpu:-999}" -v b="${base_cpu:-0}" 'BEGIN { exit !(s <= b + 1) }'
	rss=$(tail -1 "$TMP/$kind.rss" 2>/dev/null)
	unless_sanitized "ASan's own memory" ok "  $kind: max RSS ${rss:-?} KiB < $rss_max KiB" awk -v r="${rss:-999999}" -v m="$rss_max" 'BEGIN { exit !(r < m) }'
	[ "$kind" = own ] || kill "$burner"
	if [ "$kind" = own ]; then
		ok "  own: aperture's own pid's map was planted before it started" \
			test -p "$(cat "$TMP/own.own" 2>/dev/null)"
	else
		refused=$(sed -n 's/.*symbols: refused \([0-9]*\) perf maps.*/\1/p' "$TMP/$kind.err")
		ge "  $kind: the refused perf map is counted" "${refused:-0}" 1
	fi
done
for f in burn_50 burn_30 burn_20; do
	is_within "the unrelated workload's $f share is as without the planted files" \
		"$(share "$TMP/base.folded" $f)" "$(share "$TMP/sparse.folded" $f)" 8
done
is "  and it has no unnamed leaf" \
	"$(stack_weight "$TMP/sparse.folded" '^fpburn;.*(\[unknown\]|\+0x[0-9a-f]+)$')" "0"

# named_share FOLDED COMM FUNC: percent of COMM's weight whose leaf is FUNC; "" when COMM has under 10
named_share() {
	local total
	total=$(stack_weight "$1" "^$2;")
	[ "$total" -ge 10 ] || { diag "$2: $total samples only"; return; }
	awk -v n="$(stack_weight "$1" "^$2;.*;$3\$")" -v t="$total" 'BEGIN { printf "%.1f\n", 100 * n / t }'
}
for c in jitroot jitnobody jitesc jitreal; do cp "$WL/hostile" "$TMP/$c"; done

# 2. The owner: a map nobody planted for a root process is not read; nobody's own process's is.
bg "$TMP/jitroot" jit 20 >"$TMP/jit_root.out"
jit_root=$BG_PID
bg "${NOBODY[@]}" "$TMP/jitnobody" jit 20 >"$TMP/jit_nobody.out"
jit_nobody=$BG_PID
sleep 0.3
addr_root=$(sed -n 's/.* jit=\([0-9a-f]*\)/\1/p' "$TMP/jit_root.out")
addr_nobody=$(sed -n 's/.* jit=\([0-9a-f]*\)/\1/p' "$TMP/jit_nobody.out")
as_nobody sh -c "echo '$addr_root 6 planted_by_nobody' >/tmp/perf-$jit_root.map"
as_nobody sh -c "echo '$addr_nobody 6 jit_loop_of_nobody' >/tmp/perf-$jit_nobody.map"
PLANTED+=("/tmp/perf-$jit_root.map" "/tmp/perf-$jit_nobody.map")
run_ap owner record -F 199 -p "$jit_root,$jit_nobody" -d 2 -o "$TMP/owner.folded" --top 0
is "owner: the run exits 0" "$AP_RC" 0
ge "owner: the process's own map names its JIT code (% of its samples)" \
	"$(named_share "$TMP/owner.folded" jitnobody jit_loop_of_nobody)" 90
is "owner: a map another user planted for a root process is not read (% of its samples)" \
	"$(named_share "$TMP/owner.folded" jitroot planted_by_nobody)" 0.0
kill "$jit_root" "$jit_nobody" 2>/dev/null

# 3. A container's /tmp as an absolute symlink to a host directory, and a root with a real map.
R=$HF/root_escape; R2=$HF/root_real
mkdir -p "$R" "$R2/tmp"
ln -s "$HOSTDIR" "$R/tmp"
chown nobody "$R2/tmp"
bg unshare -m "$TMP/jitesc" jit 20 "$R" >"$TMP/jit_esc.out"
sleep 0.3
bg unshare -m "$TMP/jitreal" jit 20 "$R2" >"$TMP/jit_real.out"
sleep 0.3
read -r esc_pid esc_addr < <(sed -n 's/pid=\([0-9]*\) jit=\([0-9a-f]*\)/\1 \2/p' "$TMP/jit_esc.out")
read -r real_pid real_addr < <(sed -n 's/pid=\([0-9]*\) jit=\([0-9a-f]*\)/\1 \2/p' "$TMP/jit_real.out")
as_nobody sh -c "echo '$esc_addr 6 host_file_symbol' >'$HOSTDIR/perf-$esc_pid.map'"
as_nobody sh -c "echo '$real_addr 6 container_jit_symbol' >'$R2/tmp/perf-$real_pid.map'"
ok "namespace: the escaping process runs chrooted" test "$(readlink "/proc/$esc_pid/root")" = "$R"
run_ap ns record -F 199 -p "$esc_pid,$real_pid" -d 2 -o "$TMP/ns.folded" --top 0
is "namespace: the run exits 0" "$AP_RC" 0
ge "namespace: the map in the process's own root names its JIT code (% of its samples)" \
	"$(named_share "$TMP/ns.folded" jitreal container_jit_symbol)" 90
is "namespace: /tmp -> $HOSTDIR is resolved in the process's root, not the host's (% of its samples)" \
	"$(named_share "$TMP/ns.folded" jitesc host_file_symbol)" 0.0
# The same without openat2 (as on Linux < 5.6): the walk refuses the symlink, the real map is read.
APERTURE_DISABLE_FEATURES=openat2 run_ap nsw record -F 199 -p "$esc_pid,$real_pid" -d 2 -o "$TMP/nsw.folded" --top 0
is "namespace, no openat2: the run exits 0" "$AP_RC" 0
ge "namespace, no openat2: the map in the process's own root names its JIT code (% of its samples)" \
	"$(named_share "$TMP/nsw.folded" jitreal container_jit_symbol)" 90
is "namespace, no openat2: the host's file is not read (% of its samples)" \
	"$(named_share "$TMP/nsw.folded" jitesc host_file_symbol)" 0.0

# 4. The symbol cache: a library replaced at its path while mapped.  Without CAP_SYS_ADMIN and
#    CAP_CHECKPOINT_RESTORE /proc/PID/map_files is closed and the file is opened by its path, where
#    another file now is: its symbols must not be cached under the mapped file's device and inode.
P5=$HF/poison; K5=$HF/kept
mkdir -p "$P5" "$K5"
cp "$WL/libburn_main" "$WL/libburn.so" "$P5/"
cp "$WL/libburn.so" "$K5/"
cp "$WL/libburn_main" "$K5/libburn_kept"
# the same code, another name: any name it gave the mapped library's code would be wrong
${CC:-cc} -O1 -g -fno-omit-frame-pointer -fno-inline -fPIC -shared -Dlibburn_spin=planted_spin \
	-o "$P5/planted.so" "$TOP/tests/workloads/e2e/libburn.c"
bg "$P5/libburn_main" 20 >/dev/null
replaced=$BG_PID
bg "$K5/libburn_kept" 20 >/dev/null
kept=$BG_PID
sleep 0.3
mv "$P5/planted.so" "$P5/libburn.so"
ok "poison: the mapped library is deleted, another file at its path" grep -q 'libburn.so (deleted)' "/proc/$replaced/maps"
setpriv --bounding-set=-sys_admin,-checkpoint_restore "$APERTURE" record -F 199 -p "$replaced,$kept" -d 2 \
	-o "$TMP/poison.folded" --top 0 >"$TMP/poison.out" 2>"$TMP/poison.err"
is "poison: the run without map_files exits 0" "$?" 0
ge "poison: a library not replaced is named through its path (no map_files)" \
	"$(named_share "$TMP/poison.folded" libburn_kept libburn_spin)" 90
ge "poison: the process whose library was replaced was sampled" "$(stack_weight "$TMP/poison.folded" '^libburn_main;')" 10
is "poison: no frame named from the file now at its path" "$(stack_weight "$TMP/poison.folded" 'planted_spin')" 0
kill "$replaced" "$kept" 2>/dev/null

# 5. --gpu of the whole machine against names that point at a planted library.
if ! have_feature uprobe; then
	skip "gpu: no uprobe lands on a planted file" "no uprobes here: $(feature_why uprobe)"
else
	EVIL=$HF/evil
	as_nobody mkdir "$EVIL"
	as_nobody cp "$WL/gpu/libcuda.so.1" "$EVIL/libcuda.so.1"
	as_nobody cp "$WL/gpu/libcuda.so.1" "$EVIL/libevil.so"
	as_nobody cp "$WL/gpu/libcuda.so.1" "$EVIL/libc.so.6"
	libc=$(ldd "$WL/cpuburn" | sed -n 's/.*libc\.so\.6 => \([^ ]*\) .*/\1/p')
	as_nobody cp "$libc" "$EVIL/libcplant.so"
	bg "${NOBODY[@]}" "$WL/hostile" anon "$EVIL" 12 >"$TMP/anon.out"
	for i in $(seq 30); do grep -q '^pid=' "$TMP/anon.out" && break; sleep 0.1; done
	diag "hostile: $(head -1 "$TMP/anon.out"); $(ls "$EVIL" | tr '\n' ',')"
	run_ap gpu record --gpu -d 3 -o "$TMP/gpu.folded" --top 0
	is "gpu: the run exits 0" "$AP_RC" 0
	is "gpu: no launch counted through a probe on the planted file" \
		"$(stack_weight "$TMP/gpu.folded" '^hostile;')" 0
	ok "gpu: the names not probed are said" grep -q 'CUDA library names in processes.* maps not probed' "$TMP/gpu.err"
	run_ap hold record --locks --lock-hold -v -d 2 -o "$TMP/hold.folded" --top 0
	is "--lock-hold: the run exits 0" "$AP_RC" 0
	is "--lock-hold: no uprobe on the library planted as 'libc.so.6 (deleted)'" \
		"$(grep -c "pthread_mutex_unlock probed in .*$EVIL" "$TMP/hold.err")" 0
	ge "--lock-hold: the host's libc is probed" "$(grep -c 'pthread_mutex_unlock probed in ' "$TMP/hold.err")" 1
	ok "--lock-hold: the names not probed are said" grep -q 'libc names in processes.* maps not probed' "$TMP/hold.err"
	if grep -q 'anon_name=no' "$TMP/anon.out"; then
		diag "this kernel cannot name anonymous mappings (CONFIG_ANON_VMA_NAME): [anon:] names untried here"
	fi
fi
done_testing
