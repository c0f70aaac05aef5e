"""opensandbox-server benchmarks with the `host` image (issue #3 goals in
brackets; printed, not asserted):

  create    create-to-ready, serially: POST /v1/sandboxes until 202, the two
            endpoint lookups the SDKs make (44772 and 18080, server proxy
            form), then GET {endpoint}/ping through the server proxy until
            200 -- what an SDK's create waits for. p50/p99, plus delete p50.
  burst     N concurrent creates (each on its own connection): all must
            succeed; failures counted.
  density   N idle sandboxes alive at once: the server's RSS, each sandbox's
            execd (its PID 1) RSS sum/avg, then cleanup.
  sdk       the JS SDK's Sandbox.create end to end (tests/sdk/bench_create.mjs).
  unauth    1 GiB offered to POST /v1/sandboxes without the API key, 4
            connections at once: the server's RSS and peak RSS growth, the
            bytes it took before closing, and whether each sender saw the 401.

Usage: server_bench.py [create|burst|density|sdk ...] [--n-create 100]
       [--n-burst 50] [--n-density 200] [--n-sdk 30]
Starts its own server (build/bin/opensandbox-server, or $OSB_SERVER_BIN) on a
free loopback port with a temporary state dir."""
import argparse, concurrent.futures, http.client, json, os, secrets, shutil, socket
import statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import free_subnet, release_subnet  # noqa: E402
BUILD = os.environ.get("BUILD", "build")
SERVER = os.environ.get("OSB_SERVER_BIN", os.path.join(ROOT, BUILD, "bin", "opensandbox-server"))
IMAGE = os.environ.get("OSB_BENCH_IMAGE", "host")
CREATE_BODY = {"image": {"uri": IMAGE}, "entrypoint": ["tail", "-f", "/dev/null"],
               "resourceLimits": {"cpu": "1", "memory": "2Gi"}, "timeout": 600,
               "env": {}, "metadata": {}, "extensions": {}, "secureAccess": False}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


