#!/usr/bin/env python3
"""Key-to-screen in tmux: presses "?" (the help opens: "Symbols" is drawn)
and Escape (the fleet table's header, "worst finding", is drawn again) N
times each in the pane of a tmux server, and times each from send-keys to
the first bytes of the redraw reaching tmux. It listens as a control-mode
client (tmux -C), which streams the pane's output as it arrives, so no
capture-pane process is spawned per look.

    keytime.py SOCKET N
"""
import os, select, subprocess, sys, time

sock, n = sys.argv[1], int(sys.argv[2])
subprocess.run(["tmux", "-L", sock, "set-option", "-g", "window-size", "manual"], check=True)
ctl = subprocess.Popen(["tmux", "-L", sock, "-C", "attach"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
fd = ctl.stdout.fileno()
buf = b""


def lines(until):
    """Yields control-mode lines until the monotonic deadline."""
    global buf
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line
        left = until - time.monotonic()
        if left <= 0:
            return
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buf += chunk


def drain(seconds):
    for _ in lines(time.monotonic() + seconds):
        pass


def press(key, marker):
    drain(0.3)
    t0 = time.monotonic()
    ctl.stdin.write(b"send-keys " + key + b"\n")
    for line in lines(t0 + 5):
        if line.startswith(b"%output") and marker in line:
            return (time.monotonic() - t0) * 1000
    sys.exit("key %s: %s not drawn within 5 s" % (key.decode(), marker.decode()))


drain(0.5)
ms = []
for _ in range(n):
    ms.append(press(b"?", b"Symbols"))
    ms.append(press(b"Escape", b"worst finding"))
ctl.stdin.close()
ctl.terminate()
ms.sort()
q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
print("key-to-screen    %d presses: p50 %.1f ms, p99 %.1f ms, max %.1f ms (send-keys to the redraw reaching tmux)"
      % (len(ms), q(0.5), q(0.99), ms[-1]))
