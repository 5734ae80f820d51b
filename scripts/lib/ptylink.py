"""A terminal program in a pseudo-terminal, watched from the far end of a link.

Used by scripts/chaos and scripts/slowlink. The far end is a `pyte` screen fed by a reader
thread; every chunk is stamped with the time it reached the far end, so "key to frame" is the
time from a key leaving the far end to the first chunk after which the screen shows its effect.

A link may be throttled: the relay reads the PTY master no faster than `rate` bytes/s (the
program's writes block when the kernel's PTY buffer is full, as over a slow SSH link) and delivers
each chunk `latency` seconds later; keys travel the other way with the same latency.
"""
import collections
import fcntl
import os
import pty
import re
import signal
import struct
import termios
import threading
import time

import pyte


class Console:
    def __init__(self, argv, env, cols=100, rows=30, rate=None, latency=0.0):
        self.cols, self.rows = cols, rows
        self.rate, self.latency = rate, latency
        pid, fd = pty.fork()
        if pid == 0:
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.pid, self.fd = pid, fd
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.lock = threading.Condition()
        self.bytes = 0  # delivered to the far end
        self.chunks = []  # (time delivered, bytes)
        self.watch = None  # (regex, t0, callback): checked after each delivered chunk
        self.closed = False
        self._pending = collections.deque()  # (deliver_at, data), for the latency
        self._keys = collections.deque()
        threading.Thread(target=self._read, daemon=True).start()
        if latency > 0:
            threading.Thread(target=self._deliver, daemon=True).start()
            threading.Thread(target=self._send_keys, daemon=True).start()

    # ---------------------------------------------------------------- the link
    def _read(self):
        chunk = 65536 if self.rate is None else max(64, int(self.rate / 20))
        while True:
            t0 = time.monotonic()
            try:
                data = os.read(self.fd, chunk)
            except OSError:
                data = b""
            if not data:
                with self.lock:
                    self.closed = True
                    self.lock.notify_all()
                return
            for _ in range(data.count(b"\x1b[6n")):
                os.write(self.fd, b"\x1b[1;1R")
            if self.latency > 0:
                with self.lock:
                    self._pending.append((time.monotonic() + self.latency, data))
                    self.lock.notify_all()
            else:
                self._feed(data)
            if self.rate is not None:
                # the link carries len(data) bytes in len/rate seconds
                spent = time.monotonic() - t0
                time.sleep(max(0.0, len(data) / self.rate - spent))

    def _deliver(self):
        while True:
            with self.lock:
                while not self._pending and not self.closed:
                    self.lock.wait(0.5)
                if not self._pending:
                    return
                at, data = self._pending[0]
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self.lock:
                self._pending.popleft()
            self._feed(data)

    def _send_keys(self):
        while True:
            with self.lock:
                while not self._keys and not self.closed:
                    self.lock.wait(0.5)
                if not self._keys:
                    return
                at, data = self._keys[0]
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self.lock:
                self._keys.popleft()
            try:
                os.write(self.fd, data)
            except OSError:
                return

    def _feed(self, data):
        now = time.monotonic()
        with self.lock:
            self.stream.feed(data)
            self.bytes += len(data)
            self.chunks.append((now, len(data)))
            if self.watch is not None:
                pat, t0, done = self.watch
                if pat.search(self._text()):
                    self.watch = None
                    done(now - t0)
            self.lock.notify_all()

    # ---------------------------------------------------------------- the far end
    def _text(self):
        return "\n".join(self.screen.display)

    def text(self):
        with self.lock:
            return self._text()

    def send(self, keys):
        data = keys.encode()
        if self.latency > 0:
            with self.lock:
                self._keys.append((time.monotonic() + self.latency, data))
                self.lock.notify_all()
        else:
            os.write(self.fd, data)

    def wait_for(self, regex, timeout=30.0):
        """Seconds until the screen matches `regex` (None on timeout)."""
        pat = re.compile(regex)
        t0 = time.monotonic()
        with self.lock:
            while True:
                if pat.search(self._text()):
                    return time.monotonic() - t0
                left = timeout - (time.monotonic() - t0)
                if left <= 0 or self.closed:
                    return None
                self.lock.wait(min(left, 0.2))

    def key_to_frame(self, keys, regex, timeout=30.0):
        """Sends `keys` and returns the seconds until the far end's screen matches `regex`."""
        box = []
        ev = threading.Event()

        def done(dt):
            box.append(dt)
            ev.set()

        with self.lock:
            self.watch = (re.compile(regex), time.monotonic(), done)
        self.send(keys)
        # The screen may already have matched before the key: that is checked on the next chunk.
        if not ev.wait(timeout):
            with self.lock:
                self.watch = None
            return None
        return box[0]

    def quit(self, keys="q"):
        try:
            self.send(keys)
        except OSError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


class Prober:
    """Presses a marker key every `every` seconds and records the key-to-frame time of each:
    view keys whose effect (the view's title) is always visible. `hold()` pauses it while a
    scenario types into the console itself."""

    def __init__(self, console, marks, every=0.25):
        self.c, self.marks, self.every = console, marks, every
        self.samples = []
        self.missed = 0
        self._hold = threading.Lock()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        i = 0
        while not self._stop.is_set():
            with self._hold:
                key, regex = self.marks[i % len(self.marks)]
                dt = self.c.key_to_frame(key, regex, timeout=10)
                if dt is None:
                    self.missed += 1
                else:
                    self.samples.append(dt)
                i += 1
            self._stop.wait(self.every)

    def hold(self):
        return self._hold

    def stop(self):
        self._stop.set()
        self._t.join()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round((len(xs) - 1) * p)))]
