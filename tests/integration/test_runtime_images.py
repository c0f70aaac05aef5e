#!/usr/bin/python3
"""Images of the native runtime (src/runtime/native/image.c): import of
root filesystem tars, including hostile ones (absolute paths, "..",
symlink and hardlink escapes, overlayfs xattrs), names, list, remove.
Drives the runtime through the driver of test_runtime.py."""
import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import TAP  # noqa: E402
from test_runtime import Driver, execd_is_static, skip_reason  # noqa: E402

INVALID, NOTFOUND, EXISTS = 1, 2, 3


def add_file(tf, name, data=b"x", mode=0o644, uid=0, gid=0, pax=None):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    if pax:
        ti.pax_headers = pax
    tf.addfile(ti, io.BytesIO(data))


def add_dir(tf, name, mode=0o755, pax=None):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE
    ti.mode = mode
    if pax:
        ti.pax_headers = pax
    tf.addfile(ti)


def add_link(tf, name, target, hard=False):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    ti.linkname = target
    tf.addfile(ti)


def add_dev(tf, name, major, minor):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.CHRTYPE
    ti.devmajor, ti.devminor = major, minor
    ti.mode = 0o666
    tf.addfile(ti)


class Tars:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="osb-tars-")
        self.n = 0

    def make(self, build, fmt=tarfile.PAX_FORMAT, compress=False):
        self.n += 1
        path = os.path.join(self.dir, "t%d.tar%s" % (self.n, ".gz" if compress else ""))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
            add_dir(tf, "./")
            add_dir(tf, "etc")
            add_file(tf, "etc/hostname", b"img\n")
            build(tf)
        data = buf.getvalue()
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if compress else data)
        return path


def leftovers(d):
    return [e for e in os.listdir(os.path.join(d.state, "images")) if e.startswith(".")]


def test_hostile(t, d, tars):
    victim = tempfile.mkdtemp(prefix="osb-victim-")
    tag = os.path.basename(victim)
    try:
        cases = [
            ("an absolute path",
             lambda tf: add_file(tf, "/tmp/%s-abs" % tag), "/tmp/%s-abs" % tag),
            ("a .. path",
             lambda tf: add_file(tf, "../../../../../../tmp/%s-dotdot" % tag),
             "/tmp/%s-dotdot" % tag),
            ("a write through an absolute symlink",
             lambda tf: (add_link(tf, "esc", victim), add_file(tf, "esc/pwned")),
             os.path.join(victim, "pwned")),
            ("a write through a relative symlink",
             lambda tf: (add_link(tf, "esc2", "../../../../../../.." + victim),
                         add_file(tf, "esc2/pwned2")), os.path.join(victim, "pwned2")),
            ("a write through a symlinked directory component",
             lambda tf: (add_dir(tf, "d"), add_link(tf, "d/up", "/"),
                         add_file(tf, "d/up/tmp/%s-viaroot" % tag)), "/tmp/%s-viaroot" % tag),
            ("a hardlink to an absolute host file",
             lambda tf: add_link(tf, "hl", "/etc/hostname", hard=True), None),
            ("a hardlink out with ..",
             lambda tf: add_link(tf, "hl2", "../../../../../../etc/passwd", hard=True), None),
        ]
        for name, build, host_path in cases:
            tar = tars.make(build)
            r = d.call("import", name="evil", tar=tar)
            t.ok(not r["ok"] and r["code"] == INVALID and r["error"],
                 "a tar with %s is refused" % name, r)
            if host_path:
                t.ok(not os.path.exists(host_path), "... and nothing is written to %s" % host_path)
            t.eq(leftovers(d), [], "... and nothing is left in images/")
            t.ok(not any(i["name"] == "evil" for i in d.call("images")["images"]),
                 "... and no image exists")
        t.eq(os.listdir(victim), [], "the victim directory is untouched")
        with open("/etc/hostname") as f:
            t.ok(f.read().strip() != "img", "host /etc/hostname is untouched")
        bad = os.path.join(tars.dir, "garbage.tar")
        with open(bad, "wb") as f:
            f.write(os.urandom(5000))
        r = d.call("import", name="garbage", tar=bad)
        t.ok(not r["ok"] and r["error"], "random bytes are refused", r)
        r = d.call("import", name="missing", tar="/nonexistent.tar")
        t.ok(not r["ok"] and "nonexistent" in r["error"], "a missing file is named", r)
        t.eq(leftovers(d), [], "failed imports leave nothing in images/")
    finally:
        shutil.rmtree(victim, ignore_errors=True)


