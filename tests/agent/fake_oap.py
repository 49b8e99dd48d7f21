#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A fake SkyWalking OAP: the eBPF process and profiling services, over real gRPC.

It behaves the way the real OAP does, as read in apache/skywalking (commit
5839d2ad, 2026-08, and the tags v9.2.0 to v10.4.0, which do the same here):

  oap-server/server-receiver-plugin/skywalking-ebpf-receiver-plugin/.../provider/handler/
    EBPFProcessServiceHandler.java    reportProcesses: the process id, no layer check;
                                      keepAlive: Layer.valueOf(layer) (an unknown name
                                      fails the call), service meta, labels, properties
    EBPFProfilingServiceHandler.java  queryTasks: the agent's processes, its services'
                                      tasks, ONE command per process (singletonList),
                                      support_ebpf_profiling and task labels
                                      (containsAll); collectProfilingData: isFirst /
                                      hasTask, stack ids joined with "_"
  oap-server/server-core/.../core/
    profiling/ebpf/EBPFProfilingMutationService.java   createTask: a task is on a service
                                      (and labels), not on processes; duration >= 60 s
    profiling/ebpf/EBPFProfilingQueryService.java      queryPrepareCreateEBPFProfilingTaskData:
                                      the UI offers a task once the service has a stored
                                      process that supports profiling
    profiling/ebpf/storage/EBPFProfilingTaskRecord.java logicalId, combine
    profiling/ebpf/storage/EBPFProfilingDataRecord.java id = sha256(schedule, ids, upload time)
    source/EBPFProcessProfilingSchedule.java           schedule id
    analysis/manual/process/ProcessTraffic.java        combine (the first
                                      profiling_support_status stays), id
    analysis/manual/process/ProcessDispatcher.java     labels_json
    analysis/Layer.java                                the layer names
    command/CommandService.java, apm-protocol/apm-network/.../command/
    EBPFProfilingTaskCommand.java, BaseCommand.java    the command's arguments and order
  oap-server/server-storage-plugin/storage-jdbc-hikaricp-plugin/.../dao/
    JDBCEBPFProfilingTaskDAO.java     queryTasksByServices: last_update_time > latestUpdateTime
                                      (only when latestUpdateTime > 0)
    JDBCMetadataQueryDAO.java         listProcesses by agent id
  oap-server/server-starter/src/main/resources/application.yml   persistentPeriod 25 s
  Continuous profiling (commit 268002b4; protocol: skywalking-data-collect-protocol
  ebpf/profiling/Continuous.proto, commit 46f89462):
    .../ebpf/provider/handler/ContinuousProfilingServiceHandler.java  queryPolicies (the
                                      policy cache, the UUID comparison, the removed-policy
                                      entry), reportProfilingTask (the CONTINUOUS_PROFILING
                                      task record, its causes and their messages)
    .../ebpf/provider/EBPFReceiverModuleConfig.java   continuousPolicyCacheTimeout 60 s
    server-core .../core/command/CommandService.java, ContinuousProfilingPolicyCommand.java,
    ContinuousProfilingReportCommand.java             the commands' names and arguments

