#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Rewrites a bpftool skeleton so that it embeds its BPF object xz-compressed.

usage: bpftool gen skeleton OBJ name N_bpf | tools/skel-xz.py OBJ XZ_OUT > N.skel.h

The skeleton's N_bpf__elf_bytes() returns the object from a string literal;
it becomes a call to bpf_xz_elf() (user/lib/bpf_xz.c), which inflates the
xz stream once.  The literal must be OBJ byte for byte (checked), and the
stream is also written to XZ_OUT for tools/size.py.  The dictionary is the
object's size rounded up, so that the decoder's allocation stays small.
"""
import lzma
import re
import sys


def c_literal(data):
    out, line = [], ""
    for b in data:
        line += "\\x%02x" % b
        if len(line) >= 76:
            out.append(line + "\\")
            line = ""
    out.append(line)
    return '"\\\n' + "\n".join(out) + '"'


def main():
    obj_path, xz_path = sys.argv[1], sys.argv[2]
    obj = open(obj_path, "rb").read()
    skel = sys.stdin.read()
    fn = re.compile(r'(static inline const void \*(\w+)__elf_bytes\(size_t \*sz\)\n\{\n)'
                    r'\t\*sz = (\d+);\n\treturn \(const void \*\)"((?:[^"\\]|\\.|\\\n)*)";\n\}', re.S)
    m = fn.search(skel)
    if not m or len(fn.findall(skel)) != 1:
        sys.exit("skel-xz: no single __elf_bytes() in the skeleton of %s (bpftool changed?)" % obj_path)
    embedded = m.group(4).replace("\\\n", "").encode("latin-1").decode("unicode_escape").encode("latin-1")
    if int(m.group(3)) != len(obj) or embedded != obj:
        sys.exit("skel-xz: the skeleton does not embed %s as it is" % obj_path)
    dict_size = max(4096, 1 << (len(obj) - 1).bit_length())
    xz = lzma.compress(obj, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
                       filters=[{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME,
                                 "dict_size": dict_size}])
    if lzma.decompress(xz) != obj:
        sys.exit("skel-xz: round trip failed")
    open(xz_path, "wb").write(xz)
    body = (m.group(1) +
            "\t/* %s: %d bytes, xz-compressed to %d (tools/skel-xz.py) */\n" % (obj_path.split("/")[-1], len(obj), len(xz)) +
            "\treturn bpf_xz_elf(%s,\n\t\t\t  %d, %d, sz);\n}" % (c_literal(xz), len(xz), len(obj)))
    skel = skel[:m.start()] + body + skel[m.end():]
    skel = skel.replace("#include <bpf/libbpf.h>\n", "#include <bpf/libbpf.h>\n#include \"bpf_xz.h\"\n", 1)
    if '#include "bpf_xz.h"' not in skel:
        sys.exit("skel-xz: no #include <bpf/libbpf.h> to follow")
    sys.stdout.write(skel)


if __name__ == "__main__":
    main()
