#!/usr/bin/python3
"""execd PTY sessions: /pty REST + the /pty/{id}/ws WebSocket protocol (protocol.md 3.9)."""
import json
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: F401,F403
from osbtest import descendants

t = TAP()
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


class Term:
    """A PTY WebSocket client that sorts frames as they come."""

    def __init__(self, x, sid, query="", headers=None):
        self.ws = x.ws_connect("/pty/%s/ws%s" % (sid, query), headers=headers)
        self.out = bytearray()   # 0x01 payloads
        self.err = bytearray()   # 0x02 payloads
        self.replays = []        # (offset, bytes)
        self.texts = []          # parsed text frames
        self.frames = []         # ("bin", tag, len) / ("text", obj) in order
        self.closed = None       # (code, reason)

    def _one(self, timeout):
        op, p = self.ws.recv(timeout=timeout)
        if op == 8:
            self.closed = (self.ws.close_code, self.ws.close_reason)
        elif op == 2:
            self.frames.append(("bin", p[0], len(p)))
            if p[0] == 1:
                self.out += p[1:]
            elif p[0] == 2:
                self.err += p[1:]
            elif p[0] == 3:
                self.replays.append((struct.unpack("!Q", p[1:9])[0], p[9:]))
        elif op == 1:
            obj = json.loads(p)
            self.frames.append(("text", obj))
            self.texts.append(obj)
        return op

    def until(self, pred, timeout=10):
        end = time.monotonic() + timeout
        while not pred():
            left = end - time.monotonic()
            if left <= 0 or self.closed:
                return pred()
            try:
                self._one(left)
            except (OSError, ValueError):
                return pred()
        return True

    def wait_out(self, pattern, timeout=10):
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        return self.until(lambda: rx.search(bytes(self.out)) is not None, timeout)

    def wait_text(self, typ, timeout=10):
        ok = self.until(lambda: any(o.get("type") == typ for o in self.texts), timeout)
        return [o for o in self.texts if o.get("type") == typ] if ok else []

    def stdin(self, data):
        self.ws.send_binary(b"\x00" + (data.encode() if isinstance(data, str) else data))

    def send(self, obj):
        self.ws.send_text(json.dumps(obj))

    def close(self):
        self.ws.close()


def new_session(x, **body):
    r = x.post("/pty", json=body)
    assert r.status == 201, (r.status, r.body)
    return r.json()["session_id"]


def test_rest(x):
    r = x.post("/pty", json={})
    t.eq(r.status, 201, "POST /pty -> 201")
    sid = r.json().get("session_id", "")
    t.ok(re.fullmatch(UUID, sid), "session_id is a UUID", r.body)
    r = x.post("/pty", body=b"", headers={"Content-Type": "application/json"})
    t.eq(r.status, 201, "empty body -> 201")
    r = x.get("/pty/" + sid)
    t.eq((r.status, r.json()), (200, {"session_id": sid, "running": False, "output_offset": 0}),
         "GET before the first attach: not running, offset 0")
    t.is_error(x.get("/pty/nope"), 404, "CONTEXT_NOT_FOUND", "GET unknown -> 404")
    t.is_error(x.delete("/pty/nope"), 404, "CONTEXT_NOT_FOUND", "DELETE unknown -> 404")
    resp, ws = x.try_ws_connect("/pty/nope/ws")
    t.ok(ws is None, "WS to an unknown session is refused")
    t.is_error(resp, 404, "CONTEXT_NOT_FOUND", "WS unknown -> 404 JSON before the upgrade")
    t.is_error(x.post("/pty", body=b"{", headers={"Content-Type": "application/json"}), 400,
               "INVALID_REQUEST_BODY", "bad JSON -> 400")
    t.is_error(x.post("/pty", json={"command": 5}), 400, "INVALID_REQUEST_BODY",
               "command not a string -> 400")
    t.is_error(x.post("/pty", json={"cwd": "/nonexistent/dir"}), 400, "INVALID_REQUEST_BODY",
               "missing cwd -> 400")
    t.is_error(x.post("/pty", json=[1]), 400, "INVALID_REQUEST_BODY", "array body -> 400")
    t.is_empty_ok(x.delete("/pty/" + sid), "DELETE -> 200 empty")
    t.is_error(x.get("/pty/" + sid), 404, "CONTEXT_NOT_FOUND", "deleted session -> 404")


