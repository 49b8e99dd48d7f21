#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Checks that user/'s includes point down: each folder of user/ is a layer,
# and a file includes only headers of its own folder and of the folders
# below it in LAYERS (the one place the order is written).
#
# check-layers.sh [ROOT]   (ROOT: a tree with user/ in it; default this one)
# Prints one line per include that points up or sideways, per folder missing
# from LAYERS and per header name two folders define (the Makefile puts every
# folder on the include path, so `#include "x.h"` cannot tell them apart);
# exit 1 if there is any, 0 otherwise.  Headers not in user/ (bpf/, libraries,
# generated skeletons and protobuf code) are not layers and are not checked.
set -u

# Lowest first.  Folders on one line are siblings: neither includes the
# other.  agent and net are issue 22's split of skywalking/ (transport below
# everything that uses it, the agent above the exporters it drives).
LAYERS='
lib
net
unwind
symbolize
core
events
cli
skywalking
export
agent
cmd
'

ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT/user" 2>/dev/null || { echo "check-layers: no user/ in $ROOT" >&2; exit 2; }

# Header name -> folder, and folder -> rank.
declare -A HOME_OF RANK
bad=0
rank=0
while read -r line; do
	[ -n "$line" ] || continue
	rank=$((rank + 1))
	for dir in $line; do RANK[$dir]=$rank; done
done <<<"$LAYERS"

for dir in */; do
	dir=${dir%/}
	if [ -z "${RANK[$dir]:-}" ]; then
		echo "user/$dir/: not in the layer order (LAYERS in tools/check-layers.sh)"
		bad=1
	fi
done

for h in */*.h; do
	name=${h#*/}
	if [ -n "${HOME_OF[$name]:-}" ]; then
		echo "user/$h: $name is also user/${HOME_OF[$name]}/$name: an include by name cannot tell them apart"
		bad=1
	fi
	HOME_OF[$name]=${h%%/*}
done

for f in */*.c */*.h; do
	from=${f%%/*}
	[ -n "${RANK[$from]:-}" ] || continue
	# `#include "name.h"` lines: line number and name.
	while IFS=: read -r lineno name; do
		to=${HOME_OF[$name]:-}
		[ -n "$to" ] && [ "$to" != "$from" ] && [ -n "${RANK[$to]:-}" ] || continue
		if [ "${RANK[$to]}" -gt "${RANK[$from]}" ]; then
			echo "user/$f:$lineno: includes $name of $to/, a layer above $from/"
			bad=1
		elif [ "${RANK[$to]}" -eq "${RANK[$from]}" ]; then
			echo "user/$f:$lineno: includes $name of $to/, a sibling of $from/"
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done
exit $bad
