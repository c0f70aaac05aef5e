#!/usr/bin/python3
"""make deb (docs/server.md, "Install and run as a service"): the package
installs, upgrades, removes and purges cleanly in throwaway roots, never in
this machine's own.

- With systemd "running": a root dpkg chroots into for the maintainer
  scripts, holding the few programs they use, /run/systemd/system and a
  systemctl that records its calls. The scripts start the service on
  install, restart it on upgrade, stop it and end its sandboxes on removal;
  purge removes the config, the API key, the enablement and the state dir
  without crossing into a mount inside it, and leaves the root as it was.
- Without systemd, as when dpkg works on another root (DPKG_ROOT, scripts
  run outside it): no systemctl call, the enablement is the symlink, purge
  leaves the root as it was.
- The unit: ExecStart's program, its config and the environment file are
  where the package puts them, the settings sandboxes need across restarts
  are there, and systemd-analyze verify passes on the installed root.
- The installed server reads the installed config."""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F401

t = TAP()
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
UNIT = "opensandbox-server.service"
UNIT_PATH = "lib/systemd/system/" + UNIT
WANTS = "etc/systemd/system/multi-user.target.wants/" + UNIT
# What the maintainer scripts run, from this machine, with their libraries.
TOOLS = ["sh", "rm", "rmdir", "mv", "ln", "mkdir", "od", "tr", "cat"]
SYSTEMCTL = "#!/bin/sh\necho \"$*\" >>/tmp/systemctl.log\n"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def make_deb():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    san = ["SAN=1"] if BUILD == "build/san" else []
    r = subprocess.run(["make", "-s", "BUILD=" + BUILD] + san + ["deb"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    lines = r.stdout.strip().split("\n")
    deb = os.path.join(ROOT, lines[-1]) if r.returncode == 0 and lines[-1].endswith(".deb") \
        else None
    t.ok(deb and os.path.exists(deb), "make deb builds a package", (r.stdout + r.stderr)[-2000:])
    return deb


def listing(top):
    """Every path under top but dpkg's own database and log, with its kind."""
    out = {}
    for d, dirs, names in os.walk(top):
        rel = os.path.relpath(d, top)
        if rel.startswith("var/lib/dpkg") or rel.startswith("var/log"):
            continue
        for n in dirs + names:
            p = os.path.join(d, n)
            st = os.lstat(p)
            kind = "l" if stat.S_ISLNK(st.st_mode) else "d" if stat.S_ISDIR(st.st_mode) else "f"
            out[os.path.normpath(os.path.join(rel, n))] = kind
    return out


def new_root(prefix):
    r = tempfile.mkdtemp(prefix=prefix)
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "tmp"):
        os.makedirs(os.path.join(r, d))
    for f in ("status", "available"):
        open(os.path.join(r, "var/lib/dpkg", f), "w").close()
    return r


def copy_in(r, path):
    dst = os.path.join(r, path.lstrip("/"))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if not os.path.exists(dst):
        shutil.copy2(path, dst)


def chroot_root():
    """A root the scripts can run in: merged /usr as Debian's, the tools and
    their libraries, /dev/null and /dev/urandom, a recording systemctl."""
    r = new_root("osb-pkg-chroot-")
    os.makedirs(os.path.join(r, "usr/bin"))
    os.makedirs(os.path.join(r, "usr/sbin"))
    os.makedirs(os.path.join(r, "usr/lib"))
    for link in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(r, "usr", link), exist_ok=True)
        os.symlink("usr/" + link, os.path.join(r, link))
    for tool in TOOLS:
        path = shutil.which(tool, path=PATH)
        shutil.copy2(os.path.realpath(path), os.path.join(r, "usr/bin", tool))
        ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for lib in re.findall(r"(/\S+) \(0x", ldd):
            copy_in(r, lib)
    with open(os.path.join(r, "usr/bin/systemctl"), "w") as f:
        f.write(SYSTEMCTL)
    os.chmod(os.path.join(r, "usr/bin/systemctl"), 0o755)
    os.makedirs(os.path.join(r, "dev"))
    os.mknod(os.path.join(r, "dev/null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(r, "dev/urandom"), 0o444 | stat.S_IFCHR, os.makedev(1, 9))
    os.makedirs(os.path.join(r, "run/systemd/system"))
    own_top_dirs(r)
    return r


def own_top_dirs(r):
    """On a real system base-files owns /, /lib, /usr... and dpkg never
    removes them with our package: record such an owner in the root."""
    with open(os.path.join(r, "var/lib/dpkg/status"), "w") as f:
        f.write("Package: base-files\nStatus: install ok installed\nPriority: required\n"
                "Section: admin\nMaintainer: test\nArchitecture: all\nVersion: 1\n"
                "Description: the top directories of the test root\n\n")
    with open(os.path.join(r, "var/lib/dpkg/info/base-files.list"), "w") as f:
        f.write("\n".join(["/.", "/bin", "/sbin", "/lib", "/lib64", "/usr", "/usr/bin",
                           "/usr/sbin", "/usr/lib", "/usr/lib64"]) + "\n")


def dpkg(r, *args, chrootless=False):
    cmd = ["dpkg", "--root=" + r, "--log=/dev/null", "--force-depends"]
    if chrootless:
        cmd.append("--force-script-chrootless")
    env = dict(os.environ, PATH=PATH)
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=env,
                          timeout=120)


def calls(r):
    p = os.path.join(r, "tmp/systemctl.log")
    out = open(p).read().split("\n")[:-1] if os.path.exists(p) else []
    if os.path.exists(p):
        os.unlink(p)
    return out


def package_files(deb):
    out = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    return [line.split()[5].lstrip("./") for line in out.split("\n")
            if line.startswith("-") or line.startswith("l")]


def read_key(r):
    with open(os.path.join(r, "etc/opensandbox/server.env")) as f:
        m = re.search(r"^OPENSANDBOX_SERVER_API_KEY=([0-9a-f]+)$", f.read(), re.M)
    return m and m.group(1)


def unit_settings(r):
    out = {}
    with open(os.path.join(r, UNIT_PATH)) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                out.setdefault(k, v)
    return out


def check_unit(r):
    u = unit_settings(r)
    argv = u.get("ExecStart", "").split()
    prog = argv[0] if argv else ""
    t.ok(os.access(os.path.join(r, prog.lstrip("/")), os.X_OK),
         "unit: ExecStart's program %s is installed" % prog)
    cfg = argv[argv.index("--config") + 1] if "--config" in argv else ""
    t.ok(cfg and os.path.isfile(os.path.join(r, cfg.lstrip("/"))),
         "unit: its --config %s is installed" % cfg)
    envf = u.get("EnvironmentFile", "").lstrip("-")
    t.ok(envf and os.path.isfile(os.path.join(r, envf.lstrip("/"))),
         "unit: its EnvironmentFile %s was made" % envf)
    want = {"KillMode": "process", "Delegate": "yes", "StateDirectory": "opensandbox",
            "TasksMax": "infinity"}
    t.eq({k: u.get(k) for k in want}, want, "unit: sandboxes outlive restarts, own cgroups, "
         "no task cap, the state dir")
    with open(os.path.join(r, cfg.lstrip("/"))) as f:
        text = f.read()
    t.ok('\nstate_dir = "/var/lib/opensandbox"\n' in text,
         "config: state_dir is the unit's StateDirectory")
    verify(r, prog)
    return cfg


def verify(r, prog):
    """systemd-analyze verify on the installed unit, its program taken from
    the throwaway root (--root would want a whole system's units)."""
    if not shutil.which("systemd-analyze"):
        t.skip("systemd-analyze verify", "no systemd-analyze")
        return
    scratch = tempfile.mkdtemp(prefix="osb-pkg-unit-")
    try:
        with open(os.path.join(r, UNIT_PATH)) as f:
            text = f.read().replace("ExecStart=" + prog, "ExecStart=" + os.path.join(r, prog[1:]))
        copy = os.path.join(scratch, UNIT)
        with open(copy, "w") as f:
            f.write(text)
        v = subprocess.run(["systemd-analyze", "verify", "--man=no", copy],
                           capture_output=True, text=True, timeout=60)
        t.ok(v.returncode == 0 and not v.stderr.strip(), "systemd-analyze verify passes",
             v.stdout + v.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_server(r, cfg):
    """The installed server runs and reads the installed config (its state
    dir moved to a scratch directory, not this machine's /var/lib)."""
    server = os.path.join(r, "usr/bin/opensandbox-server")
    v = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=30)
    t.ok(v.returncode == 0 and v.stdout.startswith("opensandbox-server "),
         "the installed server runs", v.stdout + v.stderr)
    scratch = tempfile.mkdtemp(prefix="osb-pkg-state-")
    try:
        with open(os.path.join(r, cfg.lstrip("/"))) as f:
            text = f.read().replace('"/var/lib/opensandbox"', '"%s/state"' % scratch)
        copy = os.path.join(scratch, "config.toml")
        with open(copy, "w") as f:
            f.write(text)
        v = subprocess.run([server, "--config", copy, "image", "list"], capture_output=True,
                           text=True, timeout=60)
        t.ok(v.returncode == 0 and "host" in v.stdout,
             "the installed server reads the packaged config (image list)", v.stdout + v.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def with_systemd(deb):
    r = chroot_root()
    try:
        before = listing(r)
        res = dpkg(r, "-i", deb)
        t.ok(res.returncode == 0, "systemd: dpkg -i into a throwaway root", res.stdout + res.stderr)
        missing = [p for p in package_files(deb) if not os.path.lexists(os.path.join(r, p))]
        t.eq(missing, [], "every file of the package is installed")
        key = read_key(r)
        mode = os.stat(os.path.join(r, "etc/opensandbox/server.env")).st_mode & 0o777
        t.ok(key and len(key) == 64 and mode == 0o600, "an API key was made, root's only (%o)"
             % mode)
        t.eq(calls(r), ["daemon-reload", "enable " + UNIT, "start " + UNIT],
             "install: the service is enabled and started")
        cfg = check_unit(r)
        check_server(r, cfg)

        res = dpkg(r, "-i", deb)
        t.ok(res.returncode == 0, "systemd: the package again (an upgrade)", res.stderr)
        t.eq(calls(r), ["daemon-reload", "try-restart " + UNIT],
             "upgrade: the service is restarted if it runs, not enabled again")
        t.eq(read_key(r), key, "upgrade: the API key is kept")

        # A state dir as a server leaves it, with a volume still mounted.
        vol = os.path.join(r, "var/lib/opensandbox/sandboxes/x/vol")
        os.makedirs(vol)
        open(os.path.join(r, "var/lib/opensandbox/opensandbox.db"), "w").close()
        subprocess.run(["mount", "-t", "tmpfs", "osb-pkg-test", vol], check=True)
        try:
            open(os.path.join(vol, "data"), "w").close()
            purge_with_mount(r, deb, vol, before)
        finally:
            subprocess.run(["umount", vol])
        shutil.rmtree(os.path.join(r, "var/lib/opensandbox"), ignore_errors=True)
        t.eq(listing(r), before, "after purge the root is as before the install")
    finally:
        shutil.rmtree(r, ignore_errors=True)


def purge_with_mount(r, deb, vol, before):
    res = dpkg(r, "-r", "opensandbox")
    t.ok(res.returncode == 0, "systemd: dpkg -r", res.stdout + res.stderr)
    t.eq(calls(r), ["stop " + UNIT, "kill --kill-who=all --signal=SIGKILL " + UNIT,
                    "daemon-reload"], "remove: the service is stopped and its sandboxes ended")
    left = [p for p in package_files(deb) if os.path.lexists(os.path.join(r, p))]
    t.eq(left, ["etc/opensandbox/config.toml"], "remove: only the conffile stays")
    t.ok(os.path.exists(os.path.join(r, "etc/opensandbox/server.env")),
         "remove: the API key stays")
    res = dpkg(r, "-P", "opensandbox")
    t.ok(res.returncode == 0, "systemd: dpkg -P", res.stdout + res.stderr)
    t.eq(calls(r), ["daemon-reload"], "purge: systemd forgets the unit")
    t.ok(not os.path.exists(os.path.join(r, "etc/opensandbox")) and
         not os.path.lexists(os.path.join(r, WANTS)), "purge: config, key and enablement gone")
    t.ok(os.path.exists(os.path.join(vol, "data")), "purge: a mount in the state dir is not "
         "crossed", res.stderr)
    t.ok("holds mounts; left in place" in res.stderr, "purge: ... and says so")
    gone = not os.path.exists(os.path.join(r, "var/lib/opensandbox/opensandbox.db"))
    t.ok(gone, "purge: the rest of the state dir is gone")


def without_systemd(deb):
    r = new_root("osb-pkg-root-")
    try:
        before = listing(r)
        res = dpkg(r, "-i", deb, chrootless=True)
        t.ok(res.returncode == 0, "DPKG_ROOT: dpkg -i (no systemctl: it would fail here)",
             res.stdout + res.stderr)
        t.eq(os.readlink(os.path.join(r, WANTS)) if os.path.lexists(os.path.join(r, WANTS))
             else None, "/" + UNIT_PATH, "DPKG_ROOT: enabled by its symlink")
        t.ok(read_key(r), "DPKG_ROOT: the API key is made in the root")
        os.makedirs(os.path.join(r, "var/lib/opensandbox/images"))
        res = dpkg(r, "-P", "opensandbox", chrootless=True)
        t.ok(res.returncode == 0, "DPKG_ROOT: dpkg -P", res.stdout + res.stderr)
        t.eq(listing(r), before, "DPKG_ROOT: after purge the root is as before the install")
    finally:
        shutil.rmtree(r, ignore_errors=True)


def test_man_pages():
    """The two man pages render without a warning and cover every option
    their program's --help lists."""
    for page, prog in (("opensandbox-server.8", "opensandbox-server"), ("execd.1", "execd")):
        path = os.path.join(ROOT, "docs", page)
        if shutil.which("groff"):
            r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                               capture_output=True, text=True)
            t.ok(r.returncode == 0 and not r.stderr.strip(), "%s renders without a warning"
                 % page, r.stderr)
        text = open(path).read().replace("\\-", "-")
        helptext = subprocess.run([os.path.join(ROOT, BUILD, "bin", prog), "--help"],
                                  capture_output=True, text=True).stdout
        opts = sorted(set(re.findall(r"(--[a-z][a-z-]+)", helptext)))
        t.eq([o for o in opts if o not in text], [], "%s covers every option of %s --help"
             % (page, prog))


def main():
    test_man_pages()
    deb = make_deb()
    if not deb:
        return
    with_systemd(deb)
    without_systemd(deb)


t.run(main, timeout=900)
t.done()