class Server:
    """A private opensandbox-server: temp state dir, API key, free port."""

    def __init__(self, extra="", server="", userns_slots=256):
        """extra: TOML text appended to the config (e.g. an [image] table);
        server: lines added to its [server] table; userns_slots: 65536-id
        ranges for that many sandboxes alive at once."""
        if not os.access(SERVER, os.X_OK):
            raise SystemExit(f"{SERVER} does not exist: run make first")
        # Under $HOME, like the default state dir (~/.opensandbox): on this
        # VM creating files in /tmp is many times slower than there.
        self.tmp = tempfile.mkdtemp(prefix=".osb-bench.", dir=os.path.expanduser("~"))
        self.state = os.path.join(self.tmp, "state")
        os.mkdir(self.state)
        self.port = free_port()
        self.key = "bench-" + secrets.token_hex(8)
        cfg = os.path.join(self.tmp, "sandbox.toml")
        # A userns_range of its own (servers claim theirs host-wide; tests'
        # servers may run beside this one), somewhere in [2^24, 2^31), with
        # room for the density run's sandboxes (one 65536-id range each).
        self.userns_count = userns_slots * 65536
        slots = ((1 << 31) - (1 << 24) - self.userns_count) // 65536
        if slots <= 0:
            raise SystemExit(f"{userns_slots} uid ranges of 65536 do not fit in [2^24, 2^31)")
        userns = (1 << 24) + secrets.randbelow(slots) * 65536
        # Nothing leaves this machine: no pull from a registry for an unknown
        # name, the sandboxes' DNS forwarder's upstream a closed local port,
        # and a subnet no other server or host route holds.
        self.subnet = None
        if "[image]" not in extra:
            extra += '\n[image]\npull_policy = "never"\n'
        if "[network]" not in extra:
            self.subnet = free_subnet()
            extra += f'\n[network]\ndns_upstreams = ["127.0.0.1:9"]\nsubnet = "{self.subnet}"\n'
        with open(cfg, "w") as f:
            f.write(f'[server]\nhost = "127.0.0.1"\nport = {self.port}\napi_key = "{self.key}"\n{server}\n'
                    f'[runtime]\ntype = "native"\n\n[native]\nstate_dir = "{self.state}"\n'
                    f'userns_range = "{userns}:{self.userns_count}"\n{extra}\n')
        self.ifprefix, self.nft_table = net_names(self.state)
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENSANDBOX_SERVER_API_KEY", "OPENSANDBOX_INSECURE_SERVER")}
        self.log = open(os.path.join(self.tmp, "server.log"), "wb")
        self.config = cfg
        self.proc = subprocess.Popen([SERVER, "--config", cfg], stdout=self.log, stderr=self.log, env=env)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        tail = self.log_tail()  # stop() removes the log with the temp dir
        self.stop()
        raise SystemExit("opensandbox-server did not start; log:\n" + tail)

    def log_tail(self, n=20):
        try:
            with open(os.path.join(self.tmp, "server.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no log)\n"

    def delete_all(self):
        """Delete every sandbox: a server stopped with sandboxes alive keeps
        them (and their network slots, links and nft table) for a restart."""
        try:
            c = Client(self)
            for sid in c.list_ids():
                c.delete(sid)
        except Exception as e:  # still stop the server
            print(f"# warning: deleting the sandboxes before stopping failed: {e}")

    def stop(self):
        if self.proc.poll() is None:
            self.delete_all()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # Sandboxes the server left (a delete that failed, a server killed):
        # their processes die by their cgroups, as nothing else would end them.
        self.kill_leftovers()
        # Never delete through a mount that outlived the server.
        with open("/proc/self/mountinfo") as f:
            mounts = [l.split()[4] for l in f if l.split()[4].startswith(self.tmp + "/")]
        for m in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", m], stderr=subprocess.DEVNULL)
        # The network slots' namespace pins (state/netns/<n>) stay for a
        # restart, by design; anything else is a leak worth a word.
        pins = os.path.join(os.path.realpath(self.state), "netns") + "/"
        others = [m for m in mounts if not os.path.realpath(m).startswith(pins)]
        if others:
            print(f"# warning: {len(others)} mounts were left under {self.tmp} after the server stopped: "
                  f"{', '.join(others[:3])}")
        # The runtime keeps its (now empty) base cgroups for a restart; this
        # state dir is going away, so remove them (rmdir only empties).
        remove_empty_cgroups(cgroup_base(self.state))
        # The server keeps its network slots (links, nft table) for a
        # restart; this state dir is going away, so nothing will adopt them,
        # and a later server would refuse the subnet they hold.
        remove_network(self.ifprefix, self.nft_table)
        if self.subnet:
            release_subnet(self.subnet)
            self.subnet = None
        self.log.close()
        subprocess.run(["rm", "-rf", "--one-file-system", self.tmp])

    def kill_leftovers(self):
        left = sandbox_pids(self.state)
        for p in left:
            try:
                os.kill(p, 9)
            except OSError:
                pass
        if left:
            print(f"# warning: killed {len(left)} sandbox processes the server left running")
            deadline = time.time() + 60
            while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in left):
                time.sleep(0.1)

    def rss_kib(self):
        return status_kib(self.proc.pid, "VmRSS")


class Client:
    """Keep-alive HTTP/1.1 client to the server, like the SDKs' pooled agents."""

    def __init__(self, srv):
        self.srv = srv
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)

    def req(self, method, path, body=None, auth=True):
        headers = {"OPEN-SANDBOX-API-KEY": self.srv.key} if auth else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()  # the server closed an idle connection: retry once
                if attempt:
                    raise

    def create_ready(self, body=None):
        """The SDK's create sequence (body: the create request, default
        CREATE_BODY); returns (id, seconds) or raises."""
        t0 = time.perf_counter()
        st, body = self.req("POST", "/v1/sandboxes", body or CREATE_BODY)
        if st != 202:
            raise RuntimeError(f"create: {st} {body[:200]!r}")
        sid = json.loads(body)["id"]
        st, body = self.req("GET", f"/v1/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
        if st != 200:
            raise RuntimeError(f"endpoint 44772: {st} {body[:200]!r}")
        ep = json.loads(body)["endpoint"]
        st, _ = self.req("GET", f"/v1/sandboxes/{sid}/endpoints/18080?use_server_proxy=true")
        if st != 200:
            raise RuntimeError(f"endpoint 18080: {st}")
        path = "/" + ep.split("/", 1)[1] + "/ping" if "/" in ep else "/ping"
        deadline = time.time() + 30
        while True:
            st, _ = self.req("GET", path, auth=False)
            if st == 200:
                return sid, time.perf_counter() - t0
            if time.time() > deadline:
                raise RuntimeError(f"ping never answered 200 (last {st})")
            time.sleep(0.001)

    def delete(self, sid):
        t0 = time.perf_counter()
        st, body = self.req("DELETE", f"/v1/sandboxes/{sid}")
        if st != 204:
            raise RuntimeError(f"delete: {st} {body[:200]!r}")
        return time.perf_counter() - t0

    def list_ids(self):
        ids, page = [], 1
        while True:
            st, body = self.req("GET", f"/v1/sandboxes?pageSize=200&page={page}")
            d = json.loads(body)
            ids += [s["id"] for s in d["items"]]
            if not d["pagination"]["hasNextPage"]:
                return ids
            page += 1


def net_names(state_dir):
    """(interface prefix, nft table) the server derives from its state dir:
    "osb%04x" / "osb_%04x" of FNV-1a 32 of the real path, folded to 16 bits
    (src/net/netns.c)."""
    h = 2166136261
    for c in os.path.realpath(state_dir).encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    h = (h ^ (h >> 16)) & 0xffff
    return "osb%04x" % h, "osb_%04x" % h


def remove_network(ifprefix, table):
    """Delete the links named ifprefix<n> and the nft table inet <table>."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        name = line.split(": ", 2)[1].split("@")[0] if ": " in line else ""
        if name.startswith(ifprefix) and name[len(ifprefix):].isdigit():
            subprocess.run(["ip", "link", "del", name], stderr=subprocess.DEVNULL)
    if shutil.which("nft"):  # the CLI is optional here (the server uses libnftnl)
        subprocess.run(["nft", "delete", "table", "inet", table],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cgroup_base(state_dir):
    """The runtime's cgroup directory name for a state dir:
    "opensandbox-<FNV-1a of the path>" (src/runtime/native/cgroup.c)."""
    h = 2166136261
    for c in state_dir.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return "opensandbox-%08x" % h


def remove_empty_cgroups(name):
    """rmdir every cgroup directory called `name` (and its empty children)."""
    found = subprocess.run(["find", "/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name", name],
                           capture_output=True, text=True).stdout.split()
    for top in found:
        for d, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            try:
                os.rmdir(d)
            except OSError:
                pass


def sandbox_pids(state_dir):
    """Every process in this server's cgroups (the sandboxes' processes)."""
    mark = "/" + cgroup_base(state_dir) + "/"
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cgroup") as f:
                if mark in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out


def sandbox_pid1s(state_dir):
    """Host pids of this server's sandboxes' PID 1 (execd): processes in the
    server's cgroups that are PID 1 of their pid namespace."""
    out = []
    for p in sandbox_pids(state_dir):
        try:
            with open(f"/proc/{p}/status") as f:
                nspid = next((l.split()[1:] for l in f if l.startswith("NSpid:")), [])
        except OSError:
            continue
        if len(nspid) > 1 and nspid[-1] == "1":
            out.append(p)
    return out


