#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the seed corpora: real OAP answers, encoded with protobuf from the
fake OAP's commands (tests/oap/fake_oap.py), and for fuzz_grpc the same
answers as a server's HTTP/2 bytes (SETTINGS, response HEADERS, DATA, trailers;
HPACK literals), plus a reset stream and a GOAWAY.
  make_seeds.py DIR    (writes DIR/commands/* and DIR/grpc/*)"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oap"))
import fake_oap  # noqa: E402

Command_pb2, Process_pb2 = fake_oap.Command_pb2, fake_oap.Process_pb2


def task_commands(n):
    reply = Command_pb2.Commands()
    task = {"logical_id": "4f1c" * 16, "last_update_time": 1796086416391, "trigger": "FIXED_TIME",
            "target": "ON_CPU", "start_time": 1796086416391, "duration": 60}
    for i in range(n):
        c = reply.commands.add()
        c.command = "EBPFProfilingTaskQuery"
        for k, v in fake_oap.State.command(task, ["%064x" % i]):
            a = c.args.add()
            a.key, a.value = k, v
    return reply.SerializeToString()


def downstream():
    reply = Process_pb2.EBPFReportProcessDownstream()
    for pid, inst, name in ((1, "i", "p"), (2, "j", "q")):
        d = reply.processes.add()
        d.processId = "ab" * 32
        d.hostProcess.pid = pid
        d.hostProcess.entityMetadata.serviceName = "svc"
        d.hostProcess.entityMetadata.instanceName = inst
        d.hostProcess.entityMetadata.processName = name
    return reply.SerializeToString()


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack(headers):
    out = b""
    for k, v in headers:
        out += b"\x00" + bytes([len(k)]) + k.encode() + bytes([len(v)]) + v.encode()
    return out


def response(message, status="0", content_type="application/grpc"):
    settings = frame(4, 0, 0, b"") + frame(4, 1, 0, b"")
    head = frame(1, 4, 1, hpack([(":status", "200"), ("content-type", content_type)]))
    data = frame(0, 0, 1, b"\x00" + struct.pack(">I", len(message)) + message)
    trailers = frame(1, 5, 1, hpack([("grpc-status", status), ("grpc-message", "a%20b")]))
    return settings + head + data + trailers


def main():
    top = sys.argv[1]
    for sub in ("commands", "grpc"):
        os.makedirs(os.path.join(top, sub), exist_ok=True)
    seeds = {"tasks1": task_commands(1), "tasks3": task_commands(3), "empty": b"",
             "downstream": downstream()}
    for name, body in seeds.items():
        open(os.path.join(top, "commands", name), "wb").write(body)
        open(os.path.join(top, "grpc", name), "wb").write(response(body))
    settings = frame(4, 0, 0, b"")
    open(os.path.join(top, "grpc", "status14"), "wb").write(response(b"", "14"))
    open(os.path.join(top, "grpc", "html"), "wb").write(response(b"<html>", "0", "text/html"))
    open(os.path.join(top, "grpc", "rst"), "wb").write(settings + frame(3, 0, 1, struct.pack(">I", 2)))
    open(os.path.join(top, "grpc", "goaway"), "wb").write(settings + frame(7, 0, 0, struct.pack(">II", 0, 0)))


if __name__ == "__main__":
    main()
