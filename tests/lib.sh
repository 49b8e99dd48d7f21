# SPDX-License-Identifier: GPL-2.0
# TAP helpers for aperture's tests.  Source it from a tests/**/*.t bash script:
#   . "$(dirname "$0")/../lib.sh"   (or ./lib.sh from tests/)
#   plan 3; ok "name" test -f x; is_within "share" 50 48.7 5; done_testing
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
APERTURE="$TOP/aperture"
WL="$TOP/tests/build"			# built workloads and test binaries
TMP=$(mktemp -d /tmp/aperture-test.XXXXXX)
_n=0; _failed=0; _bg_pids=()

plan() { echo "1..$1"; }
diag() { printf '# %s\n' "$*"; }
pass() { _n=$((_n+1)); echo "ok $_n - $1"; }
fail() { _n=$((_n+1)); _failed=$((_failed+1)); echo "not ok $_n - $1"; shift; [ $# -gt 0 ] && diag "$@"; return 0; }
# ok NAME CMD...: passes when CMD exits 0
ok() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi; }
# is NAME GOT WANT
is() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got '$2', want '$3'"; fi; }
# is_within NAME WANT GOT TOLERANCE: |GOT - WANT| <= TOLERANCE (numbers, may be fractional)
is_within() {
	if awk -v w="$2" -v g="$3" -v t="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g != "" && d <= t) }'; then
		pass "$1 ($3, want $2 +- $4)"
	else
		fail "$1" "got '$3', want $2 +- $4"
	fi
}
# ge NAME GOT MIN
ge() { if awk -v g="$2" -v m="$3" 'BEGIN { exit !(g != "" && g >= m) }'; then pass "$1 ($2 >= $3)"; else fail "$1" "got '$2', want >= $3"; fi; }
done_testing() { echo "1..$_n"; exit $(( _failed > 0 )); }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# bg CMD...: starts CMD in the background, killed at exit; sets BG_PID
bg() { "$@" & BG_PID=$!; _bg_pids+=("$BG_PID"); }
_cleanup() {
	local p
	for p in "${_bg_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap _cleanup EXIT

require_root() { [ "$(id -u)" = 0 ] || skip_all "needs root"; }

# leaf_share FOLDED FUNC: percent of total weight whose leaf frame is FUNC
leaf_share() {
	awk -v f="$2" '{ w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";"); tot += w; if (fr[n] == f) hit += w }
		END { if (tot == 0) print 0; else printf "%.2f\n", 100 * hit / tot }' "$1"
}
# frame_weight FOLDED FUNC: total weight of stacks containing FUNC anywhere
frame_weight() {
	awk -v f="$2" '{ w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";"); for (i = 1; i <= n; i++) if (fr[i] == f) { hit += w; break } }
		END { print hit + 0 }' "$1"
}