Processes are visible to queries (the UI's task creation, queryTasks) only
once stored, --persist-ms after the OAP first received them.  Tasks are
created the way a user would from the service's dashboard: once the service
shows a process that supports profiling.

Every call (method, authentication metadata, decoded request, and for
queryTasks the commands answered) is recorded as one JSON object per line in
--out (appended, so a restarted server keeps one record).

Also serves /aperture.test.Wire/* raw-bytes methods for wire-level tests.
Run with /usr/bin/python3 (Debian's grpcio and protobuf).
"""
import argparse
import base64
import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "proto")
PROTOS = ["common/Common.proto", "common/Command.proto",
          "ebpf/profiling/Profile.proto", "ebpf/profiling/Process.proto",
          "ebpf/profiling/Continuous.proto", "language-agent/Meter.proto"]

# Layer.java: every registered name (Layer.valueOf accepts them all).
LAYERS = set("""UNDEFINED MESH GENERAL OS_LINUX K8S FAAS MESH_CP MESH_DP DATABASE CACHE BROWSER
SO11Y_OAP SO11Y_SATELLITE MQ VIRTUAL_DATABASE VIRTUAL_MQ VIRTUAL_GATEWAY K8S_SERVICE MYSQL
VIRTUAL_CACHE POSTGRESQL APISIX AWS_EKS OS_WINDOWS AWS_S3 AWS_DYNAMODB AWS_GATEWAY REDIS
ELASTICSEARCH RABBITMQ MONGODB KAFKA PULSAR BOOKKEEPER NGINX ROCKETMQ CLICKHOUSE ACTIVEMQ
CILIUM_SERVICE SO11Y_JAVA_AGENT KONG SO11Y_GO_AGENT FLINK BANYANDB GENAI VIRTUAL_GENAI
ENVOY_AI_GATEWAY IOS WECHAT_MINI_PROGRAM ALIPAY_MINI_PROGRAM AIRFLOW""".split())

FIXED_TIME_MIN_DURATION = 60        # EBPFProfilingMutationService
NETWORK_PROFILING_DURATION = 600    # EBPFProfilingMutationService
QUERY_TASK_PROCESSES_RANGE_MS = 5 * 60 * 1000    # EBPFProfilingServiceHandler
PREPARE_PROCESSES_RANGE_MS = 10 * 60 * 1000      # EBPFProfilingQueryService


def load_protos():
    out = tempfile.mkdtemp(prefix="fake-oap-pb.")
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out] + PROTOS, check=True)
    sys.path.insert(0, out)
    from common import Command_pb2, Common_pb2
    from ebpf.profiling import Continuous_pb2, Process_pb2, Profile_pb2
    from language_agent import Meter_pb2     # protoc writes language-agent/ as language_agent/
    return Common_pb2, Command_pb2, Process_pb2, Profile_pb2, Continuous_pb2, Meter_pb2


Common_pb2, Command_pb2, Process_pb2, Profile_pb2, Continuous_pb2, Meter_pb2 = load_protos()
from google.protobuf.json_format import MessageToDict  # noqa: E402


def b64(s):
    return base64.b64encode(s.encode()).decode()


def service_id(service):
    """IDManager.ServiceID.buildId(name, isNormal=true)."""
    return b64(service) + ".1"


def oap_ids(service, instance, process):
    """IDManager.ServiceID/ServiceInstanceID/ProcessID as the OAP builds them (normal service)."""
    sid = service_id(service)
    instance_id = sid + "_" + b64(instance)
    process_id = hashlib.sha256((process + "_" + instance_id).encode()).hexdigest()
    return sid, instance_id, process_id


def sha256_hex(*parts):
    """Guava's Hashing.sha256().newHasher(): putString as UTF-8 bytes, putLong as 8 bytes little-endian."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else struct.pack("<q", p))
    return h.hexdigest()


def gson_list(items):
    """GSON.toJson(List<String>): no spaces."""
    return json.dumps(list(items), separators=(",", ":"))


def now_ms():
    return int(time.time() * 1000)


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.RLock()
        self.out = open(args.out, "a", buffering=1)
        self.traffic = {}              # ProcessTraffic by process id
        self.service_labels = {}       # service id -> set of labels (ServiceLabel)
        self.service_layers = set()    # (service name, layer) (ServiceMeta -> ServiceTraffic)
        self.tasks = []                # EBPFProfilingTaskRecord as dicts
        self.specs = [self.parse_task(s) for s in args.task]
        self.last_create = 0
        self.agents = set()
        self.streams = 0
        self.flood_sent = 0             # commands, the ids one included
        self.flood_tasks_sent = 0
        self.ids_sent = False
        self.policy_cache = {}          # service id -> (expires, policy or None): the handler's cache

    @staticmethod
    def parse_task(spec):
        kind, duration, service, labels = (spec.split(":") + ["", "", ""])[:4]
        return {"kind": kind, "duration": int(duration), "service": service,
                "labels": [l for l in labels.split("+") if l], "done": False}

    def record(self, obj):
        obj.setdefault("t", now_ms())
        with self.lock:
            self.out.write(json.dumps(obj, sort_keys=True) + "\n")

    def check(self, context, method, request_dict):
        md = dict(context.invocation_metadata())
        auth = md.get("authentication")
        self.record({"method": method, "auth": auth, "req": request_dict})
        if self.args.token and auth != self.args.token:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "bad authentication token")
        with self.lock:
            self.create_due_tasks()

    # ---- processes (ProcessDispatcher, ProcessTraffic.combine) ----

    def receive_process(self, entity, agent_id, properties, detect_type):
        sid, instance_id, pid = oap_ids(entity.serviceName, entity.instanceName, entity.processName)
        props = {kv.key: kv.value for kv in properties}
        support = props.get("support_ebpf_profiling") == "true"
        labels = list(entity.labels)
        now = now_ms()
        rec = self.traffic.get(pid)
        if rec is None:
            self.traffic[pid] = {
                "id": pid, "service": entity.serviceName, "service_id": sid,
                "instance": entity.instanceName, "instance_id": instance_id,
                "name": entity.processName, "agent_id": agent_id, "properties": props,
                "labels": labels, "support": support, "detect_type": detect_type,
                "last_ping": now, "stored_at": now + self.args.persist_ms, "announced": False,
            }
        else:
            # ProcessTraffic.combine: profiling_support_status is not combined (the first stays).
            rec["last_ping"] = now
            if agent_id:
                rec["agent_id"] = agent_id
            rec["properties"].update(props)
            if detect_type:
                rec["detect_type"] = detect_type
            if labels:
                rec["labels"] = labels
        if labels:
            self.service_labels.setdefault(sid, set()).update(labels)
        return pid

    def stored(self, now):
        """Processes in storage: those received at least a persistence period ago."""
        out = []
        for rec in self.traffic.values():
            if rec["stored_at"] > now:
                continue
            if not rec["announced"]:
                rec["announced"] = True
                self.record({"event": "stored", "process": {k: rec[k] for k in (
                    "id", "service", "instance", "name", "labels", "support", "agent_id")}})
            out.append(rec)
        return out

    def store_ghost(self, agent_id):
        """A process this agent reported that has exited since: still listed for 5 minutes."""
        e = Process_pb2.EBPFProcessEntityMetadata(layer="GENERAL", serviceName=self.args.ghost,
                                                  instanceName="ghost", processName="ghost")
        kv = Common_pb2.KeyStringValuePair(key="support_ebpf_profiling", value="true")
        pid = self.receive_process(e, agent_id, [kv], 1)
        self.traffic[pid]["stored_at"] = now_ms()
        self.traffic[pid]["ghost"] = True

    def note_agent(self, agent_id):
        if agent_id and agent_id not in self.agents:
            self.agents.add(agent_id)
            if self.args.ghost:
                self.store_ghost(agent_id)

    # ---- a hostile OAP (--flood-tasks, --flood-ids): not what the OAP does ----
    #
    # What a plaintext OAP (or anyone on the path) may answer queryTasks with:
    # commands of the real form (EBPFProfilingTaskCommand.serialize, apache/skywalking
    # 5839d2ad, apm-protocol/apm-network/.../command/EBPFProfilingTaskCommand.java) but
    # in numbers and sizes the agent must bound.  Their TaskStartTime is far ahead:
    # the OAP takes any start time (EBPFProfilingMutationService.createTask only
    # replaces one <= 0 with now), and a pending task is held until it starts.


    def flood_commands(self, processes):
        """The next flood commands for this agent's first process; [] once all were sent."""
        if not processes:
            return []
        commands = []
        if self.args.flood_ids and not self.ids_sent:
            # One command whose ProcessId is ~16 MiB of short ids, starting now.
            self.ids_sent = True
            n = (15 << 20) // 8
            ids = ",".join("x%06x" % i for i in range(n))
            task = {"logical_id": "flood-ids", "last_update_time": now_ms(), "trigger": "FIXED_TIME",
                    "target": "ON_CPU", "start_time": now_ms(), "duration": 60}
            self.flood_sent += 1
            return [self.command(task, [ids])]
        left = self.args.flood_tasks - self.flood_tasks_sent
        now = now_ms()
        for i in range(min(left, self.args.flood_per_reply)):
            task = {"logical_id": "flood-%d" % (self.flood_tasks_sent + i), "last_update_time": now,
                    "trigger": "FIXED_TIME", "target": "ON_CPU", "start_time": now + self.args.flood_ahead_ms,
                    "duration": 60}
            commands.append(self.command(task, [processes[0]["id"]]))
        self.flood_sent += len(commands)
        self.flood_tasks_sent += len(commands)
        return commands

    def flood_done(self):
        return self.flood_tasks_sent >= self.args.flood_tasks and (self.ids_sent or not self.args.flood_ids)

    # ---- tasks (EBPFProfilingMutationService.createTask) ----

    def create_due_tasks(self):
        now = now_ms()
        if self.args.tasks_after_flood and not self.flood_done():
            return
        stored = self.stored(now)
        for spec in self.specs:
            if spec["done"]:
                continue
            sid = service_id(spec["service"])
            # queryPrepareCreateEBPFProfilingTaskData: stored processes that support profiling
            ready = [p for p in stored if p["service_id"] == sid and p["support"]
                     and now - p["last_ping"] <= PREPARE_PROCESSES_RANGE_MS]
            if len(ready) < self.args.task_min_processes:
                continue
            spec["done"] = True
            error = self.create_error(spec, sid)
            if error:
                self.record({"event": "task_refused", "spec": spec, "reason": error})
                continue
            self.create_task(spec, sid, ready)

    def create_error(self, spec, sid):
        """checkCreateRequest (its overlap check compares tasks starting at or after the
        new one with a time before it, so it never refuses, and is left out)."""
        missing = [l for l in spec["labels"] if l not in self.service_labels.get(sid, set())]
        if missing:
            return "The service doesn't have processes with label(s) %s." % ", ".join(missing)
        if spec["kind"] != "NETWORK" and spec["duration"] < self.args.min_duration:
            return "the fixed time duration must be greater than or equals %ds" % self.args.min_duration
        return None

    def create_time(self):
        """Creation times are distinct: two tasks of one service created in the same
        millisecond would share their logical id (service, labels, start time)."""
        t = max(now_ms(), self.last_create + 1)
        self.last_create = t
        return t

    def create_task(self, spec, sid, ready):
        current = self.create_time()
        labels_json = gson_list(spec["labels"]) if spec["labels"] else ""
        start = current + self.args.task_delay_ms
        task = {
            "service_id": sid, "service": spec["service"], "labels_json": labels_json,
            "instance_id": "", "start_time": start, "trigger": "FIXED_TIME",
            "duration": spec["duration"], "target": spec["kind"],
            "create_time": current, "last_update_time": current,
            "logical_id": sha256_hex(sid, labels_json, start),
            "ghost": spec["service"] == self.args.ghost,
        }
        if spec["kind"] == "NETWORK":
            # createTask(EBPFProfilingNetworkTaskRequest): on an instance, 10 minutes, starts now
            task["instance_id"] = ready[0]["instance_id"]
            task["duration"] = NETWORK_PROFILING_DURATION
            task["start_time"] = current
            task["logical_id"] = sha256_hex(sid, "", current)
        self.tasks.append(task)
        self.record({"event": "task", "task": {
            "TaskId": task["logical_id"], "ServiceName": spec["service"], "ServiceId": sid,
            "Labels": spec["labels"], "TargetType": task["target"],
            "TaskStartTime": str(task["start_time"]), "TaskUpdateTime": str(task["last_update_time"]),
            "FixedTriggerDuration": str(task["duration"]), "ghost": task["ghost"]}})

    # ---- queryTasks (EBPFProfilingServiceHandler) ----

    def agent_processes(self, agent_id):
        """JDBCMetadataQueryDAO.listProcesses: the agent's stored processes of the last minutes."""
        now = now_ms()
        return [p for p in self.stored(now) if p["agent_id"] == agent_id
                and now - p["last_ping"] <= QUERY_TASK_PROCESSES_RANGE_MS]

    def query_tasks(self, agent_id, latest_update_time):
        processes = self.agent_processes(agent_id)
        if not processes:
            return []
        services = {p["service_id"] for p in processes}
        # queryTasksByServices(services, FIXED_TIME, 0, latestUpdateTime)
        found = [t for t in self.tasks if t["service_id"] in services and t["trigger"] == "FIXED_TIME"
                 and (latest_update_time <= 0 or t["last_update_time"] > latest_update_time)]
        by_logical = {}
        for t in found:
            if t["logical_id"] in by_logical:
                first = by_logical[t["logical_id"]]    # EBPFProfilingTaskRecord.combine
                first["duration"] = max(first["duration"], t["duration"])
                first["last_update_time"] = max(first["last_update_time"], t["last_update_time"])
            else:
                by_logical[t["logical_id"]] = dict(t)
        commands = []
        for t in by_logical.values():
            commands += self.build_commands(t, processes)
        return commands

    def build_commands(self, task, processes):
        if task["target"] == "NETWORK":
            ids = [p["id"] for p in processes if p["instance_id"] == task["instance_id"]]
            return [self.command(task, ids)] if ids else []
        wanted = json.loads(task["labels_json"]) if task["labels_json"] else []
        return [self.command(task, [p["id"]]) for p in processes
                if p["service_id"] == task["service_id"] and p["support"]
                and (not wanted or set(wanted) <= set(p["labels"]))]

    @staticmethod
    def command(task, process_ids):
        """CommandService.newEBPFProfilingTaskCommand + EBPFProfilingTaskCommand.serialize."""
        return [
            ("SerialNumber", str(uuid.uuid4())),
            ("TaskId", task["logical_id"]),
            ("ProcessId", ",".join(process_ids)),
            ("TaskUpdateTime", str(task["last_update_time"])),
            ("TriggerType", task["trigger"]),
            ("TargetType", task["target"]),
            ("TaskStartTime", str(task["start_time"])),
            ("ExtensionConfigJSON", "null"),    # GSON.toJson(null): no network samplings
            ("FixedTriggerDuration", str(task["duration"])),
        ]


# ---- continuous profiling (ContinuousProfilingServiceHandler) ----

# ContinuousProfilingCauseType (proto) -> ContinuousProfilingMonitorType name (valueOf by number)
MONITOR_TYPES = ["PROCESS_CPU", "PROCESS_THREAD_COUNT", "SYSTEM_LOAD", "HTTP_ERROR_RATE", "HTTP_AVG_RESPONSE_TIME"]


def policies_in_db(state):
    """The stored policies: --policy-file, read at each query (the test edits it).
    {SERVICE: {"uuid": U, "config": {TARGET: {CHECK: {"threshold", "period", "count"}}}}}, or
    {SERVICE: {"raw": TEXT}}: a broken OAP's ServiceWithPolicyJSON, sent as it is."""
    if not state.args.policy_file or not os.path.exists(state.args.policy_file):
        return {}
    with open(state.args.policy_file) as f:
        text = f.read()
    return {service_id(k): dict(v, service=k) for k, v in (json.loads(text) if text.strip() else {}).items()}


def policy_command_json(policies):
    """GSON.toJson(List<ContinuousProfilingPolicy>) as CommandService.convertContinuesProfilingPolicy
    fills it: ServiceName, UUID, and Profiling only when the policy has a configuration (Gson leaves
    nulls out).  The key spelling is that of Rover's decoder (checkers.go QueryPolicyUpdate: Go's
    encoding/json matches names without case; the agent does too)."""
    out = []
    for p in policies:
        item = {"ServiceName": p["service"], "UUID": p["uuid"]}
        if p.get("config"):
            item["Profiling"] = {target: {check: {k: v for k, v in (
                ("Threshold", str(c["threshold"])), ("Period", c["period"]), ("Count", c["count"]),
                ("URIList", c.get("uri_list")), ("URIRegex", c.get("uri_regex"))) if v is not None}
                for check, c in checks.items()} for target, checks in p["config"].items()}
        out.append(item)
    return json.dumps(out, separators=(",", ":"))


def query_policies(state, req):
    """queryPolicies: the services whose policy UUID differs from the agent's, as one command."""
    query = {}
    for q in req.policies:
        query.setdefault(service_id(q.serviceName), q.uuid)     # toMap(..., (s1, s2) -> s1)
    if not query:
        return []
    now = time.time()
    in_db = {}
    with state.lock:
        stored = policies_in_db(state)
        for sid in query:
            cached = state.policy_cache.get(sid)
            if cached and cached[0] > now:
                if cached[1] is not None:
                    in_db[sid] = cached[1]
                continue
            policy = stored.get(sid)
            state.policy_cache[sid] = (now + state.args.policy_cache_s, policy)
            if policy is not None:
                in_db[sid] = policy
    raw = [p["raw"] for sid, p in in_db.items() if "raw" in p and p.get("uuid", "raw") != query[sid]]
    if raw:
        return [raw[0]]
    updates = []
    for sid, uuid_ in query.items():
        policy = in_db.get(sid)
        if policy is None and uuid_:
            updates.append({"service": base64.b64decode(sid[:-2]).decode(), "uuid": ""})
        elif policy is not None and policy["uuid"] != uuid_:
            updates.append(policy)
    return [policy_command_json(updates)] if updates else []


def cause_message(type_name, threshold, current):
    """generateCauseString: percentages with 2 decimals, counts as integers, times in ms."""
    if type_name in ("HTTP_ERROR_RATE", "PROCESS_CPU"):
        return "current %.2f%% >= threshold %.2f%%" % (current, threshold)
    if type_name in ("PROCESS_THREAD_COUNT", "SYSTEM_LOAD"):
        return "current %d >= threshold %d" % (int(current), int(threshold))
    return "current %.2fms >= threshold %.2fms" % (current, threshold)


def parse_cause(c):
    """parseTaskCause: the values kept as long(value * 100)."""
    type_name = MONITOR_TYPES[c.type]
    which = c.WhichOneof("cause")
    v = c.singleValue if which == "singleValue" else c.uri
    out = {"type": type_name, "threshold": int(v.threshold * 100), "current": int(v.current * 100),
           "raw_threshold": v.threshold, "raw_current": v.current}
    message = cause_message(type_name, v.threshold, v.current)
    if which == "uri":
        uri = c.uri.path if c.uri.WhichOneof("uri") == "path" else c.uri.regex
        out["uri"] = uri
        if uri:
            message += " on " + uri
    out["message"] = type_name + ": " + message
    return out


def report_profiling_task(state, req, context):
    """reportProfilingTask: a CONTINUOUS_PROFILING task record starting now; its id answered."""
    current = state.create_time()
    sid, instance_id, process_id = oap_ids(req.serviceName, req.instanceName, req.processName)
    which = req.WhichOneof("targetTask")
    if which is None:
        context.abort(grpc.StatusCode.UNKNOWN, "the continuous profiling task type cannot recognized")
    target = {"onCPU": "ON_CPU", "offCPU": "OFF_CPU", "network": "NETWORK"}[which]
    task = {
        "service_id": sid, "service": req.serviceName, "labels_json": "", "instance_id": instance_id,
        "start_time": current, "trigger": "CONTINUOUS_PROFILING", "duration": req.duration,
        "target": target, "create_time": current, "last_update_time": current,
        "logical_id": sha256_hex(sid, "", current), "ghost": False,
    }
    causes = [parse_cause(c) for c in req.causes]
    with state.lock:
        state.tasks.append(task)
    state.record({"event": "continuous_task", "task": {
        "TaskId": task["logical_id"], "ServiceName": req.serviceName, "InstanceName": req.instanceName,
        "ProcessName": req.processName, "ProcessId": process_id, "Layer": req.layer, "TargetType": target,
        "TaskStartTime": current, "FixedTriggerDuration": req.duration, "causes": causes}})
    return task["logical_id"]


def to_dict(msg):
    return MessageToDict(msg, preserving_proto_field_name=True, including_default_value_fields=False)


def data_records(msgs):
    """What collectProfilingData stores: one EBPFProfilingDataRecord per message, with its id."""
    task = {}
    out = []
    for i, m in enumerate(msgs):
        if i == 0 or "task" in m:
            task = m.get("task", {})
        start = int(task.get("profilingStartTime", 0))
        schedule = sha256_hex("%s_%s_%d" % (task.get("taskId", ""), task.get("processId", ""), start))
        profiling = m.get("onCPU") or m.get("offCPU") or {}
        last = {}
        for st in profiling.get("stacks", []):
            last[st.get("stackType", "PROCESS_KERNEL_SPACE")] = st.get("stackId", 0)
        ids = "_".join(str(last[t]) for t in ("PROCESS_KERNEL_SPACE", "PROCESS_USER_SPACE") if t in last)
        upload = int(task.get("currentTime", 0))
        out.append({"taskId": task.get("taskId", ""), "processId": task.get("processId", ""),
                    "stackIdList": ids, "id": sha256_hex(schedule, ids, upload)})
    return out


def make_handlers(state):
    def report_processes(req, context):
        state.check(context, "reportProcesses", to_dict(req))
        reply = Process_pb2.EBPFReportProcessDownstream()
        with state.lock:
            state.note_agent(req.ebpfAgentID)
            for p in req.processes:
                if not p.HasField("hostProcess"):
                    continue
                h = p.hostProcess
                # No layer here: reportProcesses never looks at it.
                pid_ = state.receive_process(h.entity, req.ebpfAgentID, h.properties, 1)
                d = reply.processes.add()
                d.processId = pid_
                d.hostProcess.pid = h.pid
                d.hostProcess.entityMetadata.CopyFrom(h.entity)
        return reply

    def keep_alive(req, context):
        state.check(context, "keepAlive", to_dict(req))
        with state.lock:
            state.note_agent(req.ebpfAgentID)
            for p in req.processes:
                e = p.entityMetadata
                if e.layer not in LAYERS:
                    # Layer.valueOf throws; grpc-java answers UNKNOWN
                    state.record({"event": "layer_refused", "layer": e.layer})
                    context.abort(grpc.StatusCode.UNKNOWN, "No layer constant with name: " + e.layer)
                state.receive_process(e, req.ebpfAgentID, p.properties, 0)
                state.service_layers.add((e.serviceName, e.layer))
        return Command_pb2.Commands()

    def query_tasks(req, context):
        state.check(context, "queryTasks", to_dict(req))
        reply = Command_pb2.Commands()
        with state.lock:
            commands = state.query_tasks(req.roverInstanceId, req.latestUpdateTime)
            flood = [] if state.flood_done() else state.flood_commands(state.agent_processes(req.roverInstanceId))
        for args in commands + flood:
            c = reply.commands.add()
            c.command = "EBPFProfilingTaskQuery"
            for k, v in args:
                a = c.args.add()
                a.key, a.value = k, v
        state.record({"event": "commands", "latestUpdateTime": req.latestUpdateTime,
                      "commands": [dict(args) for args in commands]})
        if flood:
            state.record({"event": "flood", "commands": len(flood), "bytes": reply.ByteSize(),
                          "sent": state.flood_sent})
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
        if any("onCPU" not in m and "offCPU" not in m for m in msgs):
            state.record({"method": "rejectedProfilingData", "messages": msgs})
            context.abort(grpc.StatusCode.UNKNOWN, "the profiling data not set")
        records = data_records(msgs)
        ids = [r["id"] for r in records]
        state.record({"method": "collectProfilingData", "auth": md.get("authentication"),
                      "messages": msgs, "records": records, "overwritten": len(ids) - len(set(ids))})
        return Command_pb2.Commands()

    def policies(req, context):
        state.check(context, "queryPolicies", to_dict(req))
        reply = Command_pb2.Commands()
        for text in query_policies(state, req):
            c = reply.commands.add()
            c.command = "ContinuousProfilingPolicyQuery"
            for k, v in (("SerialNumber", str(uuid.uuid4())), ("ServiceWithPolicyJSON", text)):
                a = c.args.add()
                a.key, a.value = k, v
        state.record({"event": "policies", "commands": [[{a.key: a.value for a in c.args}]
                                                        for c in reply.commands]})
        return reply

    def report_task(req, context):
        state.check(context, "reportProfilingTask", to_dict(req))
        task_id = report_profiling_task(state, req, context)
        reply = Command_pb2.Commands()
        c = reply.commands.add()
        c.command = "ContinuousProfilingReportTask"
        for k, v in (("SerialNumber", str(uuid.uuid4())), ("TaskId", task_id)):
            a = c.args.add()
            a.key, a.value = k, v
        return reply

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
    continuous = grpc.method_handlers_generic_handler("skywalking.v3.ContinuousProfilingService", {
        "queryPolicies": grpc.unary_unary_rpc_method_handler(
            policies, Continuous_pb2.ContinuousProfilingPolicyQuery.FromString, ser),
        "reportProfilingTask": grpc.unary_unary_rpc_method_handler(
            report_task, Continuous_pb2.ContinuousProfilingReport.FromString, ser),
    })
    def meters(req_iter, context):
        # MeterReportService.collectBatch: each MeterDataCollection a complete input; recorded as
        # received (the OAP's meter receiver was not modelled: nothing here depends on it).
        state.check(context, "collectBatch", {})
        state.record({"method": "meters", "collections": [to_dict(m) for m in req_iter]})
        return Command_pb2.Commands()

    meter = grpc.method_handlers_generic_handler("skywalking.v3.MeterReportService", {
        "collectBatch": grpc.stream_unary_rpc_method_handler(
            meters, Meter_pb2.MeterDataCollection.FromString, ser),
    })
    return [process, profiling, continuous, meter, wire_handlers(state)]


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
                    help="KIND:SECONDS:SERVICE[:LABEL+LABEL...]: a task created on SERVICE (for the "
                         "processes with all LABELs) once SERVICE has a stored process that supports "
                         "profiling, as a user would from its dashboard")
    ap.add_argument("--task-min-processes", type=int, default=1,
                    help="create tasks once the service has this many such processes")
    ap.add_argument("--task-delay-ms", type=int, default=0, help="TaskStartTime after creation")
    ap.add_argument("--min-duration", type=int, default=FIXED_TIME_MIN_DURATION,
                    help="shortest FIXED_TIME task accepted (the OAP: 60 s)")
    ap.add_argument("--persist-ms", type=int, default=1000,
                    help="received processes are stored (visible) after this long "
                         "(the OAP: persistentPeriod, 25 s)")
    ap.add_argument("--ghost", metavar="SERVICE",
                    help="store a process of SERVICE for each agent at its first call, as if it had "
                         "reported one that exited since")
    ap.add_argument("--flood-tasks", type=int, default=0,
                    help="hostile: answer queryTasks with N distinct tasks in all, each for the "
                         "agent's first process")
    ap.add_argument("--flood-per-reply", type=int, default=40000,
                    help="flood tasks a reply (40000: ~360 bytes each, 14 MB, under the agent's 16 MiB)")
    ap.add_argument("--flood-ahead-ms", type=int, default=100 * 365 * 86400 * 1000,
                    help="the flood tasks' TaskStartTime after now (default 100 years)")
    ap.add_argument("--flood-ids", action="store_true",
                    help="hostile: first, one command whose ProcessId is ~16 MiB of short ids")
    ap.add_argument("--tasks-after-flood", action="store_true",
                    help="create the --task tasks only once the flood was sent")
    ap.add_argument("--fail-first", type=int, default=0, help="fail the first N collectProfilingData streams")
    ap.add_argument("--fail-code", default="", help="with --fail-first, e.g. UNAVAILABLE")
    ap.add_argument("--policy-file", help="continuous profiling policies, read at each queryPolicies "
                    "(see policies_in_db)")
    ap.add_argument("--policy-cache-s", type=float, default=60,
                    help="queryPolicies caches each service's policy this long (the OAP: "
                         "continuousPolicyCacheTimeout, 60 s)")
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
