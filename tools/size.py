#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""What the stripped aperture binary is made of: bytes per component.

Reads the GNU ld map of the static link (build/aperture.map, written by
`make aperture`) and counts every input section kept in an allocated output
section that has file contents (.bss is listed apart: it costs memory, not
disk).  The embedded BPF objects are string literals inside our own .rodata,
xz streams (tools/skel-xz.py, kept as build/NAME.bpf.xz): they are found byte
for byte in the binary and moved out of "aperture".

usage: tools/size.py [MAP [BINARY [EMBEDDED_BLOB...]]]
"""
import os
import re
import subprocess
import sys

# (component, regular expression on the input file's path), first match wins.
COMPONENTS = [
    # LTO: our code comes out of the link-time compiler as *.ltrans.o
    ("aperture (our code)", r"(^|/)build/(libaperture\.a|user/)|\.ltrans\.o$"),
    ("libbpf", r"/libbpf\.a\("),
    ("libdw + libelf (elfutils)", r"/lib(dw|elf)\.a\("),
    ("zlib, xz, bzip2, zstd", r"/lib(z|lzma|bz2|zstd)\.a\("),
    ("nghttp2", r"/libnghttp2\.a\("),
    ("nanopb runtime", r"/libprotobuf-nanopb\.a\("),
    ("libiberty (C++/Rust demangler)", r"/libiberty\.a\("),
    ("mbedTLS", r"/libmbed(tls|x509|crypto)\.a\("),
    ("OpenSSL", r"/lib(ssl|crypto)\.a\("),
    ("glibc + libgcc", r"/(libc|libm|libpthread|libgcc|libgcc_eh|libdl|librt)(-[0-9.]+)?\.a\(|/[rS]?crt[^/]*\.o$"),
]
OTHER = "linker (headers, padding, tables)"
# Sections the linker makes itself (the unwind index, the static PIE's relocations and symbol
# tables): the map lists them under the first input file, the C start-up object.
LINKER_MADE = re.compile(r"^\.(eh_frame_hdr|dynamic|dynsym|dynstr|gnu\.hash|hash|rela?\.|relr\.|got|plt)")


def component_of(path):
    for name, regex in COMPONENTS:
        if re.search(regex, path):
            return name
    return "other: " + os.path.basename(path)


def file_sections(binary):
    """Names of the output sections that take room in the file, and of the NOBITS ones."""
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    progbits, nobits = set(), set()
    for m in re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S*)", out, re.M):
        name, kind, flags = m.groups()
        if "A" not in flags:
            continue
        (nobits if kind == "NOBITS" else progbits).add(name)
    return progbits, nobits


INPUT = re.compile(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+(.*))?$")


def parse_map(path, progbits, nobits):
    """{component: [file bytes, bss bytes]}, read from the memory map part of the map file."""
    sizes = {}
    out_section = None
    pending = None			# an input section name whose numbers are on the next line
    in_memory_map = False
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("Linker script and memory map"):
                in_memory_map = True
                continue
            if not in_memory_map or not line:
                continue
            if line[0] not in " *":
                out_section = line.split()[0]
                pending = None
                continue
            if pending is not None and line.startswith("  "):
                line = " " + pending + " " + line.strip()
                pending = None
            m = INPUT.match(line)
            if not m:
                fields = line.split()
                if len(fields) == 1 and line.startswith(" .") or line.startswith(" COMMON"):
                    pending = fields[0]
                continue
            name, _, size, where = m.groups()
            if name is None or where is None or where.startswith("0x") or " = " in where:
                continue		# a symbol line, or an assignment
            size = int(size, 16)
            if size == 0 or out_section not in progbits | nobits:
                continue
            linker_made = name == "*fill*" or where.startswith("linker stubs") or LINKER_MADE.match(name)
            comp = OTHER if linker_made else component_of(where)
            entry = sizes.setdefault(comp, [0, 0])
            entry[1 if out_section in nobits else 0] += size
    return sizes


def embedded_bpf(binary, objects):
    """(bytes, copies) of the BPF objects found verbatim in @binary."""
    data = open(binary, "rb").read()
    total = copies = 0
    for obj in objects:
        blob = open(obj, "rb").read()
        n = data.count(blob)
        total += n * len(blob)
        copies += n
    return total, copies


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    map_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build/aperture.map")
    binary = sys.argv[2] if len(sys.argv) > 2 else os.path.join(top, "build/aperture.unstripped")
    objects = sys.argv[3:] or sorted(os.path.join(top, "build", f) for f in os.listdir(os.path.join(top, "build"))
                                     if f.endswith(".bpf.xz"))
    progbits, nobits = file_sections(binary)
    sizes = parse_map(map_path, progbits, nobits)
    bpf_bytes, bpf_copies = embedded_bpf(binary, objects)
    ours = sizes.setdefault("aperture (our code)", [0, 0])
    ours[0] -= bpf_bytes
    raw = sum(os.path.getsize(o[:-len(".xz")] + ".o") for o in objects if o.endswith(".bpf.xz")
              and os.path.exists(o[:-len(".xz")] + ".o"))
    label = "embedded BPF objects (%d in %d copies)" % (len(objects), bpf_copies)
    if raw:
        label = "embedded BPF objects (%d, xz of %d KB)" % (len(objects), raw // 1000)
        if bpf_copies != len(objects):
            label += " %d copies" % bpf_copies
    sizes[label] = [bpf_bytes, 0]
    stripped = os.path.join(top, "aperture")
    counted = sum(v[0] for v in sizes.values())
    print("%-40s %10s %8s" % ("component", "bytes", "bss"))
    for comp, (fbytes, bss) in sorted(sizes.items(), key=lambda kv: -kv[1][0]):
        print("%-40s %10d %8d" % (comp, fbytes, bss))
    print("%-40s %10d" % ("sum of sections", counted))
    if os.path.exists(stripped):
        print("%-40s %10d  (+ ELF headers and alignment)" % ("stripped binary: " + os.path.relpath(stripped, top),
                                                            os.path.getsize(stripped)))


if __name__ == "__main__":
    main()
