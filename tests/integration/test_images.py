#!/usr/bin/python3
"""Images from registries (issue #4): the real server pulls from real docker-registry
instances on loopback (registrylib.py) inside POST /v1/sandboxes, then the sandbox runs the
image. Layer formats (gzip, zstd, tar; OCI and Docker v2 manifests; indexes), whiteouts,
image config (Env, WorkingDir, User, Entrypoint/Cmd), private registries (credentials
never logged or stored), every pull error with its code and nothing left behind, hostile
layers, concurrent pulls of one image, the store across restarts, mirrors, and the CLI
(`image pull|list|rm|prune|import|export`)."""
import hashlib
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
from registrylib import *  # noqa: E402,F403

t = TAP()
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, "amd64")
OTHER_ARCH = "arm64" if ARCH == "amd64" else "amd64"
with open(EXECD_BIN, "rb") as _f:
    # Sanitizer builds link execd dynamically: it cannot run inside a busybox image.
    DYNAMIC_EXECD = b"ld-linux" in _f.read(8192)


# ---------------------------------------------------------------- helpers

def sh(s, sid, cmd, timeout=30):
    """Run cmd through execd (server proxy); (exit code, stdout joined by newlines)."""
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=timeout).events
    return exit_code(ev), "\n".join(stdout_lines(ev)).strip()


def wait_file(s, sid, path, timeout=10):
    """Contents of path once it exists and is non-empty (written by an entrypoint)."""
    got = []

    def ready():
        code, out = sh(s, sid, "cat %s 2>/dev/null" % path)
        if code == 0 and out:
            got.append(out)
            return True
        return False
    wait_for(ready, timeout=timeout, interval=0.1)
    return got[0] if got else None


