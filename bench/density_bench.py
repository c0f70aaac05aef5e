"""Density: what one more sandbox costs as the number alive grows (issue #12
goals in brackets; printed, not asserted).

One server ([network] mode = "none" by default, --network nat for NAT
slots) on the `host` image. Idle sandboxes (`tail -f /dev/null`) are
created serially, the way the SDKs create (POST, the endpoint lookups,
execd /ping through the server proxy), up to --max. At each checkpoint
(10, 1000, 5000, --max alive) it measures --samples creates-to-ready and
deletes of one more sandbox (created, then deleted: the count stays put)
and the server's per-sandbox state: lines of its mountinfo, open fds,
threads, RSS. At --max: host memory per sandbox (MemAvailable's drop /
count), PSS of every sandbox process (smaps_rollup) per sandbox, then one
command (`echo`) in every sandbox through the server proxy, counting the
answers, then a serial delete of them all.

Usage: density_bench.py [--max 5000] [--checkpoints 10,1000,5000]
       [--samples 20] [--network none|nat] [--json]
Run it alone (flock): the memory figures are the host's."""
import argparse, concurrent.futures, json, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_bench import CREATE_BODY, Client, Server, pct, sandbox_pids  # noqa: E402

# Idle sandboxes must outlive the run (10000 take over 10 minutes to make):
# CREATE_BODY's 600 s timeout would start expiring the first ones midway.
BODY = dict(CREATE_BODY, timeout=86400)
GOAL_RATIO = 1.3  # create and delete p50 at 5000 alive vs 10 alive
GOAL_MIB = 1.5    # host memory per idle sandbox at 10000 alive
EXECD_POOL_THREADS = 8  # src/execd/pool.c


def meminfo_kib(field):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def count_lines(path):
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def server_state(srv):
    """What the server's own process holds now."""
    pid = srv.proc.pid
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        fds = threads = 0
    return {"mountinfo_lines": count_lines(f"/proc/{pid}/mountinfo"), "fds": fds,
            "threads": threads, "rss_mib": round(srv.rss_kib() / 1024, 1)}