def bench_create(srv, n):
    c = Client(srv)
    for _ in range(5):  # warm-up
        sid, _ = c.create_ready()
        c.delete(sid)
    ready, dels, fails = [], [], 0
    for _ in range(n):
        try:
            sid, t = c.create_ready()
            ready.append(t)
            dels.append(c.delete(sid))
        except Exception as e:
            fails += 1
            print(f"# create failed: {e}")
    ms = [x * 1000 for x in ready]
    print(f"create-to-ready ({len(ms)} serial creates, ping through the server proxy): "
          f"p50 {pct(ms, .5):.1f} ms, p99 {pct(ms, .99):.1f} ms, max {max(ms, default=0):.1f} ms"
          f"{f', {fails} FAILED' if fails else ''}  [goal p50 <= 15 ms, p99 <= 40 ms]")
    dms = [x * 1000 for x in dels]
    print(f"delete: p50 {pct(dms, .5):.1f} ms, p99 {pct(dms, .99):.1f} ms  [goal p50 <= 10 ms]")


def bench_burst(srv, n):
    def one(_):
        c = Client(srv)
        try:
            return c.create_ready()
        except Exception as e:
            return e
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        results = list(ex.map(one, range(n)))
    wall = time.perf_counter() - t0
    good = [r for r in results if isinstance(r, tuple)]
    bad = [r for r in results if not isinstance(r, tuple)]
    ms = [t * 1000 for _, t in good]
    print(f"{n} concurrent creates: {len(good)} succeeded, {len(bad)} failed, all ready in {wall:.2f} s "
          f"(each: p50 {pct(ms, .5):.0f} ms, max {max(ms, default=0):.0f} ms)  [goal: all succeed]")
    for e in bad[:3]:
        print(f"# failure: {e}")
    c = Client(srv)
    t0 = time.perf_counter()
    for sid in c.list_ids():
        c.delete(sid)
    print(f"  deleted them serially in {time.perf_counter() - t0:.2f} s")


