#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The whole test suite with build/asan/aperture (AddressSanitizer, UBSan, LeakSanitizer) in place of
# aperture: `make test-asan`.  Fails when a test fails or when a sanitizer reported anything.
#
# Reports go to files (log_path), not only to stderr: many tests run aperture in the background,
# kill it or read only its output files, and would never see a report on its stderr or its exit
# status.  Every sanitized process that found an error leaves one file, read at the end.
# LeakSanitizer is on: it runs at exit (the daemon's SIGTERM path included), stops the threads
# with ptrace of its own process, which root and the capability tests allow.  Known leaks in
# the libraries, if any, are listed with a reason in tools/lsan.supp.
# usage: tools/test-asan.sh [prove arguments; default: -r tests/]
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
[ -x build/asan/aperture ] || { echo "test-asan: build it first (make aperture-asan)" >&2; exit 1; }

REPORTS=$(mktemp -d /tmp/aperture-asan-reports.XXXXXX)
export APERTURE_BIN=$TOP/build/asan/aperture APERTURE_SANITIZED=1
# exitcode: a sanitizer's exit status that no test expects from aperture (it exits 0, 1 or 2)
export ASAN_OPTIONS="halt_on_error=1:exitcode=86:detect_leaks=1:log_path=$REPORTS/asan:log_exe_name=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$REPORTS/ubsan:log_exe_name=1"
export LSAN_OPTIONS="suppressions=$TOP/tools/lsan.supp:print_suppressions=0"

[ $# -gt 0 ] || set -- -r tests/
rc=0
prove --exec bash "$@" || rc=1

# A report file per process that found an error (LSan's, ASan's and UBSan's).
reports=$(find "$REPORTS" -type f | sort)
if [ -n "$reports" ]; then
	echo "test-asan: $(echo "$reports" | wc -l) sanitizer report(s):"
	for f in $reports; do echo "=== $f"; head -60 "$f"; done
	echo "test-asan: the reports are kept in $REPORTS"
	exit 1
fi
echo "test-asan: no sanitizer reports"
rm -rf "$REPORTS"
exit $rc
