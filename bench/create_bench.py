#!/usr/bin/python3
"""Create-to-ready and the peers, side by side (issue 12; printed, not asserted).

One run, one table, one JSON file (build/bench/create.json, path printed):

  create      create-to-ready the way the SDKs measure it (docs/protocol.md
              3.10): POST /v1/sandboxes -> 202, GET .../endpoints/44772 and
              .../endpoints/18080 (use_server_proxy=false, as the SDKs'
              default), then GET {endpoint}/ping with the endpoint's headers
              until 200 (polled every millisecond: when it is ready, not when
              a 200 ms poll notices). Raw HTTP/1.1 with keep-alive, one
              connection per thread. Serial (--n, default 50) and batches at
              concurrency 10, 20, 50 and 100 (each started together, in
              rounds until --n creates): successes, p50/p90/p99, the batch's
              wall time and its time to the first ready sandbox. Then
              --n-sustained (100) creates through 20 and 50 workers, each
              starting its next create when its last is ready.
  pool        the same against a pool of 20 (POST /v1/pools, create with
              extensions {"poolRef": name}; before each batch and sustained
              run the pool is let fill); "n/a (no pools)" when the server
              answers 404/501 to /v1/pools.
  sdk         the official JS SDK's Sandbox.create (bench/sdk_create.mjs,
              the SDK from tests/sdk/node_modules) at concurrency 1 and 20.
  execd       in one sandbox, through its endpoint: command round trip (`true`),
              stdout streaming (10 MiB), upload and download of 10 MiB
              (bench/execd_bench.py's measurements).
  density     bench/density_bench.py --max 1000 when it exists; its JSON is
              included.
  peers       "run `true` to exit" on an equivalent busybox root
              (scripts/make-busybox-rootfs.sh) for bwrap, crun, runc, runsc and
              `docker run --rm` (a dockerd this script starts: private data
              root, exec root, socket and pidfile, --iptables=false,
              --ip-masq=false, its bridge on 10.213.0.1/24, the rootfs
              `docker import`ed: no registry), beside ours (create-to-ready +
              delete, and create-to-ready alone), interleaved in rotating
              rounds: serial p50/p99 and batches of 10. Missing tools are
              installed with apt-get. Ours as ratios to theirs.

Usage: create_bench.py [--quick] [--n 50] [--n-sustained 100] [--n-sdk 40]
                       [--n-peer 50] [--peer-rounds 5] [--json PATH]
                       [--only create,pool,sdk,execd,density,peers]
Needs root. Everything stays on this machine: the server imports the busybox
image (scripts/make-image-busybox.sh), [image] pull_policy = "never", the
sandboxes' DNS upstream a closed local port."""
import argparse, concurrent.futures, http.client, json, os, re, shutil, signal, subprocess, sys
import tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", "build")
os.environ.setdefault("EXECD_BIN", os.path.join(ROOT, BUILD, "bin", "execd"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import execd_bench  # noqa: E402
from server_bench import net_names, pct, remove_network  # noqa: E402
from serverlib import SERVER_BIN, Server, free_subnet, release_subnet  # noqa: E402

IMAGE = "busybox"
BODY = {"image": {"uri": IMAGE}, "entrypoint": ["tail", "-f", "/dev/null"],
        "resourceLimits": {"cpu": "1", "memory": "2Gi"}, "timeout": 600,
        "env": {}, "metadata": {}, "extensions": {}, "secureAccess": False}
LEVELS = (10, 20, 50, 100)
SUSTAINED = (20, 50)  # --n-sustained creates through this many workers
POOL_SIZE = 20
SDK_DIR = os.path.join(ROOT, "tests", "sdk")
APT = {"bwrap": "bubblewrap", "crun": "crun", "runc": "runc", "runsc": "runsc",
       "dockerd": "docker.io", "docker": "docker.io"}
DOCKER_BIP = "10.213.0.1/24"


# --------------------------------------------------------------- the client
class Http:
    """Keep-alive HTTP/1.1 connections, one per host:port, like the SDKs'
    pooled agents; the API key on every request, as the SDKs send it."""

    def __init__(self, key):
        self.key = key
        self.conns = {}

    def req(self, method, hostport, path, body=None, headers=None):
        h = {"OPEN-SANDBOX-API-KEY": self.key}
        h.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        for attempt in (0, 1):
            conn = self.conns.get(hostport)
            if conn is None:
                host, port = hostport.rsplit(":", 1)
                conn = self.conns[hostport] = http.client.HTTPConnection(host, int(port), timeout=120)
            try:
                conn.request(method, path, body=data, headers=h)
                r = conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                conn.close()  # an idle connection the server closed: once more
                del self.conns[hostport]
                if attempt:
                    raise

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}


def endpoint(http_, hp, sid, port):
    """(host:port, path prefix, headers) of a sandbox port's endpoint."""
    st, b = http_.req("GET", hp, f"/v1/sandboxes/{sid}/endpoints/{port}?use_server_proxy=false")
    if st != 200:
        raise RuntimeError(f"endpoint {port}: {st} {b[:200]!r}")
    ep = json.loads(b)
    where, _, rest = ep["endpoint"].partition("/")
    return where, ("/" + rest if rest else ""), ep.get("headers", {})


def create_ready(http_, hp, body):
    """The SDKs' create sequence; (id, seconds, perf_counter at ready)."""
    t0 = time.perf_counter()
    st, b = http_.req("POST", hp, "/v1/sandboxes", body)
    if st != 202:
        raise RuntimeError(f"create: {st} {b[:200]!r}")
    sid = json.loads(b)["id"]
    where, prefix, headers = endpoint(http_, hp, sid, 44772)
    endpoint(http_, hp, sid, 18080)
    deadline = time.monotonic() + 30
    while True:
        st, _ = http_.req("GET", where, prefix + "/ping", headers=headers)
        if st == 200:
            t1 = time.perf_counter()
            return sid, t1 - t0, t1
        if time.monotonic() > deadline:
            raise RuntimeError(f"ping never answered 200 (last {st})")
        time.sleep(0.001)


def delete(http_, hp, sid):
    st, b = http_.req("DELETE", hp, f"/v1/sandboxes/{sid}")
    if st != 204:
        raise RuntimeError(f"delete: {st} {b[:200]!r}")


def delete_all(ctx, ids):
    """Deletes ids, 10 at a time (untimed)."""
    def one(sid):
        h = Http(ctx.key)
        try:
            delete(h, ctx.hp, sid)
        except Exception as e:  # reported; the run goes on
            ctx.note(f"delete {sid}: {e}")
        h.close()
    with concurrent.futures.ThreadPoolExecutor(10) as ex:
        list(ex.map(one, ids))


# -------------------------------------------------------- create-to-ready
def stats(ms):
    return {"p50_ms": pct(ms, .5) if ms else None, "p90_ms": pct(ms, .9) if ms else None,
            "p99_ms": pct(ms, .99) if ms else None}


def serial(ctx, n, body):
    h = Http(ctx.key)
    for _ in range(3):  # warm-up: page cache, the server's first sandboxes
        sid, _, _ = create_ready(h, ctx.hp, body)
        delete(h, ctx.hp, sid)
    ready, errors = [], []
    t0 = time.perf_counter()
    first = None
    for _ in range(n):
        try:
            sid, secs, t1 = create_ready(h, ctx.hp, body)
            first = first or t1 - t0
            ready.append(secs * 1000)
            delete(h, ctx.hp, sid)
        except Exception as e:  # counted, reported
            errors.append(str(e)[:300])
    h.close()
    return dict(stats(ready), concurrency=1, n=n, ok=len(ready), wall_ms=(time.perf_counter() - t0) * 1000,
                first_ms=first * 1000 if first else None, errors=errors[:3])


def batch_once(ctx, clients, body):
    """len(clients) creates started together; ([ms], wall ms, first ms, [ids], [errors])."""
    go = threading.Barrier(len(clients) + 1)

    def one(h):
        go.wait()
        try:
            return create_ready(h, ctx.hp, body)
        except Exception as e:
            return e
    with concurrent.futures.ThreadPoolExecutor(len(clients)) as ex:
        futs = [ex.submit(one, h) for h in clients]
        go.wait()
        t0 = time.perf_counter()
        res = [f.result() for f in futs]
    good = [r for r in res if isinstance(r, tuple)]
    ends = [r[2] for r in good]
    return ([r[1] * 1000 for r in good], (max(ends, default=t0) - t0) * 1000,
            (min(ends) - t0) * 1000 if ends else None, [r[0] for r in good],
            [str(r)[:300] for r in res if not isinstance(r, tuple)])


def concurrent_level(ctx, c, n, body, between=None):
    """Rounds of c creates started together until n (at least one round)."""
    clients = [Http(ctx.key) for _ in range(c)]
    ready, walls, firsts, errors, total = [], [], [], [], 0
    while total < max(n, c):
        if between:
            between()
        ms, wall, first, ids, errs = batch_once(ctx, clients, body)
        total += c
        ready += ms
        walls.append(wall)
        if first is not None:
            firsts.append(first)
        errors += errs
        delete_all(ctx, ids)
    for h in clients:
        h.close()
    return dict(stats(ready), concurrency=c, n=total, ok=len(ready), rounds=len(walls),
                wall_ms=pct(walls, .5), first_ms=pct(firsts, .5) if firsts else None,
                errors=errors[:3])


def sustained(ctx, c, total, body):
    """total creates through c workers, each starting its next create when
    its last one is ready (the pool drains and refills under it); all stay
    alive until the end."""
    local = threading.local()

    def one(_):
        h = getattr(local, "http", None) or Http(ctx.key)
        local.http = h
        try:
            return create_ready(h, ctx.hp, body)
        except Exception as e:
            return e
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(c) as ex:
        res = list(ex.map(one, range(total)))
    good = [r for r in res if isinstance(r, tuple)]
    ends = [r[2] for r in good]
    delete_all(ctx, [r[0] for r in good])
    return dict(stats([r[1] * 1000 for r in good]), concurrency=c, sustained=True, n=total, ok=len(good),
                wall_ms=(max(ends, default=t0) - t0) * 1000, first_ms=(min(ends) - t0) * 1000 if ends else None,
                errors=[str(r)[:300] for r in res if not isinstance(r, tuple)][:3])


def bench_create(ctx, a):
    rows = [serial(ctx, a.n, BODY)]
    for c in LEVELS:
        rows.append(concurrent_level(ctx, c, a.n, BODY))
    for c in SUSTAINED:
        rows.append(sustained(ctx, c, a.n_sustained, BODY))
    return rows


# --------------------------------------------------------------------- pools
def pool_status(ctx, name):
    st, b = ctx.http.req("GET", ctx.hp, f"/v1/pools/{name}")
    return json.loads(b).get("status") or {} if st == 200 else {}


def pool_wait_full(ctx, name, timeout=120):
    """Until the pool says POOL_SIZE members are available (or timeout); seconds.
    After one timeout the later waits are short: the run must still end."""
    if ctx.pool_slow:
        timeout = 5
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pool_status(ctx, name).get("available", 0) >= POOL_SIZE:
            return time.monotonic() - t0
        time.sleep(0.05)
    ctx.note(f"pool {name} not full after {timeout} s: {pool_status(ctx, name)}")
    ctx.pool_slow = True
    return None


def bench_pool(ctx, a):
    name = "bench-pool"
    # A pool template has no timeout: the claiming request's applies.
    template = {k: v for k, v in BODY.items() if k not in ("extensions", "timeout")}
    st, b = ctx.http.req("POST", ctx.hp, "/v1/pools", {
        "name": name, "template": template,
        "capacitySpec": {"bufferMin": POOL_SIZE, "bufferMax": POOL_SIZE,
                         "poolMin": POOL_SIZE, "poolMax": 200}})
    if st in (404, 501):
        return {"available": False, "why": f"POST /v1/pools -> {st} {b[:160].decode(errors='replace')}"}
    if st not in (200, 201, 202):
        return {"available": False, "why": f"POST /v1/pools -> {st} {b[:300].decode(errors='replace')}"}
    body = dict(BODY, extensions={"poolRef": name})
    fill = pool_wait_full(ctx, name)
    out = {"available": True, "name": name, "size": POOL_SIZE, "first_fill_s": fill}
    try:
        # Serial claims: the pool refills behind each one.
        out["rows"] = [serial(ctx, a.n, body)]
        for c in LEVELS:
            # Each batch starts against a full pool: c > 20 queues on refills.
            out["rows"].append(concurrent_level(ctx, c, a.n, body,
                                                between=lambda: pool_wait_full(ctx, name)))
        for c in SUSTAINED:  # more claims than the pool holds: queueing on refills
            pool_wait_full(ctx, name)
            out["rows"].append(sustained(ctx, c, a.n_sustained, body))
        out["sdk"] = bench_sdk(ctx, a, pool=name, between=lambda: pool_wait_full(ctx, name))
    finally:
        st, b = ctx.http.req("DELETE", ctx.hp, f"/v1/pools/{name}")
        if st not in (200, 204):
            ctx.note(f"DELETE /v1/pools/{name} -> {st} {b[:200]!r}")
    return out


# ------------------------------------------------------------------ JS SDK
def ensure_sdk():
    if not os.path.isdir(os.path.join(SDK_DIR, "node_modules", "@alibaba-group", "opensandbox")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SDK_DIR, check=True)


def bench_sdk(ctx, a, pool=None, between=None):
    ensure_sdk()
    env = dict(os.environ, OPEN_SANDBOX_DOMAIN=ctx.hp, OPEN_SANDBOX_API_KEY=ctx.key, OSB_SDK_DIR=SDK_DIR)
    rows = []
    for c in (1, 20):
        if between:
            between()
        argv = ["node", os.path.join(HERE, "sdk_create.mjs"), str(a.n_sdk if c == 1 else max(a.n_sdk, c)),
                str(c), IMAGE] + ([pool] if pool else [])
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        try:
            d = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            rows.append({"concurrency": c, "n": 0, "ok": 0, "errors": [r.stderr[-500:]]})
            continue
        ms, rounds = d["create_ms"], d["rounds"]
        rows.append(dict(stats(ms), concurrency=c, n=len(ms) + d["failures"], ok=len(ms),
                         wall_ms=pct([x["wall_ms"] for x in rounds], .5) if c > 1 and rounds else None,
                         first_ms=pct([x["first_ms"] for x in rounds if x["first_ms"] is not None], .5)
                         if c > 1 and rounds else None,
                         errors=d["errors"], command=" ".join(argv)))
    return rows


# ------------------------------------------------------------------- execd
def bench_execd(ctx, a):
    sid, _, _ = create_ready(ctx.http, ctx.hp, BODY)
    try:
        where, prefix, headers = endpoint(ctx.http, ctx.hp, sid, 44772)
        host, port = where.rsplit(":", 1)
        kw = dict(host=host, headers=headers, prefix=prefix)
        out = {"endpoint": where + prefix}
        out["roundtrip"] = execd_bench.bench_roundtrip(int(port), n=100 if a.quick else 300, cmd="true", **kw)
        out["stdout"] = execd_bench.bench_stdout(int(port), mib=10, perl=False, **kw)
        out["files"] = execd_bench.bench_files(int(port), mib=10, dest_dir="/tmp", **kw)
        return out
    finally:
        delete(ctx.http, ctx.hp, sid)


# ----------------------------------------------------------------- density
def bench_density(ctx, a):
    script = os.path.join(HERE, "density_bench.py")
    if not os.path.exists(script):
        return {"available": False, "why": "bench/density_bench.py does not exist yet"}
    argv = [sys.executable, script, "--max", "1000"]
    # --json PATH, a --json flag (JSON on stdout) or neither: its --help says.
    usage = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="osb-density."), "density.json")
    if re.search(r"--json[ =][A-Z_]+", usage):
        argv += ["--json", path]
    elif "--json" in usage:
        argv += ["--json"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    doc = None
    if os.path.exists(path):
        with open(path) as fh:
            doc = json.load(fh)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    try:
        doc = doc or json.loads(r.stdout)
    except ValueError:
        for line in reversed(r.stdout.splitlines()):
            try:
                doc = json.loads(line)
                break
            except ValueError:
                continue
    return {"available": True, "command": " ".join(r.args), "returncode": r.returncode,
            "json": doc, "stdout": None if doc else r.stdout[-4000:], "stderr": r.stderr[-2000:]}


# ------------------------------------------------------------------- peers
def ensure_tools(ctx):
    """apt-get install what is missing; returns {tool: path or None}."""
    missing = sorted({APT[t] for t in APT if not shutil.which(t)})
    if missing:
        ctx.note("installing with apt-get: " + " ".join(missing))
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + missing,
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["apt-get", "update"], env=env, capture_output=True)
            r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + missing,
                               env=env, capture_output=True, text=True)
        if r.returncode != 0:
            ctx.note("apt-get install failed: " + r.stderr[-300:])
    return {t: shutil.which(t) for t in APT}