def test_echo_resize_tty(x):
    sid = new_session(x)
    term = Term(x, sid)
    conn = term.wait_text("connected")
    t.eq(conn[:1], [{"type": "connected", "session_id": sid, "mode": "pty"}], "connected frame")
    t.eq(term.frames[0][0], "text", "connected is the first frame without since")
    term.stdin("echo round-$((40+2))\n")
    t.ok(term.wait_out(r"round-42\r\n"), "binary stdin -> output round trip", bytes(term.out))
    term.send({"type": "stdin", "data": "echo text-$((1+1))\n"})
    t.ok(term.wait_out(r"text-2\r\n"), "text stdin frame", bytes(term.out))
    term.stdin("stty size; tty; [ -t 0 ] && echo is-a-tty\n")
    t.ok(term.wait_out(r"24 80\r\n"), "initial size 80x24", bytes(term.out[-300:]))
    t.ok(term.wait_out(r"/dev/pts/\d+\r\n") and term.wait_out("is-a-tty"),
         "stdin is a real terminal", bytes(term.out[-300:]))
    term.send({"type": "resize", "cols": 120, "rows": 40})
    term.stdin("stty size\n")
    t.ok(term.wait_out(r"40 120\r\n"), "resize -> stty size 40 120", bytes(term.out[-300:]))
    term.stdin("echo $TERM\n")
    t.ok(term.wait_out(r"xterm-256color\r\n"), "TERM is set for the shell")
    sizes = [f[2] for f in term.frames if f[0] == "bin"]
    t.ok(all(n <= 32 * 1024 + 1 for n in sizes), "frames are at most 32 KiB + tag")
    term.send({"type": "ping"})
    t.ok(term.wait_text("pong"), "ping -> pong")
    r = x.get("/pty/" + sid).json()
    t.ok(r["running"] and r["output_offset"] >= len(term.out), "GET: running, offset counts output",
         r)
    term.close()
    x.delete("/pty/" + sid)


def test_signals(x):
    sid = new_session(x)
    term = Term(x, sid)
    term.wait_text("connected")
    term.stdin("sleep 100\n")

    def sleeping():
        for p in descendants(x.proc.pid):
            with open("/proc/%d/cmdline" % p, "rb") as f:
                if f.read() == b"sleep\x00100\x00":
                    return True
        return False
    t.ok(wait_for(sleeping, timeout=30), "sleep 100 runs in the foreground")
    term.send({"type": "signal", "signal": "SIGINT"})
    term.stdin("echo rc=$?\n")
    t.ok(term.wait_out(r"rc=130"), "SIGINT stops the foreground command (rc=130)",
         bytes(term.out[-300:]))
    term.stdin("echo still-here\n")
    t.ok(term.wait_out("still-here"), "the shell survives SIGINT")
    term.send({"type": "signal", "signal": "SIGKILL"})
    ex = term.wait_text("exit")
    t.ok(ex and ex[0].get("exit_code") == -1, "SIGKILL to the idle shell -> exit frame, code -1",
         term.texts)
    term.until(lambda: term.closed, timeout=5)
    t.eq(term.closed, (1000, "process exited"), "then close 1000 'process exited'")


def test_bad_frames(x):
    sid = new_session(x)
    term = Term(x, sid)
    term.wait_text("connected")
    bad = [("text", "not json"), ("text", "[1,2]"), ("text", json.dumps({"type": "dance"})),
           ("text", json.dumps({"type": "resize", "cols": "wide", "rows": 10})),
           ("text", json.dumps({"type": "resize", "cols": 0, "rows": 10})),
           ("text", json.dumps({"type": "signal", "signal": "SIGFOO"})),
           ("text", json.dumps({"type": "stdin", "data": 5})),
           ("bin", b"\x07abc"), ("bin", b"")]
    for kind, payload in bad:
        n = len([o for o in term.texts if o.get("type") == "error"])
        if kind == "text":
            term.ws.send_text(payload)
        else:
            term.ws.send_binary(payload)
        ok = term.until(lambda: len([o for o in term.texts if o.get("type") == "error"]) > n, 5)
        errs = [o for o in term.texts if o.get("type") == "error"]
        t.ok(ok and errs[-1].get("code") == "INVALID_FRAME" and errs[-1].get("error"),
             "bad frame %r -> INVALID_FRAME" % (payload[:40],), term.texts[-1:])
    term.send({"type": "ping"})
    t.ok(term.wait_text("pong") and not term.closed, "connection stays usable after bad frames")
    term.close()
    x.delete("/pty/" + sid)


