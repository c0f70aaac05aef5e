#!/usr/bin/python3
"""Authentication at the end of the headers, against the real lifecycle
server (OPEN-SANDBOX-API-KEY) and a real execd (X-EXECD-ACCESS-TOKEN): a
request without the key gets its 401 before any body byte is read -- no
100 Continue, Connection: close, the connection ends, the body is never
buffered (the daemon's memory stays flat while 512 MiB are offered), and
nothing pipelined behind it runs. With the key, bodies, 100-continue and
streaming uploads work as before."""
import json
import os
import select
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403
from serverlib import Server  # noqa: E402

t = TAP()
KEY = "early-key-" + os.urandom(4).hex()
TOKEN = "early-token-" + os.urandom(4).hex()
MiB = 1 << 20
OFFER = 512 * MiB
# Memory the daemon may gain while the unauthenticated body is offered: far
# below the 16 MiB a buffered body would take.
RSS_BOUND_KIB = 6 * 1024



class Offer:
    """Send a request head, then up to `total` body bytes, reading whatever
    the daemon answers meanwhile (as a careful client does), until the
    daemon closes the connection or everything was sent."""

    def __init__(self, port, head, total=0, chunked=False, answer_first=False):
        self.sent = 0
        self.raw = b""
        self.eof = False
        self.reset = False
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(head)
        if answer_first:
            # The whole answer before any body byte: the close that follows
            # (with our body unread, so the kernel resets the connection)
            # cannot take it from us on a loaded machine.
            deadline = time.monotonic() + 60
            while (first_response(self.raw) is None and not self.eof and
                   time.monotonic() < deadline):
                self._read(s, 1)
        chunk = b"x" * MiB
        if chunked:
            chunk = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        try:
            # With the answer in hand, keep pushing after its FIN: the
            # server must drop what comes, not buffer it, until it resets.
            while self.sent < total and (not self.eof or answer_first):
                self._read(s, 0)
                _, w, _ = select.select([], [s], [], 60)
                if w:
                    self.sent += s.send(chunk)
            deadline = time.monotonic() + 60
            while not self.eof and time.monotonic() < deadline:
                self._read(s, 1)
        except (BrokenPipeError, ConnectionResetError):
            self.reset = True
            try:
                while not self.eof:
                    self._read(s, 1)
            except OSError:
                pass
        s.close()
        self.resp = first_response(self.raw)

    def _read(self, s, wait):
        while select.select([s], [], [], wait)[0]:
            d = s.recv(65536)
            if not d:
                self.eof = True
                return
            self.raw += d
            wait = 0




def check_401(o, want, label):
    ok = o.resp is not None and o.resp[0] == 401 and want(o.resp[2])
    t.ok(ok, "%s: 401 with the usual body" % label, (o.raw[:400], o.sent))
    if not o.resp:
        return
    t.eq(o.resp[1]["1xx"], [], "%s: no 100 Continue" % label)
    t.eq(o.resp[1].get("connection", "").lower(), "close", "%s: Connection: close" % label)
    t.ok(o.eof or o.reset, "%s: the connection is closed" % label)


def early_401(port, method, path, want, label):
    big = {"Content-Length": "2000000000", "Expect": "100-continue",
           "Content-Type": "application/json"}
    check_401(Offer(port, build_request(method, path, big)), want, label + " (Content-Length 2e9)")
    chunked = {"Transfer-Encoding": "chunked", "Expect": "100-continue",
               "Content-Type": "application/json"}
    check_401(Offer(port, build_request(method, path, chunked)), want, label + " (chunked)")


