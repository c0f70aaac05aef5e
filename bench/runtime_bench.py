#!/usr/bin/python3
"""Native runtime figures without the server (issue #3 "Performance"):
create (osb_rt_create -> callback, i.e. execd exec'd as PID 1),
create-to-ready (execd answers /ping on its unix socket), destroy, pause,
resume, and N concurrent creates. Uses the runtime driver of
tests/integration/test_runtime.py. Prints a table; asserts nothing.

  bench/runtime_bench.py [N]     (root; default N=50)"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from test_runtime import Driver, Sandbox, skip_reason  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def row(name, xs):
    print("%-28s n=%-4d p50 %7.2f ms   p90 %7.2f ms   p99 %7.2f ms   max %7.2f ms" % (
        name, len(xs), pct(xs, 50), pct(xs, 90), pct(xs, 99), max(xs)))


def main():
    why = skip_reason()
    if why:
        print("runtime bench skipped: %s" % why)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    image = "host"
    # Under $HOME like the default state dir (~/.opensandbox): on this VM's
    # ext4, metadata operations under /tmp are up to 40x slower.
    state = tempfile.mkdtemp(prefix=".osb-bench-", dir=os.path.expanduser("~"))
    d = Driver(state)
    try:
        print("# %s, image %s, %d cores" % (d.describe, image, os.cpu_count()))
        create, ready, destroy, pause, resume = [], [], [], [], []
        for i in range(3):  # warm up the page cache and the helper binary
            d.create("warm-%d" % i, image=image).destroy()
        d.sandboxes = []
        for i in range(n):
            t0 = time.monotonic()
            sb = d.create("b-%d" % i, image=image, wait=False)
            create.append(sb.info["ms"])
            sb.ready(10)
            ready.append((time.monotonic() - t0) * 1000)
            r = d.call("pause", id=sb.id)
            pause.append(r["ms"])
            r = d.call("resume", id=sb.id)
            resume.append(r["ms"])
            r = sb.destroy()
            destroy.append(r["ms"])
        d.sandboxes = []
        row("create (to execd exec)", create)
        row("create-to-ready (/ping)", ready)
        row("pause", pause)
        row("resume", resume)
        row("destroy", destroy)
        # concurrent creates: all requests written at once
        t0 = time.monotonic()
        seqs = [d.send("create", id="c-%d" % i, image=image,
                       entrypoint=["/bin/sh", "-c", "exec sleep 100000"], token="t")
                for i in range(n)]
        answers = [d._wait(s, 60) for s in seqs]
        wall = (time.monotonic() - t0) * 1000
        ok = sum(1 for a in answers if a.get("ok"))
        print("%d concurrent creates: %d ok, wall %.0f ms, per-create p50 %.1f ms" % (
            n, ok, wall, pct([a["ms"] for a in answers], 50)))
        for i, a in enumerate(answers):
            if a.get("ok"):
                a["id"] = "c-%d" % i
                d.sandboxes.append(Sandbox(d, a))
        for sb in d.sandboxes:
            sb.ready(10)
        time.sleep(0.5)
        mem = sorted(d.call("stats", id=sb.id)["memory"] for sb in d.sandboxes)
        if mem:
            print("idle sandbox memory (cgroup, execd + sleep): p50 %.1f MiB, max %.1f MiB" % (
                mem[len(mem) // 2] / 2**20, mem[-1] / 2**20))
        t0 = time.monotonic()
        for sb in list(d.sandboxes):
            sb.destroy()
        print("destroy %d: %.1f ms total" % (len(d.sandboxes), (time.monotonic() - t0) * 1000))
        d.sandboxes = []
    finally:
        d.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
