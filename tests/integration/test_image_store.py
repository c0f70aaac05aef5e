"""The image store (src/image) against a real docker-registry on loopback, through the
driver build/tests/image/test_pull_live (one store operation per run, JSON out).

Covers: gzip/zstd/plain layers, Docker and OCI manifests, a multi-arch index, the image
config, re-pulls fetching nothing, two concurrent pulls fetching each blob once, basic
auth (right and wrong password), unknown tags, a registry that is down, a corrupted blob,
hostile layers ("../", an absolute symlink written through), whiteouts and opaque dirs as
overlayfs spells them, setuid bits, hard links, import/list/rm/prune, copy_tree/to_tar.
"""
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import TAP  # noqa: E402
from registrylib import (MT, Registry, oci_archive_files, registry_available,  # noqa: E402
                         scratch_dir, tar_layer)

BUILD = os.environ.get("BUILD", "build")
DRIVER = os.path.join(BUILD, "tests", "image", "test_pull_live")
t = TAP()


def store(state, *args, env=None, stdin=None):
    e = dict(os.environ, OSB_TEST_REGISTRY="1")
    e.update(env or {})
    p = subprocess.run([DRIVER, state] + list(args), env=e, capture_output=True, text=True,
                       timeout=120)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        out = {"error": "DRIVER", "message": p.stdout + p.stderr}
    if isinstance(out, dict):
        out["_stderr"] = p.stderr
    return out


def pull(state, reg, ref, **env):
    e = {"OSB_TEST_INSECURE": reg.addr, "OSB_TEST_ARCH": "amd64", "OSB_TEST_OS": "linux"}
    e.update(env)
    return store(state, "pull", ref, env=e)


def leftovers(state):
    d = os.path.join(state, "layers")
    return [n for n in os.listdir(d) if n.startswith(".tmp-")]


def layer_dirs(state):
    d = os.path.join(state, "layers")
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def test_formats(reg, state):
    base = tar_layer([("file", "etc/os", b"base\n"), ("file", "bin/tool", b"x" * 5000, 0o4755),
                      ("hardlink", "bin/tool2", "bin/tool"), ("dir", "data/keep"),
                      ("file", "data/keep/a", b"a"), ("file", "data/gone", b"g"),
                      ("file", "opq/old", b"o")])
    top = tar_layer([("whiteout", "data/gone"), ("opaque", "opq"), ("file", "opq/new", b"n"),
                     ("file", "etc/zstd", b"z" * 100000)], compression="zstd")
    plain = tar_layer([("file", "plain", b"p")], compression=None)
    cfg = {"Env": ["PATH=/bin", "A=1"], "WorkingDir": "/w", "User": "1000:1000",
           "Entrypoint": ["/bin/tool"], "Cmd": ["-x"]}
    dig = reg.push_image("test/fmt", "v1", [base, top, plain], config=cfg)
    r = pull(state, reg, "%s/test/fmt:v1" % reg.addr)
    if not t.ok("error" not in r, "OCI image with gzip, zstd and plain layers pulls", r):
        return
    t.eq(r["name"], "%s/test/fmt:v1" % reg.addr, "stored under the canonical reference")
    t.eq(r["digest"], dig, "the manifest digest is recorded")
    t.eq(len(r["layers"]), 3, "three layers")
    t.eq((r["env"], r["workdir"], r["user"], r["entrypoint"], r["cmd"]),
         (cfg["Env"], "/w", "1000:1000", ["/bin/tool"], ["-x"]), "config parts recorded")
    t.ok(r["size"] > 100000, "size counts the layers", r["size"])
    l0, l1, l2 = r["layers"]
    st = os.lstat(os.path.join(l0, "bin/tool"))
    t.ok(st.st_mode & stat.S_ISUID, "setuid bit kept")
    t.eq(st.st_ino, os.lstat(os.path.join(l0, "bin/tool2")).st_ino, "hard link kept")
    wh = os.lstat(os.path.join(l1, "data/gone"))
    t.ok(stat.S_ISCHR(wh.st_mode) and wh.st_rdev == 0, "whiteout is a 0/0 character device")
    t.ok(not os.path.exists(os.path.join(l1, "data/.wh.gone")), "no .wh. file left")
    t.eq(os.getxattr(os.path.join(l1, "opq"), "trusted.overlay.opaque"), b"y",
         "opaque dir has trusted.overlay.opaque=y")
    t.ok(not os.path.exists(os.path.join(l1, "opq/.wh..wh..opq")), "no opaque marker file")
    t.eq(open(os.path.join(l1, "etc/zstd"), "rb").read(), b"z" * 100000, "zstd layer content")
    t.eq(open(os.path.join(l2, "plain"), "rb").read(), b"p", "uncompressed layer content")
    t.ok(all(not os.path.isabs(k) for k in
             json.load(open(os.path.join(state, "images", "%s+test+fmt@v1" % reg.addr.replace(":", "@"),
                                         "image.json")))["layers"]),
         "the record holds relative layer keys")
    got = store(state, "get", "%s/test/fmt:v1" % reg.addr)
    t.eq(got.get("layers"), r["layers"], "get returns absolute layer dirs")

    before = len(reg.requests())
    r2 = pull(state, reg, "%s/test/fmt:v1" % reg.addr)
    blob_gets = [q for q in reg.requests()[before:] if "/blobs/" in q[1] and q[0] == "GET"]
    t.ok("error" not in r2, "re-pull succeeds")
    t.eq(len(blob_gets), 1, "re-pull fetches only the config blob, no layer")
    t.ok("already present" in r2["_stderr"], "progress says the layers are present")

    # Docker v2 schema 2 manifest with the same layers.
    reg.push_image("test/docker", "v1", [base, plain], config=cfg, oci=False)
    r = pull(state, reg, "%s/test/docker:v1" % reg.addr)
    t.ok("error" not in r, "Docker v2 schema 2 manifest pulls", r)
    t.eq(r.get("layers", [None])[0], l0, "shared layer stored once")
    # Pull by digest.
    r = pull(state, reg, "%s/test/fmt@%s" % (reg.addr, dig))
    t.ok("error" not in r and r["digest"] == dig, "pull by digest", r)


