#!/usr/bin/python3
"""execd access token (protocol.md 3.1): with --access-token T or env
EXECD_ACCESS_TOKEN=T every route except /ping needs X-EXECD-ACCESS-TOKEN: T,
including /proxy and WebSocket upgrades; failures are 401 with an exact body;
a rejected request has no side effect."""
import http.server
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()
TOKEN = "s3cr3t-T0ken"
HDR = "X-EXECD-ACCESS-TOKEN"
BODY_401 = (b'{"code":"UNAUTHORIZED","message":"invalid or missing header X-EXECD-ACCESS-TOKEN",'
            b'"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}')

# (method, path, json body or None) for every execd route family.
ROUTES = [
    ("POST", "/command", {"command": "true"}),
    ("DELETE", "/command?id=abc", None),
    ("GET", "/command/status/abc", None),
    ("GET", "/command/abc/logs?cursor=0", None),
    ("POST", "/session", {}),
    ("POST", "/session/abc/run", {"command": "true"}),
    ("DELETE", "/session/abc", None),
    ("POST", "/code/context", {"language": "python"}),
    ("GET", "/code/contexts?language=python", None),
    ("DELETE", "/code/contexts?language=python", None),
    ("GET", "/code/contexts/abc", None),
    ("DELETE", "/code/contexts/abc", None),
    ("POST", "/code", {"code": "1"}),
    ("DELETE", "/code?id=abc", None),
    ("GET", "/files/info?path=/", None),
    ("DELETE", "/files?path=/nonexistent-osb", None),
    ("POST", "/files/mv", [{"src": "/nonexistent-a", "dest": "/nonexistent-b"}]),
    ("POST", "/files/permissions", {"/nonexistent-osb": {"mode": 755}}),
    ("GET", "/files/search?path=/tmp&pattern=x", None),
    ("POST", "/files/replace", {"/nonexistent-osb": {"old": "a", "new": "b"}}),
    ("POST", "/files/upload", None),
    ("GET", "/files/download?path=/etc/hostname", None),
    ("GET", "/directories/list?path=/tmp", None),
    ("POST", "/directories", {"/nonexistent-osb-dir": {"mode": 755}}),
    ("DELETE", "/directories?path=/nonexistent-osb-dir", None),
    ("GET", "/metrics", None),
    ("GET", "/metrics/watch", None),
    ("POST", "/pty", {}),
    ("GET", "/pty/abc", None),
    ("DELETE", "/pty/abc", None),
    ("GET", "/pty/abc/ws", None),
    ("GET", "/proxy/1/", None),
    ("POST", "/proxy/1/x?y=z", {"a": 1}),
]


def is_401(r):
    return (r.status == 401 and r.body == BODY_401
            and r.headers.get("content-type", "").startswith("application/json"))


def check_gated(x, label, headers):
    bad = []
    for method, path, body in ROUTES:
        r = x.req(method, path, json=body, headers=headers, timeout=10)
        if not is_401(r):
            bad.append("%s %s -> %d %r" % (method, path, r.status, r.body[:120]))
    t.ok(not bad, "%s: all %d routes answer 401 with the exact body" % (label, len(ROUTES)),
         "%d wrong:\n" % len(bad) + "\n".join(bad[:8]))


def no_side_effect(x, headers, label):
    d = tempfile.mkdtemp(prefix="osb-auth-")
    marker = os.path.join(d, "marker")
    r = x.req("POST", "/command", json={"command": "touch %s" % marker}, headers=headers)
    r2 = x.req("POST", "/directories", json={os.path.join(d, "newdir"): {"mode": 755}},
               headers=headers)
    ctype, body = multipart(upload_parts([({"path": os.path.join(d, "up")}, b"x")]))
    r3 = x.req("POST", "/files/upload", body=body, headers=dict(headers, **{"Content-Type": ctype}))
    t.ok(is_401(r) and is_401(r2) and is_401(r3), "%s: writes rejected with 401" % label,
         (r, r2, r3))
    time.sleep(0.3)
    t.eq(sorted(os.listdir(d)), [], "%s: rejected requests had no side effect" % label)
    shutil.rmtree(d, ignore_errors=True)


def test_token(x, label):
    t.is_empty_ok(x.req("GET", "/ping", headers={HDR: None}), "%s: /ping without token" % label)
    t.is_empty_ok(x.req("GET", "/ping", headers={HDR: "wrong"}), "%s: /ping with a wrong token"
                  % label)
    check_gated(x, label + " no header", {HDR: None})
    check_gated(x, label + " wrong token", {HDR: "wrong"})
    check_gated(x, label + " token prefix", {HDR: TOKEN[:-1]})
    check_gated(x, label + " token + suffix", {HDR: TOKEN + "x"})
    check_gated(x, label + " empty token", {HDR: ""})
    no_side_effect(x, {HDR: None}, label)
    # With the right token the request reaches the handler.
    r = x.req("GET", "/files/info?path=/", headers={HDR: TOKEN})
    t.eq(r.status, 200, "%s: right token -> handler answers (/files/info)" % label)
    r = x.req("GET", "/command/status/nonexistent", headers={"x-execd-access-token": TOKEN})
    t.ok(r.status != 401, "%s: header name is case-insensitive" % label, r)
    res = x.sse("/command", json={"command": "echo authed"}, headers={HDR: TOKEN})
    t.ok(res.status == 200 and stdout_lines(res.events) == ["authed"],
         "%s: POST /command works with the token" % label, res.raw[:300])
    # WebSocket upgrade is gated before the handshake.
    resp, ws = x.try_ws_connect("/pty/abc/ws", headers={HDR: None})
    t.ok(ws is None and is_401(resp), "%s: WebSocket upgrade without token -> 401" % label, resp)


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = ("upstream saw token=%s" % self.headers.get(HDR)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_proxy_gated(x, label):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        r = x.req("GET", "/proxy/%d/hello" % port, headers={HDR: None})
        t.ok(is_401(r), "%s: /proxy without token -> 401" % label, r)
        r = x.req("GET", "/proxy/%d/hello" % port, headers={HDR: TOKEN})
        t.ok(r.status == 200 and r.body.startswith(b"upstream saw"),
             "%s: /proxy with token reaches the upstream" % label, r)
    finally:
        srv.shutdown()
        srv.server_close()


def test_no_token(x):
    r = x.req("GET", "/files/info?path=/")
    t.eq(r.status, 200, "no token configured: requests pass without the header")
    r = x.req("GET", "/files/info?path=/", headers={HDR: "anything"})
    t.eq(r.status, 200, "no token configured: a stray header is ignored")
    r = x.req("GET", "/command/status/nonexistent")
    t.ok(r.status != 401, "no token configured: /command/status not gated", r)


def main():
    with Execd(args=["--access-token", TOKEN]) as x:
        t.run(test_token, x, "flag")
        t.run(test_proxy_gated, x, "flag")
    with Execd(env={"EXECD_ACCESS_TOKEN": TOKEN}) as x:
        t.run(test_token, x, "env")
        t.run(test_proxy_gated, x, "env")
    with Execd(env={"EXECD_ACCESS_TOKEN": ""}) as x:
        t.run(test_no_token, x, name="empty env token")
    with Execd() as x:
        t.run(test_no_token, x)


t.run(main, timeout=55)
t.done()
