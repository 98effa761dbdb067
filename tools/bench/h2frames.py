#!/usr/bin/env python3
"""Counts the HTTP/2 frames a process read, per socket, from an strace log.

usage: strace -f -qq -e trace=read -e signal=none -xx -s 40000 -o LOG CMD...
       tools/bench/h2frames.py LOG

Each file descriptor's read() buffers are joined in order (a split
"unfinished ... resumed" pair included) and parsed as HTTP/2 frames after the
client preface, if any; descriptors with no HEADERS frame are left out. The
frames a peer sent are what the process read, so a gateway's backend
connection shows the PING ACKs of the gateway's own PINGs (BENCHMARKS.md,
"Backend connections: static flow-control windows").
"""
import collections
import re
import sys

DONE = re.compile(r'^(\d+)\s+read\((\d+), "((?:\\x[0-9a-f]{2})*)"(\.\.\.)?, \d+\)\s*= (-?\d+)')
START = re.compile(r'^(\d+)\s+read\((\d+),\s*<unfinished')
RESUMED = re.compile(r'^(\d+)\s+<\.\.\. read resumed>\s*"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?, \d+\)\s*= (-?\d+)')
NAMES = {0: 'DATA', 1: 'HEADERS', 2: 'PRIORITY', 3: 'RST_STREAM', 4: 'SETTINGS', 5: 'PUSH_PROMISE',
         6: 'PING', 7: 'GOAWAY', 8: 'WINDOW_UPDATE', 9: 'CONTINUATION'}
PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'


def reads(path):
    started = {}
    for line in open(path):
        m = DONE.match(line)
        if m:
            yield m.group(2), m.group(3), m.group(4), int(m.group(5))
            continue
        m = START.match(line)
        if m:
            started[m.group(1)] = m.group(2)
            continue
        m = RESUMED.match(line)
        if m and m.group(1) in started:
            yield started.pop(m.group(1)), m.group(2), m.group(3), int(m.group(4))


def main(path):
    streams = collections.defaultdict(bytearray)
    calls = collections.Counter()
    for fd, hexs, cut, n in reads(path):
        if n <= 0:
            continue
        if cut:
            sys.exit(f'{path}: a read of fd {fd} was cut off; trace with a larger -s')
        streams[fd] += bytes.fromhex(hexs.replace('\\x', ''))
        calls[fd] += 1
    for fd in sorted(streams, key=int):
        b = bytes(streams[fd])
        i = len(PREFACE) if b.startswith(PREFACE) else 0
        frames = collections.Counter()
        while i + 9 <= len(b):
            length, kind, flags = int.from_bytes(b[i:i + 3], 'big'), b[i + 3], b[i + 4]
            name = NAMES.get(kind, f'type{kind}')
            if kind in (4, 6) and flags & 1:
                name += '_ACK'
            frames[name] += 1
            i += 9 + length
        if frames['HEADERS'] == 0:
            continue
        print(f'fd {fd}: {calls[fd]} reads, ' + ', '.join(f'{k} {v}' for k, v in sorted(frames.items())))


if __name__ == '__main__':
    main(sys.argv[1])
