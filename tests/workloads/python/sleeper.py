# d() sleeps in time.sleep 20 times 0.1 s (or as many as fit in argv[1] s),
# after a first short sleep (an off-CPU profiler first hears of the process
# at its first switch) and 1 s of warm-up (its unwind tables are built
# meanwhile); writes slept_ns (measured around each sleep) to argv[2].
# With argv[3], the warm-up goes on until that file exists (at most 60 s):
# the test creates it once the profiler says the tables are built, which a
# loaded machine can take more than 1 s to do.
import os
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
GO = sys.argv[3] if len(sys.argv) > 3 else None
slept = 0


def d(n):
    global slept
    for _ in range(n):
        t0 = time.monotonic_ns()
        time.sleep(0.1)
        slept += time.monotonic_ns() - t0


def main():
    time.sleep(0.05)
    warm = time.time() + 1.0
    limit = time.time() + 60.0
    while time.time() < warm or (GO and not os.path.exists(GO) and time.time() < limit):
        pass
    d(int(SECONDS / 0.1))
    with open(sys.argv[2], "w") as out:
        out.write("slept_ns=%d\n" % slept)


main()
