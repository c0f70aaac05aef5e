#!/usr/bin/python3
"""A hostile HTTP client against the real lifecycle server (with an API key)
and a real execd (with an access token).

1. Bodies nobody reads: a request that matches no route, or a public route
   that takes no body (/ping, /health, the server's fallback behind the
   public /health* and /docs* prefixes), or the public egress route without
   its token, is answered at the end of its headers. The body offered
   (64 MiB, with Expect: 100-continue: the answer comes instead of the 100)
   is never buffered: the daemon's memory stays flat and the connection
   ends before the client has sent it all. (Before, each such
   connection could make the daemon hold 16 MiB for anyone.)
   A small body of known length is dropped instead, so the connection
   lives on.
2. The head deadline (OSB_HEAD_TIMEOUT_MS): a connection that sends nothing,
   trickles its head a byte at a time, never finishes a small body nobody
   reads, or idles after a response is closed (a partial request gets a
   JSON 408), while an authenticated SSE stream and a
   slow authenticated upload that started before keep going and succeed."""
import json
import os
import re
import select
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403
from serverlib import Server  # noqa: E402

t = TAP()
KEY = "hostile-key-" + os.urandom(4).hex()
TOKEN = "hostile-token-" + os.urandom(4).hex()
HDR = "X-EXECD-ACCESS-TOKEN"
MiB = 1 << 20
OFFER = 64 * MiB
# Far below the 16 MiB a buffered body takes.
RSS_BOUND_KIB = 6 * 1024



