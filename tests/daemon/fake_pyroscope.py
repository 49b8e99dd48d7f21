#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A fake Grafana Pyroscope: its /ingest HTTP endpoint, written from the real handler.

Source: grafana/pyroscope at commit 3fe6a457a32004efc46da819cbc114472d07415e:
- pkg/api/api.go RegisterDistributor: the handler is mounted at /ingest and /pyroscope/ingest;
- pkg/ingester/pyroscope/ingest_handler.go (ServeHTTP, parseInputMetadataFromRequest,
  readInputRawDataFromRequest): `name` parsed by labelset.Parse, a bad one is 400; `from` and
  `until` by attime.Parse, missing means now; the body's format is chosen in this order:
  format=trie/tree/lines/jfr/pprof/speedscope, then a Content-Type containing
  "multipart/form-data" (read as a pprof form), else the "groups" text format.  With format=pprof
  the WHOLE body is the pprof file (a multipart body then fails to parse);
- pkg/og/convert/pprof/profile.go (handleRawData, loadPprofFromForm): the form's boundary from
  the Content-Type (form.ParseBoundary: none is an error), the pprof in the file part named
  "profile" (form.ReadField reads form.File only: a part without a filename is not a file and
  is ignored, as is an empty one; no profile means 200 and nothing stored), "prev_profile" is
  refused ("unsupported client version"), "sample_type_config" is JSON;
  pprof.RawFromBytesWithLimit: gzip or not, then protobuf;
- ingest_adapter.go parseToPprof wraps every such error without an ingestion.Error, so the
  handler answers 422 (connect.CodeOf is not ResourceExhausted); pkg/util/http/error.go
  ErrorWithStatus writes {"code": ..., "message": ...} as JSON; success is 200 with no body;
- api/model/labelset/validate.go: service name runes [A-Za-z0-9_./-], label names [A-Za-z0-9_.],
  "__name__" reserved.
- Tenancy (multitenancy on): the auth middleware (dskit) refuses a request without
  X-Scope-OrgID with 401 "no org id".  Basic auth is not Pyroscope's own: Grafana Cloud's gateway
  checks it in front of the same endpoint; --basic-auth USER:PASS emulates that gateway (401).
