"""Native clients (issue 13; goals in brackets, printed, not asserted):

  osb-run     `osb command run ID -- true`, process start to exit, against a
              local server [p50 <= 10 ms]; beside it the same command through
              one kept-alive HTTP connection from this process (endpoint
              cached), the floor a client process adds to.
  osb-create  `osb sandbox create` (waits for execd's /ping as the SDKs do)
              beside the raw API (POST /v1/sandboxes, then the ping) from
              this process [p50 within 5 ms of the raw API].
  mcp-run     MCP `tools/call command_run {"command":"echo hi"}` over stdio to
              one running opensandbox-mcp, request to response [p50 <= 5 ms].

Usage: client_bench.py [osb-run|osb-create|mcp-run ...] [--n 100]
Starts its own server (serverlib.Server, host image) on loopback."""
import argparse, http.client, json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Server  # noqa: E402
BUILD = os.environ.get("BUILD", "build")
OSB = os.path.join(ROOT, BUILD, "bin", "osb")
MCP = os.path.join(ROOT, BUILD, "bin", "opensandbox-mcp")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def line(name, xs, goal):
    print("%-44s p50 %7.2f ms  p90 %7.2f ms  min %6.2f ms  n=%d  %s" % (
        name, pct(xs, .5), pct(xs, .9), min(xs), len(xs), goal), flush=True)


def env_for(s):
    e = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
             OPEN_SANDBOX_API_KEY=s.api_key, HOME=s.tmp if hasattr(s, "tmp") else "/tmp")
    return e


def timed_run(argv, env):
    t = time.perf_counter()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(argv), r.returncode, r.stderr[-300:]))
    return dt


def conn_json(c, method, path, body=None, headers=None):
    h = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body)
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    return r.status, r.read()


def bench_osb_run(s, n):
    sid = s.new()["id"]
    env = env_for(s)
    for _ in range(5):
        timed_run([OSB, "command", "run", sid, "--", "true"], env)
    xs = [timed_run([OSB, "command", "run", sid, "--", "true"], env) for _ in range(n)]
    line("osb command run ID -- true (process)", xs, "[p50 <= 10 ms]")
    # The floor: the same request on a kept-alive connection, endpoint resolved once.
    c = http.client.HTTPConnection("127.0.0.1", s.port)
    st, body = conn_json(c, "GET", "/v1/sandboxes/%s/endpoints/44772?use_server_proxy=true" % sid,
                         headers=s._auth_headers())
    ep = json.loads(body)
    prefix = ep["endpoint"].split("/", 1)[1]
    ys = []
    for _ in range(n):
        t = time.perf_counter()
        st, body = conn_json(c, "POST", "/" + prefix + "/command", {"command": "true"},
                             ep.get("headers"))
        ys.append((time.perf_counter() - t) * 1000)
        assert st == 200 and b"execution_complete" in body, body
    line("  same command, kept-alive HTTP in-process", ys, "")
    s.req("DELETE", "/v1/sandboxes/" + sid)


def bench_osb_create(s, n):
    env = env_for(s)
    xs, ids = [], []
    for _ in range(n):
        t = time.perf_counter()
        r = subprocess.run([OSB, "sandbox", "create", "--image", "host", "-o", "json"], env=env,
                           capture_output=True, text=True)
        xs.append((time.perf_counter() - t) * 1000)
        if r.returncode:
            raise SystemExit("osb sandbox create: " + r.stderr)
        ids.append(json.loads(r.stdout)["id"])
        s.req("DELETE", "/v1/sandboxes/" + ids[-1])
    c = http.client.HTTPConnection("127.0.0.1", s.port)
    body = {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600,
            "resourceLimits": {"cpu": "1", "memory": "2Gi"}, "env": {}, "metadata": {},
            "extensions": {}}
    ys = []
    for _ in range(n):
        t = time.perf_counter()
        st, rb = conn_json(c, "POST", "/v1/sandboxes", body, s._auth_headers())
        assert st == 202, rb
        sid = json.loads(rb)["id"]
        st, rb = conn_json(c, "GET", "/v1/sandboxes/%s/endpoints/44772?use_server_proxy=true"
                           % sid, headers=s._auth_headers())
        prefix = json.loads(rb)["endpoint"].split("/", 1)[1]
        st, rb = conn_json(c, "GET", "/" + prefix + "/ping")
        ys.append((time.perf_counter() - t) * 1000)
        assert st == 200
        conn_json(c, "DELETE", "/v1/sandboxes/" + sid, headers=s._auth_headers())
    zs = [timed_run(["/bin/true"], env) for _ in range(n)]
    line("osb sandbox create (process, until /ping)", xs, "")
    line("  raw API: POST + endpoint + /ping in-process", ys,
         "[osb p50 - raw p50 = %.2f ms; goal <= 5 ms]" % (pct(xs, .5) - pct(ys, .5)))
    line("  /bin/true through the same process spawn", zs,
         "[osb's own share: %.2f ms]" % (pct(xs, .5) - pct(ys, .5) - pct(zs, .5)))


def bench_mcp_run(s, n):
    sid = s.new()["id"]
    p = subprocess.Popen([MCP], env=env_for(s), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        r = json.loads(p.stdout.readline())
        if "error" in r:
            raise SystemExit("mcp %s: %s" % (method, r["error"]))
        return r["result"]

    call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    args = {"name": "command_run", "arguments": {"sandbox_id": sid, "command": "echo hi"}}
    for i in range(5):
        call(1 + i, "tools/call", args)
    xs = []
    for i in range(n):
        t = time.perf_counter()
        res = call(100 + i, "tools/call", args)
        xs.append((time.perf_counter() - t) * 1000)
        assert not res.get("isError") and "hi" in json.dumps(res), res
    line("MCP tools/call command_run echo (stdio)", xs, "[p50 <= 5 ms]")
    p.stdin.close()
    p.wait()
    s.req("DELETE", "/v1/sandboxes/" + sid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", default=["osb-run", "osb-create", "mcp-run"])
    ap.add_argument("--n", type=int, default=100)
    a = ap.parse_args()
    print("== native clients (issue 13): osb and opensandbox-mcp against a local server")
    with Server(api_key="bench-key") as s:
        for w in a.which:
            {"osb-run": bench_osb_run, "osb-create": bench_osb_create,
             "mcp-run": bench_mcp_run}[w](s, a.n)


if __name__ == "__main__":
    main()
