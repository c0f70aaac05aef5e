"""Code-context benchmarks per language: context create without a warm spare
(cold: a fresh interpreter), with one (adopted), and a warm cell round trip
(POST /code to end of stream, p50/p99). A language whose context cannot be
created is skipped with the reason. Figures are printed, not asserted.

Usage: code_bench.py [N]   (N cell runs per language, default 100)"""
import http.client, json, os, shutil, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import execd_bench  # noqa: E402  (its start(): execd on a free port)
LANGS = {"python": "1 + 1", "javascript": "1 + 1", "bash": "echo 2", "java": "1 + 1",
         "typescript": "const n: number = 1; n + 1", "go": "1 + 1"}


def start(spares):
    env = dict(os.environ, EXECD_CODE_SPARES="1" if spares else "0",
               EXECD_PYTHON_BIN=os.environ.get("EXECD_PYTHON_BIN", "/usr/bin/python3"))
    node = shutil.which("node")
    if node:
        env.setdefault("EXECD_NODE_BIN", node)
    return execd_bench.start(env)


def req(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data, time.perf_counter() - t0


def create(port, lang):
    st, data, dt = req(port, "POST", "/code/context", {"language": lang})
    if st != 200:
        raise RuntimeError(f"{st} {data.decode(errors='replace')[:200]}")
    return json.loads(data)["id"], dt


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] * 1000


def bench(lang, n):
    code = LANGS[lang]
    p, port = start(spares=False)
    try:
        try:
            colds = [create(port, lang)[1] for _ in range(3)]
        except RuntimeError as e:
            print(f"{lang:10s} skipped: context create failed: {e}")
            return
    finally:
        p.kill()
        p.wait()
    p, port = start(spares=True)
    try:
        cid, first = create(port, lang)
        # The spare starts with the first context; give it a cold start's time
        # (this is a benchmark, not a test: nothing is asserted).
        warms = []
        for _ in range(3):
            time.sleep(max(colds) * 2 + 0.5)
            warms.append(create(port, lang)[1])
        for _ in range(10):
            req(port, "POST", "/code", {"code": code, "context": {"id": cid}})
        rt = [req(port, "POST", "/code", {"code": code, "context": {"id": cid}})[2]
              for _ in range(n)]
    finally:
        p.kill()
        p.wait()
    print(f"{lang:10s} create cold (no spare) min {min(colds)*1000:7.1f} ms, max "
          f"{max(colds)*1000:7.1f} ms | with warm spare max {max(warms)*1000:6.1f} ms | "
          f"cell round trip p50 {pct(rt, 0.5):6.2f} ms, p99 {pct(rt, 0.99):6.2f} ms (n={n})")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for lang in LANGS:
        bench(lang, n)


main()
