# Four threads, each in its own function (f0..f3) until its own deadline
# (0.75 s apart): f0-f2 spin in Python under the GIL, f3 hashes a 1 MiB
# buffer (sha256 releases the GIL: it runs beside the holder); writes each
# thread's CPU time (time.thread_time_ns) as cpu_fN=NS to argv[2].
import hashlib
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
cpu = {}


def spin(name, until):
    n = 0
    while time.time() < until:
        n += 1
    cpu[name] = time.thread_time_ns()


def f0(until):
    spin("f0", until)


def f1(until):
    spin("f1", until)


def f2(until):
    spin("f2", until)


def f3(until):
    buf = b"x" * (1 << 20)
    while time.time() < until:
        hashlib.sha256(buf).digest()
    cpu["f3"] = time.thread_time_ns()


def main():
    start = time.time()
    funcs = [f0, f1, f2, f3]
    threads = [threading.Thread(target=f, args=(start + SECONDS * (i + 1) / 4,)) for i, f in enumerate(funcs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(sys.argv[2], "w") as out:
        for name in sorted(cpu):
            out.write("cpu_%s=%d\n" % (name, cpu[name]))


main()
