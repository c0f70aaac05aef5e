"""osbtest: shared stdlib-only helpers for the execd integration tests.

Run tests with /usr/bin/python3; every test file does

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from osbtest import *

TAP reporting
-------------
    t = TAP()
    t.ok(cond, name, diag=None) -> bool      "ok - name" / "not ok - name" (+ "# diag")
    t.eq(got, want, name) -> bool            shows got/want on failure
    t.skip(name, why)                        "ok - name # SKIP why"
    t.diag(msg)                              "# msg" lines
    t.is_error(resp, status, code=None, name=None)
                                             status matches and the body is JSON with
                                             non-empty string "code" and "message"
                                             (and code == `code` when given)
    t.is_empty_ok(resp, name=None, status=200)
                                             status, empty body, Content-Length: 0
    t.run(fn, *args, name=None, timeout=30)  runs fn now; an exception (or a timeout via
                                             SIGALRM) becomes "not ok - name" with the
                                             traceback as "# " lines; returns fn's value
    @t.test / @t.test(timeout=40)            decorator form: runs the function immediately
  Runs nest: t.run(main, timeout=55) around a main() that holds one Execd and calls
  t.run(test_x, x) for each test keeps the outer deadline and turns a daemon that fails
  to start into a "not ok" line instead of a bare traceback.
    t.done()                                 prints the plan, exits 1 if anything failed
  On any failure the new stderr lines of every live Execd are printed as "# " lines.

Daemon
------
    with Execd(args=[], env=None, token=None) as x:
        x.port, x.url ("http://127.0.0.1:N"), x.proc (Popen), x.stderr_text()
  Starts $EXECD_BIN (default build/bin/execd) with `--port N` + args on a free loopback
  port, waits for GET /ping (10 ms polls, 5 s). token=T adds `--access-token T` and makes
  the built-in client send X-EXECD-ACCESS-TOKEN. env entries are added to the
  environment (value None removes a variable; EXECD_ACCESS_TOKEN is removed unless given).
  argv=callable(port)->list replaces the command line (e.g. to run under unshare).
  On exit: SIGTERM, then SIGKILL after 3 s; leftover descendants are killed; a death by
  SIGSEGV/SIGABRT/SIGBUS/SIGILL/SIGFPE or a sanitizer report raises ExecdCrashed.
  x.stop() -> returncode; x.alive() -> bool (process up and /ping answers 200).
  Execd is a Client (below), so x.req(...), x.sse(...), ... work directly.

Client(host="127.0.0.1", port, token=None, keepalive=False)
------
    req(method, path, body=None, json=None, headers=None, timeout=30) -> Resp
        http.client based; a new connection per call unless keepalive=True.
    Resp: .status .reason .headers (dict, lower-case keys) .header_list [(k, v)]
          .body (bytes) .text .json() .chunked (response used chunked framing)
    get(path, **kw) / post(path, json=..., **kw) / delete(path, **kw)
    qs(path, params) -> path?query  (module function; lists repeat keys: path=a&path=b)
    ping() -> bool
    raw(data, timeout=3, until_close=True) -> bytes
        send hand-made bytes on a fresh socket and return everything received until the
        peer closes (or timeout; with until_close=False, until the first quiet 0.3 s).
    rawconn(timeout=10) -> RawConn: .send(bytes) .send_request(method, path, headers,
        body) .read_response(method="GET") -> Resp  (strict HTTP/1.1 reader: chunked,
        Content-Length, read-until-close) .closed_by_peer(wait=1.0) -> bool, .close()
        Use it for keep-alive / pipelining checks (one socket, many responses).
    parse_responses(data, methods=None) -> [Resp] parses concatenated raw responses.
    build_request(method, path, headers=None, body=None, chunked=False, host=...) -> bytes
    first_response(raw) -> (status, headers, body) | None: the first final response in
        raw bytes, once complete; headers["1xx"] lists the interim statuses before it.
    proc_status_kib(pid, field) -> int: a kB field of /proc/<pid>/status (VmRSS, VmHWM).
    sse(path, json=None, body=None, headers=None, method="POST", timeout=60, strict=True)
        -> SSEResult(status, headers, events, raw)  (namedtuple; also .resp for non-200
        answers and .chunks, the list of transfer chunks). Events are parsed with the
        exact execd framing: the de-chunked body must be a sequence of
        "<compact JSON object>\\n\\n"; with strict=True anything else raises SSEFormatError.
    sse_stream(path, json=None, ...) -> SSEStream: context manager/iterator yielding
        (arrival_time, event) with time.monotonic() arrival times; .status .headers
        .resp (non-200) .t0 (request send time) .raw .complete (saw the final chunk)
        .close() to drop the connection mid-stream.
    upload_stream(path, content_type, chunks, length=None, headers=None, method="POST",
        timeout=120) -> Resp: sends an iterable of bytes with Content-Length `length`, or
        chunked when length is None.
    ws_connect(path, headers=None, timeout=10) -> WS; raises WSRefused (.resp) unless 101.
    try_ws_connect(path, headers=None) -> (resp, ws_or_None)

Event helpers: exit_code(events) (the SDK rule: error -> int(evalue) or None; complete ->
0; else None), stdout_lines(events), stderr_lines(events), events_of(events, type),
check_events(events) -> list of problems (type str, int timestamp, known type).

Multipart
---------
    multipart(parts, boundary=None) -> (content_type, body)
        parts: (name, filename, content_type, data) in order; filename/content_type None
        leave the attribute/header out.
    upload_parts(files) -> parts for POST /files/upload, SDK shape: for each
        (metadata_dict, data[, filename]) a part name="metadata" filename="metadata"
        application/json, then name="file" filename=<basename> application/octet-stream.
    multipart_stream(parts, boundary=None) -> (content_type, iterator, length)
        like multipart, but a part's data may be (iterable_of_bytes, size) for huge
        bodies; feed the result to upload_stream(path, ctype, it, length).

WebSocket (RFC 6455)
--------------------
    WS: .send_text(s) .send_binary(b) .ping(b) .send_frame(opcode, payload, fin=True,
        rsv=0, mask=None) .send_fragmented(opcode, payload, pieces)
        .recv(timeout=10) -> (opcode, payload): fragments joined, pings answered, pongs
        skipped; a close frame returns (8, payload) and sets .close_code/.close_reason.
        .recv_frame(timeout) -> (fin, opcode, payload) raw.
        .close(code=1000, reason="", wait=2.0) .resp (the 101 response)
    ws_accept(sock) -> WS server side (reads the upgrade request, answers 101).
    WSEchoServer(): context manager; .port; echoes text/binary messages and close codes;
        .requests records (path, headers) of each upgrade.
Misc: free_port(), wait_for(pred, timeout=5, interval=0.01) -> bool, EXECD_BIN.
"""
import base64
import collections
import hashlib
import http.client
import json as _json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