def test_strict_frames(x):
    """Text frames go through execd's one JSON parser: a duplicate key or
    nesting deeper than 64 levels is an INVALID_FRAME error naming the cause,
    and nothing of the frame reaches the shell."""
    sid = new_session(x)
    term = Term(x, sid, "?pty=0")  # pipes: no echo, the output is the shell's alone
    term.wait_text("connected")
    deep = "[" * 70 + "]" * 70
    bad = [('{"type":"stdin","data":"echo DUP1\\n","data":"echo DUP2\\n"}', "duplicate"),
           ('{"type":"stdin","type":"ping","data":"echo DUP3\\n"}', "duplicate"),
           ('{"type":"stdin","data":"echo DEEP1\\n","x":%s}' % deep, "deeper than 64"),
           ('{"type":"resize","cols":100,"cols":50,"rows":20}', "duplicate")]
    for frame, why in bad:
        n = len([o for o in term.texts if o.get("type") == "error"])
        term.ws.send_text(frame)
        ok = term.until(lambda: len([o for o in term.texts if o.get("type") == "error"]) > n, 10)
        e = [o for o in term.texts if o.get("type") == "error"][-1] if ok else {}
        t.ok(e.get("code") == "INVALID_FRAME" and why in e.get("error", ""),
             "frame %r -> INVALID_FRAME naming %r" % (frame[:50], why), e)
    term.send({"type": "stdin", "data": "echo OK-MARK\n"})
    t.ok(term.wait_out("OK-MARK"), "a good frame after them runs", bytes(term.out))
    t.ok(not re.search(rb"DUP|DEEP", bytes(term.out)), "nothing of the bad frames ran",
         bytes(term.out))
    t.ok(not term.closed, "the connection stays open")
    term.close()
    x.delete("/pty/" + sid)


def test_exit_and_replay(x):
    sid = new_session(x)
    term = Term(x, sid)
    term.wait_text("connected")
    term.stdin("echo first-marker-$((1+1))\n")
    term.wait_out(r"first-marker-2\r\n")
    time.sleep(0.2)  # let the prompt arrive too
    mid = x.get("/pty/" + sid).json()["output_offset"]
    term.stdin("echo second-marker-$((1+1))\n")
    term.wait_out(r"second-marker-2\r\n")
    term.close()
    # Output produced while nobody is attached is kept for the replay.
    time.sleep(0.3)
    t.ok(wait_for(lambda: x.try_ws_connect("/pty/%s/ws" % sid)[1] is not None and False or True),
         "reconnect after a clean close")
    term2 = Term(x, sid, "?since=0")
    term2.wait_text("connected")
    t.ok(term2.frames and term2.frames[0][0] == "bin" and term2.frames[0][1] == 3,
         "since: the replay frame comes first", term2.frames[:2])
    t.ok(term2.frames[1][0] == "text" and term2.texts[0]["type"] == "connected",
         "then the connected frame", term2.frames[:2])
    off, data = term2.replays[0] if term2.replays else (None, b"")
    t.eq(off, 0, "replay from 0 carries offset 0")
    t.ok(b"first-marker" in data and b"second-marker" in data, "replay has earlier output", data)
    term2.stdin("sleep 0.5; echo late-marker\n")
    term2.close()
    total_before = x.get("/pty/" + sid).json()["output_offset"]
    time.sleep(1.5)
    term3 = Term(x, sid, "?since=%d" % total_before)
    term3.wait_text("connected")
    data = b"".join(d for _, d in term3.replays)
    t.ok(b"late-marker" in data, "output made while detached is replayed", data)
    t.eq(term3.replays[0][0] if term3.replays else None, total_before, "replay offset = since")
    term3.close()
    term4 = Term(x, sid, "?since=%d" % mid)
    term4.wait_text("connected")
    t.ok(term4.replays and term4.replays[0][0] == mid and b"second-marker-2" in term4.replays[0][1]
         and b"first-marker" not in term4.replays[0][1], "since=N replays from N", term4.replays)
    big = x.get("/pty/" + sid).json()["output_offset"] + 1000
    term4.close()
    term5 = Term(x, sid, "?since=%d" % big)
    term5.wait_text("connected")
    t.eq(term5.replays, [], "since past the end -> no replay frame")
    term5.stdin("exit 5\n")
    ex = term5.wait_text("exit")
    t.eq(ex[:1], [{"type": "exit", "exit_code": 5}], "exit frame with the exit code")
    term5.until(lambda: term5.closed)
    t.eq(term5.closed, (1000, "process exited"), "close 1000 'process exited'")
    r = x.get("/pty/" + sid).json()
    t.eq(r["running"], False, "GET after exit: not running")
    term6 = Term(x, sid, "?since=0")
    ex = term6.wait_text("exit")
    term6.until(lambda: term6.closed)
    t.ok(term6.replays and ex and ex[0]["exit_code"] == 5 and term6.closed == (1000, "process exited"),
         "attaching to an exited session: replay, connected, exit, close", term6.frames)
    x.delete("/pty/" + sid)


