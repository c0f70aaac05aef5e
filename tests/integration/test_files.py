#!/usr/bin/python3
"""execd file and directory API (protocol.md 3.2 /files*, /directories*, 3.6-3.8,
6.2, 6.5) against the real daemon: every endpoint's success shape, status codes
and error codes, hostile input (bad JSON, wrong types, missing parameters,
truncated and interrupted multipart uploads, bad ranges), binary round trips
(1 MiB, 64 MiB with sha256) and bounded memory while streaming."""
import email.utils
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()
ROOT = os.getuid() == 0
ME = pwd.getpwuid(os.getuid()).pw_name
MYGROUP = grp.getgrgid(os.getgid()).gr_name
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$")


def q(endpoint, **params):
    return qs(endpoint, params)


def write(path, data, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    if mode is not None:
        os.chmod(path, mode)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def temps_left(d):
    """Leftover upload/replace temp files anywhere under d."""
    out = []
    for base, _, files in os.walk(d):
        out += [os.path.join(base, f) for f in files if ".osb-" in f]
    return out


def upload(x, files, **kw):
    ctype, body = multipart(upload_parts(files))
    return x.req("POST", "/files/upload", body=body, headers={"Content-Type": ctype}, **kw)


# ---------------------------------------------------------------- info

def check_fileinfo(fi, path, typ, size=None, mode=None):
    keys = list(fi.keys())
    want_keys = ["path", "type", "size", "modified_at", "created_at", "owner", "group", "mode"]
    t.eq(keys, want_keys, "FileInfo keys in order for %s" % os.path.basename(path))
    t.eq(fi["path"], path, "path of %s" % os.path.basename(path))
    t.eq(fi["type"], typ, "type of %s" % os.path.basename(path))
    if size is not None:
        t.eq(fi["size"], size, "size of %s" % os.path.basename(path))
    if mode is not None:
        t.eq(fi["mode"], mode, "mode of %s as decimal-of-octal" % os.path.basename(path))
    t.ok(RFC3339.match(fi["modified_at"]) and RFC3339.match(fi["created_at"]),
         "RFC 3339 times for %s" % os.path.basename(path), fi)
    t.ok(isinstance(fi["owner"], str) and isinstance(fi["group"], str),
         "owner/group are strings")


def test_info(x, d):
    write(d + "/a.txt", "hello", 0o640)
    os.mkdir(d + "/sub", 0o755)
    os.chmod(d + "/sub", 0o755)
    os.symlink(d + "/a.txt", d + "/link")
    r = x.get(q("/files/info", path=[d + "/a.txt", d + "/sub", d + "/link"]))
    t.eq(r.status, 200, "info 200")
    j = r.json()
    t.eq(list(j.keys()), [d + "/a.txt", d + "/sub", d + "/link"], "map keyed by requested path")
    check_fileinfo(j[d + "/a.txt"], d + "/a.txt", "file", 5, 640)
    check_fileinfo(j[d + "/sub"], d + "/sub", "directory", mode=755)
    check_fileinfo(j[d + "/link"], d + "/link", "symlink", len(d + "/a.txt"), 777)
    t.eq(j[d + "/a.txt"]["owner"], ME, "owner name")
    t.eq(j[d + "/a.txt"]["group"], MYGROUP, "group name")
    st = os.stat(d + "/a.txt")
    got = j[d + "/a.txt"]["modified_at"]
    frac = ("%09d" % (st.st_mtime_ns % 10**9)).rstrip("0")
    t.ok(frac == "" or ("." + frac) in got, "nanosecond mtime", got)
    # Relative and unclean paths: the key is what was asked, path is absolute.
    r = x.get(q("/files/info", path=d + "//sub/../a.txt"))
    j = r.json()
    t.eq(j.get(d + "//sub/../a.txt", {}).get("path"), d + "/a.txt", "path cleaned, key kept")
    r = x.get("/files/info")
    t.eq((r.status, r.json()), (200, {}), "no path -> {}")
    r = x.get(q("/files/info", path=[d + "/a.txt", d + "/missing"]))
    t.is_error(r, 404, "FILE_NOT_FOUND", "missing path -> 404 FILE_NOT_FOUND")
    t.ok(d + "/missing" in r.json().get("message", ""), "message names the path", r.body)


# ---------------------------------------------------------------- delete, mv, chmod

def test_delete_files(x, d):
    write(d + "/f1", "1")
    write(d + "/f2", "2")
    os.mkdir(d + "/dir")
    write(d + "/target", "t")
    os.symlink(d + "/target", d + "/ln")
    r = x.delete(q("/files", path=[d + "/f1", d + "/f2", d + "/nope"]))
    t.is_empty_ok(r, "delete files (missing ignored) -> empty 200")
    t.ok(not os.path.exists(d + "/f1") and not os.path.exists(d + "/f2"), "files removed")
    t.is_error(x.delete(q("/files", path=d + "/dir")), 500, "RUNTIME_ERROR",
               "directory -> 500 RUNTIME_ERROR")
    t.ok(os.path.isdir(d + "/dir"), "directory kept")
    t.is_empty_ok(x.delete(q("/files", path=d + "/ln")), "delete symlink")
    t.ok(not os.path.lexists(d + "/ln") and os.path.exists(d + "/target"),
         "link removed, target kept")
    t.is_empty_ok(x.delete("/files"), "no path -> empty 200")


def test_mv(x, d):
    write(d + "/a", "A")
    write(d + "/b", "B")
    r = x.post("/files/mv", json=[{"src": d + "/a", "dest": d + "/new/deep/a2"}])
    t.is_empty_ok(r, "mv -> empty 200")
    t.eq(read(d + "/new/deep/a2"), b"A", "moved into created directories")
    t.ok(not os.path.exists(d + "/a"), "source gone")
    r = x.post("/files/mv", json=[{"src": d + "/nope", "dest": d + "/x"}])
    t.is_error(r, 404, "FILE_NOT_FOUND", "missing src -> 404 FILE_NOT_FOUND")
    r = x.post("/files/mv", json=[{"src": d + "/b", "dest": d + "/new/deep/a2"}])
    t.is_error(r, 500, "RUNTIME_ERROR", "existing dest -> 500")
    t.eq(read(d + "/new/deep/a2"), b"A", "existing dest untouched")
    for body, what in [(b"{", "malformed JSON"), (b"", "empty body"),
                       (b'{"src":"a","dest":"b"}', "object instead of array"),
                       (b'[{"src":1,"dest":"b"}]', "number src"),
                       (b'[{"src":"a"}]', "missing dest"), (b'["a"]', "string item")]:
        r = x.req("POST", "/files/mv", body=body, headers={"Content-Type": "application/json"})
        t.is_error(r, 400, "INVALID_REQUEST_BODY", "mv %s -> 400" % what)
    t.is_empty_ok(x.post("/files/mv", json=[]), "empty list -> 200")
    os.mkdir(d + "/dir1")
    write(d + "/dir1/in", "i")
    t.is_empty_ok(x.post("/files/mv", json=[{"src": d + "/dir1", "dest": d + "/dir2"}]),
                  "mv directory")
    t.eq(read(d + "/dir2/in"), b"i", "directory moved")


def test_permissions(x, d):
    write(d + "/p", "p", 0o644)
    r = x.post("/files/permissions", json={d + "/p": {"owner": None, "group": None, "mode": 600}})
    t.is_empty_ok(r, "permissions with null owner/group -> empty 200")
    t.eq(stat.S_IMODE(os.stat(d + "/p").st_mode), 0o600, "chmod 600 applied")
    r = x.post("/files/permissions", json={d + "/p": {"mode": 0}})
    t.is_empty_ok(r, "mode 0 -> 200")
    t.eq(stat.S_IMODE(os.stat(d + "/p").st_mode), 0o600, "mode 0 leaves the mode")
    r = x.post("/files/permissions", json={d + "/p": {"owner": ME, "group": MYGROUP, "mode": 755}})
    t.is_empty_ok(r, "owner/group by name")
    t.eq(stat.S_IMODE(os.stat(d + "/p").st_mode), 0o755, "chmod 755")
    r = x.post("/files/permissions", json={d + "/p": {"owner": "no-such-user-osb"}})
    t.is_error(r, 500, "RUNTIME_ERROR", "unknown owner -> 500")
    r = x.post("/files/permissions", json={d + "/p": {"mode": "755"}})
    t.is_error(r, 400, "INVALID_REQUEST_BODY", "string mode -> 400")
    r = x.post("/files/permissions", json={d + "/p": {"mode": 999}})
    t.is_error(r, 400, "INVALID_REQUEST_BODY", "non-octal mode -> 400")
    r = x.post("/files/permissions", json=[1])
    t.is_error(r, 400, "INVALID_REQUEST_BODY", "array body -> 400")
    r = x.post("/files/permissions", json={d + "/nope": {"mode": 644}})
    t.is_error(r, 500, "RUNTIME_ERROR", "missing path -> 500")
    if ROOT:
        r = x.post("/files/permissions", json={d + "/p": {"owner": "nobody", "mode": 644}})
        t.is_empty_ok(r, "chown to nobody")
        t.eq(pwd.getpwuid(os.stat(d + "/p").st_uid).pw_name, "nobody", "owner changed")
        fi = x.get(q("/files/info", path=d + "/p")).json()[d + "/p"]
        t.eq(fi["owner"], "nobody", "info reports the new owner")


# ---------------------------------------------------------------- search, list

def test_search(x, d):
    write(d + "/a.py", "")
    write(d + "/b.txt", "")
    write(d + "/sub/c.py", "")
    write(d + "/sub/deeper/e.py", "")
    write(d + "/other/f.py", "")
    os.mkdir(d + "/dir.py")
    os.symlink(d + "/other", d + "/sub/linkdir")
    r = x.get(q("/files/search", path=d, pattern="*.py"))
    t.eq(r.status, 200, "search 200")
    paths = [f["path"] for f in r.json()]
    t.eq(paths, [d + "/a.py", d + "/other/f.py", d + "/sub/c.py", d + "/sub/deeper/e.py"],
         "recursive, lexical, directories and symlinked dirs not matched/entered")
    r = x.get(q("/files/search", path=d + "/sub"))
    t.eq([os.path.basename(f["path"]) for f in r.json()], ["c.py", "e.py", "linkdir"],
         "default pattern ** (symlink reported, not entered)")
    r = x.get(q("/files/search", path=d, pattern="**/*.txt"))
    t.eq([f["path"] for f in r.json()], [d + "/b.txt"], "**/*.txt matches base names")
    r = x.get(q("/files/search", path=d, pattern="[ab].*"))
    t.eq(len(r.json()), 2, "character class")
    r = x.get(q("/files/search", path=d, pattern="nomatch*"))
    t.eq((r.status, r.body), (200, b"[]"), "no match -> []")
    t.is_error(x.get(q("/files/search", pattern="*")), 400, "MISSING_QUERY",
               "missing path -> 400 MISSING_QUERY")
    t.is_error(x.get(q("/files/search", path=d + "/nope")), 404, "FILE_NOT_FOUND",
               "missing dir -> 404")
    t.is_error(x.get(q("/files/search", path=d, pattern="[")), 400, None, "bad pattern -> 400")


def test_list(x, d):
    write(d + "/b/inner/deep.txt", "")
    write(d + "/a.txt", "aa")
    write(d + "/B.txt", "")
    os.symlink(d + "/b", d + "/c-link")
    r = x.get(q("/directories/list", path=d))
    t.eq(r.status, 200, "list 200")
    t.eq([f["path"] for f in r.json()], [d + "/B.txt", d + "/a.txt", d + "/b", d + "/c-link"],
         "depth 1: lexical byte order")
    types = {os.path.basename(f["path"]): f["type"] for f in r.json()}
    t.eq(types, {"B.txt": "file", "a.txt": "file", "b": "directory", "c-link": "symlink"},
         "types")
    r = x.get(q("/directories/list", path=d, depth=3))
    t.eq([f["path"][len(d) + 1:] for f in r.json()],
         ["B.txt", "a.txt", "b", "b/inner", "b/inner/deep.txt", "c-link"],
         "depth 3: entries followed by descendants, symlink not traversed")
    r = x.get(q("/directories/list", path=d, depth=2))
    t.eq(len(r.json()), 5, "depth 2 stops one level down")
    r = x.get(q("/directories/list", path=d, depth=0))
    t.eq((r.status, r.body), (200, b"[]"), "depth 0 -> []")
    t.is_error(x.get(q("/directories/list", path=d + "/c-link")), 400, "INVALID_REQUEST_BODY",
               "symlink root -> 400")
    t.is_error(x.get(q("/directories/list", path=d + "/a.txt")), 400, None, "file root -> 400")
    t.is_error(x.get(q("/directories/list", path=d + "/nope")), 404, "FILE_NOT_FOUND",
               "missing root -> 404")
    for bad in ("-1", "abc", "1.5"):
        t.is_error(x.get(q("/directories/list", path=d, depth=bad)), 400,
                   "INVALID_REQUEST_BODY", "depth=%s -> 400" % bad)
    t.is_error(x.get("/directories/list"), 400, "MISSING_QUERY", "missing path -> 400")
    # Names are bytes; JSON strings are UTF-8: bad bytes become U+FFFD.
    os.mkdir(d + "/raw")
    with open(os.fsencode(d + "/raw/") + b"bad\xff\xfename", "w"):
        pass
    r = x.get(q("/directories/list", path=d + "/raw"))
    t.eq((r.status, [f["path"] for f in r.json()]), (200, [d + "/raw/bad\ufffd\ufffdname"]),
         "non-UTF-8 name listed as valid JSON")


# ---------------------------------------------------------------- directories

def test_mkdir_rmdir(x, d):
    r = x.post("/directories", json={d + "/n1/n2/n3": {"owner": None, "group": None, "mode": 700}})
    t.is_empty_ok(r, "mkdir -p -> empty 200")
    t.ok(os.path.isdir(d + "/n1/n2/n3"), "created")
    t.eq(stat.S_IMODE(os.stat(d + "/n1/n2/n3").st_mode), 0o700, "mode on the new leaf")
    os.chmod(d + "/n1/n2/n3", 0o755)
    r = x.post("/directories", json={d + "/n1/n2/n3": {"mode": 700}})
    t.is_empty_ok(r, "existing directory -> 200")
    t.eq(stat.S_IMODE(os.stat(d + "/n1/n2/n3").st_mode), 0o755, "existing mode untouched")
    write(d + "/file", "x")
    t.is_error(x.post("/directories", json={d + "/file/sub": {"mode": 755}}), 500, None,
               "file in the way -> 500")
    t.is_error(x.post("/directories", json={d + "/q": {"mode": True}}), 400,
               "INVALID_REQUEST_BODY", "bool mode -> 400")
    t.is_error(x.req("POST", "/directories", body=b"nope"), 400, "INVALID_REQUEST_BODY",
               "malformed body -> 400")
    if ROOT:
        os.mkdir(d + "/pre")
        r = x.post("/directories", json={d + "/pre/o1/o2": {"owner": "nobody", "mode": 750}})
        t.is_empty_ok(r, "mkdir with owner")
        owners = [pwd.getpwuid(os.stat(d + p).st_uid).pw_name for p in ("/pre", "/pre/o1", "/pre/o1/o2")]
        t.eq(owners, [ME, "nobody", "nobody"], "owner only on created directories")
    # rm -rf never follows symlinks out of the tree.
    write(d + "/outside/keep", "keep")
    write(d + "/n1/n2/n3/f", "f")
    os.symlink(d + "/outside", d + "/n1/n2/escape")
    r = x.delete(q("/directories", path=d + "/n1"))
    t.is_empty_ok(r, "rm -rf -> empty 200")
    t.ok(not os.path.lexists(d + "/n1"), "tree gone")
    t.eq(read(d + "/outside/keep"), b"keep", "symlink target untouched")
    t.is_empty_ok(x.delete(q("/directories", path=d + "/n1")), "missing -> 200")
    t.is_empty_ok(x.delete("/directories"), "no path -> 200")
    t.is_error(x.delete(q("/directories", path="/")), 500, "RUNTIME_ERROR", "refuses /")


# ---------------------------------------------------------------- replace

def test_replace(x, d):
    write(d + "/r.txt", "foo bar foo\nfoofoo\n", 0o640)
    r = x.post("/files/replace", json={d + "/r.txt": {"old": "foo", "new": "qux"}})
    t.is_empty_ok(r, "replace -> empty 200")
    t.eq(read(d + "/r.txt"), b"qux bar qux\nquxqux\n", "content replaced")
    t.eq(stat.S_IMODE(os.stat(d + "/r.txt").st_mode), 0o640, "mode kept")
    write(d + "/s.txt", "aaaa")
    r = x.post("/files/replace?verbose=true",
               json={d + "/r.txt": {"old": "qux", "new": ""}, d + "/s.txt": {"old": "aa", "new": "b"}})
    t.eq((r.status, r.json()), (200, {d + "/r.txt": {"replacedCount": 4},
                                      d + "/s.txt": {"replacedCount": 2}}),
         "verbose -> replacedCount per path")
    t.eq(read(d + "/s.txt"), b"bb", "non-overlapping replacement")
    t.is_error(x.post("/files/replace", json={d + "/s.txt": {"old": "", "new": "x"}}), 400,
               "INVALID_REQUEST_BODY", "empty old -> 400")
    t.is_error(x.post("/files/replace", json={d + "/s.txt": {"new": "x"}}), 400, None,
               "missing old -> 400")
    # execd-api.yaml lists no 404 for replace: the code stays, the status is 400.
    t.is_error(x.post("/files/replace", json={d + "/nope": {"old": "a", "new": "b"}}), 400,
               "FILE_NOT_FOUND", "missing file -> 400 FILE_NOT_FOUND")
    t.is_error(x.post("/files/replace", json={d + "/s.txt": "ab"}), 400, None,
               "string item -> 400")
    t.is_error(x.post("/files/replace", json=[]), 400, None, "array body -> 400")
    write(d + "/u.txt", "h\u00e9llo w\u00f6rld")
    r = x.post("/files/replace?verbose=true", json={d + "/u.txt": {"old": "\u00f6", "new": "\u2603"}})
    t.eq(r.json(), {d + "/u.txt": {"replacedCount": 1}}, "UTF-8 replacement")
    t.eq(read(d + "/u.txt").decode(), "h\u00e9llo w\u2603rld", "UTF-8 content")
    t.eq(temps_left(d), [], "no temp files left behind")


# ---------------------------------------------------------------- upload

def test_upload_basic(x, d):
    data = os.urandom(1 << 20)
    r = upload(x, [({"path": d + "/up/deep/bin.dat", "owner": None, "group": None, "mode": 640},
                    data)])
    t.is_empty_ok(r, "upload -> empty 200")
    t.eq(hashlib.sha256(read(d + "/up/deep/bin.dat")).hexdigest(),
         hashlib.sha256(data).hexdigest(), "1 MiB binary stored intact, parents created")
    t.eq(stat.S_IMODE(os.stat(d + "/up/deep/bin.dat").st_mode), 0o640, "mode applied")
    r = x.get(q("/files/download", path=d + "/up/deep/bin.dat"))
    t.ok(r.status == 200 and r.body == data, "1 MiB binary round trip", (r.status, len(r.body)))
    # Python SDK shape: metadata1, file1, metadata2, file2.
    r = upload(x, [({"path": d + "/m1.txt", "mode": 644}, b"one"),
                   ({"path": d + "/m2.txt", "mode": 600}, b"two")])
    t.is_empty_ok(r, "two pairs")
    t.eq((read(d + "/m1.txt"), read(d + "/m2.txt")), (b"one", b"two"), "k-th with k-th")
    t.eq(stat.S_IMODE(os.stat(d + "/m2.txt").st_mode), 0o600, "second pair's mode")
    # Overwrite keeps the existing mode when the metadata has none.
    os.chmod(d + "/m1.txt", 0o604)
    t.is_empty_ok(upload(x, [({"path": d + "/m1.txt"}, b"ONE")]), "overwrite")
    t.eq((read(d + "/m1.txt"), stat.S_IMODE(os.stat(d + "/m1.txt").st_mode)), (b"ONE", 0o604),
         "overwritten, mode kept")
    # A file part before its metadata still lands at metadata.path.
    parts = [("file", "x.bin", "application/octet-stream", b"early"),
             ("metadata", "metadata", "application/json", json.dumps({"path": d + "/early"}))]
    ctype, body = multipart(parts)
    r = x.req("POST", "/files/upload", body=body, headers={"Content-Type": ctype})
    t.is_empty_ok(r, "file before metadata")
    t.eq(read(d + "/early") if os.path.exists(d + "/early") else None, b"early",
         "placed once the metadata arrived")
    t.is_empty_ok(upload(x, [({"path": d + "/nomode"}, b"n")]), "upload without mode")
    t.eq(stat.S_IMODE(os.stat(d + "/early").st_mode), stat.S_IMODE(os.stat(d + "/nomode").st_mode),
         "same default mode either way")
    t.diag("default upload mode %o (execd umask)" % stat.S_IMODE(os.stat(d + "/nomode").st_mode))
    # Chunked request body, empty file, symlink target.
    ctype, body = multipart(upload_parts([({"path": d + "/empty"}, b"")]))
    r = x.upload_stream("/files/upload", ctype, [body[i:i + 7] for i in range(0, len(body), 7)])
    t.is_empty_ok(r, "chunked body, empty file")
    t.eq(read(d + "/empty"), b"", "empty file created")
    write(d + "/real", "old")
    os.symlink(d + "/real", d + "/alias")
    t.is_empty_ok(upload(x, [({"path": d + "/alias"}, b"new")]), "upload to a symlink")
    t.ok(os.path.islink(d + "/alias") and read(d + "/real") == b"new",
         "writes the symlink's target")
    if ROOT:
        r = upload(x, [({"path": d + "/owned", "owner": "nobody", "group": MYGROUP}, b"o")])
        t.is_empty_ok(r, "upload with owner")
        t.eq(pwd.getpwuid(os.stat(d + "/owned").st_uid).pw_name, "nobody", "owner applied")
    t.eq(temps_left(d), [], "no temp files left behind")


def test_upload_errors(x, d):
    write(d + "/keep", "original")

    def post(parts, what, status, code):
        ctype, body = multipart(parts)
        r = x.req("POST", "/files/upload", body=body, headers={"Content-Type": ctype})
        t.is_error(r, status, code, what)

    meta = ("metadata", "metadata", "application/json", json.dumps({"path": d + "/keep"}))
    fil = ("file", "keep", "application/octet-stream", b"clobbered")
    post([fil], "no metadata -> INVALID_FILE_METADATA", 400, "INVALID_FILE_METADATA")
    post([meta], "no file -> INVALID_FILE_CONTENT", 400, "INVALID_FILE_CONTENT")
    post([meta, fil, meta], "count mismatch -> INVALID_FILE", 400, "INVALID_FILE")
    post([("metadata", "metadata", "application/json", b"{bad"), fil],
         "bad metadata JSON", 400, "INVALID_FILE_METADATA")
    post([("metadata", "metadata", "application/json", b'{"path":""}'), fil],
         "empty metadata path", 400, "INVALID_FILE_METADATA")
    post([("metadata", "metadata", "application/json", b'{"path":"/x","mode":"7"}'), fil],
         "string mode", 400, "INVALID_FILE_METADATA")
    post([("metadata", "metadata", "application/json", b'{"path":"x"' + b" " * 70000 + b"}"),
          fil], "oversized metadata", 400, "INVALID_FILE_METADATA")
    post([("metadata", None, "application/json", json.dumps({"path": d + "/keep"})), fil],
         "metadata without filename is not a file part", 400, "INVALID_FILE_METADATA")
    r = x.req("POST", "/files/upload", body=b"hello", headers={"Content-Type": "text/plain"})
    t.is_error(r, 400, "INVALID_FILE", "not multipart -> INVALID_FILE")
    r = x.req("POST", "/files/upload", body=b"")
    t.is_error(r, 400, "INVALID_FILE", "no body -> INVALID_FILE")
    # Body complete but the closing boundary missing: truncated form.
    ctype, body = multipart([meta, fil])
    body = body[:body.rindex(b"--osbtest")]
    r = x.req("POST", "/files/upload", body=body, headers={"Content-Type": ctype})
    t.is_error(r, 400, "INVALID_FILE", "truncated multipart -> 400 INVALID_FILE")
    t.eq(read(d + "/keep"), b"original", "old content kept after every failure")
    t.eq(temps_left(d), [], "no temp files left behind")
    t.ok(x.ping(), "execd alive")


def test_upload_interrupted(x, d):
    """The client vanishes mid-file: the old content stays, the temp file goes."""
    write(d + "/victim", "old content")
    size = 8 << 20
    parts = upload_parts([({"path": d + "/victim", "mode": 644}, (iter([b"x" * size]), size))])
    ctype, it, length = multipart_stream(parts)
    body = b"".join(it)
    s = socket.create_connection(("127.0.0.1", x.port))
    s.sendall(build_request("POST", "/files/upload", {"Content-Type": ctype,
                                                      "Content-Length": str(length)},
                            host="127.0.0.1"))
    s.sendall(body[:length // 2])
    time.sleep(0.3)
    t.ok(len(temps_left(d)) == 1, "a temp file exists while uploading", temps_left(d))
    t.eq(read(d + "/victim"), b"old content", "old content while uploading")
    s.close()
    t.ok(wait_for(lambda: temps_left(d) == [], 60), "temp file removed after the disconnect",
         temps_left(d))
    t.eq(read(d + "/victim"), b"old content", "old content after the disconnect")
    t.ok(x.ping(), "execd alive")


def test_upload_parallel(x, d):
    """A stalled upload does not hold up other uploads or requests."""
    parts = upload_parts([({"path": d + "/slow"}, (iter([b"s" * 1000]), 1000))])
    ctype, it, length = multipart_stream(parts)
    body = b"".join(it)
    with x.rawconn() as c:
        c.send_request("POST", "/files/upload", {"Content-Type": ctype,
                                                 "Content-Length": str(length)})
        c.send(body[:length - 100])
        r = upload(x, [({"path": d + "/fast"}, b"fast")])
        t.eq(r.status, 200, "second upload done while the first is stalled")
        t.ok(not os.path.exists(d + "/slow"), "stalled upload not visible yet")
        c.send(body[length - 100:])
        r = c.read_response("POST")
        t.eq((r.status, read(d + "/slow")), (200, b"s" * 1000), "stalled upload completes")


def test_upload_many_and_atomic(x, d):
    files = [({"path": "%s/many/f%02d" % (d, i), "mode": 644}, ("content %d" % i).encode() * i)
             for i in range(50)]
    t.is_empty_ok(upload(x, files), "50 files in one request")
    t.ok(all(read(m["path"]) == data for m, data in files), "all 50 stored")
    # A reader that started before an overwrite keeps reading the old bytes.
    old = os.urandom(4 << 20)
    write(d + "/snap", old)
    with x.rawconn(timeout=30) as c:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send_request("GET", q("/files/download", path=d + "/snap"))
        status, _, headers = c.reader.read_head()
        time.sleep(0.2)
        t.is_empty_ok(upload(x, [({"path": d + "/snap"}, b"new")]), "overwrite during download")
        body = b"".join(c.reader.iter_body(status, headers))
        t.ok(body == old, "the running download got the old content intact", len(body))
    t.eq(read(d + "/snap"), b"new", "new readers see the new content")


def test_upload_download_64m(x, d):
    size = 64 << 20
    h = hashlib.sha256()
    block = os.urandom(1 << 20)

    def gen():
        for i in range(size >> 20):
            b = bytes([i & 255]) + block[1:]
            h.update(b)
            yield b
    parts = upload_parts([({"path": d + "/big.bin", "mode": 644}, (gen(), size))])
    ctype, it, length = multipart_stream(parts)
    t0 = time.monotonic()
    r = x.upload_stream("/files/upload", ctype, it, length)
    up = time.monotonic() - t0
    t.is_empty_ok(r, "64 MiB upload")
    t0 = time.monotonic()
    r = x.get(q("/files/download", path=d + "/big.bin"), timeout=120)
    down = time.monotonic() - t0
    t.eq(r.status, 200, "64 MiB download")
    t.eq(hashlib.sha256(r.body).hexdigest(), h.hexdigest(), "sha256 of the round trip")
    t.diag("64 MiB: upload %.0f MB/s, download %.0f MB/s (python client)" %
           (size / up / 1e6, size / down / 1e6))


# ---------------------------------------------------------------- download

def test_download(x, d):
    data = bytes(range(256)) * 40  # 10240 bytes
    write(d + "/f.bin", data)
    st = os.stat(d + "/f.bin")
    r = x.get(q("/files/download", path=d + "/f.bin"))
    t.eq((r.status, r.body), (200, data), "full download")
    h = r.headers
    t.eq(h.get("content-type"), "application/octet-stream", "content type")
    t.eq(h.get("content-length"), str(len(data)), "content length")
    t.eq(h.get("content-disposition"), 'attachment; filename="f.bin"', "content disposition")
    t.eq(h.get("accept-ranges"), "bytes", "accept-ranges")
    t.eq(h.get("last-modified"), email.utils.formatdate(int(st.st_mtime), usegmt=True),
         "last-modified")
    for rng, start, end in [("bytes=0-99", 0, 99), ("bytes=10000-", 10000, 10239),
                            ("bytes=-40", 10200, 10239), ("bytes=10000-99999", 10000, 10239),
                            ("bytes=5-6,8-9", 5, 6)]:
        r = x.get(q("/files/download", path=d + "/f.bin"), headers={"Range": rng})
        t.eq((r.status, r.headers.get("content-range"), r.body),
             (206, "bytes %d-%d/10240" % (start, end), data[start:end + 1]), "Range %s" % rng)
    for rng in ("bytes=abc", "bytes=9-5", "items=0-1", "bytes=5"):
        r = x.get(q("/files/download", path=d + "/f.bin"), headers={"Range": rng})
        t.is_error(r, 416, "UNKNOWN", "bad Range %r -> 416 UNKNOWN" % rng)
    r = x.get(q("/files/download", path=d + "/f.bin"), headers={"Range": "bytes=20000-"})
    t.eq(r.headers.get("content-range"), "bytes */10240", "Range past EOF: Content-Range")
    t.is_error(r, 416, "RANGE_NOT_SATISFIABLE", "Range past EOF -> 416 {code,message}")
    lm = email.utils.formatdate(int(st.st_mtime), usegmt=True)
    r = x.get(q("/files/download", path=d + "/f.bin"), headers={"If-Modified-Since": lm})
    t.eq((r.status, r.body), (304, b""), "If-Modified-Since -> 304")
    old = email.utils.formatdate(int(st.st_mtime) - 3600, usegmt=True)
    r = x.get(q("/files/download", path=d + "/f.bin"), headers={"If-Modified-Since": old})
    t.eq(r.status, 200, "older If-Modified-Since -> 200")
    r = x.req("HEAD", q("/files/download", path=d + "/f.bin"))
    t.eq((r.status, r.headers.get("content-length"), r.body), (200, "10240", b""), "HEAD")
    name = "r\u00e9sum\u00e9 \u6587.txt"
    write(d + "/" + name, "x")
    r = x.get(q("/files/download", path=d + "/" + name))
    enc = urllib.parse.quote(name, safe="$&+:=@")
    t.eq(r.headers.get("content-disposition"),
         "attachment; filename=\"%s\"; filename*=UTF-8''%s" % (enc, enc), "RFC 5987 filename*")
    write(d + "/empty", "")
    r = x.get(q("/files/download", path=d + "/empty"))
    t.eq((r.status, r.headers.get("content-length"), r.body), (200, "0", b""), "empty file")
    r = x.get(q("/files/download", path="/proc/self/status"))
    t.ok(r.status == 200 and b"Pid:" in r.body, "a /proc file (size 0) has content", r.status)
    t.is_error(x.get("/files/download"), 400, "MISSING_QUERY", "missing path -> MISSING_QUERY")
    t.is_error(x.get(q("/files/download", path=d + "/nope")), 404, "FILE_NOT_FOUND",
               "missing file -> 404")
    t.is_error(x.get(q("/files/download", path=d)), 400, None, "directory -> 400")
    # Keep-alive: streamed answers end cleanly, the next request follows.
    with x.rawconn() as c:
        for rng in (None, "bytes=1-3", None):
            c.send_request("GET", q("/files/download", path=d + "/f.bin"),
                           {"Range": rng} if rng else {})
        got = [c.read_response() for _ in range(3)]
        t.eq([(r.status, len(r.body)) for r in got], [(200, 10240), (206, 3), (200, 10240)],
             "pipelined downloads on one connection")
        c.send_request("GET", q("/files/download", path=d + "/f.bin", offset=2, limit=1))
        r = c.read_response()
        c.send_request("GET", q("/files/info", path=d + "/f.bin"))
        t.eq((r.status, r.chunked, c.read_response().status), (200, True, 200),
             "line mode is chunked and keeps the connection")


def test_download_lines(x, d):
    write(d + "/l.txt", "one\r\ntwo\nthree\nfour\nfive")
    def lines(**kw):
        r = x.get(q("/files/download", path=d + "/l.txt", **kw))
        return r.status, r.headers.get("content-type"), r.body
    t.eq(lines(offset=2, limit=2), (200, "text/plain; charset=utf-8", b"two\nthree"),
         "offset 2 limit 2")
    t.eq(lines(offset=1, limit=100)[2], b"one\ntwo\nthree\nfour\nfive", "CRLF stripped, no trailing newline")
    t.eq(lines(offset=4)[2], b"four\nfive", "offset only")
    t.eq(lines(limit=1)[2], b"one", "limit only")
    t.eq(lines(offset=9, limit=1)[2], b"", "offset past the end")
    for kw, what in [({"offset": 0, "limit": 1}, "offset 0"), ({"offset": 1, "limit": 0}, "limit 0"),
                     ({"offset": "x", "limit": 1}, "offset not a number"),
                     ({"offset": -2, "limit": 1}, "negative offset")]:
        r = x.get(q("/files/download", path=d + "/l.txt", **kw))
        t.is_error(r, 400, "INVALID_REQUEST_BODY", "%s -> 400" % what)
    r = x.get(q("/files/download", path=d + "/l.txt", offset=1, limit=1),
              headers={"Range": "bytes=0-1"})
    t.is_error(r, 400, "INVALID_REQUEST_BODY", "offset/limit with Range -> 400")


def test_download_backpressure(x, d):
    """A client that stops reading must not make execd buffer the file."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else d
    path = os.path.join(base, "osb-bp-%d.bin" % os.getpid())
    size = 256 << 20
    with open(path, "wb") as f:
        f.truncate(size)
    try:
        before = proc_status_kib(x.proc.pid, "VmRSS")
        c = x.rawconn(timeout=30)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send_request("GET", q("/files/download", path=path))
        status, _, headers = c.reader.read_head()
        t.eq(status, 200, "download started")
        time.sleep(1.0)
        grown = proc_status_kib(x.proc.pid, "VmRSS") - before
        t.ok(grown < 32 * 1024, "execd RSS grew %d KiB while the client stalled" % grown)
        r = x.get(q("/files/info", path=path), timeout=60)
        t.eq(r.status, 200, "other requests still served while the download is stalled")
        got = sum(len(b) for b in c.reader.iter_body(status, headers))
        t.eq(got, size, "all bytes arrive once the client reads")
        c.close()
    finally:
        os.unlink(path)


TESTS = [test_info, test_delete_files, test_mv, test_permissions, test_search, test_list,
         test_mkdir_rmdir, test_replace, test_upload_basic, test_upload_errors,
         test_upload_interrupted, test_upload_parallel, test_upload_many_and_atomic,
         test_upload_download_64m, test_download, test_download_lines,
         test_download_backpressure]


def main():
    work = tempfile.mkdtemp(prefix="osb-files-")
    try:
        with Execd() as x:
            for fn in TESTS:
                d = os.path.join(work, fn.__name__)
                os.mkdir(d)
                t.run(fn, x, d, timeout=120)
            t.ok(x.alive(), "execd still alive after all file tests")
    finally:
        shutil.rmtree(work, ignore_errors=True)


t.run(main, timeout=600)
t.done()
