#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A hostile ELF for the unwind-table builder: an .eh_frame without
.eh_frame_hdr, written byte by byte (no linker merges its CIEs).

  gen_ehframe.py OUT cies N     N functions, each FDE with its own CIE (CIE,
                                FDE, CIE, FDE...): a linear CIE lookup per FDE
                                costs N^2/2 steps
  gen_ehframe.py OUT rows N R   N functions sharing one CIE, each FDE with R
                                rows (DW_CFA_advance_loc 1, DW_CFA_def_cfa_offset):
                                libdw replays a function from its start for
                                each row, R^2/2 steps a function
  gen_ehframe.py OUT nops N B   N functions sharing one CIE, each FDE's program
                                B DW_CFA_nop: no rows, N x B instructions to run

Each function is 16 bytes (rows mode: R bytes, at least 16) of a NOBITS
.text at 0x10000; the FDEs use the zR form every x86_64 toolchain writes
(pc-relative sdata4 pointers).  Layout from the System V x86_64 psABI
(.eh_frame) and the ELF64 gABI.
"""
import struct
import sys

TEXT_VADDR = 0x10000
EH_VADDR = 0x40000000          # above .text, within an sdata4 of it


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pad4(body):
    """An entry: its 4-byte length, then body padded with DW_CFA_nop to a multiple of 4."""
    body += b'\0' * (-(len(body) + 4) % 4)
    return struct.pack('<I', len(body)) + body


def cie():
    # id 0, version 1, "zR", code align 1, data align -8, return address r16,
    # augmentation data: FDE encoding pcrel|sdata4; CFA = rsp + 8, ra at CFA - 8.
    body = struct.pack('<I', 0) + b'\x01zR\x00' + uleb(1) + b'\x78' + uleb(16) + uleb(1) + b'\x1b'
    body += b'\x0c\x07\x08' + b'\x90\x01'
    return pad4(body)


def fde(at, cie_at, start, size, rows, nops):
    """The FDE placed at .eh_frame offset @at, its CIE at @cie_at."""
    instrs = b''.join(b'\x41\x0e' + uleb(16 + 8 * (k % 64)) for k in range(rows)) + b'\0' * nops
    pc_field = EH_VADDR + at + 8
    body = struct.pack('<I', at + 4 - cie_at) + struct.pack('<iI', start - pc_field, size) + uleb(0) + instrs
    return pad4(body)


def eh_frame(mode, n, rows, nops):
    out = bytearray()
    fsize = max(16, rows + 1)
    cie_at = 0
    for i in range(n):
        if mode == 'cies' or i == 0:
            cie_at = len(out)
            out += cie()
        out += fde(len(out), cie_at, TEXT_VADDR + i * fsize, fsize, rows, nops)
    out += b'\0\0\0\0'      # the terminator
    return bytes(out), n * fsize


def elf(eh, text_size):
    shstr = b'\0.text\0.eh_frame\0.shstrtab\0'
    ehsize, shentsize = 64, 64
    eh_off = ehsize
    shstr_off = eh_off + len(eh)
    sh_off = (shstr_off + len(shstr) + 7) & ~7
    hdr = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8
    hdr += struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, TEXT_VADDR, 0, sh_off, 0, ehsize, 56, 0, shentsize, 4, 3)

    def sh(name, typ, flags, addr, off, size, align):
        return struct.pack('<IIQQQQIIQQ', name, typ, flags, addr, off, size, 0, 0, align, 0)
    shdrs = sh(0, 0, 0, 0, 0, 0, 0)
    shdrs += sh(1, 8, 6, TEXT_VADDR, eh_off, text_size, 16)            # .text NOBITS, AX
    shdrs += sh(7, 1, 2, EH_VADDR, eh_off, len(eh), 8)                 # .eh_frame PROGBITS, A
    shdrs += sh(17, 3, 0, 0, shstr_off, len(shstr), 1)                 # .shstrtab
    body = hdr + eh + shstr
    return body + b'\0' * (sh_off - len(body)) + shdrs


def main():
    out, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = int(sys.argv[4]) if mode == 'rows' else 0
    nops = int(sys.argv[4]) if mode == 'nops' else 0
    if mode not in ('cies', 'rows', 'nops'):
        sys.exit('usage: gen_ehframe.py OUT cies N | OUT rows N R | OUT nops N B')
    eh, text_size = eh_frame(mode, n, rows, nops)
    with open(out, 'wb') as f:
        f.write(elf(eh, text_size))


main()
