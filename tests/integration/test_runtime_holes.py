"""Two holes of the native runtime, attacked from inside real sandboxes (root, through
execd's /command via the real server):

1. The server must reach execd without following a path inside the sandbox: root in the
   sandbox replaces /run/opensandbox/execd.sock (then the whole directory) with symlinks to
   a unix socket this test serves on the host; proxied requests, endpoint use, a snapshot,
   a new sandbox's readiness pings and a server restart never connect to it, and the real
   execd keeps answering. The server's socket is not visible from the sandbox.
2. The sandbox log is fed through a pipe the server drains: 2 GiB written to the
   sandbox's stdout never make the host file pass its bound (sampled all along), other
   sandboxes keep working meanwhile, fallocate/ftruncate/lseek on the entrypoint's
   stdout and stderr do nothing to the host file, and output written while the server is
   down (more than the pipe holds) is captured after a restart, its writer alive."""
import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
LOG_MAX = 8 << 20  # OSB_RT_LOG_MAX_BYTES


def sh(s, sid, cmd, timeout=120):
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=timeout).events
    return exit_code(ev), "\n".join(stdout_lines(ev)).strip()


def sandbox_dir(s, sid):
    return os.path.join(s.state_dir, "sandboxes", sid)


def log_text(s, sid):
    """The recent log as diagnostics show it (the last 100 lines)."""
    r = s.get("/v1/sandboxes/%s/diagnostics/logs" % sid)
    return r.text if r.status == 200 else ""


def log_file(s, sid):
    with open(os.path.join(sandbox_dir(s, sid), "log"), errors="replace") as f:
        return f.read()


class HostSocket:
    """A unix socket on the host that records every connection it gets."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="osb-bait-")
        self.path = os.path.join(self.dir, "bait.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(16)
        self.hits = 0
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            c.close()

    def close(self):
        self.closed = True
        self.sock.close()
        shutil.rmtree(self.dir)


def test_socket_symlinks(s):
    bait = HostSocket()
    try:
        check_socket_symlinks(s, bait)
    finally:
        bait.close()


def plant(s, sid, cmd, what):
    code, out = sh(s, sid, cmd)
    t.eq(code, 0, "root in the sandbox plants " + what, out)


def requests_reach_execd(s, sid, bait, what):
    t.eq(s.execd(sid).get("/ping").status, 200, what + ": proxied /ping reaches execd")
    code, out = sh(s, sid, "echo real-execd")
    t.eq((code, out), (0, "real-execd"), what + ": a proxied command runs in the sandbox")
    ep = s.endpoint(sid)
    m = re.match(r"[^/]+(/.*)$", ep["endpoint"])
    r = s.get(m.group(1) + "/ping", headers=ep["headers"]) if m else None
    t.eq(r.status if r else None, 200, what + ": the endpoint's URL reaches execd", ep)
    t.eq(bait.hits, 0, what + ": the host socket got no connection")


def check_socket_symlinks(s, bait):
    sb = s.new()
    sid = sb["id"]
    ctl = os.path.join(sandbox_dir(s, sid), "execd.sock")
    st = os.lstat(ctl)
    t.ok(st.st_mode & 0o170000 == 0o140000 and
         os.stat(sandbox_dir(s, sid)).st_mode & 0o777 == 0o700,
         "the server's execd socket is a host socket in the 0700 sandbox dir")
    code, out = sh(s, sid, "test -e %s && echo visible; /usr/bin/python3 -c \"import socket;"
                   "socket.socket(socket.AF_UNIX).connect('%s')\" 2>/dev/null || echo unreachable;"
                   " ls -A /run/opensandbox" % (ctl, ctl))
    t.eq(out, "unreachable", "from the sandbox the server's socket path is neither visible "
         "nor reachable (and /run/opensandbox holds no socket)")
    plant(s, sid, "mkdir -p /run/opensandbox && rm -f /run/opensandbox/execd.sock && "
          "ln -s %s /run/opensandbox/execd.sock" % bait.path, "a socket symlink")
    requests_reach_execd(s, sid, bait, "socket symlink")
    plant(s, sid, "rm -rf /run/opensandbox && ln -s %s /run/opensandbox" % bait.dir,
          "a directory symlink")
    os.symlink(bait.path, os.path.join(bait.dir, "execd.sock"))
    requests_reach_execd(s, sid, bait, "directory symlink")
    r = s.post("/v1/sandboxes/%s/snapshots" % sid, json={"name": "holes"})
    t.eq(r.status, 202, "snapshot of the tampered sandbox accepted", r.text)
    snap = r.json().get("id", "") if r.status == 202 else ""
    ready = wait_for(lambda: s.get("/v1/snapshots/" + snap).json()["status"]["state"] != "Creating",
                     timeout=60, interval=0.05)
    t.eq(ready and s.get("/v1/snapshots/" + snap).json()["status"]["state"], "Ready",
         "the snapshot completes")
    # A sandbox made from the snapshot starts with the planted symlinks in its image: the
    # server's readiness pings still reach its own execd.
    r = s.create(image=..., entrypoint=..., snapshotId=snap, http_timeout=120)
    t.eq(r.status, 202, "a sandbox from the snapshot (symlinks included) gets ready", r.text)
    if r.status == 202:
        child = r.json()["id"]
        code, out = sh(s, child, "readlink /run/opensandbox; echo child-ok")
        t.eq(out.split("\n"), [bait.dir, "child-ok"], "it carries the symlink and answers")
        t.eq(s.delete("/v1/sandboxes/" + child).status, 204, "delete the snapshot's sandbox")
    s.restart()
    requests_reach_execd(s, sid, bait, "after a restart")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the tampered sandbox")
    t.eq(s.delete("/v1/snapshots/" + snap).status, 204, "delete the snapshot")


# The entrypoint of the log tests: tries to reach the host file through its stdout and
# stderr, then ticks; /tmp/burst (touched from the host) makes it write more than a pipe
# holds at once.
ENTRY = r"""
import errno, os, sys, time
def st(x):
    open('/tmp/state.new', 'w').write(x); os.rename('/tmp/state.new', '/tmp/state')
