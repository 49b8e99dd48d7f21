#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The folders of user/ are layers and includes point down (tools/check-layers.sh,
# which holds the order): this tree passes, and a copy of it with one include
# pointing up, or a folder the order does not name, fails with a line naming it.
. "$(dirname "$0")/../lib.sh"

CHECK="$TOP/tools/check-layers.sh"

out=$(bash "$CHECK" "$TOP" 2>&1); rc=$?
is "this tree: every include points down" "$rc" 0
[ -z "$out" ] && pass "  and nothing printed" || fail "  and nothing printed" "$out"

# A copy with lib/ (the ground floor) reaching up into core/.
mkdir -p "$TMP/up" && cp -r "$TOP/user" "$TMP/up/"
printf '#include "profiler.h"\n' >> "$TMP/up/user/lib/util.c"
out=$(bash "$CHECK" "$TMP/up" 2>&1); rc=$?
is "lib/util.c including core's profiler.h fails" "$rc" 1
lines=$(grep -c . <<<"$out")
line=$(wc -l < "$TMP/up/user/lib/util.c")
is "  with one line" "$lines" 1
is "  naming the file, line, header and layers" "$out" \
	"user/lib/util.c:$line: includes profiler.h of core/, a layer above lib/"

# A folder nobody placed in the order.
mkdir -p "$TMP/new" && cp -r "$TOP/user" "$TMP/new/" && mkdir "$TMP/new/user/newroom"
printf '#include "util.h"\n' > "$TMP/new/user/newroom/x.c"
out=$(bash "$CHECK" "$TMP/new" 2>&1); rc=$?
is "a folder missing from the order fails" "$rc" 1
is "  naming it" "$out" "user/newroom/: not in the layer order (LAYERS in tools/check-layers.sh)"
done_testing
