"""The cost of metrics and logging (issue 15; goal in brackets, printed, not
asserted): create-to-ready p50 (POST /v1/sandboxes until Running) and the
round trip of `echo hi` through execd (the server's proxy) p50, with the access
log and the audit trail off, with both on (text, to a file: the defaults; each
echo is an audit record with its text and exit code, read by the proxy's tap),
and with JSON logs plus an OpenTelemetry
export every 100 ms to a receiver on loopback [each within 3% of "off"].
Metrics are always kept (a counter is a few adds); what costs is the log line
and the export. Rounds alternate the configurations so a drifting machine
shows as noise, not as a difference.

The server's CPU time per request (`--requests` keep-alive GETs, utime+stime
of the process) shows what the access line and the observer cost per request
when latencies are within the machine's noise.

Usage: ops_bench.py [--creates 30] [--echos 300] [--rounds 2] [--requests 20000]"""
import argparse
import http.server
import os
import socketserver
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Server  # noqa: E402
from osbtest import exit_code, cpu_seconds  # noqa: E402


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def configs(otlp_port):
    return [("off", '[log]\naccess = false\n[audit]\nenabled = false\n', {}),
            ("access log + audit", '[log]\naccess = true\nfile = "%s"\n', {}),
            ("json + OTLP 100 ms", '[log]\nformat = "json"\nfile = "%s"\n',
             {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % otlp_port,
              "OTEL_METRIC_EXPORT_INTERVAL": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100"})]


def request_cpu(s, n):
    """The server's CPU time per request over n keep-alive GETs (a 404 on a
    sandbox route): less noisy than a latency when the difference is small."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", s.port)
    c0 = cpu_seconds(s.proc.pid)
    for _ in range(n):
        c.request("GET", "/v1/sandboxes/nope", headers={"OPEN-SANDBOX-API-KEY": "bench"})
        c.getresponse().read()
    return (cpu_seconds(s.proc.pid) - c0) / n


def measure(extra, env, n_create, n_echo, n_req):
    with Server(api_key="bench", extra=extra, env=env) as s:
        per_req = request_cpu(s, n_req)
        creates = []
        for _ in range(n_create):
            t0 = time.perf_counter()
            sid = s.new()["id"]
            while s.get("/v1/sandboxes/" + sid).json()["status"]["state"] != "Running":
                time.sleep(0.001)
            creates.append(time.perf_counter() - t0)
            s.delete("/v1/sandboxes/" + sid)
        sid = s.new()["id"]
        while s.get("/v1/sandboxes/" + sid).json()["status"]["state"] != "Running":
            time.sleep(0.001)
        x = s.execd(sid)
        echos = []
        c0 = cpu_seconds(s.proc.pid)
        for _ in range(n_echo):
            t0 = time.perf_counter()
            ev = x.sse("/command", json={"command": "echo hi"}).events
            echos.append(time.perf_counter() - t0)
            assert exit_code(ev) == 0
        per_echo = (cpu_seconds(s.proc.pid) - c0) / n_echo
        return creates, echos, per_req, per_echo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--creates", type=int, default=30)
    ap.add_argument("--echos", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=20000)
    a = ap.parse_args()
    print("== metrics and logging cost (issue 15): p50, each configuration vs access log off")
    sink = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Sink)
    sink.daemon_threads = True
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    cfgs = configs(sink.server_address[1])
    res = {name: ([], [], [], []) for name, _, _ in cfgs}
    for r in range(a.rounds):
        for name, extra, env in (cfgs if r % 2 == 0 else list(reversed(cfgs))):
            if "%s" in extra:
                extra = extra % os.path.join("/tmp", "osb-ops-bench-%d.log" % os.getpid())
            c, e, q, qe = measure(extra, env, a.creates, a.echos, a.requests)
            res[name][0].extend(c)
            res[name][1].extend(e)
            res[name][2].append(q)
            res[name][3].append(qe)
    base_q = statistics.median(res["off"][2])
    base_c = statistics.median(res["off"][0])
    base_e = statistics.median(res["off"][1])
    base_qe = statistics.median(res["off"][3])
    for name, _, _ in cfgs:
        c, e = statistics.median(res[name][0]), statistics.median(res[name][1])
        q, qe = statistics.median(res[name][2]), statistics.median(res[name][3])
        print("%-20s create-to-ready %7.2f ms (%+5.1f%%)   echo %6.2f ms (%+5.1f%%)   "
              "server CPU per request %5.1f us (%+5.1f us), per echo %5.1f us (%+5.1f us)%s" % (
                  name, c * 1e3, (c / base_c - 1) * 100, e * 1e3, (e / base_e - 1) * 100,
                  q * 1e6, (q - base_q) * 1e6, qe * 1e6, (qe - base_qe) * 1e6,
                  "" if name == "off" else "  [within 3%]"))
    try:
        os.unlink(os.path.join("/tmp", "osb-ops-bench-%d.log" % os.getpid()))
    except OSError:
        pass
    sink.shutdown()


if __name__ == "__main__":
    main()