def test_conflict_takeover(x):
    sid = new_session(x)
    a = Term(x, sid)
    a.wait_text("connected")
    resp, ws = x.try_ws_connect("/pty/%s/ws" % sid)
    t.ok(ws is None, "second client without takeover is refused")
    t.is_error(resp, 409, "ALREADY_CONNECTED", "-> 409 ALREADY_CONNECTED")
    b = Term(x, sid, "?takeover=1")
    t.ok(b.wait_text("connected"), "takeover=1 connects")
    a.until(lambda: a.closed, timeout=5)
    t.eq(a.closed, (4001, "TAKEN_OVER"), "old client closed with 4001 TAKEN_OVER")
    b.stdin("echo taken-$((2*3))\n")
    t.ok(b.wait_out("taken-6"), "the new client drives the shell")
    b.ws.abort()  # vanishes without a close frame
    ok = wait_for(lambda: x.try_ws_connect("/pty/%s/ws" % sid)[1] is not None, timeout=5,
                  interval=0.1)
    t.ok(ok, "after the client vanishes, a new client may attach")
    x.delete("/pty/" + sid)


def test_pipe_mode_and_command(x):
    sid = new_session(x, command="echo out-line; echo err-line >&2; read v; echo got-$v; "
                                 "[ -t 0 ] || echo no-tty; exit 3")
    term = Term(x, sid, "?pty=0")
    conn = term.wait_text("connected")
    t.eq(conn[0].get("mode") if conn else None, "pipe", "pty=0 -> pipe mode")
    term.send({"type": "stdin", "data": "abc\n"})
    term.send({"type": "resize", "cols": 100, "rows": 30})  # ignored in pipe mode
    ex = term.wait_text("exit")
    term.until(lambda: term.closed)
    t.ok(b"out-line\n" in term.out and b"got-abc\n" in term.out and b"no-tty" in term.out,
         "stdout frames (0x01)", bytes(term.out))
    t.eq(bytes(term.err), b"err-line\n", "stderr frames (0x02) kept apart")
    t.eq(ex[:1], [{"type": "exit", "exit_code": 3}], "command exit code")
    t.ok(not [o for o in term.texts if o.get("type") == "error"], "resize in pipe mode is ignored")
    sid = new_session(x, command="pwd; echo cmd-$((3*3))", cwd="/tmp")
    term = Term(x, sid)
    term.wait_text("exit")
    t.ok(b"/tmp\r\n" in term.out and b"cmd-9\r\n" in term.out,
         "command runs in cwd on a pty", bytes(term.out))
    x.delete("/pty/" + sid)


def test_big_output(x):
    sid = new_session(x)
    term = Term(x, sid)
    term.wait_text("connected")
    term.stdin("stty -echo; head -c 3000000 /dev/zero | tr '\\0' a; echo; echo big-$((1+1))\n")
    t.ok(term.wait_out(r"big-2", timeout=60), "3 MB of output arrives")
    t.ok(bytes(term.out).count(b"a") >= 3000000, "every byte", bytes(term.out).count(b"a"))
    sizes = [f[2] for f in term.frames if f[0] == "bin"]
    t.ok(max(sizes) <= 32 * 1024 + 1, "frames of at most 32 KiB", max(sizes))
    term.close()
    x.delete("/pty/" + sid)


def test_delete_live(x):
    sid = new_session(x)
    term = Term(x, sid)
    term.wait_text("connected")
    term.stdin("sleep 1000 & echo bg-pid=$!\n")
    t.ok(term.wait_out(r"bg-pid=\d+"), "background job started")
    pid = int(re.search(rb"bg-pid=(\d+)", bytes(term.out)).group(1))
    t.is_empty_ok(x.delete("/pty/" + sid), "DELETE a live session -> 200")
    term.until(lambda: term.closed, timeout=5)
    errs = [o for o in term.texts if o.get("type") == "error"]
    t.ok(errs and errs[-1].get("code") == "SESSION_GONE", "client told SESSION_GONE", term.texts)
    t.ok(term.closed is not None, "client connection closed")
    t.ok(wait_for(lambda: pid not in descendants(x.proc.pid), timeout=5),
         "the session's processes are killed")


def main():
    with Execd(env={"TERM": None}) as x:
        for fn in (test_rest, test_echo_resize_tty, test_signals, test_bad_frames, test_strict_frames,
                   test_exit_and_replay, test_conflict_takeover, test_pipe_mode_and_command,
                   test_big_output, test_delete_live):
            t.run(fn, x, timeout=90)
        t.ok(x.alive(), "execd alive at the end")


t.run(main, timeout=500)
t.done()
