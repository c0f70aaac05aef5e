#!/usr/bin/python3
"""execd as PID 1 in a busybox-only root (DESIGN.md 2, 9): a static binary
that starts the entrypoint as its child, reaps orphans, keeps serving after
the entrypoint exits, forwards SIGTERM to a running entrypoint and shuts down
on SIGTERM once none is running (src/execd/main.c).

Each case builds a fresh rootfs with scripts/make-busybox-rootfs.sh and runs
  unshare --mount --pid --fork --kill-child sh -c \
    'mount --rbind /dev R/dev; mount -t proc proc R/proc;
     exec chroot R /opt/opensandbox/execd --port N -- ENTRYPOINT...'
in the host network namespace, so the test reaches it on loopback."""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403
from osbtest import descendants  # noqa: E402

t = TAP()
SCRIPT = os.path.join(REPO, "scripts", "make-busybox-rootfs.sh")
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C"}


def can_unshare():
    if os.geteuid() != 0:
        return "needs root for unshare/chroot/mount"
    if not shutil.which("unshare") or not shutil.which("chroot"):
        return "unshare/chroot not installed"
    r = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c",
                        "mount -t tmpfs none /mnt && true"], capture_output=True, timeout=10)
    if r.returncode != 0:
        return "unshare --mount --pid not permitted here: %s" % r.stderr.decode().strip()
    return None


def make_root():
    d = tempfile.mkdtemp(prefix="osb-bbroot-")
    t0 = time.monotonic()
    r = subprocess.run([SCRIPT, d], capture_output=True, env=dict(os.environ, EXECD_BIN=EXECD_BIN),
                       timeout=30)
    if r.returncode != 0:
        raise RuntimeError("make-busybox-rootfs failed: %s" % r.stderr.decode())
    return d, time.monotonic() - t0


def remove_root(d):
    # The mounts live in the child's private mount namespace; never recurse
    # into a directory that is still a mount point in ours.
    with open("/proc/self/mountinfo") as f:
        if any(" %s" % d in line for line in f):
            return
    shutil.rmtree(d, ignore_errors=True)


def launcher(root, entry, bind_dev=True):
    def argv(port):
        inner = "exec chroot %s /opt/opensandbox/execd --port %d -- %s" % (
            shlex.quote(root), port, " ".join(shlex.quote(a) for a in entry))
        setup = "mount -t proc proc %s/proc && " % shlex.quote(root)
        if bind_dev:
            setup = "mount --rbind /dev %s/dev && " % shlex.quote(root) + setup
        return ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation",
                "private", "sh", "-c", setup + inner]
    return argv


class Pid1(Execd):
    """Execd under unshare+chroot; .root is the rootfs, .host_pid execd's pid
    in our pid namespace."""

    def __init__(self, entry, bind_dev=True):
        self.root, self.build_time = make_root()
        Execd.__init__(self, argv=launcher(self.root, entry, bind_dev), env=ENV)
        self.host_pid = None

    def start(self):
        Execd.start(self)
        wait_for(self._find_pid, 60)
        return self

    def _find_pid(self):
        for p in descendants(self.proc.pid):
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    if f.read().split(b"\0")[0] == b"/opt/opensandbox/execd":
                        self.host_pid = p
                        return True
            except OSError:
                pass
        return False

    def stop(self):
        # unshare ignores SIGTERM while it waits for its child, and execd
        # forwards SIGTERM to a running entrypoint: SIGKILL PID 1, which
        # ends the whole pid namespace; unshare then exits with the signal.
        try:
            if self.host_pid and self.proc.poll() is None:
                try:
                    os.kill(self.host_pid, signal.SIGKILL)
                except OSError:
                    pass
            return Execd.stop(self)
        finally:
            remove_root(self.root)

    def run(self, cmd, timeout=20):
        res = self.sse("/command", json={"command": cmd}, timeout=timeout)
        return res, "\n".join(stdout_lines(res.events)), exit_code(res.events)


def proc_table(pids):
    out = {}
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[p] = (comm, fields[0], int(fields[1]))
    return out


def is_static():
    r = subprocess.run(["file", "-L", EXECD_BIN], capture_output=True, text=True)
    return "statically linked" in r.stdout or "static-pie linked" in r.stdout, r.stdout.strip()


def sanitizer_build():
    # `make check` builds build/san/bin/execd dynamically (ASan needs it).
    return os.environ.get("BUILD", "build").rstrip("/").endswith("san") or "/san/" in EXECD_BIN


