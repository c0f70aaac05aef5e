#!/usr/bin/python3
"""libopensandbox's lifecycle calls (lib/sandboxes.c, snapshots.c, pools.c,
egress.c): clientlib_lifecycle.c, linked against the static library, drives
every one against a real server (create with its readiness wait and an
Idempotency-Key, list filters, get, renew, metadata, endpoints, ping,
metrics and their watch, diagnostics, egress, snapshots and create from one,
pause/resume, pools, batch, images, delete, argument checks) and, against a
fake server whose sandbox never answers /ping, create's SDK-style cleanup:
the exact body sent, the header, the poll, and the DELETE of the sandbox."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BUILD = os.environ.get("BUILD", "build")
HERE = os.path.dirname(os.path.abspath(__file__))


def build(tmp):
    exe = os.path.join(tmp, "clientlib_lifecycle")
    r = subprocess.run(["cc", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                        "-I", os.path.join(REPO, "include"), "-o", exe,
                        os.path.join(HERE, "clientlib_lifecycle.c"),
                        os.path.join(REPO, BUILD, "lib", "libopensandbox.a"),
                        "-ljansson", "-lhttp_parser", "-lssl", "-lcrypto", "-lpthread"],
                       capture_output=True, text=True)
    t.ok(r.returncode == 0, "the driver builds against libopensandbox.a", r.stderr[-1500:])
    return exe if r.returncode == 0 else None


def relay(r):
    """The driver's own TAP lines, as ours."""
    for ln in r.stdout.splitlines():
        if ln.startswith("ok - "):
            t.ok(True, ln[5:])
        elif ln.startswith("not ok - "):
            t.ok(False, ln[9:])
        elif ln.startswith("#"):
            t.diag(ln[1:].strip()[:300])
    t.ok(r.returncode == 0, "the driver exits 0", r.stderr[-1500:])


def test_real(exe):
    with Server(api_key="lc-key") as s:
        env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
                   OPEN_SANDBOX_API_KEY="lc-key")
        relay(subprocess.run([exe], env=env, capture_output=True, text=True, timeout=300,
                             stdin=subprocess.DEVNULL))


class Fake(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def log_message(self, *a):
        pass

    def send(self, code, obj=None):
        b = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(b)))
        if b:
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append(("POST", self.path, self.headers.get("Idempotency-Key"), body.decode()))
        self.send(202, {"id": "sbx 1", "status": {"state": "Pending"}})

    def do_GET(self):
        self.seen.append(("GET", self.path))
        if "/endpoints/" in self.path:
            self.send(200, {"endpoint": "127.0.0.1:%d/dead" % self.server.server_port})
        else:
            self.send(503, {"code": "NOT_READY", "message": "execd is not up"})

    def do_DELETE(self):
        self.seen.append(("DELETE", self.path))
        self.send(204)


def test_fake(exe):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % srv.server_port)
        env.pop("OPEN_SANDBOX_API_KEY", None)
        r = subprocess.run([exe, "fake"], env=env, capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    finally:
        srv.shutdown()
    seen = Fake.seen
    t.ok(r.returncode == 0, "a sandbox that never answers /ping: create fails with a timeout",
         r.stdout + r.stderr)
    post = [x for x in seen if x[0] == "POST"]
    t.ok(post and post[0][1] == "/v1/sandboxes" and post[0][2] == "k-1",
         "POST /v1/sandboxes with the Idempotency-Key header", post)
    want = {"image": {"uri": "img"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600,
            "resourceLimits": {"cpu": "1", "memory": "2Gi"}, "env": {}, "metadata": {},
            "extensions": {}}
    t.eq(json.loads(post[0][3]) if post else None, want, "the SDKs' default body")
    t.ok(any(x[0] == "GET" and x[1].startswith("/v1/sandboxes/sbx%201/endpoints/44772")
             for x in seen), "execd's endpoint asked (id percent-encoded)", seen[:5])
    t.ok(any(x == ("GET", "/dead/ping") for x in seen), "execd's /ping polled", seen[:5])
    t.ok(("DELETE", "/v1/sandboxes/sbx%201") in seen, "the never-ready sandbox is deleted", seen)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        if not exe:
            return
        t.run(test_fake, exe, name="fake server", timeout=90)
        t.run(test_real, exe, name="real server", timeout=350)


t.run(main, name="clientlib lifecycle", timeout=480)
t.done()
