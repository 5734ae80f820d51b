#!/usr/bin/env python3
"""Runs a terminal program in a pseudo-terminal and measures it from the outside.

Usage: pty_probe.py --wait REGEX [--keys K --every S] [--run S] [--quit Q] -- CMD...

Reports, as `key=value` lines: the seconds until REGEX first appeared in the program's output
(`ready_s`), its CPU seconds while it ran after that (`cpu_s`), its resident memory at the end
and at its peak (`rss_mb`, `peak_rss_mb`, from /proc), and whether it exited on the quit key.
Used by scripts/bench-kube to run gpuplane and kdash the same way.
"""
import argparse
import pyte  # a terminal emulator: the regex is matched against the rendered screen
import os
import pty
import re
import select
import signal
import struct
import fcntl
import termios
import time


def proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tck = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / tck
    except (OSError, IndexError):
        return 0.0


def kb(s):
    return int(s.split()[0]) / 1024 if s else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wait", required=True)
    ap.add_argument("--keys", default="")
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--run", type=float, default=0.0, help="seconds to keep running after ready")
    ap.add_argument("--quit", default="q")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--cols", type=int, default=200)
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.cols, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    pat = re.compile(a.wait)
    screen = pyte.Screen(a.cols, a.rows)
    stream = pyte.ByteStream(screen)
    t0 = time.monotonic()
    ready = None
    next_key = None
    cpu0 = 0.0
    peak = 0.0
    while True:
        now = time.monotonic()
        if ready is None and now - t0 > a.timeout:
            print("ready_s=timeout")
            break
        if ready is not None and now - ready >= a.run:
            break
        r, _, _ = select.select([fd], [], [], 0.02)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            # Answer cursor-position queries (some TUIs wait for them at start-up).
            for _ in range(data.count(b"\x1b[6n")):
                os.write(fd, b"\x1b[1;1R")
            if ready is None:
                stream.feed(data)
                if pat.search("\n".join(screen.display)):
                    ready = time.monotonic()
                    cpu0 = cpu_s(pid)
                    print(f"ready_s={ready - t0:.3f}")
                    next_key = ready
        st = proc_status(pid)
        peak = max(peak, kb(st.get("VmHWM", "")))
        if ready is not None and a.keys and time.monotonic() >= next_key:
            os.write(fd, a.keys.encode())
            next_key += a.every
    st = proc_status(pid)
    print(f"cpu_s={cpu_s(pid) - cpu0:.2f}")
    print(f"rss_mb={kb(st.get('VmRSS', '')):.0f}")
    print(f"peak_rss_mb={max(peak, kb(st.get('VmHWM', ''))):.0f}")
    try:
        os.write(fd, a.quit.encode())
    except OSError:
        pass
    deadline = time.monotonic() + 5
    exited = False
    while time.monotonic() < deadline:
        try:
            os.read(fd, 65536)
        except OSError:
            pass
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            exited = True
            break
        time.sleep(0.05)
    if not exited:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print(f"quit_ok={exited}")


if __name__ == "__main__":
    main()
