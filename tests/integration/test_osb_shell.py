#!/usr/bin/python3
"""osb shell through a real pseudo terminal (pty.fork): a typed command's
output comes back, a window resize reaches the remote terminal (stty size),
Ctrl-C interrupts a remote sleep and the shell lives on, `exit 3` ends osb
with status 3, and a dropped connection (the sandbox deleted under it, or
the server killed) ends osb too, as SIGTERM and SIGHUP do; every time the
local terminal's settings are as before (checked by a wrapper that runs osb
and compares tcgetattr before and after), and raw while the session runs."""
import json
import os
import re
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import fcntl
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
OSB = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "osb")

# Runs in the child on the pty: osb, then whether the terminal came back.
WRAPPER = r"""
import os, sys, termios, subprocess
before = termios.tcgetattr(0)
rc = subprocess.call(sys.argv[1:])
after = termios.tcgetattr(0)
sys.stdout.write("\r\n[osb-exit %d terminal-%s]\r\n" % (rc, "restored" if before == after else "CHANGED"))
sys.stdout.flush()
"""


class Term:
    def __init__(self, s, sid):
        env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
                   OPEN_SANDBOX_API_KEY=s.api_key, TERM="xterm")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve("/usr/bin/python3", ["python3", "-c", WRAPPER, OSB, "shell", sid], env)
        self.buf = b""

    def read_until(self, pattern, timeout=60):
        """Reads until pattern (bytes) is in the output since the last call."""
        end = time.monotonic() + timeout
        while pattern not in self.buf and time.monotonic() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except OSError:
                    break
                if not d:
                    break
                self.buf += d
        got = pattern in self.buf
        seen = self.buf
        if got:
            self.buf = self.buf[self.buf.index(pattern) + len(pattern):]
        return got, seen

    def send(self, data):
        os.write(self.fd, data)

    def resize(self, rows, cols):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def wait(self):
        end = time.monotonic() + 60
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            self.read_until(b"\x00never", timeout=0.5)
        os.kill(self.pid, signal.SIGKILL)
        return os.waitpid(self.pid, 0)[1]


def test_interactive(t, s, sid):
    term = Term(s, sid)
    # Typed-ahead input before the remote shell's first prompt is dropped by
    # its line editor (as on any terminal): wait for the prompt.
    ok, seen = term.read_until(b"# ")
    t.ok(ok, "the remote shell's prompt appears", seen[-300:])
    # The remote shell computes the marker, so the echo of what we type
    # cannot satisfy the check.
    term.send(b"echo mark-$((40+2))\r")
    ok, seen = term.read_until(b"mark-42")
    t.ok(ok, "a typed command's output comes back", seen[-400:])
    term.resize(33, 111)
    os.kill(term.pid, signal.SIGWINCH)  # the wrapper's child osb shares the pty; tell it too
    for _ in range(3):
        term.send(b"stty size | sed 's/ /x/'\r")
        ok, seen = term.read_until(b"33x111", timeout=20)
        if ok:
            break
    t.ok(ok, "a window resize reaches the remote terminal", seen[-400:])
    # The child prints the marker only once it runs, and bash gives a child
    # the terminal before it executes it: when the marker shows, a ^C reaches
    # the sleep (a ^C sent as soon as the line is echoed can hit bash before
    # the sleep is in the foreground, and be lost).
    term.send(b"sh -c 'echo sleeping-$((2*2)); exec sleep 600'; echo sleep-$((1+1))-ended\r")
    ok, seen = term.read_until(b"sleeping-4\r\n")
    t.ok(ok, "the remote sleep runs", seen[-300:])
    term.send(b"\x03")
    # A terminal's interrupt flushes its input queue: type on at the prompt.
    ok, seen = term.read_until(b"# ")
    term.send(b"echo alive-$((3*3))\r")
    ok, seen = term.read_until(b"alive-9")
    t.ok(ok and b"sleep-2-ended" not in seen, "Ctrl-C interrupts the remote sleep; the shell "
         "lives on", seen[-400:])
    term.send(b"exit 3\r")
    ok, seen = term.read_until(b"terminal-")
    t.ok(b"[osb-exit 3 terminal-" in seen, "exit 3 ends osb with status 3", seen[-400:])
    ok, rest = term.read_until(b"]")
    t.ok(rest.startswith(b"restored"), "the local terminal is restored after exit", rest[-200:])
    term.wait()


