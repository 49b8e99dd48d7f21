#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A minimal SkyWalking OAP over TLS, on real gRPC (grpcio's BoringSSL).

Serves the four eBPF methods the agent calls, just enough for it to register
and keep alive (no tasks), and appends one line per call to --out:
`METHOD CLIENT_CN` (CLIENT_CN is - without a client certificate).  With
--client-ca it requires a client certificate signed by that CA (mutual TLS).
Run with /usr/bin/python3 (Debian's grpcio and protobuf).
"""
import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "proto")
PROTOS = ["common/Common.proto", "common/Command.proto",
          "ebpf/profiling/Profile.proto", "ebpf/profiling/Process.proto"]


def load_protos():
    out = tempfile.mkdtemp(prefix="tls-oap-pb.")
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out] + PROTOS, check=True)
    sys.path.insert(0, out)
    from common import Command_pb2
    from ebpf.profiling import Process_pb2, Profile_pb2
    return Command_pb2, Process_pb2, Profile_pb2


Command_pb2, Process_pb2, Profile_pb2 = load_protos()


class Recorder:
    def __init__(self, path):
        self.lock = threading.Lock()
        self.out = open(path, "a", buffering=1)

    def call(self, method, context):
        cn = context.auth_context().get("x509_common_name", [b"-"])[0].decode()
        with self.lock:
            self.out.write("%s %s\n" % (method, cn))


def handlers(rec):
    def report_processes(req, context):
        rec.call("reportProcesses", context)
        reply = Process_pb2.EBPFReportProcessDownstream()
        for p in req.processes:
            if not p.HasField("hostProcess"):
                continue
            e = p.hostProcess.entity
            d = reply.processes.add()
            d.processId = hashlib.sha256((e.processName + "_" + e.instanceName).encode()).hexdigest()
            d.hostProcess.pid = p.hostProcess.pid
            d.hostProcess.entityMetadata.CopyFrom(e)
        return reply

    def keep_alive(req, context):
        rec.call("keepAlive", context)
        return Command_pb2.Commands()

    def query_tasks(req, context):
        rec.call("queryTasks", context)
        return Command_pb2.Commands()

    def collect(req_iter, context):
        for _ in req_iter:
            pass
        rec.call("collectProfilingData", context)
        return Command_pb2.Commands()

    ser = lambda m: m.SerializeToString()  # noqa: E731
    return [
        grpc.method_handlers_generic_handler("skywalking.v3.EBPFProcessService", {
            "reportProcesses": grpc.unary_unary_rpc_method_handler(
                report_processes, Process_pb2.EBPFProcessReportList.FromString, ser),
            "keepAlive": grpc.unary_unary_rpc_method_handler(
                keep_alive, Process_pb2.EBPFProcessPingPkgList.FromString, ser),
        }),
        grpc.method_handlers_generic_handler("skywalking.v3.EBPFProfilingService", {
            "queryTasks": grpc.unary_unary_rpc_method_handler(
                query_tasks, Profile_pb2.EBPFProfilingTaskQuery.FromString, ser),
            "collectProfilingData": grpc.stream_unary_rpc_method_handler(
                collect, Profile_pb2.EBPFProfilingData.FromString, ser),
        }),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cert", required=True, help="server certificate chain, PEM")
    ap.add_argument("--key", required=True, help="its private key, PEM")
    ap.add_argument("--client-ca", help="require client certificates signed by this CA")
    args = ap.parse_args()

    read = lambda p: open(p, "rb").read()  # noqa: E731
    creds = grpc.ssl_server_credentials(
        [(read(args.key), read(args.cert))],
        root_certificates=read(args.client_ca) if args.client_ca else None,
        require_client_auth=bool(args.client_ca))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers(handlers(Recorder(args.out)))
    if server.add_secure_port("127.0.0.1:%d" % args.port, creds) == 0:
        sys.exit("tls_oap: cannot listen on port %d" % args.port)
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(1).wait()


if __name__ == "__main__":
    main()
