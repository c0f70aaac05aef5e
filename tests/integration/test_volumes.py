"""Volumes (protocol.md 1.9, docs/volumes.md) on the real server: host volumes limited to
[storage] allowed_host_paths and resolved beneath them (a symlink to / inside an allowed
directory never mounts the host's root), readOnly, subPath, server-managed pvc volumes
(created on demand, shared, kept or removed with the sandbox, remembered across a
restart), ossfs refused, and mount paths that an image symlink cannot aim at the host."""
import os
import shutil
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BAD = "SANDBOX::INVALID_PARAMETER"
# OSB_TEST_RUNTIME=gvisor: what differs is in docs/internals/gvisor.md. Commands avoid
# coreutils' ls there (this runsc refuses its statx flags).
GVISOR = os.environ.get("OSB_TEST_RUNTIME") == "gvisor"


def sh(s, sid, cmd):
    """(stdout lines, stderr lines, exit code) of a shell command in the sandbox."""
    ev = s.execd(sid).sse("/command", json={"command": cmd}).events
    return stdout_lines(ev), stderr_lines(ev), exit_code(ev)


def host_vol(path, mount="/mnt/v", name="v", **kw):
    v = {"name": name, "mountPath": mount, "host": {"path": path}}
    v.update(kw)
    return v


def pvc_vol(claim, mount="/mnt/p", name="p", sub=None, ro=False, **pvc):
    v = {"name": name, "mountPath": mount, "readOnly": ro, "pvc": dict(claimName=claim, **pvc)}
    if sub:
        v["subPath"] = sub
    return v


