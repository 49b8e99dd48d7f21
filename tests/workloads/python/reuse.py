# Code objects freed and others allocated at their addresses, over and over:
# each of argv[1] cycles makes fN (by exec: its own name, its own first line),
# spins in it for argv[2] iterations (the same CPU time each, whatever the
# machine's load) and deletes it, once the file argv[4] exists (a test makes it
# when its profiler walks this process: at most 60 s; 2 s without argv[4]); CPython's allocator puts the next
# code object where the last one was (same size class, freed last).  Counts
# how many cycles began (started=N) and reused the previous address (reused=N)
# into argv[3], rewritten at each cycle, and each cycle's CPU time ("fN US",
# time.thread_time around the spin) into argv[3].cpu, then sleeps so that a
# profiler names the frames while the process lives.  The CPU time is what a
# cycle's samples follow: its iterations are fixed, but their speed is not
# (the other vCPU's load, a hyperthread sibling, the host).
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


def progress(started, reused, done=0):
    """started=N: the cycles begun so far; done=1 once all ended (a test then stops its profiler)."""
    with open(sys.argv[3], "w") as out:
        out.write("started=%d reused=%d done=%d\n" % (started, reused, done))


if len(sys.argv) > 4:
    import os
    for _ in range(600):
        if os.path.exists(sys.argv[4]):
            break
        time.sleep(0.1)
else:
    time.sleep(2)	# the profiler attaches meanwhile
reused, last = 0, None
for i in range(CYCLES):
    fn = make(i)
    reused += id(fn.__code__) == last
    last = id(fn.__code__)
    progress(i + 1, reused)
    cpu0 = time.thread_time()
    fn(SPIN)
    with open(sys.argv[3] + ".cpu", "a") as out:
        out.write("f%d %d\n" % (i, (time.thread_time() - cpu0) * 1e6))
    del fn
    gc.collect()
progress(CYCLES, reused, 1)
time.sleep(60)
