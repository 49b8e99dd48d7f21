#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The BPF side's folders are layers (README "How it works"): bpf/events/ above
# bpf/unwind/ above bpf/lib/, includes pointing down only; bpf/include/ holds
# what user space shares with the kernel side, and user/ includes nothing else
# of bpf/.  Reads the sources: no build, no root.
. "$(dirname "$0")/../lib.sh"
cd "$(dirname "$0")/../.." || exit 1

# includes_of FILES...: "file: name" for every #include "name"
includes_of() { grep -H '^#include "' "$@" 2>/dev/null | sed -E 's/^([^:]*):#include "([^"]*)".*/\1: \2/'; }

is "bpf/lib/ includes nothing of bpf/unwind/ or bpf/events/" \
	"$(includes_of bpf/lib/*.h | grep -E ': (unwind|events)/' | tr '\n' ' ')" ""
is "bpf/unwind/ includes nothing of bpf/events/" \
	"$(includes_of bpf/unwind/*.h | grep -E ': events/' | tr '\n' ' ')" ""
# Shared with user space: only each other (and <linux/types.h>), never a BPF-only header.
is "bpf/include/ headers include only bpf/include/ headers" \
	"$(includes_of bpf/include/*.h | while read -r f n; do [ -f "bpf/include/$n" ] || echo "$f $n"; done | tr '\n' ' ')" ""
# A name user/ includes that is a header of bpf/ outside bpf/include/ would mean a way around it.
bpf_only=$(find bpf -name '*.h' ! -path 'bpf/include/*' -printf '%f\n' | sort -u)
is "user/ includes no header of bpf/ outside bpf/include/" \
	"$(includes_of $(find user -name '*.[ch]') | while read -r f n; do
		grep -qxF "$(basename "$n")" <<<"$bpf_only" && echo "$f $n"; done | tr '\n' ' ')" ""
is "the Makefile gives user space only bpf/include/ of bpf/" \
	"$(sed -n 's/^BPF_DIRS *:= *//p' Makefile)" "bpf/include"
# The README's folder map is made of each file's first sentence.
is "every bpf/ header says its job in a comment after the SPDX line" \
	"$(for f in bpf/*/*.h; do sed -n 2p "$f" | grep -q '^/\*' || echo "$f"; done | tr '\n' ' ')" ""
done_testing
