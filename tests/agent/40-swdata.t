#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture record --format skywalking: EBPFProfilingData messages, varint
# length-delimited, written with nanopb and read back with protobuf-c (an
# independent implementation).
. "$(dirname "$0")/../lib.sh"
require_root
[ -x "$APERTURE" ] && [ -x "$WL/oap_burn" ] && [ -x "$WL/swdecode" ] || skip_all "build aperture and tests first"
# The skywalking exporter is part of aperture (user/export/exporter.c): a build without it fails here.
"$APERTURE" record --format skywalking -o /dev/null -d 1 -p $$ --top 0 >"$TMP/fmt.out" 2>&1
is "--format skywalking is one of aperture's formats" "$(grep -c "is not one of" "$TMP/fmt.out")" 0

# 6 s: about 600 samples, so that the 70/30 split is measured within a few points.
"$APERTURE" record --oncpu --top 0 -o "$TMP/p.swdata" -- "$WL/oap_burn" 6 2> "$TMP/record.log"
is "record writes .swdata (format chosen by the name)" "$?" 0
"$WL/swdecode" "$TMP/p.swdata" > "$TMP/decoded" 2> "$TMP/decode.err"
is "protobuf-c decodes every message" "$?" 0
ge "messages" "$(wc -l < "$TMP/decoded")" 2
is "task metadata on the first message only" "$(grep -c '^task=aperture-record' "$TMP/decoded"),$(sed -n 1p "$TMP/decoded" | cut -c1-20)" "1,task=aperture-record"
is "all onCPU" "$(grep -vc ' onCPU count=' "$TMP/decoded")" 0
total=$(sed 's/.* count=\([0-9]*\).*/\1/' "$TMP/decoded" | awk '{ s += $1 } END { print s + 0 }')
ge "samples of 6 s at 99 Hz (at least a third of a CPU on a busy machine)" "$total" 200
hot_a=$(awk '/\[USER id=[0-9]* oap_hot_a;/ { sub(/.* count=/, ""); s += $1 } END { print s + 0 }' "$TMP/decoded")
hot_b=$(awk '/\[USER id=[0-9]* oap_hot_b;/ { sub(/.* count=/, ""); s += $1 } END { print s + 0 }' "$TMP/decoded")
is_within "oap_hot_a is the leaf of 70%" 70 "$(awk -v a="$hot_a" -v t="$total" 'BEGIN { if (t > 0) printf "%.1f", 100 * a / t }')" 10
is_within "oap_hot_b is the leaf of 30%" 30 "$(awk -v a="$hot_b" -v t="$total" 'BEGIN { if (t > 0) printf "%.1f", 100 * a / t }')" 10
ok "leaf first: oap_hot_a then main" grep -q '\[USER id=[0-9]* oap_hot_a;main;' "$TMP/decoded"
is "no duplicate symbol lists" "$(sed 's/^task=[^ ]* process=[^ ]* start=[^ ]* current=[^ ]*//; s/^task=-//; s/ count=[0-9]*//; s/id=[0-9]* //g' "$TMP/decoded" | sort | uniq -d | wc -l)" 0

"$APERTURE" record --offcpu --top 0 --format skywalking -o "$TMP/off.bin" -- "$WL/oap_burn" 2 2> "$TMP/record2.log"
is "record --format skywalking (off-CPU)" "$?" 0
"$WL/swdecode" "$TMP/off.bin" > "$TMP/off.decoded"
is "protobuf-c decodes the off-CPU messages" "$?" 0
ok "off-CPU: switch counts and durations, kernel then user stack" \
	grep -q ' offCPU count=[1-9][0-9]* duration=[1-9][0-9]* \[KERNEL id=[0-9]* [^]]*\] \[USER id=[0-9]* oap_nap;oap_sleeper' "$TMP/off.decoded"
done_testing
