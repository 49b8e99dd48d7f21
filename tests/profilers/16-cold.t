#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GCC's .cold parts (-freorder-blocks-and-partition at -O2): the part of a function moved out of
# it into FUNC.cold is named as perf names it, `FUNC.cold` in C and `FUNC(args) [clone .cold]` in
# C++ (perf report on tests/build/coldsplit: `coldsplit_work.cold`), under the function's caller;
# in a stripped binary it is left unnamed, never given to the function placed before it.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload coldsplit

# The known answer: coldsplit spins in the cold branch of coldsplit_work, which GCC moved to
# coldsplit_work.cold; main calls it.  Without the split there is nothing to check.
readelf -sW "$WL/coldsplit" | grep -q ' coldsplit_work\.cold$' ||
	skip_all "the compiler did not split coldsplit_work into a .cold part at -O2"
# cold_share FOLDED COMM LEAF-ERE: percent of COMM's samples whose stack ends main;LEAF
cold_share() { pct "$(stack_weight "$1" "^$2;.*;main;$3\$")" "$(stack_weight "$1" "^$2;")"; }

ap_ok "C, -O2" c record -F 499 -d 3 -o "$TMP/c.folded" -o "$TMP/c.pb.gz" -- "$WL/coldsplit" 4
ge "C: >= 90% of the samples end main;coldsplit_work.cold" \
	"$(cold_share "$TMP/c.folded" coldsplit 'coldsplit_work\.cold')" 90
if command -v go >/dev/null; then
	ok "pprof: the function coldsplit_work.cold holds the samples (go tool pprof -top)" \
		sh -c "go tool pprof -top '$TMP/c.pb.gz' 2>/dev/null | grep -qE '^ +[0-9]+ +(9[0-9]|100)(\\.[0-9]+)?% .* coldsplit_work\\.cold\$'"
else
	skip "pprof: the function coldsplit_work.cold holds the samples" "no go"
fi

# C++: the mangled _Z14coldsplit_worki.cold demangles with its clone suffix, as c++filt and perf do.
if g++ -O2 -g -fno-omit-frame-pointer -x c++ -o "$TMP/coldsplit_cxx" "$TOP/tests/workloads/coldsplit.c" 2>/dev/null &&
   nm "$TMP/coldsplit_cxx" | grep -q '_Z14coldsplit_worki\.cold$'; then
	ap_ok "C++, -O2" cxx record -F 499 -d 3 -o "$TMP/cxx.folded" -- "$TMP/coldsplit_cxx" 4
	ge "C++: >= 90% of the samples end main;coldsplit_work(int) [clone .cold]" \
		"$(cold_share "$TMP/cxx.folded" coldsplit_cxx 'coldsplit_work\(int\)_\[clone_\.cold\]')" 90
else
	skip "C++, -O2" "no g++, or it did not split coldsplit_work"
fi

# Stripped (only .dynsym, -rdynamic): coldsplit_work.cold has no symbol left, and coldsplit_note
# ends right where it starts: the cold part must stay unnamed (module+0xOFF), not coldsplit_note+0x...
if gcc -O2 -g -fno-omit-frame-pointer -rdynamic -o "$TMP/coldsplit_strip" "$TOP/tests/workloads/coldsplit.c" 2>/dev/null &&
   strip --strip-all "$TMP/coldsplit_strip"; then
	ap_ok "stripped" strip record -F 499 -d 3 -o "$TMP/strip.folded" -- "$TMP/coldsplit_strip" 4
	total=$(stack_weight "$TMP/strip.folded" '^coldsplit_strip;')
	ge "stripped: >= 90% of the samples end main;coldsplit_strip+0x... (the cold part's module offset)" \
		"$(cold_share "$TMP/strip.folded" coldsplit_strip 'coldsplit_strip\+0x[0-9a-f]+')" 90
	is "stripped: none given to the neighbour coldsplit_note" \
		"$(stack_weight "$TMP/strip.folded" '^coldsplit_strip;.*coldsplit_note')" 0
	ge "  with samples enough to tell" "$total" 100
else
	skip "stripped" "no gcc or strip"
fi
done_testing