def bench_density(srv, n):
    c = Client(srv)
    rss0 = srv.rss_kib()
    ids, fails = [], 0
    t0 = time.perf_counter()
    for _ in range(n):
        try:
            ids.append(c.create_ready()[0])
        except Exception as e:
            fails += 1
            if fails <= 3:
                print(f"# create failed: {e}")
    took = time.perf_counter() - t0
    time.sleep(1)  # let every execd settle into idle
    pids = sandbox_pid1s(srv.state)
    rss = [status_kib(p, "VmRSS") for p in pids]
    anon = [status_kib(p, "RssAnon") for p in pids]
    live = len(c.list_ids())
    print(f"{n} idle sandboxes: {len(ids)} created in {took:.1f} s ({fails} failed), {live} listed, "
          f"{len(pids)} sandbox PID 1 (execd) processes found  [goal: {n} alive at once]")
    print(f"  server RSS: {srv.rss_kib() / 1024:.1f} MiB with {len(ids)} sandboxes (idle before: {rss0 / 1024:.1f} MiB)")
    if rss:
        print(f"  execd RSS: sum {sum(rss) / 1024:.1f} MiB, avg {statistics.mean(rss) / 1024:.2f} MiB, "
              f"max {max(rss) / 1024:.2f} MiB (anonymous: avg {statistics.mean(anon) / 1024:.2f} MiB, "
              f"sum {sum(anon) / 1024:.1f} MiB)")
    t0 = time.perf_counter()
    for sid in c.list_ids():
        c.delete(sid)
    left = sandbox_pid1s(srv.state)
    print(f"  deleted all in {time.perf_counter() - t0:.2f} s; {len(left)} sandbox processes left")


def bench_sdk(srv, n):
    sdk = os.path.join(ROOT, "tests", "sdk")
    if not os.path.isdir(os.path.join(sdk, "node_modules", "@alibaba-group", "opensandbox")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=sdk, check=True)
    env = dict(os.environ, OPEN_SANDBOX_DOMAIN=f"127.0.0.1:{srv.port}", OPEN_SANDBOX_API_KEY=srv.key)
    r = subprocess.run(["node", os.path.join(sdk, "bench_create.mjs"), str(n), IMAGE],
                       env=env, capture_output=True, text=True, timeout=600)
    try:
        d = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"JS SDK Sandbox.create: bench script failed: {r.stderr[-500:]}")
        return
    ms, fails = d["create_ms"], d["failures"]
    failed = f"; {fails} FAILED" if fails else ""
    print(f"JS SDK 0.1.11 Sandbox.create end to end ({len(ms)} serial): p50 {pct(ms, .5):.1f} ms, "
          f"p99 {pct(ms, .99):.1f} ms; sandbox.kill p50 {pct(d['kill_ms'], .5):.1f} ms{failed}"
          f"  [goal p50 <= 15 ms]")
    raw = d.get("raw_ms", [])
    if raw:
        print(f"  the same four HTTP calls from node with plain fetch (one kept-alive connection): "
              f"p50 {pct(raw, .5):.1f} ms, p99 {pct(raw, .99):.1f} ms")
    for e in d["errors"]:
        print(f"# sdk failure: {e}")


def unauth_offer(port, total):
    """Offer `total` body bytes without the key; returns (bytes taken, saw 401)."""
    import select
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % total)
    chunk, sent, got = b"x" * (1 << 20), 0, b""
    try:
        while sent < total:
            if select.select([s], [], [], 0)[0]:
                d = s.recv(65536)
                if not d:
                    break
                got += d
            sent += s.send(chunk)
    except OSError:
        pass
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError:
        pass
    s.close()
    return sent, got.startswith(b"HTTP/1.1 401 ")


def bench_unauth(srv, n=4, total=1 << 30):
    pid = srv.proc.pid
    rss0, hwm0 = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        res = list(ex.map(lambda _: unauth_offer(srv.port, total), range(n)))
    took = time.perf_counter() - t0
    rss1, hwm1 = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
    print(f"unauthenticated upload ({n} x {total >> 20} MiB offered): server RSS "
          f"+{(rss1 - rss0) / 1024:.1f} MiB, peak +{(hwm1 - hwm0) / 1024:.1f} MiB; taken per "
          f"connection {', '.join(f'{s >> 20} MiB' for s, _ in res)}; "
          f"{sum(ok for _, ok in res)}/{n} saw the 401; {took:.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="*", default=["create", "burst", "density", "sdk", "unauth"])
    ap.add_argument("--n-create", type=int, default=100)
    ap.add_argument("--n-burst", type=int, default=50)
    ap.add_argument("--n-density", type=int, default=200)
    ap.add_argument("--n-sdk", type=int, default=30)
    a = ap.parse_args()
    srv = Server()
    print(f"# opensandbox-server on 127.0.0.1:{srv.port}, image {IMAGE!r}, {os.cpu_count()} CPUs; "
          f"server RSS at start {srv.rss_kib() / 1024:.1f} MiB")
    try:
        for w in a.which:
            {"create": lambda: bench_create(srv, a.n_create),
             "burst": lambda: bench_burst(srv, a.n_burst),
             "density": lambda: bench_density(srv, a.n_density),
             "sdk": lambda: bench_sdk(srv, a.n_sdk),
             "unauth": lambda: bench_unauth(srv)}[w]()
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
