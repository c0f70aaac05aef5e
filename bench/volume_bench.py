"""The cost of pvc claims (printed, not asserted; docs/volumes.md):

  make      what the server spends making a claim (sparse image, mkfs.ext4,
            loop device, mount), from its log line "created volume ...: N ms",
            for 64Mi, 1Gi and 10Gi claims; p50/max over --n claims each.
  create    create-to-202 of a sandbox: without volumes, naming a new 1Gi
            claim, naming an existing claim; and the DELETE that removes a
            claim (deleteOnSandboxTermination). p50.

Usage: volume_bench.py [--n 10]. Starts its own test server (serverlib)."""
import argparse
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Server  # noqa: E402


def vol(claim, **pvc):
    return [{"name": "p", "mountPath": "/mnt/p", "pvc": dict(claimName=claim, **pvc)}]


def timed(fn):
    t0 = time.monotonic()
    r = fn()
    return (time.monotonic() - t0) * 1000, r


def p50(xs):
    return statistics.median(xs) if xs else float("nan")


def bench_make(s, n):
    for size in ("64Mi", "1Gi", "10Gi"):
        for i in range(n):
            sb = s.new(volumes=vol("m-%s-%d" % (size.lower(), i), storage=size,
                                   deleteOnSandboxTermination=True))
            s.delete("/v1/sandboxes/" + sb["id"])
        ms = [int(m) for m in re.findall(r"created volume m-%s-\d+: \d+ bytes, ext4 image, "
                                         r"(\d+) ms" % size.lower(), s.log_text())]
        print("make %-5s claim: p50 %6.1f ms  max %4d ms  (n=%d)" %
              (size, p50(ms), max(ms) if ms else -1, len(ms)))


def bench_create(s, n):
    rows = {"no volume": [], "new 1Gi claim": [], "existing claim": [],
            "delete + remove claim": []}
    s.new(volumes=vol("shared", storage="1Gi"))
    for i in range(n):
        ms, sb = timed(lambda: s.new())
        rows["no volume"].append(ms)
        s.delete("/v1/sandboxes/" + sb["id"])
        ms, sb = timed(lambda: s.new(volumes=vol("c-%d" % i, storage="1Gi",
                                                 deleteOnSandboxTermination=True)))
        rows["new 1Gi claim"].append(ms)
        ms, _ = timed(lambda: s.delete("/v1/sandboxes/" + sb["id"]))
        rows["delete + remove claim"].append(ms)
        ms, sb = timed(lambda: s.new(volumes=vol("shared")))
        rows["existing claim"].append(ms)
        s.delete("/v1/sandboxes/" + sb["id"])
    for k, xs in rows.items():
        print("create %-22s p50 %7.1f ms  (n=%d)" % (k + ":", p50(xs), len(xs)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    a = ap.parse_args()
    with Server(min_timeout=1) as s:
        bench_make(s, a.n)
        bench_create(s, a.n)


main()
