#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Names the instruction pointers in qemu's `info registers -a` (stdin).

  symbolize.py KALLSYMS

KALLSYMS is the guest's /proc/kallsyms as the guest copied it once
xferk.ko was loaded (tests/vm/guest.sh): the running kernel's addresses,
the modules' included. Each "RIP=" line becomes "CPU#N RIP=ADDR
FUNCTION+OFFSET [MODULE]", or "?" where no text symbol is below it.
"""
import bisect
import re
import sys


def text_symbols(path):
    pairs = []
    try:
        for line in open(path, errors="replace"):
            f = line.split()
            if len(f) >= 3 and f[1] in "tTwW":
                pairs.append((int(f[0], 16), f[2] + (" " + f[3] if len(f) > 3 else "")))
    except OSError:
        pass
    pairs.sort()
    return [a for a, _ in pairs], [n for _, n in pairs]


def main():
    addrs, names = text_symbols(sys.argv[1])
    cpu = "?"
    for line in sys.stdin:
        m = re.match(r"CPU#(\d+)", line)
        if m:
            cpu = m.group(1)
        m = re.match(r"RIP=([0-9a-f]+)", line)
        if not m:
            continue
        rip = int(m.group(1), 16)
        i = bisect.bisect_right(addrs, rip) - 1
        where = "?"
        if i >= 0 and addrs[i]:
            sym = names[i].split(" ", 1)
            where = f"{sym[0]}+{rip - addrs[i]:#x}" + (" " + sym[1] if len(sym) > 1 else "")
        print(f"CPU#{cpu} RIP={rip:016x} {where}")


if __name__ == "__main__":
    main()
