#!/usr/bin/python3
"""The gvisor backend's file systems (docs/internals/gvisor.md): the `host` image (the
host's programs bound read-only under the overlay), host volumes (resolved beneath their
allowed root on the host: read-only honoured, writes land on the host with their owner, a
symlink swapped in never leads outside) and filesystem snapshots (files written, deleted
and replaced in a gvisor sandbox come back in a new gvisor sandbox and in native ones,
with and without a user namespace, with their modes; also after a server restart). /tmp
is the overlay's, bounded by the disk limit. Real runsc, real server. Skips only when
runsc is missing.

Commands use python3 rather than coreutils: this runsc refuses statx with
AT_NO_AUTOMOUNT (EINVAL), which coreutils 9's ls and stat pass."""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
LIMITS = {"cpu": "1", "memory": "512Mi"}


def server(runtime, **kw):
    s = Server(**kw)
    with open(s.config) as f:
        lines = f.read().split("\n")
    i = lines.index("[runtime]") + 1
    if lines[i].startswith("type = "):
        del lines[i]
    lines.insert(i, "type = %s" % json.dumps(runtime))
    with open(s.config, "w") as f:
        f.write("\n".join(lines))
    return s


def py(x, code):
    """Runs python3 code in the sandbox; (exit code, stdout lines)."""
    ev = x.sse("/command", json={"command": "/usr/bin/python3 - <<'EOF'\n%s\nEOF" % code},
               timeout=120).events
    return exit_code(ev), stdout_lines(ev)


def running(s, r, what):
    if not t.eq(r.status, 202, "%s: create -> 202" % what, r.body[:400]):
        return None
    sid = r.json()["id"]
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] != "Pending", timeout=180)
    st = s.get_sbx(sid).json()["status"]
    return sid if t.eq(st["state"], "Running", "%s: running" % what, st) else None


def host_dirs():
    """The host directories the host image binds (real directories, not symlinks)."""
    return [d for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
            if os.path.isdir(d) and not os.path.islink(d)]


# ---------------------------------------------------------------- the host image

def test_host_image(s):
    sid = running(s, s.create(), "host image")
    if not sid:
        return
    x = s.execd(sid)
    t.eq(py(x, "import platform; print(platform.release())"), (0, ["4.4.0"]),
         "/usr/bin/python3 of the host runs under gVisor's kernel")
    rc, out = py(x, "import socket\n"
                    "name = open('/etc/hostname').read().strip()\n"
                    "ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')]\n"
                    "print(name == socket.gethostname(), socket.gethostbyname(name), len(ns))")
    t.eq((rc, out), (0, ["True 127.0.0.1 1"]), "/etc/hostname, hosts and resolv.conf are "
         "the sandbox's (one nameserver: its slot's resolver)")
    rc, out = py(x, "open('/etc/osb-g2-probe', 'w').write('inside')\n"
                    "os = __import__('os'); os.makedirs('/opt/app')\n"
                    "open('/opt/app/f', 'w').write('x')\n"
                    "print(open('/etc/osb-g2-probe').read(), open('/opt/app/f').read())")
    t.eq((rc, out), (0, ["inside x"]), "writes to /etc and /opt succeed inside")
    skel = os.path.join(s.state_dir, "images", "host", "rootfs")
    t.ok(not os.path.exists("/etc/osb-g2-probe") and not os.path.exists(skel + "/etc/osb-g2-probe")
         and not os.path.exists(skel + "/opt/app"),
         "they reach neither the host's /etc nor the host image's skeleton")
    probe = ("import errno, os\n"
             "for d in %r + ['/usr/bin', '/usr/lib', '/run/opensandbox-bin']:\n"
             "    try:\n"
             "        open(d + '/osb-g2-w', 'w')\n"
             "        print(d, 'WRITABLE')\n"
             "    except OSError as e:\n"
             "        print(d, errno.errorcode[e.errno])\n"
             "for f in ['/usr/bin/python3', '/run/opensandbox-bin/execd']:\n"
             "    try:\n"
             "        os.chmod(f, 0o777)\n"
             "        print(f, 'CHMOD')\n"
             "    except OSError as e:\n"
             "        print(f, errno.errorcode[e.errno])\n") % host_dirs()
    rc, out = py(x, probe)
    t.ok(rc == 0 and out and all(l.endswith(" EROFS") for l in out),
         "nothing of the host is writable inside, nor execd's binary (EROFS)", out)
    t.ok(not any(os.path.exists(d + "/osb-g2-w") for d in host_dirs() + ["/usr/bin", "/usr/lib"]),
         "and nothing was written on the host")
    t.eq(leaked_mounts(os.path.join(s.state_dir, "gvisor")), [],
         "the binds exist in no host mount namespace")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the host-image sandbox")


