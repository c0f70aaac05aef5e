#!/usr/bin/python3
"""HTTP/1.1 behaviour of execd's server (src/http/server.c): keep-alive,
pipelining, chunked request bodies, empty-200 framing, 404/400/413/431
answers, Expect: 100-continue, and 1000 concurrent SSE streams."""
import os
import resource
import selectors
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403
from osbtest import descendants  # noqa: E402

t = TAP()


def error_json(resp):
    try:
        j = resp.json()
    except ValueError:
        return None
    if isinstance(j, dict) and isinstance(j.get("code"), str) and j.get("code") \
            and isinstance(j.get("message"), str) and j.get("message"):
        return j
    return None


def test_ping_empty_200(x):
    r = x.get("/ping")
    t.is_empty_ok(r, "GET /ping is 200 with Content-Length: 0")
    t.ok("transfer-encoding" not in r.headers, "GET /ping is not chunked", r.headers)
    c = x.rawconn()
    c.send(b"HEAD /ping HTTP/1.1\r\nHost: x\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
    r1 = c.read_response("HEAD")
    r2 = c.read_response()
    t.ok(r1.status in (200, 404, 405) and r2.status == 200,
         "HEAD /ping answered without a body, then GET on the same connection",
         (r1, r2))
    c.close()


def test_404(x):
    for method, path in (("GET", "/nope"), ("POST", "/no/such/route"), ("PUT", "/ping"),
                         ("GET", "/pingx"), ("DELETE", "/")):
        r = x.req(method, path, body=b"{}" if method == "POST" else None)
        t.eq((r.status, r.headers.get("content-type", "").split(";")[0], r.body),
             (404, "text/plain", b"404 page not found"), "%s %s -> 404 page not found"
             % (method, path))


def test_keepalive(x):
    c = x.rawconn()
    local = c.sock.getsockname()
    statuses = []
    for path in ("/ping", "/nope", "/ping", "/ping", "/nope", "/ping"):
        c.send_request("GET", path)
        statuses.append(c.read_response().status)
    t.eq(statuses, [200, 404, 200, 200, 404, 200], "6 requests on one connection")
    # An error answer from a handler keeps the connection too.
    c.send_request("POST", "/command", {"Content-Type": "application/json"}, b"{bad json")
    r = c.read_response()
    t.ok(r.status == 400 and error_json(r), "bad JSON -> 400 {code,message} on a kept connection",
         r)
    c.send_request("GET", "/ping")
    t.eq(c.read_response().status, 200, "connection still usable after a 400")
    t.eq(c.sock.getsockname(), local, "same socket throughout")
    t.ok(not c.closed_by_peer(0.2), "server keeps the idle connection open")
    c.close()
    # http.client with connection reuse.
    k = Client(port=x.port, keepalive=True)
    t.eq([k.get("/ping").status for _ in range(20)], [200] * 20, "20 pings over http.client keep-alive")
    k.close()


def test_connection_close(x):
    c = x.rawconn()
    c.send(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    r = c.read_response()
    t.eq(r.status, 200, "Connection: close request answered")
    t.ok(c.closed_by_peer(2), "server closes after Connection: close")
    c.close()
    c = x.rawconn()
    c.send(b"GET /ping HTTP/1.0\r\n\r\n")
    r = c.read_response()
    t.eq(r.status, 200, "HTTP/1.0 request answered")
    t.ok(c.closed_by_peer(2), "server closes an HTTP/1.0 connection without keep-alive")
    c.close()


def test_pipelining(x):
    c = x.rawconn()
    reqs = (build_request("GET", "/ping") + build_request("POST", "/nope", body=b"x" * 1000)
            + build_request("GET", "/ping"))
    c.send(reqs)
    got = [c.read_response() for _ in range(3)]
    t.eq([r.status for r in got], [200, 404, 200], "3 pipelined requests -> 3 responses in order")
    t.eq([r.body for r in got], [b"", b"404 page not found", b""], "pipelined bodies framed right")
    c.close()


def test_pipelined_after_sse(x):
    c = x.rawconn()
    c.send(build_request("POST", "/command", {"Content-Type": "application/json"},
                         b'{"command":"sleep 0.2; echo piped"}') + build_request("GET", "/ping"))
    r1 = c.read_response("POST")
    r2 = c.read_response()
    t.ok(r1.status == 200 and b"piped" in r1.body and r1.chunked,
         "SSE response completes first (chunked, has output)", r1)
    t.eq(r2.status, 200, "the pipelined GET /ping is answered after the stream ends")
    c.close()


def test_chunked_request_body(x):
    c = x.rawconn()
    body = b'{"command":"echo chunked-ok", "cwd": "/tmp"}'
    head = (b"POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    c.send(head)
    for i in range(0, len(body), 7):
        piece = body[i:i + 7]
        c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        time.sleep(0.01)
    c.send(b"0\r\n\r\n")
    r = c.read_response("POST")
    t.ok(r.status == 200 and b'"text":"chunked-ok"' in r.body,
         "chunked JSON body (7-byte chunks, sent slowly) is decoded", r)
    c.send(build_request("POST", "/command", {"Content-Type": "application/json"},
                         b'{"command":"echo again"}', chunked=True))
    r = c.read_response("POST")
    t.ok(r.status == 200 and b'"text":"again"' in r.body, "second chunked request on the same "
         "connection", r)
    c.close()


def test_expect_continue(x):
    c = x.rawconn()
    body = b'{"command":"echo cont"}'
    c.send(b"POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
    c.sock.settimeout(0.5)
    try:
        first = c.reader.readline()
    except (socket.timeout, EOFError):
        first = b""
    c.sock.settimeout(10)
    t.ok(first.startswith(b"HTTP/1.1 100"), "Expect: 100-continue answered with 100 within 0.5 s "
         "(curl otherwise stalls 1 s)", first)
    if first.startswith(b"HTTP/1.1 100"):
        while c.reader.readline() not in (b"\r\n", b"\n"):
            pass
    c.send(body)
    r = c.read_response("POST")
    t.ok(r.status == 200 and b"cont" in r.body, "request completes after 100-continue", r)
    c.close()


def test_oversized_headers(x):
    big = b"X-Big: " + b"a" * (70 * 1024) + b"\r\n"
    data = x.raw(b"GET /ping HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n", timeout=5)
    rs = parse_responses(data) if data else []
    r = rs[0] if rs else None
    t.ok(r is not None and r.status == 431, "70 KiB header -> 431", data[:300])
    t.ok(r is not None and error_json(r), "431 body is JSON {code,message}", r)
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(200))
    data = x.raw(b"GET /ping HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", timeout=5)
    rs = parse_responses(data) if data else []
    t.ok(rs and rs[0].status == 431 and error_json(rs[0]), "200 headers -> 431 JSON",
         data[:300])
    # Just under the cap still works.
    ok = b"X-Ok: " + b"b" * (48 * 1024) + b"\r\n"
    data = x.raw(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + ok + b"\r\n")
    rs = parse_responses(data) if data else []
    t.ok(rs and rs[0].status == 200, "48 KiB header is accepted", data[:300])
    t.ok(x.alive(), "execd alive after oversized heads")


def test_oversized_body(x):
    size = 16 * 1024 * 1024 + 4096

    def gen():
        yield b'{"command":"echo ' + b"a" * 60000
        left = size - 60017 - 2
        while left > 0:
            n = min(left, 1 << 20)
            yield b"a" * n
            left -= n
        yield b'"}'

    t0 = time.monotonic()
    r = x.upload_stream("/command", "application/json", gen(), length=size)
    t.ok(r.status == 413 and error_json(r), "JSON body > 16 MiB (Content-Length) -> 413 "
         "{code,message}", r)
    r = x.upload_stream("/command", "application/json", gen(), length=None)
    t.ok(r.status == 413 and error_json(r), "JSON body > 16 MiB (chunked) -> 413 {code,message}", r)
    t.diag("two oversized bodies refused in %.1f s" % (time.monotonic() - t0))
    t.ok(x.alive(), "execd alive after oversized bodies")


def test_garbage_request_line(x):
    for bad in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"\x00\x01\x02\x03 / HTTP/1.1\r\n\r\n",
                b"GET / HTTP/9.9x\r\n\r\n", b"GET /ping HTTP/1.1\r\nBad Header Line\r\n\r\n",
                b"POST /command HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                b"POST /command HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        data = x.raw(bad, timeout=3)
        rs = []
        try:
            rs = parse_responses(data)
        except Exception:
            pass
        t.ok(rs and rs[0].status == 400 and error_json(rs[0]), "%r -> 400 {code,message}" % bad[:40],
             data[:300])
    t.ok(x.alive(), "execd alive after garbage")


def fifo_holders(root_pid, fifo):
    """Descendants of root_pid that have `fifo` open."""
    n = 0
    for p in descendants(root_pid):
        try:
            fds = os.listdir("/proc/%d/fd" % p)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%d/fd/%s" % (p, fd)) == fifo:
                    n += 1
                    break
            except OSError:
                pass
    return n


def test_1000_sse_streams(x):
    """1000 foreground commands held open at once: each blocks reading a FIFO
    that the test holds open, so all streams are live together; closing the
    FIFO releases them all and every stream must finish cleanly."""
    n = 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 200:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
        except (ValueError, OSError):
            pass
        if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < n + 200:
            t.skip("1000 SSE streams", "RLIMIT_NOFILE too low (%d)" % soft)
            return
    tmp = tempfile.mkdtemp(prefix="osb-http-")
    fifo = os.path.join(tmp, "gate")
    os.mkfifo(fifo)
    gate = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # readers' open() never blocks
    req = build_request("POST", "/command", {"Content-Type": "application/json"},
                        ('{"command":"read x < %s; echo done"}' % fifo).encode())
    sel = selectors.DefaultSelector()
    conns = {}
    connect_errors = 0
    t0 = time.monotonic()
    try:
        for i in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", x.port), timeout=10)
                s.sendall(req)
                s.setblocking(False)
            except OSError:
                connect_errors += 1
                continue
            conns[s] = bytearray()
            sel.register(s, selectors.EVENT_READ)
        t.eq(connect_errors, 0, "1000 connections opened and requests sent")
        inits, done, failed = set(), set(), set()

        def pump(timeout):
            for key, _ in sel.select(timeout=timeout):
                s = key.fileobj
                try:
                    d = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    d = b""
                buf = conns[s]
                buf += d
                if not d or (buf.startswith(b"HTTP/") and b"\r\n" in buf
                             and not buf.startswith(b"HTTP/1.1 200")):
                    failed.add(s)
                    sel.unregister(s)
                    continue
                if b'"type":"init"' in buf:
                    inits.add(s)
                if b'"type":"execution_complete"' in buf and buf.endswith(b"0\r\n\r\n"):
                    done.add(s)
                    sel.unregister(s)

        deadline = time.monotonic() + 30
        while len(inits) + len(failed) < len(conns) and time.monotonic() < deadline:
            pump(0.2)
        t_init = time.monotonic() - t0
        t.eq(len(inits), n, "all 1000 streams got an init event (%.1fs)" % t_init)
        t.ok(not done and not failed, "all 1000 streams are open at the same time",
             "%d done, %d failed early" % (len(done), len(failed)))
        # Every command must be blocked on the gate before it is released.
        root = x.proc.pid
        ok = wait_for(lambda: (pump(0), fifo_holders(root, fifo))[1] >= n, 60, 0.2)
        t.ok(ok, "all 1000 commands are running at once (%d hold the FIFO)"
             % fifo_holders(root, fifo))
        os.close(gate)
        gate = None
        deadline = time.monotonic() + 15
        while len(done) + len(failed) < len(conns) and time.monotonic() < deadline:
            pump(0.2)
        t.eq(len(done), n, "all 1000 streams ended with execution_complete and the final chunk")
        bad = [bytes(b[-300:]) for s, b in conns.items() if s not in done][:3]
        t.ok(not bad, "no stream failed", bad)
        with_done = sum(1 for b in conns.values() if b'"text":"done"' in b)
        t.eq(with_done, n, "every stream carried its stdout line")
        problems = []
        for b in list(conns.values())[:50]:
            try:
                evs = parse_responses(bytes(b), ["POST"])[0].body
                ok_ev = [e for e in evs.split(b"\n\n") if e]
                if not all(e.startswith(b"{") and e.endswith(b"}") for e in ok_ev):
                    problems.append(evs[:200])
            except Exception as e:  # noqa: BLE001
                problems.append(repr(e))
        t.ok(not problems, "streams are well-framed (sample of 50)", problems[:2])
    finally:
        if gate is not None:
            os.close(gate)
        for s in conns:
            s.close()
        os.unlink(fifo)
        os.rmdir(tmp)
    t.ok(x.alive(), "execd alive after 1000 streams")


def main():
    with Execd() as x:
        run_all(x)


def run_all(x):
    t.run(test_ping_empty_200, x)
    t.run(test_404, x)
    t.run(test_keepalive, x)
    t.run(test_connection_close, x)
    t.run(test_pipelining, x)
    t.run(test_pipelined_after_sse, x)
    t.run(test_chunked_request_body, x)
    t.run(test_expect_continue, x)
    t.run(test_oversized_headers, x)
    t.run(test_oversized_body, x)
    t.run(test_garbage_request_line, x)
    t.run(test_1000_sse_streams, x, timeout=50)


t.run(main, timeout=58)
t.done()