def cli(s, *args, timeout=120):
    return subprocess.run([SERVER_BIN, "--config", s.config] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def image_rows(s):
    """`image list` as (header, {name: row line})."""
    r = cli(s, "image", "list")
    if r.returncode != 0:
        raise RuntimeError("image list -> %d: %s" % (r.returncode, r.stderr))
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    head = lines[0] if lines else ""
    return head, {l.split()[0]: l for l in lines[1:]}


def layers_dir(s):
    return os.path.join(s.state_dir, "layers")


def layer_entries(s):
    d = layers_dir(s)
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def layer_key(digest):
    """store.h: a pulled layer lives in <state>/layers/sha256-<hex of its blob digest>."""
    return "sha256-" + digest.split(":", 1)[1]


def uniq_layer(tag, size=0, compression="gzip"):
    """A layer no other image has (so a pull must fetch it), optionally with random data."""
    entries = [("file", "uniq/" + tag, (tag + "\n").encode())]
    if size:
        entries.append(("file", "uniq/blob-" + tag, os.urandom(size)))
    return tar_layer(entries, compression)


def delete_sandbox(s, sid):
    r = s.delete("/v1/sandboxes/" + sid)
    t.ok(r.status == 204, "delete sandbox %s" % sid[:8], r.status)


def expect_failure(s, r, status, code, image, name, extra_names=()):
    """A create that must fail: status + code, a message naming the image, no sandbox, no
    new image record, no partial layer."""
    t.is_error(r, status, code, name + " -> %d %s" % (status, code))
    msg = r.json().get("message", "") if r.body[:1] == b"{" else ""
    t.ok(image in msg, name + ": message names the image", msg)
    t.eq(s.list_all(), [], name + ": no sandbox left behind")
    _, rows = image_rows(s)
    bad = [n for n in rows if n in (image,) + tuple(extra_names)]
    t.eq(bad, [], name + ": no image record")
    tmp = [e for e in layer_entries(s) if e.startswith(".tmp")]
    t.eq(tmp, [], name + ": no partial layer")
    return msg


def run_ok(s, image, name, **fields):
    """Create from image; checks 202 Running and that execd answers; returns the id."""
    r = s.create(image={"uri": image}, http_timeout=120, **fields)
    ok = t.ok(r.status == 202 and r.json()["status"]["state"] == "Running",
              name + ": create -> 202 Running", "%d %s" % (r.status, r.body[:400]))
    if not ok:
        return None
    return r.json()["id"]


def pulled_ok(r):
    """The create pulled its image: 202, or (sanitizer build) the pull worked and only the
    dynamically linked execd could not start in the busybox image."""
    if r.status == 202:
        return True
    return DYNAMIC_EXECD and r.status == 500 and b"/opt/opensandbox/execd" in r.body


def skip_run(name):
    if DYNAMIC_EXECD:
        t.skip(name, "execd is dynamically linked (sanitizer build): it cannot run in a "
                     "busybox image")
        return True
    return False


# ---------------------------------------------------------------- formats

def test_formats(s, reg):
    """gzip, zstd and uncompressed layers; OCI and Docker v2 schema 2 manifests."""
    cases = [("gz", "gzip", True), ("zstd", "zstd", True), ("plain", None, True),
             ("docker", "gzip", False), ("docker-plain", None, False)]
    for tag, comp, oci in cases:
        ref = "%s/test/busybox:%s" % (reg.addr, tag)
        layers = [busybox_layer(comp),
                  tar_layer([("file", "format", ("%s %s\n" % (tag, comp)).encode()),
                             ("file", "etc/motd", b"motd " + tag.encode() + b"\n")], comp)]
        digest = reg.push_image("test/busybox", tag, layers, oci=oci)
        if skip_run("sandbox from %s" % tag):
            continue
        sid = run_ok(s, ref, tag)
        if not sid:
            continue
        t.eq(sh(s, sid, "cat /format; cat /etc/motd"),
             (0, "%s %s\nmotd %s" % (tag, comp, tag)), "%s: the image's files are there" % tag)
        t.eq(sh(s, sid, "ls /bin/sh >/dev/null && echo yes"), (0, "yes"),
             "%s: busybox applets run" % tag)
        g = s.get_sbx(sid).json()
        t.eq(g.get("image", {}).get("uri"), ref, "%s: GET shows image.uri" % tag)
        _, rows = image_rows(s)
        t.ok(ref in rows and digest.split(":")[1][:12] in rows[ref],
             "%s: image list has the image and its digest" % tag, rows)
        delete_sandbox(s, sid)
    m = s.get("/metrics").text
    pulls = re.search(r'^opensandbox_image_pulls_total\{outcome="ok"\} (\S+)$', m, re.M)
    pulled = re.search(r'^opensandbox_image_pulled_bytes_total (\S+)$', m, re.M)
    t.ok(pulls and float(pulls.group(1)) >= len(cases) and pulled and float(pulled.group(1)) > 0,
         "/metrics counts the pulls and their bytes",
         [l for l in m.splitlines() if "image_pull" in l])


def test_multiarch(s, reg):
    bb = busybox_layer()
    for oci, tag in ((True, "multi"), (False, "multi-docker")):
        mt = MT.OCI_MANIFEST if oci else MT.DOCKER_MANIFEST
        entries = []
        for arch in ("arm64", "amd64", "s390x"):
            d = reg.push_image("test/multi", "%s-%s" % (tag, arch),
                               [bb, tar_layer([("file", "arch", (arch + "\n").encode())])],
                               oci=oci, arch=arch)
            entries.append((d, reg.last_manifest_size, mt,
                            {"os": "linux", "architecture": arch}))
        reg.push_index("test/multi", tag, entries, oci=oci)
        ref = "%s/test/multi:%s" % (reg.addr, tag)
        if skip_run("multi-arch %s" % tag):
            continue
        sid = run_ok(s, ref, tag)
        if sid:
            t.eq(sh(s, sid, "cat /arch"), (0, ARCH), "%s: the %s manifest was picked" % (tag, ARCH))
            delete_sandbox(s, sid)
    # platform.arch picks the other manifest (it holds the same busybox, so it runs here);
    # a server may instead refuse a foreign platform, but must never run the native one.
    ref = "%s/test/multi:multi" % reg.addr
    r = s.create(image={"uri": ref}, platform={"os": "linux", "arch": OTHER_ARCH},
                 http_timeout=120)
    if r.status == 202:
        t.eq(sh(s, r.json()["id"], "cat /arch"), (0, OTHER_ARCH),
             "platform.arch %s selects the %s manifest" % (OTHER_ARCH, OTHER_ARCH))
        delete_sandbox(s, r.json()["id"])
    else:
        t.ok(400 <= r.status < 500 and r.json().get("code"),
             "platform.arch %s: selected or refused with a clear error" % OTHER_ARCH,
             "%d %s" % (r.status, r.body[:300]))
    # An index without a manifest for this platform.
    d = reg.push_image("test/multi", "only-s390x", [bb], arch="s390x")
    reg.push_index("test/multi", "no-platform", [(d, reg.last_manifest_size, MT.OCI_MANIFEST,
                                                  {"os": "linux", "architecture": "s390x"})])
    ref = "%s/test/multi:no-platform" % reg.addr
    # registry.h: "no manifest for the platform in an index" is OSB_E_UNSUPPORTED.
    expect_failure(s, s.create(image={"uri": ref}, http_timeout=120), 400,
                   "SANDBOX::IMAGE_UNSUPPORTED", ref, "index without a %s manifest" % ARCH)


def test_whiteouts(s, reg):
    l1 = tar_layer([("file", "etc/motd", b"old motd\n"), ("file", "data/a", b"a\n"),
                    ("file", "data/sub/c", b"c\n"), ("file", "keep/k", b"k\n")])
    l2 = tar_layer([("whiteout", "etc/motd"), ("opaque", "data"), ("file", "data/b", b"b\n"),
                    ("whiteout", "keep/nothing-there")], "zstd")
    reg.push_image("test/whiteout", "1", [busybox_layer(), l1, l2])
    ref = "%s/test/whiteout:1" % reg.addr
    if skip_run("whiteouts"):
        return
    sid = run_ok(s, ref, "whiteouts")
    if not sid:
        return
    t.eq(sh(s, sid, "test -e /etc/motd; echo $?"), (0, "1"), "whiteout: /etc/motd is gone")
    t.eq(sh(s, sid, "ls -A /data"), (0, "b"), "opaque dir: /data holds only b")
    t.eq(sh(s, sid, "cat /keep/k; ls -A /etc | grep -c '^\\.wh\\.' ; ls -A /data /keep | "
                    "grep -c '^\\.wh\\.'; true"), (0, "k\n0\n0"),
         "other files kept; no .wh. entries visible")
    delete_sandbox(s, sid)


# ---------------------------------------------------------------- image config

def test_image_config(s, reg):
    bb = busybox_layer()
    work = tar_layer([("dir", "work/dir", 0o755)])
    probe = ["sh", "-c", "id -u > /tmp/uid; pwd > /tmp/cwd; exec sleep 1000"]
    for user in ("1000", "app"):
        tag = "user-" + user
        reg.push_image("test/config", tag, [bb, work], config={
            "Env": ["PATH=/usr/bin:/bin", "IMGVAR=from-image", "OVR=image"],
            "WorkingDir": "/work/dir", "User": user})
        if skip_run("image config %s" % tag):
            continue
        sid = run_ok(s, "%s/test/config:%s" % (reg.addr, tag), tag, entrypoint=probe,
                     env={"OVR": "request", "REQ": "r"})
        if not sid:
            continue
        t.eq(wait_file(s, sid, "/tmp/uid"), "1000", "%s: the entrypoint runs as uid 1000" % tag)
        t.eq(wait_file(s, sid, "/tmp/cwd"), "/work/dir", "%s: the entrypoint's cwd is "
                                                         "WorkingDir" % tag)
        t.eq(sh(s, sid, 'echo "$IMGVAR $OVR $REQ"'), (0, "from-image request r"),
             "%s: image Env applied, the request's env wins" % tag)
        t.eq(sh(s, sid, "pwd"), (0, "/work/dir"),
             "%s: commands without cwd start in WorkingDir" % tag)
        delete_sandbox(s, sid)

    reg.push_image("test/config", "ep", [bb], config={
        "Entrypoint": ["sh", "-c"], "Cmd": ["echo from-image > /tmp/ep; exec sleep 1000"]})
    reg.push_image("test/config", "cmd", [bb], config={
        "Cmd": ["sh", "-c", "echo cmd-only > /tmp/ep; exec sleep 1000"]})
    # Like python:3 or ubuntu: a Cmd that ends at once (stdin is /dev/null).
    reg.push_image("test/config", "quick", [bb], config={
        "Cmd": ["sh", "-c", "echo quick > /tmp/ep; exit 3"]})
    if skip_run("image Entrypoint/Cmd"):
        return
    ref = "%s/test/config:ep" % reg.addr
    sid = run_ok(s, ref, "Entrypoint+Cmd", entrypoint=["tail", "-f", "/dev/null"])
    if sid:
        t.eq(wait_file(s, sid, "/tmp/ep"), "from-image",
             "the SDK default entrypoint runs the image's Entrypoint + Cmd")
        delete_sandbox(s, sid)
    sid = run_ok(s, "%s/test/config:cmd" % reg.addr, "Cmd only")
    if sid:
        t.eq(wait_file(s, sid, "/tmp/ep"), "cmd-only",
             "the SDK default entrypoint runs the image's Cmd (no Entrypoint)")
        delete_sandbox(s, sid)
    sid = run_ok(s, ref, "request entrypoint",
                 entrypoint=["sh", "-c", "echo from-request > /tmp/ep; exec sleep 1000"])
    if sid:
        t.eq(wait_file(s, sid, "/tmp/ep"), "from-request",
             "any other request entrypoint wins over the image's")
        delete_sandbox(s, sid)
    quick = "%s/test/config:quick" % reg.addr
    sid = run_ok(s, quick, "Cmd that exits")
    if sid:
        t.eq(wait_file(s, sid, "/tmp/ep"), "quick", "the image's Cmd ran")
        _, cmdline = sh(s, sid, "tr '\\0' ' ' < /proc/1/cmdline")
        t.ok("--report-fd" not in cmdline and
             s.get_sbx(sid).json()["status"]["state"] == "Running" and
             sh(s, sid, "echo alive") == (0, "alive"),
             "the image's command ending does not end a sandbox created with the keep-alive "
             "default (as upstream, which runs tail): execd gets no end report pipe",
             (cmdline, s.get_sbx(sid).json()["status"]))
        delete_sandbox(s, sid)
    r = s.create(image={"uri": quick}, http_timeout=120,
                 entrypoint=["sh", "-c", "echo quick > /tmp/ep; exit 3"])
    if t.eq(r.status, 202, "the same command as the request's entrypoint: 202"):
        sid = r.json()["id"]
        t.ok(wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] == "Failed", 60),
             "a request's own entrypoint that exits ends the sandbox",
             s.get_sbx(sid).json()["status"])
        delete_sandbox(s, sid)
    sid = run_ok(s, ref, "tail with other args", entrypoint=["tail", "-f", "/etc/passwd"])
    if sid:
        t.eq(sh(s, sid, "test -e /tmp/ep; echo $?"), (0, "1"),
             "only exactly [tail -f /dev/null] counts as the SDK default")
        delete_sandbox(s, sid)


