# A known chain main -> a -> b -> c; c spins in pure Python (spin) or hashes a big
# buffer in C (sha), for argv[2] seconds; prints the spin's iterations (bench/python.sh).
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
    print("iterations=%d" % a(time.time() + SECONDS))


main()
