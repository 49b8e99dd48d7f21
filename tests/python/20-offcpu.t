#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CPython frames off-CPU: a thread blocked in time.sleep inside d() shows d
# with its sleep time (measured by the script around each sleep) within 5%
# (3.8's time.sleep blocks in select, later ones in clock_nanosleep).
# The script spins until the test has read "frames walked" in aperture's log
# (said once the process's unwind tables are built): on a loaded machine the
# tables of 3.8's 13 MB libpython took up to 1.2 s (measured with six busy
# loops beside it), past the script's 1 s warm-up, and the first sleeps of
# d() were walked without them ([before-unwind-tables]), which failed 8-9.
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
have_feature dwarf_unwind || skip_all "no DWARF unwinding here (CPython frames need it): $(feature_why dwarf_unwind)"
PY="$(cd "$(dirname "$0")/../workloads/python" && pwd)"

for py in /usr/bin/python3.11 /root/.pyenv/versions/3.12.*/bin/python3 /root/.pyenv/versions/3.8.*/bin/python3; do
	[ -x "$py" ] || { skip "$py" "absent"; continue; }
	n=$((${n:-0} + 1))
	bg "$APERTURE" record -v --offcpu -d 30 -o "$TMP/off$n.folded" -- "$py" "$PY/sleeper.py" 2 "$TMP/off$n.result" \
		"$TMP/go$n" >"$TMP/off$n.out" 2>"$TMP/off$n.err"
	for _ in $(seq 600); do kill -0 "$BG_PID" 2>/dev/null && ! grep -q 'CPython 3\.[0-9]*.*frames walked' "$TMP/off$n.err" || break; sleep 0.05; done
	grep -q 'frames walked' "$TMP/off$n.err" || diag "$py: no 'frames walked' in 30 s: d() may start before the tables"
	touch "$TMP/go$n"
	rc=0; wait "$BG_PID" || rc=$?
	is "$py --offcpu exits 0" "$rc" 0
	[ "$rc" = 0 ] || show_err off$n
	slept=$(kv "$TMP/off$n.result" slept_ns)
	got=$(stack_weight "$TMP/off$n.folded" ';d_\(sleeper\.py:[0-9]+\)(;|$)')
	is_within "$py: off-CPU ns under d() within 5% of the time it slept" "${slept:-0}" "$got" "$((${slept:-0} / 20))"
	ge "$py: d() called from main() from <module>" \
		"$(stack_weight "$TMP/off$n.folded" '<module>_\(sleeper\.py:[0-9]+\);(.*;)?main_\(sleeper\.py:[0-9]+\);(.*;)?d_\(sleeper\.py:[0-9]+\);')" \
		"$((${slept:-0} * 95 / 100))"
done

done_testing
