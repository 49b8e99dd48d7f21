#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""xz_bigdict.py IN.xz OUT.xz: the same .xz stream, its first block's LZMA2
dictionary size claimed to be 4 GiB - 1 (filter properties byte 40), the
block header's CRC32 made right again, so that a decoder must either refuse
it or set up a 4 GiB dictionary.  Layout: the .xz file format 1.1.0,
sections 2.1.1 (stream header, 12 bytes), 3.1 (block header), 5.3.1 (LZMA2
properties)."""
import struct
import sys
import zlib


def vli(b, p):
    v = shift = 0
    while True:
        c = b[p]
        p += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, p


def main():
    b = bytearray(open(sys.argv[1], "rb").read())
    h = 12
    size = (b[h] + 1) * 4
    flags = b[h + 1]
    p = h + 2
    if flags & 0x40:        # compressed size present
        _, p = vli(b, p)
    if flags & 0x80:        # uncompressed size present
        _, p = vli(b, p)
    filter_id, p = vli(b, p)
    nprops, p = vli(b, p)
    if filter_id != 0x21 or nprops != 1:
        sys.exit("xz_bigdict.py: the first filter is not LZMA2")
    b[p] = 40
    struct.pack_into("<I", b, h + size - 4, zlib.crc32(bytes(b[h:h + size - 4])))
    open(sys.argv[2], "wb").write(b)


main()
