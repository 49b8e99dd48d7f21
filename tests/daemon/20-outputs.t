#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# aperture run --output-dir DIR --interval S: one profile per interval per
# kind, decodable, mode 0600, no temporary file left; a symlink planted under
# the coming names is not followed; --keep-files N keeps the newest N; a
# directory others can write to is refused, and rotation deletes only what
# aperture wrote.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
require_workload cpuburn pprof_decode

PIN=/sys/fs/bpf/aperture_out_$$
OUT=$TMP/out
unpin_at_exit "$PIN"
bg "$WL/cpuburn" 60

# daemon NAME SECONDS ARGS: runs the daemon for about SECONDS, then SIGTERM
daemon() {
	local name=$1 secs=$2
	shift 2
	"$APERTURE" run --pin "$PIN" --oncpu --offcpu "$@" 2>"$TMP/$name.err" &
	local pid=$! i
	for ((i = 0; i < 100; i++)); do [ -e "$PIN/offcpu_active" ] && break; sleep 0.1; done
	sleep "$secs"
	kill -TERM "$pid"
	wait "$pid"
	DAEMON_RC=$?
	"$APERTURE" run --unpin --pin "$PIN" >/dev/null 2>&1
}

# 1. Two intervals of 1 s (and a last partial one at the stop).
daemon two 2.5 --output-dir "$OUT" --interval 1s
is "exit 0 on SIGTERM" "$DAEMON_RC" 0
ge "at least 2 on-CPU files" "$(ls "$OUT"/oncpu-*.pb.gz | wc -l)" 2
ge "at least 2 off-CPU files" "$(ls "$OUT"/offcpu-*.pb.gz | wc -l)" 2
bad=0; total=0
for f in "$OUT"/*.pb.gz; do
	"$WL/pprof_decode" "$f" >"$TMP/decoded" 2>&1 || bad=$((bad + 1))
	n=$(awk '/^samples/ { print $2 }' "$TMP/decoded"); total=$((total + ${n:-0}))
done
is "every file decodes (tests/build/pprof_decode)" "$bad" 0
ge "  and they hold samples" "$total" 10
if command -v go >/dev/null; then
	ok "go tool pprof reads one" sh -c "go tool pprof -top '$(ls "$OUT"/oncpu-*.pb.gz | head -1)' >/dev/null 2>&1"
else
	skip "go tool pprof reads one" "no go"
fi
is "files are mode 0600" "$(stat -c %a "$OUT"/*.pb.gz | sort -u)" 600
is "the directory is mode 0700" "$(stat -c %a "$OUT")" 700
is "no temporary file left" "$(ls -A "$OUT" | grep -c '^\.aperture-tmp')" 0
ge "a health line per interval" "$(grep -c 'interval 1s: oncpu: [0-9]* samples, [0-9]* lost; offcpu: .*symbols missing: .*files: ' "$TMP/two.err")" 2

# 2. Symlinks planted under every name of the next seconds: none followed.
rm -rf "$OUT"; mkdir -m 700 "$OUT"
echo precious >"$TMP/target"
now=$(date -u +%s)
for ((s = 0; s < 8; s++)); do
	for kind in oncpu offcpu; do
		ln -s "$TMP/target" "$OUT/$kind-$(date -u -d "@$((now + s))" +%Y%m%dT%H%M%SZ).pb.gz"
	done
done
daemon planted 2.5 --output-dir "$OUT" --interval 1s
is "the symlinks' target is untouched" "$(cat "$TMP/target")" precious
is "the symlinks are still symlinks" "$(find "$OUT" -maxdepth 1 -type l | wc -l)" 16
ge "the profiles went under other names" "$(find "$OUT" -maxdepth 1 -type f -name 'oncpu-*-2.pb.gz' | wc -l)" 2
rm -rf "$OUT"; ln -s "$TMP" "$TMP/outlink"
daemon linkdir 0 --output-dir "$TMP/outlink" --interval 1s
is "a symlinked output dir is refused" "$DAEMON_RC" 1
ok "  with one line" grep -q "output-dir $TMP/outlink: not a directory (a symlink is not followed)" "$TMP/linkdir.err"

# 3. Rotation: --keep-files 2 keeps the newest two of each kind.
rm -rf "$OUT"
daemon keep 5 --output-dir "$OUT" --interval 1s --keep-files 2
is "--keep-files 2: 2 on-CPU files" "$(ls "$OUT"/oncpu-*.pb.gz | wc -l)" 2
is "--keep-files 2: 2 off-CPU files" "$(ls "$OUT"/offcpu-*.pb.gz | wc -l)" 2
newest=$(ls -t "$OUT"/oncpu-*.pb.gz | head -1)
ok "  the newest kept (written at the stop)" test "$(stat -c %Y "$newest")" -ge "$(( $(date +%s) - 3 ))"
rm -rf "$OUT"
daemon keepmb 3 --output-dir "$OUT" --interval 1s --keep-mb 1
ge "--keep-mb 1: files kept while under 1 MiB" "$(ls "$OUT"/oncpu-*.pb.gz | wc -l)" 2
# 4. A shared directory is refused (another user could fill it or swap a file under rotation),
#    and rotation deletes only files aperture wrote (owner and mode 0600).
rm -rf "$OUT"; mkdir -m 1777 "$OUT"
daemon shared 0 --output-dir "$OUT" --interval 1s
is "a directory others can write to is refused" "$DAEMON_RC" 1
ok "  with one line naming the fix" grep -q "output-dir $OUT: writable by group or others: use a directory of your own that only you can write to (mkdir -m 700 DIR)" "$TMP/shared.err"
chmod 700 "$OUT"; chown nobody "$OUT"
daemon foreign 0 --output-dir "$OUT" --interval 1s
is "a directory of another user is refused" "$DAEMON_RC" 1
ok "  with one line naming the fix" grep -q "output-dir $OUT: not owned by this user: use a directory of your own" "$TMP/foreign.err"
rm -rf "$OUT"; mkdir -m 700 "$OUT"
for f in oncpu-20000101T000000Z.pb.gz oncpu-20000101T000001Z.pb.gz oncpu-20000101T000002Z.pb.gz; do
	echo old >"$OUT/$f"
	touch -d '2000-01-01' "$OUT/$f"
done
chmod 644 "$OUT/oncpu-20000101T000000Z.pb.gz"			# not our mode
chown nobody "$OUT/oncpu-20000101T000001Z.pb.gz"; chmod 600 "$OUT/oncpu-20000101T000001Z.pb.gz"	# not our owner
chmod 600 "$OUT/oncpu-20000101T000002Z.pb.gz"			# as aperture writes them
daemon keepown 2.5 --output-dir "$OUT" --interval 1s --keep-files 1
is "rotation keeps a file of another mode" "$(cat "$OUT/oncpu-20000101T000000Z.pb.gz" 2>/dev/null)" old
is "rotation keeps a file of another owner" "$(cat "$OUT/oncpu-20000101T000001Z.pb.gz" 2>/dev/null)" old
ok "rotation deletes an old file of ours" test ! -e "$OUT/oncpu-20000101T000002Z.pb.gz"
is "  and keeps 1 of its own" "$(find "$OUT" -name 'oncpu-*.pb.gz' ! -name 'oncpu-2000*' -user root -perm 600 | wc -l)" 1
run_ap badfmt run --pin "$PIN" --output-dir "$OUT" --output-format skywalking
is "--output-format skywalking refused: exit 2" "$AP_RC" 2
run_ap badint run --pin "$PIN" --interval 0s
is "--interval 0s refused: exit 2" "$AP_RC" 2
ok "no pins left" test ! -e "$PIN"
done_testing