def oci_bundle(d, rootfs):
    """An OCI bundle around rootfs running /bin/true: its own pid, ipc, uts,
    mount and (empty) network namespaces, read-only root, /proc and /dev."""
    os.makedirs(d)
    spec = {"ociVersion": "1.0.2",
            "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": ["/bin/true"],
                        "cwd": "/", "env": ["PATH=/usr/bin:/bin"]},
            "root": {"path": rootfs, "readonly": True},
            "hostname": "peer",
            "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                       {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
                        "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}],
            "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]}}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(spec, f)
    return d


class Peer:
    """A command line run to its exit; `{}` in argv becomes a unique id."""

    def __init__(self, name, argv, note=""):
        self.name, self.argv, self.note = name, argv, note
        self.seq, self.lock = 0, threading.Lock()

    def once(self):
        with self.lock:
            self.seq += 1
            cid = "osbpeer%d-%d" % (os.getpid(), self.seq)
        argv = [x.replace("{}", cid) for x in self.argv]
        t0 = time.perf_counter()
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        secs = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError("%s: rc %d: %s" % (self.name, r.returncode, r.stderr[-300:].decode(errors="replace")))
        return secs


class Ours:
    """Our sandbox as a peer: create-to-ready (+ delete when with_delete)."""

    def __init__(self, ctx, with_delete):
        self.ctx, self.with_delete = ctx, with_delete
        self.name = "ours: create-to-ready + delete" if with_delete else "ours: create-to-ready"
        self.note = "POST, endpoints, /ping" + (", DELETE" if with_delete else "")
        self.argv = None
        self.local = threading.local()
        self.left, self.lock = [], threading.Lock()

    def once(self):
        h = getattr(self.local, "http", None)
        if h is None:
            h = self.local.http = Http(self.ctx.key)
        t0 = time.perf_counter()
        sid, _, _ = create_ready(h, self.ctx.hp, BODY)
        if self.with_delete:
            delete(h, self.ctx.hp, sid)
        else:
            with self.lock:
                self.left.append(sid)
        return time.perf_counter() - t0

    def cleanup(self):
        with self.lock:
            ids, self.left = self.left, []
        delete_all(self.ctx, ids)


