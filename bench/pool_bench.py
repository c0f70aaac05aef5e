"""Pooled create-to-ready (issue 12 target: p50 <= 2 ms, p99 <= 5 ms, raw HTTP):
the SDKs' create sequence (POST /v1/sandboxes with extensions.poolRef, the
endpoint lookups for 44772 and 18080, execd /ping through the server proxy) on
one keep-alive connection, serially, against a pool of the host image.

  idle     before each claim the pool is full and no refill is running: the
           cost of the claim itself
  busy     claims back to back; each waits only until a member is available,
           so the pool's refill runs beside them (as under load)

The claimed sandbox is deleted after each measurement (not timed). Printed, not
asserted. Usage: pool_bench.py [--n 200] [--buffer 10] [--network none|nat]"""
import argparse, json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_bench import CREATE_BODY, Client, Server, pct  # noqa: E402


def pool_status(c, name):
    st, body = c.req("GET", f"/v1/pools/{name}")
    if st != 200:
        raise RuntimeError(f"GET pool: {st} {body[:200]!r}")
    return json.loads(body)["status"]


def wait(c, name, pred, timeout=120):
    deadline = time.time() + timeout
    while not pred(pool_status(c, name)):
        if time.time() > deadline:
            raise RuntimeError(f"pool {name}: {pool_status(c, name)}")
        time.sleep(0.002)


def claim_ready(c, body):
    """Client.create_ready's sequence, timing its phases: POST, the two
    endpoint lookups, /ping (ms)."""
    t0 = time.perf_counter()
    st, b = c.req("POST", "/v1/sandboxes", body)
    if st != 202:
        raise RuntimeError(f"claim: {st} {b[:200]!r}")
    sid = json.loads(b)["id"]
    t1 = time.perf_counter()
    st, b = c.req("GET", f"/v1/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
    ep = json.loads(b)["endpoint"]
    st, _ = c.req("GET", f"/v1/sandboxes/{sid}/endpoints/18080?use_server_proxy=true")
    t2 = time.perf_counter()
    while c.req("GET", "/" + ep.split("/", 1)[1] + "/ping", auth=False)[0] != 200:
        time.sleep(0.001)
    t3 = time.perf_counter()
    return sid, [(t3 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000]


def run(c, name, n, full, buffer):
    body = dict(CREATE_BODY, extensions={"poolRef": name})
    rows = []
    for _ in range(n):
        if full:
            wait(c, name, lambda s: s["available"] >= buffer and s["starting"] == 0)
        else:
            wait(c, name, lambda s: s["available"] >= 1)
        sid, row = claim_ready(c, body)
        rows.append(row)
        c.delete(sid)
    return [[r[i] for r in rows] for i in range(4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--buffer", type=int, default=10)
    ap.add_argument("--network", default="none")
    a = ap.parse_args()
    extra = '[network]\nmode = "none"\n' if a.network == "none" else \
        '[network]\ndns_upstreams = ["127.0.0.1:9"]\n'
    srv = Server(extra=extra)
    try:
        c = Client(srv)
        name = "bench"
        tpl = {"image": CREATE_BODY["image"], "entrypoint": CREATE_BODY["entrypoint"]}
        cap = {"bufferMin": a.buffer, "bufferMax": a.buffer, "poolMin": 0, "poolMax": 2 * a.buffer}
        st, body = c.req("POST", "/v1/pools", {"name": name, "template": tpl, "capacitySpec": cap})
        if st != 201:
            raise SystemExit(f"POST /v1/pools: {st} {body[:300]!r}")
        print(f"# pool: bufferMin=bufferMax={a.buffer}, network {a.network}, {a.n} claims each")
        for label, full in (("idle", True), ("busy", False)):
            t, post, eps, ping = run(c, name, a.n, full, a.buffer)
            print(f"pooled create-to-ready ({label}): n={len(t)} p50 {pct(t, 0.5):.2f} ms "
                  f"p90 {pct(t, 0.9):.2f} ms p99 {pct(t, 0.99):.2f} ms max {max(t):.2f} ms "
                  f"[p50: POST {pct(post, 0.5):.2f}, endpoints {pct(eps, 0.5):.2f}, "
                  f"/ping {pct(ping, 0.5):.2f}]")
        c.req("DELETE", f"/v1/pools/{name}")
        wait_gone = time.time() + 60
        while c.list_ids() and time.time() < wait_gone:
            time.sleep(0.05)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