def test_index(reg, state):
    a = tar_layer([("file", "arch", b"amd64")])
    b = tar_layer([("file", "arch", b"arm64")])
    da = reg.push_image("test/multi", "amd64-only", [a], arch="amd64")
    sa = reg.last_manifest_size
    db = reg.push_image("test/multi", "arm64-only", [b], arch="arm64")
    sb = reg.last_manifest_size
    reg.push_index("test/multi", "v1", [
        (db, sb, MT.OCI_MANIFEST, {"os": "linux", "architecture": "arm64", "variant": "v8"}),
        (da, sa, MT.OCI_MANIFEST, {"os": "linux", "architecture": "amd64"}),
        (da, sa, MT.OCI_MANIFEST, {"os": "unknown", "architecture": "unknown"})])
    ref = "%s/test/multi:v1" % reg.addr
    r = pull(state, reg, ref)
    t.ok("error" not in r and r["digest"] == da, "index: amd64 manifest picked", r)
    if "error" not in r:
        t.eq(open(os.path.join(r["layers"][0], "arch"), "rb").read(), b"amd64", "amd64 content")
    r = pull(state, reg, ref, OSB_TEST_ARCH="arm64")
    t.ok("error" not in r and r["digest"] == db, "index: arm64 picked (variant ignored)", r)
    r = pull(state, reg, ref, OSB_TEST_ARCH="s390x")
    t.eq(r.get("error"), "UNSUPPORTED", "no manifest for the platform: UNSUPPORTED")
    t.ok(ref in r.get("message", ""), "... the message names the image", r)