def test_tmp_is_the_root(s):
    """/tmp is the overlay's (not a tmpfs of the Sentry's): the disk limit bounds it."""
    sid = running(s, s.create(resourceLimits={"cpu": "1", "memory": "512Mi", "disk": "32Mi"}),
                  "disk-limited")
    if not sid:
        return
    rc, out = py(s.execd(sid), "import errno\n"
                               "f = open('/tmp/big', 'wb'); n = 0\n"
                               "try:\n"
                               "    while n < 64 << 20:\n"
                               "        f.write(b'x' * (1 << 20)); f.flush(); n += 1 << 20\n"
                               "    print('wrote', n)\n"
                               "except OSError as e:\n"
                               "    print(errno.errorcode[e.errno], n <= 32 << 20)")
    t.eq((rc, out), (0, ["ENOSPC True"]), "writing 64 MiB to /tmp fails with ENOSPC at the "
         "32 MiB disk limit")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the disk-limited sandbox")


# ---------------------------------------------------------------- volumes

def test_volumes(s, base):
    allowed = os.path.join(base, "allowed")
    for d in ("data", "ro"):
        os.makedirs(os.path.join(allowed, d))
    os.chmod(os.path.join(allowed, "data"), 0o777)
    with open(os.path.join(allowed, "data", "hello.txt"), "w") as f:
        f.write("from the host")
    with open(os.path.join(allowed, "ro", "keep.txt"), "w") as f:
        f.write("keep")
    with open(os.path.join(allowed, "app.conf"), "w") as f:
        f.write("key=value")
    vols = [{"name": "rw", "mountPath": "/mnt/rw", "host": {"path": allowed + "/data"}},
            {"name": "ro", "mountPath": "/mnt/ro", "host": {"path": allowed + "/ro"},
             "readOnly": True},
            {"name": "conf", "mountPath": "/etc/app.conf", "host": {"path": allowed + "/app.conf"}}]
    sid = running(s, s.create(volumes=vols), "volumes")
    if not sid:
        return
    x = s.execd(sid)
    rc, out = py(x, "import errno, os\n"
                    "print(open('/mnt/rw/hello.txt').read(), open('/mnt/ro/keep.txt').read(),\n"
                    "      open('/etc/app.conf').read())\n"
                    "open('/mnt/rw/by-root', 'w').write('r')\n"
                    "open('/mnt/rw/chowned', 'w').write('c'); os.chown('/mnt/rw/chowned', 1234, 1235)\n"
                    "for f in ('/mnt/ro/new', '/mnt/ro/keep.txt'):\n"
                    "    try:\n"
                    "        open(f, 'w'); print('WRITABLE')\n"
                    "    except OSError as e:\n"
                    "        print(errno.errorcode[e.errno])\n"
                    "pid = os.fork()\n"
                    "if pid == 0:\n"
                    "    os.setgid(2001); os.setuid(2000)\n"
                    "    open('/mnt/rw/by-user', 'w').write('u'); os._exit(0)\n"
                    "print(os.waitpid(pid, 0)[1])")
    t.eq((rc, out), (0, ["from the host keep key=value", "EROFS", "EROFS", "0"]),
         "volumes read inside; the read-only one refuses writes with EROFS")
    d = os.path.join(allowed, "data")

    def owner(name):
        try:
            st = os.stat(os.path.join(d, name))
            return st.st_uid, st.st_gid
        except OSError as e:
            return str(e)
    t.eq(owner("by-root"), (0, 0), "a file root wrote is on the host, root-owned")
    t.eq(owner("chowned"), (1234, 1235), "a chown inside is the host file's owner")
    t.eq(owner("by-user"), (2000, 2001), "a file uid 2000 wrote is owned by 2000 on the host")
    t.eq(sorted(os.listdir(os.path.join(allowed, "ro"))), ["keep.txt"],
         "the read-only volume's host directory is unchanged")
    t.eq(leaked_mounts(os.path.join(s.state_dir, "gvisor")), [],
         "the volumes' staging mounts exist in no host mount namespace")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the volume sandbox")
    t.ok(os.path.exists(os.path.join(d, "by-root")), "the volume's files stay on the host")


RENAME_EXCHANGE = 2


