#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Lock contention (--locks) against lockburn, whose answers are known: the
# threads time their own waits for big_lock; condvar waits are not mutex
# contention; an uncontended mutex never reaches the kernel; mmap/munmap
# threads contend on their mm's mmap_lock in the kernel.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload lockburn

# lock_weight FOLDED ERE: delay of the lines whose leaf (the lock) matches ERE
lock_weight() { RE="$2" awk '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, fr, ";"); if (fr[n] ~ ENVIRON["RE"]) t += w } END { printf "%.0f\n", t }' "$1"; }

# (Runs of 3 s: locks are named at the once-a-second snapshots while their
# process lives.)
# 1. A global pthread mutex, four threads: aperture's total delay for it is the
#    threads' own measurement (clock around pthread_mutex_lock), within 15%.
ap_ok "--locks -- lockburn mutex" mutex record --locks -d 30 -o "$TMP/mutex.folded" -o "$TMP/mutex.pb.gz" \
	-- "$WL/lockburn" mutex 3 4
want=$(kv "$TMP/mutex.out" wait_ns)
got=$(lock_weight "$TMP/mutex.folded" '^big_lock:pthread_mutex$')
diag "big_lock: aperture ${got} ns, the threads measured ${want} ns"
ge "the threads waited" "${want:-0}" 500000000
is_within "delay of big_lock = the threads' own wait (15%)" "$want" "$got" "$(( ${want:-0} * 15 / 100 ))"
# Debian's glibc has no frame pointers: the frame-pointer walk loses the
# function that called pthread_mutex_lock (contend) and resumes at its caller.
ok "the top stack names the contending thread" \
	grep -q '^lockburn;.*;mutex_thread;.*big_lock:pthread_mutex [0-9]*$' "$TMP/mutex.folded"
ok "no kernel frames under a futex wait" sh -c "! grep -q '_\[k\].*big_lock' '$TMP/mutex.folded'"
ok "pprof: go tool pprof reads it" sh -c "go tool pprof -symbolize=none -sample_index=delay -top '$TMP/mutex.pb.gz' > '$TMP/mutex.top' 2>'$TMP/mutex.toperr'"
ok "pprof: delay and contentions sample types, big_lock on top" grep -q 'big_lock:pthread_mutex' "$TMP/mutex.top"
ok "summary line counts contentions" grep -qE '^aperture: locks: [0-9]+ contentions, [0-9]+ lost' "$TMP/mutex.err"

# 2. Condvar waits are futex waits, not mutex contention.
ap_ok "--locks -- lockburn condvar" cv record --locks -d 30 -o "$TMP/cv.folded" -- "$WL/lockburn" condvar 3
ge "condvar waits are seen" "$(lock_weight "$TMP/cv.folded" '^cv(\+0x[0-9a-f]+)?:futex_wait$')" 500000000
is "condvar waits are not mutex contention" "$(lock_weight "$TMP/cv.folded" '^cv(\+0x[0-9a-f]+)?:pthread_mutex$')" 0

# 3. An uncontended mutex never enters the kernel: nothing to count.
ap_ok "--locks -- lockburn uncontended" unc record --locks -d 30 -o "$TMP/unc.folded" -- "$WL/lockburn" uncontended 10000000
is "10M uncontended lock/unlock pairs: no entries" "$(grep -c '^lockburn;' "$TMP/unc.folded")" 0

# 4. Kernel locks: mmap/munmap threads wait on their mm's mmap_lock.
ap_ok "--locks -- lockburn mmap" mm record --locks -d 30 -o "$TMP/mm.folded" -- "$WL/lockburn" mmap 2 4
ge "mmap_lock is named and contended" "$(lock_weight "$TMP/mm.folded" '^mmap_lock:rwsem\([rw]\)$')" 1000000
ok "mmap_lock waits have kernel stacks" grep -q '_\[k\];mmap_lock:rwsem' "$TMP/mm.folded"

# 5. --lock-side user: the kernel side is not even loaded.
ap_ok "--lock-side user" side record --locks --lock-side user -d 30 -o "$TMP/side.folded" -- "$WL/lockburn" mmap 1 4
is "user side only: no mmap_lock" "$(lock_weight "$TMP/side.folded" '^mmap_lock')" 0
run_ap badside record --locks --lock-side sideways -d 1
is "--lock-side with a bad value exits 2" "$AP_RC" 2
done_testing
