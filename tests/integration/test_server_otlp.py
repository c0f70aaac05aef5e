"""OpenTelemetry export (issue 15): with OTEL_EXPORTER_OTLP_ENDPOINT set, the
server posts its metrics (what GET /metrics shows) and its log lines over
OTLP/HTTP with the JSON encoding. A receiver of the test's own, on loopback,
checks what arrives: the resource attributes, the headers of
OTEL_EXPORTER_OTLP_HEADERS, gauges, monotonic cumulative sums, histograms whose
per-bucket counts add up to their count, log records with severities. An
endpoint that refuses connections costs the server nothing but one warning."""
import http.server
import json
import os
import socketserver
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
got = []  # (path, headers, body json)
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {"unparsed": body[:200].decode("latin-1")}
        with lock:
            got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, doc))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a):
        pass


def posts(path):
    with lock:
        return [g for g in got if g[0] == path]


def attrs(lst):
    return {a["key"]: list(a["value"].values())[0] for a in lst or []}


def metric(doc, name):
    for rm in doc.get("resourceMetrics", []):
        for sm in rm.get("scopeMetrics", []):
            for m in sm.get("metrics", []):
                if m.get("name") == name:
                    return m
    return None


def test_export(port):
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d/" % port,
           "OTEL_METRIC_EXPORT_INTERVAL": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100",
           "OTEL_EXPORTER_OTLP_HEADERS": "x-otlp-test=yes,authorization=Bearer t0k"}
    with Server(api_key="otlp-key", env=env) as s:
        s.get("/v1/sandboxes")
        s.get("/v1/sandboxes")
        # a post after both requests: the one whose histogram counts them
        def counted(d):
            h = metric(d, "opensandbox_http_request_duration_seconds") or {}
            return sum(int(p["count"]) for p in h.get("histogram", {}).get("dataPoints", []))
        until(lambda: any(counted(d) >= 2 for _, _, d in posts("/v1/metrics")), 60)
        ms = posts("/v1/metrics")
        t.ok(ms, "metrics posted to ENDPOINT/v1/metrics (%d posts)" % len(ms))
        if not ms:
            return
        path, hdrs, doc = ms[-1]
        t.ok(hdrs.get("content-type") == "application/json" and
             hdrs.get("x-otlp-test") == "yes" and hdrs.get("authorization") == "Bearer t0k",
             "  JSON, with the headers of OTEL_EXPORTER_OTLP_HEADERS", hdrs)
        res = attrs(doc["resourceMetrics"][0]["resource"]["attributes"])
        t.ok(res.get("service.name") == "opensandbox-server" and res.get("service.version") and
             res.get("host.name"), "  resource: service.name, service.version, host.name", res)
        g = metric(doc, "opensandbox_sandboxes")
        t.ok(g and "gauge" in g and any(attrs(p["attributes"]).get("state") == "Running"
                                        for p in g["gauge"]["dataPoints"]),
             "  opensandbox_sandboxes: a gauge with state and runtime attributes", g)
        c = metric(doc, "opensandbox_http_requests_total")
        t.ok(c and c["sum"].get("isMonotonic") is True and
             c["sum"].get("aggregationTemporality") == 2 and
             any(attrs(p["attributes"]).get("route") == "/v1/sandboxes" and p["asDouble"] >= 2
                 for p in c["sum"]["dataPoints"]),
             "  opensandbox_http_requests_total: a monotonic cumulative sum, by route", c)
        h = metric(doc, "opensandbox_http_request_duration_seconds")
        ok = bool(h)
        for p in (h or {}).get("histogram", {}).get("dataPoints", []):
            b = [int(x) for x in p["bucketCounts"]]
            ok = ok and len(b) == len(p["explicitBounds"]) + 1 and sum(b) == int(p["count"])
        t.ok(ok, "  histograms: per-bucket counts, one more than the bounds, adding up to count",
             h)
        t.ok(until(lambda: any("listening on" in r["body"]["stringValue"]
                               for _, _, d in posts("/v1/logs")
                               for rl in d.get("resourceLogs", [])
                               for sl in rl.get("scopeLogs", [])
                               for r in sl.get("logRecords", [])), 60),
             "log lines posted to ENDPOINT/v1/logs (the start-up line among them)")
        recs = [r for _, _, d in posts("/v1/logs") for rl in d["resourceLogs"]
                for sl in rl["scopeLogs"] for r in sl["logRecords"]]
        t.ok(all(r.get("severityText") in ("ERROR", "WARN", "INFO", "DEBUG") and
                 r.get("severityNumber") in (17, 13, 9, 5) and r.get("timeUnixNano")
                 for r in recs), "  with severities and times", recs[:2])
        t.ok("otlp-key" not in json.dumps([g[2] for g in got]), "  no API key in anything sent")


def test_unreachable():
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % free_port(),
           "OTEL_METRIC_EXPORT_INTERVAL": "50", "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    with Server(api_key="otlp-key", env=env) as s:
        t.ok(until(lambda: "OTLP export to" in s.log_text(), 60),
             "an endpoint that refuses: a warning", s.log_text()[-500:])
        for _ in range(5):
            r = s.get("/v1/sandboxes")
        t.eq(r.status, 200, "  and the API goes on")
        t.ok(s.log_text().count("OTLP export to") <= 4,
             "  warned once per failing streak, not per post (%d)"
             % s.log_text().count("OTLP export to"))


def main():
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Receiver)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        t.run(test_export, srv.server_address[1], timeout=300)
        t.run(test_unreachable, timeout=300)
    finally:
        srv.shutdown()


if __name__ == "__main__":
    t.run(main, timeout=900)
    t.done()
