"""make install: `make install DESTDIR=<tmp> PREFIX=/usr` puts exactly the five
programs, libopensandbox (.a, .so.0 and its link), its header, the man pages
(osb.1, execd.1, opensandbox-server.8) and the docs in place, and the installed server runs (--version,
init-config) and finds the execd and osb-sandbox-init installed beside it:
with no execd_path in its config it creates a sandbox that runs a command."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverlib
from serverlib import *

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
t = TAP()


def make(*args):
    # Run as a fresh make: not as a sub-make of `make test` (whose jobserver
    # descriptors this process does not have).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    san = ["SAN=1"] if BUILD == "build/san" else []
    return subprocess.run(["make", "-s", "BUILD=" + BUILD] + san + list(args), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def listing(top):
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, top)] = os.stat(p).st_mode & 0o7777
    return out


def main():
    dest = tempfile.mkdtemp(prefix="osb-install-")
    try:
        check(dest)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def check(dest):
    r = make("install", "DESTDIR=" + dest, "PREFIX=/usr")
    if not t.ok(r.returncode == 0, "make install DESTDIR=... PREFIX=/usr succeeds",
                (r.stdout + r.stderr)[-2000:]):
        return
    bins = ["opensandbox-server", "execd", "osb-sandbox-init", "osb", "opensandbox-mcp"]
    docs = ["README.md"] + sorted(n for n in os.listdir(os.path.join(ROOT, "docs"))
                                  if n.endswith(".md") and n != "README.md")
    want = {"usr/bin/" + b: 0o755 for b in bins}
    want.update({"usr/share/doc/opensandbox/" + d: 0o644 for d in docs})
    want.update({"usr/lib/libopensandbox.a": 0o644, "usr/lib/libopensandbox.so.0": 0o755,
                 "usr/lib/libopensandbox.so": 0o755, "usr/include/osb/opensandbox.h": 0o644,
                 "usr/share/man/man1/osb.1": 0o644, "usr/share/man/man1/execd.1": 0o644,
                 "usr/share/man/man8/opensandbox-server.8": 0o644})
    t.eq(listing(dest), want, "installed files and modes are exactly the programs, the client "
         "library, its header, the man pages and the docs")
    so = os.path.join(dest, "usr/lib/libopensandbox.so")
    t.eq(os.readlink(so) if os.path.islink(so) else None, "libopensandbox.so.0",
         "libopensandbox.so links to the soname")
    for b in bins:
        with open(os.path.join(ROOT, BUILD, "bin", b), "rb") as f1, \
                open(os.path.join(dest, "usr/bin", b), "rb") as f2:
            t.ok(f1.read() == f2.read(), "installed %s is the built one" % b)

    bindir = os.path.join(dest, "usr", "bin")
    server = os.path.join(bindir, "opensandbox-server")
    built = subprocess.run([os.path.join(ROOT, BUILD, "bin", "opensandbox-server"), "--version"],
                           capture_output=True, text=True, timeout=30)
    r = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=30)
    t.ok(r.returncode == 0 and r.stdout.startswith("opensandbox-server ") and
         r.stdout == built.stdout, "installed server --version", r.stdout + r.stderr)

    cfg = os.path.join(dest, "sandbox.toml")
    r = subprocess.run([server, "init-config", cfg], capture_output=True, text=True, timeout=30)
    text = open(cfg).read() if os.path.exists(cfg) else ""
    t.ok(r.returncode == 0, "installed server init-config writes a config", r.stdout + r.stderr)
    for key, prog in (("execd_path", "execd"), ("init_path", "osb-sandbox-init")):
        m = re.search(r'^# %s = "([^"]*)"$' % key, text, re.M)
        t.eq(m and m.group(1), os.path.join(bindir, prog),
             "init-config: the default %s is the installed %s" % (key, prog))

    # The installed server with no execd_path in its config: it must find the
    # installed execd and osb-sandbox-init by itself.
    serverlib.SERVER_BIN = server
    s = Server()
    with open(s.config) as f:
        lines = [l for l in f.read().split("\n") if not l.startswith("execd_path")]
    with open(s.config, "w") as f:
        f.write("\n".join(lines))
    with s:  # leaving checks for leaked processes, mounts and cgroups
        sb = s.new()
        ev = s.execd(sb["id"]).sse("/command", json={"command": "echo installed"}).events
        t.eq(stdout_lines(ev), ["installed"], "the installed server runs a sandbox command")

    r = make("-n", "install", "DESTDIR=" + dest)
    t.ok(r.returncode == 0 and dest + "/usr/local/bin" in r.stdout,
         "PREFIX defaults to /usr/local", r.stdout[-1000:] + r.stderr[-500:])


t.run(main, timeout=900)
t.done()