MEMINFO = ("MemAvailable", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Percpu", "Shmem")


def meminfo_all():
    return {k: meminfo_kib(k) for k in MEMINFO}


def tasks_of(pids):
    n = 0
    for p in pids:
        try:
            n += len(os.listdir(f"/proc/{p}/task"))
        except OSError:
            pass
    return n


def host_tasks():
    return sum(tasks_of([p]) for p in os.listdir("/proc") if p.isdigit())


def read_pid_max():
    with open("/proc/sys/kernel/pid_max") as f:
        return int(f.read())


def ensure_pids(srv, alive, target, raise_to):
    """Every task takes a pid: kernel.pid_max bounds the sandboxes alive.
    Returns the old pid_max if it was raised (restored at the end)."""
    idle = tasks_of(sandbox_pids(srv.state)) / max(alive, 1)
    # The command at the end starts execd's file threads in every sandbox.
    each = idle + EXECD_POOL_THREADS + 1
    need = host_tasks() + int(each * target) + 2000
    have = read_pid_max()
    if need <= have:
        return None
    if not raise_to:
        print(f"# kernel.pid_max {have} is short of the ~{need} tasks {target} sandboxes need "
              f"({each:.1f} tasks each): pass --raise-pid-max to raise it for this run", flush=True)
        return None
    with open("/proc/sys/kernel/pid_max", "w") as f:
        f.write(str(max(need, 131072)))
    print(f"# kernel.pid_max raised from {have} to {read_pid_max()} for this run "
          f"({each:.1f} tasks per sandbox)", flush=True)
    return have


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def grow(c, ids, target, fails):
    while len(ids) < target:
        try:
            ids.append(c.create_ready(BODY)[0])
        except Exception as e:
            fails.append(str(e))
            if len(fails) <= 3:
                print(f"# create failed at {len(ids)} alive: {e}", flush=True)
            if len(fails) > 20:
                raise SystemExit("too many failed creates; stopping")


def sample(c, n):
    """n creates-to-ready and deletes of one more sandbox, in ms."""
    ready, dels = [], []
    for _ in range(n):
        sid, t = c.create_ready(BODY)
        ready.append(t * 1000)
        dels.append(c.delete(sid) * 1000)
    return ready, dels


def run_everywhere(srv, ids, workers=4):
    """`echo` in every sandbox through the server proxy; returns answers."""
    def one(chunk):
        c, ok = Client(srv), 0
        for sid in chunk:
            try:
                st, body = c.req("GET", f"/v1/sandboxes/{sid}/endpoints/44772?use_server_proxy=true")
                hdrs = json.loads(body).get("headers", {})
                hdrs.update({"Content-Type": "application/json", "Accept": "text/event-stream"})
                c.conn.request("POST", f"/v1/sandboxes/{sid}/proxy/44772/command",
                               body=json.dumps({"command": "echo alive-" + sid}).encode(),
                               headers=hdrs)
                r = c.conn.getresponse()
                text = r.read().decode("utf-8", "replace")
                ok += r.status == 200 and ("alive-" + sid) in text
            except Exception as e:
                print(f"# command in {sid} failed: {e}", flush=True)
                c.conn.close()
        return ok
    chunks = [ids[i::workers] for i in range(workers)]
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return sum(ex.map(one, chunks))


def memory(srv, n, mem0):
    time.sleep(1)  # let every execd settle into idle
    pids = sandbox_pids(srv.state)
    pss = sum(pss_kib(p) for p in pids)
    now = meminfo_all()
    drop = mem0["MemAvailable"] - now["MemAvailable"]
    # Where the host's memory went, per sandbox (KiB): kernel objects
    # (slab: namespaces, mounts, cgroups, inodes), stacks, page tables,
    # per-cpu data (cgroup statistics), tmpfs/shm pages.
    split = {k: round((now[k] - mem0[k]) / max(n, 1), 1) for k in MEMINFO if k != "MemAvailable"}
    return {"alive": n, "processes": len(pids), "tasks": tasks_of(pids),
            "host_mib_each": round(drop / 1024 / max(n, 1), 3),
            "pss_mib_each": round(pss / 1024 / max(n, 1), 3),
            "kib_each": split,
            "server_rss_mib": round(srv.rss_kib() / 1024, 1)}


def start_perf(alive):
    """perf record over the whole machine (the kernel's share of a create
    is what grows with the number alive)."""
    os.makedirs("build/bench", exist_ok=True)
    out = f"build/bench/density-{alive}.perf.data"
    p = subprocess.Popen(["perf", "record", "-a", "-g", "-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # perf's own start-up, outside what it records (not a test)
    print(f"perf: recording into {out}", flush=True)
    return p


def stop_perf(p):
    if p:
        p.send_signal(signal.SIGINT)
        p.wait()


def network_toml(mode):
    if mode == "none":
        return '[network]\nmode = "none"\n'
    import serverlib
    return (f'[network]\nmode = "nat"\ndns_upstreams = ["127.0.0.1:9"]\n'
            f'subnet = "{serverlib.free_subnet()}"\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=5000)
    ap.add_argument("--checkpoints", default="10,1000,5000")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--network", choices=("none", "nat"), default="none")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--perf-at", type=int, default=0,
                    help="record `perf record -a -g` during the samples at this many alive "
                         "(build/bench/density-N.perf.data)")
    ap.add_argument("--raise-pid-max", action="store_true",
                    help="raise kernel.pid_max for the run when --max needs more pids")
    a = ap.parse_args()
    points = sorted({int(x) for x in a.checkpoints.split(",") if int(x) <= a.max} | {a.max})
    mem0 = meminfo_all()
    srv = Server(extra=network_toml(a.network), userns_slots=a.max + a.samples + 20)
    out = {"network": a.network, "max": a.max, "samples": a.samples, "checkpoints": [],
           "server_idle": server_state(srv)}
    ids, fails = [], []
    old_pid_max = None
    try:
        c = Client(srv)
        sample(c, 5)  # warm-up
        for i, p in enumerate(points):
            if i == 1:
                old_pid_max = ensure_pids(srv, len(ids), a.max + a.samples, a.raise_pid_max)
            t0 = time.perf_counter()
            grow(c, ids, p, fails)
            took = time.perf_counter() - t0
            perf = start_perf(len(ids)) if a.perf_at and len(ids) >= a.perf_at else None
            ready, dels = sample(c, a.samples)
            stop_perf(perf)
            a.perf_at = 0 if perf else a.perf_at
            cp = {"alive": len(ids), "grow_s": round(took, 1),
                  "create_p50_ms": round(pct(ready, .5), 1), "create_p90_ms": round(pct(ready, .9), 1),
                  "delete_p50_ms": round(pct(dels, .5), 1), "delete_p90_ms": round(pct(dels, .9), 1),
                  **server_state(srv)}
            out["checkpoints"].append(cp)
            if not a.json:
                print(json.dumps(cp), flush=True)
        out["memory"] = memory(srv, len(ids), mem0)
        t0 = time.perf_counter()
        out["answered"] = run_everywhere(srv, ids)
        out["command_s"] = round(time.perf_counter() - t0, 1)
        out["failed_creates"] = len(fails)
        t0 = time.perf_counter()
        for sid in ids:
            c.delete(sid)
        out["delete_all_s"] = round(time.perf_counter() - t0, 1)
        ids = []
    finally:
        srv.stop()
        if old_pid_max:
            with open("/proc/sys/kernel/pid_max", "w") as f:
                f.write(str(old_pid_max))
    if a.json:
        print(json.dumps(out, indent=1))
        return
    report(out)


def report(out):
    cps = out["checkpoints"]
    print(f"density, network {out['network']}, {out['samples']} samples per checkpoint "
          f"(server idle: {out['server_idle']})")
    print(f"{'alive':>6} {'create p50':>10} {'p90':>6} {'delete p50':>10} {'p90':>6} "
          f"{'mounts':>7} {'fds':>6} {'threads':>7} {'RSS MiB':>8} {'grow s':>7}")
    for cp in cps:
        print(f"{cp['alive']:>6} {cp['create_p50_ms']:>10.1f} {cp['create_p90_ms']:>6.1f} "
              f"{cp['delete_p50_ms']:>10.1f} {cp['delete_p90_ms']:>6.1f} {cp['mountinfo_lines']:>7} "
              f"{cp['fds']:>6} {cp['threads']:>7} {cp['rss_mib']:>8.1f} {cp['grow_s']:>7.1f}")
    base = cps[0]
    for cp in cps[1:]:
        print(f"  at {cp['alive']} alive: create {cp['create_p50_ms'] / base['create_p50_ms']:.2f}x, "
              f"delete {cp['delete_p50_ms'] / base['delete_p50_ms']:.2f}x of {base['alive']} alive "
              f"[goal <= {GOAL_RATIO}x at 5000]")
    m = out["memory"]
    print(f"memory at {m['alive']} alive: {m['host_mib_each']:.3f} MiB of host memory each "
          f"[goal <= {GOAL_MIB}], PSS {m['pss_mib_each']:.3f} MiB each ({m['processes']} processes), "
          f"server RSS {m['server_rss_mib']} MiB; {m['tasks'] / max(m['alive'], 1):.1f} tasks each")
    print("  host memory per sandbox, KiB: " + ", ".join(f"{k} {v}" for k, v in m["kib_each"].items()))
    print(f"a command in every sandbox: {out['answered']}/{m['alive']} answered in "
          f"{out['command_s']} s [goal: all]; {out['failed_creates']} creates failed; "
          f"deleted all in {out['delete_all_s']} s")


if __name__ == "__main__":
    main()
