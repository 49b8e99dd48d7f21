#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CPython frames in user stacks (bpf/unwind/python.bpf.h, user/lib/cpython.c,
# user/symbolize/pyframes.c): a known chain main -> a -> b -> c under every
# CPython here, c spinning in pure Python, then calling hashlib.sha256 (C).
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
have_feature dwarf_unwind || skip_all "no DWARF unwinding here (CPython frames need it): $(feature_why dwarf_unwind)"

PY="$(cd "$(dirname "$0")/../workloads/python" && pwd)"
SPIN_LINES='1[89]'	# c's loop: `while time.time() < until:` and `n += 1`
SHA_LINE=16		# `hashlib.sha256(BUF).digest()`
# The runs' lengths are scaled with the waits (under qemu TCG the interpreter's start and the
# tables of the libraries it loads take seconds, a third of a 3 s run); the known shares are not.
# They are seconds of the program's own CPU time (chain.py's "cpu"), not of wall time: what is
# not the chain (the interpreter's start and exit, and c's first samples in libcrypto, walked only
# once the table of a library loaded since is built: [truncated] until then) costs about the same
# CPU time on a busy machine, where a wall-time run of c shrinks with the CPU it gets.  With two
# busy loops on the 2 cores (and others' builds: load average 9) the 5 s wall-time sha run of
# 3.11.7 was 82% whole: 50 of 310 samples had no Python frame, 25 of them
# [truncated];libcrypto.so.3+0x29c240.
SPIN_S=$((3 * TEST_SCALE)) SHA_S=$((5 * TEST_SCALE)) MAX_S=$((90 * TEST_SCALE))

# py_chain FOLDED: only the Python frames of each stack, "a;b;c" style, with the weight
py_only() {
	awk '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ /\[before-unwind-tables\]/) next
		n = split(s, fr, ";"); out = ""
		for (i = 2; i <= n; i++) if (fr[i] ~ /_\(chain\.py:[0-9]+\)$/) out = out (out ? ";" : "") fr[i]
		print out, w }' "$1"
}
# share FOLDED ERE: percent of the weight (walked with tables) whose Python frames match ERE
share() {
	local t h
	t=$(py_only "$1" | awk '{ t += $NF } END { print t + 0 }')
	h=$(py_only "$1" | RE="$2" awk '{ w = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ ENVIRON["RE"]) h += w } END { print h + 0 }')
	pct "$h" "$t"
}
# below X MIN: X < MIN
below() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x + 0 < m + 0) }'; }
# why NAME FOLDED: the Python frames of its heaviest stacks and its tables line, as diagnostics
why() {
	py_only "$2" | awk '{ s = $0; sub(/ *[0-9]+$/, "", s); w[s] += $NF }
		END { for (s in w) print w[s], (s == "" ? "(no Python frames)" : s) }' |
		sort -rn | head -4 | sed 's/^/#   /'
	grep -E 'unwind tables|python:' "$TMP/$1.err" | sed 's/^/#   /'
}

PYTHONS=(/usr/bin/python3.11)
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	d=$(ls -d /root/.pyenv/versions/$v.* 2>/dev/null | grep -E "/$v\.[0-9]+$" | head -1)
	if [ -n "$d" ] && [ -x "$d/bin/python3" ]; then PYTHONS+=("$d/bin/python3"); else diag "pyenv CPython $v: absent, skipped"; fi
done

CHAIN='<module>_\(chain\.py:[0-9]+\);main_\(chain\.py:[0-9]+\);a_\(chain\.py:[0-9]+\);b_\(chain\.py:[0-9]+\);c_\(chain\.py:'
i=0
for py in "${PYTHONS[@]}"; do
	[ -x "$py" ] || { skip "$py" "absent"; continue; }
	i=$((i + 1))
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	ap_ok "$py spin" spin$i record -F 499 -d $MAX_S -o "$TMP/spin$i.folded" -- "$py" "$PY/chain.py" spin $SPIN_S cpu
	got=$(share "$TMP/spin$i.folded" "^$CHAIN[0-9]+\\)\$")
	ge "$v ($py): >= 95% of samples show <module>;main;a;b;c" "$got" 95
	if below "$got" 95; then why spin$i "$TMP/spin$i.folded"; fi
	ge "$v: >= 95% of them at c's spinning lines (18, 19)" "$(share "$TMP/spin$i.folded" "^$CHAIN${SPIN_LINES}\\)\$")" 95
	ok "$v: the end line counts Python frames" grep -qE 'python frames: [1-9][0-9]*' "$TMP/spin$i.err"
	ap_ok "$py sha" sha$i record -F 499 -d $MAX_S -o "$TMP/sha$i.folded" -- "$py" "$PY/chain.py" sha $SHA_S cpu
	got=$(share "$TMP/sha$i.folded" "^$CHAIN${SHA_LINE}\\)\$")
	ge "$v: >= 95% show <module>;main;a;b;c at the sha256 line" "$got" 95
	if below "$got" 95; then why sha$i "$TMP/sha$i.folded"; fi
	ge "$v: >= 80% of c's samples are in sha256's C code under c" \
		"$(pct "$(stack_weight "$TMP/sha$i.folded" "c_\\(chain\\.py:$SHA_LINE\\);.*[Ss][Hh][Aa]256")" \
			"$(stack_weight "$TMP/sha$i.folded" "c_\\(chain\\.py:$SHA_LINE\\)")")" 80
