#!/usr/bin/env python3
"""What a process's heap held at one moment, by allocation site, from a heaptrack recording.

Usage: heaptrack_live.py FILE.zst [SECONDS_BEFORE_END=3] [ROWS=30]

heaptrack_print reports the peak and the leaks; the GUI shows the heap over time. This reads
the recording itself (heaptrack's interpreted format: strings `s`, instruction pointers `i`,
traces `t`, allocation infos `a`, allocations `+`/frees `-`, time `c`) and prints the bytes
live SECONDS_BEFORE_END before the recording ends (the steady state, before shutdown frees
anything), grouped by the innermost four frames of this project (`src/...`, `crates/*/src/...`).
"""
import collections
import subprocess
import sys


def main():
    path = sys.argv[1]
    back_ms = int(float(sys.argv[2]) * 1000) if len(sys.argv) > 2 else 3000
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    lines = subprocess.run(["zstd", "-dc", path], capture_output=True, text=True, check=True).stdout.split("\n")
    end = max(int(l[2:], 16) for l in lines if l.startswith("c "))
    at = end - back_ms
    strings, ips, traces, allocs = [None], [None], [(0, 0)], []
    live, snap = collections.Counter(), None
    for l in lines:
        if not l:
            continue
        k = l[0]
        if k == "s":
            strings.append(l[2:].split(" ", 1)[1] if " " in l[2:] else "")
        elif k == "i":
            rest = l.split()[3:]
            ips.append([(int(rest[j], 16), int(rest[j + 1], 16)) for j in range(0, len(rest) - 2, 3)])
        elif k == "t":
            a, b = l.split()[1:3]
            traces.append((int(a, 16), int(b, 16)))
        elif k == "a":
            a, b = l.split()[1:3]
            allocs.append((int(a, 16), int(b, 16)))
        elif k == "+":
            live[int(l[2:], 16)] += 1
        elif k == "-":
            live[int(l[2:], 16)] -= 1
        elif k == "c" and snap is None and int(l[2:], 16) >= at:
            snap = collections.Counter(live)
    snap = snap or live
    by_trace = collections.Counter()
    for ai, n in snap.items():
        if n > 0:
            size, trace = allocs[ai]
            by_trace[trace] += n * size

    def ours(trace):
        out = []
        while trace:
            ip, parent = traces[trace]
            for f, fl in ips[ip]:
                file = strings[fl] if 0 < fl < len(strings) else ""
                if file.startswith(("src/", "crates/")):
                    out.append(f"{strings[f].split('::')[-1][:40]}@{file}")
            trace = parent
        return " < ".join(out[:4]) or "(outside the project)"

    sites = collections.Counter()
    for trace, b in by_trace.items():
        sites[ours(trace)] += b
    print(f"live heap {at / 1000:.1f} s into the recording: {sum(sites.values()) / 1e6:.1f} MB")
    for site, b in sites.most_common(rows):
        print(f"{b / 1e6:8.1f} MB  {site[:200]}")


if __name__ == "__main__":
    main()
