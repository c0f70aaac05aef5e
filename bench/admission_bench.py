"""Concurrent creates and [server] max_concurrent_creates (issue 12, "Concurrent
creates"; printed, not asserted).

For each network mode (none, nat) and each limit (--limits, default 1 2 4 0; 0 = no
limit), one server; bursts of C concurrent creates (--conc, default 10 20 50), each on
its own connection, raw HTTP, the host image, each timed the way the SDKs wait (POST,
the two endpoint lookups, execd /ping through the server proxy): first ready, p50, p90
and the burst's wall time; the rounds (--rounds) interleave the servers so that noise
hits them alike. Also, per mode, the serial p50 (--serial creates on the unlimited
server), and per burst:
  CPU per create: the server's utime+stime (with its reaped children) and the whole
    machine's busy time (/proc/stat; other work on the machine counts too) over the
    burst, divided by C;
  phases: the server's debug line of each ready sandbox (store commit, network attach,
    runtime call, until the runtime reported, execd /ping, store commit), medians.
Usage: admission_bench.py [--rounds 3] [--conc 10 20 50] [--limits 1 2 4 0] [--json]"""
import argparse, json, os, re, statistics, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from server_bench import Client, Server, pct  # noqa: E402
from serverlib import free_subnet  # noqa: E402  (a subnet no other server holds)

TICK = os.sysconf("SC_CLK_TCK")
PHASES = ["store", "network", "runtime call", "runtime done", "execd /ping", "store2"]
READY_RE = re.compile(r"ready in (\d+) us: store (\d+), network (\d+), runtime call (\d+), "
                      r"runtime done (-?\d+), execd /ping (\d+), store (\d+)")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime


def machine_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / TICK  # all but idle and iowait


def burst(srv, c):
    clients = [Client(srv) for _ in range(c)]
    for cl in clients:  # connect first: the burst times creates, not TCP handshakes
        cl.req("GET", "/health", auth=False)
    bar = threading.Barrier(c + 1)
    lat, errs = [None] * c, []

    def one(i):
        bar.wait()
        try:
            lat[i] = clients[i].create_ready()
        except Exception as e:  # counted, printed
            errs.append(str(e)[:200])

    ths = [threading.Thread(target=one, args=(i,)) for i in range(c)]
    for th in ths:
        th.start()
    log_pos = os.path.getsize(os.path.join(srv.tmp, "server.log"))
    cpu0, busy0 = proc_cpu_s(srv.proc.pid), machine_busy_s()
    t0 = time.perf_counter()
    bar.wait()
    for th in ths:
        th.join()
    wall = time.perf_counter() - t0
    cpu1, busy1 = proc_cpu_s(srv.proc.pid), machine_busy_s()
    with open(os.path.join(srv.tmp, "server.log"), errors="replace") as f:
        f.seek(log_pos)
        phases = [list(map(int, m.groups())) for m in READY_RE.finditer(f.read())]
    good = [x for x in lat if x]
    for sid, _ in good:
        clients[0].delete(sid)
    for cl in clients:
        cl.conn.close()
    secs = sorted(s for _, s in good)
    return {"ok": len(good), "failed": len(errs), "errors": errs[:3],
            "first_ms": secs[0] * 1000 if secs else None,
            "p50_ms": statistics.median(secs) * 1000 if secs else None,
            "p90_ms": pct(secs, 0.9) * 1000 if secs else None, "wall_ms": wall * 1000,
            "server_cpu_ms": (cpu1 - cpu0) * 1000 / c, "machine_cpu_ms": (busy1 - busy0) * 1000 / c,
            "phases_us": [statistics.median(p[i] for p in phases) for i in range(7)]
            if phases else None}


def serial(srv, n):
    """p50 ms, and CPU ms per create+delete (server process, whole machine)."""
    cl = Client(srv)
    secs = []
    cpu0, busy0 = proc_cpu_s(srv.proc.pid), machine_busy_s()
    for _ in range(n):
        sid, s = cl.create_ready()
        secs.append(s)
        cl.delete(sid)
    cpu1, busy1 = proc_cpu_s(srv.proc.pid), machine_busy_s()
    return (statistics.median(secs) * 1000, (cpu1 - cpu0) * 1000 / n, (busy1 - busy0) * 1000 / n)


def med(rows, k):
    v = [r[k] for r in rows if r[k] is not None]
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conc", type=int, nargs="+", default=[10, 20, 50])
    ap.add_argument("--limits", type=int, nargs="+", default=[1, 2, 4, 0])
    ap.add_argument("--serial", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    modes = {"none": lambda: '[network]\nmode = "none"',
             "nat": lambda: '[network]\nmode = "nat"\ndns_upstreams = ["127.0.0.1:9"]\n'
             'pool_size = 8\nsubnet = "%s"' % free_subnet()}
    servers = {}
    try:
        for m, extra in modes.items():
            for lim in a.limits:
                servers[(m, lim)] = Server(extra=extra(), server=(
                    f'log_level = "debug"\nmax_concurrent_creates = {lim}\n'
                    'admission_wait_seconds = 600'))
        res = {k: {c: [] for c in a.conc} for k in servers}
        ser = {m: serial(servers[(m, a.limits[-1])], a.serial) for m in modes}
        for _ in range(a.rounds):
            for c in a.conc:
                for k, srv in servers.items():
                    res[k][c].append(burst(srv, c))
    finally:
        for srv in servers.values():
            srv.stop()
    out = {"serial": {m: {"p50_ms": v[0], "server_cpu_ms": v[1], "machine_cpu_ms": v[2]}
                      for m, v in ser.items()}, "cpus": os.cpu_count(), "bursts": [
        {"network": m, "max_concurrent_creates": lim, "conc": c, "rounds": rows}
        for (m, lim), byc in res.items() for c, rows in byc.items()]}
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print(f"# online CPUs: {os.cpu_count()}; serial create-to-ready p50 (CPU per create+delete: "
          "server process | machine): " +
          ", ".join(f"{m} {v[0]:.1f} ms ({v[1]:.1f} | {v[2]:.1f} ms)" for m, v in ser.items()))
    print(f"# medians over {a.rounds} rounds; limit 0 = none; cpu = per create (server process | "
          "whole machine)")
    print("net  limit conc  ok/n     first    p50    p90   wall  | cpu srv  machine | phases us "
          "(store net rtcall rtdone ping store)")
    for b in out["bursts"]:
        rows = b["rounds"]
        ok = sum(r["ok"] for r in rows)
        ph = [r["phases_us"] for r in rows if r["phases_us"]]
        phs = " ".join("%d" % statistics.median(p[i] for p in ph) for i in range(1, 7)) if ph else "-"
        print(f"{b['network']:4} {b['max_concurrent_creates']:5} {b['conc']:4} "
              f"{ok:4}/{b['conc'] * len(rows):<4} {med(rows, 'first_ms'):6.1f} "
              f"{med(rows, 'p50_ms'):6.1f} {med(rows, 'p90_ms'):6.1f} {med(rows, 'wall_ms'):6.0f} | "
              f"{med(rows, 'server_cpu_ms'):6.2f} {med(rows, 'machine_cpu_ms'):8.2f} | {phs}")
        for r in rows:
            for e in r["errors"]:
                print("#   error:", e)


if __name__ == "__main__":
    main()
