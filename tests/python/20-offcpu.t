#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CPython frames off-CPU: a thread blocked in time.sleep inside d() shows d
# with its sleep time (measured by the script around each sleep) within 5%
# (3.8's time.sleep blocks in select, later ones in clock_nanosleep).
. "$(dirname "$0")/../lib.sh"
require_root
require_aperture
have_feature dwarf_unwind || skip_all "no DWARF unwinding here (CPython frames need it): $(feature_why dwarf_unwind)"
PY="$(cd "$(dirname "$0")/../workloads/python" && pwd)"

for py in /usr/bin/python3.11 /root/.pyenv/versions/3.12.*/bin/python3 /root/.pyenv/versions/3.8.*/bin/python3; do
	[ -x "$py" ] || { skip "$py" "absent"; continue; }
	n=$((${n:-0} + 1))
	ap_ok "$py --offcpu" off$n record --offcpu -d 30 -o "$TMP/off$n.folded" -- "$py" "$PY/sleeper.py" 2 "$TMP/off$n.result"
	slept=$(kv "$TMP/off$n.result" slept_ns)
	got=$(stack_weight "$TMP/off$n.folded" ';d_\(sleeper\.py:[0-9]+\)(;|$)')
	is_within "$py: off-CPU ns under d() within 5% of the time it slept" "${slept:-0}" "$got" "$((${slept:-0} / 20))"
	ge "$py: d() called from main() from <module>" \
		"$(stack_weight "$TMP/off$n.folded" '<module>_\(sleeper\.py:[0-9]+\);(.*;)?main_\(sleeper\.py:[0-9]+\);(.*;)?d_\(sleeper\.py:[0-9]+\);')" \
		"$((${slept:-0} * 95 / 100))"
done

done_testing