def offer(port, h, total):
    """Send head h (with Expect: 100-continue), wait for the daemon's first
    word, then send up to total body bytes while reading what comes back,
    until the daemon closes. Returns (raw answer, bytes sent, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(h)
    raw, sent, eof = b"", 0, False
    chunk = b"x" * MiB
    deadline = time.monotonic() + 60
    # The first word is a "100 Continue" or a whole final response: its
    # body too, so a close that follows (with the rest of ours unread,
    # which makes the kernel send a reset) cannot take it from us.
    while not ((raw.startswith(b"HTTP/1.1 100 ") and b"\r\n\r\n" in raw) or
               first_response(raw) is not None) and time.monotonic() < deadline:
        if select.select([s], [], [], 1)[0]:
            d = s.recv(65536)
            if not d:
                eof = True
                break
            raw += d

    def drain(wait):
        nonlocal raw, eof
        while not eof and select.select([s], [], [], wait)[0]:
            d = s.recv(65536)
            if not d:
                eof = True
            raw += d
            wait = 0

    try:
        while sent < total and not eof:
            drain(0)
            if select.select([], [s], [], 60)[1]:
                sent += s.send(chunk)
        deadline = time.monotonic() + 60
        while not eof and time.monotonic() < deadline:
            drain(1)
    except (BrokenPipeError, ConnectionResetError):
        eof = True
    s.close()
    return raw, sent, eof


def unread_body(pid, port, method, path, want_status, want_code, label, headers=None):
    rss0, hwm0 = proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM")
    h = dict(headers or {})
    h["Content-Length"] = str(OFFER)
    h["Expect"] = "100-continue"
    raw, sent, eof = offer(port, build_request(method, path, h), OFFER)
    rss1, hwm1 = proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM")
    r = first_response(raw)
    code = None
    if r and want_code:
        try:
            code = json.loads(r[2]).get("code")
        except ValueError:
            pass
    t.ok(r is not None and r[0] == want_status and code == want_code,
         "%s: %d %s" % (label, want_status, want_code or ""), raw[:300])
    t.ok(sent < OFFER and eof, "%s: closed before the body was sent (%d of %d MiB taken)"
         % (label, sent // MiB, OFFER // MiB))
    t.ok(rss1 - rss0 < RSS_BOUND_KIB and hwm1 - hwm0 < RSS_BOUND_KIB,
         "%s: RSS +%d KiB, peak +%d KiB (bound %d KiB)"
         % (label, rss1 - rss0, hwm1 - hwm0, RSS_BOUND_KIB))


# ------------------------------------------------------------- head deadline

class Loris:
    """Connections that never complete a request head."""

    def __init__(self, port, path, body_path):
        self.silent = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.trickle = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.trickle.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " % path).encode())
        # Idle after one complete request on a keep-alive connection.
        self.idle = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.idle.sendall(build_request("GET", path, {}))
        self.idle_first = b""
        while first_response(self.idle_first) is None:
            d = self.idle.recv(65536)
            if not d:
                break
            self.idle_first += d
        # A small body nobody reads (dropped as it comes), never finished.
        self.body = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.body.sendall(build_request("POST", body_path, {"Content-Length": "1000"}) + b"x" * 10)
        self.got = {"silent": b"", "trickle": b"", "idle": b"", "body": b""}
        self.closed = set()

    def socks(self):
        return {"silent": self.silent, "trickle": self.trickle, "idle": self.idle,
                "body": self.body}

    def step(self):
        """One round: a byte more of the trickled head, then read whatever
        came. True once the daemon has closed all three."""
        if "trickle" not in self.closed:
            try:
                self.trickle.send(b"a")
            except OSError:
                pass
        for name, s in self.socks().items():
            while name not in self.closed and select.select([s], [], [], 0)[0]:
                try:
                    d = s.recv(65536)
                except OSError:
                    d = b""
                if not d:
                    self.closed.add(name)
                self.got[name] += d
        return len(self.closed) == 4

    def check(self, label, code_key):
        t.ok(first_response(self.idle_first) is not None and
             first_response(self.idle_first)[0] == 200,
             "%s: the keep-alive connection got its first answer" % label, self.idle_first[:200])
        for name in ("silent", "idle"):
            t.ok(name in self.closed and self.got[name] == b"",
                 "%s: a %s connection is closed without an answer" % (label, name),
                 self.got[name][:200])
        for name, what in (("trickle", "a trickled head"), ("body", "an unread body")):
            r = first_response(self.got[name])
            code = None
            if r:
                try:
                    code = json.loads(r[2]).get(code_key)
                except ValueError:
                    pass
            t.ok(name in self.closed and r is not None and r[0] == 408 and
                 code == "REQUEST_TIMEOUT" and r[1].get("connection") == "close",
                 "%s: %s gets 408 REQUEST_TIMEOUT and the connection closes" % (label, what),
                 self.got[name][:300])

    def close(self):
        for s in self.socks().values():
            s.close()


def wait_loris(loris, label):
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not all(lo.step() for lo in loris):
        time.sleep(1)
    for lo in loris:
        t.ok(len(lo.closed) == 4, "%s: every head-less connection ended (%s)"
             % (label, sorted(lo.closed)))


def small_body_kept(port, path, want, label):
    """A small body nobody reads is dropped and the connection lives on."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(build_request("POST", path, {"Content-Length": "2000"}) + b"y" * 2000 +
              build_request("GET", path, {"Connection": "close"}))
    raw = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        raw += d
    s.close()
    statuses = [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", raw)]
    t.eq(statuses, want, "%s: a small unread body is dropped, the next request is answered"
         % label, raw[:400])


def test_execd(x):
    pid = x.proc.pid
    unread_body(pid, x.port, "POST", "/no/such/route", 404, None, "execd POST /no/such/route")
    unread_body(pid, x.port, "POST", "/ping", 404, None, "execd POST /ping (no such method)")
    unread_body(pid, x.port, "GET", "/ping", 200, None, "execd GET /ping with a body")
    small_body_kept(x.port, "/ping", [404, 200], "execd")

    d = tempfile.mkdtemp(prefix="osb-hostile-")
    marker = os.path.join(d, "go")
    # Started before the slow clients, still running after they are gone.
    sse = x.sse_stream("/command", json={
        "command": "while [ ! -e %s ]; do sleep 0.1; done; echo survived" % marker})
    t.eq(sse.status, 200, "execd: an authenticated SSE command is streaming")
    dest = os.path.join(d, "slow.bin")
    data = os.urandom(256 * 1024)
    ctype, body = multipart(upload_parts([({"path": dest}, data)]))
    up = socket.create_connection(("127.0.0.1", x.port), timeout=60)
    up.sendall(build_request("POST", "/files/upload", {HDR: TOKEN, "Content-Type": ctype,
                                              "Content-Length": str(len(body)),
                                              "Connection": "close"}))
    half = len(body) // 2
    up.sendall(body[:half])

    lo = Loris(x.port, "/ping", "/no/such/route")
    wait_loris([lo], "execd")
    lo.check("execd", "code")
    lo.close()

    up.sendall(body[half:])
    got = b""
    while True:
        dd = up.recv(65536)
        if not dd:
            break
        got += dd
    up.close()
    r = first_response(got)
    t.ok(r is not None and r[0] == 200, "execd: the slow authenticated upload succeeds", got[:300])
    with open(dest, "rb") as f:
        t.ok(f.read() == data, "execd: the slowly uploaded file is intact")
    open(marker, "w").close()
    events = [ev for _, ev in sse]
    t.eq(stdout_lines(events), ["survived"], "execd: the SSE stream outlived the slow clients")
    t.eq(x.get("/ping").status, 200, "execd: still serving")


def test_server(s):
    pid = s.proc.pid
    unread_body(pid, s.port, "POST", "/health", 404, "GENERAL::NOT_FOUND",
                "server POST /health (public prefix, no such method)")
    unread_body(pid, s.port, "GET", "/health", 200, None, "server GET /health with a body")
    small_body_kept(s.port, "/health", [404, 200], "server")
    unread_body(pid, s.port, "PUT", "/healthz/x", 404, "GENERAL::NOT_FOUND", "server PUT /healthz/x")
    unread_body(pid, s.port, "POST", "/docs/x", 404, "GENERAL::NOT_FOUND", "server POST /docs/x")
    unread_body(pid, s.port, "PATCH", "/sandboxes/nope/proxy/18080/policy", 400,
                "SANDBOX::NOT_FOUND", "server egress PATCH, unknown sandbox",
                {"Content-Type": "application/json"})
    sbx = s.new()
    unread_body(pid, s.port, "PATCH", "/v1/sandboxes/%s/proxy/18080/policy" % sbx["id"], 400,
                "EGRESS::NOT_ENABLED", "server egress PATCH without networkPolicy",
                {"Content-Type": "application/json"})

    # An authenticated request whose headers are in is not timed: its body
    # comes in two halves, the second once the slow clients are gone.
    body = b'{"image": 5}'
    slow = socket.create_connection(("127.0.0.1", s.port), timeout=60)
    slow.sendall(build_request("POST", "/v1/sandboxes", {"OPEN-SANDBOX-API-KEY": KEY,
                                                "Content-Type": "application/json",
                                                "Content-Length": str(len(body)),
                                                "Connection": "close"}) + body[:5])
    lo = Loris(s.port, "/health", "/health")
    wait_loris([lo], "server")
    lo.check("server", "code")
    lo.close()
    slow.sendall(body[5:])
    got = b""
    while True:
        dd = slow.recv(65536)
        if not dd:
            break
        got += dd
    slow.close()
    r = first_response(got)
    t.ok(r is not None and r[0] == 400 and b"image" in r[2],
         "server: the slow authenticated body is validated", got[:300])
    t.eq(s.get("/v1/sandboxes").status, 200, "server: still serving")


def main():
    with Execd(token=TOKEN) as x:
        t.run(test_execd, x, timeout=400)
    with Server(api_key=KEY) as s:
        t.run(test_server, s, timeout=400)


t.run(main, timeout=900)
t.done()
