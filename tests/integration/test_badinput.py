#!/usr/bin/python3
"""Bad input across execd's JSON endpoints (protocol.md 3.1-3.4, preamble
"bad input must get the documented status and a {code,message} body"):
malformed JSON, wrong types, missing fields, unknown ids; then a storm of
garbage bytes, truncated requests and abrupt disconnects (mid-body,
mid-SSE, mid-upload, mid-WebSocket), after which execd must still answer,
run commands, and hold no more file descriptors than before."""
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()

# Endpoints whose request body is JSON, with a valid-looking body for each.
JSON_ENDPOINTS = [
    ("/command", {"command": "true"}),
    ("/session", {"cwd": "/tmp"}),
    ("/code/context", {"language": "python"}),
    ("/code", {"code": "print(1)", "context": {"language": "python"}}),
    ("/files/mv", [{"src": "/nonexistent-a", "dest": "/nonexistent-b"}]),
    ("/files/permissions", {"/nonexistent-osb": {"mode": 755}}),
    ("/files/replace", {"/nonexistent-osb": {"old": "a", "new": "b"}}),
    ("/directories", {"/tmp/osb-badinput-dir": {"mode": 755}}),
    ("/pty", {"cwd": "/tmp"}),
]

MALFORMED = [b"{", b"{\"command\":", b"not json", b"{\"a\":1}}", b"\xff\xfe{}",
             b"{\"command\":\"\xff\xfe\"}", b"[" * 10000 + b"]" * 10000,
             b"{\"a\":" * 200 + b"1" + b"}" * 200, b"{\"command\":\"x\",}"]


def err_ok(r, status=None, code=None):
    """True if r is an error answer with {code,message} (and status/code if given)."""
    try:
        j = r.json()
    except ValueError:
        return False
    good = (isinstance(j, dict) and isinstance(j.get("code"), str) and j["code"]
            and isinstance(j.get("message"), str) and j["message"]
            and r.headers.get("content-type", "").startswith("application/json"))
    if status is not None and r.status != status:
        return False
    if code is not None and j.get("code") != code:
        return False
    return bool(good) and r.status >= 400


def post_raw(x, path, body):
    return x.req("POST", path, body=body, headers={"Content-Type": "application/json"})


def test_malformed_json(x):
    for path, _ in JSON_ENDPOINTS:
        bad = []
        for body in MALFORMED:
            r = post_raw(x, path, body)
            if not err_ok(r, 400):
                bad.append("%r -> %d %r" % (body[:30], r.status, r.body[:120]))
        t.ok(not bad, "POST %s: malformed JSON -> 400 {code,message}" % path, "\n".join(bad))
    r = post_raw(x, "/command", b"{")
    t.ok(err_ok(r, 400, "INVALID_REQUEST_BODY"), "POST /command malformed -> INVALID_REQUEST_BODY",
         r)


def test_wrong_shape(x):
    # A JSON value of the wrong kind for the whole body.
    for path, good in JSON_ENDPOINTS:
        wrong = ["just a string", 5, None, True] + ([{"src": "/a", "dest": "/b"}]
                                                    if isinstance(good, list) else [[good]])
        bad = []
        for w in wrong:
            r = x.post(path, json=w) if w is not None else post_raw(x, path, b"null")
            if w is None and path != "/command":
                continue  # null decodes to an empty map/list in Go: accepted upstream
            if not err_ok(r, 400):
                bad.append("%r -> %d %r" % (w, r.status, r.body[:120]))
        t.ok(not bad, "POST %s: body of the wrong JSON type -> 400" % path, "\n".join(bad))