def exchange(a, b):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def test_volume_swap(s, base):
    """A thread keeps swapping the volume's directory with a symlink to / while sandboxes
    are created: each create is refused (by the server's check or the runtime's own
    resolution) or mounts the real directory, never the host's root."""
    allowed = os.path.join(base, "swap")
    os.makedirs(os.path.join(allowed, "sw"))
    with open(os.path.join(allowed, "sw", "marker"), "w") as f:
        f.write("inside")
    os.symlink("/", os.path.join(allowed, "other"))
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            exchange(os.path.join(allowed, "sw"), os.path.join(allowed, "other"))
            # Not a wait for anything: the swap rate. Flipping without a pause makes the
            # server's multi-step check refuse every time; at this rate some creates pass
            # it and meet a symlink only at the runtime's own resolution.
            stop.wait(0.0002)
    th = threading.Thread(target=swapper)
    th.start()
    seen = {"refused": 0, "runtime refused": 0, "mounted": 0, "escaped": 0, "other": 0}
    try:
        for i in range(12):
            r = s.create(volumes=[{"name": "sw", "mountPath": "/mnt/sw",
                                   "host": {"path": allowed + "/sw"}}])
            if r.status == 400:
                # the runtime's own resolution words it "volume `sw`: path ..."
                runtime = "volume `sw`" in r.text
                seen["runtime refused" if runtime else "refused"] += 1
                if runtime and "leads outside" not in r.text:
                    seen["other"] += 1
                    t.diag("runtime refusal: %s" % r.body[:300])
                continue
            if r.status != 202:
                seen["other"] += 1
                t.diag("create: %d %s" % (r.status, r.body[:300]))
                continue
            sid = r.json()["id"]
            wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] != "Pending", timeout=180)
            if s.get_sbx(sid).json()["status"]["state"] == "Running":
                rc, out = py(s.execd(sid), "import os; print(sorted(os.listdir('/mnt/sw')))")
                seen["mounted" if out == ["['marker']"] else "escaped"] += 1
                if out != ["['marker']"]:
                    t.diag("sandbox %s sees %r" % (sid, out))
            else:
                seen["other"] += 1
            s.delete("/v1/sandboxes/" + sid)
    finally:
        stop.set()
        th.join()
    t.ok(seen["escaped"] == 0 and seen["other"] == 0,
         "a symlink swapped in never mounts the host's root (%r)" % seen)
    t.diag("outcomes: %r (which check catches a swap depends on timing)" % seen)


# ---------------------------------------------------------------- snapshots

WRITE = r"""
import os, shutil
os.makedirs('/data/sub')
open('/data/a.txt', 'w').write('alpha')
os.chmod('/data/a.txt', 0o640)
open('/data/sub/x.sh', 'w').write('#!/bin/sh\necho x\n')
os.chmod('/data/sub/x.sh', 0o751)
os.chmod('/data/sub', 0o710)
os.remove('/etc/shells')                      # an image file deleted
open('/etc/os-release', 'w').write('replaced')  # an image file replaced
shutil.rmtree('/etc/profile.d')               # an image dir replaced: opaque
os.mkdir('/etc/profile.d')
open('/etc/profile.d/only.sh', 'w').write('only')
os.symlink('a.txt', '/data/link')
open('/data/gone', 'w').write('x'); os.remove('/data/gone')
print('written')
"""

CHECK = r"""
import os
def mode(p): return oct(os.lstat(p).st_mode & 0o7777)
print(open('/data/a.txt').read(), mode('/data/a.txt'), mode('/data/sub'), mode('/data/sub/x.sh'))
print(os.path.exists('/etc/shells'), open('/etc/os-release').read())
print(sorted(os.listdir('/etc/profile.d')), os.readlink('/data/link'), os.path.exists('/data/gone'))
"""
EXPECT = ["alpha 0o640 0o710 0o751", "False replaced", "['only.sh'] a.txt False"]


def snapshot(s, sid):
    r = s.post("/v1/sandboxes/%s/snapshots" % sid, json={})
    if not t.eq(r.status, 202, "snapshot a gvisor sandbox -> 202", r.body[:400]):
        return None
    snap = r.json()["id"]
    wait_for(lambda: s.get("/v1/snapshots/" + snap).json()["status"]["state"] != "Creating",
             timeout=120)
    st = s.get("/v1/snapshots/" + snap).json()["status"]
    return snap if t.eq(st["state"], "Ready", "the snapshot is Ready", st) else None


