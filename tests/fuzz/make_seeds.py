#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the seed corpora, one folder per target:
  commands, grpc  real OAP answers, encoded with protobuf from the fake OAP's
                  commands (tests/agent/fake_oap.py), and for fuzz_grpc the same
                  answers as a server's HTTP/2 bytes (SETTINGS, response
                  HEADERS, DATA, trailers; HPACK literals), plus a reset stream
                  and a GOAWAY
  config          the README's config files, the agent's, and bad ones
  maps            /proc/PID/maps: a typical process, odd names, this process's own
  perfmap         JIT perf maps (JVM, V8 forms; recompiled, sizeless entries)
  open            paths into fuzz_open's tree (a FIFO, a device, a socket, a
                  sparse file, symlinks in and out of it, "..", a loop); the
                  first byte also picks the kind of the child's perf map
  kallsyms        /proc/kallsyms excerpts (modules, aliases, hidden addresses)
                  and /sys/kernel/notes with a build id
  elf             tiny binaries built here with gcc: static (no .eh_frame_hdr),
                  shared (.dynsym, .eh_frame_hdr), stripped with .gnu_debuglink
                  and .gnu_debugdata; and this machine's vDSO
  events          `record --events` files: one record of each kind, several,
                  a truncated one
  make_seeds.py DIR [TARGET...]    (writes DIR/TARGET/*; default every target)"""
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tempfile

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


def write(top, target, name, body):
    os.makedirs(os.path.join(top, target), exist_ok=True)
    with open(os.path.join(top, target, name), "wb") as f:
        f.write(body.encode() if isinstance(body, str) else body)


def oap_seeds(top):
    seeds = {"tasks1": task_commands(1), "tasks3": task_commands(3), "empty": b"",
             "downstream": downstream()}
    for name, body in seeds.items():
        write(top, "commands", name, body)
        write(top, "grpc", name, response(body))
    settings = frame(4, 0, 0, b"")
    write(top, "grpc", "status14", response(b"", "14"))
    write(top, "grpc", "html", response(b"<html>", "0", "text/html"))
    write(top, "grpc", "rst", settings + frame(3, 0, 1, struct.pack(">I", 2)))
    write(top, "grpc", "goaway", settings + frame(7, 0, 0, struct.pack(">II", 0, 0)))


def config_seeds(top):
    write(top, "config", "daemon", "# /etc/aperture/aperture.conf\npin = /sys/fs/bpf/aperture\n"
          "profilers = oncpu,offcpu\nfrequency = 49\nmin-block-us = 100\n"
          "output-dir = /var/lib/aperture/profiles\ninterval = 5m\nkeep-mb = 512\nlog-format = json\n")
    write(top, "config", "agent", "oap = oap.example:11800   # the OAP\nexe-pattern = \"*#x\"\n"
          "service = svc\nlayer = GENERAL\nlabel = blue\nspool-size = 16M\n"
          "heartbeat-interval = 20\nunwind = auto\nuser-only = yes\npid = 1\n")
    write(top, "config", "bad", "frequency = fast\n\n  = 1\nunknown-key = 1\nhelp = true\n")


MAPS_TYPICAL = """55d4c6a00000-55d4c6a02000 r--p 00000000 08:01 1311                       /usr/bin/cat
55d4c6a02000-55d4c6a07000 r-xp 00002000 08:01 1311                       /usr/bin/cat
55d4c6a07000-55d4c6a0a000 r--p 00007000 08:01 1311                       /usr/bin/cat
55d4c7c2e000-55d4c7c4f000 rw-p 00000000 00:00 0                          [heap]
7f1c2a000000-7f1c2a022000 r--p 00000000 08:01 2222                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a022000-7f1c2a197000 r-xp 00022000 08:01 2222                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a197000-7f1c2a1ef000 r--p 00197000 08:01 2222                       /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2a1f5000-7f1c2a202000 rw-p 00000000 00:00 0 
7f1c2a400000-7f1c2a401000 rwxp 00000000 00:00 0 
7ffd1e5c8000-7ffd1e5e9000 rw-p 00000000 00:00 0                          [stack]
7ffd1e5f0000-7ffd1e5f2000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
"""

MAPS_ODD = """7f0000000000-7f0000001000 r-xp 00000000 00:01 77                         /memfd:jit (deleted)
7f0000001000-7f0000002000 r-xp 00001000 08:01 99                         /tmp/a b (deleted)
7f0000002000-7f0000003000 r-xp 00000000 08:01 98                         /tmp/x
7f0000003000-7f0000004000 r-xp 00000000 00:00 0 forged
7f0000004000-7f0000005000 r-xp 00000000 fd:00 18446744073709551615         /opt/libc.so.6.so
7f0000004000
7f0000005000-7f0000006000 r 00000000 08:01 3 /short-perms
"""


# A path deeper than PATH_MAX (a directory chain, opened step by step): a reader with a fixed
# buffer read the rest of the line as a line of its own, naming "/libc.so.6" in the middle.
MAPS_LONG_LINE = ("7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /" + "d/" * 2300 + "lib/libc.so.6\n" +
                  "7f0000001000-7f0000002000 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n")


def own_maps(lines=None):
    with open("/proc/self/maps", "rb") as f:
        return b"".join(f.readlines()[:lines])


def maps_seeds(top):
    write(top, "maps", "typical", MAPS_TYPICAL)
    write(top, "maps", "odd", MAPS_ODD)
    write(top, "maps", "self", own_maps(40))
    write(top, "maps", "regress-long-line", MAPS_LONG_LINE)


def perfmap_seeds(top):
    write(top, "perfmap", "jvm", "7f3c0a001000 40 Interpreter\n7f3c0a001040 1a0 LJava/lang/String;::hashCode\n"
          "7f3c0a001040 1a0 LJava/lang/String;::hashCode (recompiled)\n7f3c0a002000 0 stub\n")
    write(top, "perfmap", "v8", "3ef0c4c0 1d4 LazyCompile:~foo /app/x.js:1:1\n"
          "3ef0c6a0 2c Builtin:ArgumentsAdaptorTrampoline\n\nzz 1 bad\n3ef0c700 10\n")


KALLSYMS = """ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000070 t verify_cpu
ffffffff81000170 W weak_alias
ffffffff81000200 D some_data
ffffffffc0a00000 t nft_do_chain	[nf_tables]
ffffffffc0a00100 T nft_register_chain_type	[nf_tables]
"""


def notes(build_id):
    return struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id


OPEN_PATHS = {"ok": "ok", "fifo": "fifo", "dev": "dev", "sock": "sock", "big": "big", "dir": "dir",
              "link_rel": "link_rel", "link_abs": "link_abs", "link_zero": "link_zero", "link_up": "link_up/ok",
              "link_loop": "link_loop", "link_fifo": "link_fifo", "link_dir": "link_dir/inner",
              "dir_back": "dir/link_back", "dir_root": "dir/link_root/etc/passwd", "self_fd": "link_self_fd",
              "dotdot": "dir/../ok", "tmp_up": "tmp/../link_up/../ok", "empty": "", "slashes": "//ok",
              "dot": "./ok", "perfmap_file": "\x000 10 jitfn\n", "perfmap_lines": "\x07ffff 1 a\nzz\n"}


def open_seeds(top):
    for name, path in OPEN_PATHS.items():
        write(top, "open", name, path)


def kallsyms_seeds(top):
    write(top, "kallsyms", "text", KALLSYMS)
    write(top, "kallsyms", "hidden", "0000000000000000 T _stext\n0000000000000000 t verify_cpu\n")
    write(top, "kallsyms", "notes", struct.pack("<III", 6, 4, 1) + b"Linux\0\0\0" + b"\x01\0\0\0" +
          notes(bytes(range(20))))


ELF_SRC = """
int leaf(int x) { return x * 3; }
int middle(int x) { return leaf(x) + 1; }
int counter = 1;
void _start(void) { for (;;) counter += middle(counter); }
"""


def build_elves(work):
    """The tiny binaries, or {} when gcc or objcopy is missing."""
    if not shutil.which("gcc") or not shutil.which("objcopy"):
        print("make_seeds.py: no gcc/objcopy: the elf seeds are not rebuilt", file=sys.stderr)
        return {}
    src = os.path.join(work, "t.c")
    open(src, "w").write(ELF_SRC)
    small = ["-Os", "-nostdlib", "-fasynchronous-unwind-tables", "-Wl,--build-id",
             "-Wl,-z,max-page-size=0x1000", "-Wl,-z,noseparate-code", "-o"]
    out = {}
    for name, flags in (("static", ["-static"]), ("shared", ["-shared", "-fPIC", "-Wl,--eh-frame-hdr"])):
        path = os.path.join(work, name)
        subprocess.run(["gcc"] + small + [path, src] + flags, check=True)
        out[name] = path
    # Stripped, with a debuglink and the symbols as .gnu_debugdata (xz), as Fedora ships them.
    mini = os.path.join(work, "mini.xz")
    open(mini, "wb").write(lzma.compress(open(out["static"], "rb").read()))
    stripped = os.path.join(work, "stripped")
    subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + out["static"],
                    "--add-section", ".gnu_debugdata=" + mini, out["static"], stripped], check=True)
    out["stripped"] = stripped
    return {k: open(v, "rb").read() for k, v in out.items()}


# ---- hand-made ELF files: only the parts a reader looks at, small enough for the fuzzer to mutate ----

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE = 1, 2, 3, 7


def uleb(v):
    out = b""
    while True:
        byte, v = v & 0x7f, v >> 7
        out += bytes([byte | (0x80 if v else 0)])
        if not v:
            return out


def cie(augmentation=b"zR", aug_data=b"\x1b", instructions=b"\x0c\x07\x08\x90\x01"):
    """A CIE: code align 1, data align -8, return address column 16, CFA = rsp + 8, ra at CFA - 8."""
    body = struct.pack("<I", 0) + b"\x01" + augmentation + b"\0" + b"\x01\x78\x10"
    if augmentation.startswith(b"z"):
        body += uleb(len(aug_data)) + aug_data
    body += instructions
    return struct.pack("<I", len(body)) + body


def fde(cie_offset, offset, eh_addr, start, length, instructions=b"\x41\x0e\x10\x4f\x0e\x08"):
    """An FDE at @offset in an .eh_frame at @eh_addr, for [start, start + length): pointers pcrel sdata4
    (0x1b); by default CFA = rsp + 16 after the first byte, back to rsp + 8 15 bytes later."""
    body = (struct.pack("<I", offset + 4 - cie_offset) + struct.pack("<i", start - (eh_addr + offset + 8)) +
            struct.pack("<I", length) + b"\0" + instructions)
    return struct.pack("<I", len(body)) + body


def eh_frame_hdr(hdr_addr, eh_addr, table):
    """Version 1, eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4: (start, fde address) pairs."""
    out = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack("<iI", eh_addr - (hdr_addr + 4), len(table))
    return out + b"".join(struct.pack("<ii", start - hdr_addr, at - hdr_addr) for start, at in table)


def elf(sections, entry=0, loads=(), bits=64):
    """A little-endian x86_64 (or, @bits 32, i386) ELF: header, PT_LOADs (vaddr, offset, size), section
    headers, .shstrtab, then the sections' bytes in order, the last one ending the file.  @sections:
    (name, type, addr, bytes, entsize, link[, offset]): with an offset, the section claims those bytes
    of the file instead (its own bytes are not written)."""
    wide = bits == 64
    shdr_fmt, phdr_fmt = ("<IIQQQQIIQQ", "<IIQQQQQQ") if wide else ("<IIIIIIIIII", "<IIIIIIII")
    ehsize, phsize, shsize = (64, 56, 64) if wide else (52, 32, 40)
    names = b"\0.shstrtab\0" + b"".join(sec[0].encode() + b"\0" for sec in sections)
    sections = [(".shstrtab", SHT_STRTAB, 0, names, 0, 0)] + list(sections)
    phoff, shoff = ehsize, ehsize + phsize * len(loads)
    offset = shoff + shsize * (len(sections) + 1)
    shdrs, blob, name_at = [b"\0" * shsize], b"", 1
    for name, kind, addr, body, entsize, link, *claimed in sections:
        at = claimed[0] if claimed else offset + len(blob)
        shdrs.append(struct.pack(shdr_fmt, name_at, kind, 2 if kind == SHT_PROGBITS else 0, addr, at,
                                 len(body), link, 1 if kind == SHT_SYMTAB else 0, 1, entsize))
        name_at += len(name) + 1
        blob += b"" if claimed else body
    ehdr = (b"\x7fELF" + bytes([2 if wide else 1]) + b"\x01\x01" + b"\0" * 9 +
            struct.pack("<HHI" + ("QQQ" if wide else "III") + "IHHHHHH", 2, 62 if wide else 3, 1, entry,
                        phoff if loads else 0, shoff, 0, ehsize, phsize, len(loads), shsize, len(shdrs), 1))
    if wide:
        phdrs = b"".join(struct.pack(phdr_fmt, 1, 5, off, vaddr, vaddr, size, size, 0x1000)
                         for vaddr, off, size in loads)
    else:
        phdrs = b"".join(struct.pack(phdr_fmt, 1, off, vaddr, vaddr, size, size, 5, 0x1000)
                         for vaddr, off, size in loads)
    return ehdr + phdrs + b"".join(shdrs) + blob


def symtab(symbols):
    """.symtab and .strtab bodies for (name, value, size) global functions."""
    strtab, syms = b"\0", b"\0" * 24
    for name, value, size in symbols:
        syms += struct.pack("<IBBHQQ", len(strtab), 0x12, 0, 1, value, size)
        strtab += name.encode() + b"\0"
    return syms, strtab


def crafted_unwind(hdr_addr=0x2000, eh_addr=0x2100, fde_rel=None):
    """Two functions at 0x1000 and 0x1040, their FDEs, the sorted table; symbols, a build id, one PT_LOAD."""
    frame = cie()
    first = fde(0, len(frame), eh_addr, 0x1000, 0x40)
    second = fde(0, len(frame) + len(first), eh_addr, 0x1040, 0x20)
    table = [(0x1000, eh_addr + len(frame)), (0x1040, eh_addr + len(frame) + len(first))]
    if fde_rel is not None:
        table = [(0x1000, hdr_addr + fde_rel)]
    syms, strs = symtab([("first", 0x1000, 0x40), ("second", 0x1040, 0x20)])
    sections = [(".eh_frame", SHT_PROGBITS, eh_addr, frame + first + second, 0, 0),
                (".eh_frame_hdr", SHT_PROGBITS, hdr_addr, eh_frame_hdr(hdr_addr, eh_addr, table), 0, 0),
                (".note.gnu.build-id", SHT_NOTE, 0, notes(bytes(range(20))), 0, 0),
                (".symtab", SHT_SYMTAB, 0, syms, 24, 6), (".strtab", SHT_STRTAB, 0, strs, 0, 0)]
    return elf(sections, entry=0x1000, loads=[(0x1000, 0x1000, 0x100)])


def crafted_scan():
    """No .eh_frame_hdr (as in a static binary): the FDEs are found by scanning .eh_frame, CIE "zPLR"."""
    frame = cie(b"zPLR", b"\x00" + struct.pack("<Q", 0x1234) + b"\x1b\x1b")
    first = fde(0, len(frame), 0x2000, 0x1000, 0x40, b"\0\x41\x0e\x10")
    return elf([(".eh_frame", SHT_PROGBITS, 0x2000, frame + first, 0, 0)], entry=0x1000)


def regress_fde_end_wrap():
    """An .eh_frame_hdr entry 8 bytes below an .eh_frame at address 0 (fde_end's off + 16 wrapped)."""
    table = eh_frame_hdr(0, 0, [(0x1000, -8)])
    return elf([(".eh_frame", SHT_PROGBITS, 0, b"\0" * 0x40, 0, 0, 0), (".eh_frame_hdr", SHT_PROGBITS, 0, table, 0, 0)])


def regress_cie_absptr_32():
    """A 32-bit file's CIE "zPR", P absptr: 4 bytes to libdw, 8 to cie_fde_encoding (read past the CIE)."""
    frame = cie(b"zPR", b"\x00" + struct.pack("<I", 0x1234) + b"\x1b", b"")
    return elf([(".eh_frame", SHT_PROGBITS, 0x2000, frame, 0, 0)], bits=32)


def regress_many_rows(rows=2000):
    """One function of @rows rows (CFA rsp+16, rsp+8, ... a byte apart): libdw's replay made it quadratic."""
    frame = cie()
    body = fde(0, len(frame), 0x2000, 0x1000, rows + 16, b"\x41\x0e\x10\x41\x0e\x08" * (rows // 2))
    return elf([(".eh_frame", SHT_PROGBITS, 0x2000, frame + body, 0, 0)])


def own_vdso():
    for line in own_maps().decode().splitlines():
        if line.endswith("[vdso]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            with open("/proc/self/mem", "rb") as mem:
                mem.seek(lo)
                return mem.read(hi - lo)
    return None


def elf_seeds(top):
    with tempfile.TemporaryDirectory() as work:
        for name, body in build_elves(work).items():
            write(top, "elf", name, body)
    write(top, "elf", "crafted-hdr", crafted_unwind())
    write(top, "elf", "crafted-scan", crafted_scan())
    write(top, "elf", "regress-fde-end-wrap", regress_fde_end_wrap())
    write(top, "elf", "regress-cie-absptr-32", regress_cie_absptr_32())
    write(top, "elf", "regress-many-rows", regress_many_rows())
    vdso = own_vdso()
    if vdso:
        write(top, "elf", "vdso", vdso)


def record(kind, *fields):
    body = struct.pack("<I", kind) + b"".join(fields)
    return struct.pack("<I", len(body)) + body


def u64s(values):
    return struct.pack("<Q", len(values)) + b"".join(struct.pack("<Q", v) for v in values)


def string(s):
    return struct.pack("<Q", len(s.encode())) + s.encode()


def syms(names):
    return struct.pack("<Q", len(names)) + b"".join(b"\0" if n is None else b"\1" + string(n) for n in names)


def events_seeds(top):
    cpu = record(0, struct.pack("<QiiI", 1000, 42, 43, 1), u64s([0x401000, 0x401100]), u64s([0xffffffff81000070]),
                 string("prog"), syms(["main", None]), syms(["verify_cpu"]))
    lock = record(1, struct.pack("<QiiQQQ", 2000, 42, 44, 0x7f0000001000, 500, 70), u64s([0x401000]),
                  string("pr\u00f6g"), syms([None]))
    sysc = record(2, struct.pack("<QiiIQq", 3000, 42, 42, 0, 1200, -11), string("prog"))
    gpu = record(3, struct.pack("<Qi", 4000, 42), string("matmul"), struct.pack("<Q3I3I", 900, 64, 1, 1, 256, 1, 1))
    for name, body in (("cpu", cpu), ("lock", lock), ("syscall", sysc), ("gpu", gpu)):
        write(top, "events", name, body)
    write(top, "events", "all", cpu + lock + sysc + gpu)
    write(top, "events", "truncated", cpu + lock[:-3])
    write(top, "events", "regress-empty", b"")  # --summary sorted a NULL array


SEEDS = {"commands": oap_seeds, "grpc": oap_seeds, "config": config_seeds, "maps": maps_seeds,
         "perfmap": perfmap_seeds, "open": open_seeds, "kallsyms": kallsyms_seeds, "elf": elf_seeds, "events": events_seeds}


def main():
    top = sys.argv[1]
    for make in dict.fromkeys(SEEDS[t] for t in (sys.argv[2:] or SEEDS)):
        make(top)


if __name__ == "__main__":
    main()