def test_command_fields(x):
    cases = [
        ({"command": 5}, "command is a number"),
        ({"command": ["ls"]}, "command is an array"),
        ({"command": None}, "command is null (absent)"),
        ({}, "command missing"),
        ({"cwd": "/tmp"}, "only cwd"),
        ({"command": "true", "timeout": "5"}, "timeout is a string"),
        ({"command": "true", "timeout": 1.5}, "timeout is fractional"),
        ({"command": "true", "background": "yes"}, "background is a string"),
        ({"command": "true", "envs": ["A=1"]}, "envs is an array"),
        ({"command": "true", "envs": {"A": 1}}, "envs value is a number"),
        ({"command": "true", "uid": -1}, "uid negative"),
        ({"command": "true", "uid": "0"}, "uid is a string"),
        ({"command": "true", "uid": 4294967296}, "uid beyond uint32"),
        ({"command": "true", "cwd": 5}, "cwd is a number"),
    ]
    for body, what in cases:
        r = x.post("/command", json=body)
        t.ok(err_ok(r, 400), "POST /command %s -> 400 {code,message}" % what, r)
    r = x.post("/command", json={"command": "true", "gid": 0})
    t.ok(err_ok(r, 400) and "uid" in r.json().get("message", ""),
         "POST /command gid without uid -> 400 naming uid", r)
    r = x.post("/command", json={"command": "true", "cwd": "/nonexistent/osb/dir"})
    t.ok(r.status >= 400 and err_ok(r) or r.status == 200,
         "POST /command with a missing cwd -> error JSON (or a stream reporting it)", r)
    # Unknown fields are ignored (encoding/json semantics).
    res = x.sse("/command", json={"command": "echo fine", "unknown_field": {"x": [1, 2]}})
    t.eq(stdout_lines(res.events), ["fine"], "unknown fields are ignored")


def test_session_fields(x):
    r = x.post("/session", json={"cwd": 5})
    t.ok(err_ok(r, 400), "POST /session cwd number -> 400", r)
    r = x.req("POST", "/session", body=b"", headers={"Content-Type": "application/json"})
    t.eq(r.status, 200, "POST /session with an empty body -> 200 (Python SDK)")
    sid = r.json().get("session_id") if r.status == 200 else None
    if sid:
        for body, what in (({}, "missing command"), ({"command": 5}, "command number"),
                           ({"command": "true", "timeout": "x"}, "timeout string")):
            r = x.post("/session/%s/run" % sid, json=body)
            t.ok(err_ok(r, 400), "POST /session/{id}/run %s -> 400" % what, r)
        r = post_raw(x, "/session/%s/run" % sid, b"{oops")
        t.ok(err_ok(r, 400), "POST /session/{id}/run malformed -> 400", r)
        x.delete("/session/%s" % sid)


def test_code_fields(x):
    for body, what in (({}, "missing code"), ({"code": 5}, "code number"),
                       ({"code": "1", "context": "python"}, "context a string"),
                       ({"code": "1", "context": {"id": 5}}, "context.id number")):
        r = x.post("/code", json=body)
        t.ok(err_ok(r) and 400 <= r.status < 600, "POST /code %s -> error {code,message}" % what, r)
    r = x.post("/code/context", json={"language": 5})
    t.ok(err_ok(r, 400), "POST /code/context language number -> 400", r)


def test_files_fields(x):
    cases = [
        ("/files/mv", [{"src": "/tmp/a"}], "mv without dest"),
        ("/files/mv", [{"src": 1, "dest": 2}], "mv numbers"),
        ("/files/mv", [5], "mv item a number"),
        ("/files/permissions", {"/tmp": {"mode": "755"}}, "permissions mode string"),
        ("/files/permissions", {"/tmp": 5}, "permissions value number"),
        ("/files/replace", {"/tmp/x": {"old": 1, "new": "b"}}, "replace old number"),
        ("/files/replace", {"/tmp/x": "ab"}, "replace value string"),
        ("/directories", {"/tmp/osb-x": {"mode": "755"}}, "directories mode string"),
        ("/directories", {"/tmp/osb-x": []}, "directories value array"),
    ]
    for path, body, what in cases:
        r = x.post(path, json=body)
        t.ok(err_ok(r) and 400 <= r.status < 500, "POST %s %s -> 4xx {code,message}" % (path, what),
             r)
    r = x.post("/files/replace", json={"/tmp/osb-nonexistent": {"old": "", "new": "b"}})
    t.ok(err_ok(r) and r.status in (400, 404), "replace with empty old -> 400/404", r)


