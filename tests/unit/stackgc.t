#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The stacks' garbage collector (user/core/stackgc.c) through
# tests/unit/stackgc_test.c on real BPF maps: a stack goes only when no count
# referred to it in two passes (a count in the totals keeps it), never
# without a flip between passes, its frames stay readable until the next
# pass, and one counted again by then is put back.
. "$(dirname "$0")/../lib.sh"
require_root

GT="$WL/stackgc_test"
[ -x "$GT" ] || { plan 1; fail "stackgc_test is built (make -C tests)"; done_testing; }
"$GT" >"$TMP/gc.out" 2>"$TMP/gc.err"; rc=$?
is "stackgc_test exits 0" "$rc" 0
[ "$rc" = 0 ] || sed 's/^/#   /' "$TMP/gc.err"
v() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/gc.out"; }

is "pass 1 runs" "$(v pass1_rc)" 0
is "pass 1: nothing deleted ($(v pass1_stored_a)$(v pass1_stored_b)$(v pass1_stored_c)$(v pass1_stored_d))" \
	"$(v pass1_stored_a)$(v pass1_stored_b)$(v pass1_stored_c)$(v pass1_stored_d)" 1111
is "no pass without a flip since the last" "$(v noflip_passes)" 1
is "pass 2: the stack unreferenced twice deleted, the others kept" \
	"$(v pass2_stored_a)$(v pass2_stored_b)$(v pass2_stored_c)$(v pass2_stored_d)" 1110
is "pass 2: its frames kept for counts in flight" "$(v pass2_tombstone_d)" 1
is "pass 3: counted again after its deletion: back; unreferenced twice: gone" \
	"$(v pass3_stored_a)$(v pass3_stored_b)$(v pass3_stored_c)$(v pass3_stored_d)" 1011
is "pass 3: the previous tombstones dropped" "$(v pass3_tombstone_d)" 0
is "pass 3: the new deletion's kept" "$(v pass3_tombstone_b)" 1
is "stats: deleted" "$(v deleted)" 2
is "stats: restored" "$(v restored)" 1
is "stats: passes" "$(v passes)" 3
done_testing