# ---------------------------------------------------------------- private registry

def test_private(s, preg, user, password, wrong):
    reg_layers = [busybox_layer(), tar_layer([("file", "secret-file", b"private\n")])]
    preg.push_image("private/app", "v1", reg_layers)
    ref = "%s/private/app:v1" % preg.addr
    r = s.create(image={"uri": ref}, http_timeout=60)
    expect_failure(s, r, 400, "SANDBOX::IMAGE_PULL_DENIED", ref, "private, no credentials")
    r = s.create(image={"uri": ref, "auth": {"username": user, "password": wrong}},
                 http_timeout=60)
    expect_failure(s, r, 400, "SANDBOX::IMAGE_PULL_DENIED", ref, "private, wrong password")
    t.ok(wrong not in r.body.decode("utf-8", "replace"), "the error does not echo the password")
    r = s.create(image={"uri": ref, "auth": {"username": "nobody", "password": password}},
                 http_timeout=60)
    expect_failure(s, r, 400, "SANDBOX::IMAGE_PULL_DENIED", ref, "private, unknown user")
    r = s.create(image={"uri": ref, "auth": {"username": user, "password": password}},
                 http_timeout=120)
    t.ok(pulled_ok(r), "private, right credentials -> 202", "%d %s" % (r.status, r.body[:300]))
    if r.status == 202:
        sid = r.json()["id"]
        g = s.get_sbx(sid)
        lst = s.get("/v1/sandboxes")
        t.ok(password not in g.body.decode() and password not in lst.body.decode(),
             "GET and list never show the password")
        if not DYNAMIC_EXECD:
            t.eq(sh(s, sid, "cat /secret-file"), (0, "private"), "private image runs")
        delete_sandbox(s, sid)
    check_secret_absent(s, [password, wrong], "private registry")


