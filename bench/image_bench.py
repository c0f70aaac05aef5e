"""Image and snapshot benchmarks (issue #4 goals in brackets; printed, not asserted):

  pull      `opensandbox-server image pull` of a ~100 MB image (4 gzip layers of
            incompressible files) from a docker-registry on loopback: MB/s of
            compressed (transferred) and of unpacked bytes; best and median of
            --n-pull runs, each after `image rm` + `image prune`.
  create    create-to-ready p50/p99 (the SDK's sequence, as server_bench.py)
            for (a) the host image, (b) a cached registry image (busybox),
            (c) a snapshot of a host sandbox.
  snapshot  a host sandbox writes 100 MB (dd via execd), then POST snapshot ->
            Ready is timed (polled every 2 ms); --n-snap runs.

Usage: image_bench.py [pull|create|snapshot ...] [--n-pull 3] [--n-create 50]
       [--n-snap 3] [--pull-mb 100]
Starts its own server (as server_bench.py: state dir under $HOME) and registry."""
import argparse, gzip, io, json, os, subprocess, sys, tarfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from server_bench import SERVER, CREATE_BODY, Client, Server, pct  # noqa: E402
from registrylib import Registry, busybox_layer, registry_available  # noqa: E402

EXECD = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin", "execd")


def cli(srv, *args):
    return subprocess.run([SERVER, "--config", srv.config] + list(args), capture_output=True,
                          text=True, timeout=600)