def test_dropped(t, s):
    sid = s.new()["id"]
    term = Term(s, sid)
    term.read_until(b"# ")
    term.send(b"echo up-$((2+3))\r")
    ok, seen = term.read_until(b"up-5")
    t.ok(ok, "second shell is up", seen[-300:])
    s.req("DELETE", "/v1/sandboxes/" + sid)
    ok, seen = term.read_until(b"terminal-")
    t.ok(ok and b"[osb-exit 3 terminal-" in seen, "a dropped connection ends osb (exit 3)",
         seen[-400:])
    ok, rest = term.read_until(b"]")
    t.ok(rest.startswith(b"restored"), "the local terminal is restored after a drop", rest[-200:])
    term.wait()


def test_piped(t, s, sid):
    env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
               OPEN_SANDBOX_API_KEY=s.api_key)
    r = subprocess.run([OSB, "shell", sid], input="echo piped-$((5*5))\nexit 4\n", env=env,
                       capture_output=True, text=True, timeout=120)
    t.ok(r.returncode == 4 and "piped-25" in r.stdout, "shell with a pipe as stdin",
         "%d %r %r" % (r.returncode, r.stdout[-300:], r.stderr[-300:]))
    r = subprocess.run([OSB, "shell", "no-such-sandbox"], env=env, capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    t.ok(r.returncode == 1 and "NOT_FOUND" in r.stderr, "shell to an unknown sandbox: exit 1",
         r.stderr)


def osb_pid(term):
    """The pid of osb, the wrapper's only child."""
    path = "/proc/%d/task/%d/children" % (term.pid, term.pid)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        with open(path) as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    raise RuntimeError("osb did not start")


def test_raw_mode(t, s, sid):
    term = Term(s, sid)
    ok, seen = term.read_until(b"# ")
    t.ok(ok, "the prompt appears", seen[-300:])
    lflag = termios.tcgetattr(term.fd)[3]
    t.ok(not lflag & (termios.ECHO | termios.ICANON | termios.ISIG),
         "the local terminal is raw while the session runs (no echo, no line editing, "
         "no signal keys)", "lflag %#o" % lflag)
    term.send(b"\x1a")  # Ctrl-Z is a byte for the remote shell, not a stop for osb
    term.send(b"echo still-$((2*4))\r")
    ok, seen = term.read_until(b"still-8")
    t.ok(ok, "Ctrl-Z does not stop osb", seen[-300:])
    term.send(b"exit\r")
    ok, seen = term.read_until(b"]")
    t.ok(b"[osb-exit 0 terminal-restored]" in seen, "exit: status 0, terminal restored",
         seen[-300:])
    term.wait()


def test_signals(t, s, sid):
    for sig, code in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        term = Term(s, sid)
        ok, seen = term.read_until(b"# ")
        t.ok(ok, "%s: the shell is up" % sig.name, seen[-300:])
        os.kill(osb_pid(term), sig)
        ok, seen = term.read_until(b"]")
        t.ok(b"[osb-exit %d terminal-restored]" % code in seen,
             "%s ends osb (exit %d) and restores the terminal" % (sig.name, code), seen[-300:])
        term.wait()


def test_server_killed(t, s):
    sid = s.new()["id"]
    term = Term(s, sid)
    term.read_until(b"# ")
    term.send(b"echo up-$((3+4))\r")
    ok, seen = term.read_until(b"up-7")
    t.ok(ok, "the shell is up", seen[-300:])
    s.kill(signal.SIGKILL)
    try:
        ok, seen = term.read_until(b"]")
        m = re.search(rb"\[osb-exit (\d+) terminal-(\w+)\]", seen)
        t.ok(m and m.group(1) in (b"1", b"3") and b"osb: shell: " in seen,
             "the server killed: osb ends with an error (1 or 3) and says why", seen[-400:])
        t.ok(m and m.group(2) == b"restored", "the local terminal is restored", seen[-300:])
        term.wait()
    finally:
        s.restart()


def main():
    with Server(api_key="shell-key") as s:
        sid = s.new()["id"]
        t.run(test_interactive, t, s, sid, name="interactive", timeout=240)
        t.run(test_raw_mode, t, s, sid, name="raw mode", timeout=120)
        t.run(test_signals, t, s, sid, name="signals", timeout=120)
        t.run(test_piped, t, s, sid, name="piped", timeout=200)
        t.run(test_dropped, t, s, name="dropped", timeout=200)
        t.run(test_server_killed, t, s, name="server killed", timeout=200)


t.run(main, name="osb shell", timeout=700)
t.done()