def test_errors(reg, state):
    r = pull(state, reg, "%s/test/fmt:nope" % reg.addr)
    t.eq(r.get("error"), "NOTFOUND", "unknown tag: NOTFOUND")
    t.ok("test/fmt:nope" in r.get("message", ""), "... names the image", r)
    r = pull(state, reg, "%s/test/never:v1" % reg.addr)
    t.eq(r.get("error"), "NOTFOUND", "unknown repository: NOTFOUND")
    r = pull(state, reg, "127.0.0.1:1/test/fmt:v1", OSB_TEST_INSECURE="127.0.0.1:1")
    t.eq(r.get("error"), "UNAVAILABLE", "registry down: UNAVAILABLE")
    r = store(state, "pull", "Bad Ref")
    t.eq(r.get("error"), "INVALID", "malformed reference: INVALID")

    good = tar_layer([("file", "ok", b"ok" * 1000)])
    bad = tar_layer([("file", "corrupt", b"c" * 3000)])
    reg.push_image("test/corrupt", "v1", [good, bad])
    bad_digest = reg.last_manifest["layers"][1]["digest"]
    reg.corrupt_blob(bad_digest)
    before = set(layer_dirs(state))
    r = pull(state, reg, "%s/test/corrupt:v1" % reg.addr)
    t.eq(r.get("error"), "INTEGRITY", "corrupted blob: INTEGRITY")
    t.ok("test/corrupt" in r.get("message", ""), "... names the image", r)
    new = set(layer_dirs(state)) - before
    t.ok("sha256-" + bad_digest[7:] not in new, "... no layer for the corrupted blob")
    t.eq(leftovers(state), [], "... no temporary left")
    t.eq(store(state, "get", "%s/test/corrupt:v1" % reg.addr).get("error"), "NOTFOUND",
         "... and no image record")

    # A size lie in the manifest.
    def lie(man):
        man["layers"][0]["size"] += 1
    reg.push_image("test/size", "v1", [tar_layer([("file", "s", b"s" * 10)])],
                   manifest_hook=lie)
    r = pull(state, reg, "%s/test/size:v1" % reg.addr)
    t.eq(r.get("error"), "INTEGRITY", "size mismatch: INTEGRITY")


def test_hostile(reg, state):
    cases = [
        ("dotdot", [("raw", "../escape", b"evil")], "../escape"),
        ("abs-symlink", [("symlink", "link", "/tmp"), ("raw", "link/written", b"evil")],
         "link/written"),
        ("rel-symlink", [("symlink", "up", "../../../../tmp"), ("raw", "up/written2", b"e")],
         "up/written2"),
        ("wh-dotdot", [("raw", "a/../../.wh.victim", b"")], ".wh.victim"),
    ]
    for name, entries, needle in cases:
        before = set(layer_dirs(state))
        reg.push_image("test/" + name, "v1", [tar_layer(entries)])
        r = pull(state, reg, "%s/test/%s:v1" % (reg.addr, name))
        t.ok(r.get("error") and needle in r.get("message", ""),
             "%s layer refused with a message naming the entry" % name, r)
        t.eq(set(layer_dirs(state)) - before, set(), "... no layer left (%s)" % name)
        t.eq(leftovers(state), [], "... no temporary left (%s)" % name)
    t.ok(not os.path.exists("/tmp/written") and not os.path.exists("/tmp/written2") and
         not os.path.exists(os.path.join(state, "layers", "escape")),
         "nothing was written outside")


def test_auth(state):
    with Registry(users={"alice": "s3cret"}) as reg:
        reg.push_image("private/img", "v1", [tar_layer([("file", "secret", b"x")])])
        ref = "%s/private/img:v1" % reg.addr
        r = pull(state, reg, ref)
        t.eq(r.get("error"), "DENIED", "no credentials: DENIED")
        r = pull(state, reg, ref, OSB_TEST_USER="alice", OSB_TEST_PASS="wrong-pw")
        t.eq(r.get("error"), "DENIED", "wrong password: DENIED")
        t.ok("wrong-pw" not in r.get("message", "") + r["_stderr"],
             "... the password appears nowhere")
        r = pull(state, reg, ref, OSB_TEST_USER="alice", OSB_TEST_PASS="s3cret")
        t.ok("error" not in r, "basic auth with the right password pulls", r)
        rec = open(os.path.join(state, "images", ref.replace("/", "+").replace(":", "@"),
                                "image.json")).read()
        t.ok("s3cret" not in rec and "alice" not in rec, "credentials are not stored")


