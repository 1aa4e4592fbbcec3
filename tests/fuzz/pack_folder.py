#!/usr/bin/env python3
"""Packs the files a job left for sysmeasure-merge (FOLDER/.ranks/*.smp,
FOLDER/.spill/*.events and *.defs) into one input of fuzz_merge.c:

    pack_folder.py FOLDER OUT [MODE]

MODE is the harness's first byte (default 1: the harness recomputes the
files' checks after the fuzzer's changes)."""
import os
import struct
import sys


def pack(folder, mode=1):
    out = bytearray([mode])
    for sub, suffix, kind in ((".ranks", ".smp", 0), (".spill", ".events", 1),
                              (".spill", ".defs", 2)):
        d = os.path.join(folder, sub)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if not name.endswith(suffix):
                continue
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            raw = name.encode()[:255]
            out += bytes([kind, len(raw)]) + raw + struct.pack("<I", len(data)) + data
    return bytes(out)


if __name__ == "__main__":
    with open(sys.argv[2], "wb") as f:
        f.write(pack(sys.argv[1], int(sys.argv[3]) if len(sys.argv) > 3 else 1))