def test_snapshot(s):
    sid = running(s, s.create(), "snapshot source")
    if not sid:
        return None
    x = s.execd(sid)
    t.eq(py(x, WRITE), (0, ["written"]), "files written, deleted and replaced")
    snap = snapshot(s, sid)
    t.eq(py(x, "print(open('/data/a.txt').read())"), (0, ["alpha"]),
         "the source sandbox runs on after the snapshot")
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "and is Running, not Paused")
    if not snap:
        return None
    new = running(s, s.post("/v1/sandboxes", json={"snapshotId": snap, "resourceLimits": LIMITS,
                                                   "timeout": 600}, timeout=180),
                  "restore into gvisor")
    if new:
        t.eq(py(s.execd(new), CHECK), (0, EXPECT),
             "gvisor restore: contents, deletions, opaque dir, modes and links match")
    return snap


def test_after_restart(s, base):
    """A host-image sandbox with a volume survives a SIGKILLed server: re-adopted, its
    volume still bound, and a snapshot taken after the restart (the layer is found from
    runsc's records, not from the server's memory) restores its files."""
    d = os.path.join(base, "allowed", "restart")
    os.makedirs(d)
    sid = running(s, s.create(volumes=[{"name": "r", "mountPath": "/mnt/r",
                                        "host": {"path": d}}]), "restart source")
    if not sid:
        return
    t.eq(py(s.execd(sid), "open('/root/before', 'w').write('b'); print('ok')"), (0, ["ok"]),
         "a file written before the restart")
    s.restart()
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "re-adopted after a SIGKILL")
    x = s.execd(sid)
    t.eq(py(x, "open('/mnt/r/after', 'w').write('a'); print(open('/root/before').read())"),
         (0, ["b"]), "its root and volume work after the restart")
    t.ok(os.path.exists(os.path.join(d, "after")), "the volume still reaches the host")
    snap = snapshot(s, sid)
    if snap:
        new = running(s, s.post("/v1/sandboxes", json={"snapshotId": snap,
                                                       "resourceLimits": LIMITS,
                                                       "timeout": 600}, timeout=180),
                      "restore of the post-restart snapshot")
        if new:
            t.eq(py(s.execd(new), "print(open('/root/before').read())"), (0, ["b"]),
                 "the post-restart snapshot holds the file")


def test_restore_native(state_dir, snap):
    """The same snapshot in a native sandbox, with and without a user namespace (whose
    overlay reads user.overlay.* marks, the other trusted.overlay.*)."""
    for userns in ("true", "false"):
        what = "native restore (user_namespaces = %s)" % userns
        s = server("native", state_dir=state_dir, native="user_namespaces = %s" % userns)
        with s:
            new = running(s, s.post("/v1/sandboxes", json={"snapshotId": snap,
                                                           "resourceLimits": LIMITS,
                                                           "timeout": 600}, timeout=180), what)
            if new:
                ev = s.execd(new).sse("/command", json={
                    "command": "/usr/bin/python3 - <<'EOF'\n%s\nEOF" % CHECK}).events
                t.eq((exit_code(ev), stdout_lines(ev)), (0, EXPECT),
                     "%s of a gvisor snapshot: the same contents and modes" % what)
                s.delete("/v1/sandboxes/" + new)


def main():
    if not shutil.which("runsc"):
        t.skip("gvisor file systems", "runsc is not installed (apt-get install runsc)")
        return
    base = tempfile.mkdtemp(prefix="osb-gvfs-")
    os.chmod(base, 0o755)
    os.makedirs(os.path.join(base, "allowed"))
    os.makedirs(os.path.join(base, "swap"))
    try:
        state = os.path.join(base, "state")
        s = server("gvisor", state_dir=state, extra="[storage]\nallowed_host_paths = [%s, %s]\n" % (
            json.dumps(os.path.join(base, "allowed")), json.dumps(os.path.join(base, "swap"))))
        with s:
            t.run(test_host_image, s, timeout=300)
            t.run(test_tmp_is_the_root, s, timeout=300)
            t.run(test_volumes, s, base, timeout=300)
            t.run(test_volume_swap, s, base, timeout=600)
            snap = t.run(test_snapshot, s, timeout=300)
            t.run(test_after_restart, s, base, timeout=300)
            for sb in s.list_all():
                s.delete("/v1/sandboxes/" + sb["id"])
        if snap:
            t.run(test_restore_native, state, snap, timeout=300)
    finally:
        shutil.rmtree(base, ignore_errors=True)


main()
t.done()
