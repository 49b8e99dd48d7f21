#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The TAP helpers themselves (tests/lib.sh): a check that compares numbers must
# fail, saying so, when what it got is not a number ("None", "-" or nothing from
# a summary that saw no data), never compare it as a string or read it as 0.
. "$(dirname "$0")/../lib.sh"

# verdict CHECK ARGS...: "ok" or "not ok", as the helper printed it in a test file of its own
verdict() { (_n=0; _failed=0; "$@") 2>&1 | sed -n 's/^\(ok\|not ok\) 1 - .*/\1/p'; }
# diagnostic CHECK ARGS...: the helper's diagnostic line
diagnostic() { (_n=0; _failed=0; "$@") 2>&1 | sed -n 's/^# //p'; }

is "ge: 10 >= 9 (numbers, not strings)" "$(verdict ge x 10 9)" ok
is "ge: 1.2e+13 >= 5 (awk's big numbers)" "$(verdict ge x 1.2e+13 5)" ok
is "ge: 1 < 2 fails" "$(verdict ge x 1 2)" "not ok"
is "ge: None is not >= 50" "$(verdict ge x None 50)" "not ok"
is "ge: - is not >= 0" "$(verdict ge x - 0)" "not ok"
is "ge: nothing is not >= 0" "$(verdict ge x '' 0)" "not ok"
is "ge: a minimum that is not a number fails" "$(verdict ge x 5 abc)" "not ok"
is "ge: the diagnostic names what is not a number" "$(diagnostic ge x None 50)" "not a number: got='None'"
is "is_within: 1200 is 1000 +- 300" "$(verdict is_within x 1000 1200 300)" ok
is "is_within: -4.5 is -5 +- 1" "$(verdict is_within x -5 -4.5 1)" ok
is "is_within: 1400 is not 1000 +- 300" "$(verdict is_within x 1000 1400 300)" "not ok"
is "is_within: - is not 0 (1000 +- 1500)" "$(verdict is_within x 1000 - 1500)" "not ok"
is "is_within: None is not a number" "$(verdict is_within x 70 None 10)" "not ok"
is "is_within: a tolerance that is not a number fails" "$(verdict is_within x 1000 1200 x)" "not ok"
is "is_within: the diagnostic names what is not a number" "$(diagnostic is_within x 1000 - 1500)" "not a number: got='-'"
# The EXIT trap is the test's own: a subshell killed right after its fork (a watchdog stopped at
# once, as tests/agent/85-faults.t's stop_agent does) must not run it (it deleted $TMP under the test).
for i in $(seq 100); do (sleep 8) & w=$!; kill "$w"; done
wait 2>/dev/null
ok "\$TMP survives 100 subshells killed right after their fork" test -d "$TMP"
done_testing
