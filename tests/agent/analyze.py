#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Summarizes what the fake OAP recorded, as "key value" lines for the .t scripts.

  analyze.py registration RECORD PROCESSNAME
  analyze.py task RECORD KIND [PROCESSNAME]   (ON_CPU | OFF_CPU; the first task created for
                                              it; with PROCESSNAME only that process's data)
  analyze.py commands RECORD KIND        the commands queryTasks answered for that task
  analyze.py named RECORD KIND REGEX     samples of that task, and the percent of them
                                         with a user-space symbol matching REGEX
  analyze.py auth RECORD                 distinct authentication values seen
  analyze.py queries RECORD              latestUpdateTime semantics
  analyze.py stored RECORD KIND          what the OAP keeps of that task: one record per id
                                         (sha256 of schedule, stack ids, upload time), the
                                         last write winning, as its storage does
"""
import hashlib
import base64
import json
import re
import sys

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def calls(recs, method):
    return [r for r in recs if r.get("method") == method]


def out(key, value):
    print("%s %s" % (key, str(value).replace(" ", "_") if value != "" else "-"))


def oap_process_id(service, instance, process):
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    instance_id = b64(service) + ".1_" + b64(instance)
    return hashlib.sha256((process + "_" + instance_id).encode()).hexdigest()


def registration(recs, name):
    reports = calls(recs, "reportProcesses")
    out("reports", len(reports))
    out("keepalives", len(calls(recs, "keepAlive")))
    found = None
    for r in reports:
        for p in r["req"].get("processes", []):
            h = p.get("hostProcess")
            if h and h["entity"].get("processName") == name:
                found = (r, h)
    if not found:
        out("found", 0)
        return
    r, h = found
    e = h["entity"]
    props = {kv["key"]: kv.get("value", "") for kv in h.get("properties", [])}
    out("found", 1)
    out("layer", e.get("layer"))
    out("service", e.get("serviceName"))
    out("instance", e.get("instanceName"))
    out("pid", h.get("pid"))
    out("prop_pid", props.get("pid"))
    out("host_ip", props.get("host_ip", ""))
    out("command_line", props.get("command_line", ""))
    out("support_ebpf_profiling", props.get("support_ebpf_profiling"))
    out("labels", ",".join(e.get("labels", [])))
    agent = r["req"].get("ebpfAgentID", "")
    out("agent_uuid", 1 if UUID.match(agent) else 0)
    rovers = {q["req"].get("roverInstanceId") for q in calls(recs, "queryTasks")}
    pings = {k["req"].get("ebpfAgentID") for k in calls(recs, "keepAlive")}
    out("agent_id_consistent", 1 if rovers == {agent} and pings <= {agent} else 0)
    # keepAlive carries what reportProcesses said: layer, labels and support_ebpf_profiling
    pings = [p for k in calls(recs, "keepAlive") for p in k["req"].get("processes", [])
             if p.get("entityMetadata", {}).get("processName") == name]
    ping_ok = pings and all(p["entityMetadata"].get("layer") == e.get("layer") and
                            p["entityMetadata"].get("labels", []) == e.get("labels", []) and
                            {"key": "support_ebpf_profiling",
                             "value": props.get("support_ebpf_profiling")} in p.get("properties", [])
                            for p in pings)
    out("keepalive_ok", 1 if ping_ok else 0)
    out("process_id", oap_process_id(e.get("serviceName"), e.get("instanceName"), name))


def task_of(recs, kind):
    for r in recs:
        if r.get("event") == "task" and r["task"]["TargetType"] == kind and not r["task"]["ghost"]:
            return r["task"]
    return None


def process_id_of(recs, name):
    """The OAP id of the process named @name, from the last report of it."""
    found = None
    for r in calls(recs, "reportProcesses"):
        for p in r["req"].get("processes", []):
            e = p.get("hostProcess", {}).get("entity", {})
            if e.get("processName") == name:
                found = oap_process_id(e.get("serviceName"), e.get("instanceName"), name)
    return found


def profiling(m):
    return m.get("onCPU") or m.get("offCPU")


def task(recs, kind, process=None):
    t = task_of(recs, kind)
    if not t:
        out("task", "-")
        return
    tid = t["TaskId"]
    want = process_id_of(recs, process) if process else None
    out("task", tid)
    streams = calls(recs, "collectProfilingData")
    total = duration = nmsgs = nstreams = dups = meta_bad = zero = order_bad = 0
    leaf_bad = overwritten = 0
    leaf = {}
    leaf_ns = {}
    start = None
    last_current = 0
    current_times = []
    processes = set()
    for s in streams:
        msgs = s["messages"]
        overwritten += s.get("overwritten", 0)
        # Messages of this task: the first of each (task, process) carries metadata; the rest
        # follow until the next metadata.
        cur = None
        seen = set()
        metas = set()
        mine = []
        for m in msgs:
            if "task" in m:
                cur = (m["task"]["taskId"], m["task"].get("processId", ""))
                if cur[0] == tid and (want is None or cur[1] == want):
                    if cur in metas:
                        meta_bad += 1      # metadata twice for the task and process in one stream
                    metas.add(cur)
                    processes.add(cur[1])
                    start = int(m["task"]["profilingStartTime"])
                    current_times.append(int(m["task"]["currentTime"]))
            elif cur is None:
                meta_bad += 1              # data before any metadata
            if cur and cur[0] == tid and (want is None or cur[1] == want):
                mine.append(m)
        if not mine:
            continue
        nstreams += 1
        for m in mine:
            p = profiling(m)
            if p is None:
                zero += 1
                continue
            nmsgs += 1
            count = p.get("dumpCount", p.get("switchCount", 0))
            total += count
            duration += int(p.get("duration", 0))
            if count == 0 and int(p.get("duration", 0)) == 0:
                zero += 1
            stacks = p.get("stacks", [])
            types = [st.get("stackType", "PROCESS_KERNEL_SPACE") for st in stacks]
            if types not in (["PROCESS_KERNEL_SPACE", "PROCESS_USER_SPACE"], ["PROCESS_USER_SPACE"],
                             ["PROCESS_KERNEL_SPACE"]):
                order_bad += 1
            key = json.dumps([(st.get("stackType"), st.get("stackSymbols")) for st in stacks])
            if key in seen:
                dups += 1
            seen.add(key)
            user = [st for st in stacks if st.get("stackType") == "PROCESS_USER_SPACE"]
            if user and user[0].get("stackSymbols"):
                syms = user[0]["stackSymbols"]
                leaf[syms[0]] = leaf.get(syms[0], 0) + count
                leaf_ns[syms[0]] = leaf_ns.get(syms[0], 0) + int(p.get("duration", 0))
                # Leaf first: our workload's leaves come before their callers.
                for callee, caller in (("oap_hot_a", "main"), ("oap_hot_b", "main"),
                                       ("oap_nap", "oap_sleeper")):
                    if callee in syms and caller in syms and syms.index(callee) > syms.index(caller):
                        leaf_bad += 1
        last_current = max(last_current, max(current_times) if current_times else 0)
    out("in_order", 1 if current_times == sorted(current_times) else 0)
    out("processes", len(processes))
    out("overwritten", overwritten)
    weight = sum(leaf.values()) or 1
    out("streams", nstreams)
    out("messages", nmsgs)
    out("total", total)
    out("duration_ns", duration)
    out("dup_symbol_lists", dups)
    out("meta_bad", meta_bad)
    out("zero_messages", zero)
    out("stack_order_bad", order_bad)
    out("leaf_order_bad", leaf_bad)
    out("leaves", ",".join(sorted(leaf)))
    for fn in ("oap_hot_a", "oap_hot_b", "oap_nap"):
        out("share_" + fn, "%.1f" % (100.0 * leaf.get(fn, 0) / weight))
        out("count_" + fn, leaf.get(fn, 0))
        out("duration_ns_" + fn, leaf_ns.get(fn, 0))
    busy = ("oap_hot_a", "oap_hot_b", "oap_nap", "main", "oap_burn")
    out("share_workload", "%.1f" % (100.0 * sum(leaf.get(fn, 0) for fn in busy) / weight))
    out("task_start", t["TaskStartTime"])
    out("duration_s", t["FixedTriggerDuration"])
    out("profiling_start", start if start is not None else "-")
    out("span_ms", (last_current - start) if start is not None else "-")
    out("start_delay_ms", (start - int(t["TaskStartTime"])) if start is not None else "-")


def named(recs, kind, regex):
    t = task_of(recs, kind)
    tid = t["TaskId"] if t else None
    pattern = re.compile(regex)
    total = hit = 0
    for s in calls(recs, "collectProfilingData"):
        cur = None
        for m in s["messages"]:
            if "task" in m:
                cur = m["task"]["taskId"]
            p = profiling(m)
            if cur != tid or p is None:
                continue
            count = p.get("dumpCount", p.get("switchCount", 0))
            total += count
            syms = [sym for st in p.get("stacks", []) if st.get("stackType") == "PROCESS_USER_SPACE"
                    for sym in st.get("stackSymbols", [])]
            if any(pattern.search(sym) for sym in syms):
                hit += count
    out("samples", total)
    out("named_pct", "%.1f" % (100.0 * hit / total if total else 0))


def commands(recs, kind):
    """How queryTasks handed out the task: commands per answer, one process id each."""
    t = task_of(recs, kind)
    if not t:
        out("task", "-")
        return
    replies = [[c for c in r["commands"] if c["TaskId"] == t["TaskId"]]
               for r in recs if r.get("event") == "commands"]
    replies = [r for r in replies if r]
    ids = sorted({c["ProcessId"] for r in replies for c in r})
    out("task", t["TaskId"])
    out("answers", len(replies))
    out("max_commands", max((len(r) for r in replies), default=0))
    out("singleton_ids", 1 if all("," not in i for i in ids) else 0)
    out("process_ids", ",".join(ids))
    out("same_update_time", 1 if len({c["TaskUpdateTime"] for r in replies for c in r}) <= 1 else 0)


def auth(recs):
    vals = sorted({str(r.get("auth")) for r in recs if "method" in r})
    out("auth", ",".join(vals))


def queries(recs):
    """latestUpdateTime: 0 until a task for a known process came, then its update time; never a ghost's.

    real: tasks for reported processes that parse (a FixedTriggerDuration > 0).
    """
    tasks = [r["task"] for r in recs if r.get("event") == "task"]
    ghost = {int(t["TaskUpdateTime"]) for t in tasks if t["ghost"]}
    real = {int(t["TaskUpdateTime"]) for t in tasks
            if not t["ghost"] and int(t["FixedTriggerDuration"]) > 0}
    seq = [int(q["req"].get("latestUpdateTime", 0)) for q in calls(recs, "queryTasks")]
    out("queries", len(seq))
    out("first", seq[0] if seq else "-")
    out("last", seq[-1] if seq else "-")
    out("max_real", max(real) if real else "-")
    out("ghost_used", 1 if set(seq) & ghost else 0)
    out("monotonic", 1 if seq == sorted(seq) else 0)


def stored(recs, kind):
    t = task_of(recs, kind)
    if not t:
        out("task", "-")
        return
    tid = t["TaskId"]
    kept = {}          # record id -> (count, message)
    resent = conflicts = sent = 0
    uploads = {}       # currentTime -> the stream's messages of this task, as JSON
    upload_conflicts = 0
    for s in calls(recs, "collectProfilingData"):
        mine = []
        for m, r in zip(s["messages"], s["records"]):
            if r["taskId"] != tid:
                continue
            p = profiling(m) or {}
            count = int(p.get("dumpCount", p.get("switchCount", 0)))
            body = json.dumps(m, sort_keys=True)
            sent += count
            mine.append(body)
            if r["id"] in kept:
                resent += 1
                if kept[r["id"]][1] != json.dumps({k: v for k, v in m.items() if k != "task"},
                                                  sort_keys=True):
                    conflicts += 1
            kept[r["id"]] = (count, json.dumps({k: v for k, v in m.items() if k != "task"},
                                               sort_keys=True))
        times = {int(m["task"]["currentTime"]) for m in s["messages"]
                 if "task" in m and m["task"]["taskId"] == tid}
        for ct in times:
            if ct in uploads and uploads[ct] != mine:
                upload_conflicts += 1   # one upload time, two different contents: an interval twice
            uploads[ct] = mine
    out("task", tid)
    out("records", len(kept))
    out("stored_total", sum(c for c, _ in kept.values()))
    out("sent_total", sent)
    out("resent_records", resent)
    out("conflicts", conflicts)
    out("uploads", len(uploads))
    out("upload_conflicts", upload_conflicts)


def continuous(recs, process, stamp_ms, hot):
    """The continuous tasks the OAP stored for PROCESS (reportProfilingTask), the first one's
    cause and delay after STAMP_MS (the burn's start), and the share of its ON_CPU samples whose
    user leaf is HOT."""
    tasks = [r["task"] for r in recs if r.get("event") == "continuous_task"]
    mine = [t for t in tasks if t["ProcessName"] == process]
    out("tasks", len(mine))
    out("other_processes", ",".join(sorted({t["ProcessName"] for t in tasks} - {process})) or "-")
    overlaps = 0
    for a, b in zip(mine, mine[1:]):
        if b["TaskStartTime"] < a["TaskStartTime"] + a["FixedTriggerDuration"] * 1000:
            overlaps += 1
    out("overlaps", overlaps)
    # rover_con_p_* meters of PROCESS (collectBatch): how many, the highest CPU value, and whether
    # each names the process's service and instance and carries the labels Rover's do.
    cpu = []
    labelled = True
    for r in recs:
        for coll in r.get("collections", []) if r.get("method") == "meters" else []:
            for d in coll.get("meterData", []):
                sv = d.get("singleValue", {})
                labels = {l["name"]: l["value"] for l in sv.get("labels", [])}
                if labels.get("process_name") != process:
                    continue
                labelled &= labels.get("layer") == "GENERAL" and d.get("serviceInstance") == process \
                    and bool(d.get("service")) and int(d.get("timestamp", 0)) > 0
                if sv.get("name") == "rover_con_p_process_cpu":
                    cpu.append(sv.get("value", 0.0))
    out("meters_cpu", len(cpu))
    out("meter_cpu_max", "%.1f" % max(cpu) if cpu else "-")
    out("meters_labelled", 1 if labelled else 0)
    if not mine:
        return
    t = mine[0]
    reported = [r["t"] for r in recs if r.get("event") == "continuous_task" and r["task"] is not None
                and r["task"]["TaskId"] == t["TaskId"]][0]
    out("task", t["TaskId"])
    out("delay_ms", reported - int(stamp_ms))
    out("service", t["ServiceName"])
    out("target", t["TargetType"])
    out("duration", t["FixedTriggerDuration"])
    out("causes", len(t["causes"]))
    c = t["causes"][0]
    out("cause_type", c["type"])
    out("cause_threshold", c["raw_threshold"])
    out("cause_current", c["raw_current"])
    out("cause_message", c["message"].replace(" ", "_"))
    leaf = {}
    for s in calls(recs, "collectProfilingData"):
        cur = None
        for m in s["messages"]:
            if "task" in m:
                cur = m["task"]["taskId"]
            p = profiling(m)
            if cur != t["TaskId"] or p is None:
                continue
            user = [st for st in p.get("stacks", []) if st.get("stackType") == "PROCESS_USER_SPACE"]
            if user and user[0].get("stackSymbols"):
                name = user[0]["stackSymbols"][0]
                leaf[name] = leaf.get(name, 0) + p.get("dumpCount", 0)
    total = sum(leaf.values())
    out("samples", total)
    out("leading", max(leaf, key=leaf.get) if leaf else "-")
    out("share_hot", "%.1f" % (100.0 * leaf.get(hot, 0) / (total or 1)))


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    recs = load(path)
    if cmd == "registration":
        registration(recs, sys.argv[3])
    elif cmd == "task":
        task(recs, sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif cmd == "commands":
        commands(recs, sys.argv[3])
    elif cmd == "named":
        named(recs, sys.argv[3], sys.argv[4])
    elif cmd == "auth":
        auth(recs)
    elif cmd == "queries":
        queries(recs)
    elif cmd == "continuous":
        continuous(recs, sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "stored":
        stored(recs, sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