class Dockerd:
    """A dockerd of our own: private data root, exec root, socket, pidfile;
    no iptables, no masquerade, its bridge on DOCKER_BIP."""

    def __init__(self, path, tmp):
        self.dir = os.path.join(tmp, "docker")
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "docker.sock")
        with open(os.path.join(self.dir, "daemon.json"), "w") as f:
            f.write("{}\n")
        self.had_bridge = subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0
        self.argv = [path, "--config-file", os.path.join(self.dir, "daemon.json"),
                     "--data-root", os.path.join(self.dir, "data"),
                     "--exec-root", os.path.join(self.dir, "exec"),
                     "--pidfile", os.path.join(self.dir, "docker.pid"),
                     "--host", "unix://" + self.sock, "--iptables=false", "--ip-masq=false",
                     "--bip", DOCKER_BIP, "--userland-proxy=false", "--log-level=warn"]
        self.log = open(os.path.join(self.dir, "dockerd.log"), "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("dockerd exited: " + self.log_tail())
            if self.docker("version").returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("dockerd did not answer: " + self.log_tail())

    def docker(self, *args, **kw):
        return subprocess.run(["docker", "-H", "unix://" + self.sock] + list(args),
                              capture_output=True, **kw)

    def log_tail(self):
        with open(os.path.join(self.dir, "dockerd.log"), errors="replace") as f:
            return f.read()[-1500:]

    def import_rootfs(self, rootfs, tag):
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        r = self.docker("import", "-", tag, stdin=tar.stdout)
        tar.wait()
        if r.returncode != 0:
            raise RuntimeError("docker import: " + r.stderr.decode(errors="replace"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if not self.had_bridge:  # dockerd leaves its bridge behind
            subprocess.run(["ip", "link", "del", "docker0"], stderr=subprocess.DEVNULL)
        unmount_under(self.dir)


def unmount_under(d):
    with open("/proc/self/mountinfo") as f:
        mounts = [l.split()[4] for l in f if l.split()[4].startswith(d + "/")]
    for m in sorted(mounts, reverse=True):
        subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)


def hybrid_cgroups():
    """cgroup v1 beside a cgroup2 mount that holds controllers: crun refuses
    it ("cgroups in hybrid mode not supported, drop all controllers from
    cgroupv2"), runc and the others use the v1 hierarchies."""
    try:
        with open("/sys/fs/cgroup/unified/cgroup.controllers") as f:
            return bool(f.read().split())
    except OSError:
        return False


class V1Only:
    """A mount namespace like the host's but without /sys/fs/cgroup/unified,
    held open by a sleeping process; crun runs in it through nsenter (one
    exec more than the others, ~1 ms), so the host's cgroup2 keeps its
    controllers."""

    def __init__(self):
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                      "umount /sys/fs/cgroup/unified && echo ok && exec sleep infinity"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        if self.proc.stdout.readline() != b"ok\n":
            self.stop()
            raise RuntimeError("no mount namespace without cgroup2 for crun")

    def prefix(self):
        return ["nsenter", "--mount=/proc/%d/ns/mnt" % self.proc.pid]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def make_peers(ctx, tmp):
    tools = ensure_tools(ctx)
    rootfs = os.path.join(tmp, "rootfs")
    env = dict(os.environ, EXECD_BIN="/nonexistent")  # the peers run no execd
    subprocess.run([os.path.join(ROOT, "scripts", "make-busybox-rootfs.sh"), rootfs], env=env,
                   check=True, stderr=subprocess.DEVNULL)
    bundle = oci_bundle(os.path.join(tmp, "bundle"), rootfs)
    peers, dockerd = [], None
    if tools["bwrap"]:
        peers.append(Peer("bwrap", [tools["bwrap"], "--unshare-all", "--die-with-parent", "--ro-bind", rootfs,
                                    "/", "--proc", "/proc", "--dev", "/dev", "/bin/true"],
                          "--unshare-all (user, ipc, pid, net, uts, cgroup)"))
    if tools["crun"]:
        argv, note = [tools["crun"], "--root", os.path.join(tmp, "crun-state"), "run", "--bundle",
                      bundle, "{}"], "OCI bundle, pid/ipc/uts/mount/net ns, cgroup"
        if hybrid_cgroups():
            ctx.holder = V1Only()
            argv = ctx.holder.prefix() + argv
            note += "; nsenter into a mount ns without the cgroup2 mount (crun refuses hybrid)"
        peers.append(Peer("crun", argv, note))
    if tools["runc"]:
        peers.append(Peer("runc", [tools["runc"], "--root", os.path.join(tmp, "runc-state"), "run",
                                   "--bundle", bundle, "{}"], "OCI bundle, pid/ipc/uts/mount/net ns, cgroup"))
    if tools["runsc"]:
        peers.append(Peer("runsc", [tools["runsc"], "--root", os.path.join(tmp, "runsc-state"),
                                    "--platform=ptrace", "--network=none", "--host-uds=create",
                                    "--ignore-cgroups", "run", "--bundle", bundle, "{}"],
                          "same bundle, the gvisor backend's flags"))
    if tools["dockerd"] and tools["docker"]:
        try:
            dockerd = Dockerd(tools["dockerd"], tmp)
            dockerd.import_rootfs(rootfs, "osb-bench-busybox:latest")
            peers.append(Peer("docker run --rm", ["docker", "-H", "unix://" + dockerd.sock, "run", "--rm",
                                                  "osb-bench-busybox:latest", "/bin/true"],
                              "own dockerd, default bridge %s" % DOCKER_BIP))
        except RuntimeError as e:
            ctx.note("docker skipped: %s" % str(e)[:300])
    return peers, dockerd


def peer_rounds(ctx, subjects, n, rounds, c=10):
    """Serial: n rounds of one run each, in a rotating order; then `rounds`
    rounds of a batch of c each. {name: {...}}."""
    out = {s.name: {"serial": [], "batch": [], "walls": [], "errors": []} for s in subjects}

    def run(s, k):
        try:
            out[s.name][k].append(s.once() * 1000)
        except Exception as e:  # counted, reported
            if len(out[s.name]["errors"]) < 3:
                out[s.name]["errors"].append(str(e)[:300])
    for s in subjects:  # warm-up: page cache, the runtimes' first starts
        for _ in range(2):
            try:
                s.once()
            except Exception:
                pass
        if isinstance(s, Ours):
            s.cleanup()
    for i in range(n):
        k = i % len(subjects)
        for s in subjects[k:] + subjects[:k]:
            run(s, "serial")
            if isinstance(s, Ours):
                s.cleanup()
    for i in range(rounds):
        k = i % len(subjects)
        for s in subjects[k:] + subjects[:k]:
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(c) as ex:
                list(ex.map(lambda _: run(s, "batch"), range(c)))
            out[s.name]["walls"].append((time.perf_counter() - t0) * 1000)
            if isinstance(s, Ours):
                s.cleanup()
    rows = []
    for s in subjects:
        o = out[s.name]
        rows.append({"name": s.name, "note": s.note, "command": " ".join(s.argv) if s.argv else None,
                     "serial_n": n, "serial_ok": len(o["serial"]),
                     "serial_p50_ms": pct(o["serial"], .5) if o["serial"] else None,
                     "serial_p99_ms": pct(o["serial"], .99) if o["serial"] else None,
                     "c10_n": rounds * c, "c10_ok": len(o["batch"]),
                     "c10_p50_ms": pct(o["batch"], .5) if o["batch"] else None,
                     "c10_p99_ms": pct(o["batch"], .99) if o["batch"] else None,
                     "c10_wall_ms": pct(o["walls"], .5) if o["walls"] else None,
                     "errors": o["errors"]})
    return rows


def bench_peers(ctx, a, tmp):
    peers, dockerd = make_peers(ctx, tmp)
    ours = [Ours(ctx, True), Ours(ctx, False)]
    try:
        rows = peer_rounds(ctx, ours + peers, a.n_peer, a.peer_rounds)
    finally:
        if dockerd:
            dockerd.stop()
        if ctx.holder:
            ctx.holder.stop()
    base = {r["name"]: r for r in rows}["ours: create-to-ready + delete"]
    for r in rows:
        r["ratios"] = {k: ratio(base[k], r[k]) for k in ("serial_p50_ms", "serial_p99_ms", "c10_p50_ms",
                                                          "c10_wall_ms")}
    return rows


def ratio(ours, theirs):
    return ours / theirs if ours is not None and theirs else None


# ---------------------------------------------------------------- the run
class Ctx:
    def __init__(self, server):
        self.server = server
        self.hp = "127.0.0.1:%d" % server.port
        self.key = server.api_key
        self.http = Http(self.key)
        self.notes = []
        self.holder = None  # V1Only for crun
        self.pool_slow = False  # a pool once failed to fill in time

    def note(self, text):
        self.notes.append(text)
        print("# " + text, flush=True)


def start_server(tmp):
    subnet = free_subnet()
    extra = '[network]\ndns_upstreams = ["127.0.0.1:9"]\nsubnet = "%s"\n' % subnet
    s = Server(api_key="bench-" + os.urandom(6).hex(), extra=extra, tmp_dir=os.path.expanduser("~"))
    s.subnet = subnet  # released by stop()
    tar = os.path.join(tmp, "busybox.tar")
    subprocess.run([os.path.join(ROOT, "scripts", "make-image-busybox.sh"), tar], check=True,
                   stdout=subprocess.DEVNULL)
    imp = [SERVER_BIN, "--config", s.config, "image", "import", IMAGE, tar]
    p = subprocess.run(imp, capture_output=True, text=True)
    if p.returncode != 0:
        s.stop()
        raise SystemExit("image import failed: " + p.stderr)
    return s.start()


def stop_server(s):
    ifprefix, table = net_names(s.state_dir)
    problems = s.stop()
    remove_network(ifprefix, table)  # the slots it kept for a restart
    release_subnet(s.subnet)
    return problems


# ------------------------------------------------------------------ report
def f(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


COLS = "%-28s %-36s %9s %9s %9s %9s %9s %9s  %s"


def line(section, case, ok="", p50=None, p90=None, p99=None, wall=None, first=None, other=""):
    print(COLS % (section, case, ok, f(p50), f(p90), f(p99), f(wall), f(first), other))


def create_lines(section, rows, other=lambda r: ""):
    for r in rows:
        case = "serial" if r["concurrency"] == 1 else "concurrency %d" % r["concurrency"]
        if r.get("sustained"):
            case = "%d through %d workers" % (r["n"], r["concurrency"])
        line(section, case, "%d/%d" % (r["ok"], r["n"]), r.get("p50_ms"), r.get("p90_ms"), r.get("p99_ms"),
             r.get("wall_ms"), r.get("first_ms"), other(r))


def print_table(doc):
    print(COLS % ("what", "case", "ok/n", "p50 ms", "p90 ms", "p99 ms", "wall ms", "first ms", "other"))
    if "create" in doc:
        create_lines("create-to-ready, raw HTTP", doc["create"])
    pool = doc.get("pool")
    if pool is not None and not pool["available"]:
        line("create-to-ready, pool of 20", "all", other="n/a (no pools): " + pool["why"][:60])
    elif pool:
        create_lines("create-to-ready, pool of 20", pool["rows"])
        create_lines("JS SDK, pool of 20", pool["sdk"])
    if "sdk" in doc:
        create_lines("JS SDK Sandbox.create", doc["sdk"])
    e = doc.get("execd")
    if e:
        rt = e["roundtrip"]
        line("execd via endpoint", "command `true`", "%d" % rt["n"], rt["p50_ms"], None, rt["p99_ms"],
             other="request to end of stream")
        line("execd via endpoint", "stdout %d MiB" % e["stdout"]["mib"],
             other="%.0f MB/s of output" % e["stdout"]["mb_s"])
        line("execd via endpoint", "upload %d MiB" % e["files"]["mib"],
             other="%.0f MB/s" % e["files"]["upload_mb_s"])
        line("execd via endpoint", "download %d MiB" % e["files"]["mib"],
             other="%.0f MB/s" % e["files"]["download_mb_s"])
    d = doc.get("density")
    if d is not None:
        line("density", "--max 1000", other=("n/a: " + d["why"]) if not d["available"] else
             ("JSON included" if d["json"] else "rc %d, text only" % d["returncode"]))
    for r in doc.get("peers", []):
        rs = r["ratios"]
        mine = r["name"].startswith("ours")
        line("run `true` to exit" if not mine else "ours (peer rounds)", r["name"] + ", serial",
             "%d/%d" % (r["serial_ok"], r["serial_n"]), r["serial_p50_ms"], None, r["serial_p99_ms"],
             other="" if mine else "ours/this p50 %s, p99 %s" % (f(rs["serial_p50_ms"], ".2f"),
                                                                  f(rs["serial_p99_ms"], ".2f")))
        line("run `true` to exit" if not mine else "ours (peer rounds)", r["name"] + ", c10",
             "%d/%d" % (r["c10_ok"], r["c10_n"]), r["c10_p50_ms"], None, r["c10_p99_ms"], r["c10_wall_ms"],
             other="" if mine else "ours/this p50 %s, wall %s" % (f(rs["c10_p50_ms"], ".2f"),
                                                                   f(rs["c10_wall_ms"], ".2f")))
    errs = [(k, e) for k, rows in (("create", doc.get("create", [])), ("sdk", doc.get("sdk", [])),
                                   ("peers", doc.get("peers", []))) for r in rows for e in r.get("errors", [])]
    for k, e in errs[:10]:
        print("# %s failure: %s" % (k, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small N everywhere (a few minutes)")
    ap.add_argument("--n", type=int, help="creates per level (default 50, --quick 20)")
    ap.add_argument("--n-sustained", type=int,
                    help="creates through 20 and 50 workers (default 100, --quick 60)")
    ap.add_argument("--n-sdk", type=int, help="JS SDK creates per level (default 40, --quick 20)")
    ap.add_argument("--n-peer", type=int, help="serial runs per peer (default 50, --quick 10)")
    ap.add_argument("--peer-rounds", type=int, help="batches of 10 per peer (default 5, --quick 2)")
    ap.add_argument("--only", default="create,pool,sdk,execd,density,peers")
    ap.add_argument("--json", help="where the JSON goes (default $BUILD/bench/create.json)")
    a = ap.parse_args()
    a.n = a.n or (20 if a.quick else 50)
    a.n_sustained = a.n_sustained or (60 if a.quick else 100)
    a.n_sdk = a.n_sdk or (20 if a.quick else 40)
    a.n_peer = a.n_peer or (10 if a.quick else 50)
    a.peer_rounds = a.peer_rounds or (2 if a.quick else 5)
    only = a.only.split(",")
    if os.geteuid() != 0:
        print("create bench skipped: needs root")
        return
    out = os.path.abspath(a.json or os.path.join(ROOT, BUILD, "bench", "create.json"))
    tmp = tempfile.mkdtemp(prefix=".osb-bench-create.", dir=os.path.expanduser("~"))
    srv = start_server(tmp)
    ctx = Ctx(srv)
    doc = {"bench": "create_bench", "argv": [sys.executable] + sys.argv, "cpus": os.cpu_count(),
           "image": IMAGE, "body": BODY, "server_config": open(srv.config).read(),
           "loadavg_before": os.getloadavg(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.monotonic()
    try:
        steps = [("create", lambda: bench_create(ctx, a)), ("pool", lambda: bench_pool(ctx, a)),
                 ("sdk", lambda: bench_sdk(ctx, a)), ("execd", lambda: bench_execd(ctx, a)),
                 ("density", lambda: bench_density(ctx, a)), ("peers", lambda: bench_peers(ctx, a, tmp))]
        for name, fn in steps:
            if name in only:
                t1 = time.monotonic()
                print("# %s ..." % name, flush=True)
                doc[name] = fn()
                doc.setdefault("seconds", {})[name] = time.monotonic() - t1
    finally:
        problems = stop_server(srv)
        if problems:
            ctx.note("server teardown: " + "; ".join(problems))
        unmount_under(tmp)
        subprocess.run(["rm", "-rf", "--one-file-system", tmp])
    doc.update(loadavg_after=os.getloadavg(), total_seconds=time.monotonic() - t0, notes=ctx.notes)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1)
    print("# create-to-ready and peers: %d CPUs, load %.2f before / %.2f after, %.0f s; image %s" % (
        doc["cpus"], doc["loadavg_before"][0], doc["loadavg_after"][0], doc["total_seconds"], IMAGE))
    print_table(doc)
    print("# create-to-ready: POST -> 202, endpoints 44772 and 18080 (use_server_proxy=false), /ping on "
          "the endpoint with its headers -> 200 (polled every 1 ms; the JS SDK polls every 200 ms after "
          "its first try); wall: a batch started together, to its last ready; first: to its first ready "
          "(median over rounds)")
    print("# run `true` to exit: from spawning the tool to its exit; ours: the create sequence (+ DELETE); "
          "ratios are ours (create-to-ready + delete) / the peer's (below 1: ours is faster)")
    print("# JSON: %s" % out)


if __name__ == "__main__":
    main()
