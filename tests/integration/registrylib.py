"""A real OCI registry on loopback for the image tests (Debian's docker-registry 2.8),
and builders for the layers, configs, manifests and indexes the tests push to it.

    from registrylib import *

    with Registry(users={"alice": "pw"}) as reg:      # users: htpasswd basic auth
        reg.addr                                      # "127.0.0.1:PORT"
        d = reg.push_blob("test/x", b"...")           # "sha256:..." (POST + PUT upload)
        d = reg.push_manifest("test/x", "tag", manifest_dict, media_type)
        d = reg.push_image("test/x", "tag", [busybox_layer(), tar_layer([...])],
                           config={"Env": [...], "WorkingDir": "/w", "User": "1000",
                                   "Entrypoint": [...], "Cmd": [...]}, oci=True)
        d = reg.push_index("test/x", "multi", [(digest, size, media_type,
                                                {"os": "linux", "architecture": "amd64"})])
        reg.blob_gets(digest)                          # GETs of that blob served (access log)
        reg.corrupt_blob(digest)                       # flip its bytes on disk (same size)
        reg.get(path, auth=None) -> (status, headers, body)   plain urllib, for self-checks

    tar_layer(entries, compression="gzip") -> (bytes, media_type)
        ("file", path, data, mode=0o644) ("dir", path, mode=0o755) ("symlink", path, target)
        ("hardlink", path, target) ("whiteout", path) -> dir/.wh.name
        ("opaque", dir) -> dir/.wh..wh..opq   ("raw", tarinfo_name, data): name kept verbatim
        compression: "gzip", "zstd" (zstd CLI) or None
    busybox_layer(compression="gzip")  a runnable busybox root (scripts/make-busybox-rootfs.sh)
        with users root and app (uid/gid 1000), /tmp, /root, /home/app
    oci_archive_files(tar_path) -> {path: ("file", data, mode) | ("dir",) | ("symlink", target)}
        the root filesystem an exported OCI-layout tar describes, whiteouts applied, after
        checking every blob against its digest
    layer_files(layers) same for a list of layer tar bytes (compressed or not)

Storage lives in a temp dir under $HOME (file creation in /tmp is slow on the test VM),
removed by stop(). The registry listens on 127.0.0.1 only. Run as a script it only checks
that it imports (test_registrylib.py exercises it against the real registry).
"""
import base64
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Registry", "tar_layer", "busybox_layer", "oci_archive_files", "layer_files",
           "sha256_digest", "MT", "REGISTRY_BIN", "registry_available", "scratch_dir",
           "scratch_base"]

REGISTRY_BIN = os.environ.get("OSB_REGISTRY_BIN", "/usr/bin/docker-registry")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))


class MT:
    """Media types."""
    OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
    OCI_INDEX = "application/vnd.oci.image.index.v1+json"
    OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
    OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
    OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
    OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
    DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
    DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
    DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
    DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar"
    DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"


_OCI_TO_DOCKER = {MT.OCI_LAYER: MT.DOCKER_LAYER, MT.OCI_LAYER_GZIP: MT.DOCKER_LAYER_GZIP}


def registry_available():
    return os.access(REGISTRY_BIN, os.X_OK) and shutil.which("htpasswd") is not None


def scratch_base():
    """$HOME, else /var/tmp: not /tmp, where file creation is slow on the test VM."""
    for base in (os.environ.get("HOME"), "/var/tmp"):
        if base and os.path.isdir(base) and os.access(base, os.W_OK):
            return base
    return tempfile.gettempdir()


def scratch_dir(prefix):
    """A fresh temp dir under scratch_base()."""
    return tempfile.mkdtemp(prefix=prefix, dir=scratch_base())


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- layers