done

# pprof: real Function and Line entries (function c, its file, the loop's line), as go tool pprof reads them.
if command -v go >/dev/null 2>&1; then
	ap_ok "pprof" pprof record -F 499 -d 30 -o "$TMP/spin.pb.gz" -- /usr/bin/python3.11 "$PY/chain.py" spin 1
	go tool pprof -raw "$TMP/spin.pb.gz" >"$TMP/spin.raw" 2>/dev/null
	ok "pprof: function c at chain.py:18 or 19 (go tool pprof -raw)" \
		grep -qE "^ +[0-9]+: 0x[0-9a-f]+ c .*/chain\.py:${SPIN_LINES} s=0" "$TMP/spin.raw"
	ok "pprof: b at chain.py:24, a at chain.py:28" sh -c "grep -qE ' b .*/chain\.py:24 s=0' '$TMP/spin.raw' && grep -qE ' a .*/chain\.py:28 s=0' '$TMP/spin.raw'"
else
	skip "pprof lines" "no go here (golang-go) to read the profile"
fi

# --python off: the same program, no Python frames (the checks above can fail).
ap_ok "--python off" off record --python off -F 499 -d 30 -o "$TMP/off.folded" -- /usr/bin/python3.11 "$PY/chain.py" spin 1
is "--python off: no Python frames" "$(stack_weight "$TMP/off.folded" '_\(chain\.py:')" 0

# A wrong offsets table (the test hook moves co_name) is refused at attach, never walked.
APERTURE_TEST_PYTHON_BAD_TABLE=1 ap_ok "wrong table" bad record -F 499 -d 30 -o "$TMP/bad.folded" -- /usr/bin/python3.11 "$PY/chain.py" spin 1
ok "a wrong table is refused in a line" grep -qE 'python: pid [0-9]+: .*offsets table is wrong for this binary \(PyCodeObject.co_name is at 120 in the binary, 128 in the table\): not walked' "$TMP/bad.err"
is "a wrong table: no Python frames" "$(stack_weight "$TMP/bad.folded" '_\(chain\.py:')" 0

# Where the kernel cannot walk DWARF (forced here), doctor says so and Python programs keep native frames.
ok "doctor: python_frames yes here" grep -q '"python_frames": {"ok": true' "$TMP/doctor.json"
APERTURE_DISABLE_FEATURES=dwarf_unwind "$APERTURE" doctor --json >"$TMP/nodwarf.json" 2>/dev/null
ok "doctor: python_frames no without dwarf_unwind" grep -q '"python_frames": {"ok": false' "$TMP/nodwarf.json"
APERTURE_DISABLE_FEATURES=dwarf_unwind ap_ok "no dwarf" nodwarf record -F 499 -d 30 -o "$TMP/nodwarf.folded" -- /usr/bin/python3.11 "$PY/chain.py" spin 1
is "without dwarf_unwind: no Python frames" "$(stack_weight "$TMP/nodwarf.folded" '_\(chain\.py:')" 0

# A process that is not Python: untouched (no Python frames, nothing walked).
ap_ok "not python" notpy record -F 499 -d 30 -o "$TMP/notpy.folded" -- dd if=/dev/zero of=/dev/null bs=1M count=3000
ok "not python: no Python frames counted" sh -c "! grep -q 'python frames' '$TMP/notpy.err'"
ok "not python: no process walked" grep -q 'python: 0 processes walked' "$TMP/notpy.err"

done_testing
