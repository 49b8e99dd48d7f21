#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# glob_match() (user/lib/globmatch.c), which --exe-pattern uses in place of
# glibc's fnmatch() (for size): the cases people write, and a million random
# patterns against fnmatch(pat, s, 0) itself.
. "$(dirname "$0")/../lib.sh"

GT="$WL/globmatch_test"
[ -x "$GT" ] || { plan 1; fail "globmatch_test is built (make -C tests)"; done_testing; }

m() { is "'$1' vs '$2'" "$("$GT" "$1" "$2")" "$3"; }
m '*/nginx' /usr/sbin/nginx 1
m '*/nginx' /usr/sbin/nginx-debug 0
m 'nginx*' nginx-debug 1
m 'java' java 1
m 'jav?' java 1
m '*' '' 1
m '' '' 1
m '' x 0
m 'python3.[0-9]*' python3.11 1
m 'python3.[!0-9]' python3.x 1
m '[[:upper:]]*' Xorg 1
m '[[:bogus:]]*' Xorg 0
m '\*' '*' 1
m '\*' x 0
m 'a\' 'a\' 0
m '[ab' '[ab' 1
m '*.[ch]' main.c 1
m '*/bin/*' /usr/bin/env 1
m 'a*b*c' aXbYc 1
m 'a*b*c' aXbYcd 0
m '[]]' ']' 1
m '[a-]' - 1
for seed in 1 2 3 4; do
	is "random seed $seed: patterns where fnmatch differs" "$("$GT" random "$seed" 250000 | tail -1)" 0
done
done_testing
