"""Operations (issue 15): GET /metrics in Prometheus' text format, the access log
(text and JSON, to a file reopened on SIGHUP), JSON server logs.

A server with an API key: /metrics needs it; after a create, a pause, a resume, a
renew, a delete and a few failing requests, the families carry those events (HTTP
requests by route template and status, create-to-ready histogram, sandboxes by
state and runtime, operations, process figures), and every sample line parses.
The access log has one line per request with its X-Request-ID, the route template,
status, bytes, duration and the key's id, never the key. A second server logs JSON
lines to a file: every line parses, access lines have the fields, and after the file
is moved away and SIGHUP sent, new lines go to a new file at the same path."""
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
KEY = "metrics-key-0123456789abcdef"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*)?\})? (-?[0-9.e+-]+|\+Inf|NaN)$')


def samples(text):
    """{(name, labels text): value} of every sample line; bad lines listed."""
    out, bad = {}, []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            bad.append(line)
            continue
        out[(m.group(1), m.group(3) or "")] = float(m.group(7))
    return out, bad


def value(sm, name, **labels):
    """The sample of name whose labels include these (sum when several)."""
    want = ['%s="%s"' % kv for kv in labels.items()]
    vals = [v for (n, l), v in sm.items() if n == name and all(w in l.split(",") for w in want)]
    return sum(vals) if vals else None


def test_metrics(s):
    r = s.req("GET", "/metrics", headers={"OPEN-SANDBOX-API-KEY": ""})
    t.eq(r.status, 401, "GET /metrics without the key -> 401")
    sid = s.new()["id"]
    t.ok(until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running"),
         "a sandbox is running")
    t.eq(s.post("/v1/sandboxes/%s/pause" % sid).status, 202, "paused")
    t.eq(s.post("/v1/sandboxes/%s/resume" % sid).status, 202, "resumed")
    r = s.post("/v1/sandboxes/%s/renew-expiration" % sid,
               json={"expiresAt": "2099-01-01T00:00:00Z"})
    t.ok(r.status in (200, 400), "renew answered (%d)" % r.status)
    s.get("/v1/sandboxes/no-such-sandbox")
    s.get("/v1/no/such/route")
    r = s.get("/metrics")
    t.eq(r.status, 200, "GET /metrics with the key -> 200")
    t.ok(r.headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
         "  Prometheus text format 0.0.4", r.headers)
    sm, bad = samples(r.text)
    t.eq(bad, [], "  every sample line parses")
    t.ok(value(sm, "opensandbox_sandboxes", state="Running", runtime="native") == 1,
         "opensandbox_sandboxes{state=Running,runtime=native} 1",
         [k for k in sm if k[0] == "opensandbox_sandboxes"])
    t.eq(value(sm, "opensandbox_sandboxes", state="Paused"), 0, "  Paused 0 (every state shown)")
    t.eq(value(sm, "opensandbox_sandbox_creates_total", outcome="ok"), 1, "one create, ok")
    t.eq(value(sm, "opensandbox_sandbox_create_seconds_count"), 1,
         "  in the create-to-ready histogram")
    t.eq(value(sm, "opensandbox_sandbox_create_seconds_bucket", le="+Inf"), 1, "  +Inf bucket")
    t.eq((value(sm, "opensandbox_sandbox_operations_total", operation="pause"),
          value(sm, "opensandbox_sandbox_operations_total", operation="resume")), (1, 1),
         "a pause and a resume counted")
    t.eq(value(sm, "opensandbox_http_requests_total", method="POST", route="/v1/sandboxes",
               status="202"), 1, "HTTP requests by route template: POST /v1/sandboxes 202")
    t.ok((value(sm, "opensandbox_http_requests_total", route="/v1/sandboxes/:sandboxId",
                status="404") or 0) >= 1 or
         (value(sm, "opensandbox_http_requests_total", status="404") or 0) >= 2,
         "  a 404 on a sandbox route, by its template (no id in any label)",
         [k for k in sm if k[0] == "opensandbox_http_requests_total"])
    t.ok(not any("no-such-sandbox" in k[1] for k in sm), "  no path in a label")
    t.ok(value(sm, "opensandbox_http_request_duration_seconds_count") >= 5,
         "the request-time histogram counts them")
    t.ok(value(sm, "process_resident_memory_bytes") > 0 and
         value(sm, "process_open_fds") > 0 and value(sm, "process_start_time_seconds") > 1e9,
         "process figures")
    t.ok(value(sm, "opensandbox_admission_queue_length") == 0, "admission queue length 0")
    t.ok(any(k[0] == "opensandbox_build_info" for k in sm), "build info")
    t.eq(value(sm, "opensandbox_admission_wait_seconds_count"), 1,
         "the create's admission wait in its histogram")
    t.ok(all(value(sm, n) is not None for n in (
        "opensandbox_egress_dns_queries_total", "opensandbox_egress_dns_denied_total",
        "opensandbox_egress_dns_failed_total", "opensandbox_egress_learned_addresses")),
        "egress families: DNS queries, denials, failures, learned addresses")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "deleted")
    sm, _ = samples(s.get("/metrics").text)
    t.eq(value(sm, "opensandbox_sandbox_operations_total", operation="delete"), 1,
         "  the delete counted")
    t.ok(value(sm, "opensandbox_sandbox_delete_seconds_count") == 1 and
         value(sm, "opensandbox_sandbox_delete_seconds_sum") > 0,
         "  and its teardown time in the delete histogram")
    t.eq(value(sm, "opensandbox_sandboxes", state="Running"), 0, "  no sandbox running")
    r = s.post("/v1/pools", json={
        "name": "metrics-pool", "template": {"image": {"uri": "host"},
                                             "entrypoint": ["tail", "-f", "/dev/null"]},
        "capacitySpec": {"bufferMin": 1, "bufferMax": 1, "poolMin": 0, "poolMax": 1}})
    t.ok(r.status in (200, 201), "a warm pool of one", r.text[:300])
    ready = until(lambda: value(samples(s.get("/metrics").text)[0], "opensandbox_pool_members",
                                pool="metrics-pool", state="available") == 1, 120)
    sm, _ = samples(s.get("/metrics").text)
    t.ok(ready and value(sm, "opensandbox_pool_members", pool="metrics-pool",
                         state="starting") == 0,
         "opensandbox_pool_members{pool,state}: the member ready, none starting",
         [k for k in sm if k[0] == "opensandbox_pool_members"])
    s.delete("/v1/pools/metrics-pool")


