#!/usr/bin/python3
"""Images built offline from Debian packages (issue #16): scripts/build-image.sh builds
each image --from-host into a server's store (cached by content) and a sandbox from it runs:
`chromium` (image list shows it; its entrypoint runs Chromium headless, DevTools on
127.0.0.1:9222 inside; a second build is a cache hit; --out), `desktop` (noVNC on 6080 through
the server proxy, SCREEN_RESOLUTION), `code-interpreter` (a cell in each of the six code-context
languages, Debian's scientific Python), `playwright` (playwright-core drives the image's
Chromium). Bad input (an unknown name, a package the host lacks) fails clearly; image import
takes an OCI layout tar. Opt-in: OSB_TEST_DEBOOTSTRAP=1 builds `code-interpreter` with
--debootstrap from Debian's mirror (minutes) and imports numpy inside."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
from registrylib import MT, Registry, registry_available, scratch_base, scratch_dir  # noqa: E402

t = TAP()
SCRIPT = os.path.join(REPO, "scripts", "build-image.sh")


def build(*args, config=None, cache=None, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("SANDBOX_CONFIG_PATH", None)
    e["OSB_SERVER_BIN"] = SERVER_BIN
    if cache:
        e["OSB_IMAGE_CACHE"] = cache
    e.update(env or {})
    cmd = [SCRIPT] + list(args) + (["--config", config] if config else [])
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    r.seconds = time.monotonic() - t0
    return r


def cli(s, *args, timeout=120):
    return subprocess.run([SERVER_BIN, "--config", s.config] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def listed(s, name):
    r = cli(s, "image", "list")
    return r.returncode == 0 and any(l.split()[:1] == [name] for l in r.stdout.splitlines())


def sh(s, sid, cmd, timeout=30):
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=timeout).events
    return exit_code(ev), "\n".join(stdout_lines(ev)).strip()


def cached_tar(stderr):
    for l in stderr.splitlines():
        for mark in ("cache hit: ", "built "):
            if mark in l:
                return l.split(mark, 1)[1].split()[0]
    return None


def execd_dynamic():
    with open(EXECD_BIN, "rb") as f:
        return b"ld-linux" in f.read(8192)


def create_from(s, image, **fields):
    """A sandbox from a built image, or None (skipped): a sanitizer build's execd is
    dynamically linked and cannot run in an image without its libraries."""
    if execd_dynamic():
        t.skip(image + " run", "execd is dynamically linked (sanitizer build)")
        return None
    return s.create(image={"uri": image}, http_timeout=120, **fields)


def built_sandbox(s, cache, image, **fields):
    """Builds image --from-host into s's store and creates a sandbox from it: its id,
    or None (the build or the create failed, or the run is skipped: create_from)."""
    r = build(image, "--from-host", config=s.config, cache=cache)
    if not t.ok(r.returncode == 0, "build %s --from-host (%.1f s)" % (image, r.seconds),
                r.stderr[-3000:]):
        return None
    resp = create_from(s, image, **fields)
    if not resp or not t.ok(resp.status == 202, "sandbox from %s -> 202" % image, resp.body[:400]):
        return None
    return resp.json()["id"]


def test_bad_input(cache):
    r = build("no-such-image", cache=cache)
    t.eq(r.returncode, 2, "unknown image -> exit 2", r.stderr)
    t.ok("chromium" in r.stderr and "code-interpreter" in r.stderr,
         "the error lists the image names", r.stderr)
    r = build(cache=cache)
    t.eq(r.returncode, 2, "no name -> exit 2", r.stderr)
    r = build("chromium", "--bogus", cache=cache)
    t.eq(r.returncode, 2, "unknown option -> exit 2", r.stderr)
    # An image whose package the host lacks: --from-host names it.
    d = scratch_dir("osb-images-")
    try:
        os.makedirs(os.path.join(d, "fake"))
        with open(os.path.join(d, "fake", "packages"), "w") as f:
            f.write("dash\nosb-no-such-package\n")
        r = build("fake", "--from-host", cache=cache, env={"OSB_IMAGES_DIR": d})
        t.eq(r.returncode, 1, "--from-host with a missing package -> exit 1", r.stderr)
        t.ok("osb-no-such-package" in r.stderr and "not installed" in r.stderr,
             "the error names the missing package", r.stderr)
        t.ok(not any(n.startswith("fake-") for n in os.listdir(cache)),
             "nothing cached for the failed build", os.listdir(cache))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_push(cache):
    """--push REF: built, imported into the config's store, pushed (a small image of the
    host's dash, so that the push is quick)."""
    if not registry_available():
        t.skip("push", "docker-registry is not installed (scripts/install-deps.sh test)")
        return
    d = scratch_dir("osb-images-")
    try:
        os.makedirs(os.path.join(d, "mini"))
        with open(os.path.join(d, "mini", "packages"), "w") as f:
            f.write("dash\n")
        with open(os.path.join(d, "mini", "config.json"), "w") as f:
            json.dump({"Cmd": ["/bin/sh"], "Env": ["MINI=1"]}, f)
        with Registry() as reg:
            config = os.path.join(d, "sandbox.toml")
            with open(config, "w") as f:
                f.write("[native]\nstate_dir = %s\n[image]\ninsecure_registries = [%s]\n"
                        % (json.dumps(os.path.join(d, "state")), json.dumps(reg.addr)))
            ref = "%s/osb/mini:1" % reg.addr
            r = build("mini", "--from-host", "--push", ref, config=config, cache=cache,
                      env={"OSB_IMAGES_DIR": d})
            t.eq((r.returncode, r.stdout.strip()), (0, ref), "--push REF: exit 0, prints REF",
                 r.stderr[-2000:])
            st, _, body = reg.get("/v2/osb/mini/manifests/1", headers={"Accept": MT.OCI_MANIFEST})
            man = json.loads(body) if st == 200 else {}
            t.ok(st == 200 and len(man.get("layers", [])) == 1,
                 "the registry holds the image (one layer)", "%d %s" % (st, body[:300]))
            st, _, body = reg.get("/v2/osb/mini/blobs/" + man.get("config", {}).get("digest", "x"))
            cfg = json.loads(body).get("config", {}) if st == 200 else {}
            t.ok("MINI=1" in cfg.get("Env", []) and cfg.get("Cmd") == ["/bin/sh"],
                 "with the image's config", body[:300])
            r = build("mini", "--push", ref, "--out", os.path.join(d, "x.tar"), cache=cache,
                      env={"OSB_IMAGES_DIR": d})
            t.eq(r.returncode, 2, "--push with --out -> exit 2", r.stderr)
            r = build("mini", "--from-host", "--push", "127.0.0.1:1/osb/mini:1", config=config,
                      cache=cache, env={"OSB_IMAGES_DIR": d})
            t.ok(r.returncode == 1 and "push" in r.stderr.splitlines()[-1],
                 "a registry that is not there: exit 1, the push named", r.stderr[-800:])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_chromium(s, cache):
    if subprocess.run(["dpkg-query", "-W", "chromium"], capture_output=True).returncode:
        t.skip("chromium", "chromium is not installed (scripts/install-deps.sh test)")
        return
    r = build("chromium", "--from-host", config=s.config, cache=cache)
    ok = t.ok(r.returncode == 0, "build chromium --from-host (%.1f s)" % r.seconds, r.stderr[-3000:])
    if not ok:
        return
    t.eq(r.stdout.strip(), "chromium", "prints the name to use in image.uri")
    tar = cached_tar(r.stderr)
    t.ok(tar and os.path.isfile(tar) and os.path.dirname(tar) == cache,
         "the tar is kept in the cache dir", r.stderr)
    t.ok(listed(s, "chromium"), "image list shows chromium", cli(s, "image", "list").stdout)

    resp = create_from(s, "chromium")
    ok = resp and t.ok(resp.status == 202 and resp.json()["status"]["state"] == "Running",
              "sandbox from chromium -> 202 Running", "%d %s" % (resp.status, resp.body[:400]))
    if ok:
        sid = resp.json()["id"]
        got = []

        def devtools():
            code, out = sh(s, sid, "curl -sf http://127.0.0.1:9222/json/version")
            if code == 0 and out:
                got.append(out)
                return True
            return False
        wait_for(devtools, timeout=30, interval=0.3)
        try:
            v = json.loads(got[0]) if got else {}
        except ValueError:
            v = {}
        t.ok("Chrome" in v.get("Browser", "") and
             v.get("webSocketDebuggerUrl", "").startswith("ws://127.0.0.1:9222/"),
             "the entrypoint runs Chromium headless: /json/version answers on 127.0.0.1:9222",
             got[:1] or sh(s, sid, "ps -ef 2>&1 | head; ls /tmp")[1])
        code, out = sh(s, sid, "ls /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc "
                               "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
        t.eq(code, 0, "CJK and emoji fonts in the image", out)
        code, out = sh(s, sid, "test -x /usr/local/bin/entrypoint.sh && command -v certutil")
        t.eq((code, out), (0, "/usr/bin/certutil"),
             "the entrypoint script and certutil (the vault's CA for Chromium) in the image")
        code, out = sh(s, sid, "/usr/bin/chromedriver --version")
        t.ok(code == 0 and "ChromeDriver" in out, "chromedriver runs", out)
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")

    r2 = build("chromium", "--from-host", config=s.config, cache=cache)
    t.ok(r2.returncode == 0 and "cache hit" in r2.stderr,
         "second build: a cache hit (%.1f s)" % r2.seconds, r2.stderr[-2000:])
    t.eq(cached_tar(r2.stderr), tar, "second build: the same tar")
    t.ok(listed(s, "chromium"), "re-imported: image list still shows chromium")
    out = os.path.join(s.tmp, "out.tar")
    r3 = build("chromium", "--from-host", "--out", out, cache=cache)
    t.ok(r3.returncode == 0 and os.path.getsize(out) == os.path.getsize(tar),
         "--out writes the tar", r3.stderr[-1000:])
    os.unlink(out)


def test_desktop(s, cache):
    missing = [p for p in ("xvfb", "openbox", "x11vnc", "novnc", "websockify", "chromium")
               if subprocess.run(["dpkg-query", "-W", p], capture_output=True).returncode]
    if missing:
        t.skip("desktop", "not installed: %s (scripts/install-deps.sh test)" % " ".join(missing))
        return
    sid = built_sandbox(s, cache, "desktop",
                        env={"SCREEN_RESOLUTION": "1024x768", "VNC_PASSWORD": "s3cret"})
    if not sid:
        return
    page = []

    def novnc():
        g = s.req("GET", "/v1/sandboxes/%s/proxy/6080/vnc.html" % sid, timeout=5)
        if g.status == 200:
            page.append(g.body)
            return True
        return False
    wait_for(novnc, timeout=60, interval=0.5)
    t.ok(page and b"noVNC" in page[0], "noVNC answers on port 6080 (/vnc.html, through the "
         "server proxy)", sh(s, sid, "tail -n 5 /tmp/desktop/*.log")[1])
    code, out = sh(s, sid, "xdpyinfo -display :0")
    t.ok(code == 0 and "1024x768 pixels" in out, "Xvfb uses SCREEN_RESOLUTION", out)
    # RFB handshake: after the version, the server lists its security types (2: VNC auth).
    code, out = sh(s, sid, "exec 3<>/dev/tcp/127.0.0.1/5900; head -c 12 <&3; "
                           "printf 'RFB 003.008\\n' >&3; head -c 2 <&3 | od -An -tu1")
    t.ok(code == 0 and out.split()[-2:] == ["1", "2"],
         "VNC_PASSWORD: x11vnc asks for VNC authentication", out)
    code, out = sh(s, sid, "ls /tmp/desktop; ps -eo args")
    files = out.split("COMMAND", 1)[0].split()
    t.ok(code == 0 and "vncpasswd" not in files and "s3cret" not in out,
         "the password file is gone and no command line holds the password", out)
    code, out = sh(s, sid, "ps -eo comm")
    t.ok(all(p in out for p in ("Xvfb", "openbox", "xterm", "chromium", "x11vnc")),
         "Xvfb, openbox, xterm, Chromium and x11vnc run", out)
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")


# A cell per language that prints 42: the six code-context languages.
CELLS = {"python": "print(6 * 7)", "javascript": "console.log(6 * 7)",
         "typescript": "const n: number = 6 * 7; console.log(n)",
         "java": "System.out.println(6 * 7);", "go": 'import "fmt"\nfmt.Println(6 * 7)',
         "bash": "echo $((6 * 7))"}


def test_code_interpreter(s, cache):
    sid = built_sandbox(s, cache, "code-interpreter")
    if not sid:
        return
    x = s.execd(sid)
    for lang, cell in CELLS.items():
        c = x.post("/code/context", json={"language": lang}, timeout=300)
        cid = c.json().get("id") if c.status == 200 else None
        if not t.ok(cid, "%s: a code context" % lang, c.body[:400]):
            continue
        ev = x.sse("/code", json={"code": cell, "context": {"id": cid}}, timeout=300).events
        text = "".join(e.get("text", "") for e in ev if e.get("type") == "stdout")
        t.eq(text.strip(), "42", "%s: a cell runs in the image" % lang, ev[-3:])
    code, out = sh(s, sid, "python3 -c 'import numpy, pandas, scipy, matplotlib; print(\"ok\")'",
                   timeout=120)
    t.eq((code, out), (0, "ok"), "numpy, pandas, scipy and matplotlib import")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")


# Run inside the playwright image: launch its Chromium, render a page, read it back.
PW_SCRIPT = r"""
const { chromium } = require("playwright-core");
(async () => {
  const b = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH,
                                    args: ["--no-sandbox"] });
  const p = await b.newPage();
  await p.setContent("<button onclick=\"this.textContent='clicked'\">go</button>");
  await p.click("button");
  console.log(await p.textContent("button"));
  await b.close();
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


def test_playwright(s, cache):
    sid = built_sandbox(s, cache, "playwright")
    if not sid:
        return
    x = s.execd(sid)
    w = x.sse("/command", json={"command": "cat > /tmp/pw.js <<'EOF'\n%sEOF" % PW_SCRIPT}).events
    t.eq(exit_code(w), 0, "the script is written")
    code, out = sh(s, sid, "node /tmp/pw.js", timeout=120)
    t.eq((code, out), (0, "clicked"), "playwright-core drives the image's Chromium")
    code, out = sh(s, sid, "head -n 1 /usr/local/bin/entrypoint.sh && command -v certutil")
    t.eq((code, out.split()), (0, ["#!/bin/sh", "/usr/bin/certutil"]),
         "the entrypoint script (the vault's CA for Chromium) and certutil in the image")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")


def oci_archive(path, layer, config, corrupt=False, extra=None):
    """An OCI image layout tar with one gzip layer (bytes of a tar) and config."""
    import gzip
    import hashlib
    import io
    import tarfile
    blobs = {}

    def add(data):
        h = hashlib.sha256(data).hexdigest()
        blobs[h] = data
        return {"digest": "sha256:" + h, "size": len(data)}
    diff = "sha256:" + hashlib.sha256(layer).hexdigest()
    ld = dict(add(gzip.compress(layer)), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")
    cd = dict(add(json.dumps({"architecture": "amd64", "os": "linux", "config": config,
                              "rootfs": {"type": "layers", "diff_ids": [diff]}}).encode()),
              mediaType="application/vnd.oci.image.config.v1+json")
    md = dict(add(json.dumps({"schemaVersion": 2, "config": cd, "layers": [ld],
                              "mediaType": "application/vnd.oci.image.manifest.v1+json"})
                  .encode()), mediaType="application/vnd.oci.image.manifest.v1+json")
    files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
             "index.json": json.dumps({"schemaVersion": 2, "manifests": [md]}).encode()}
    for h, data in blobs.items():
        if corrupt and h == ld["digest"][7:]:
            data = data[:-1] + bytes([data[-1] ^ 1])
        files["blobs/sha256/" + h] = data
    files.update(extra or {})
    with tarfile.open(path, "w") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))


def test_oci_import(s):
    """image import of an OCI layout tar: the config is kept, blobs are checked."""
    bb = os.path.join(s.tmp, "bb.tar")
    subprocess.run([os.path.join(REPO, "scripts", "make-image-busybox.sh"), bb], check=True)
    with open(bb, "rb") as f:
        layer = f.read()
    ok = os.path.join(s.tmp, "oci.tar")
    oci_archive(ok, layer, {"Entrypoint": ["/bin/sh", "-c"],
                            "Cmd": ["echo $GREETING >/tmp/ep; exec sleep 1000"],
                            "Env": ["GREETING=from-the-config", "PATH=/usr/bin:/bin"],
                            "WorkingDir": "/work"})
    r = cli(s, "image", "import", "oci/bb", ok)
    t.ok(r.returncode == 0 and listed(s, "oci/bb"), "import an OCI layout tar", r.stderr)
    key = os.path.join(s.state_dir, "layers")
    t.ok(any(n.startswith("sha256-") for n in os.listdir(key)),
         "its layer is stored by digest", os.listdir(key))
    t.eq([n for n in os.listdir(key) if n.startswith(".tmp")], [], "no temporary left")
    if execd_dynamic():
        t.skip("oci import run", "execd is dynamically linked (sanitizer build)")
    else:
        resp = s.create(image={"uri": "oci/bb"}, http_timeout=60)
        if t.ok(resp.status == 202, "sandbox from the imported OCI image", resp.body[:300]):
            sid = resp.json()["id"]
            got = []
            wait_for(lambda: got.append(sh(s, sid, "cat /tmp/ep; pwd")) or
                     got[-1][1].startswith("from-the-config"), timeout=10, interval=0.1)
            t.eq(got[-1] if got else None, (0, "from-the-config\n/work"),
                 "its Entrypoint, Cmd, Env and WorkingDir are applied")
            t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")
    # The same layer again under another name: not unpacked twice.
    before = set(os.listdir(key))
    r = cli(s, "image", "import", "oci/bb2", ok)
    t.ok(r.returncode == 0 and set(os.listdir(key)) == before,
         "a second import reuses the stored layer", r.stderr)
    bad = os.path.join(s.tmp, "bad.tar")
    oci_archive(bad, layer, {}, corrupt=True)
    r = cli(s, "image", "import", "oci/bad", bad)
    t.ok(r.returncode != 0 and "does not match its digest" in r.stderr,
         "a blob that does not match its digest fails the import", r.stderr)
    oci_archive(bad, layer, {}, extra={"etc/passwd": b"x"})
    r = cli(s, "image", "import", "oci/bad", bad)
    t.ok(r.returncode != 0 and "no part of an OCI image layout" in r.stderr,
         "a stray file in an OCI layout fails the import", r.stderr)
    t.ok(not listed(s, "oci/bad"), "no record for the failed imports")
    t.eq([n for n in os.listdir(key) if n.startswith(".tmp")], [], "no temporary left")
    # export writes an OCI layout: it imports back.
    out = os.path.join(s.tmp, "exp.tar")
    r = cli(s, "image", "export", "oci/bb", out)
    r2 = cli(s, "image", "import", "oci/bb3", out)
    t.ok(r.returncode == 0 and r2.returncode == 0 and listed(s, "oci/bb3"),
         "image export's tar imports back", r.stderr + r2.stderr)
    for n in ("oci/bb", "oci/bb2", "oci/bb3"):
        cli(s, "image", "rm", n)


def test_debootstrap(s, cache):
    r = build("code-interpreter", "--debootstrap", config=s.config, cache=cache, timeout=1800)
    ok = t.ok(r.returncode == 0, "build code-interpreter --debootstrap (%.0f s)" % r.seconds,
              r.stderr[-3000:])
    if not ok:
        return
    resp = s.create(image={"uri": "code-interpreter"}, http_timeout=120)
    if t.ok(resp.status == 202, "sandbox from code-interpreter", resp.body[:400]):
        sid = resp.json()["id"]
        t.eq(sh(s, sid, "python3 -c 'import numpy; print(numpy.__name__)'", timeout=60),
             (0, "numpy"), "python3 imports numpy inside")
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the sandbox")


def main():
    cache = scratch_dir("osb-imgcache-")
    try:
        t.run(test_bad_input, cache, timeout=60)
        t.run(test_push, cache, timeout=180)
        with Server(tmp_dir=scratch_base()) as s:
            t.run(test_oci_import, s, timeout=120)
            t.run(test_chromium, s, cache, timeout=300)
            t.run(test_desktop, s, cache, timeout=300)
            t.run(test_code_interpreter, s, cache, timeout=900)
            t.run(test_playwright, s, cache, timeout=300)
            if os.environ.get("OSB_TEST_DEBOOTSTRAP") == "1":
                # OSB_IMAGE_CACHE: reuse a cache (a tar built before is a hit).
                t.run(test_debootstrap, s, os.environ.get("OSB_IMAGE_CACHE") or cache,
                      timeout=1900)
            else:
                t.skip("debootstrap", "set OSB_TEST_DEBOOTSTRAP=1 (downloads from Debian's "
                                      "mirror, minutes)")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


t.run(main, timeout=2000)
t.done()
