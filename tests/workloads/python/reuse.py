# Code objects freed and others allocated at their addresses, over and over:
# each of argv[1] cycles makes fN (by exec: its own name, its own first line),
# spins in it for argv[2] iterations (the same CPU time each, whatever the
# machine's load) and deletes it, after 2 s for a profiler to attach; CPython's allocator puts the next
# code object where the last one was (same size class, freed last).  Counts
# how many cycles reused the previous address into argv[3] (reused=N), then
# sleeps so that a profiler names the frames while the process lives.
import gc
import sys
import time

CYCLES = int(sys.argv[1])
SPIN = int(sys.argv[2])


def make(i):
    src = "\n" * (10 * i) + "def f%d(n):\n    for _ in range(n):\n        pass\n" % i
    ns = {"time": time}
    exec(compile(src, "reuse_gen.py", "exec"), ns)
    return ns["f%d" % i]


time.sleep(2)	# the profiler attaches meanwhile
reused, last = 0, None
for i in range(CYCLES):
    fn = make(i)
    reused += id(fn.__code__) == last
    last = id(fn.__code__)
    fn(SPIN)
    del fn
    gc.collect()
with open(sys.argv[3], "w") as out:
    out.write("reused=%d\n" % reused)
time.sleep(30)
