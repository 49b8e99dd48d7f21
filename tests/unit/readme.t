#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README against the tree: its folder map is what tools/folder-map.sh prints (a file moved,
# added or without a header comment fails it), every repository path that the README or a
# source file names exists, and CI runs the README's test command.
. "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1
shopt -s globstar

# --- the folder map
map=$(tools/folder-map.sh 2>"$TMP/map.err")
rc=$?
is "tools/folder-map.sh describes every folder and file" "$rc $(cat "$TMP/map.err")" "0 "
{ read -r begin_mark; read -r end_mark; } < <(tools/folder-map.sh --markers)
block=$(awk -v b="$begin_mark" -v e="$end_mark" '$0 == e { inside = 0 } inside { print } $0 == b { inside = 1 }' README.md)
if [ -n "$block" ] && [ "$block" = "$map" ]; then
	pass "the README's folder map is tools/folder-map.sh's output"
else
	fail "the README's folder map is tools/folder-map.sh's output" \
		"$(diff <(printf '%s\n' "$block") <(printf '%s\n' "$map") | head -20)" "(tools/folder-map.sh --update rewrites it)"
fi

# --- repository paths named in the README and the sources
# A path is named where a top folder of the tree starts a word (`user/core/pin.c`, $TOP/tests/lib.sh),
# or a folder of user/ or bpf/ does (core/pin.c, lib/counts.bpf.h: found under user/ or bpf/), not
# inside another path (/usr/lib/x) or an #include <...> of a system header.  An UPPERCASE word
# stands for any name (bpf/events/X.bpf.c), {a,b} for both; a path may also be relative to the
# file's folder (tests/*.mk name tools/X.c for tests/tools/X.c).  Not checked: build outputs (*.o,
# tests/build/, bench/build/), patterns the file itself writes with a *, tools/folder-map.sh (it
# describes folders ahead of their move), this file and layers.t (it plants a user/newroom/).
# Paths of other projects named in a comment, as FILE:PATH:
FOREIGN='user/agent/agent_opts.c:bpf/profiling/offcpu.c'	# SkyWalking Rover's
TOPS='bpf|user|proto|tools|tests|bench|vmlinux|\.ci'
SUBS=$(cd user && ls -d */ ../bpf/*/ | sed 's|^\.\./bpf/||; s|/$||' | sort -u | paste -sd'|')

# named_paths: "FILE<TAB>LINE<TAB>PATH" for each path the README and the sources name
named_paths() {
	git ls-files --cached --others --exclude-standard |
		grep -v -e '^tests/fuzz/corpus/' -e '^vmlinux/vmlinux\.h$' -e '^tools/folder-map\.sh$' -e '^tests/unit/readme\.t$' -e '^tests/unit/layers\.t$' |
		grep -E '(^|/)(Makefile|[^/.]+)$|\.(md|c|h|cc|sh|t|mk|py|proto|options|service|supp|java)$' |
		while IFS= read -r f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
		xargs -0 grep -noE "(^|[^A-Za-z0-9_./\$<-])(\\\$TOP/|\\\$ROOT/|\\\$\\{TOP\\}/)?($TOPS|$SUBS)/[A-Za-z0-9_.{},*/-]*" /dev/null |
		TOPS=$TOPS awk -F: '{
			f = $1; line = $2; tok = substr($0, length(f) + length(line) + 3)
			sub(/^[^A-Za-z0-9_.$]/, "", tok); sub(/^\$(TOP|ROOT|\{TOP\})\//, "", tok); sub(/[.,]+$/, "", tok)
			if (tok ~ /\.o$/ || tok ~ /^(tests|bench)\/build(\/|$)/ || tok ~ /\*/) next
			# under a folder of user/ or bpf/: source files only (not "lib/libc.so.6" in a test string)
			if (tok !~ "^(" ENVIRON["TOPS"] ")/" && tok !~ /\.(c|h|sh|t|py)$/) next
			print f "\t" line "\t" tok
		}'
}

# exists FILE PATTERN: PATTERN names something, from the top, FILE's folder, user/ or bpf/
exists() {
	local f=$1 pat=$2 alt m base
	# UPPERCASE words (not the first letter of a Name) stand for any name
	while [[ $pat =~ (^|[^A-Za-z0-9*])([A-Z][A-Z0-9]*)([^A-Za-z0-9]|$) ]]; do
		m=${BASH_REMATCH[0]}
		pat=${pat/"$m"/"${BASH_REMATCH[1]}*${BASH_REMATCH[3]}"}
	done
	local -a alts
	set -f; eval "alts=( $pat )"; set +f	# brace expansion only (the pattern holds no $, `, ;)
	for alt in "${alts[@]}"; do
		for base in "" "${f%/*}/" user/ bpf/; do
			[ "$base" = "$f/" ] && continue
			if [[ $alt == *[*]* ]]; then
				m=$(compgen -G "$base$alt" | head -1)
				[ -n "$m" ] && continue 2
			elif [ -e "$base$alt" ]; then
				continue 2
			fi
		done
		return 1
	done
	return 0
}

stale=()
while IFS=$'\t' read -r f line tok; do
	[[ $'\n'"$FOREIGN"$'\n' == *$'\n'"$f:$tok"$'\n'* ]] && continue
	exists "$f" "$tok" || stale+=("$f:$line: $tok")
done < <(named_paths)
is "no path named in the README or a source file is missing (stale: ${stale[*]:-none})" "${#stale[@]}" 0

# --- the README's two commands, and CI's: the second one (the tests) is what .ci/run runs
commands=$(awk '/^## Two commands/ { on = 1 } on && /^```/ { if (inblock) exit; inblock = 1; next }
	inblock && /^make / { print $1 " " $2 }' README.md)
is "the README's first screen gives two commands: make run and make test" "$(echo $commands)" "make run make test"
test_command=$(sed -n 2p <<<"$commands")
ok ".ci/run runs the README's test command (${test_command:-none})" grep -qE "^${test_command:-none}( |$)" .ci/run
done_testing