Formats other than pprof (trie, tree, lines, jfr, speedscope, groups) are not emulated: 501;
so are methods other than POST (http.server's 501).

Usage: fake_pyroscope.py PORT DIR [--tenant ID] [--basic-auth USER:PASS] [--tls CERT KEY]
(--tls: https, as Pyroscope's server.http_tls_config or a proxy in front; ALPN http/1.1.)
Each accepted pprof goes to DIR/NNNN.pb.gz (as received) and one JSON line to DIR/log, with the
series' __name__ ("metric") the server would give it.
"""
import base64
import gzip
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVICE_RUNES = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/")
LABEL_RUNES = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
CODES = {400: "invalid_argument", 401: "unauthenticated", 422: "unknown", 501: "unimplemented"}
MAX_PROFILE = 4 << 20           # validation: max_profile_size_bytes' default

lock = threading.Lock()


class Refused(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


def parse_labelset(name):
    """labelset.Parse: the service name up to '{', then k=v pairs separated by ','."""
    labels = {}
    state, key, value = "name", "", ""
    for r in name + "{":
        if state == "name":
            if r == "{":
                service = value.strip()
                if not service:
                    raise Refused(400, "name: service name is required")
                bad = [c for c in service if c not in SERVICE_RUNES]
                if bad:
                    raise Refused(400, "name: invalid service name: %s: character is not allowed: %r"
                                  % (service, bad[0]))
                labels["__name__"] = service
                state = "tags"
            else:
                value += r
        elif state == "tags":
            if r == "}":
                state = "done"
            elif r == "=":
                state, value = "value", ""
            else:
                key += r
        elif state == "value":
            if r in ",}":
                state = "tags"
                k = key.strip()
                if k != "__name__":
                    if not k:
                        raise Refused(400, "name: label name is required")
                    bad = [c for c in k if c not in LABEL_RUNES]
                    if bad:
                        raise Refused(400, "name: invalid label name: %s: character is not allowed: %r"
                                      % (k, bad[0]))
                labels[k] = value.strip()
                key = ""
            else:
                value += r
    return labels


def parse_attime(s):
    """attime.Parse for the digits-only forms (seconds, ms, us, ns); anything else is 'now'."""
    s = s.strip().replace("_", "").replace(",", "").replace(" ", "")
    if s.isdigit():
        n = int(s)
        return {13: n / 1e3, 16: n / 1e6, 19: n / 1e9}.get(len(s), float(n))
    return time.time()


def check_protobuf(buf):
    """A protobuf message's wire structure (what proto.Unmarshal checks first)."""
    i, n = 0, len(buf)

    def varint():
        nonlocal i
        shift = v = 0
        while True:
            if i >= n or shift > 63:
                raise Refused(422, "failed to parse pprof: truncated varint")
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < n:
        tag = varint()
        wt = tag & 7
        if tag >> 3 == 0:
            raise Refused(422, "failed to parse pprof: field number 0")
        if wt == 0:
            varint()
        elif wt == 1:
            i += 8
        elif wt == 2:
            length = varint()       # not `i += varint()`: that adds to i as it was before the call
            i += length
        elif wt == 5:
            i += 4
        else:
            raise Refused(422, "failed to parse pprof: wire type %d" % wt)
        if i > n:
            raise Refused(422, "failed to parse pprof: truncated field")


def fields(buf):
    """(field number, wire type, value) of a checked protobuf message; value: int or bytes."""
    i = 0
    while i < len(buf):
        tag, i = read_varint(buf, i)
        wt = tag & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            n = 8 if wt == 1 else 4
            v, i = buf[i:i + n], i + n
        yield tag >> 3, wt, v


def read_varint(buf, i):
    shift = v = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


# pkg/og/storage/tree/pprof.go DefaultSampleTypeMapping: the display names (used when no config is sent)
DEFAULT_DISPLAY = {"samples": "cpu", "goroutine": "goroutines", "contentions": "mutex_count",
                   "delay": "mutex_duration"}


def sample_types(plain):
    """Profile.sample_type (field 1: ValueType.type, an index into string_table, field 6)."""
    strings, types = [], []
    for num, wt, v in fields(plain):
        if num == 6 and wt == 2:
            strings.append(v.decode(errors="replace"))
        elif num == 1 and wt == 2:
            types.append(next((x for n, w, x in fields(v) if n == 1 and w == 0), 0))
    return [strings[t] if t < len(strings) else "" for t in types]


def metric_name(types, config):
    """(*RawProfile).metricName: the series' __name__ from the sample types and their display names."""
    if "wall" in types:
        return "wall"
    st = ""
    for st in types:
        if config is not None:
            display = (config.get(st) or {}).get("display-name")
        else:
            display = DEFAULT_DISPLAY.get(st)
        st = display or st
        if "cpu" in st:
            return "process_cpu"
        if "alloc_" in st or "inuse_" in st or st in ("space", "objects"):
            return "memory"
        for metric in ("mutex", "block"):
            if metric + "_" in st:
                return metric
        if "goroutines" in st:
            return "goroutines"
    return st


def raw_pprof(data):
    """pprof.RawFromBytesWithLimit: gunzip when gzip'ed, bounded, then protobuf; the plain bytes."""
    if data[:2] == b"\x1f\x8b":
        try:
            plain = gzip.decompress(data)
        except Exception as e:
            raise Refused(422, "failed to decompress profile: %s" % e)
    else:
        plain = data
    if len(plain) > MAX_PROFILE:
        raise Refused(422, "uncompressed profile payload size exceeds limit of %d bytes" % MAX_PROFILE)
    check_protobuf(plain)
    return plain


def disposition(headers):
    """Content-Disposition's name and filename (None when absent), as mime/multipart reads them."""
    name = filename = None
    for line in headers.split(b"\r\n"):
        key, _, value = line.partition(b":")
        if key.strip().lower() != b"content-disposition":
            continue
        for param in value.split(b";")[1:]:
            k, _, v = param.strip().partition(b"=")
            v = v.strip().strip(b'"').decode(errors="replace")
            if k.lower() == b"name":
                name = v
            elif k.lower() == b"filename":
                filename = v
    return name, filename


def form_files(content_type, body):
    """mime/multipart ReadForm's File map: the parts that carry a filename, by form name."""
    boundary = None
    for param in content_type.split(";")[1:]:
        k, _, v = param.strip().partition("=")
        if k.lower() == "boundary":
            boundary = v.strip('"')
    if not boundary:
        raise Refused(422, "failed to parse pprof /ingest multipart form malformed multipart content type header")
    delim = b"--" + boundary.encode()
    start = body.find(delim)            # a preamble before the first delimiter is skipped
    if start < 0 or (start > 0 and body[start - 2:start] != b"\r\n"):
        raise Refused(422, "failed to parse pprof /ingest multipart form multipart: NextPart: EOF")
    files, rest = {}, body[start + len(delim):]
    while True:
        if rest.startswith(b"--"):
            return files                # the closing delimiter
        if not rest.startswith(b"\r\n"):
            raise Refused(422, "failed to parse pprof /ingest multipart form multipart: NextPart: bad delimiter")
        end = rest.find(b"\r\n" + delim)
        if end < 0:
            raise Refused(422, "failed to parse pprof /ingest multipart form multipart: NextPart: EOF")
        part, rest = rest[2:end], rest[end + 2 + len(delim):]
        head, sep, data = part.partition(b"\r\n\r\n")
        if not sep:
            raise Refused(422, "failed to parse pprof /ingest multipart form malformed MIME header")
        name, filename = disposition(head)
        if name and filename is not None and name not in files:
            files[name] = data


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("fake_pyroscope: " + (fmt % args) + "\n")

    def answer(self, status, message=None):
        body = b"" if message is None else (json.dumps(
            {"code": CODES.get(status, "unknown"), "message": message}) + "\n").encode()
        self.send_response(status)
        if message is not None:
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if url.path not in ("/ingest", "/pyroscope/ingest"):
            return self.answer(404, "404 page not found")
        try:
            self.auth()
            self.ingest(urllib.parse.parse_qs(url.query), body)
        except Refused as e:
            self.answer(e.status, str(e))

    def auth(self):
        want = self.server.basic_auth
        if want and self.headers.get("Authorization") != "Basic " + base64.b64encode(want.encode()).decode():
            raise Refused(401, "authentication required")
        if self.server.tenant and not self.headers.get("X-Scope-OrgID"):
            raise Refused(401, "no org id")
        if self.server.tenant and self.headers.get("X-Scope-OrgID") != self.server.tenant:
            raise Refused(401, "unknown tenant")   # the emulated gateway's answer, not the handler's

    def ingest(self, q, body):
        get = lambda k: q.get(k, [""])[0]
        labels = parse_labelset(get("name"))
        start = parse_attime(get("from")) if get("from") else time.time()
        end = parse_attime(get("until")) if get("until") else time.time()
        fmt, ctype = get("format"), self.headers.get("Content-Type", "")
        stc = None
        if fmt == "pprof":
            profile = body
        elif fmt in ("trie", "tree", "lines", "jfr", "speedscope") or \
                (not fmt and ctype in ("binary/octet-stream+trie", "binary/octet-stream+tree")):
            raise Refused(501, "format %s is not emulated" % (fmt or ctype))
        elif "multipart/form-data" in ctype:
            files = form_files(ctype, body)
            profile = files.get("profile", b"")
            if files.get("prev_profile"):
                raise Refused(422, "failed to parse pprof /ingest multipart form unsupported client "
                              "version. Please update github.com/grafana/pyroscope-go to the latest version")
            if files.get("sample_type_config"):
                try:
                    stc = json.loads(files["sample_type_config"])
                except ValueError as e:
                    raise Refused(422, "failed to parse pprof /ingest multipart form %s" % e)
        else:
            raise Refused(501, "the groups (text) format is not emulated")
        if not profile:
            return self.answer(200)     # an empty profile: accepted, nothing stored
        types = sample_types(raw_pprof(profile))
        with lock:
            self.server.seq += 1
            path = os.path.join(self.server.dir, "%04d.pb.gz" % self.server.seq)
            with open(path, "wb") as f:
                f.write(profile)
            rec = {"seq": self.server.seq, "file": path, "labels": labels, "from": start, "until": end,
                   "spy": get("spyName") or "unknown", "format": fmt, "content_type": ctype.split(";")[0],
                   "sample_type_config": stc, "sample_types": types,
                   "kind": types[-1] if types else "", "metric": metric_name(types, stc), "tenant": self.headers.get("X-Scope-OrgID"),
                   "authorization": self.headers.get("Authorization"), "received": time.time()}
            with open(os.path.join(self.server.dir, "log"), "a") as f:
                f.write(json.dumps(rec) + "\n")
        self.answer(200)


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.dir, srv.tenant, srv.basic_auth = out, None, None
    srv.seq = len([f for f in os.listdir(out) if f.endswith(".pb.gz")]) if os.path.isdir(out) else 0
    os.makedirs(out, exist_ok=True)
    while args:
        if args[0] == "--tenant":
            srv.tenant = args[1]
        elif args[0] == "--basic-auth":
            srv.basic_auth = args[1]
        elif args[0] == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args[1], args[2])
            ctx.set_alpn_protocols(["http/1.1"])
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
            args = args[1:]
        args = args[2:]
    print("listening", port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
