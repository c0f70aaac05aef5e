"""Create and delete cost against the number of live sandboxes (issue #12,
"create and delete cost flat in the number of live sandboxes"); printed, not
asserted.

One server with [network] mode "nat" (so every sandbox holds a network slot
and its nftables state), idle sandboxes (tail -f /dev/null) kept alive. At
each level in --alive the server is filled to that many live sandboxes, then
--n times: one more sandbox is created until ready (POST until 202, then
execd /ping through the server proxy until 200) and deleted (DELETE round
trip). Printed per level: create-to-ready and delete p50/p90, and the
objects of the server's table `inet osb_<hash>` (tables' sets, chains, rules:
the part that must not grow with the slot count; set elements do).

--perf FILE records `perf record -a -g` over the creates of the last level
and prints the top kernel symbols (self time).

Usage: nft_bench.py [--alive 10,1000] [--n 30] [--perf /tmp/nft.perf]
OSB_SERVER_BIN (and EXECD_BIN) select another build, e.g. main's for a
before/after comparison. Needs root; no packet leaves the machine."""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Server, free_subnet, SERVER_BIN  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def table_name(state_dir):
    """inet osb_<hash4>, as src/net/netns.c names it (FNV-1a of the real
    path of the network state directory)."""
    h = 2166136261
    for c in os.path.realpath(state_dir).encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return "osb_%04x" % ((h ^ (h >> 16)) & 0xffff)


def find_table(s):
    names = re.findall(r"table inet (osb_[0-9a-f]{4})",
                       subprocess.run(["nft", "list", "tables"], capture_output=True,
                                      text=True).stdout)
    t = table_name(s.state_dir)  # the server's [native] state_dir
    return t if t in names else None


def links(prefix):
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return len(re.findall(r"^\d+: %s\d+[@:]" % prefix, out, re.M))


def objects(table):
    out = subprocess.run(["nft", "-a", "list", "table", "inet", table], capture_output=True,
                         text=True).stdout
    sets = len(re.findall(r"^\s*(?:set|map) ", out, re.M))
    chains = len(re.findall(r"^\s*chain ", out, re.M))
    handles = len(re.findall(r"# handle \d+", out))
    return sets, chains, handles - sets - chains - 1  # minus the table's own


def create_ready(s):
    t0 = time.monotonic()
    r = s.create(timeout=7200)
    if r.status != 202:
        raise RuntimeError("create -> %d %r" % (r.status, r.body[:300]))
    sid = r.json()["id"]
    x = s.execd(sid)
    while x.get("/ping", timeout=10).status != 200:
        time.sleep(0.001)
    return sid, (time.monotonic() - t0) * 1000


def delete(s, sid):
    t0 = time.monotonic()
    r = s.delete("/v1/sandboxes/" + sid)
    if r.status not in (200, 204):
        raise RuntimeError("delete -> %d %r" % (r.status, r.body[:300]))
    return (time.monotonic() - t0) * 1000


def perf_top(path, n=15):
    rep = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "symbol",
                          "--stdio", "-g", "none", "--percent-limit", "0.5"],
                         capture_output=True, text=True).stdout
    rows = [ln for ln in rep.splitlines() if "[k]" in ln]
    print("perf top kernel symbols (self, all CPUs, during the creates at the last level):")
    for ln in rows[:n]:
        print("  " + ln.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alive", default="10,1000")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--perf", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("# SKIP nft_bench: needs root")
        return
    levels = [int(x) for x in a.alive.split(",")]
    print("server %s" % SERVER_BIN)
    extra = ('[network]\nmode = "nat"\nsubnet = "%s"\npool_size = 4\n'
             'dns_upstreams = ["127.0.0.1:9"]\n' % free_subnet())
    s = Server(extra=extra, tmp_dir=os.path.expanduser("~"), userns_slots=max(levels) + 200,
               start_timeout=60).start()
    alive = []
    try:
        table = None
        for level in levels:
            while len(alive) < level:
                alive.append(create_ready(s)[0])
            table = table or find_table(s)
            before = objects(table) if table else None
            rec = None
            if a.perf and level == levels[-1]:
                rec = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", a.perf],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            cr, de = [], []
            for _ in range(a.n):
                time.sleep(0.05)  # let the pool refill, as between real creates
                sid, ms = create_ready(s)
                cr.append(ms)
                de.append(delete(s, sid))
            if rec:
                rec.send_signal(2)
                rec.wait()
            after = objects(table) if table else None
            print("alive %5d  create-to-ready p50 %6.1f ms p90 %6.1f ms   delete p50 %6.1f ms "
                  "p90 %6.1f ms   table %s: sets %s chains %s rules %s" %
                  (level, pct(cr, 0.5), pct(cr, 0.9), pct(de, 0.5), pct(de, 0.9), table,
                   *(before or ("?",) * 3)))
            if before != after:
                print("  (after the creates: sets %s chains %s rules %s)" % after)
        if a.perf:
            perf_top(a.perf)
    finally:
        for sid in alive:
            try:
                s.delete("/v1/sandboxes/" + sid)
            except Exception:
                pass
        # Deletes finish in the background, and the slots beyond the pool
        # are destroyed by the server's pool thread: stop once they are
        # gone, so the server's shutdown does not race a thousand teardowns.
        t0 = time.monotonic()
        prefix = "osb" + table_name(s.state_dir)[4:]
        while (s.list_all(pageSize=1) or links(prefix) > 8) and time.monotonic() < t0 + 600:
            time.sleep(0.2)
        print("teardown: %d sandboxes deleted and their slots destroyed in %.1f s" %
              (len(alive), time.monotonic() - t0))
        problems = s.stop()
        if problems:
            print("# teardown: " + "; ".join(problems))


if __name__ == "__main__":
    main()
