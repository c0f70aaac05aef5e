#!/usr/bin/python3
"""Small command-line contracts of the three binaries: --version (one line
on stdout, exit 0, the same version from the VERSION file in all three) and
init-config taking its options in any order."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BIN = os.path.dirname(SERVER_BIN)


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def test_version(t):
    want = open(os.path.join(REPO, "VERSION")).read().strip()
    seen = set()
    for name in ("opensandbox-server", "execd", "osb-sandbox-init"):
        r = run(os.path.join(BIN, name), "--version")
        lines = r.stdout.splitlines()
        m = re.match(r"^%s (\S+)( \(git [0-9a-f]{7,40}\))?$" % re.escape(name),
                     lines[0] if lines else "")
        t.ok(r.returncode == 0 and len(lines) == 1 and m and m.group(1) == want,
             "%s --version: exit 0, one line, version %s" % (name, want),
             "rc %s stdout %r stderr %r" % (r.returncode, r.stdout, r.stderr[-300:]))
        seen.add(lines[0].split(" ", 1)[1] if lines else "")
    t.eq(len(seen), 1, "the three binaries print the same version", seen)


def test_init_config_order(t):
    d = tempfile.mkdtemp(prefix="osb-cli-")
    try:
        for i, args in enumerate((["PATH", "--example", "native"], ["--example", "native", "PATH"],
                                  ["PATH", "--example=native"], ["PATH"])):
            path = os.path.join(d, "c%d.toml" % i)
            argv = [path if a == "PATH" else a for a in args]
            r = run(SERVER_BIN, "init-config", *argv)
            t.ok(r.returncode == 0 and os.path.exists(path) and "usage" not in r.stderr,
                 "init-config %s" % " ".join(args), r.stderr[-300:])
        r = run(SERVER_BIN, "init-config", os.path.join(d, "x.toml"), "--example", "bogus")
        t.ok(r.returncode != 0 and "unknown example 'bogus'" in r.stderr and
             not os.path.exists(os.path.join(d, "x.toml")),
             "init-config PATH --example bogus: refused, nothing written", r.stderr)
        r = run(SERVER_BIN, "init-config", os.path.join(d, "y.toml"), "extra")
        t.ok(r.returncode == 2 and "usage" in r.stderr, "init-config with two paths: usage, 2")
    finally:
        subprocess.run(["rm", "-rf", d])


t.run(test_version, t)
t.run(test_init_config_order, t)
t.done()
