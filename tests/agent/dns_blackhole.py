#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A DNS server that never answers: takes UDP queries on 127.0.0.1:53 and drops them.

Run inside its own network namespace (unshare -n); prints "ready" once bound
and exits by itself after a minute, so that it cannot outlive a killed test.
"""
import socket
import time

end = time.monotonic() + 60
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while time.monotonic() < end:
    s.settimeout(max(end - time.monotonic(), 0.01))
    try:
        s.recvfrom(4096)
    except socket.timeout:
        pass
