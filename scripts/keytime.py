#!/usr/bin/env python3
"""Key-to-screen in tmux: presses "?" (the help opens: "Symbols" is drawn)
and Escape (the fleet table's header, "worst finding", is drawn again) N
times each in the pane of each tmux server given, and times each from
send-keys to the first bytes of the redraw reaching tmux. It listens as a
control-mode client (tmux -C), which streams the pane's output as it
arrives, so no capture-pane process is spawned per look. With several
servers (a TUI and a baseline beside it) the presses alternate between
them, so both are timed in the same seconds; one line each.

    keytime.py N SOCKET [SOCKET...]
"""
import os, select, subprocess, sys, time


class Pane:
    def __init__(self, sock):
        self.sock = sock
        subprocess.run(["tmux", "-L", sock, "set-option", "-g", "window-size", "manual"], check=True)
        self.ctl = subprocess.Popen(["tmux", "-L", sock, "-C", "attach"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.fd = self.ctl.stdout.fileno()
        self.buf = b""
        self.ms = []

    def lines(self, until):
        """Yields control-mode lines until the monotonic deadline."""
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                yield line
            left = until - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    return
                self.buf += chunk

    def drain(self, seconds):
        for _ in self.lines(time.monotonic() + seconds):
            pass

    def press(self, key, marker):
        self.drain(0.3)
        t0 = time.monotonic()
        self.ctl.stdin.write(b"send-keys " + key + b"\n")
        for line in self.lines(t0 + 5):
            if line.startswith(b"%output") and marker in line:
                self.ms.append((time.monotonic() - t0) * 1000)
                return
        sys.exit("%s: key %s: %s not drawn within 5 s" % (self.sock, key.decode(), marker.decode()))

    def close(self):
        self.ctl.stdin.close()
        self.ctl.terminate()


n = int(sys.argv[1])
panes = [Pane(s) for s in sys.argv[2:]]
for p in panes:
    p.drain(0.5)
for _ in range(n):
    for p in panes:
        p.press(b"?", b"Symbols")
        p.press(b"Escape", b"worst finding")
for i, p in enumerate(panes):
    p.close()
    ms = sorted(p.ms)
    q = lambda f: ms[min(len(ms) - 1, int(f * len(ms)))]
    label = "key-to-screen" if i == 0 else "baseline keys"
    print("%-16s %d presses: p50 %.1f ms, p99 %.1f ms, max %.1f ms (send-keys to the redraw reaching tmux)"
          % (label, len(ms), q(0.5), q(0.99), ms[-1]))
