# SPDX-License-Identifier: GPL-2.0
# Unwinding benchmark workload for Debian's /usr/bin/python3 (built without
# frame pointers): a loop of small Python calls for SECONDS, then the
# iterations per second and per CPU-second of this process, in cpuwork's
# format.  usage: /usr/bin/python3 bench/pyloop.py SECONDS
import sys
import time


def leaf(i):
    return (i * 2654435761) & 0xFFFFFFFF


def middle(i):
    return leaf(i) ^ leaf(i + 1)


def outer(n):
    h = 0
    for i in range(n):
        h ^= middle(i)
    return h


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    ops = 0
    sink = 0
    t0 = time.monotonic()
    c0 = time.process_time()
    end = t0 + seconds
    while time.monotonic() < end:
        sink ^= outer(2000)
        ops += 2000
    elapsed = time.monotonic() - t0
    cpu = time.process_time() - c0
    print("ops_per_sec %.0f ops_per_cpu_sec %.0f elapsed %.3f sink %x"
          % (ops / elapsed, ops / cpu if cpu > 0 else 0, elapsed, sink & 0xF))


main()
