#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Writes a C table of syscall names indexed by number, from the kernel
# headers' unistd_64.h (never typed by hand): gen-syscall-names.sh UNISTD_H > OUT.h
set -euo pipefail
header=${1:?usage: gen-syscall-names.sh path/to/asm/unistd_64.h}
echo "/* Generated from $header by tools/gen-syscall-names.sh: do not edit. */"
echo "static const char *const syscall_names[] = {"
awk '$1 == "#define" && $2 ~ /^__NR_/ && $3 ~ /^[0-9]+$/ { sub(/^__NR_/, "", $2); printf "\t[%d] = \"%s\",\n", $3, $2 }' "$header"
echo "};"
