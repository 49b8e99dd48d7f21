#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# json_parse() (user/lib/json.c), which reads the OAP's continuous profiling
# policies: the texts the OAP sends, hostile ones (deep nesting, huge counts,
# cut anywhere), and 3000 random documents and mutations of them, each
# against Python's json module: the same texts accepted (but numbers past a
# double's range, which Python reads as infinity, and lone surrogates), the same values.
. "$(dirname "$0")/../lib.sh"

JT="$WL/json_test"
[ -x "$JT" ] || { plan 1; fail "json_test is built (make -C tests)"; done_testing; }

POLICY='[{"ServiceName":"svc","UUID":"u1","Profiling":{"ON_CPU":{"PROCESS_CPU":{"Threshold":"50","Period":5,"Count":3},"HTTP_ERROR_RATE":{"Threshold":"10","Period":10,"Count":3,"URIList":["/a","/b"]}}}}]'
is "an OAP policy list reads back the same" "$(printf '%s' "$POLICY" | "$JT")" "$POLICY"
is "escapes and surrogate pairs" "$(printf '%s' '"a\"\\\/\b\n\u00e9\ud83d\ude00"' | "$JT")" '"a\"\\/\u0008\u000aé😀"'
is "nesting past 32 refused" "$(printf '%s' "$(printf '[%.0s' $(seq 40))1$(printf ']%.0s' $(seq 40))" | "$JT")" "error: nested too deep at 33"
ok "nesting of 32 read" bash -c "printf '%s' '$(printf '[%.0s' $(seq 32))1$(printf ']%.0s' $(seq 32))' | '$JT' >/dev/null"
is "over 100000 elements refused" "$(/usr/bin/python3 -c 'print("[" + ",".join(["0"] * 100001) + "]")' | "$JT" | cut -d' ' -f1-4)" "error: too many elements"
is "a lone surrogate refused" "$(printf '%s' '"\ud800x"' | "$JT" | cut -d' ' -f1-3)" "error: lone surrogate"
is "text after the value refused" "$(printf '%s' '{} {}' | "$JT" | cut -d' ' -f1-5)" "error: text after the value"

# Random documents, cut and mutated, against Python (numbers compared as floats: the
# reader keeps doubles).
out=$(/usr/bin/python3 - "$JT" <<'PY'
import json, random, subprocess, sys
jt = sys.argv[1]
rnd = random.Random(24)
def value(d):
    k = rnd.randrange(8 if d < 4 else 5)
    if k == 0: return None
    if k == 1: return rnd.random() < 0.5
    if k == 2: return rnd.randint(-10**15, 10**15)
    if k == 3: return rnd.uniform(-1e6, 1e6) * 10 ** rnd.randint(-20, 20)
    if k == 4: return "".join(rnd.choice('ab"\\/\n\t\x01é€😀 ') for _ in range(rnd.randrange(6)))
    if k in (5, 6): return [value(d + 1) for _ in range(rnd.randrange(4))]
    return {rnd.choice(["a", "B", "Threshold", "é"]): value(d + 1) for _ in range(rnd.randrange(4))}
def norm(v):
    if isinstance(v, bool) or v is None: return v
    if isinstance(v, (int, float)): return float(v)
    if isinstance(v, list): return [norm(x) for x in v]
    if isinstance(v, dict): return {k: norm(x) for k, x in v.items()}
    return v
def finite(v):
    if isinstance(v, float): return v not in (float("inf"), float("-inf"))
    if isinstance(v, list): return all(finite(x) for x in v)
    if isinstance(v, dict): return all(finite(x) and finite(k) for k, x in v.items())
    if isinstance(v, str): return not any(0xd800 <= ord(c) <= 0xdfff for c in v)
    return True
def mutate(t):
    k = rnd.randrange(3)
    if k == 0 or not t: return t[:rnd.randrange(len(t) + 1)]
    i = rnd.randrange(len(t))
    if k == 1: return t[:i] + rnd.choice('{}[],:"\\0-.eE+ tfn') + t[i + 1:]
    return t[:i] + t[i + 1:]
bad = 0
for n in range(3000):
    t = json.dumps(value(0), ensure_ascii=rnd.random() < 0.5, indent=rnd.choice([None, 1]))
    if n % 2: t = mutate(t)
    try:
        want = norm(json.loads(t))
        ok_py = finite(want)    # the reader refuses overflows and lone surrogates
    except ValueError:
        ok_py = False
    if "NaN" in t or "Infinity" in t: continue
    r = subprocess.run([jt], input=t.encode(), capture_output=True)
    ok_c = r.returncode == 0
    try:
        same = ok_c == ok_py and (not ok_c or norm(json.loads(r.stdout)) == want)
    except ValueError:
        same = False
    if not same:
        bad += 1
        if bad <= 3: print("# differs: %r -> %r" % (t, r.stdout[:200]))
print(bad)
PY
)
diag "$(echo "$out" | grep '^#')"
is "3000 random and mutated texts: same as Python's json" "$(echo "$out" | tail -1)" 0
done_testing
