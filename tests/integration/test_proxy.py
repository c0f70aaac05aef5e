#!/usr/bin/python3
"""execd reverse proxy (protocol.md 3.1): /proxy/{port}/{rest}?{query} ->
http://127.0.0.1:{port}/{rest}?{query}, method/body/headers/query preserved,
streaming responses, 502 PROXY::BAD_GATEWAY when nothing listens, WebSocket
upgrades spliced both ways."""
import hashlib
import http.server
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()
BIG = bytes(range(256)) * (8 * 4096)  # 8 MiB


STREAM_GOT_FIRST = threading.Event()


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n)

    def _send(self, status, body, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self):
        body = self._body()
        if self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            # The rest waits until the client has the first piece (or
            # 60 s): only a proxy that streams lets the client see it.
            for i, piece in enumerate((b"first\n", b"second\n", b"third\n")):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if i == 0:
                    STREAM_GOT_FIRST.wait(60)
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/big"):
            return self._send(200, BIG, "application/octet-stream")
        if self.path.startswith("/teapot"):
            return self._send(418, b"short and stout", "text/plain",
                              [("X-Up", "1"), ("Set-Cookie", "a=b")])
        if self.path.startswith("/close"):
            # HTTP/1.0-style response: body delimited by closing.
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Connection: close\r\n\r\nuntil-close-body")
            return
        info = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body_len": len(body),
            "body_sha": hashlib.sha256(body).hexdigest(),
            "body_head": body[:100].decode("latin-1"),
        }
        self._send(200, json.dumps(info).encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle


def start_upstream():
    http.server.ThreadingHTTPServer.request_queue_size = 256  # default 5 drops SYNs
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_get(x, up):
    r = x.get("/proxy/%d/echo/a%%20b/c?x=1&y=a%%20b&z=&x=2" % up)
    t.eq(r.status, 200, "GET through the proxy")
    j = r.json()
    t.eq(j["method"], "GET", "method preserved")
    t.eq(j["path"], "/echo/a%20b/c?x=1&y=a%20b&z=&x=2", "path and raw query preserved")
    r = x.get("/proxy/%d" % up)
    t.ok(r.status == 200 and r.json()["path"] in ("/", ""), "/proxy/{port} with no rest -> /",
         r)
    r = x.get("/proxy/%d/" % up)
    t.ok(r.status == 200 and r.json()["path"] == "/", "/proxy/{port}/ -> /", r)
    r = x.get("/proxy/%d/q?only=query" % up)
    t.eq(r.json()["path"], "/q?only=query", "query only")


def test_methods_body_headers(x, up):
    body = os.urandom(300000)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        r = x.req(method, "/proxy/%d/m?k=v" % up, body=body,
                  headers={"X-Custom": "hello world", "Content-Type": "application/x-test",
                           "Authorization": "Bearer abc"})
        ok = r.status == 200
        j = r.json() if ok else {}
        t.ok(ok and j["method"] == method and j["body_sha"] == hashlib.sha256(body).hexdigest()
             and j["headers"].get("x-custom") == "hello world"
             and j["headers"].get("content-type") == "application/x-test"
             and j["headers"].get("authorization") == "Bearer abc",
             "%s: method, 300 KB body and headers forwarded" % method, r if not ok else j)
    r = x.req("HEAD", "/proxy/%d/h" % up)
    t.ok(r.status == 200 and r.body == b"", "HEAD forwarded", r)


def test_chunked_upload(x, up):
    data = [os.urandom(5000) for _ in range(50)]
    r = x.upload_stream("/proxy/%d/chunked" % up, "application/octet-stream", iter(data))
    ok = r.status == 200
    j = r.json() if ok else {}
    t.ok(ok and j.get("body_sha") == hashlib.sha256(b"".join(data)).hexdigest(),
         "chunked request body reaches the upstream intact", r if not ok else j)


def test_response_passthrough(x, up):
    r = x.get("/proxy/%d/teapot" % up)
    t.eq((r.status, r.body), (418, b"short and stout"), "upstream status and body relayed")
    t.eq(r.headers.get("x-up"), "1", "upstream headers relayed")
    t.eq(r.headers.get("set-cookie"), "a=b", "Set-Cookie relayed")
    r = x.get("/proxy/%d/big" % up, timeout=30)
    t.ok(r.status == 200 and len(r.body) == len(BIG) and r.body == BIG,
         "8 MiB response intact", (r.status, len(r.body)))
    r = x.get("/proxy/%d/close" % up)
    t.eq((r.status, r.body), (200, b"until-close-body"), "read-until-close upstream body relayed")


def test_streaming(x, up):
    STREAM_GOT_FIRST.clear()
    c = x.rawconn(timeout=120)
    c.send_request("GET", "/proxy/%d/stream" % up)
    status, _, hl = c.reader.read_head()
    arrivals = []
    early = False
    for piece in c.reader.iter_body(status, hl):
        arrivals.append(piece)
        if b"first" in b"".join(arrivals) and not STREAM_GOT_FIRST.is_set():
            early = True  # the upstream is still holding the rest
            STREAM_GOT_FIRST.set()
    c.close()
    t.eq(b"".join(arrivals), b"first\nsecond\nthird\n", "streamed body complete")
    t.ok(early, "first piece arrives while the upstream still holds the rest", arrivals)


def test_bad_gateway(x):
    port = free_port()
    r = x.get("/proxy/%d/anything?x=1" % port)
    t.eq(r.status, 502, "nothing listening -> 502")
    t.is_error(r, 502, "PROXY::BAD_GATEWAY", "502 body is {code,message}")
    for bad in ("0", "99999", "abc", "-1"):
        r = x.get("/proxy/%s/x" % bad)
        t.ok(400 <= r.status < 600, "invalid port %r answered with an error (%d)"
             % (bad, r.status), r)
    t.ok(x.alive(), "execd alive after proxy errors")


def test_concurrent(x, up):
    results = []

    def worker(i):
        try:
            r = x.req("POST", "/proxy/%d/c%d" % (up, i), body=b"x" * i)
            results.append(r.status == 200 and r.json()["body_len"] == i)
        except Exception:
            results.append(False)

    ths = [threading.Thread(target=worker, args=(i,)) for i in range(60)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(20)
    t.ok(len(results) == 60 and all(results), "60 concurrent proxied requests",
         results.count(False))


def test_websocket(x):
    with WSEchoServer() as echo:
        ws = x.ws_connect("/proxy/%d/ws/path?q=1" % echo.port)
        t.eq(ws.resp.status, 101, "WebSocket upgrade through the proxy")
        ws.send_text("hello")
        t.eq(ws.recv(), (1, b"hello"), "text echoed")
        ws.send_binary(b"\x00\x01\xff")
        t.eq(ws.recv(), (2, b"\x00\x01\xff"), "binary echoed")
        big = os.urandom(1 << 20)
        ws.send_binary(big)
        op, got = ws.recv(timeout=20)
        t.ok(op == 2 and got == big, "1 MiB binary echoed", len(got))
        ws.send_fragmented(1, "fragmented message " * 100, 4)
        t.eq(ws.recv(), (1, ("fragmented message " * 100).encode()), "fragmented text echoed")
        ws.ping(b"pp")
        ws.send_text("after ping")
        t.eq(ws.recv(), (1, b"after ping"), "ping/pong passes through")
        ws.close(1000, "bye")
        wait_for(lambda: echo.closes, 60)
        t.eq(echo.closes, [1000], "close code reached the upstream")
        t.ok(echo.requests and echo.requests[0][0] == "/ws/path?q=1", "upstream saw the path",
             echo.requests)
        hdrs = echo.requests[0][1] if echo.requests else {}
        t.ok(hdrs.get("upgrade", "").lower() == "websocket", "Upgrade header forwarded", hdrs)
        # Upstream-initiated traffic: several sockets at once.
        socks = [x.ws_connect("/proxy/%d/ws%d" % (echo.port, i)) for i in range(10)]
        for i, s in enumerate(socks):
            s.send_text("n%d" % i)
        t.eq([s.recv()[1] for s in socks], [b"n%d" % i for i in range(10)],
             "10 concurrent proxied WebSockets")
        for s in socks:
            s.abort()
    t.ok(x.alive(), "execd alive after WebSocket proxying")


def test_ws_refused(x):
    # Upgrade to a plain HTTP upstream: its answer is relayed as is.
    srv = start_upstream()
    try:
        resp, ws = x.try_ws_connect("/proxy/%d/nows" % srv.server_address[1])
        t.ok(ws is None and resp.status == 200, "upgrade refused by upstream -> upstream answer "
             "relayed", resp)
    finally:
        srv.shutdown()
    resp, ws = x.try_ws_connect("/proxy/%d/ws" % free_port())
    t.ok(ws is None and resp.status == 502, "WebSocket to a dead port -> 502", resp)


def main():
    srv = start_upstream()
    up = srv.server_address[1]
    try:
        with Execd() as x:
            t.run(test_get, x, up)
            t.run(test_methods_body_headers, x, up)
            t.run(test_chunked_upload, x, up)
            t.run(test_response_passthrough, x, up)
            t.run(test_streaming, x, up)
            t.run(test_bad_gateway, x)
            t.run(test_concurrent, x, up)
            t.run(test_websocket, x)
            t.run(test_ws_refused, x)
    finally:
        srv.shutdown()


t.run(main, timeout=55)
t.done()
