#!/usr/bin/python3
"""`image push NAME|SNAPSHOT_ID REF` (issue #4) through the real CLI
(build/bin/opensandbox-server image ...) against real docker-registry instances on
loopback: a pulled two-layer image (whiteouts and an opaque dir in the top layer) and a
snapshot-like image (its own layer on a base image, named by its bare id) are pushed to
another repository; what the registry holds unpacks to the same files, the config keeps
Env/WorkingDir, a pull into a fresh store gets the same manifest digest and files; pushing
again uploads no blob; push by digest (right and wrong); basic auth with the right and a
wrong password (DENIED, exit 1, the password never printed); an unknown image; nothing left
in the state dir."""
import json
import os
import shutil
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import EXECD_BIN, REPO, TAP  # noqa: E402
from registrylib import (MT, Registry, layer_files, oci_archive_files,  # noqa: E402
                         registry_available, scratch_dir, sha256_digest, tar_layer)

SERVER_BIN = os.environ.get("OSB_SERVER_BIN") or os.path.join(
    REPO, os.environ.get("BUILD", "build"), "bin", "opensandbox-server")
t = TAP()

BASE = tar_layer([("file", "etc/motd", b"m\n"), ("file", "data/a", b"a"),
                  ("file", "keep/k", b"k"), ("file", "bin/tool", b"#!/bin/sh\n", 0o4755),
                  ("symlink", "lnk", "data/a")])
TOP = tar_layer([("whiteout", "etc/motd"), ("opaque", "data"), ("file", "data/b", b"b"),
                 ("file", "top", b"t" * 70000)], "zstd")
CONFIG = {"Env": ["E=1", "PATH=/bin"], "WorkingDir": "/data", "Cmd": ["/bin/sh"]}


class Store:
    """A state dir and a config for the CLI."""

    def __init__(self, insecure):
        self.dir = scratch_dir("osb-push-")
        self.state = os.path.join(self.dir, "state")
        self.config = os.path.join(self.dir, "sandbox.toml")
        with open(self.config, "w") as f:
            f.write("\n".join([
                "[runtime]", "execd_path = %s" % json.dumps(EXECD_BIN),
                "[native]", "state_dir = %s" % json.dumps(self.state),
                "[image]", "insecure_registries = %s" % json.dumps(insecure), ""]))

    def cli(self, *args, stdin=None):
        return subprocess.run([SERVER_BIN, "--config", self.config, "image"] + list(args),
                              input=stdin, capture_output=True, text=True, timeout=180)

    def leftovers(self):
        return [n for n in os.listdir(self.state) if n.startswith(".push-")]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def failure(r):
    """The last stderr line (progress lines come first)."""
    lines = r.stderr.strip().splitlines()
    return lines[-1] if lines else ""


def registry_files(reg, repo, ref):
    """(manifest digest, config dict, files) of what the registry holds for repo:ref."""
    st, h, body = reg.get("/v2/%s/manifests/%s" % (repo, ref),
                          headers={"Accept": MT.OCI_MANIFEST})
    if st != 200:
        raise AssertionError("manifest %s:%s -> %d" % (repo, ref, st))
    man = json.loads(body)
    blobs = []
    for d in [man["config"]] + man["layers"]:
        st, _, data = reg.get("/v2/%s/blobs/%s" % (repo, d["digest"]))
        assert st == 200 and sha256_digest(data) == d["digest"], d
        assert len(data) == d["size"], d
        blobs.append(data)
    return sha256_digest(body), json.loads(blobs[0]), layer_files(blobs[1:])


def blob_uploads(reg):
    """PUTs of blob uploads the registry accepted (manifests are not counted)."""
    return sum(1 for m, p, st in reg.requests()
               if m == "PUT" and "/blobs/uploads/" in p and st == 201)


def test_pulled(reg, st):
    reg.push_image("src/img", "1", [BASE, TOP], config=CONFIG)
    src = "%s/src/img:1" % reg.addr
    t.eq(st.cli("pull", src).returncode, 0, "pull the two-layer source image")
    dst = "%s/dst/img:v1" % reg.addr
    before = blob_uploads(reg)
    r = st.cli("push", src, dst)
    t.eq(r.returncode, 0, "image push -> exit 0", r.stderr[-800:])
    line = r.stdout.strip().split()
    t.ok(len(line) == 2 and line[0] == dst and line[1].startswith("sha256:"),
         "prints '<ref> <manifest digest>'", r.stdout)
    t.ok("pushed" in r.stderr, "progress on stderr", r.stderr[-500:])
    t.eq(blob_uploads(reg) - before, 3, "two layers and a config uploaded")
    try:
        digest, cfg, files = registry_files(reg, "dst/img", "v1")
    except AssertionError as e:
        t.ok(False, "the registry holds the pushed image", repr(e))
        return
    t.eq(digest, line[1] if len(line) == 2 else None, "the printed digest is the manifest's")
    want = layer_files([BASE[0], TOP[0]])
    diff = sorted(k for k in set(files) | set(want) if files.get(k) != want.get(k))
    t.eq(diff, [], "pushed layers unpack to the source's files (whiteouts, opaque dir, "
                   "setuid, symlink)")
    t.eq({k: cfg.get("config", {}).get(k) for k in CONFIG}, CONFIG,
         "config keeps Env, WorkingDir, Cmd")

    again = blob_uploads(reg)
    r = st.cli("push", src, dst)
    t.ok(r.returncode == 0 and r.stdout.strip() == " ".join(line), "pushing again: same "
         "output", r.stdout + r.stderr[-500:])
    t.eq(blob_uploads(reg), again, "pushing again uploads no blob")
    t.ok(r.stderr.count("already present") >= 3, "... every blob reported present",
         r.stderr[-500:])

    r = st.cli("push", src, "%s/dst/img@%s" % (reg.addr, line[1]))
    t.eq(r.returncode, 0, "push by the manifest's digest", r.stderr[-500:])
    bad = "sha256:" + "0" * 64
    r = st.cli("push", src, "%s/dst/img@%s" % (reg.addr, bad))
    t.ok(r.returncode == 1 and failure(r).startswith("image push: ") and line[1] in failure(r),
         "push by another digest: exit 1 naming the real one", r.stderr)
    t.ok("already present" not in r.stderr and "pushed" not in r.stderr,
         "... refused before any blob is looked at", r.stderr)
    r = st.cli("push", "no/such:image", "%s/dst/x:1" % reg.addr)
    t.ok(r.returncode == 1 and "not found" in r.stderr and "no/such" in r.stderr,
         "push of an unknown image: exit 1, not found", r.stderr)

    # a round trip: a fresh store pulls what was pushed
    fresh = Store([reg.addr])
    try:
        r = fresh.cli("pull", dst)
        t.ok(r.returncode == 0 and r.stdout.strip() == "%s %s" % (dst, line[1]),
             "a fresh store pulls the pushed image, same digest", r.stdout + r.stderr[-500:])
        out = os.path.join(fresh.dir, "rt.tar")
        r = fresh.cli("export", dst, out)
        got = oci_archive_files(out) if r.returncode == 0 else {}
        diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        t.eq(diff, [], "... and its files are the source's")
    finally:
        fresh.close()
    t.eq(st.leftovers(), [], "no .push-* dir left in the state dir")