def check_secret_absent(s, secrets, name):
    log = s.log_text()
    for sec in secrets:
        t.ok(sec not in log, "%s: %s not in the server log" % (name, sec[:6] + "..."))
    hits = []
    for root, _, files in os.walk(s.state_dir):
        for f in files:
            p = os.path.join(root, f)
            try:
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            hits += [p for sec in secrets if sec.encode() in data]
    t.eq(hits, [], "%s: no file of the state dir holds a password" % name)


# ---------------------------------------------------------------- errors

def test_errors(s, reg, dead_port):
    base = "%s/test/err" % reg.addr
    reg.push_image("test/err", "exists", [busybox_layer()])
    r = s.create(image={"uri": base + ":nope"})
    expect_failure(s, r, 400, "SANDBOX::IMAGE_NOT_FOUND", base + ":nope", "unknown tag")
    ref = "%s/test/no-such-repo:1" % reg.addr
    expect_failure(s, s.create(image={"uri": ref}), 400, "SANDBOX::IMAGE_NOT_FOUND", ref,
                   "unknown repository")
    ref = "%s/test/err@sha256:%s" % (reg.addr, "0" * 64)
    expect_failure(s, s.create(image={"uri": ref}), 400, "SANDBOX::IMAGE_NOT_FOUND", ref,
                   "unknown digest")
    ref = "127.0.0.1:%d/test/down:1" % dead_port
    expect_failure(s, s.create(image={"uri": ref}), 500, "SANDBOX::IMAGE_REGISTRY_UNAVAILABLE",
                   ref, "registry down")

    # Digest mismatches. The registry verifies what is uploaded, so a blob is corrupted on
    # its disk after the push (same size, every byte flipped), or the manifest states a
    # wrong size for a genuine blob.
    lay = uniq_layer("corrupt-layer", 4096)
    reg.push_image("test/err", "corrupt-layer", [busybox_layer(), lay])
    reg.corrupt_blob(sha256_digest(lay[0]))
    ref = base + ":corrupt-layer"
    expect_failure(s, s.create(image={"uri": ref}), 500, "SANDBOX::IMAGE_DIGEST_MISMATCH", ref,
                   "layer blob whose bytes do not match its digest")
    t.ok(layer_key(sha256_digest(lay[0])) not in layer_entries(s),
         "the corrupted layer was not committed")

    lay = uniq_layer("wrong-size", 4096)

    def grow(man):
        man["layers"][-1]["size"] += 1
    reg.push_image("test/err", "wrong-size", [busybox_layer(), lay], manifest_hook=grow)
    ref = base + ":wrong-size"
    expect_failure(s, s.create(image={"uri": ref}), 500, "SANDBOX::IMAGE_DIGEST_MISMATCH", ref,
                   "layer shorter than its manifest size")

    def shrink(man):
        man["layers"][-1]["size"] -= 1
    lay = uniq_layer("short-size", 4096)
    reg.push_image("test/err", "short-size", [busybox_layer(), lay], manifest_hook=shrink)
    ref = base + ":short-size"
    expect_failure(s, s.create(image={"uri": ref}), 500, "SANDBOX::IMAGE_DIGEST_MISMATCH", ref,
                   "layer longer than its manifest size")

    reg.push_image("test/err", "corrupt-config", [busybox_layer(), uniq_layer("cfg")],
                   config={"Env": ["X=corrupt-config"]})
    reg.corrupt_blob(reg.last_manifest["config"]["digest"])
    ref = base + ":corrupt-config"
    expect_failure(s, s.create(image={"uri": ref}), 500, "SANDBOX::IMAGE_DIGEST_MISMATCH", ref,
                   "config blob that does not match its digest")

    def odd_type(man):
        man["layers"][-1]["mediaType"] = "application/vnd.example.layer.v1+squashfs"
    reg.push_image("test/err", "odd-type", [busybox_layer(), uniq_layer("odd")],
                   manifest_hook=odd_type)
    ref = base + ":odd-type"
    msg = expect_failure(s, s.create(image={"uri": ref}), 400, "SANDBOX::IMAGE_UNSUPPORTED",
                         ref, "unsupported layer media type")
    t.ok("squashfs" in msg, "the message names the media type", msg)

    reg.push_image("test/err", "bad-config", [busybox_layer()], raw_config=b"{not json")
    ref = base + ":bad-config"
    # registry.h: a malformed config is OSB_E_INVALID.
    expect_failure(s, s.create(image={"uri": ref}), 400, "SANDBOX::IMAGE_INVALID", ref,
                   "config blob that is not JSON")

    for bad in ("127.0.0.1:%d/Test/UPPER:1" % reg.port, "%s/test/x:bad tag" % reg.addr,
                "%s/test/x@sha256:xyz" % reg.addr):
        r = s.create(image={"uri": bad})
        t.ok(r.status == 400 and r.json().get("code"), "malformed reference %r -> 400" % bad,
             "%d %s" % (r.status, r.body[:300]))
        t.eq(s.list_all(), [], "malformed reference %r: nothing created" % bad)
    t.ok(s.get("/health").status == 200, "server healthy after every failed pull")