for fd in (1, 2):
    for name, f in (('posix_fallocate', lambda: os.posix_fallocate(fd, 0, 1 << 30)),
                    ('ftruncate', lambda: os.ftruncate(fd, 0)),
                    ('lseek', lambda: os.lseek(fd, 0, os.SEEK_SET))):
        try:
            f(); r = 'worked'
        except OSError as e:
            r = errno.errorcode.get(e.errno, str(e.errno))
        print('attack %s fd%d: %s' % (name, fd, r), flush=True)
st('%d ticking' % os.getpid())
n = 0
while True:
    if os.path.exists('/tmp/burst'):
        os.unlink('/tmp/burst'); st('%d bursting' % os.getpid())
        for k in range(100000):
            sys.stdout.write('burst %06d\n' % k)
        sys.stdout.write('burst-done\n'); sys.stdout.flush(); st('%d burst-done' % os.getpid())
    print('tick %d' % n, flush=True); n += 1; time.sleep(0.05)
"""


def host_pid(s, marker):
    for pid in sandbox_processes(s.state_dir):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0] == b"/usr/bin/python3" and marker in argv:
                return pid
        except OSError:
            pass
    return None


def disk_use(path):
    st = os.stat(path)
    return st.st_size, st.st_blocks * 512


def test_log_attacks(s):
    sb = s.new(entrypoint=["/usr/bin/python3", "-c", ENTRY])
    sid = sb["id"]
    log = os.path.join(sandbox_dir(s, sid), "log")
    t.ok(wait_for(lambda: "tick 1\n" in log_text(s, sid), timeout=30),
         "the entrypoint's output reaches the log (diagnostics)")
    text = log_file(s, sid)
    for fd in (1, 2):
        for name in ("posix_fallocate", "ftruncate", "lseek"):
            m = re.search(r"attack %s fd%d: (\S+)" % (name, fd), text)
            t.ok(m and m.group(1) != "worked", "%s on the entrypoint's fd %d fails" % (name, fd),
                 m and m.group(0))
    ep = host_pid(s, ENTRY.encode())
    t.ok(ep is not None, "the entrypoint's host pid")
    before = disk_use(log)
    code, out = sh(s, sid, "EP=$(cut -d' ' -f1 /tmp/state); for f in 1 2; do "
                   "fallocate -l 1G /proc/$EP/fd/$f 2>/dev/null && echo fallocated; "
                   "truncate -s 1G /proc/$EP/fd/$f 2>/dev/null && echo truncated; done; echo end")
    t.eq(out, "end", "fallocate/truncate of 1 GiB through /proc/<entrypoint>/fd/1,2 fail")
    after = disk_use(log)
    t.ok(after[1] < LOG_MAX and after[0] <= LOG_MAX,
         "the host log did not grow by 1 GiB (size, disk use: %s -> %s)" % (before, after))
    check_flood(s, sid, log)
    check_restart(s, sid, ep)
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete")
    t.ok(not os.path.exists(log), "the log goes with DELETE")


def check_flood(s, sid, log):
    other = s.new()
    code, _ = sh(s, sid, "EP=$(cut -d' ' -f1 /tmp/state); nohup sh -c 'dd if=/dev/zero bs=1M "
                 "count=2048 status=none; echo FLOOD-DONE' >/proc/$EP/fd/1 2>&1 &")
    t.eq(code, 0, "a 2 GiB write to the sandbox's stdout starts")
    peak = [0, 0]
    other_ok = [0, 0]

    def flood_done():
        size, used = disk_use(log)
        peak[0], peak[1] = max(peak[0], size), max(peak[1], used)
        if peak[0] > LOG_MAX:
            return True
        c, out = sh(s, other["id"], "echo alive")
        other_ok[0 if (c, out) == (0, "alive") else 1] += 1
        with open(log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
            return b"FLOOD-DONE" in f.read()
    t.ok(wait_for(flood_done, timeout=600, interval=0.01), "the flood ends (FLOOD-DONE logged)")
    t.ok(peak[0] <= LOG_MAX and peak[1] <= LOG_MAX + (1 << 20),
         "the host log never passed %d bytes (peak size %d, disk use %d)"
         % (LOG_MAX, peak[0], peak[1]))
    t.ok(other_ok[0] > 0 and other_ok[1] == 0,
         "another sandbox's commands kept working during the flood (%d ok, %d failed)"
         % tuple(other_ok))
    t.ok(wait_for(lambda: re.search(r"tick \d+\n", log_text(s, sid)[-65536:]) is not None,
                  timeout=30), "the log shows recent output after the flood")
    t.eq(s.delete("/v1/sandboxes/" + other["id"]).status, 204, "delete the other sandbox")


def wchan(pid):
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def touch_as_owner(path):
    """Create path as the owner of its directory: with user namespaces the
    sandbox's tmpfs takes no file from host root (an id it does not map).
    The directory is opened as root (/proc/<pid>/root needs it)."""
    dfd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    st = os.fstat(dfd)
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(st.st_gid, st.st_gid, st.st_gid)
            os.setresuid(st.st_uid, st.st_uid, st.st_uid)
            os.close(os.open(os.path.basename(path), os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dfd))
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(dfd)
    return os.waitpid(pid, 0)[1] == 0


def check_restart(s, sid, ep):
    root = "/proc/%d/root" % s.pid_of(sid)
    s.kill(signal.SIGKILL)
    # While the server is down the entrypoint writes 1.3 MB: more than the pipe holds.
    t.ok(touch_as_owner(root + "/tmp/burst"), "touch the entrypoint's /tmp/burst from the host")
    t.ok(wait_for(lambda: open(root + "/tmp/state").read().endswith("bursting"), timeout=30),
         "the burst starts while the server is down")
    t.ok(wait_for(lambda: wchan(ep).endswith("pipe_write"), timeout=30),
         "the writer waits on the full pipe (it is not killed by SIGPIPE)", wchan(ep))
    s.start()
    t.ok(wait_for(lambda: "burst-done" in open(root + "/tmp/state").read(), timeout=60),
         "after the restart the server drains the pipe again and the burst completes")
    text = log_file(s, sid)
    burst = re.findall(r"burst (\d{6})\n", text)
    t.eq((len(burst), burst[:1], burst[-1:]), (100000, ["000000"], ["099999"]),
         "every line written during the downtime is in the log")
    m = re.findall(r"tick (\d+)\n", text)
    last = int(m[-1]) if m else -1
    t.ok(wait_for(lambda: ("tick %d\n" % (last + 2)) in log_text(s, sid), timeout=30),
         "output after the restart is captured too")
    t.eq(host_pid(s, ENTRY.encode()), ep, "the writer is alive: the same process")


def main():
    with Server(min_timeout=1) as s:
        t.run(test_socket_symlinks, s, timeout=300)
        t.run(test_log_attacks, s, timeout=900)


t.run(main, timeout=1200)
t.done()