def _decompress(data):
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        return subprocess.run(["zstd", "-d", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                              check=True).stdout
    return data


def _compress(raw, compression):
    if compression is None:
        return raw, MT.OCI_LAYER
    if compression == "gzip":
        # mtime=0: the same content always gives the same blob digest
        return gzip.compress(raw, compresslevel=6, mtime=0), MT.OCI_LAYER_GZIP
    if compression == "zstd":
        out = subprocess.run(["zstd", "-q", "-3", "-c"], input=raw, stdout=subprocess.PIPE,
                             check=True).stdout
        return out, MT.OCI_LAYER_ZSTD
    raise ValueError("compression %r" % (compression,))


def _ti(name, typ=tarfile.REGTYPE, mode=0o644, size=0):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.size = typ, mode, size
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    ti.mtime = 1700000000
    return ti


def _parents(path, seen, tf):
    """Directory entries for the parents of path not yet in the tar (as real tools do)."""
    parts = path.strip("/").split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d and d not in seen:
            seen.add(d)
            tf.addfile(_ti(d, tarfile.DIRTYPE, 0o755))


def tar_layer(entries, compression="gzip"):
    """Layer bytes + OCI media type from entry tuples (see the module doc)."""
    buf = io.BytesIO()
    seen = set()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for e in entries:
            kind = e[0]
            if kind == "raw":
                data = e[2] if len(e) > 2 else b""
                ti = _ti(e[1], size=len(data))
                tf.addfile(ti, io.BytesIO(data))
                continue
            path = e[1].strip("/")
            if kind == "file":
                data = e[2]
                mode = e[3] if len(e) > 3 else 0o644
                _parents(path, seen, tf)
                tf.addfile(_ti(path, mode=mode, size=len(data)), io.BytesIO(data))
            elif kind == "dir":
                _parents(path, seen, tf)
                seen.add(path)
                tf.addfile(_ti(path, tarfile.DIRTYPE, e[2] if len(e) > 2 else 0o755))
            elif kind in ("symlink", "hardlink"):
                _parents(path, seen, tf)
                ti = _ti(path, tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE,
                         0o777 if kind == "symlink" else 0o644)
                ti.linkname = e[2]
                tf.addfile(ti)
            elif kind == "whiteout":
                d, base = os.path.split(path)
                wh = (d + "/" if d else "") + ".wh." + base
                _parents(wh, seen, tf)
                tf.addfile(_ti(wh, mode=0o600))
            elif kind == "opaque":
                _parents(path + "/x", seen, tf)
                tf.addfile(_ti(path + "/.wh..wh..opq", mode=0o600))
            else:
                raise ValueError("tar_layer: unknown entry kind %r" % (kind,))
    return _compress(buf.getvalue(), compression)


_busybox_cache = {}


def busybox_layer(compression="gzip"):
    """A runnable busybox root filesystem as one layer (cached per compression)."""
    if compression in _busybox_cache:
        return _busybox_cache[compression]
    if None not in _busybox_cache:
        _busybox_cache[None] = _busybox_tar()
    raw = _busybox_cache[None][0]
    _busybox_cache[compression] = _compress(raw, compression)
    return _busybox_cache[compression]


def _busybox_tar():
    root = scratch_dir("osb-bbroot-")
    try:
        rootfs = os.path.join(root, "rootfs")
        subprocess.run([os.path.join(REPO_ROOT, "scripts", "make-busybox-rootfs.sh"), rootfs],
                       env=dict(os.environ, EXECD_BIN="/nonexistent"), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # As in real images: an empty /dev (the runtime provides one), no execd.
        for d in ("dev", "opt/opensandbox"):
            p = os.path.join(rootfs, d)
            for n in os.listdir(p):
                os.unlink(os.path.join(p, n))
        os.rmdir(os.path.join(rootfs, "opt/opensandbox"))
        os.rmdir(os.path.join(rootfs, "opt"))
        with open(os.path.join(rootfs, "etc/passwd"), "a") as f:
            f.write("app:x:1000:1000:app:/home/app:/bin/sh\n")
        with open(os.path.join(rootfs, "etc/group"), "a") as f:
            f.write("app:x:1000:\n")
        os.makedirs(os.path.join(rootfs, "home/app"))
        os.chown(os.path.join(rootfs, "home/app"), 1000, 1000)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
            names = []
            for dirpath, dirs, files in os.walk(rootfs):
                dirs.sort()
                for n in sorted(dirs + files):
                    names.append(os.path.join(dirpath, n))
            for p in names:
                ti = tf.gettarinfo(p, os.path.relpath(p, rootfs))
                ti.uname = ti.gname = ""
                ti.mtime = 1700000000
                if ti.isreg():
                    with open(p, "rb") as f:
                        tf.addfile(ti, f)
                else:
                    tf.addfile(ti)
        return buf.getvalue(), MT.OCI_LAYER
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _apply_layer(files, raw):
    """Apply one uncompressed layer tar to files (path -> entry), OCI whiteouts included."""
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tf:
        for ti in tf:
            name = ti.name
            while name.startswith("./"):
                name = name[2:]
            name = name.strip("/")
            if not name or name == ".":
                continue
            d, base = os.path.split(name)
            if base == ".wh..wh..opq":
                for k in [k for k in files if k.startswith(d + "/")]:
                    del files[k]
                continue
            if base.startswith(".wh."):
                victim = os.path.join(d, base[4:])
                for k in [k for k in files if k == victim or k.startswith(victim + "/")]:
                    del files[k]
                continue
            if ti.isdir():
                if files.get(name, ("dir",))[0] != "dir":
                    del files[name]
                files[name] = ("dir",)
            elif ti.issym():
                files[name] = ("symlink", ti.linkname)
            elif ti.islnk():
                files[name] = files.get(ti.linkname.strip("/").lstrip("./"), ("hardlink",))
            elif ti.isreg():
                files[name] = ("file", tf.extractfile(ti).read(), ti.mode & 0o7777)
            else:
                files[name] = ("special", ti.type)


def layer_files(layers):
    files = {}
    for data in layers:
        _apply_layer(files, _decompress(data))
    return files


def oci_archive_files(tar_path):
    """The root filesystem of an OCI-layout tar (index.json, oci-layout, blobs/sha256/*).

    Raises AssertionError with a reason when the layout is broken or a blob does not
    match its digest."""
    with tarfile.open(tar_path) as tf:
        members = {m.name.lstrip("./"): m for m in tf.getmembers() if m.isreg()}

        def blob(digest):
            algo, hexd = digest.split(":", 1)
            m = members.get("blobs/%s/%s" % (algo, hexd))
            assert m is not None, "blob %s missing from the archive" % digest
            data = tf.extractfile(m).read()
            assert sha256_digest(data) == digest, "blob %s does not match its digest" % digest
            return data

        assert "oci-layout" in members, "no oci-layout file"
        layout = json.loads(tf.extractfile(members["oci-layout"]).read())
        assert layout.get("imageLayoutVersion") == "1.0.0", "oci-layout %r" % layout
        assert "index.json" in members, "no index.json"
        index = json.loads(tf.extractfile(members["index.json"]).read())
        desc = index["manifests"][0]
        man = json.loads(blob(desc["digest"]))
        while "manifests" in man:  # nested index
            desc = man["manifests"][0]
            man = json.loads(blob(desc["digest"]))
        cfg = json.loads(blob(man["config"]["digest"]))
        layers = [blob(l["digest"]) for l in man["layers"]]
        diff_ids = ["sha256:" + hashlib.sha256(_decompress(l)).hexdigest() for l in layers]
        assert cfg.get("rootfs", {}).get("diff_ids") == diff_ids, \
            "config diff_ids %r != layers %r" % (cfg.get("rootfs"), diff_ids)
        return layer_files(layers)


# ---------------------------------------------------------------- registry

class Registry:
    def __init__(self, users=None, start_timeout=10.0):
        self.users = dict(users or {})
        self.port = _free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.url = "http://" + self.addr
        self.dir = scratch_dir("osb-registry-")
        self.log_path = os.path.join(self.dir, "registry.log")
        self.config_path = os.path.join(self.dir, "config.yml")
        self.start_timeout = start_timeout
        self.proc = None
        self._auth = None
        if self.users:
            name, pw = next(iter(self.users.items()))
            self._auth = (name, pw)

    # ---------------------------------------------------------- process
    def _write_config(self):
        lines = ["version: 0.1",
                 "log:",
                 "  level: info",
                 "  accesslog:",
                 "    disabled: false",
                 "storage:",
                 "  filesystem:",
                 "    rootdirectory: %s" % json.dumps(os.path.join(self.dir, "data")),
                 "  delete:",
                 "    enabled: true",
                 "  maintenance:",
                 "    uploadpurging:",
                 "      enabled: false",
                 "http:",
                 "  addr: %s" % self.addr,
                 "  secret: osb-test-%s" % os.urandom(8).hex()]
        if self.users:
            htp = os.path.join(self.dir, "htpasswd")
            with open(htp, "w") as f:
                for name, pw in self.users.items():
                    out = subprocess.run(["htpasswd", "-Bbn", name, pw], check=True,
                                         stdout=subprocess.PIPE, text=True).stdout
                    f.write(out.strip() + "\n")
            lines += ["auth:", "  htpasswd:", "    realm: osb-test",
                      "    path: %s" % json.dumps(htp)]
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        self._write_config()
        log = open(self.log_path, "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        log.close()
        end = time.monotonic() + self.start_timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("docker-registry exited with %s\n%s" % (
                    self.proc.returncode, self.log_text()[-2000:]))
            try:
                st, _, _ = self.get("/v2/", timeout=1)
                if st in (200, 401):
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("docker-registry did not answer on %s" % self.addr)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()
        return False

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # ---------------------------------------------------------- http
    def _request(self, method, url, body=None, headers=None, auth=Ellipsis, timeout=30):
        if not url.startswith("http"):
            url = self.url + url
        req = urllib.request.Request(url, data=body, method=method)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        creds = self._auth if auth is Ellipsis else auth
        if creds:
            tok = base64.b64encode(("%s:%s" % creds).encode()).decode()
            req.add_header("Authorization", "Basic " + tok)
        # No proxies: the registry is on loopback and nothing may leave the machine.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=timeout) as r:
                return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def get(self, path, auth=Ellipsis, headers=None, timeout=30):
        return self._request("GET", path, headers=headers, auth=auth, timeout=timeout)

    def _check(self, what, st, body, want):
        if st not in want:
            raise RuntimeError("registry %s -> %d %s" % (what, st, body[:500]))

    # ---------------------------------------------------------- pushing
    def push_blob(self, repo, data):
        digest = sha256_digest(data)
        st, h, body = self._request("POST", "/v2/%s/blobs/uploads/" % repo, body=b"",
                                    headers={"Content-Length": "0"})
        self._check("upload start", st, body, (202,))
        loc = urllib.parse.urljoin(self.url + "/", h["location"])
        sep = "&" if "?" in loc else "?"
        st, _, body = self._request("PUT", loc + sep + "digest=" + urllib.parse.quote(digest),
                                    body=data,
                                    headers={"Content-Type": "application/octet-stream"})
        self._check("blob upload %s" % digest, st, body, (201,))
        return digest

    def push_manifest(self, repo, ref, manifest, media_type):
        raw = manifest if isinstance(manifest, bytes) else \
            json.dumps(manifest, indent=2).encode()
        st, h, body = self._request("PUT", "/v2/%s/manifests/%s" % (repo, ref), body=raw,
                                    headers={"Content-Type": media_type})
        self._check("manifest %s:%s" % (repo, ref), st, body, (201,))
        digest = sha256_digest(raw)
        if h.get("docker-content-digest", digest) != digest:
            raise RuntimeError("registry stored manifest as %s, pushed %s" % (
                h["docker-content-digest"], digest))
        return digest

    def make_config(self, layers, config=None, arch="amd64", os_name="linux"):
        diff_ids = ["sha256:" + hashlib.sha256(_decompress(d)).hexdigest() for d, _ in layers]
        return {"architecture": arch, "os": os_name,
                "created": "2024-01-01T00:00:00Z",
                "config": dict(config or {}),
                "rootfs": {"type": "layers", "diff_ids": diff_ids},
                "history": [{"created": "2024-01-01T00:00:00Z", "created_by": "osb-test"}
                            for _ in layers]}

    def push_image(self, repo, tag, layers, config=None, oci=True, arch="amd64",
                   os_name="linux", raw_config=None, manifest_hook=None):
        """Push layers + config + manifest; returns the manifest digest.

        raw_config: bytes pushed verbatim as the config blob. manifest_hook(dict) may edit
        the manifest before it is pushed (wrong sizes, odd media types)."""
        descs = []
        for data, mt in layers:
            if not oci:
                mt = _OCI_TO_DOCKER.get(mt, mt)
            descs.append({"mediaType": mt, "digest": self.push_blob(repo, data),
                          "size": len(data)})
        cfg = raw_config if raw_config is not None else json.dumps(
            self.make_config(layers, config, arch, os_name), indent=2).encode()
        man = {"schemaVersion": 2,
               "mediaType": MT.OCI_MANIFEST if oci else MT.DOCKER_MANIFEST,
               "config": {"mediaType": MT.OCI_CONFIG if oci else MT.DOCKER_CONFIG,
                          "digest": self.push_blob(repo, cfg), "size": len(cfg)},
               "layers": descs}
        if manifest_hook:
            manifest_hook(man)
        self.last_manifest = man
        raw = json.dumps(man, indent=2).encode()
        self.last_manifest_size = len(raw)
        return self.push_manifest(repo, tag, raw, man["mediaType"])

    def push_index(self, repo, tag, entries, oci=True):
        """entries: (manifest_digest, size, media_type, platform dict)."""
        mt = MT.OCI_INDEX if oci else MT.DOCKER_LIST
        idx = {"schemaVersion": 2, "mediaType": mt,
               "manifests": [{"mediaType": m, "digest": d, "size": n, "platform": p}
                             for d, n, m, p in entries]}
        return self.push_manifest(repo, tag, idx, mt)

    # ---------------------------------------------------------- inspection
    def blob_gets(self, digest):
        """GETs of /v2/<any repo>/blobs/<digest> the registry answered with 2xx."""
        pat = re.compile(r'"GET /v2/\S+/blobs/%s HTTP/[\d.]+" (\d{3}) ' % re.escape(digest))
        return sum(1 for m in pat.finditer(self.settled_log()) if m.group(1).startswith("2"))

    def settled_log(self, quiet=0.15, limit=2.0):
        """The log once it stopped growing for `quiet` seconds: the registry writes an
        access-log line after the response went out, so a client may be faster."""
        end = time.monotonic() + limit
        text = self.log_text()
        while time.monotonic() < end:
            time.sleep(quiet)
            again = self.log_text()
            if again == text:
                break
            text = again
        return text

    def requests(self):
        """(method, path, status) of every request in the access log."""
        return [(m.group(1), m.group(2), int(m.group(3))) for m in re.finditer(
            r'"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3}) ', self.settled_log())]

    def blob_path(self, digest):
        algo, hexd = digest.split(":", 1)
        return os.path.join(self.dir, "data", "docker", "registry", "v2", "blobs", algo,
                            hexd[:2], hexd, "data")

    def corrupt_blob(self, digest):
        """Flip every byte of a stored blob (same size): served as is, no longer matching
        its digest (the registry does not re-verify on GET)."""
        p = self.blob_path(digest)
        with open(p, "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write(bytes(b ^ 0xff for b in data))


if __name__ == "__main__":
    print("ok - registrylib imports (helpers for test_images.py and test_snapshots.py)")
    print("1..1")
    sys.exit(0)