def test_hostile_layers(s, reg):
    u = uuid.uuid4().hex[:10]
    victim = scratch_dir("osb-victim-")
    os.chmod(victim, 0o755)
    try:
        cases = [
            ("dotdot", [("raw", "../evil-" + u, b"x")], "../evil-" + u),
            ("dotdot-deep", [("raw", "a/../../evil2-" + u, b"x")], "evil2-" + u),
            ("absolute", [("raw", "/abs-evil-" + u, b"x")], "abs-evil-" + u),
            ("symlink-parent", [("symlink", "esc", victim), ("raw", "esc/pwned-" + u, b"x")],
             "esc/pwned-" + u),
            ("symlink-rel-parent", [("symlink", "up", "../../../../../../.."),
                                    ("raw", "up" + victim + "/pwned2-" + u, b"x")],
             "pwned2-" + u),
            ("hardlink-out", [("hardlink", "hl-" + u, "../../../../etc/hostname")], "hl-" + u),
        ]
        for tag, entries, entry in cases:
            lay = tar_layer([("file", "ok-" + tag, b"fine")] + entries)
            reg.push_image("test/hostile", tag, [busybox_layer(), lay])
            ref = "%s/test/hostile:%s" % (reg.addr, tag)
            msg = expect_failure(s, s.create(image={"uri": ref}), 400, "SANDBOX::IMAGE_INVALID",
                                 ref, "hostile layer %s" % tag)
            t.ok(entry in msg, "hostile layer %s: the message names the entry" % tag, msg)
            t.ok(layer_key(sha256_digest(lay[0])) not in layer_entries(s),
                 "hostile layer %s: not committed" % tag)
        # Across layers: layer 1 plants a symlink to the victim dir, layer 2 writes through
        # it. Layers unpack separately, so this may succeed, but the victim stays empty.
        l1 = tar_layer([("symlink", "esc2", victim)])
        l2 = tar_layer([("file", "esc2/pwned3-" + u, b"x")])
        reg.push_image("test/hostile", "cross", [busybox_layer(), l1, l2])
        r = s.create(image={"uri": "%s/test/hostile:cross" % reg.addr})
        if r.status == 202:
            delete_sandbox(s, r.json()["id"])
        else:
            t.ok(r.body[:1] == b"{" and r.json().get("code"), "cross-layer symlink: 202 or a "
                 "clear error", r.body[:300])
        t.eq(os.listdir(victim), [], "nothing written into the victim dir")
        found = []
        for top in (s.tmp, os.path.dirname(s.tmp), "/", "/tmp", victim):
            try:
                found += [os.path.join(top, n) for n in os.listdir(top) if u in n]
            except OSError:
                pass
        layers = os.path.join(s.state_dir, "layers") + os.sep
        for root, dirs, files in os.walk(s.tmp):
            # The accepted cross-layer file lives inside its own layer: that is
            # where it belongs (the overlay shows it under a real /esc2 dir).
            found += [os.path.join(root, n) for n in dirs + files
                      if u in n and not (n.startswith("pwned3-") and root.startswith(layers))]
        t.eq(found, [], "no file of a refused entry anywhere (state dir, /, /tmp)")
    finally:
        shutil.rmtree(victim, ignore_errors=True)


