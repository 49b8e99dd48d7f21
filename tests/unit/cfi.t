#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The unwind-table builder (user/unwind/cfi.c) through its driver
# tests/build/cfitest, against files it must survive: without .eh_frame_hdr
# it walks .eh_frame itself, and a hostile file (tests/tools/gen_ehframe.py)
# must cost bounded time.  A normal binary gives the same table either way.
. "$(dirname "$0")/../lib.sh"

CFITEST="$WL/cfitest"
GEN="$(dirname "$0")/../tools/gen_ehframe.py"
[ -x "$CFITEST" ] || skip_all "$CFITEST not built (make -C tests)"
[ -x "$WL/nofp" ] || skip_all "$WL/nofp not built (make -C tests)"
command -v objcopy >/dev/null || skip_all "no objcopy"

# table FILE: what the table holds (functions, rows, their hash), not what it cost
table() { "$CFITEST" "$1" | grep -o 'ok fdes=[0-9]* rows=[0-9]* \|sum=[0-9a-f]*' | tr -d '\n'; }
# ms LINE: the build time a cfitest line reports
ms() { sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<<"$1"; }

# 1. Without .eh_frame_hdr (as a hostile or a static binary has it), the same table.
for f in "$WL/nofp" "$WL/libnofp.so" /usr/lib/x86_64-linux-gnu/libc.so.6; do
	[ -e "$f" ] || { skip "$f: not here"; continue; }
	name=$(basename "$f")
	objcopy --remove-section .eh_frame_hdr "$f" "$TMP/$name.nohdr"
	ok "$name.nohdr has no .eh_frame_hdr" sh -c "! readelf -S '$TMP/$name.nohdr' | grep -q eh_frame_hdr"
	with=$(table "$f")
	diag "$name: $with"
	ok "$name: a table with the header" grep -q '^ok fdes=[1-9]' <<<"$with"
	is "$name: the same functions, rows and hash without it" "$(table "$TMP/$name.nohdr")" "$with"
done

# 2. The page index the BPF walk searches (user/unwind/rowindex.c) gives the
#    row a search of all rows gives, at every row's pc, the byte before it and
#    each page's first and last byte (cfitest's index=), on real files of every
#    size: a wrong entry would unwind through another function's rule.
for f in "$WL/nofp" "$WL/libnofp.so" /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11 \
	/usr/lib/llvm-14/lib/libclang-cpp.so.14; do
	[ -e "$f" ] || { skip "$f: not here"; continue; }
	line=$("$CFITEST" "$f")
	diag "$(basename "$f"): $(grep -o 'rows=[0-9]*\|index=.*' <<<"$line" | tr '\n' ' ')"
	ok "$(basename "$f"): the page index gives every pc's row" grep -q ' index=ok ' <<<"$line"
done

# 3. 300k functions, each with its own CIE, no header: each FDE's CIE found by
#    binary search (a linear search took 4.5e10 steps).  Every function is in.
python3 "$GEN" "$TMP/cies" cies 300000
line=$("$CFITEST" "$TMP/cies")
diag "$line"
ok "300k CIEs: a table of 300000 functions" grep -q 'ok fdes=300000 ' <<<"$line"
ok "300k CIEs: built within 15 s" test "$(ms "$line")" -le 15000

# 4. 2000 functions of 1024 rows each: libdw replayed a function from its
#    start for each row (1e9 steps, refused at the bound); the program runs
#    once per function now (user/unwind/cfaprog.c).  Every row is in.
python3 "$GEN" "$TMP/rows" rows 2000 1024
line=$("$CFITEST" "$TMP/rows")
diag "$line"
ok "2000 x 1024 rows: built, 2000 functions" grep -q 'ok fdes=2000 ' <<<"$line"
# each function: its 1024 rows (the bound), then a gap row where the bound cut it
ge "2000 x 1024 rows: every function's rows" "$(sed -n 's/.* rows=\([0-9]*\) .*/\1/p' <<<"$line")" $((2000 * 1024))
ok "2000 x 1024 rows: built within 5 s" test "$(ms "$line")" -le 5000

# 4b. 34 functions of a million DW_CFA_nop each: 34M instructions, past the
#     work bound (32M): refused, early, however few rows they make.
python3 "$GEN" "$TMP/nops" nops 34 1000000
line=$("$CFITEST" "$TMP/nops")
diag "$line"
ok "34 x 1M nops: refused (over the work bound)" grep -q 'error=Argument list too long' <<<"$line"
ok "34 x 1M nops: refused within 5 s" test "$(ms "$line")" -le 5000
rm -f "$TMP/nops" "$TMP/rows"

# 4c. The table is what libdw says at each row's address (dwarf_cfi_addrframe, the builder's way
#     until the one-pass interpreter, user/unwind/cfaprog.c, replaced it): rules, ABI defaults,
#     remember/restore.  (Checked so, by hand, on every x86_64 ELF file of this machine: 3084.)
for f in "$WL/nofp" "$WL/libnofp.so" /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/python3.11 \
	/root/.pyenv/versions/3.8.*/lib/libpython3.8.so.1.0 /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so; do
	[ -e "$f" ] || { skip "$f: not here"; continue; }
	line=$(CFITEST_LIBDW=1 "$CFITEST" "$f")
	diag "$(basename "$f"): $(grep -o 'rows=[0-9]*\|libdw=.*' <<<"$line" | tr '\n' ' ')"
	ok "$(basename "$f"): every row as libdw reads it" grep -q ' libdw=ok checked=[1-9]' <<<"$line"
done

# 5. The largest real library here stays under the bound.
big=/usr/lib/llvm-14/lib/libclang-cpp.so.14
if [ -e "$big" ]; then
	line=$("$CFITEST" "$big")
	diag "$line"
	ok "libclang-cpp.so.14 (83k functions, 1M rows): built" grep -q '^[^	]*	ok fdes=' <<<"$line"
else
	skip "$big: not here"
fi
# 6. Which files keep frame pointers wherever a call can be (cfi_table.fp_frames): the BPF walk
#    steps their callers' frames by frame pointers, no row searched, so a file said to keep them
#    that does not would be walked wrong.  The workloads built with -fno-omit-frame-pointer keep
#    them (prologues the scheduler spread, PLT stubs, leaf functions without a frame); nofp and
#    libnofp.so (-fomit-frame-pointer: rsp-based frames that call) do not.
for f in "$WL/cpuburn" "$WL/lockburn" "$WL/libburn.so"; do
	[ -e "$f" ] || { skip "$f: not built"; continue; }
	is "$(basename "$f") (frame pointers): every call site keeps them" \
		"$("$CFITEST" "$f" | grep -o ' fp=[01]')" " fp=1"
done
for f in "$WL/nofp" "$WL/libnofp.so"; do
	is "$(basename "$f") (no frame pointers): not said to keep them" \
		"$("$CFITEST" "$f" | grep -o ' fp=[01]')" " fp=0"
done
done_testing