def test_concurrent(reg, state):
    layers = [tar_layer([("file", "big%d" % i, os.urandom(300000))]) for i in range(3)]
    reg.push_image("test/conc", "v1", layers)
    digests = [d["digest"] for d in reg.last_manifest["layers"]]
    ref = "%s/test/conc:v1" % reg.addr
    env = dict(os.environ, OSB_TEST_REGISTRY="1", OSB_TEST_INSECURE=reg.addr)
    procs = [subprocess.Popen([DRIVER, state, "pull", ref], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    t.ok(all(p.returncode == 0 for p in procs), "three concurrent pulls succeed",
         [o[0][-300:] for o in outs])
    t.eq([reg.blob_gets(d) for d in digests], [1, 1, 1], "each layer blob fetched once")
    t.eq(leftovers(state), [], "no temporaries left")


def test_store_ops(reg, state):
    tmp = scratch_dir("osb-istore-tar-")
    try:
        tarp = os.path.join(tmp, "root.tar")
        with tarfile.open(tarp, "w") as tf:
            ti = tarfile.TarInfo("hello")
            ti.size = 5
            tf.addfile(ti, io.BytesIO(b"hello"))
        t.eq(store(state, "import", "my/img:1", tarp), {"_stderr": ""}, "import")
        t.eq(store(state, "import", "my/img:1", tarp).get("error"), "EXISTS",
             "import under a taken name: EXISTS")
        t.eq(store(state, "import", "Bad..Name", tarp).get("error"), "INVALID",
             "import under a bad name: INVALID")
        t.eq(store(state, "import", "host", tarp).get("error"), "INVALID", "`host` refused")
        got = store(state, "get", "my/img:1")
        t.ok(got.get("layers") and open(os.path.join(got["layers"][0], "hello")).read() ==
             "hello", "imported image has its file", got)
        lst = store(state, "list")
        names = [i["name"] for i in lst]
        t.ok("my/img:1" in names and "%s/test/fmt:v1" % reg.addr in names,
             "list shows imported and pulled images", names)
        t.eq(names, sorted(names), "list is sorted by name")
        t.ok(all(i["created"] > 0 for i in lst), "images have creation times")
        # snapshot on top of the import (copy_tree + add), then rm order
        snapsrc = os.path.join(tmp, "upper")
        os.makedirs(os.path.join(snapsrc, "d"))
        open(os.path.join(snapsrc, "d", "f"), "w").write("f")
        os.mknod(os.path.join(snapsrc, "gone"), stat.S_IFCHR | 0o600, os.makedev(0, 0))
        os.setxattr(os.path.join(snapsrc, "d"), "trusted.overlay.opaque", b"y")
        os.chmod(os.path.join(snapsrc, "d", "f"), 0o4755)
        os.link(os.path.join(snapsrc, "d", "f"), os.path.join(snapsrc, "f2"))
        t.eq(store(state, "snapshot", "snapshot/s1", "my/img:1", snapsrc), {"_stderr": ""},
             "snapshot layer via copy_tree + add")
        s1 = store(state, "get", "snapshot/s1")
        if s1.get("layers"):
            L = s1["layers"][0]
            t.ok(stat.S_ISCHR(os.lstat(os.path.join(L, "gone")).st_mode), "copy keeps whiteouts")
            t.eq(os.getxattr(os.path.join(L, "d"), "trusted.overlay.opaque"), b"y",
                 "copy keeps the opaque xattr")
            t.ok(os.lstat(os.path.join(L, "d", "f")).st_mode & stat.S_ISUID, "copy keeps setuid")
            t.eq(os.lstat(os.path.join(L, "d", "f")).st_ino, os.lstat(os.path.join(L, "f2")).st_ino,
                 "copy keeps hard links")
            out = os.path.join(tmp, "layer.tar")
            store(state, "totar", L, out)
            with tarfile.open(out) as tf:
                names = sorted(tf.getnames())
            t.ok(".wh.gone" in names and "d/.wh..wh..opq" in names,
                 "to_tar turns overlay whiteouts back into OCI ones", names)
        out = os.path.join(tmp, "export.tar")
        t.eq(store(state, "export", "snapshot/s1", out), {"_stderr": ""}, "export a snapshot")
        files = oci_archive_files(out)
        t.ok(files.get("hello", ("",))[0] == "file" and files["hello"][1] == b"hello" and
             files.get("d/f", (0, 0))[1] == b"f", "export holds the base's and its own files",
             sorted(files))
        with tarfile.open(out) as tf:
            names = tf.getnames()
            dm = json.load(tf.extractfile("manifest.json"))
            idx = json.load(tf.extractfile("index.json"))
            cfg = json.load(tf.extractfile(dm[0]["Config"]))
        t.ok("oci-layout" in names and idx["schemaVersion"] == 2, "OCI layout files present")
        t.eq(dm[0]["RepoTags"], ["snapshot/s1:latest"], "docker manifest.json has a tag")
        t.eq(len(cfg["rootfs"]["diff_ids"]), 2, "config lists both layers' diff_ids")
        store(state, "snapshot", "snapshot/onhost", "host", snapsrc)
        r = store(state, "export", "snapshot/onhost", out)
        t.eq(r.get("error"), "UNSUPPORTED", "export of an image based on host: UNSUPPORTED")
        t.ok("host" in r.get("message", ""), "... the message says why", r)
        store(state, "rm", "snapshot/onhost")
        pulled = os.path.join(tmp, "pulled.tar")
        t.eq(store(state, "export", "%s/test/fmt:v1" % reg.addr, pulled), {"_stderr": ""},
             "export a pulled image")
        files = oci_archive_files(pulled)
        t.ok("data/gone" not in files and "opq/old" not in files and "opq/new" in files and
             files.get("data/keep/a", (0, 0))[1] == b"a" and
             files.get("bin/tool", (0, 0, 0))[2] & 0o4000,
             "exported layers replay: whiteout, opaque dir, setuid", sorted(files))
        with tarfile.open(pulled) as tf:
            cfg = json.load(tf.extractfile(json.load(tf.extractfile("manifest.json"))[0]["Config"]))
        t.eq(cfg["config"].get("Env"), ["PATH=/bin", "A=1"], "exported config keeps Env")
        t.eq(cfg["config"].get("Entrypoint"), ["/bin/tool"], "... and Entrypoint")
        t.eq(store(state, "rm", "my/img:1").get("error"), "EXISTS",
             "rm of a snapshot's base: EXISTS")
        t.eq(store(state, "rm", "snapshot/s1"), {"_stderr": ""}, "rm snapshot")
        t.eq(store(state, "rm", "my/img:1"), {"_stderr": ""}, "rm import")
        t.eq(store(state, "rm", "my/img:1").get("error"), "NOTFOUND", "rm again: NOTFOUND")
        t.eq(store(state, "get", "my/img:1").get("error"), "NOTFOUND", "gone")
        # rm a pulled image by its short canonical form, then prune its layers
        keep = store(state, "get", "%s/test/docker:v1" % reg.addr)["layers"]
        fmt = store(state, "get", "%s/test/fmt:v1" % reg.addr)["layers"]
        t.eq(store(state, "rm", "%s/test/fmt:v1" % reg.addr), {"_stderr": ""}, "rm pulled")
        for name in [i["name"] for i in store(state, "list")]:
            if name != "%s/test/docker:v1" % reg.addr:
                store(state, "rm", name)
        p = store(state, "prune")
        t.ok(p.get("layers", 0) >= 3 and p.get("bytes", 0) > 0, "prune removes layers", p)
        t.ok(all(os.path.isdir(k) for k in keep), "layers still used are kept")
        t.ok(not os.path.exists(fmt[1]), "unused layers are gone")
        t.eq(layer_dirs(state), sorted(os.path.basename(k) for k in keep),
             "only the remaining image's layers are left")
        t.eq(store(state, "prune").get("layers"), 0, "second prune removes nothing")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        t.skip("image store", "needs root (chroot, mknod, trusted xattrs)")
        return
    if not registry_available() or not os.path.exists(DRIVER):
        t.skip("image store", "docker-registry or %s missing" % DRIVER)
        return
    state = scratch_dir("osb-istore-")
    try:
        with Registry() as reg:
            t.run(test_formats, reg, state, name="formats", timeout=120)
            t.run(test_index, reg, state, name="index", timeout=60)
            t.run(test_errors, reg, state, name="errors", timeout=60)
            t.run(test_hostile, reg, state, name="hostile layers", timeout=60)
            t.run(test_concurrent, reg, state, name="concurrent pulls", timeout=120)
            t.run(test_auth, state, name="auth", timeout=60)
            t.run(test_store_ops, reg, state, name="store operations", timeout=120)
    finally:
        shutil.rmtree(state, ignore_errors=True)


t.run(main, name="image store", timeout=600)
t.done()
