#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Symbolization end to end, through aperture record: a stripped binary named
# only by MiniDebugInfo, a shared library, a process that exits mid-run, and a
# binary deleted while it runs.  Each hot function must come out by name.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn cpuburn_mini libburn_main

# leaf_named FOLDED COMM FUNC: weight of COMM's stacks whose leaf is FUNC
leaf_named() { stack_weight "$1" "^$2;.*;$3\$"; }

# 1. Stripped, MiniDebugInfo only.
ap_ok "minidebuginfo" mini record -F 199 -o "$TMP/mini.folded" -- "$WL/cpuburn_mini" 2
ok "the binary has no .symtab" sh -c "! readelf -S '$WL/cpuburn_mini' | grep -q '\\.symtab'"
# burn_50: half of the 199 samples per CPU second the workload used (it prints cpu_ns= at exit)
want=$(cpu_ns_samples "$TMP/mini.out" 199)
ge "minidebuginfo: burn_50 named (of $want samples)" "$(leaf_named "$TMP/mini.folded" cpuburn_mini burn_50)" \
	$((want * 4 / 10))

# 2. A shared library (PIC, mapped at a random base).
ap_ok "shared library" lib record -F 199 -o "$TMP/lib.folded" -- "$WL/libburn_main" 2
want=$(cpu_ns_samples "$TMP/lib.out" 199)
ge "shared library: libburn_spin named, called from main (of $want samples)" \
	"$(stack_weight "$TMP/lib.folded" '^libburn_main;.*;main;libburn_spin$')" $((want * 8 / 10))

# 3. A process that starts and exits while a whole-machine run goes on: it was
#    announced through the ring buffer, its maps read while it lived.
cp "$WL/cpuburn" "$TMP/shortburn"
run_ap_bg() { "$APERTURE" record -F 199 -d 5 -o "$TMP/short.folded" --top 0 >"$TMP/short.out" 2>"$TMP/short.err"; }
run_ap_bg & ap=$!
sleep 1.5
# 0.3 s: most runs fall between two of the once-a-second snapshots
"$TMP/shortburn" 0.3 >"$TMP/shortburn.out"
ok "shortburn is gone before the run ends" sh -c "! pgrep -x shortburn >/dev/null"
wait "$ap"
want=$(cpu_ns_samples "$TMP/shortburn.out" 199)
ge "exited mid-run: burn_50 named (of $want samples)" "$(leaf_named "$TMP/short.folded" shortburn burn_50)" \
	$((want * 3 / 10))
unnamed=$(stack_weight "$TMP/short.folded" '^shortburn;.*(\[unknown\]|\+0x[0-9a-f]+)$')
is "exited mid-run: no hex or unknown leaf for it" "$unnamed" 0
[ "$unnamed" = 0 ] || grep -E '^shortburn;.*(\[unknown\]|\+0x[0-9a-f]+) [0-9]+$' "$TMP/short.folded" | cut -c1-300 | sed 's/^/# /'

# 4. A binary deleted while it runs: opened through /proc/PID/map_files.
cp "$WL/cpuburn" "$TMP/delburn"
bg "$TMP/delburn" 8 >/dev/null
del=$BG_PID
sleep 0.3
rm -f "$TMP/delburn"
ok "the binary is deleted" grep -q '(deleted)' "/proc/$del/maps"
t0=$(proc_cpu_ns "$del")
ap_ok "deleted binary" del record -F 199 -p "$del" -d 2 -o "$TMP/del.folded"
want=$(samples_expected 199 2 $(($(proc_cpu_ns "$del") - t0)) "$AP_SECS")
ge "deleted binary: burn_50 named (of $want samples)" "$(leaf_named "$TMP/del.folded" delburn burn_50)" \
	$((want * 3 / 10))
kill "$del"

# 5. A process in another mount namespace (as in a container): its binary
#    exists only there, so the path in its maps means nothing outside.
ns_dir=/tmp/aperture-ns.$$
mkdir -p "$ns_dir"
bg unshare --mount --propagation private sh -c \
	'mount -t tmpfs none "$1" && cp "$2" "$1/nsburn" && exec "$1/nsburn" 8' sh "$ns_dir" "$WL/cpuburn"
ns=$BG_PID
for i in $(seq 50); do grep -q nsburn "/proc/$ns/maps" 2>/dev/null && break; sleep 0.1; done
ok "the binary is not visible outside its namespace" test ! -e "$ns_dir/nsburn"
t0=$(proc_cpu_ns "$ns")
ap_ok "other mount namespace" ns record -F 199 -p "$ns" -d 2 -o "$TMP/ns.folded"
want=$(samples_expected 199 2 $(($(proc_cpu_ns "$ns") - t0)) "$AP_SECS")
ge "other mount namespace: burn_50 named (of $want samples)" "$(leaf_named "$TMP/ns.folded" nsburn burn_50)" \
	$((want * 3 / 10))
kill "$ns"; wait "$ns" 2>/dev/null
rmdir "$ns_dir" 2>/dev/null

done_testing