def test_faithful(t, d, tars):
    def build(tf):
        add_file(tf, "bin/suid", b"#!/bin/sh\n", mode=0o4755, uid=1234, gid=4321)
        add_dir(tf, "dev")
        add_dev(tf, "dev/null", 1, 3)
        add_link(tf, "bin/abs", "/usr/bin/env")
        add_link(tf, "bin/hard", "bin/suid", hard=True)
        add_dir(tf, "opaque", pax={"SCHILY.xattr.trusted.overlay.opaque": "y",
                                   "SCHILY.xattr.user.keep": "yes"})
    tar = tars.make(build)
    r = d.call("import", name="faithful", tar=tar)
    t.ok(r["ok"], "import a tar with setuid files, owners, device nodes, links", r)
    # An import is a one-layer image in the store: images/<name>/image.json
    # names the layer, unpacked under layers/.
    with open(os.path.join(d.state, "images", "faithful", "image.json")) as f:
        layers = json.load(f)["layers"]
    t.eq(len(layers), 1, "an import is one layer")
    root = os.path.join(d.state, "layers", layers[0])
    st = os.lstat(os.path.join(root, "bin", "suid"))
    t.eq((oct(st.st_mode & 0o7777), st.st_uid, st.st_gid), (oct(0o4755), 1234, 4321),
         "modes and numeric owners are kept")
    st = os.lstat(os.path.join(root, "dev", "null"))
    t.ok(os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3, "device nodes are kept")
    t.eq(os.readlink(os.path.join(root, "bin", "abs")), "/usr/bin/env",
         "absolute symlinks are stored as they are (they resolve inside the sandbox)")
    t.eq(os.lstat(os.path.join(root, "bin", "hard")).st_ino,
         os.lstat(os.path.join(root, "bin", "suid")).st_ino, "hardlinks inside the image work")
    xattrs = os.listxattr(os.path.join(root, "opaque"))
    t.ok("trusted.overlay.opaque" not in xattrs, "overlayfs xattrs are dropped", xattrs)
    t.ok("user.keep" in xattrs, "other xattrs are kept", xattrs)
    if execd_is_static():
        sb = d.create("faithful-sb", image="faithful",
                      entrypoint=["/opt/opensandbox/execd", "--help"], wait=False)
        t.ok(sb.pid > 0, "a sandbox starts from an image without a shell")
        sb.destroy()
        d.sandboxes.remove(sb)
    tar = tars.make(lambda tf: add_file(tf, "gz-ok"), compress=True)
    r = d.call("import", name="gzipped", tar=tar)
    t.ok(r["ok"], "a gzip-compressed tar imports", r)


def test_names(t, d, tars):
    tar = tars.make(lambda tf: None)
    for bad in ["UPPER", "..", "a/../b", "a//b", "/abs", "-x", ".hidden", "a/", "a/.b",
                "sp ace", "x" * 201, ""]:
        r = d.call("import", name=bad, tar=tar)
        t.ok(not r["ok"] and r["code"] == INVALID, "image name %r is refused" % bad[:20], r)
    r = d.call("import", name="host", tar=tar)
    t.ok(not r["ok"] and r["code"] == INVALID, "`host` is reserved", r)
    r = d.call("import", name="library/busybox:1.36", tar=tar)
    t.ok(r["ok"], "a registry-style name imports", r)
    r = d.call("import", name="library/busybox:1.36", tar=tar)
    t.ok(not r["ok"] and r["code"] == EXISTS, "a second import of the same name is EXISTS", r)
    names = [i["name"] for i in d.call("images")["images"]]
    t.eq(names[0], "host", "the built-in host image is listed first")
    t.ok("library/busybox:1.36" in names, "the imported name is listed as given", names)
    t.eq(names[1:], sorted(names[1:]), "imported images are sorted by name")
    t.ok(all(i["created_ms"] > 0 for i in d.call("images")["images"]), "images have dates")
    if execd_is_static():
        sb = d.create("named", image="library/busybox:1.36",
                      entrypoint=["/opt/opensandbox/execd", "--help"], wait=False)
        t.ok(sb.pid > 0, "a sandbox starts from a registry-style name")
        sb.destroy()
        d.sandboxes.remove(sb)
    r = d.call("rmimage", name="host")
    t.ok(not r["ok"] and r["code"] == INVALID, "the host image cannot be removed", r)
    r = d.call("rmimage", name="never-imported")
    t.ok(not r["ok"] and r["code"] == NOTFOUND, "removing an unknown image is NOTFOUND", r)
    r = d.call("rmimage", name="library/busybox:1.36")
    t.ok(r["ok"], "remove", r)
    t.ok(not os.path.exists(os.path.join(d.state, "images", "library+busybox@1.36")),
         "its files are gone")
    t.eq(leftovers(d), [], "remove leaves nothing in images/")


def main():
    t = TAP()
    why = skip_reason()
    if why:
        t.skip("native runtime images", why)
        t.done()
    d = Driver()
    tars = Tars()
    try:
        t.run(test_hostile, t, d, tars, timeout=60)
        t.run(test_faithful, t, d, tars)
        t.run(test_names, t, d, tars)
    finally:
        d.close()
        shutil.rmtree(tars.dir, ignore_errors=True)
    t.done()


if __name__ == "__main__":
    main()
