#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A fake SkyWalking OAP: the eBPF process and profiling services, over real gRPC.

It derives process ids the way the OAP does, hands out FIXED_TIME profiling
tasks for processes of a given name once they are reported, and records every
call (method, authentication metadata, decoded request) as one JSON object per
line in --out (appended, so a restarted server keeps one record).

Also serves /aperture.test.Wire/* raw-bytes methods for wire-level tests.
Run with /usr/bin/python3 (Debian's grpcio and protobuf).
"""
import argparse
import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "proto")
PROTOS = ["common/Common.proto", "common/Command.proto",
          "ebpf/profiling/Profile.proto", "ebpf/profiling/Process.proto"]


def load_protos():
    out = tempfile.mkdtemp(prefix="fake-oap-pb.")
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out] + PROTOS, check=True)
    sys.path.insert(0, out)
    from common import Command_pb2, Common_pb2
    from ebpf.profiling import Process_pb2, Profile_pb2
    return Common_pb2, Command_pb2, Process_pb2, Profile_pb2


Common_pb2, Command_pb2, Process_pb2, Profile_pb2 = load_protos()
from google.protobuf.json_format import MessageToDict  # noqa: E402


def b64(s):
    return base64.b64encode(s.encode()).decode()


def oap_ids(service, instance, process):
    """IDManager.ServiceID/ServiceInstanceID/ProcessID as the OAP builds them (normal service)."""
    service_id = b64(service) + ".1"
    instance_id = service_id + "_" + b64(instance)
    process_id = hashlib.sha256((process + "_" + instance_id).encode()).hexdigest()
    return service_id, instance_id, process_id


def now_ms():
    return int(time.time() * 1000)


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.out = open(args.out, "a", buffering=1)
        self.process_ids = {}          # processName -> set of ids
        self.tasks = []                # dicts
        self.task_specs = [self.parse_task(s) for s in args.task]
        self.last_update = 0
        self.calls = 0
        self.streams = 0
        for spec in self.task_specs:
            if spec["process"].startswith("ghost"):
                self.create_task(spec, ["%064x" % 0xdead])

    @staticmethod
    def parse_task(spec):
        kind, duration, process = (spec.split(":") + ["", ""])[:3]
        return {"kind": kind, "duration": int(duration), "process": process, "created": False}

    def next_update_time(self):
        t = max(now_ms(), self.last_update + 1)
        self.last_update = t
        return t

    def create_task(self, spec, ids):
        spec["created"] = True
        t = self.next_update_time()
        self.tasks.append({
            "TaskId": "task-%s-%d" % (spec["kind"].lower(), len(self.tasks) + 1),
            "ProcessId": ",".join(sorted(ids)),
            "TaskUpdateTime": str(t),
            "TriggerType": "FIXED_TIME",
            "TargetType": spec["kind"],
            "TaskStartTime": str(t + self.args.task_delay_ms),
            "ExtensionConfigJSON": "null",
            "FixedTriggerDuration": str(spec["duration"]),
            "SerialNumber": "serial-%d" % (len(self.tasks) + 1),
        })
        self.record({"event": "task", "task": self.tasks[-1]})

    def record(self, obj):
        obj.setdefault("t", now_ms())
        with self.lock:
            self.out.write(json.dumps(obj, sort_keys=True) + "\n")

    def check(self, context, method, request_dict):
        md = dict(context.invocation_metadata())
        auth = md.get("authentication")
        self.calls += 1
        self.record({"method": method, "auth": auth, "req": request_dict})
        if self.args.token and auth != self.args.token:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "bad authentication token")


def to_dict(msg):
    return MessageToDict(msg, preserving_proto_field_name=True, including_default_value_fields=False)


def make_handlers(state):
    def report_processes(req, context):
        state.check(context, "reportProcesses", to_dict(req))
        reply = Process_pb2.EBPFReportProcessDownstream()
        with state.lock:
            for p in req.processes:
                if not p.HasField("hostProcess"):
                    continue
                h = p.hostProcess
                e = h.entity
                if e.layer not in ("OS_LINUX", "K8S", "GENERAL"):
                    context.abort(grpc.StatusCode.INTERNAL, "unknown layer " + e.layer)
                _, _, pid_ = oap_ids(e.serviceName, e.instanceName, e.processName)
                state.process_ids.setdefault(e.processName, set()).add(pid_)
                d = reply.processes.add()
                d.processId = pid_
                d.hostProcess.pid = h.pid
                d.hostProcess.entityMetadata.CopyFrom(e)
        with state.lock:
            for spec in state.task_specs:
                ids = state.process_ids.get(spec["process"])
                if ids and not spec["created"]:
                    state.create_task(spec, ids)
        return reply

    def keep_alive(req, context):
        state.check(context, "keepAlive", to_dict(req))
        return Command_pb2.Commands()

    def query_tasks(req, context):
        state.check(context, "queryTasks", to_dict(req))
        reply = Command_pb2.Commands()
        with state.lock:
            for t in state.tasks:
                if int(t["TaskUpdateTime"]) > req.latestUpdateTime:
                    c = reply.commands.add()
                    c.command = "EBPFProfilingTaskQuery"
                    for k, v in t.items():
                        a = c.args.add()
                        a.key, a.value = k, v
        return reply

    def collect(req_iter, context):
        md = dict(context.invocation_metadata())
        msgs = [to_dict(m) for m in req_iter]
        with state.lock:
            state.streams += 1
            fail = state.args.fail_code and state.streams <= state.args.fail_first
        if state.args.token and md.get("authentication") != state.args.token:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "bad authentication token")
        if fail:
            # Rejected: recorded apart, so that what the OAP accepted stays countable.
            state.record({"method": "rejectedProfilingData", "messages": msgs})
            context.abort(getattr(grpc.StatusCode, state.args.fail_code), "injected failure")
        state.record({"method": "collectProfilingData", "auth": md.get("authentication"),
                      "messages": msgs})
        return Command_pb2.Commands()

    ser = lambda m: m.SerializeToString()  # noqa: E731
    process = grpc.method_handlers_generic_handler("skywalking.v3.EBPFProcessService", {
        "reportProcesses": grpc.unary_unary_rpc_method_handler(
            report_processes, Process_pb2.EBPFProcessReportList.FromString, ser),
        "keepAlive": grpc.unary_unary_rpc_method_handler(
            keep_alive, Process_pb2.EBPFProcessPingPkgList.FromString, ser),
    })
    profiling = grpc.method_handlers_generic_handler("skywalking.v3.EBPFProfilingService", {
        "queryTasks": grpc.unary_unary_rpc_method_handler(
            query_tasks, Profile_pb2.EBPFProfilingTaskQuery.FromString, ser),
        "collectProfilingData": grpc.stream_unary_rpc_method_handler(
            collect, Profile_pb2.EBPFProfilingData.FromString, ser),
    })
    return [process, profiling, wire_handlers(state)]


def wire_handlers(state):
    """Raw-bytes methods for the wire tests (requests and replies are opaque bytes)."""
    def echo(req, context):
        md = dict(context.invocation_metadata())
        state.record({"method": "Echo", "auth": md.get("authentication"), "len": len(req),
                      "timeout": context.time_remaining()})
        return req

    def sleep(req, context):
        time.sleep(int(req or b"0") / 1000.0)
        return b"slept"

    def fail(req, context):
        code, _, message = req.decode().partition(":")
        context.abort(getattr(grpc.StatusCode, code), message)

    def concat(req_iter, context):
        parts = list(req_iter)
        state.record({"method": "Concat", "n": len(parts)})
        return b"".join(parts)

    ident = lambda b: b  # noqa: E731
    return grpc.method_handlers_generic_handler("aperture.test.Wire", {
        "Echo": grpc.unary_unary_rpc_method_handler(echo, ident, ident),
        "Sleep": grpc.unary_unary_rpc_method_handler(sleep, ident, ident),
        "Fail": grpc.unary_unary_rpc_method_handler(fail, ident, ident),
        "Concat": grpc.stream_unary_rpc_method_handler(concat, ident, ident),
    })


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True, help="JSON lines record, appended")
    ap.add_argument("--token", help="require this authentication metadata")
    ap.add_argument("--task", action="append", default=[],
                    help="KIND:SECONDS:PROCESSNAME, handed out once PROCESSNAME is reported "
                         "(PROCESSNAME ghost*: a task for a process nobody reported)")
    ap.add_argument("--task-delay-ms", type=int, default=0)
    ap.add_argument("--fail-first", type=int, default=0, help="fail the first N collectProfilingData streams")
    ap.add_argument("--fail-code", default="", help="with --fail-first, e.g. UNAVAILABLE")
    args = ap.parse_args()

    state = State(args)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                         options=[("grpc.max_receive_message_length", 50 << 20)])
    for h in make_handlers(state):
        server.add_generic_rpc_handlers((h,))
    server.add_insecure_port("127.0.0.1:%d" % args.port)
    server.start()
    state.record({"event": "started", "port": args.port})
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    stop.wait()
    server.stop(0.5).wait()   # GOAWAY to connected clients
    state.record({"event": "stopped"})


if __name__ == "__main__":
    main()