def test_static():
    static, out = is_static()
    if sanitizer_build():
        t.skip("`file execd` says statically linked", "sanitizer builds link dynamically")
        return
    t.ok(static, "`file build/bin/execd` says statically linked", out)


def test_pid1_basics():
    entry = ["/bin/sh", "-c", "sleep 1000"]
    with Pid1(entry) as x:
        t.diag("busybox rootfs built in %.0f ms" % (x.build_time * 1000))
        t.is_empty_ok(x.get("/ping"), "/ping answers with execd as PID 1")
        res, out, code = x.run("cat /proc/1/cmdline | tr '\\0' ' '; echo; echo $$")
        lines = out.splitlines()
        t.ok(code == 0 and lines and lines[0].startswith("/opt/opensandbox/execd --port"),
             "PID 1 inside is execd", res.raw[-500:])
        res, out, code = x.run(
            "for d in /proc/[0-9]*; do echo \"$(basename $d) $(sed -n 's/^PPid:\\t*//p' "
            "$d/status) $(tr '\\0' ' ' < $d/cmdline)\"; done")
        rows = [l.split(" ", 2) for l in out.splitlines() if l.strip()]
        entry_rows = [r for r in rows if len(r) == 3 and r[2].strip() == "/bin/sh -c sleep 1000"
                      or len(r) == 3 and r[2].strip() == "sleep 1000"]
        t.ok(entry_rows and all(r[1] == "1" for r in entry_rows[:1]),
             "the entrypoint runs as a child of PID 1", out)
        res, out, code = x.run("ps -o pid,ppid,args")
        ps_rows = [l.split(None, 2) for l in out.splitlines()[1:] if l.strip()]
        t.ok(any(r[1] == "1" and r[2].strip() == "sleep 1000" for r in ps_rows if len(r) == 3)
             and any(r[0] == "1" and "execd" in r[2] for r in ps_rows if len(r) == 3),
             "busybox ps: PID 1 is execd and the entrypoint's parent is 1", out)
        res, out, code = x.run("busybox | head -1; test -x /bin/busybox && echo has-busybox")
        t.ok(code == 0 and "has-busybox" in out and "BusyBox" in out,
             "commands run inside the busybox root", res.raw[-400:])
        res, out, code = x.run("cat /etc/os-release")
        t.ok(code not in (0, None), "/etc/os-release does not exist in the busybox root "
             "(exit %r)" % code, res.raw[-400:])
        res, out, code = x.run("command -v bash || echo no-bash")
        t.eq(out, "no-bash", "no bash in the root: commands fall back to sh")
        res, out, code = x.run("id -un; ls -ld / | awk '{print $3}'")
        t.eq((code, out), (0, "root\nroot"), "user names resolve from the image's /etc/passwd")
        r = x.get(qs("/files/info", {"path": "/etc/passwd"}))
        info = r.json().get("/etc/passwd", {}) if r.status == 200 else {}
        t.ok(info.get("owner") == "root" and info.get("group") == "root",
             "/files/info owner/group from /etc/passwd without NSS", r)


def test_zombies():
    with Pid1(["/bin/sh", "-c", "sleep 1000"]) as x:
        # Double forks: the middle shell exits at once, so each sleep is
        # re-parented to PID 1 and must be reaped there when it ends.
        res, out, code = x.run("for i in 1 2 3 4 5 6 7 8 9 10; do (sleep 0.1 &) ; done; "
                               "sh -c 'sleep 0.2 & exec true'; (exec sleep 1.01 &); "
                               "sh -c 'sh -c \"exit 7\" & sh -c \"exit 8\" & exit 0'; echo spawned")
        t.ok(code == 0 and out == "spawned", "orphan-making command ran", res.raw[-400:])
        def long_orphan():
            for p, (comm, st, pp) in proc_table(descendants(x.host_pid)).items():
                try:
                    with open("/proc/%d/cmdline" % p, "rb") as f:
                        if f.read() == b"sleep\x001.01\x00":
                            return pp
                except OSError:
                    pass
            return None
        t.eq(long_orphan(), x.host_pid, "a double-forked child is re-parented to PID 1 (execd)")

        def no_zombies():
            tab = proc_table(descendants(x.host_pid))
            return long_orphan() is None and not [p for p, (c, st, pp) in tab.items() if st == "Z"]
        t.ok(wait_for(no_zombies, 60, 0.05), "orphans exited and were reaped: no zombies left",
             proc_table(descendants(x.host_pid)))
        res, out, code = x.run("cat /proc/[0-9]*/stat 2>/dev/null | grep -c ') Z ' || true")
        t.eq(out.strip(), "0", "no zombie visible from inside either")
        t.ok(x.alive(), "execd still serving")


