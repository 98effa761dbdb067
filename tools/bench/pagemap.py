#!/usr/bin/env python3
"""Where a process's file-backed resident pages are (issue 30 target 2).

usage: pagemap.py PID BINARY

Prints the process's file-backed resident memory by mapped file
(/proc/PID/smaps), then, for BINARY's own mappings, how much of each ELF
section is present in the process's page tables (/proc/PID/pagemap, bit 63)
and in how many runs, then the .text pages present grouped by module or
top-level package (a page counts for the package owning most of its bytes;
`go tool nm -size -sort address`). Run as root (pagemap) on Linux. The kernel
maps file pages in fault-around blocks (64 KiB by default), so a package is
"present" as soon as any function near its code ran.
"""
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = 4096


def mappings(pid):
    out, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
            if m:
                cur = {"lo": int(m.group(1), 16), "hi": int(m.group(2), 16), "name": m.group(4), "Rss": 0, "Anonymous": 0}
                out.append(cur)
                continue
            key = line.split(":")[0]
            if cur is not None and key in ("Rss", "Anonymous"):
                cur[key] = int(line.split()[1])
    return out


def present_pages(pid, maps, binary):
    real = os.path.realpath(binary)
    pages = set()
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        for m in maps:
            if not m["name"].startswith("/") or os.path.realpath(m["name"]) != real:
                continue
            n = (m["hi"] - m["lo"]) // PAGE
            pm.seek(m["lo"] // PAGE * 8)
            data = pm.read(n * 8)
            for i in range(n):
                if struct.unpack_from("<Q", data, i * 8)[0] >> 63:
                    pages.add(m["lo"] // PAGE + i)
    return pages


def sections(binary):
    out = []
    res = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16) and int(m.group(3), 16) >= 1 << 16:
            out.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16)))
    return out


def package(sym):
    slash = sym.rfind("/")
    dot = sym.find(".", slash + 1)
    return sym[:dot] if dot > 0 else sym


def group(pkg):
    parts = pkg.split("/")
    if parts[0] == "vendor":
        return "vendor"
    if "." not in parts[0]:
        return parts[0]  # the standard library, by top-level package
    return "/".join(parts[:3] if parts[0] in ("github.com", "golang.org") else parts[:2])


def main():
    pid, binary = int(sys.argv[1]), sys.argv[2]
    maps = mappings(pid)
    byname = collections.Counter()
    for m in maps:
        byname[m["name"] or "[anon]"] += m["Rss"] - m["Anonymous"]
    print(f"file-backed resident: {sum(byname.values()) / 1024:.1f} MiB")
    for name, kib in byname.most_common(5):
        if kib:
            print(f"  {kib / 1024:6.1f} MiB  {name}")
    present = present_pages(pid, maps, binary)
    print("sections of the binary: present / size (MiB), runs of present pages")
    for name, addr, size in sections(binary):
        flags = [p in present for p in range(addr // PAGE, (addr + size + PAGE - 1) // PAGE)]
        runs = sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))
        print(f"  {name:12s} {sum(flags) * PAGE / 2**20:6.2f} / {size / 2**20:6.2f}  runs={runs}")
    nm = subprocess.run(["go", "tool", "nm", "-size", "-sort", "address", binary], capture_output=True, text=True, check=True)
    owners, total = {}, collections.Counter()
    for line in nm.stdout.splitlines():
        f = line.split(None, 3)
        if len(f) < 4 or f[2] not in ("T", "t") or int(f[1]) == 0:
            continue
        addr, size, g = int(f[0], 16), int(f[1]), group(package(f[3].strip()))
        total[g] += size
        for pg in range(addr // PAGE, (addr + size - 1) // PAGE + 1):
            lo, hi = max(addr, pg * PAGE), min(addr + size, (pg + 1) * PAGE)
            owners.setdefault(pg, collections.Counter())[g] += hi - lo
    held = collections.Counter()
    for pg, c in owners.items():
        if pg in present:
            held[c.most_common(1)[0][0]] += 1
    print(".text present by module / top-level package (MiB present / MiB of code)")
    for g, n in held.most_common(30):
        print(f"  {n * PAGE / 2**20:6.2f} / {total[g] / 2**20:6.2f}  {g}")


if __name__ == "__main__":
    main()
