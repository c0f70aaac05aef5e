#!/usr/bin/python3
"""Control bytes (0x00-0x1f, 0x7f) in ids, names and paths are a 400 JSON
error on every route of the lifecycle server and of execd, and change
nothing: percent-encoded in the path or in a query name or value (the HTTP
layer refuses them), or inside JSON body fields and multipart metadata that
name ids, names and paths (the handlers refuse them)."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403
from serverlib import Server  # noqa: E402

t = TAP()
KEY = "ctl-key-" + os.urandom(4).hex()
TOKEN = "ctl-token-" + os.urandom(4).hex()
BYTES = ["%00", "%0a", "%1f", "%7f"]

SERVER_ROUTES = [
    ("GET", "/metrics/events"), ("GET", "/v1/sandboxes/{id}/endpoints/44772"),
    ("POST", "/v1/sandboxes"), ("GET", "/v1/sandboxes"), ("GET", "/v1/sandboxes/{id}"),
    ("DELETE", "/v1/sandboxes/{id}"), ("PATCH", "/v1/sandboxes/{id}/metadata"),
    ("POST", "/v1/sandboxes/{id}/pause"), ("POST", "/v1/sandboxes/{id}/resume"),
    ("POST", "/v1/sandboxes/{id}/renew-expiration"),
    ("GET", "/v1/sandboxes/{id}/diagnostics/logs"),
    ("GET", "/v1/sandboxes/{id}/diagnostics/events"),
    ("GET", "/v1/sandboxes/{id}/diagnostics/inspect"),
    ("GET", "/v1/sandboxes/{id}/diagnostics/summary"),
    ("POST", "/v1/sandboxes/{id}/snapshots"), ("GET", "/v1/snapshots"),
    ("GET", "/v1/snapshots/{id}"), ("DELETE", "/v1/snapshots/{id}"),
    ("GET", "/v1/sandboxes/{id}/proxy/44772/ping"), ("GET", "/sandboxes/{id}/proxy/44772"),
    ("PATCH", "/v1/sandboxes/{id}/network-policy"), ("GET", "/sandboxes/{id}"),
]

EXECD_ROUTES = [
    ("POST", "/code/context"), ("GET", "/code/contexts"), ("DELETE", "/code/contexts"),
    ("GET", "/code/contexts/{id}"), ("DELETE", "/code/contexts/{id}"), ("POST", "/code"),
    ("DELETE", "/code"), ("POST", "/command"), ("DELETE", "/command"),
    ("GET", "/command/status/{id}"), ("GET", "/command/{id}/logs"), ("GET", "/files/info"),
    ("DELETE", "/files"), ("POST", "/files/mv"), ("POST", "/files/permissions"),
    ("GET", "/files/search"), ("POST", "/files/replace"), ("POST", "/files/upload"),
    ("GET", "/files/download"), ("GET", "/directories/list"), ("POST", "/directories"),
    ("DELETE", "/directories"), ("GET", "/ping"), ("GET", "/metrics"), ("GET", "/metrics/watch"),
    ("POST", "/pty"), ("GET", "/pty/{id}/ws"), ("GET", "/pty/{id}"), ("DELETE", "/pty/{id}"),
    ("POST", "/session"), ("POST", "/session/{id}/run"), ("DELETE", "/session/{id}"),
    ("GET", "/proxy/1/x"),
]


def sweep(c, routes, the_id, code, label):
    """Every route x every byte x (in an id or the last segment, in a query
    value, in a query name) -> 400 {code}."""
    bad = []
    n = 0
    for method, tmpl in routes:
        for b in BYTES:
            if "{id}" in tmpl:
                in_path = tmpl.replace("{id}", the_id + b)
            else:
                in_path = tmpl + b
            base = tmpl.replace("{id}", the_id)
            for path in (in_path, base + "?path=%2Fetc%2Fhostname" + b + ".txt",
                         base + "?a" + b + "=1"):
                n += 1
                r = c.req(method, path, json={} if method in ("POST", "PATCH") else None)
                try:
                    ok = r.status == 400 and r.json().get("code") == code and \
                        "control byte" in r.json().get("message", "")
                except ValueError:
                    ok = False
                if not ok:
                    bad.append("%s %s -> %d %r" % (method, path, r.status, r.body[:100]))
    t.ok(not bad, "%s: %d requests with a control byte in the path or query -> 400 %s"
         % (label, n, code), "\n".join(bad[:10]))


def raw_json(c, method, path, text, label, code):
    r = c.req(method, path, body=text.encode(), headers={"Content-Type": "application/json"})
    t.is_error(r, 400, code, label)
    return r


# ------------------------------------------------------------------ server

def test_server(s):
    sid = s.new()["id"]
    sweep(s, SERVER_ROUTES, sid, "SANDBOX::INVALID_PARAMETER", "server")
    r = s.req("DELETE", "/v1/sandboxes/%s%%00" % sid)
    t.is_error(r, 400, "SANDBOX::INVALID_PARAMETER", "DELETE /v1/sandboxes/<id>%00 -> 400")
    t.eq(s.get_sbx(sid).status, 200, "the sandbox still exists after DELETE <id>%00")
    r = s.req("DELETE", "/v1/sandboxes/%s%%0a" % sid)
    t.eq(s.get_sbx(sid).status, 200, "the sandbox still exists after DELETE <id>%0a")
    before = sorted(x["id"] for x in s.get("/v1/sandboxes").json()["items"])
    base = json.dumps(DEFAULT_BODY)[:-1]
    cases = [
        ('"image": {"uri": "ho\\u0007st"}', "image.uri with 0x07"),
        ('"volumes": [{"name": "v\\u0001", "host": {"path": "/tmp"}, "mountPath": "/mnt"}]',
         "volume name with 0x01"),
        ('"volumes": [{"name": "v", "host": {"path": "/tmp\\u001f"}, "mountPath": "/mnt"}]',
         "host path with 0x1f"),
        ('"volumes": [{"name": "v", "host": {"path": "/tmp"}, "mountPath": "/mnt\\n"}]',
         "mountPath with a newline"),
        ('"volumes": [{"name": "v", "host": {"path": "/tmp"}, "mountPath": "/mnt", '
         '"subPath": "a\\u007f"}]', "subPath with DEL"),
        ('"volumes": [{"name": "v", "pvc": {"claimName": "c\\u0002"}, "mountPath": "/mnt"}]',
         "claimName with 0x02"),
    ]
    for extra, what in cases:
        body = base + ", " + extra + "}"
        if '"image"' in extra:
            body = json.dumps({k: v for k, v in DEFAULT_BODY.items() if k != "image"})[:-1] + \
                ", " + extra + "}"
        raw_json(s, "POST", "/v1/sandboxes", body, "create: %s -> 400" % what,
                 "SANDBOX::INVALID_PARAMETER")
    nosnap = {k: v for k, v in DEFAULT_BODY.items() if k != "image"}
    raw_json(s, "POST", "/v1/sandboxes", json.dumps(nosnap)[:-1] + ', "snapshotId": "ab\\u0001"}',
             "create: snapshotId with 0x01 -> 400", "SANDBOX::INVALID_PARAMETER")
    r = s.req("POST", "/v1/sandboxes", body=(json.dumps(nosnap)[:-1] +
              ', "image": {"uri": "host\\u0000x"}}').encode(),
              headers={"Content-Type": "application/json"})
    t.eq(r.status, 400, "create: image.uri with an embedded NUL -> 400")
    after = sorted(x["id"] for x in s.get("/v1/sandboxes").json()["items"])
    t.eq(after, before, "no sandbox was created by the refused requests")
    raw_json(s, "POST", "/v1/sandboxes/%s/snapshots" % sid, '{"name": "snap\\u0001"}',
             "snapshot name with 0x01 -> 400", "SNAPSHOT::INVALID_PARAMETER")
    r = s.req("POST", "/v1/sandboxes/%s/snapshots" % sid, body=b'{"name": "a\\u0000b"}',
              headers={"Content-Type": "application/json"})
    t.eq(r.status, 400, "snapshot name with an embedded NUL -> 400")
    t.eq([x for x in s.get("/v1/snapshots").json()["items"]], [], "no snapshot was created")
    t.eq(s.req("DELETE", "/v1/sandboxes/" + sid).status, 204, "the sandbox deletes normally")


DEFAULT_BODY = {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
                "timeout": 600, "resourceLimits": {"cpu": "1", "memory": "512Mi"}}


# ------------------------------------------------------------------- execd

def test_execd(x):
    sweep(x, EXECD_ROUTES, "abc", "INVALID_REQUEST_BODY", "execd")
    r = x.get("/files/download?path=%2Fetc%2Fhostname%00.txt")
    t.is_error(r, 400, "INVALID_REQUEST_BODY", "download /etc/hostname%00.txt -> 400")
    t.ok(b"\n" not in r.body or r.body.startswith(b"{"), "download: no file content served")
    d = tempfile.mkdtemp(prefix="osb-ctl-")
    try:
        for name, esc in (("a\x00b", "a\\u0000b"), ("a\x01b", "a\\u0001b"), ("a\nb", "a\\nb")):
            meta = ('{"path": "%s/%s"}' % (d, esc)).encode()
            ctype, body = multipart([("metadata", "metadata", "application/json", meta),
                                     ("file", "f", "application/octet-stream", b"data")])
            r = x.req("POST", "/files/upload", body=body, headers={"Content-Type": ctype})
            t.eq(r.status, 400, "upload to %r -> 400" % name, r.body[:200])
        t.eq(os.listdir(d), [], "no file was written by the refused uploads")
        src = os.path.join(d, "src")
        open(src, "w").close()
        js = lambda s: s.replace("\x01", "\\u0001")  # noqa: E731
        bodies = [
            ("/files/mv", '[{"src": "%s", "dest": "%s"}]' % (src, js(d + "/dst\x01"))),
            ("/files/mv", '[{"src": "%s", "dest": "%s/dst"}]' % (js(src + "\x01"), d)),
            ("/files/permissions", '{"%s": {"mode": 644}}' % js(src + "\x01")),
            ("/files/permissions", '{"%s": {"owner": "ro\\u0001ot"}}' % src),
            ("/files/replace", '{"%s": {"old": "a", "new": "b"}}' % js(src + "\x01")),
            ("/directories", '{"%s": {"mode": 755}}' % js(d + "/new\x01")),
            ("/command", '{"command": "true", "cwd": "%s"}' % js(d + "\x01")),
            ("/session", '{"cwd": "%s"}' % js(d + "\x01")),
            ("/code/context", '{"language": "python", "cwd": "%s"}' % js(d + "\x01")),
            ("/pty", '{"cwd": "%s"}' % js(d + "\x01")),
        ]
        for path, text in bodies:
            r = x.req("POST", path, body=text.encode(), headers={"Content-Type": "application/json"})
            t.ok(r.status == 400 and "control byte" in r.body.decode("utf-8", "replace"),
                 "POST %s %s -> 400" % (path, text[:60]), r.body[:200])
        t.eq(sorted(os.listdir(d)), ["src"], "nothing was moved or created")
        r = x.get(qs("/files/search", {"path": d, "pattern": "*"}))
        t.eq(r.status, 200, "a clean search still works")
        r = x.get("/files/search?path=%s&pattern=a%%01" % d)
        t.is_error(r, 400, "INVALID_REQUEST_BODY", "search pattern with 0x01 -> 400")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    r = x.get("/files/download?path=%2Fetc%2Fhostname")
    t.eq(r.status, 200, "a clean download still works")


def main():
    with Execd(token=TOKEN) as x:
        t.run(test_execd, x, timeout=120)
    with Server(api_key=KEY) as s:
        t.run(test_server, s, timeout=180)


t.run(main, timeout=320)
t.done()
