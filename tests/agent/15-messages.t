#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# EBPFProfilingData as the OAP stores it: every message of an upload under
# its own "kernelId_userId" (EBPFProfilingDataRecord.id hashes schedule, ids
# and upload time, so equal ids overwrite each other), and unresolved frames
# named per function or per module, never per sampled address.
. "$(dirname "$0")/../lib.sh"
SWM=$WL/sw_messages
DEC=$WL/swdecode
[ -x "$SWM" ] && [ -x "$DEC" ] || { plan 1; fail "sw_messages and swdecode are built (make -C tests)"; done_testing; }

# The record key of each decoded message: its kernel id and user id, joined as the OAP does.
keys() { sed 's/^[^[]*//' "$1" | awk '{ k = ""; u = ""
	if (match($0, /\[KERNEL id=[0-9]+/)) k = substr($0, RSTART + 11, RLENGTH - 11)
	if (match($0, /\[USER id=[0-9]+/)) u = substr($0, RSTART + 9, RLENGTH - 9)
	print (k != "" && u != "") ? k "_" u : k u }'; }
distinct() { keys "$1" | sort -u | wc -l; }

"$SWM" halves "$TMP/halves.sw" && "$DEC" "$TMP/halves.sw" > "$TMP/halves"
is "kernel-only, user-only and both: three messages" "$(wc -l < "$TMP/halves")" 3
is "a kernel-only and a user-only stack with the same names get different keys" "$(distinct "$TMP/halves")" 3
ok "the two halves of one stack have different ids" \
	awk '/KERNEL id=/ && /USER id=/ { k = $0; sub(/.*KERNEL id=/, "", k); sub(/ .*/, "", k)
		u = $0; sub(/.*USER id=/, "", u); sub(/ .*/, "", u); exit k == u }' "$TMP/halves"

"$SWM" twice "$TMP/twice.sw" && "$DEC" "$TMP/twice.sw" > "$TMP/twice"
is "two tasks' messages in one upload: no key shared" "$(distinct "$TMP/twice")" "$(wc -l < "$TMP/twice")"

"$SWM" many "$TMP/many.sw" 5000 && "$DEC" "$TMP/many.sw" > "$TMP/many"
is "5000 distinct stacks: 5000 messages" "$(wc -l < "$TMP/many")" 5000
is "5000 distinct stacks: 5000 keys" "$(distinct "$TMP/many")" 5000

"$SWM" unresolved "$TMP/unres.sw" && "$DEC" "$TMP/unres.sw" > "$TMP/unres"
is "unresolved addresses of one module under one caller: one message" \
	"$(grep -c 'USER id=[0-9]* \[unknown\] libstripped.so;\[unknown\] libstripped.so;main\]' "$TMP/unres")" 1
ok "its count is both stacks' (2 + 3)" grep -q 'count=5 \[USER id=[0-9]* \[unknown\] libstripped.so;\[unknown\] libstripped.so;main\]' "$TMP/unres"
ok "another caller stays apart" grep -q 'count=4 \[USER id=[0-9]* \[unknown\] libstripped.so;other_caller\]' "$TMP/unres"
ok "an address outside every module is [unknown]" grep -q 'count=1 \[USER id=[0-9]* \[unknown\];main\]' "$TMP/unres"
is "no module+0xADDRESS frame" "$(grep -c '+0x' "$TMP/unres")" 0

# --- the same through aperture record, on a stripped executable ---
if [ "$(id -u)" != 0 ]; then
	skip "record of the stripped oap_burn" "needs root"
	done_testing
fi
if [ ! -x "$APERTURE" ] || [ ! -x "$WL/oap_burn_nosym" ]; then
	fail "aperture and oap_burn_nosym are built (make aperture; make -C tests)"
	done_testing
fi
"$APERTURE" record --oncpu --top 0 -o "$TMP/ns.swdata" -o "$TMP/ns.folded" -- "$WL/oap_burn_nosym" 3 2> "$TMP/rec.log"
is "record of the stripped oap_burn exits 0" "$?" 0
"$DEC" "$TMP/ns.swdata" > "$TMP/ns"
# Function starts, from the unstripped build of the same code: the only offsets a frame may carry.
nm "$WL/oap_burn" | awk '$2 ~ /^[Tt]$/ { sub(/^0+/, "", $1); print "oap_burn_nosym+0x" $1 }' | sort -u > "$TMP/starts"
grep -o 'oap_burn_nosym+0x[0-9a-f]*' "$TMP/ns" | sort -u > "$TMP/offsets"
is "every oap_burn_nosym+0x frame is a function start" "$(comm -23 "$TMP/offsets" "$TMP/starts" | wc -l)" 0
# The busy thread's stack, main -> oap_hot_a / oap_hot_b: those three are there, by their starts.
nm "$WL/oap_burn" | awk '$3 ~ /^(main|oap_hot_a|oap_hot_b)$/ { sub(/^0+/, "", $1); print "oap_burn_nosym+0x" $1 }' |
	sort > "$TMP/busy"
is "main, oap_hot_a and oap_hot_b are named by their starts" "$(comm -23 "$TMP/busy" "$TMP/offsets" | tr '\n' ' ')" ""
# The hot loops' frame: one node for the module now, or their own function's start.
nm "$WL/oap_burn" | awk '$3 ~ /^oap_hot_[ab]$/ { sub(/^0+/, "", $1); print "oap_burn_nosym+0x" $1 }' > "$TMP/hot"
echo "[unknown] oap_burn_nosym" >> "$TMP/hot"
total=$(sed 's/.* count=\([0-9]*\).*/\1/' "$TMP/ns" | awk '{ s += $1 } END { print s + 0 }')
leaf=$(awk 'NR == FNR { hot[$0] = 1; next }
	{ n = $0; sub(/.* count=/, "", n); sub(/ .*/, "", n)
	  u = $0; if (!sub(/.*\[USER id=[0-9]* /, "", u)) next; sub(/;.*/, "", u); sub(/\]$/, "", u)
	  if (u in hot) s += n } END { print s + 0 }' "$TMP/hot" "$TMP/ns")
ge "samples" "$total" 100
ge "the hot loops' samples land on one node per function or module (%)" "$(pct "$leaf" "$total")" 90
# The symbolizer names a stripped function by its FDE's start in every output, so the folded
# file is one line per function too: every oap_burn_nosym+0x frame there is a function start.
grep -o 'oap_burn_nosym+0x[0-9a-f]*' "$TMP/ns.folded" | sort -u > "$TMP/foffsets"
is "folded: main, oap_hot_a and oap_hot_b are named by their starts" "$(comm -23 "$TMP/busy" "$TMP/foffsets" | tr '\n' ' ')" ""
is "folded: every oap_burn_nosym+0x frame is a function start, not an address" \
	"$(comm -23 "$TMP/foffsets" "$TMP/starts" | wc -l)" 0
done_testing