def test_snapshot(reg, st):
    """An image with a base, as snapshots are stored: its own layer on the base's."""
    reg.push_image("src/base", "1", [BASE], config=CONFIG)
    reg.push_image("src/img", "2", [BASE, TOP], config=CONFIG)
    base = "%s/src/base:1" % reg.addr
    for ref in (base, "%s/src/img:2" % reg.addr):
        t.eq(st.cli("pull", ref).returncode, 0, "pull %s" % ref)
    sid = uuid.uuid4().hex[:12]
    top_key = "sha256-" + sha256_digest(TOP[0]).split(":")[1]
    d = os.path.join(st.state, "images", "snapshot+" + sid)
    os.makedirs(d)
    with open(os.path.join(d, "image.json"), "w") as f:
        json.dump({"name": "snapshot/" + sid, "digest": "", "base": base, "layers": [top_key],
                   "size": 0, "created": 1700000000000, "env": ["S=1"], "workdir": "/"}, f)
    dst = "%s/dst/snap:1" % reg.addr
    r = st.cli("push", sid, dst)
    t.eq(r.returncode, 0, "image push <snapshot id> -> exit 0", r.stderr[-800:])
    try:
        _, cfg, files = registry_files(reg, "dst/snap", "1")
    except AssertionError as e:
        t.ok(False, "the registry holds the pushed snapshot", repr(e))
        return
    want = layer_files([BASE[0], TOP[0]])
    diff = sorted(k for k in set(files) | set(want) if files.get(k) != want.get(k))
    t.eq(diff, [], "snapshot push: base layers below its own, whiteouts kept")
    t.eq(cfg.get("config", {}).get("Env"), ["S=1"], "snapshot push: its own config")
    r = st.cli("push", "deadbeef0000", "%s/dst/none:1" % reg.addr)
    t.ok(r.returncode == 1 and "not found" in r.stderr, "unknown snapshot id: exit 1",
         r.stderr)


def test_auth(st, preg, user, password):
    ref = "%s/private/img:1" % preg.addr
    wrong = "wrong-" + uuid.uuid4().hex
    src = "%s/src/img:1" % st.reg_addr
    r = st.cli("push", src, ref, "--username", user, "--password-stdin", stdin=wrong + "\n")
    t.ok(r.returncode == 1 and failure(r).startswith("image push: ") and
         "denied" in failure(r).lower() and "private/img" in failure(r),
         "wrong password: exit 1, DENIED naming the image", r.stderr)
    t.ok(wrong not in r.stdout + r.stderr, "... the password is not printed")
    r = st.cli("push", src, ref)
    t.ok(r.returncode == 1 and ("denied" in r.stderr.lower() or "authentication" in r.stderr),
         "no credentials: exit 1", r.stderr)
    r = st.cli("push", src, ref, "--username", user, "--password-stdin", stdin=password + "\n")
    t.eq(r.returncode, 0, "right password: pushed", r.stderr[-500:])
    t.ok(password not in r.stdout + r.stderr, "... the password is not printed")
    try:
        _, _, files = registry_files(preg, "private/img", "1")
        t.eq(files.get("data/b"), ("file", b"b", 0o644), "the private registry has the image")
    except AssertionError as e:
        t.ok(False, "the private registry has the image", repr(e))


def main():
    if os.geteuid() != 0:
        t.skip("image push", "needs root (chroot, mknod, trusted xattrs)")
        return
    if not registry_available() or not os.access(SERVER_BIN, os.X_OK):
        t.skip("image push", "docker-registry, htpasswd or %s missing" % SERVER_BIN)
        return
    user, password = "alice", "pw-" + uuid.uuid4().hex
    with Registry() as reg, Registry(users={user: password}) as preg:
        st = Store([reg.addr, preg.addr])
        st.reg_addr = reg.addr
        try:
            t.run(test_pulled, reg, st, timeout=300)
            t.run(test_snapshot, reg, st, timeout=200)
            t.run(test_auth, st, preg, user, password, timeout=200)
        finally:
            st.close()


t.run(main, name="image push", timeout=900)