def test_unknown_ids(x):
    cases = [
        ("GET", "/command/status/nonexistent", None, 404, "INVALID_REQUEST_BODY"),
        ("GET", "/command/nonexistent/logs", None, 400, "INVALID_REQUEST_BODY"),
        ("DELETE", "/command?id=nonexistent", None, 500, "RUNTIME_ERROR"),
        ("DELETE", "/command", None, 400, "MISSING_QUERY"),
        ("POST", "/session/nonexistent/run", {"command": "true"}, 500, "RUNTIME_ERROR"),
        ("DELETE", "/session/nonexistent", None, 404, "CONTEXT_NOT_FOUND"),
        ("GET", "/code/contexts/nonexistent", None, 404, "CONTEXT_NOT_FOUND"),
        ("DELETE", "/code/contexts/nonexistent", None, 404, "CONTEXT_NOT_FOUND"),
        ("DELETE", "/code/contexts", None, 400, "MISSING_QUERY"),
        ("DELETE", "/code", None, 400, "MISSING_QUERY"),
        ("GET", "/pty/nonexistent", None, 404, "CONTEXT_NOT_FOUND"),
        ("DELETE", "/pty/nonexistent", None, 404, None),
        ("GET", "/files/info?path=/nonexistent/osb", None, 404, "FILE_NOT_FOUND"),
        ("GET", "/files/download", None, 400, "MISSING_QUERY"),
        ("GET", "/files/download?path=/nonexistent/osb", None, 404, "FILE_NOT_FOUND"),
        ("POST", "/files/mv", [{"src": "/nonexistent/osb", "dest": "/tmp/osb-mv"}], 404,
         "FILE_NOT_FOUND"),
        ("GET", "/directories/list?path=/nonexistent/osb", None, 404, None),
    ]
    for method, path, body, status, code in cases:
        r = x.req(method, path, json=body)
        t.ok(err_ok(r, status, code), "%s %s -> %d %s" % (method, path, status, code or ""),
             "got %d %r" % (r.status, r.body[:200]))
    r = x.get("/command/status/nonexistent")
    t.ok(r.status == 404 and "nonexistent" in r.text, "status 404 message names the id", r)
    resp, ws = x.try_ws_connect("/pty/nonexistent/ws")
    t.ok(ws is None and err_ok(resp, 404), "WS /pty/unknown/ws -> 404 JSON before upgrade", resp)
    if ws:
        ws.abort()


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def storm(x):
    rnd = random.Random(1234)
    port = x.port

    def conn():
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        return s  # linger 0: close() sends RST, the most abrupt disconnect

    def quietly(fn):
        try:
            fn()
        except OSError:
            pass

    jobs = []
    # Random bytes.
    for i in range(60):
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
        jobs.append(lambda d=data: (lambda s: (s.sendall(d), time.sleep(0.01), s.close()))(conn()))
    # Random bytes after a valid request line.
    for i in range(30):
        data = b"POST /command HTTP/1.1\r\n" + bytes(rnd.getrandbits(8) for _ in range(500))
        jobs.append(lambda d=data: (lambda s: (s.sendall(d), time.sleep(0.01), s.close()))(conn()))
    # Truncated heads.
    full = (b"POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 30\r\n\r\n{\"command\":\"echo truncated\"}")
    for cut in range(0, len(full), 7):
        jobs.append(lambda c=cut: (lambda s: (s.sendall(full[:c]), s.close()))(conn()))
    # Mid-body disconnect (Content-Length and chunked), on several routes.
    for path in ("/command", "/files/upload", "/files/mv", "/session", "/proxy/1/x"):
        head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: 100000\r\n\r\n" % path).encode()
        jobs.append(lambda h=head: (lambda s: (s.sendall(h + b"{\"command\":\"ec"), time.sleep(0.05),
                                               s.close()))(conn()))
        head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"com" % path).encode()
        jobs.append(lambda h=head: (lambda s: (s.sendall(h), time.sleep(0.05), s.close()))(conn()))
    # Mid-upload (multipart) disconnect.
    ctype, body = multipart(upload_parts([({"path": UPLOAD_TARGET}, os.urandom(200000))]))
    head = ("POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (ctype, len(body))).encode()
    for frac in (0.1, 0.5, 0.99):
        jobs.append(lambda f=frac: (lambda s: (s.sendall(head + body[:int(len(body) * f)]),
                                               time.sleep(0.05), s.close()))(conn()))

    # Mid-SSE disconnects: right after init, and after some output.
    def mid_sse(cmd, wait_for_text):
        s = conn()
        s.sendall(build_request("POST", "/command", {"Content-Type": "application/json"},
                                ('{"command":"%s"}' % cmd).encode()))
        buf = b""
        end = time.monotonic() + 3
        while wait_for_text not in buf and time.monotonic() < end:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
    for i in range(5):
        jobs.append(lambda: mid_sse("sleep 0.5; echo x", b'"init"'))
        jobs.append(lambda: mid_sse("for i in 1 2 3 4 5 6 7 8 9; do echo line$i; sleep 0.05; done",
                                    b"line2"))
        jobs.append(lambda: mid_sse("yes | head -c 2000000", b"stdout"))

    # Mid-WebSocket disconnects through the proxy.
    echo = WSEchoServer()

    def mid_ws():
        ws = x.ws_connect("/proxy/%d/ws" % echo.port)
        ws.send_text("hi")
        ws.sock.sendall(b"\x81\xfe\xff")  # truncated frame header
        ws.abort()
    for i in range(5):
        jobs.append(mid_ws)

    rnd.shuffle(jobs)
    threads = []
    for j in jobs:
        th = threading.Thread(target=quietly, args=(j,))
        th.start()
        threads.append(th)
        if len(threads) % 20 == 0:
            time.sleep(0.01)
    for th in threads:
        th.join(10)
    echo.close()
    return len(jobs)


UPLOAD_TARGET = "/tmp/osb-storm-upload-%d" % os.getpid()


def test_storm(x):
    if os.path.exists(UPLOAD_TARGET):
        os.unlink(UPLOAD_TARGET)
    base = fd_count(x.proc.pid)
    n = storm(x)
    t.ok(x.alive(), "execd alive after a storm of %d garbage/abrupt connections" % n)
    res = x.sse("/command", json={"command": "echo survived"})
    t.eq(stdout_lines(res.events), ["survived"], "commands still run after the storm")
    t.is_empty_ok(x.get("/ping"), "/ping still answers")
    ok = wait_for(lambda: fd_count(x.proc.pid) <= base + 2, 60, 0.1)
    t.ok(ok, "no leaked file descriptors after the storm (before %d, now %d)"
         % (base, fd_count(x.proc.pid)), os.popen("ls -l /proc/%d/fd" % x.proc.pid).read()[-2000:])
    t.ok(not os.path.exists(UPLOAD_TARGET), "an interrupted upload leaves no (torn) file")


def main():
    with Execd() as x:
        t.run(test_malformed_json, x)
        t.run(test_wrong_shape, x)
        t.run(test_command_fields, x)
        t.run(test_session_fields, x)
        t.run(test_code_fields, x)
        t.run(test_files_fields, x)
        t.run(test_unknown_ids, x)
        t.run(test_storm, x, timeout=30)


t.run(main, timeout=55)
t.done()