def test_entrypoint_exits():
    with Pid1(["/bin/sh", "-c", "exit 3"]) as x:
        time.sleep(0.5)
        t.ok(x.alive(), "execd keeps serving after the entrypoint exited (status 3)")
        res, out, code = x.run("echo still-here")
        t.eq((code, out), (0, "still-here"), "commands still run")
        tab = proc_table(descendants(x.host_pid))
        t.ok(not [p for p, (c, st, pp) in tab.items() if st == "Z"],
             "the exited entrypoint was reaped", tab)


def test_missing_entrypoint():
    with Pid1(["/no/such/entrypoint"]) as x:
        time.sleep(0.2)
        t.ok(x.alive(), "an entrypoint that cannot start does not take execd down")


def test_sigterm():
    script = ("trap 'echo got-term > /tmp/term; exit 0' TERM; touch /tmp/trapped; "
              "while :; do sleep 0.05; done")
    with Pid1(["/bin/sh", "-c", script]) as x:
        t.ok(x.host_pid is not None, "found execd's pid from outside")
        if x.host_pid is None:
            return
        # A SIGTERM before the shell set its trap would just kill it.
        wait_for(lambda: os.path.exists(os.path.join(x.root, "tmp", "trapped")), 60)
        os.kill(x.host_pid, signal.SIGTERM)
        marker = os.path.join(x.root, "tmp", "term")
        t.ok(wait_for(lambda: os.path.exists(marker), 60), "SIGTERM to PID 1 reached the entrypoint")
        if os.path.exists(marker):
            t.eq(open(marker).read(), "got-term\n", "entrypoint's TERM trap ran")
        time.sleep(0.3)
        t.ok(x.alive(), "execd keeps serving after forwarding SIGTERM and the entrypoint's exit")
        res = x.sse("/command", json={"command": "echo after-term"})
        t.eq(stdout_lines(res.events), ["after-term"], "commands still run after the entrypoint "
                                                        "exited")
        # No entrypoint any more: SIGTERM now stops execd (and with it the sandbox).
        os.kill(x.host_pid, signal.SIGTERM)
        try:
            rc = x.proc.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        t.eq(rc, 0, "second SIGTERM (no entrypoint) shuts execd down cleanly, exit 0")


def test_no_dev_bind():
    with Pid1(["/bin/sh", "-c", "sleep 1000"], bind_dev=False) as x:
        t.is_empty_ok(x.get("/ping"), "execd runs with only the rootfs's own /dev nodes")
        res = x.sse("/command", json={"command": "echo ok-without-host-dev"})
        t.eq(stdout_lines(res.events), ["ok-without-host-dev"], "commands run (stdin /dev/null)")


def test_limit_flags():
    """--cpus and --memory (the runtime's limits for /metrics) refuse what is not a
    positive number, before execd listens or starts anything."""
    for args in (["--cpus", "0"], ["--cpus", "x"], ["--cpus", "2000"], ["--cpus", ""],
                 ["--memory", "0"], ["--memory", "-5"], ["--memory", "12k"],
                 ["--memory", "99999999999999999999999"]):
        p = subprocess.run([EXECD_BIN, "--port", "0", "--unix", "/nonexistent/x.sock"] + args,
                           capture_output=True, text=True, timeout=30)
        t.ok(p.returncode == 2 and ("invalid " + args[0]) in p.stderr,
             "execd %s: refused with a message (exit 2)" % " ".join(repr(a) for a in args),
             (p.returncode, p.stderr[-200:]))


def main():
    t.run(test_static)
    t.run(test_limit_flags)
    if not os.path.exists(EXECD_BIN):
        t.ok(False, "execd binary exists at %s" % EXECD_BIN)
        return
    why = can_unshare()
    if not why and not is_static()[0]:
        why = "execd is dynamically linked (sanitizer build): it cannot run in a busybox root"
    if why:
        t.skip("execd as PID 1", why)
        return
    t.run(test_pid1_basics)
    t.run(test_zombies)
    t.run(test_entrypoint_exits)
    t.run(test_missing_entrypoint)
    t.run(test_sigterm)
    t.run(test_no_dev_bind)


t.run(main, timeout=55)
t.done()