def test_access_text(s):
    rid = "req-" + os.urandom(6).hex()
    s.get("/v1/sandboxes", headers={"X-Request-ID": rid})
    line = until(lambda: next((l for l in s.log_text().splitlines() if rid in l), None), 30)
    t.ok(line and " access: " in line, "an access line per request, with its X-Request-ID", line)
    t.ok(line and re.search(r"access: %s GET /v1/sandboxes 200 \d+ [0-9.]+ms key=sha256:[0-9a-f]{12}"
                            % rid, line), "  id, method, route template, status, bytes, "
         "duration, the key's id", line)
    t.ok(KEY not in s.log_text(), "the API key never appears in the log")


def test_json_log(tmp):
    path = os.path.join(tmp, "server.jsonl")
    with Server(api_key=KEY, extra='[log]\nformat = "json"\nfile = "%s"\n' % path) as s:
        rid = "json-" + os.urandom(6).hex()
        s.get("/v1/sandboxes", headers={"X-Request-ID": rid})
        s.get("/v1/sandboxes/nope", headers={"X-Request-ID": rid + "b"})
        odd = 'q"uo\\te-' + rid
        s.get("/v1/sandboxes", headers={"X-Request-ID": odd})

        def lines():
            try:
                return [x for x in open(path).read().splitlines() if x]
            except OSError:
                return []
        until(lambda: any(rid + "b" in x for x in lines()) and
              any(rid in x and "uo" in x for x in lines()), 30)
        parsed, bad = [], []
        for x in lines():
            try:
                parsed.append(json.loads(x))
            except ValueError:
                bad.append(x)
        t.eq(bad, [], "[log] format = json, file: every line of the file is JSON")
        t.ok(any(p.get("level") == "info" and "listening on" in p.get("msg", "") for p in parsed),
             "  server lines are {time, level, service, msg}", parsed[:3])
        acc = [p for p in parsed if p.get("kind") == "access" and p.get("requestId") == rid]
        t.ok(len(acc) == 1 and acc[0].get("route") == "/v1/sandboxes" and
             acc[0].get("status") == 200 and acc[0].get("method") == "GET" and
             isinstance(acc[0].get("durationMs"), (int, float)) and
             acc[0].get("key", "").startswith("sha256:"),
             "  access lines: requestId, method, route, status, bytes, durationMs, key", acc)
        t.ok(any(p.get("kind") == "access" and p.get("requestId") == odd for p in parsed),
             "  an id with a quote and a backslash is escaped", odd)
        os.rename(path, path + ".1")
        os.kill(s.proc.pid, signal.SIGHUP)
        t.ok(until(lambda: os.path.exists(path), 30), "SIGHUP: the file is made again")
        rid2 = "after-" + os.urandom(6).hex()
        s.get("/v1/sandboxes", headers={"X-Request-ID": rid2})
        t.ok(until(lambda: any(rid2 in x for x in lines()), 30),
             "  new lines go to the new file")
        t.ok(rid2 not in open(path + ".1").read(), "  not to the old one")
        t.ok(KEY not in open(path).read() + open(path + ".1").read(), "  no API key in either")