def flood(pid, port, method, path, want, label, extra=None, chunked=False):
    """Offer 512 MiB without the key: 401, closed early, memory flat."""
    rss0, hwm0 = proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM")
    h = dict(extra or {})
    if chunked:
        h["Transfer-Encoding"] = "chunked"
    else:
        h["Content-Length"] = str(OFFER)
    o = Offer(port, build_request(method, path, h), OFFER, chunked=chunked, answer_first=True)
    rss1, hwm1 = proc_status_kib(pid, "VmRSS"), proc_status_kib(pid, "VmHWM")
    t.ok(o.resp is not None and o.resp[0] == 401 and want(o.resp[2]),
         "%s: the sender gets the 401" % label, o.raw[:300])
    t.ok(o.sent < OFFER and (o.eof or o.reset),
         "%s: closed before the body was sent (%d MiB of 512 taken)" % (label, o.sent // MiB))
    t.ok(rss1 - rss0 < RSS_BOUND_KIB and hwm1 - hwm0 < RSS_BOUND_KIB,
         "%s: RSS +%d KiB, peak +%d KiB (bound %d KiB)"
         % (label, rss1 - rss0, hwm1 - hwm0, RSS_BOUND_KIB))


def pipelined(port, first, second, label):
    """Two requests in one write; only the first (a 401) is answered."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(first + second)
    raw = b""
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        raw += d
    s.close()
    t.ok(raw.startswith(b"HTTP/1.1 401 ") and raw.count(b"HTTP/1.1 ") == 1,
         "%s: a request pipelined after a 401 is not processed" % label, raw[:400])


# ------------------------------------------------------------------ server

def server_401(body):
    try:
        return json.loads(body)["code"] == "MISSING_API_KEY"
    except ValueError:
        return False


def test_server(s):
    pid = s.proc.pid
    early_401(s.port, "POST", "/v1/sandboxes", server_401, "server POST /v1/sandboxes")
    early_401(s.port, "PATCH", "/v1/sandboxes/x/network-policy", server_401,
              "server PATCH network-policy")
    flood(pid, s.port, "POST", "/v1/sandboxes", server_401, "server 512 MiB unauthenticated",
          {"Content-Type": "application/json"})
    flood(pid, s.port, "POST", "/v1/snapshots", server_401, "server 512 MiB chunked",
          {"Content-Type": "application/json"}, chunked=True)
    marker = "/v1/sandboxes?metadata=" + "early%3D1"
    pipelined(s.port, build_request("GET", "/v1/sandboxes", {}),
              build_request("GET", marker, {"OPEN-SANDBOX-API-KEY": KEY}), "server")
    # With the key: 100 Continue, then the handler sees the body.
    body = b'{"image": 5}'
    o = Offer(s.port, build_request("POST", "/v1/sandboxes",
                           {"OPEN-SANDBOX-API-KEY": KEY, "Content-Type": "application/json",
                            "Content-Length": str(len(body)), "Expect": "100-continue",
                            "Connection": "close"}) + body)
    t.ok(o.resp is not None and o.resp[1]["1xx"] == [100] and o.resp[0] == 400
         and b"image" in o.resp[2],
         "server with the key: 100 Continue, then the body is validated", o.raw[:400])
    r = s.get("/v1/sandboxes")
    t.eq(r.status, 200, "server with the key: GET /v1/sandboxes")
    r = s.get("/health", headers={"OPEN-SANDBOX-API-KEY": None})
    t.eq(r.status, 200, "server: /health stays public")


# ------------------------------------------------------------------- execd

EXECD_401 = (b'{"code":"UNAUTHORIZED","message":"invalid or missing header X-EXECD-ACCESS-TOKEN",'
             b'"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}')


def test_execd(x):
    pid = x.proc.pid
    is401 = lambda b: b == EXECD_401  # noqa: E731
    early_401(x.port, "POST", "/command", is401, "execd POST /command")
    early_401(x.port, "POST", "/files/upload", is401, "execd POST /files/upload")
    flood(pid, x.port, "POST", "/command", is401, "execd 512 MiB to /command",
          {"Content-Type": "application/json"})
    flood(pid, x.port, "POST", "/files/upload", is401, "execd 512 MiB upload",
          {"Content-Type": "multipart/form-data; boundary=b"})
    d = tempfile.mkdtemp(prefix="osb-early-")
    marker = os.path.join(d, "marker")
    cmd = json.dumps({"command": "touch " + marker}).encode()
    pipelined(x.port, build_request("GET", "/files/info?path=/", {}),
              build_request("POST", "/command", {HDR: TOKEN, "Content-Type": "application/json",
                                        "Content-Length": str(len(cmd))}) + cmd, "execd")
    time.sleep(0.3)
    t.ok(not os.path.exists(marker), "execd: the pipelined command did not run")
    # With the token: a streaming upload with 100-continue lands intact.
    data = os.urandom(8 * MiB)
    dest = os.path.join(d, "up.bin")
    ctype, body = multipart(upload_parts([({"path": dest}, data)]))
    s = socket.create_connection(("127.0.0.1", x.port), timeout=60)
    s.sendall(build_request("POST", "/files/upload",
                   {HDR: TOKEN, "Content-Type": ctype, "Content-Length": str(len(body)),
                    "Expect": "100-continue", "Connection": "close"}))
    got = b""
    while b"100 Continue\r\n\r\n" not in got:
        got += s.recv(4096)
    t.ok(got.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"),
         "execd with the token: 100 Continue before the body", got[:200])
    s.sendall(body)
    while True:
        dd = s.recv(65536)
        if not dd:
            break
        got += dd
    s.close()
    resp = first_response(got)
    t.ok(resp is not None and resp[0] == 200, "execd with the token: the upload succeeds", got[:300])
    with open(dest, "rb") as f:
        t.ok(f.read() == data, "execd with the token: the uploaded file is intact")
    r = x.get("/files/info?path=/")
    t.eq(r.status, 200, "execd with the token: a buffered route works")
    r = x.get("/ping", headers={HDR: None})
    t.eq(r.status, 200, "execd: /ping stays public")


HDR = "X-EXECD-ACCESS-TOKEN"


def main():
    with Execd(token=TOKEN) as x:
        t.run(test_execd, x, timeout=240)
    with Server(api_key=KEY) as s:
        t.run(test_server, s, timeout=240)


t.run(main, timeout=500)
t.done()
