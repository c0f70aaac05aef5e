#!/usr/bin/python3
"""Self-checks of registrylib.py against the real docker-registry: what the image tests
build and push is what a registry client will read back."""
import hashlib
import io
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import TAP  # noqa: E402
from registrylib import *  # noqa: E402,F403

t = TAP()


def test_layers():
    data, mt = tar_layer([("file", "etc/motd", b"hello\n"), ("dir", "data", 0o700),
                          ("symlink", "data/l", "../etc/motd"), ("hardlink", "etc/m2", "etc/motd"),
                          ("whiteout", "usr/old"), ("opaque", "var/cache"),
                          ("raw", "../evil", b"x")], compression="gzip")
    t.eq(mt, MT.OCI_LAYER_GZIP, "gzip layer media type")
    import gzip
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tf:
        names = tf.getnames()
    t.ok({"etc", "etc/motd", "data", "data/l", "etc/m2", "usr/.wh.old", "var/cache/.wh..wh..opq",
          "../evil"} <= set(names), "entries, whiteouts and raw names in the tar", names)
    t.eq(tar_layer([("file", "a", b"1")], "gzip"), tar_layer([("file", "a", b"1")], "gzip"),
         "same entries, same bytes (stable digests)")
    z, zmt = tar_layer([("file", "a", b"1" * 1000)], "zstd")
    t.ok(zmt == MT.OCI_LAYER_ZSTD and z[:4] == b"\x28\xb5\x2f\xfd", "zstd layer", zmt)
    u, umt = tar_layer([("file", "a", b"1")], None)
    t.ok(umt == MT.OCI_LAYER and u[257:262] == b"ustar", "uncompressed layer", umt)
    l1 = tar_layer([("file", "etc/motd", b"m"), ("file", "data/a", b"a"), ("file", "k", b"k")])[0]
    l2 = tar_layer([("whiteout", "etc/motd"), ("opaque", "data"), ("file", "data/b", b"b")],
                   "zstd")[0]
    files = layer_files([l1, l2])
    t.ok("etc/motd" not in files and "data/a" not in files and files.get("data/b", ())[:2] ==
         ("file", b"b") and "k" in files, "layer_files applies whiteouts", sorted(files))


def test_busybox():
    data, mt = busybox_layer()
    files = layer_files([data])
    t.ok(files.get("usr/bin/busybox", ("",))[0] == "file" and files["usr/bin/busybox"][2] & 0o111,
         "busybox layer holds an executable /usr/bin/busybox")
    t.eq(files.get("bin"), ("symlink", "usr/bin"), "merged /usr: /bin -> usr/bin")
    missing = [a for a in ("sh", "ls", "cat", "id", "pwd", "sleep", "tail", "env", "echo")
               if files.get("usr/bin/" + a, ("",))[0] != "symlink"]
    t.eq(missing, [], "applet symlinks present")
    passwd = files.get("etc/passwd", ("", b""))[1].decode()
    t.ok("root:x:0:0:" in passwd and "app:x:1000:1000:" in passwd, "users root and app", passwd)
    t.ok(files.get("tmp") == ("dir",) and files.get("root") == ("dir",), "/tmp and /root")
    t.ok(not [k for k in files if k.startswith("dev/") or k.startswith("opt/")],
         "no device nodes, no execd")
    t.eq(busybox_layer("zstd")[1], MT.OCI_LAYER_ZSTD, "zstd busybox layer")


def test_registry_open(reg):
    st, _, _ = reg.get("/v2/")
    t.eq(st, 200, "GET /v2/ -> 200 (no auth configured)")
    bb = busybox_layer()
    extra = tar_layer([("file", "arch", b"amd64\n")], "zstd")
    d = reg.push_image("test/bb", "t1", [bb, extra], config={"Env": ["A=1"], "User": "app"})
    man = reg.last_manifest
    st, h, body = reg.get("/v2/test/bb/manifests/t1", headers={"Accept": MT.OCI_MANIFEST})
    t.eq((st, sha256_digest(body), h.get("docker-content-digest"), h.get("content-type")),
         (200, d, d, MT.OCI_MANIFEST), "manifest read back byte for byte")
    st, _, body = reg.get("/v2/test/bb/manifests/" + d, headers={"Accept": MT.OCI_MANIFEST})
    t.eq((st, sha256_digest(body)), (200, d), "manifest by digest")
    cfg_d = man["config"]["digest"]
    st, _, cfg = reg.get("/v2/test/bb/blobs/" + cfg_d)
    cfg = json.loads(cfg)
    t.eq(cfg["rootfs"]["diff_ids"],
         ["sha256:" + hashlib.sha256(_raw(l[0])).hexdigest() for l in (bb, extra)],
         "config diff_ids are the uncompressed layer digests")
    t.eq((cfg["architecture"], cfg["os"], cfg["config"]), ("amd64", "linux",
                                                           {"Env": ["A=1"], "User": "app"}),
         "config platform and config.config")
    t.eq([l["mediaType"] for l in man["layers"]], [MT.OCI_LAYER_GZIP, MT.OCI_LAYER_ZSTD],
         "layer media types")
    ld = man["layers"][0]["digest"]
    before = reg.blob_gets(ld)
    st, _, data = reg.get("/v2/test/bb/blobs/" + ld)
    t.eq((st, data == bb[0], reg.blob_gets(ld) - before), (200, True, 1),
         "blob fetched back; blob_gets counts it")
    reg._request("HEAD", "/v2/test/bb/blobs/" + ld)
    t.eq(reg.blob_gets(ld) - before, 1, "HEAD not counted as a GET")
    st, _, _ = reg.get("/v2/test/bb/manifests/nope", headers={"Accept": MT.OCI_MANIFEST})
    t.eq(st, 404, "unknown tag -> 404")

    dd = reg.push_image("test/bb", "docker", [bb], oci=False)
    st, h, body = reg.get("/v2/test/bb/manifests/docker", headers={"Accept": MT.DOCKER_MANIFEST})
    m = json.loads(body)
    t.eq((st, sha256_digest(body), h.get("content-type"), m["config"]["mediaType"],
          m["layers"][0]["mediaType"]),
         (200, dd, MT.DOCKER_MANIFEST, MT.DOCKER_CONFIG, MT.DOCKER_LAYER_GZIP),
         "Docker v2 schema2 manifest (OCI layer types translated)")

    arm = reg.push_image("test/bb", "arm", [bb, tar_layer([("file", "arch", b"arm64\n")])],
                         arch="arm64")
    arm_size = reg.last_manifest_size
    amd = reg.push_image("test/bb", "amd", [bb, extra])
    amd_size = reg.last_manifest_size
    idx = reg.push_index("test/bb", "multi", [
        (arm, arm_size, MT.OCI_MANIFEST, {"os": "linux", "architecture": "arm64"}),
        (amd, amd_size, MT.OCI_MANIFEST, {"os": "linux", "architecture": "amd64"})])
    st, h, body = reg.get("/v2/test/bb/manifests/multi", headers={"Accept": MT.OCI_INDEX})
    t.eq((st, sha256_digest(body), [x["digest"] for x in json.loads(body)["manifests"]]),
         (200, idx, [arm, amd]), "OCI index read back")

    reg.corrupt_blob(extra_digest(reg, "test/bb", "amd"))
    st, _, data = reg.get("/v2/test/bb/blobs/" + extra_digest(reg, "test/bb", "amd"))
    t.ok(st == 200 and len(data) == len(extra[0]) and data != extra[0],
         "corrupt_blob: served, same size, different bytes")