def test_per_sandbox():
    with Server(api_key=KEY, extra="[metrics]\nper_sandbox = true\n") as s:
        sid = s.new()["id"]
        until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
        sm, bad = samples(s.get("/metrics").text)
        t.eq(bad, [], "[metrics] per_sandbox: every line parses")
        mem = value(sm, "opensandbox_sandbox_memory_bytes", sandbox_id=sid)
        cpu = value(sm, "opensandbox_sandbox_cpu_seconds_total", sandbox_id=sid)
        pids = value(sm, "opensandbox_sandbox_pids", sandbox_id=sid)
        t.ok(mem and mem > 0 and cpu is not None and cpu >= 0 and pids and pids >= 1,
             "  memory, CPU time and processes of the sandbox, by sandbox_id",
             (mem, cpu, pids))
        # 200 datagrams of 1000 bytes to the gateway's DNS port: the link's
        # transmit counter grows by at least their payload
        rx0 = value(sm, "opensandbox_sandbox_network_receive_bytes_total", sandbox_id=sid)
        tx0 = value(sm, "opensandbox_sandbox_network_transmit_bytes_total", sandbox_id=sid)
        t.ok(rx0 is not None and tx0 is not None, "  network bytes of the sandbox's link", (rx0, tx0))
        code = ("import socket,subprocess\n"
                "gw=subprocess.run(['ip','route','show','default'],capture_output=True,text=True)"
                ".stdout.split()[2]\n"
                "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                "[s.sendto(b'x'*1000,(gw,53)) for _ in range(200)]\n")
        ex = s.execd(sid)
        r = ex.req("POST", "/command", json={"command": "/usr/bin/python3 -c \"%s\"" % code.replace('"', '\\"')})
        sm, _ = samples(s.get("/metrics").text)
        tx1 = value(sm, "opensandbox_sandbox_network_transmit_bytes_total", sandbox_id=sid)
        t.ok(r.status == 200 and tx0 is not None and tx1 is not None and tx1 - tx0 >= 200000,
             "  the transmit counter counts what the sandbox sent", (r.status, r.text[-300:], tx0, tx1))
        snap = s.post("/v1/sandboxes/%s/snapshots" % sid, json={})
        snap_id = snap.json().get("id") if snap.status == 202 else None
        t.ok(snap_id and until(lambda: s.get("/v1/snapshots/" + snap_id).json()["status"]["state"] == "Ready"),
             "  a snapshot is taken", snap.text[:300])
        sm, _ = samples(s.get("/metrics").text)
        t.ok(value(sm, "opensandbox_snapshot_size_bytes_count") == 1 and
             value(sm, "opensandbox_snapshot_size_bytes_bucket", le="+Inf") == 1 and
             value(sm, "opensandbox_snapshot_size_bytes_sum") is not None,
             "  its size in the snapshot size histogram",
             [k for k in sm if k[0].startswith("opensandbox_snapshot_size")])
        if snap_id:
            s.delete("/v1/snapshots/" + snap_id)
    with Server(api_key=KEY) as s:
        sid = s.new()["id"]
        until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
        t.ok("sandbox_id=" not in s.get("/metrics").text,
             "off by default: no per-sandbox series")


def test_listen():
    port = free_port()
    with Server(api_key=KEY, extra='[metrics]\nlisten = "127.0.0.1:%d"\n' % port) as s:
        c = Client("127.0.0.1", port)
        r = c.req("GET", "/metrics")
        t.ok(r.status == 200 and "opensandbox_sandboxes" in r.text,
             "[metrics] listen: /metrics on its own port without the key", r.status)
        t.eq(c.req("GET", "/v1/sandboxes").status, 404, "  and nothing else there")
        t.eq(s.req("GET", "/metrics", headers={"OPEN-SANDBOX-API-KEY": ""}).status, 401,
             "  the API port still wants the key")
    r = Server(api_key=KEY, extra='[metrics]\nlisten = "nonsense"\n')
    try:
        r.start()
        t.ok(False, "a bad [metrics] listen is refused at start")
    except RuntimeError as e:
        t.ok("[metrics] listen" in str(e), "a bad [metrics] listen is refused at start",
             str(e)[-300:])
    finally:
        r.stop()


def main():
    t.run(test_per_sandbox, timeout=300)
    t.run(test_listen, timeout=120)
    with Server(api_key=KEY) as s:
        t.run(test_metrics, s, timeout=300)
        t.run(test_access_text, s, timeout=120)
        tmp = s.tmp
        t.run(test_json_log, tmp, timeout=120)


if __name__ == "__main__":
    t.run(main, timeout=900)
    t.done()