__all__ = [
    "TAP", "Execd", "ExecdCrashed", "Client", "Resp", "RawConn", "SSEResult", "SSEStream",
    "SSEFormatError", "WS", "WSRefused", "WSEchoServer", "ws_accept", "multipart",
    "multipart_stream", "upload_parts", "parse_responses", "build_request", "qs",
    "free_port", "wait_for", "until", "exit_code", "stdout_lines", "stderr_lines", "events_of",
    "check_events", "EXECD_BIN", "REPO", "TestTimeout", "proc_status_kib", "cpu_seconds", "first_response",
]

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXECD_BIN = os.environ.get("EXECD_BIN") or os.path.join(REPO, "build", "bin", "execd")

_live_execds = []


# ---------------------------------------------------------------- TAP

class TestTimeout(Exception):
    pass


class TAP:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.current = None

    def _emit(self, line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def diag(self, msg):
        for line in str(msg).splitlines() or [""]:
            self._emit("# " + line)

    def _name(self, name):
        name = str(name).replace("\n", " ")
        if self.current and not name.startswith(self.current):
            name = "%s: %s" % (self.current, name)
        return name

    def ok(self, cond, name, diag=None):
        self.n += 1
        if cond:
            self._emit("ok - " + self._name(name))
            return True
        self.failed += 1
        self._emit("not ok - " + self._name(name))
        if diag is not None:
            self.diag(diag)
        self._dump_execd_logs()
        return False

    def eq(self, got, want, name, diag=None):
        extra = "" if diag is None else "\n%s" % (diag,)
        return self.ok(got == want, name, "got:  %r\nwant: %r%s" % (got, want, extra))

    def skip(self, name, why):
        self.n += 1
        self._emit("ok - %s # SKIP %s" % (self._name(name), why))

    def is_error(self, resp, status, code=None, name=None):
        name = name or "%s -> %d error JSON" % (getattr(resp, "what", "request"), status)
        problems = []
        if resp.status != status:
            problems.append("status %d, want %d" % (resp.status, status))
        try:
            j = resp.json()
        except Exception:
            j = None
        if not isinstance(j, dict):
            problems.append("body is not a JSON object")
        else:
            for k in ("code", "message"):
                if not isinstance(j.get(k), str) or not j.get(k):
                    problems.append("missing/empty %r" % k)
            if code is not None and j.get("code") != code:
                problems.append("code %r, want %r" % (j.get("code"), code))
        ctype = resp.headers.get("content-type", "")
        if not ctype.startswith("application/json"):
            problems.append("content-type %r" % ctype)
        return self.ok(not problems, name,
                       "; ".join(problems) + "\nbody: %r" % resp.body[:500] if problems else None)

    def is_empty_ok(self, resp, name=None, status=200):
        name = name or "%s -> empty %d" % (getattr(resp, "what", "request"), status)
        problems = []
        if resp.status != status:
            problems.append("status %d, want %d" % (resp.status, status))
        if resp.body:
            problems.append("non-empty body")
        if resp.headers.get("content-length") != "0":
            problems.append("content-length %r" % resp.headers.get("content-length"))
        return self.ok(not problems, name,
                       "; ".join(problems) + "\nbody: %r" % resp.body[:500] if problems else None)

    def _dump_execd_logs(self):
        for x in list(_live_execds):
            new = x._new_stderr()
            if new:
                lines = new.splitlines()[-40:]
                self.diag("execd(port %d) stderr:" % x.port)
                self.diag("\n".join("  " + l for l in lines))

    def run(self, fn, *args, name=None, timeout=30, **kw):
        name = name or fn.__name__
        if name.startswith("test_"):
            name = name[5:]
        prev, self.current = self.current, name

        def on_alarm(signum, frame):
            raise TestTimeout("test %r exceeded %ss" % (name, timeout))

        # Nested runs (a main() holding the daemon around several tests) keep
        # the outer deadline: save it and re-arm it, minus the time spent.
        old = signal.signal(signal.SIGALRM, on_alarm)
        outer_left, _ = signal.setitimer(signal.ITIMER_REAL, timeout)
        if 0 < outer_left < timeout:
            signal.setitimer(signal.ITIMER_REAL, outer_left)
        started = time.monotonic()
        try:
            return fn(*args, **kw)
        except Exception:
            self.current = prev
            self.ok(False, "%s: raised %s" % (name, sys.exc_info()[0].__name__),
                    traceback.format_exc().rstrip())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            if outer_left > 0:
                signal.setitimer(signal.ITIMER_REAL,
                                 max(0.001, outer_left - (time.monotonic() - started)))
            self.current = prev

    def test(self, fn=None, **kw):
        if fn is None:
            return lambda f: (self.run(f, **kw), f)[1]
        self.run(fn)
        return fn

    def done(self):
        self._emit("1..%d" % self.n)
        if self.failed:
            self._emit("# %d of %d failed" % (self.failed, self.n))
        sys.stdout.flush()
        sys.exit(1 if self.failed else 0)


def wait_for(pred, timeout=5.0, interval=0.01):
    end = time.monotonic() + timeout
    while True:
        try:
            if pred():
                return True
        except Exception:
            pass
        if time.monotonic() >= end:
            return False
        time.sleep(interval)


def until(pred, timeout=60.0, interval=0.05):
    """pred()'s first truthy value; its last value once timeout has passed.
    Unlike wait_for, an exception in pred propagates."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def qs(path, params):
    return path + "?" + urllib.parse.urlencode(params, doseq=True)


# ---------------------------------------------------------------- HTTP responses

class Resp:
    def __init__(self, status, reason, header_list, body, chunked=False, what=None):
        self.status = status
        self.reason = reason
        self.header_list = header_list
        self.headers = {k.lower(): v for k, v in header_list}
        self.body = body
        self.chunked = chunked
        self.what = what

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return _json.loads(self.body)

    def __repr__(self):
        return "<Resp %d %r %r>" % (self.status, self.headers, self.body[:200])


class _Reader:
    """Incremental HTTP/1.1 response reader over a socket."""

    def __init__(self, sock, data=b""):
        self.sock = sock
        self.buf = bytearray(data)
        self.eof = False

    def _fill(self):
        if self.eof:
            raise EOFError("connection closed by peer")
        d = self.sock.recv(65536)
        if not d:
            self.eof = True
            raise EOFError("connection closed by peer")
        self.buf += d

    def readline(self, limit=1 << 20):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return line
            if len(self.buf) > limit:
                raise ValueError("line too long")
            self._fill()

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        d = bytes(self.buf[:n])
        del self.buf[:n]
        return d

    def read_head(self):
        line = self.readline()
        parts = line.rstrip(b"\r\n").split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError("bad status line %r" % line)
        status = int(parts[1])
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        headers = []
        while True:
            h = self.readline()
            if h in (b"\r\n", b"\n"):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers.append((k.strip(), v.strip()))
        return status, reason, headers

    def iter_body(self, status, headers, method="GET"):
        """Yields body pieces: whole chunks for chunked bodies."""
        h = {k.lower(): v for k, v in headers}
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return
        if "chunked" in h.get("transfer-encoding", "").lower():
            while True:
                size_line = self.readline()
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.readline() not in (b"\r\n", b"\n"):
                        pass
                    return
                data = self.read_exact(size)
                if self.read_exact(2) != b"\r\n":
                    raise ValueError("chunk not followed by CRLF")
                yield data
        elif "content-length" in h:
            n = int(h["content-length"])
            while n > 0:
                if not self.buf:
                    self._fill()
                take = bytes(self.buf[:n])
                del self.buf[:len(take)]
                n -= len(take)
                yield take
        else:
            while True:
                if self.buf:
                    d = bytes(self.buf)
                    self.buf.clear()
                    yield d
                try:
                    self._fill()
                except EOFError:
                    return

    def read_response(self, method="GET"):
        status, reason, headers = self.read_head()
        body = b"".join(self.iter_body(status, headers, method))
        chunked = "chunked" in dict((k.lower(), v) for k, v in headers).get(
            "transfer-encoding", "").lower()
        return Resp(status, reason, headers, body, chunked=chunked)


class _BytesSock:
    def __init__(self, data):
        self.data = data

    def recv(self, n):
        d, self.data = self.data[:n], self.data[n:]
        return d


def parse_responses(data, methods=None):
    """Parse a byte string holding consecutive HTTP responses."""
    r = _Reader(_BytesSock(data))
    out = []
    i = 0
    while True:
        if not r.buf:
            try:
                r._fill()
            except EOFError:
                break
        m = methods[i] if methods and i < len(methods) else "GET"
        out.append(r.read_response(m))
        i += 1
    return out


def build_request(method, path, headers=None, body=None, chunked=False, host="127.0.0.1"):
    lines = ["%s %s HTTP/1.1" % (method, path)]
    hdrs = dict(headers or {})
    if not any(k.lower() == "host" for k in hdrs):
        lines.append("Host: %s" % host)
    for k, v in hdrs.items():
        if v is not None:
            lines.append("%s: %s" % (k, v))
    if body is not None and not any(k.lower() in ("content-length", "transfer-encoding")
                                    for k in hdrs):
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        else:
            lines.append("Content-Length: %d" % len(body))
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    if body is None:
        return head
    if chunked:
        return head + (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if body else b"0\r\n\r\n")
    return head + body


def first_response(raw):
    """(status, headers dict, body) of the first final response in raw, or
    None while it is incomplete. The 1xx interim answers before it are in
    headers["1xx"] (their statuses, in order)."""
    interim = []
    while True:
        end = raw.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = raw[:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        rest = raw[end + 4:]
        if 100 <= status < 200:
            interim.append(status)
            raw = rest
            continue
        n = int(hdrs.get("content-length", "0"))
        if len(rest) < n:
            return None
        hdrs["1xx"] = interim
        return status, hdrs, rest[:n]


def proc_status_kib(pid, field):
    """A kB field of /proc/<pid>/status ("VmRSS", "VmHWM"); 0 if absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawConn:
    def __init__(self, host, port, timeout=10):
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = _Reader(self.sock)

    def send(self, data):
        self.sock.sendall(data)

    def send_request(self, method, path, headers=None, body=None, chunked=False):
        self.send(build_request(method, path, headers, body, chunked,
                                host="%s:%d" % (self.host, self.port)))

    def read_response(self, method="GET"):
        return self.reader.read_response(method)

    def closed_by_peer(self, wait=1.0):
        """True if the peer closed (EOF) within `wait` seconds with no more data."""
        if self.reader.buf:
            return False
        r, _, _ = select.select([self.sock], [], [], wait)
        if not r:
            return False
        try:
            d = self.sock.recv(65536, socket.MSG_PEEK)
        except (ConnectionResetError, OSError):
            return True
        return d == b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


# ---------------------------------------------------------------- SSE

class SSEFormatError(Exception):
    pass


class SSEResult(collections.namedtuple("SSEResult", "status headers events raw")):
    resp = None
    chunks = None
    complete = True


def _split_events(buf, strict):
    """Split complete "<json>\\n\\n" records off buf (a bytearray); returns events."""
    out = []
    while True:
        i = buf.find(b"\n\n")
        if i < 0:
            return out
        rec = bytes(buf[:i])
        del buf[:i + 2]
        try:
            ev = _json.loads(rec)
        except ValueError:
            if strict:
                raise SSEFormatError("record is not JSON: %r" % rec[:300])
            continue
        if strict and (not isinstance(ev, dict) or rec != rec.strip() or b"\n" in rec):
            raise SSEFormatError("record is not a compact JSON object: %r" % rec[:300])
        out.append(ev)


class SSEStream:
    def __init__(self, client, path, json=None, body=None, headers=None, method="POST",
                 timeout=60, strict=True):
        self.strict = strict
        self.conn = RawConn(client.host, client.port, timeout=timeout)
        hdrs = client._auth_headers()
        hdrs["Accept"] = "text/event-stream"
        if json is not None:
            body = _json.dumps(json).encode()
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        self.t0 = time.monotonic()
        self.conn.send_request(method, path, hdrs, body)
        self.status, self.reason, self.header_list = self.conn.reader.read_head()
        self.headers = {k.lower(): v for k, v in self.header_list}
        self.resp = None
        self.raw = bytearray()
        self.chunks = []
        self.complete = False
        if self.status != 200:
            body = b"".join(self.conn.reader.iter_body(self.status, self.header_list, method))
            self.resp = Resp(self.status, self.reason, self.header_list, body)
            self.raw += body
            self.complete = True
            self._it = iter(())
        else:
            self._it = self._events(method)

    def _events(self, method):
        buf = bytearray()
        for piece in self.conn.reader.iter_body(self.status, self.header_list, method):
            now = time.monotonic()
            self.raw += piece
            self.chunks.append(piece)
            buf += piece
            for ev in _split_events(buf, self.strict):
                yield now, ev
        self.complete = True
        if buf and self.strict:
            raise SSEFormatError("trailing bytes after the last event: %r" % bytes(buf[:300]))

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


# ---------------------------------------------------------------- event helpers

KNOWN_EVENT_TYPES = {"init", "status", "error", "stdout", "stderr", "result",
                     "execution_complete", "execution_count", "ping"}


def events_of(events, typ):
    return [e for e in events if e.get("type") == typ]


def stdout_lines(events):
    return [e.get("text", "") for e in events_of(events, "stdout")]


def stderr_lines(events):
    return [e.get("text", "") for e in events_of(events, "stderr")]


def exit_code(events):
    for e in events:
        if e.get("type") == "error":
            try:
                return int(e["error"]["evalue"])
            except (KeyError, TypeError, ValueError):
                return None
    if events_of(events, "execution_complete"):
        return 0
    return None


def check_events(events):
    problems = []
    for i, e in enumerate(events):
        if not isinstance(e.get("type"), str):
            problems.append("event %d has no string type: %r" % (i, e))
        elif e["type"] not in KNOWN_EVENT_TYPES:
            problems.append("event %d has unknown type: %r" % (i, e))
        ts = e.get("timestamp")
        if not isinstance(ts, int) or isinstance(ts, bool):
            problems.append("event %d has no integer timestamp: %r" % (i, e))
        if e.get("type") == "error":
            err = e.get("error")
            if not isinstance(err, dict) or not all(k in err for k in ("ename", "evalue", "traceback")):
                problems.append("event %d error object incomplete: %r" % (i, e))
    return problems


# ---------------------------------------------------------------- multipart

def _part_head(boundary, name, filename, ctype):
    disp = 'form-data; name="%s"' % name
    if filename is not None:
        disp += '; filename="%s"' % filename
    h = "--%s\r\nContent-Disposition: %s\r\n" % (boundary, disp)
    if ctype is not None:
        h += "Content-Type: %s\r\n" % ctype
    return (h + "\r\n").encode("utf-8")


def _boundary():
    return "osbtest%032x" % random.getrandbits(128)


def multipart(parts, boundary=None):
    boundary = boundary or _boundary()
    out = []
    for name, filename, ctype, data in parts:
        out.append(_part_head(boundary, name, filename, ctype))
        out.append(data if isinstance(data, bytes) else data.encode())
        out.append(b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return "multipart/form-data; boundary=%s" % boundary, b"".join(out)


def multipart_stream(parts, boundary=None):
    boundary = boundary or _boundary()
    pieces = []
    length = 0
    for name, filename, ctype, data in parts:
        head = _part_head(boundary, name, filename, ctype)
        pieces.append(head)
        length += len(head)
        if isinstance(data, (bytes, str)):
            data = data if isinstance(data, bytes) else data.encode()
            pieces.append(data)
            length += len(data)
        else:
            it, size = data
            pieces.append(it)
            length += size
        pieces.append(b"\r\n")
        length += 2
    tail = ("--%s--\r\n" % boundary).encode()
    pieces.append(tail)
    length += len(tail)

    def gen():
        for p in pieces:
            if isinstance(p, bytes):
                yield p
            else:
                for c in p:
                    yield c
    return "multipart/form-data; boundary=%s" % boundary, gen(), length


def upload_parts(files):
    parts = []
    for f in files:
        meta, data = f[0], f[1]
        fname = f[2] if len(f) > 2 else os.path.basename(meta.get("path", "file")) or "file"
        parts.append(("metadata", "metadata", "application/json", _json.dumps(meta).encode()))
        parts.append(("file", fname, "application/octet-stream", data))
    return parts


# ---------------------------------------------------------------- WebSocket

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WSRefused(Exception):
    def __init__(self, resp):
        Exception.__init__(self, "websocket upgrade refused: %d %r" % (resp.status, resp.body[:200]))
        self.resp = resp


class WS:
    def __init__(self, sock, client=True, leftover=b"", resp=None):
        self.sock = sock
        self.client = client
        self.reader = _Reader(sock, leftover)
        self.resp = resp
        self.close_code = None
        self.close_reason = None
        self.close_sent = False
        self.closed = False
        self.lock = threading.Lock()

    def send_frame(self, opcode, payload, fin=True, rsv=0, mask=None):
        if isinstance(payload, str):
            payload = payload.encode()
        mask = self.client if mask is None else mask
        b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
        n = len(payload)
        mbit = 0x80 if mask else 0
        if n < 126:
            head = struct.pack("!BB", b0, mbit | n)
        elif n < 65536:
            head = struct.pack("!BBH", b0, mbit | 126, n)
        else:
            head = struct.pack("!BBQ", b0, mbit | 127, n)
        if mask:
            key = os.urandom(4)
            payload = _mask(payload, key)
            head += key
        with self.lock:
            self.sock.sendall(head + payload)

    def send_text(self, s):
        self.send_frame(1, s.encode() if isinstance(s, str) else s)

    def send_binary(self, b):
        self.send_frame(2, b)

    def ping(self, b=b""):
        self.send_frame(9, b)

    def send_fragmented(self, opcode, payload, pieces=3):
        if isinstance(payload, str):
            payload = payload.encode()
        step = max(1, (len(payload) + pieces - 1) // pieces)
        chunks = [payload[i:i + step] for i in range(0, len(payload), step)] or [b""]
        for i, c in enumerate(chunks):
            self.send_frame(opcode if i == 0 else 0, c, fin=(i == len(chunks) - 1))

    def recv_frame(self, timeout=10):
        self.sock.settimeout(timeout)
        b0, b1 = self.reader.read_exact(2)
        fin, opcode = bool(b0 & 0x80), b0 & 0x0F
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.reader.read_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.reader.read_exact(8))[0]
        key = self.reader.read_exact(4) if b1 & 0x80 else None
        payload = self.reader.read_exact(n)
        if key:
            payload = _mask(payload, key)
        return fin, opcode, payload

    def recv(self, timeout=10):
        end = time.monotonic() + timeout
        msg_op, parts = None, []
        while True:
            fin, op, payload = self.recv_frame(max(0.01, end - time.monotonic()))
            if op == 9:
                if not self.close_sent:
                    self.send_frame(10, payload)
                continue
            if op == 10:
                continue
            if op == 8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.close_reason = payload[2:].decode("utf-8", "replace")
                if not self.close_sent:
                    try:
                        self.send_frame(8, payload[:2])
                    except OSError:
                        pass
                    self.close_sent = True
                return 8, payload
            if op in (1, 2):
                msg_op, parts = op, [payload]
            elif op == 0:
                parts.append(payload)
            if fin and msg_op is not None:
                return msg_op, b"".join(parts)

    def close(self, code=1000, reason="", wait=2.0):
        try:
            if not self.close_sent:
                self.send_frame(8, struct.pack("!H", code) + reason.encode())
                self.close_sent = True
            if wait and self.close_code is None:
                end = time.monotonic() + wait
                while time.monotonic() < end:
                    op, _ = self.recv(timeout=max(0.01, end - time.monotonic()))
                    if op == 8:
                        break
        except (OSError, EOFError, ValueError):
            pass
        finally:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def abort(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass


def _mask(payload, key):
    n = len(payload)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


def _ws_handshake(host, port, path, headers, timeout):
    sock = socket.create_connection((host, port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    hdrs = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13"}
    hdrs.update(headers or {})
    sock.sendall(build_request("GET", path, hdrs, host="%s:%d" % (host, port)))
    r = _Reader(sock)
    status, reason, hl = r.read_head()
    if status != 101:
        body = b"".join(r.iter_body(status, hl, "GET"))
        sock.close()
        return Resp(status, reason, hl, body), None
    resp = Resp(status, reason, hl, b"")
    want = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
    if resp.headers.get("sec-websocket-accept") != want:
        sock.close()
        raise ValueError("bad Sec-WebSocket-Accept %r" % resp.headers.get("sec-websocket-accept"))
    return resp, WS(sock, client=True, leftover=bytes(r.buf), resp=resp)


def ws_accept(sock):
    r = _Reader(sock)
    line = r.readline().decode("latin-1").split()
    headers = []
    while True:
        h = r.readline()
        if h in (b"\r\n", b"\n"):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers.append((k.strip(), v.strip()))
    hd = {k.lower(): v for k, v in headers}
    accept = base64.b64encode(hashlib.sha1(
        (hd.get("sec-websocket-key", "") + WS_GUID).encode()).digest()).decode()
    sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
    ws = WS(sock, client=False, leftover=bytes(r.buf))
    ws.request_path = line[1] if len(line) > 1 else ""
    ws.request_headers = hd
    return ws


class WSEchoServer:
    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.requests = []
        self.closes = []
        self.stopping = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self):
        while not self.stopping:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        try:
            ws = ws_accept(s)
            self.requests.append((ws.request_path, ws.request_headers))
            while True:
                op, payload = ws.recv(timeout=30)
                if op == 8:
                    self.closes.append(ws.close_code)
                    break
                ws.send_frame(op, payload)
        except Exception:
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.stopping = True
        try:
            self.lsock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


# ---------------------------------------------------------------- client

class Client:
    def __init__(self, host="127.0.0.1", port=0, token=None, keepalive=False):
        self.host = host
        self.port = port
        self.token = token
        self.keepalive = keepalive
        self._conn = None

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def _auth_headers(self):
        return {"X-EXECD-ACCESS-TOKEN": self.token} if self.token else {}

    def req(self, method, path, body=None, json=None, headers=None, timeout=30):
        hdrs = self._auth_headers()
        if json is not None:
            body = _json.dumps(json).encode()
            hdrs["Content-Type"] = "application/json"
        if isinstance(body, str):
            body = body.encode()
        for k, v in (headers or {}).items():
            hdrs = {hk: hv for hk, hv in hdrs.items() if hk.lower() != k.lower()}
            if v is not None:
                hdrs[k] = v
        if self.keepalive:
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            conn = self._conn
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            resp = Resp(r.status, r.reason, list(r.getheaders()), data,
                        chunked=bool(r.chunked), what="%s %s" % (method, path[:80]))
        except Exception:
            conn.close()
            if self.keepalive:
                self._conn = None
            raise
        if not self.keepalive:
            conn.close()
        return resp

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def post(self, path, json=None, **kw):
        return self.req("POST", path, json=json, **kw)

    def delete(self, path, **kw):
        return self.req("DELETE", path, **kw)

    def ping(self, timeout=2):
        try:
            return self.req("GET", "/ping", timeout=timeout).status == 200
        except (OSError, http.client.HTTPException):
            return False

    def raw(self, data, timeout=3, until_close=True):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        out = bytearray()
        try:
            s.sendall(data)
            end = time.monotonic() + timeout
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    break
                r, _, _ = select.select([s], [], [], left if until_close else min(left, 0.3))
                if not r:
                    if until_close:
                        continue
                    break
                try:
                    d = s.recv(65536)
                except ConnectionResetError:
                    break
                if not d:
                    break
                out += d
        finally:
            s.close()
        return bytes(out)

    def rawconn(self, timeout=10):
        return RawConn(self.host, self.port, timeout)

    def sse_stream(self, path, json=None, body=None, headers=None, method="POST", timeout=60,
                   strict=True):
        return SSEStream(self, path, json=json, body=body, headers=headers, method=method,
                         timeout=timeout, strict=strict)

    def sse(self, path, json=None, body=None, headers=None, method="POST", timeout=60,
            strict=True):
        st = self.sse_stream(path, json=json, body=body, headers=headers, method=method,
                             timeout=timeout, strict=strict)
        try:
            events = [ev for _, ev in st]
        finally:
            st.close()
        res = SSEResult(st.status, st.headers, events, bytes(st.raw))
        res.resp = st.resp
        res.chunks = st.chunks
        res.complete = st.complete
        return res

    def upload_stream(self, path, content_type, chunks, length=None, headers=None,
                      method="POST", timeout=120):
        conn = RawConn(self.host, self.port, timeout=timeout)
        try:
            hdrs = self._auth_headers()
            hdrs["Content-Type"] = content_type
            if length is None:
                hdrs["Transfer-Encoding"] = "chunked"
            else:
                hdrs["Content-Length"] = str(length)
            hdrs.update(headers or {})
            conn.send(build_request(method, path, hdrs, host="%s:%d" % (self.host, self.port)))
            try:
                for c in chunks:
                    if not c:
                        continue
                    if length is None:
                        conn.send(b"%x\r\n%s\r\n" % (len(c), c))
                    else:
                        conn.send(c)
                if length is None:
                    conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer early (e.g. 413); read what it said
            return conn.read_response(method)
        finally:
            conn.close()

    def ws_connect(self, path, headers=None, timeout=10):
        resp, ws = self.try_ws_connect(path, headers, timeout)
        if ws is None:
            raise WSRefused(resp)
        return ws

    def try_ws_connect(self, path, headers=None, timeout=10):
        hdrs = self._auth_headers()
        hdrs.update(headers or {})
        return _ws_handshake(self.host, self.port, path, hdrs, timeout)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# ---------------------------------------------------------------- daemon

class ExecdCrashed(Exception):
    pass


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE}
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer")


def _children_map():
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids[ppid].append(int(d))
    return kids


def marked_processes(marker):
    """Pids whose environment holds marker ("KEY=value")."""
    if not marker:
        return []
    want = marker.encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if want in f.read().split(b"\0"):
                    out.append(int(d))
        except OSError:
            pass
    return out


def descendants(pid):
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, ()):
            out.append(c)
            todo.append(c)
    return out


class Execd(Client):
    def __init__(self, args=(), env=None, token=None, argv=None, start_timeout=5.0,
                 stop_timeout=3.0, port=None):
        Client.__init__(self, "127.0.0.1", port or free_port(), token)
        self.args = list(args)
        self.env_extra = dict(env or {})
        self.argv_fn = argv
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.proc = None
        self.returncode = None
        self._log = tempfile.NamedTemporaryFile(prefix="execd-", suffix=".log", delete=False)
        self._log_pos = 0

    def command(self):
        if self.argv_fn:
            return list(self.argv_fn(self.port))
        argv = [EXECD_BIN, "--port", str(self.port)]
        if self.token:
            argv += ["--access-token", self.token]
        return argv + self.args

    def start(self):
        env = dict(os.environ)
        env.pop("EXECD_ACCESS_TOKEN", None)
        # Every process execd starts inherits this marker, so stop() can find
        # the ones that outlived their parents (`sleep 100 &` in a test).
        self.marker = "OSB_TEST_EXECD=%d-%s" % (os.getpid(), os.urandom(6).hex())
        env["OSB_TEST_EXECD"] = self.marker.split("=", 1)[1]
        for k, v in self.env_extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        _live_execds.append(self)
        end = time.monotonic() + self.start_timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                self._finish()
                raise RuntimeError("execd exited with %s before answering /ping\n%s"
                                   % (self.proc.returncode, self.stderr_text()[-3000:]))
            if self._ping_once():
                return self
            time.sleep(0.01)
        self.stop()
        raise RuntimeError("execd did not answer /ping within %.1fs\n%s"
                           % (self.start_timeout, self.stderr_text()[-3000:]))

    def _ping_once(self):
        try:
            s = socket.create_connection((self.host, self.port), timeout=0.5)
        except OSError:
            return False
        try:
            s.settimeout(1)
            s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return _Reader(s).read_head()[0] == 200
        except (OSError, ValueError, EOFError):
            return False
        finally:
            s.close()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and self._ping_once()

    def stderr_text(self):
        try:
            with open(self._log.name, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _new_stderr(self):
        try:
            with open(self._log.name, "rb") as f:
                f.seek(self._log_pos)
                d = f.read()
                self._log_pos += len(d)
                return d.decode("utf-8", "replace")
        except OSError:
            return ""

    def _finish(self):
        if self in _live_execds:
            _live_execds.remove(self)

    def stop(self):
        """SIGTERM, SIGKILL after stop_timeout; returns the exit status (Popen style)."""
        if self.proc is None:
            return None
        if self.returncode is not None:
            return self.returncode
        self.close()
        kids = descendants(self.proc.pid) if self.proc.poll() is None else []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in kids + marked_processes(getattr(self, "marker", None)):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.returncode = self.proc.returncode
        self._finish()
        rc = self.returncode
        log = self.stderr_text()
        try:
            self._log.close()
        except OSError:
            pass
        crashed = rc is not None and rc < 0 and -rc in CRASH_SIGNALS
        sanitizer = any(m in log for m in SANITIZER_MARKS)
        if crashed or sanitizer:
            raise ExecdCrashed("execd %s\n%s" % (
                "died of signal %d" % -rc if crashed else "reported a sanitizer error",
                log[-4000:]))
        try:
            os.unlink(self._log.name)
        except OSError:
            pass
        return rc

    def __enter__(self):
        return self.start()

    def __exit__(self, et, ev, tb):
        try:
            self.stop()
        except ExecdCrashed:
            if et is None:
                raise
            sys.stdout.write("".join("# " + l + "\n" for l in
                                     traceback.format_exc().splitlines()))
        return False