# ---------------------------------------------------------------- concurrency

def test_concurrent(s, reg):
    la, lb = uniq_layer("conc-a", 4 << 20), uniq_layer("conc-b", 4 << 20)
    reg.push_image("test/conc", "1", [busybox_layer(), la, lb])
    cfg = reg.last_manifest["config"]["digest"]
    ref = "%s/test/conc:1" % reg.addr
    results = [None, None]

    def create(i):
        try:
            results[i] = s.create(image={"uri": ref}, http_timeout=120)
        except Exception as e:  # reported below
            results[i] = e
    ths = [threading.Thread(target=create, args=(i,)) for i in range(2)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(150)
    t.ok(all(hasattr(r, "status") and pulled_ok(r) for r in results),
         "two concurrent creates of a new image both succeed",
         [getattr(r, "status", r) for r in results])
    gets = [reg.blob_gets(sha256_digest(l[0])) for l in (la, lb)]
    t.eq(gets, [1, 1], "each new layer blob was fetched once")
    t.ok(reg.blob_gets(cfg) in (1, 2), "config blob fetched at most once per create",
         reg.blob_gets(cfg))
    if not DYNAMIC_EXECD:
        for r in results:
            if getattr(r, "status", 0) == 202:
                t.eq(sh(s, r.json()["id"], "cat /uniq/conc-a /uniq/conc-b"),
                     (0, "conc-a\nconc-b"), "both sandboxes see the image")
    s.delete_all()


# ---------------------------------------------------------------- CLI

def test_cli(s, reg):
    lay = uniq_layer("cli", 1 << 16)
    digest = reg.push_image("test/cli", "1", [busybox_layer(), lay])
    ref = "%s/test/cli:1" % reg.addr
    r = cli(s, "image", "pull", ref)
    t.ok(r.returncode == 0, "image pull -> exit 0", r.stderr[-500:])
    t.ok("%s %s" % (ref, digest) in r.stdout.splitlines(),
         "image pull prints '<name> <digest>' on stdout", r.stdout[-500:])
    head, rows = image_rows(s)
    t.ok("DIGEST" in head.split(), "image list has a DIGEST column", head)
    t.ok(ref in rows and digest.split(":")[1][:12] in rows.get(ref, ""),
         "image list shows the pulled image with its digest", rows)
    t.ok(layer_key(sha256_digest(lay[0])) in layer_entries(s),
         "the pulled layer is in <state>/layers", sorted(layer_entries(s)))
    r = cli(s, "image", "pull", "%s/test/cli:absent" % reg.addr)
    t.ok(r.returncode != 0 and "test/cli:absent" in r.stderr, "image pull of an unknown tag "
         "fails naming the image", r)

    if not DYNAMIC_EXECD:
        before = reg.blob_gets(sha256_digest(lay[0]))
        sid = run_ok(s, ref, "sandbox from a CLI-pulled image")
        if sid:
            t.eq((before, reg.blob_gets(sha256_digest(lay[0]))), (1, 1),
                 "create reuses the layer the CLI pulled")
            r = cli(s, "image", "rm", ref)
            t.ok(r.returncode == 1 and "in use" in (r.stderr + r.stdout).lower(),
                 "image rm refused while a sandbox uses it (exit 1, 'in use')", r)
            _, rows = image_rows(s)
            t.ok(ref in rows, "still listed after the refused rm")
            delete_sandbox(s, sid)
    r = cli(s, "image", "rm", ref)
    t.ok(r.returncode == 0, "image rm once unused", r.stderr)
    _, rows = image_rows(s)
    t.ok(ref not in rows, "removed image not listed")
    key, bb_key = layer_key(sha256_digest(lay[0])), layer_key(sha256_digest(busybox_layer()[0]))
    t.ok(key in layer_entries(s), "rm leaves the layer for prune")
    had = key in layer_entries(s)
    r = cli(s, "image", "prune")
    t.ok(r.returncode == 0, "image prune", r.stderr)
    after = layer_entries(s)
    t.ok(had and key not in after, "prune removed the unreferenced layer", sorted(after))
    t.ok(bb_key in after, "prune kept the busybox layer other images use", sorted(after))

    # import
    tar = os.path.join(s.tmp, "rootfs.tar")
    with open(tar, "wb") as f:
        f.write(busybox_layer(None)[0])
    r = cli(s, "image", "import", "imported/bb", tar)
    t.ok(r.returncode == 0, "image import", r.stderr)
    _, rows = image_rows(s)
    t.ok("imported/bb" in rows, "imported image listed", rows)
    if not DYNAMIC_EXECD:
        sid = run_ok(s, "imported/bb", "sandbox from an imported image")
        if sid:
            t.eq(sh(s, sid, "grep -c ^app: /etc/passwd"), (0, "1"), "imported image runs")
            delete_sandbox(s, sid)
    t.eq(cli(s, "image", "rm", "imported/bb").returncode, 0, "rm the imported image")

    # export: an OCI layout whose layers unpack to what was pushed
    l1 = tar_layer([("file", "etc/motd", b"m\n"), ("file", "data/a", b"a"),
                    ("file", "bin/tool", b"#!/bin/sh\n", 0o4755), ("symlink", "lnk", "data/a")])
    l2 = tar_layer([("whiteout", "etc/motd"), ("opaque", "data"), ("file", "data/b", b"b")],
                   "zstd")
    layers = [busybox_layer(), l1, l2]
    reg.push_image("test/export", "1", layers, config={"Env": ["E=1"]})
    ref = "%s/test/export:1" % reg.addr
    t.eq(cli(s, "image", "pull", ref).returncode, 0, "pull the image to export")
    out = os.path.join(s.tmp, "export.tar")
    r = cli(s, "image", "export", ref, out)
    t.ok(r.returncode == 0 and os.path.isfile(out), "image export", r.stderr)
    try:
        got = oci_archive_files(out)
    except Exception as e:  # AssertionError from the layout checks, tar errors
        t.ok(False, "exported archive is a valid OCI layout", repr(e))
        return
    want = layer_files([d for d, _ in layers])
    diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    t.eq(diff[:20], [], "exported layers unpack to the pushed files (whiteouts applied, "
                        "modes and links kept)")
    t.eq(cli(s, "image", "export", "no/such:image", out + "2").returncode != 0, True,
         "export of an unknown image fails")
    t.ok(not os.path.exists(out + "2"), "a failed export leaves no file")


# ---------------------------------------------------------------- mirrors, restarts

def test_mirror(s, mreg):
    lay = tar_layer([("file", "mirror", b"from the mirror\n")])
    mreg.push_image("library/busybox", "mirror", [busybox_layer(), lay])
    for ref in ("busybox:mirror", "docker.io/library/busybox:mirror"):
        if DYNAMIC_EXECD:
            r = cli(s, "image", "pull", ref)
            t.ok(r.returncode == 0, "pull %s through the mirror" % ref, r.stderr)
            continue
        sid = run_ok(s, ref, "%s through the mirror" % ref)
        if sid:
            t.eq(sh(s, sid, "cat /mirror"), (0, "from the mirror"), "%s: mirror's image" % ref)
            delete_sandbox(s, sid)
    t.eq(mreg.blob_gets(sha256_digest(lay[0])), 1, "mirror served the layer once")
    _, rows = image_rows(s)
    t.ok("docker.io/library/busybox:mirror" in rows, "stored under the canonical docker.io "
         "name", rows)


def test_restart(s, reg):
    ref = "%s/test/busybox:gz" % reg.addr
    _, rows = image_rows(s)
    if ref not in rows:  # the formats test did not run (sanitizer build): pull it here
        cli(s, "image", "pull", ref)
        _, rows = image_rows(s)
    if not t.ok(ref in rows, "image pulled before the restart", rows):
        return
    s.delete_all()
    blobs = [sha256_digest(busybox_layer()[0])]
    before = [reg.blob_gets(d) for d in blobs]
    entries = layer_entries(s)
    s.kill(signal.SIGTERM)
    s.start()
    _, rows = image_rows(s)
    t.ok(ref in rows, "image still listed after a restart")
    t.eq(layer_entries(s), entries, "layers kept across the restart")
    if not DYNAMIC_EXECD:
        sid = run_ok(s, ref, "after restart")
        if sid:
            t.eq(sh(s, sid, "cat /format"), (0, "gz gzip"), "sandbox from the stored image")
            delete_sandbox(s, sid)
    t.eq([reg.blob_gets(d) for d in blobs], before, "no blob fetched again after the restart")


def main():
    if not registry_available():
        t.skip("images", "docker-registry or htpasswd missing (scripts/install-deps.sh)")
        return
    user, password = "alice", "pw-" + uuid.uuid4().hex
    wrong = "wrong-" + uuid.uuid4().hex
    dead_port = free_port()
    with Registry() as reg, Registry(users={user: password}) as preg, Registry() as mreg:
        extra = "\n".join([
            "[image]",
            "insecure_registries = %s" % json.dumps([reg.addr, preg.addr,
                                                     "127.0.0.1:%d" % dead_port]),
            "mirrors = %s" % json.dumps([mreg.url])])
        with Server(extra=extra, tmp_dir=scratch_base()) as s:
            t.run(test_formats, s, reg, timeout=180)
            t.run(test_multiarch, s, reg, timeout=120)
            t.run(test_whiteouts, s, reg, timeout=60)
            t.run(test_image_config, s, reg, timeout=120)
            t.run(test_private, s, preg, user, password, wrong, timeout=120)
            t.run(test_errors, s, reg, dead_port, timeout=180)
            t.run(test_hostile_layers, s, reg, timeout=120)
            t.run(test_concurrent, s, reg, timeout=180)
            t.run(test_cli, s, reg, timeout=240)
            t.run(test_mirror, s, mreg, timeout=60)
            t.run(test_restart, s, reg, timeout=60)
            check_secret_absent(s, [password, wrong], "whole run")


t.run(main, timeout=580)
t.done()
