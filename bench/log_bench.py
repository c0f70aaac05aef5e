"""The sandbox log pipe under a flood (printed, not asserted; the machine is noisy):

  flood     sandbox A writes N MiB (default 1024) of zeros to its stdout (through
            /proc/<entrypoint>/fd/1); wall time from the command to the end marker in
            the host log file, i.e. the server's drain rate, and the log's peak size.
  latency   meanwhile, sandbox B's /ping through the server proxy, p50/p90/p99,
            against the same measured with no flood.

Usage: log_bench.py [--mib 1024] [--pings 300]
Uses tests/integration/serverlib.Server (loopback, temporary state dir)."""
import argparse, os, statistics, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Server, exit_code  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000 if xs else float("nan")


def pings(s, sid, n):
    x, out = s.execd(sid), []
    for _ in range(n):
        t0 = time.perf_counter()
        x.get("/ping")
        out.append(time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--pings", type=int, default=300)
    a = ap.parse_args()
    with Server() as s:
        flood = s.new(entrypoint=["sh", "-c", "echo $$ > /tmp/ep; exec tail -f /dev/null"])
        other = s.new()
        idle = pings(s, other["id"], a.pings)
        log = os.path.join(s.state_dir, "sandboxes", flood["id"], "log")
        cmd = ("nohup sh -c 'dd if=/dev/zero bs=1M count=%d status=none; echo FLOOD-DONE' "
               ">/proc/$(cat /tmp/ep)/fd/1 2>&1 &" % a.mib)
        t0 = time.perf_counter()
        ev = s.execd(flood["id"]).sse("/command", json={"command": cmd}).events
        assert exit_code(ev) == 0, ev
        done, peak, busy = [False], [0], []

        def watch():
            while not done[0]:
                peak[0] = max(peak[0], os.stat(log).st_size)
                with open(log, "rb") as f:
                    f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                    if b"FLOOD-DONE" in f.read():
                        done[0] = time.perf_counter()
                time.sleep(0.005)
        w = threading.Thread(target=watch)
        w.start()
        while not done[0]:
            busy += pings(s, other["id"], 20)
        w.join()
        wall = done[0] - t0
        print("flood: %d MiB in %.2f s (%.0f MiB/s drained); log peak %d bytes"
              % (a.mib, wall, a.mib / wall, peak[0]))
        for name, xs in (("idle", idle), ("during flood", busy)):
            print("other sandbox /ping via proxy, %s: p50 %.2f ms p90 %.2f ms p99 %.2f ms (n=%d)"
                  % (name, pct(xs, 0.5), pct(xs, 0.9), pct(xs, 0.99), len(xs)))


main()
