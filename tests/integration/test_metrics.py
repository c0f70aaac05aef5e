#!/usr/bin/python3
"""execd /metrics and /metrics/watch (protocol.md 3.2, 3.6, 6.2)."""
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F401

t = TAP()
KEYS = ["cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib", "timestamp"]


def meminfo_total_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024
    return None


def check_metrics(m, name):
    t.eq(list(m.keys()) if isinstance(m, dict) else m, KEYS, name + ": fields in Go order")
    if not isinstance(m, dict):
        return
    nums = all(isinstance(m[k], (int, float)) and not isinstance(m[k], bool) for k in KEYS)
    t.ok(nums, name + ": numbers")
    t.ok(isinstance(m["timestamp"], int) and abs(m["timestamp"] - time.time() * 1000) < 60000,
         name + ": timestamp is Unix ms", m)
    t.ok(0 < m["cpu_count"] <= os.cpu_count(), name + ": cpu_count", m)
    t.ok(0 <= m["cpu_used_pct"] <= 100, name + ": cpu_used_pct in 0..100", m)
    total = meminfo_total_mib()
    t.ok(0 < m["mem_total_mib"] <= total + 1, name + ": mem_total_mib <= MemTotal", m)
    t.ok(0 < m["mem_used_mib"] <= m["mem_total_mib"], name + ": 0 < used <= total", m)


@t.test
def test_metrics():
    with Execd() as x:
        start = time.monotonic()
        r = x.get("/metrics")
        took = time.monotonic() - start
        t.eq(r.status, 200, "GET /metrics -> 200")
        t.ok(r.headers.get("content-type", "").startswith("application/json"), "JSON")
        t.ok(took >= 0.8, "CPU sampled over about a second (%.2fs)" % took)
        check_metrics(r.json(), "metrics")


@t.test
def test_loop_not_blocked():
    with Execd() as x:
        results = []
        th = [threading.Thread(target=lambda: results.append(x.get("/metrics").status))
              for _ in range(5)]
        start = time.monotonic()
        for h in th:
            h.start()
        ok = x.ping()
        done_at_ping = len(results)
        for h in th:
            h.join()
        took = time.monotonic() - start
        t.ok(ok and done_at_ping < 5, "ping answers while samples are still running")
        t.eq(results, [200] * 5, "5 concurrent /metrics")
        t.diag("5 concurrent samples took %.2f s (one alone takes about 1 s)" % took)


@t.test(timeout=40)
def test_busy_cpu():
    with Execd() as x:
        r = x.sse("/command", json={"command": "timeout 4 sh -c 'while :; do :; done'",
                                    "background": True})
        t.eq(r.status, 200, "busy loop started")
        time.sleep(0.3)
        m = x.get("/metrics").json()
        share = 100.0 / m["cpu_count"]
        t.ok(m["cpu_used_pct"] > share * 0.3,
             "a busy core shows up in cpu_used_pct (%.1f%%, one core = %.1f%%)"
             % (m["cpu_used_pct"], share))


@t.test(timeout=30)
def test_watch():
    with Execd() as x:
        s = socket.create_connection(("127.0.0.1", x.port), timeout=10)
        s.sendall(b"GET /metrics/watch HTTP/1.1\r\nHost: x\r\n\r\n")
        from osbtest import _Reader
        rd = _Reader(s)
        status, reason, headers = rd.read_head()
        h = {k.lower(): v for k, v in headers}
        t.eq(status, 200, "watch -> 200")
        t.ok(h.get("content-type", "").startswith("text/event-stream"), "event-stream")
        t.ok("chunked" in h.get("transfer-encoding", ""), "chunked")
        buf = b""
        lines = []
        times = []
        start = time.monotonic()
        body = rd.iter_body(status, headers)
        while len(lines) < 3:
            piece = next(body)
            buf += piece
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                lines.append(line)
                times.append(time.monotonic() - start)
        s.close()
        t.ok(all(l and not l.startswith(b"data:") for l in lines), "raw JSON lines", lines)
        ms = [json.loads(l) for l in lines]
        for i, m in enumerate(ms):
            check_metrics(m, "watch line %d" % i)
        gaps = [b - a for a, b in zip(times, times[1:])]
        t.ok(0.5 < times[0] < 2.5 and all(0.5 < g < 2 for g in gaps),
             "a line about every second", times)
        t.ok(x.ping(), "execd fine after the watcher left")
        time.sleep(1.5)
        t.ok(x.ping(), "no crash writing to the closed watcher")


t.done()