def extra_digest(reg, repo, tag):
    st, _, body = reg.get("/v2/%s/manifests/%s" % (repo, tag), headers={"Accept": MT.OCI_MANIFEST})
    return json.loads(body)["layers"][-1]["digest"]


def _raw(data):
    from registrylib import _decompress
    return _decompress(data)


def test_registry_auth():
    with Registry(users={"alice": "s3cret-pw", "bob": "other"}) as reg:
        t.eq(reg.get("/v2/", auth=None)[0], 401, "auth registry: no credentials -> 401")
        st, h, _ = reg.get("/v2/", auth=("alice", "wrong"))
        t.eq(st, 401, "wrong password -> 401")
        t.ok(h.get("www-authenticate", "").lower().startswith("basic"),
             "WWW-Authenticate: Basic", h)
        t.eq(reg.get("/v2/", auth=("bob", "other"))[0], 200, "second user accepted")
        d = reg.push_image("private/bb", "v1", [tar_layer([("file", "x", b"x")])])
        st, _, _ = reg.get("/v2/private/bb/manifests/v1", auth=None)
        t.eq(st, 401, "manifest without credentials -> 401")
        st, _, body = reg.get("/v2/private/bb/manifests/v1", headers={"Accept": MT.OCI_MANIFEST})
        t.eq((st, sha256_digest(body)), (200, d), "manifest with credentials")
        storage = reg.dir
    t.ok(not os.path.exists(storage), "storage removed on stop")


def test_oci_archive(tmp):
    l1 = tar_layer([("file", "etc/motd", b"m"), ("file", "bin/x", b"#!", 0o755)])[0]
    l2 = tar_layer([("whiteout", "etc/motd"), ("file", "new", b"n")], None)[0]
    cfg = json.dumps({"rootfs": {"type": "layers", "diff_ids": [
        "sha256:" + hashlib.sha256(_raw(l)).hexdigest() for l in (l1, l2)]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": MT.OCI_MANIFEST,
                      "config": {"mediaType": MT.OCI_CONFIG, "digest": sha256_digest(cfg),
                                 "size": len(cfg)},
                      "layers": [{"mediaType": MT.OCI_LAYER_GZIP, "digest": sha256_digest(l1),
                                  "size": len(l1)},
                                 {"mediaType": MT.OCI_LAYER, "digest": sha256_digest(l2),
                                  "size": len(l2)}]}).encode()
    index = json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": MT.OCI_MANIFEST, "digest": sha256_digest(man), "size": len(man)}]}).encode()
    path = os.path.join(tmp, "a.tar")

    def write(blobs):
        with tarfile.open(path, "w") as tf:
            for name, data in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                               ("index.json", index)] + blobs:
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))

    blobs = [("blobs/sha256/" + sha256_digest(b)[7:], b) for b in (cfg, man, l1, l2)]
    write(blobs)
    files = oci_archive_files(path)
    t.ok("etc/motd" not in files and files.get("new") == ("file", b"n", 0o644) and
         files.get("bin/x") == ("file", b"#!", 0o755), "oci_archive_files reads a layout",
         sorted(files))
    blobs[2] = (blobs[2][0], l2)  # l1's name, l2's content
    write(blobs)
    try:
        oci_archive_files(path)
        t.ok(False, "oci_archive_files refuses a blob that does not match its digest")
    except AssertionError as e:
        t.ok("does not match" in str(e), "oci_archive_files refuses a blob that does not "
             "match its digest", e)


def main():
    if not registry_available():
        t.skip("registrylib", "docker-registry or htpasswd missing (scripts/install-deps.sh)")
        return
    t.run(test_layers)
    t.run(test_busybox)
    with Registry() as reg:
        t.run(test_registry_open, reg)
    t.run(test_registry_auth)
    tmp = scratch_dir("osb-rltest-")
    try:
        t.run(test_oci_archive, tmp)
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


t.run(main, timeout=120)
t.done()