class Host:
    """The host side: an allowed directory with data, a symlink to / and one to a
    directory outside it, and a directory outside the allowed one."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="osb-vol-")
        self.allowed = os.path.join(self.base, "allowed")
        self.outside = os.path.join(self.base, "outside")
        self.target = os.path.join(self.base, "target")  # the image symlink points here
        for d in ("data/sub/inner", "ro"):
            os.makedirs(os.path.join(self.allowed, d))
        os.makedirs(self.outside)
        os.makedirs(self.target)
        self.write("data/hello.txt", "hello from the host\n")
        self.write("data/sub/inner/deep.txt", "deep\n")
        self.write("ro/keep.txt", "keep\n")
        self.write("single.txt", "one file\n")
        with open(os.path.join(self.outside, "secret.txt"), "w") as f:
            f.write("outside\n")
        os.symlink("/", os.path.join(self.allowed, "evil"))
        os.symlink("/", os.path.join(self.allowed, "data", "rootlink"))
        os.symlink(self.outside, os.path.join(self.allowed, "data", "outlink"))
        os.symlink("../..", os.path.join(self.allowed, "data", "uplink"))

    def p(self, rel):
        return os.path.join(self.allowed, rel)

    def write(self, rel, text):
        with open(self.p(rel), "w") as f:
            f.write(text)

    def remove(self):
        shutil.rmtree(self.base, ignore_errors=True)


def test_host_rw(s, h):
    sb = s.new(volumes=[host_vol(h.p("data"), "/mnt/data", "data")])
    out, err, rc = sh(s, sb["id"], "cat /mnt/data/hello.txt && echo written > /mnt/data/new.txt "
                      "&& cd /mnt/data && echo *")
    t.eq(rc, 0, "commands in a host volume succeed (%r)" % err)
    t.eq(out[0], "hello from the host", "the host file is visible inside")
    with open(h.p("data/new.txt")) as f:
        t.eq(f.read(), "written\n", "a file written inside appears on the host")
    h.write("data/late.txt", "late\n")
    out, _, _ = sh(s, sb["id"], "cat /mnt/data/late.txt")
    t.eq(out, ["late"], "a file written on the host later is visible inside (a bind, not a copy)")
    out, _, _ = sh(s, sb["id"], "grep ' /mnt/data ' /proc/self/mounts")
    if GVISOR:
        t.skip("mounted nosuid,nodev", "gVisor's /proc/mounts does not list them (the host "
               "side is nosuid,nodev)")
    else:
        t.ok(out and "nosuid" in out[0] and "nodev" in out[0], "mounted nosuid,nodev", out)
    s.delete("/v1/sandboxes/" + sb["id"])
    os.unlink(h.p("data/new.txt"))
    os.unlink(h.p("data/late.txt"))


def test_host_readonly(s, h):
    sb = s.new(volumes=[host_vol(h.p("ro"), "/mnt/ro", "ro", readOnly=True)])
    out, err, rc = sh(s, sb["id"], "cat /mnt/ro/keep.txt; echo x > /mnt/ro/new.txt")
    t.eq(out, ["keep"], "a read-only volume is readable")
    t.ok(rc not in (0, None), "writing to it fails", (rc, err))
    t.ok(any("Read-only file system" in l for l in err), "with EROFS", err)
    _, err, rc = sh(s, sb["id"], "rm /mnt/ro/keep.txt")
    t.ok(rc not in (0, None), "deleting from it fails", err)
    t.ok(os.path.exists(h.p("ro/keep.txt")) and not os.path.exists(h.p("ro/new.txt")),
         "the host directory is unchanged")
    out, _, _ = sh(s, sb["id"], "mount -o remount,rw /mnt/ro 2>&1; echo y > /mnt/ro/y.txt 2>&1; "
                   "echo done")
    t.ok(not os.path.exists(h.p("ro/y.txt")), "remounting it read-write is not possible", out)
    s.delete("/v1/sandboxes/" + sb["id"])


def test_subpath_and_file(s, h):
    sb = s.new(volumes=[host_vol(h.p("data"), "/mnt/inner", "inner", subPath="sub/inner"),
                        host_vol(h.p("single.txt"), "/etc/single.txt", "one"),
                        host_vol(h.p("data"), "/mnt/inner/nested", "nested", readOnly=True)])
    out, err, rc = sh(s, sb["id"], "cat /mnt/inner/deep.txt /etc/single.txt "
                      "/mnt/inner/nested/hello.txt")
    t.eq(out, ["deep", "one file", "hello from the host"],
         "subPath, a single-file volume and a nested volume (parent mounted first)")
    t.ok(os.path.isdir(h.p("data/sub/inner/nested")),
         "the nested mount point was made inside the parent volume")
    s.delete("/v1/sandboxes/" + sb["id"])
    os.rmdir(h.p("data/sub/inner/nested"))


def test_host_refused(s, h):
    cases = [
        (host_vol(h.outside), 400, "VOLUME::HOST_PATH_NOT_ALLOWED", "a path outside the allowed "
         "directories"),
        (host_vol(h.allowed + "-sibling"), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a sibling sharing the prefix"),
        (host_vol("/"), 400, "VOLUME::HOST_PATH_NOT_ALLOWED", "the host root"),
        (host_vol(h.p("evil")), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a symlink to / inside the allowed directory"),
        (host_vol(h.p("evil/etc")), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a path through a symlink to /"),
        (host_vol(h.p("data/outlink")), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a symlink to a directory outside"),
        (host_vol(h.p("data/uplink")), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a relative symlink climbing out"),
        (host_vol(h.p("data"), subPath="rootlink"), 400, "VOLUME::HOST_PATH_NOT_ALLOWED",
         "a subPath that is a symlink to /"),
        (host_vol(h.p("data/sub"), subPath="../../ro"), 400, BAD, "'..' in subPath"),
        (host_vol(h.p("data"), subPath="/etc"), 400, BAD, "an absolute subPath"),
        (host_vol(h.p("data/../../outside")), 400, BAD, "'..' in host.path"),
        (host_vol(h.p("missing")), 400, "VOLUME::HOST_PATH_NOT_FOUND", "a missing path"),
        (host_vol(h.p("data"), subPath="nope"), 400, "VOLUME::HOST_PATH_NOT_FOUND",
         "a missing subPath"),
        (host_vol(h.p("data"), "/proc/x"), 400, BAD, "a mountPath under /proc"),
        (host_vol(h.p("data"), "/opt/opensandbox"), 400, BAD, "the runtime's own directory"),
        (host_vol(h.p("data"), "/"), 400, BAD, "mountPath /"),
    ]
    for vol, status, code, what in cases:
        r = s.create(volumes=[vol])
        t.is_error(r, status, code, "refused: " + what)
        if r.status == 202:
            s.delete("/v1/sandboxes/" + r.json()["id"])
    r = s.create(volumes=[host_vol(h.p("data"), "/a", "a"), host_vol(h.p("data"), "/b", "a")])
    t.is_error(r, 400, BAD, "duplicate volume names")
    t.ok("volumes[1].name" in r.text, "the error names the field", r.text)
    r = s.create(volumes=[{"name": "o", "mountPath": "/mnt/o", "ossfs": {
        "bucket": "bucket", "endpoint": "oss-cn-hangzhou.aliyuncs.com", "accessKeyId": "id",
        "accessKeySecret": "secret-key-123"}}])
    t.is_error(r, 400, "VOLUME::UNSUPPORTED_BACKEND", "ossfs is not supported")
    t.ok("secret-key-123" not in r.text, "the error does not echo the secret")
    t.eq(s.list_all(), [], "no sandbox record was left by the refusals")


def claim_dir(s, claim):
    return os.path.join(s.state_dir, "volumes", claim)


def test_pvc_shared(s):
    a = s.new(volumes=[pvc_vol("shared", "/work", storage="1Gi", storageClass="local",
                               accessModes=["ReadWriteMany"])])
    t.ok(os.path.isdir(os.path.join(claim_dir(s, "shared"), "data")), "the claim was created")
    _, err, rc = sh(s, a["id"], "echo from-a > /work/a.txt")
    t.eq(rc, 0, "write into the claim (%r)" % err)
    b = s.new(volumes=[pvc_vol("shared", "/data/w")])
    out, _, _ = sh(s, b["id"], "cat /data/w/a.txt; echo from-b > /data/w/b.txt")
    t.eq(out, ["from-a"], "a second sandbox sees the first one's file")
    out, _, _ = sh(s, a["id"], "cat /work/b.txt")
    t.eq(out, ["from-b"], "and the first sees the second's")
    c = s.new(volumes=[pvc_vol("shared", "/ro", ro=True, sub="deep/er")])
    _, err, rc = sh(s, c["id"], "cd /ro && echo x > /ro/x")
    t.ok(rc not in (0, None) and any("Read-only" in l for l in err), "read-only claim", err)
    t.ok(os.path.isdir(os.path.join(claim_dir(s, "shared"), "data", "deep", "er")),
         "a claim's missing subPath is created")
    for x in (a, b, c):
        s.delete("/v1/sandboxes/" + x["id"])
    t.ok(os.path.exists(os.path.join(claim_dir(s, "shared"), "data", "a.txt")),
         "the claim outlives its sandboxes (deleteOnSandboxTermination defaults to false)")
    d = s.new(volumes=[pvc_vol("shared", "/again", createIfNotExists=False)])
    out, _, _ = sh(s, d["id"], "cat /again/a.txt /again/b.txt")
    t.eq(out, ["from-a", "from-b"], "a later sandbox finds the data (createIfNotExists false)")
    s.delete("/v1/sandboxes/" + d["id"])


def test_pvc_missing_and_bad(s):
    r = s.create(volumes=[pvc_vol("never-made", createIfNotExists=False)])
    t.is_error(r, 400, "VOLUME::NOT_FOUND", "createIfNotExists false and no such claim")
    t.ok("never-made" in r.text, "the error names the claim", r.text)
    t.ok(not os.path.exists(claim_dir(s, "never-made")), "nothing was created")
    t.is_error(s.create(volumes=[pvc_vol("Bad_Name")]), 400, BAD, "claimName must be a DNS name")
    t.is_error(s.create(volumes=[pvc_vol("x", storage="1GB")]), 400, BAD, "bad storage size")
    os.makedirs(os.path.join(claim_dir(s, "trap"), "data"))
    os.symlink("/", os.path.join(claim_dir(s, "trap"), "data", "root"))
    t.is_error(s.create(volumes=[pvc_vol("trap", sub="root/etc")]), 400,
               "VOLUME::HOST_PATH_NOT_ALLOWED", "a claim subPath through a symlink to /")


def test_pvc_delete_on_termination(s):
    lone = s.new(volumes=[pvc_vol("lone", deleteOnSandboxTermination=True)])
    sh(s, lone["id"], "mkdir -p /mnt/p/a/b && ln -s / /mnt/p/a/root && echo y > /mnt/p/a/b/y")
    s.delete("/v1/sandboxes/" + lone["id"])
    t.ok(not os.path.exists(claim_dir(s, "lone")), "a claim is removed with the sandbox that "
         "created it")
    t.ok(os.path.isdir("/etc") and os.path.exists("/etc/passwd"),
         "removing it did not follow the symlink to /")
    first = s.new(volumes=[pvc_vol("both", deleteOnSandboxTermination=True)])
    other = s.new(volumes=[pvc_vol("both")])
    sh(s, first["id"], "echo x > /mnt/p/x")
    s.delete("/v1/sandboxes/" + first["id"])
    t.ok(os.path.exists(os.path.join(claim_dir(s, "both"), "data", "x")),
         "kept while another sandbox uses the claim")
    s.delete("/v1/sandboxes/" + other["id"])
    t.ok(os.path.exists(claim_dir(s, "both")), "kept after that (the other did not ask)")
    pre = s.new(volumes=[pvc_vol("both", deleteOnSandboxTermination=True)])
    s.delete("/v1/sandboxes/" + pre["id"])
    t.ok(os.path.exists(os.path.join(claim_dir(s, "both"), "data", "x")),
         "a claim that existed before the request is never removed")


def test_pvc_restart(s):
    """The claims a sandbox asked to delete are remembered across a restart."""
    sb = s.new(volumes=[pvc_vol("persist", deleteOnSandboxTermination=True)])
    s.restart()
    t.ok(os.path.isdir(claim_dir(s, "persist")), "the claim survives a restart")
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "delete after the restart")
    t.ok(not os.path.exists(claim_dir(s, "persist")),
         "the restarted server still removes the claim with the sandbox")


def test_pvc_ttl(s):
    sb = s.new(timeout=1, volumes=[pvc_vol("ttl-claim", deleteOnSandboxTermination=True)])
    t.ok(wait_for(lambda: s.get_sbx(sb["id"]).status == 404, timeout=15), "the sandbox expired")
    t.ok(not os.path.exists(claim_dir(s, "ttl-claim")), "its claim went with it")


def make_symlink_image(s, h):
    """An image (busybox) whose /escape is an absolute symlink to a host directory and
    whose /etcl points at /etc."""
    bb = shutil.which("busybox") or "/bin/busybox"
    tar = os.path.join(s.tmp, "escape.tar")
    with tarfile.open(tar, "w") as tf:
        tf.add(bb, "bin/busybox")
        for name in ("sh", "tail", "echo", "cat", "ls", "grep"):
            ti = tarfile.TarInfo("bin/" + name)
            ti.type, ti.linkname = tarfile.SYMTYPE, "busybox"
            tf.addfile(ti)
        # the symlink's target exists inside the image too, as a directory
        parts = h.target.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            ti = tarfile.TarInfo("/".join(parts[:i]))
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            tf.addfile(ti)
        for name, target in (("escape", h.target), ("etcl", "/etc"), ("up", "../../../.."),
                             ("dangling", h.target + "-missing")):
            ti = tarfile.TarInfo(name)
            ti.type, ti.linkname = tarfile.SYMTYPE, target
            tf.addfile(ti)
    import subprocess
    r = subprocess.run([SERVER_BIN, "--config", s.config, "image", "import", "vol-escape", tar],
                       capture_output=True, text=True, timeout=60)
    return r


def test_mountpath_symlink(s, h):
    with open(EXECD_BIN, "rb") as f:
        if b"ld-linux" in f.read(8192):
            t.skip("mountPath through image symlinks", "execd is dynamically linked")
            return
    r = make_symlink_image(s, h)
    t.ok(r.returncode == 0, "import an image with symlinks aimed at the host", r.stderr)
    before = os.listdir(h.target)
    sb = s.new(image={"uri": "vol-escape"}, volumes=[
        host_vol(h.p("data"), "/escape/vol", "esc"),
        host_vol(h.p("ro"), "/etcl/volx", "etc", readOnly=True),
        host_vol(h.p("data/sub"), "/up/upvol", "up")])
    out, err, rc = sh(s, sb["id"], "cat /escape/vol/hello.txt /etcl/volx/keep.txt "
                      "/up/upvol/inner/deep.txt")
    t.eq(out, ["hello from the host", "keep", "deep"],
         "volumes mounted through the image's symlinks are reachable inside (%r)" % err)
    t.eq(os.listdir(h.target), before, "nothing was created in the host directory the "
         "image's symlink names")
    t.ok(not os.path.exists("/etc/volx"), "nothing was created in the host's /etc")
    t.ok(not os.path.exists("/upvol"), "nothing was created at the host's /")
    s.delete("/v1/sandboxes/" + sb["id"])
    r = s.create(image={"uri": "vol-escape"}, volumes=[host_vol(h.p("data"), "/dangling/x")])
    if GVISOR:  # runsc makes the path inside the root instead
        t.skip("a mountPath through a dangling image symlink fails", "runsc resolves it in the "
               "sandbox's root and creates it there")
        if r.status == 202:
            s.delete("/v1/sandboxes/" + r.json()["id"])
    else:
        t.ok(r.status >= 400 and "volume `v`" in r.text,
             "a mountPath through a dangling image symlink fails, naming the volume", r.text)
    t.ok(not os.path.exists(h.target + "-missing"), "and creates nothing on the host")
    import subprocess
    subprocess.run([SERVER_BIN, "--config", s.config, "image", "rm", "vol-escape"],
                   capture_output=True, timeout=60)


def main():
    h = Host()
    try:
        extra = "[storage]\nallowed_host_paths = [%s]\n" % ('"%s"' % h.allowed)
        with Server(min_timeout=1, extra=extra) as s:
            t.run(test_host_rw, s, h)
            t.run(test_host_readonly, s, h)
            t.run(test_subpath_and_file, s, h)
            t.run(test_host_refused, s, h, timeout=60)
            t.run(test_pvc_shared, s, timeout=60)
            t.run(test_pvc_missing_and_bad, s)
            t.run(test_pvc_delete_on_termination, s, timeout=60)
            t.run(test_pvc_restart, s, timeout=60)
            t.run(test_pvc_ttl, s, timeout=60)
            t.run(test_mountpath_symlink, s, h, timeout=60)
        with Server(min_timeout=1) as s:
            t.is_error(s.create(volumes=[host_vol(h.p("data"))]), 400,
                       "VOLUME::HOST_PATH_NOT_ALLOWED", "no allowed_host_paths: host volumes refused")
    finally:
        h.remove()


t.run(main, timeout=500)
t.done()
