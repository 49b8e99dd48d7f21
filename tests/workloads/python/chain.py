# A known chain main -> a -> b -> c; c spins in pure Python (spin) or hashes a big
# buffer in C (sha), for argv[2] seconds (of CPU: see main); prints the iterations (bench/python.sh).
import hashlib
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "spin"
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
BUF = b"x" * (1 << 20)


def c(until):
    n = 0
    if MODE == "sha":
        while time.time() < until:
            hashlib.sha256(BUF).digest()
        return n
    while time.time() < until:
        n += 1  # SPIN-LINE
    return n


def b(until):
    return c(until)


def a(until):
    return b(until)


def main():
    # argv[3] "cpu": the run lasts argv[2] seconds of this process's CPU time, in calls of
    # a(), b() and c() of at most 50 ms each (the loops read the cheap wall clock), so that
    # a busy machine does not shorten it next to the interpreter's start and exit.
    if len(sys.argv) > 3 and sys.argv[3] == "cpu":
        n, end = 0, time.process_time() + SECONDS
        while time.process_time() < end:
            n += a(time.time() + min(0.05, end - time.process_time()))
    else:
        n = a(time.time() + SECONDS)
    print("iterations=%d" % n)


main()