def big_layers(total_mb, n_layers=4):
    """n_layers gzip layers of 1 MiB random files, total_mb MiB of data in all."""
    per = max(1, total_mb // n_layers)
    out = []
    for i in range(n_layers):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for j in range(per):
                ti = tarfile.TarInfo("data/l%d/f%03d.bin" % (i, j))
                ti.size = 1 << 20
                ti.mode = 0o644
                tf.addfile(ti, io.BytesIO(os.urandom(1 << 20)))
        raw = buf.getvalue()
        out.append((gzip.compress(raw, compresslevel=1, mtime=0), len(raw)))
    return out


def bench_pull(srv, reg, n, total_mb):
    t0 = time.perf_counter()
    layers = big_layers(total_mb)
    from registrylib import MT
    digest = reg.push_image("bench/big", "1", [(d, MT.OCI_LAYER_GZIP) for d, _ in layers])
    comp = sum(len(d) for d, _ in layers) / 1e6
    raw = sum(r for _, r in layers) / 1e6
    print(f"# pushed a {comp:.0f} MB image ({raw:.0f} MB unpacked, {len(layers)} layers) "
          f"in {time.perf_counter() - t0:.1f} s")
    ref = f"{reg.addr}/bench/big:1"
    secs = []
    for _ in range(n):
        cli(srv, "image", "rm", ref)
        cli(srv, "image", "prune")
        t0 = time.perf_counter()
        r = cli(srv, "image", "pull", ref)
        dt = time.perf_counter() - t0
        if r.returncode != 0 or digest not in r.stdout:
            print(f"# image pull failed ({r.returncode}): {r.stderr[-300:]}")
            return
        secs.append(dt)
    best, med = min(secs), sorted(secs)[len(secs) // 2]
    print(f"image pull ({n} runs): best {best:.2f} s = {comp / best:.0f} MB/s compressed, "
          f"{raw / best:.0f} MB/s unpacked; median {med:.2f} s = {comp / med:.0f} MB/s "
          f"[goal >= 100 MB/s]")
    cli(srv, "image", "rm", ref)
    cli(srv, "image", "prune")


def series(c, body, n, what):
    for _ in range(3):  # warm-up
        sid, _ = c.create_ready(body)
        c.delete(sid)
    ms = []
    for _ in range(n):
        try:
            sid, dt = c.create_ready(body)
        except Exception as e:
            print(f"# {what}: create failed: {e}")
            continue
        ms.append(dt * 1000)
        c.delete(sid)
    if ms:
        print(f"create-to-ready, {what} ({len(ms)} serial): p50 {pct(ms, .5):.1f} ms, "
              f"p99 {pct(ms, .99):.1f} ms")
    return pct(ms, .5) if ms else float("nan")


def snapshot_ready(c, sid, timeout=120):
    """POST a snapshot, poll until Ready; returns (snapshot id, seconds) or raises."""
    t0 = time.perf_counter()
    st, body = c.req("POST", f"/v1/sandboxes/{sid}/snapshots", {})
    if st != 202:
        raise RuntimeError(f"snapshot: {st} {body[:200]!r}")
    snap = json.loads(body)["id"]
    while True:
        st, body = c.req("GET", f"/v1/snapshots/{snap}")
        state = json.loads(body)["status"]["state"] if st == 200 else f"HTTP {st}"
        if state == "Ready":
            return snap, time.perf_counter() - t0
        if state != "Creating" or time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"snapshot {snap}: {state} {body[:200]!r}")
        time.sleep(0.002)


def bench_create(srv, reg, n):
    c = Client(srv)
    host = series(c, CREATE_BODY, n, "host image")
    with open(EXECD, "rb") as f:
        dynamic = b"ld-linux" in f.read(8192)
    if dynamic:
        print("# cached registry image: skipped (execd is dynamically linked: sanitizer build)")
    else:
        reg.push_image("bench/busybox", "1", [busybox_layer()])
        ref = f"{reg.addr}/bench/busybox:1"
        r = cli(srv, "image", "pull", ref)
        if r.returncode != 0:
            print(f"# image pull {ref} failed: {r.stderr[-300:]}")
        else:
            p50 = series(c, dict(CREATE_BODY, image={"uri": ref}), n, "cached registry image")
            print(f"  registry image - host: {p50 - host:+.1f} ms [goal <= +5 ms]")
    try:
        sid, _ = c.create_ready()
        snap, _ = snapshot_ready(c, sid)
        c.delete(sid)
    except Exception as e:
        print(f"# snapshot for the create series failed: {e}")
        return
    body = {k: v for k, v in CREATE_BODY.items() if k != "image"}
    body["snapshotId"] = snap
    p50 = series(c, body, n, "snapshot")
    print(f"  snapshot - host: {p50 - host:+.1f} ms [goal <= +5 ms]")
    c.req("DELETE", f"/v1/snapshots/{snap}")


def execd_run(c, sid, command, timeout=120):
    """Run a command through the server proxy with execd's token; returns the SSE text."""
    st, body = c.req("GET", f"/v1/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
    tok = json.loads(body).get("headers", {})
    hdrs = {"Content-Type": "application/json", "Accept": "text/event-stream", **tok}
    c.conn.request("POST", f"/v1/sandboxes/{sid}/proxy/44772/command",
                   body=json.dumps({"command": command}).encode(), headers=hdrs)
    r = c.conn.getresponse()
    return r.status, r.read().decode("utf-8", "replace")


def bench_snapshot(srv, n):
    c = Client(srv)
    body = dict(CREATE_BODY, resourceLimits={"cpu": "1", "memory": "2Gi", "disk": "1Gi"})
    secs = []
    for _ in range(n):
        try:
            sid, _ = c.create_ready(body)
            st, out = execd_run(c, sid, "dd if=/dev/urandom of=/bench-100m bs=1M count=100 "
                                        "2>/dev/null && sync && echo wrote")
            if st != 200 or "wrote" not in out:
                raise RuntimeError(f"dd: {st} {out[-300:]}")
            snap, dt = snapshot_ready(c, sid)
            secs.append(dt)
            c.delete(sid)
            c.req("DELETE", f"/v1/snapshots/{snap}")
        except Exception as e:
            print(f"# snapshot run failed: {e}")
    if secs:
        print(f"snapshot of a 100 MB writable layer ({len(secs)} runs): "
              + ", ".join(f"{s * 1000:.0f} ms" for s in secs) + " [goal < 1 s]")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="*", default=["pull", "create", "snapshot"])
    ap.add_argument("--n-pull", type=int, default=3)
    ap.add_argument("--n-create", type=int, default=50)
    ap.add_argument("--n-snap", type=int, default=3)
    ap.add_argument("--pull-mb", type=int, default=100)
    a = ap.parse_args()
    if not registry_available():
        raise SystemExit("docker-registry or htpasswd missing (scripts/install-deps.sh)")
    with Registry() as reg:
        srv = Server(extra=f'[image]\ninsecure_registries = ["{reg.addr}"]\n')
        print(f"# opensandbox-server on 127.0.0.1:{srv.port}, registry on {reg.addr}, "
              f"{os.cpu_count()} CPUs")
        try:
            for w in a.which:
                {"pull": lambda: bench_pull(srv, reg, a.n_pull, a.pull_mb),
                 "create": lambda: bench_create(srv, reg, a.n_create),
                 "snapshot": lambda: bench_snapshot(srv, a.n_snap)}[w]()
        except KeyboardInterrupt:
            pass
        finally:
            try:
                c = Client(srv)
                for sid in c.list_ids():
                    c.delete(sid)
            except Exception:
                pass
            srv.stop()


if __name__ == "__main__":
    main()
