"""Lifecycle server API (protocol.md sections 1, 2, 6.1, 6.4, 6.5): every route, status
code, error body, list filters and pagination, metadata merge patch, pause/resume,
renew, endpoints, the server proxy (HTTP, SSE, WebSocket), diagnostics, TTL expiry,
delete in every state, concurrency. Raw HTTP against the real server binary on a free
loopback port with a temp state dir; the API key is set (auth tests need it)."""
import base64
import json
import os
import re
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

KEY = "test-key-" + uuid.uuid4().hex
t = TAP()

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

# A tiny HTTP + WebSocket echo server run inside a sandbox (stdlib only): GET
# answers {"method","path","headers","body"}; an Upgrade: websocket request is
# echoed frame by frame.
ECHO_SERVER = r'''
import base64, hashlib, json, socketserver, struct, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline().decode()
        if not line:
            return
        method, path, _ = line.split(" ", 2)
        headers = {}
        while True:
            l = self.rfile.readline().decode()
            if l in ("\r\n", "\n", ""):
                break
            k, v = l.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0") or 0)
        body = self.rfile.read(n) if n else b""
        if headers.get("upgrade", "").lower() == "websocket":
            acc = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] +
                  "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % acc).encode())
            self.wfile.flush()
            while True:
                h = self.rfile.read(2)
                if len(h) < 2:
                    return
                op, ln = h[0] & 15, h[1] & 127
                if ln == 126:
                    ln = struct.unpack(">H", self.rfile.read(2))[0]
                elif ln == 127:
                    ln = struct.unpack(">Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4) if h[1] & 128 else b"\0\0\0\0"
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
                if op == 8:
                    self.wfile.write(b"\x88" + bytes([len(data[:2])]) + data[:2])
                    self.wfile.flush()
                    return
                hdr = bytes([0x80 | op]) + (bytes([ln]) if ln < 126 else
                       b"\x7e" + struct.pack(">H", ln) if ln < 65536 else b"\x7f" + struct.pack(">Q", ln))
                self.wfile.write(hdr + data)
                self.wfile.flush()
        out = json.dumps({"method": method, "path": path, "headers": headers,
                          "body": body.decode("latin1")}).encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(out) + out)
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def check_sandbox_shape(j, name, full=True):
    problems = []
    if not isinstance(j, dict):
        return t.ok(False, name, "not an object: %r" % (j,))
    if not UUID_RE.match(j.get("id", "")):
        problems.append("id %r" % j.get("id"))
    st = j.get("status")
    if not isinstance(st, dict) or not isinstance(st.get("state"), str):
        problems.append("status.state")
    elif "lastTransitionAt" in st and not iso_ok(st["lastTransitionAt"]):
        problems.append("lastTransitionAt %r" % st["lastTransitionAt"])
    if not isinstance(j.get("entrypoint"), list) or not j["entrypoint"]:
        problems.append("entrypoint")
    if not iso_ok(j.get("createdAt")):
        problems.append("createdAt %r" % j.get("createdAt"))
    if "expiresAt" in j and not iso_ok(j["expiresAt"]):
        problems.append("expiresAt %r" % j["expiresAt"])
    if not isinstance(j.get("metadata", {}), dict):
        problems.append("metadata")
    if full and not (isinstance(j.get("image"), dict) and j["image"].get("uri")):
        problems.append("image.uri")
    if not full and ("image" in j or "snapshotId" in j):
        problems.append("create response carries image/snapshotId")
    if not no_nulls(j):
        problems.append("null value")
    return t.ok(not problems, name, "; ".join(problems) + "\n%r" % j if problems else None)


def parse_iso(s):
    import datetime
    return datetime.datetime.strptime(s.replace("Z", "+0000"),
                                      "%Y-%m-%dT%H:%M:%S.%f%z" if "." in s else
                                      "%Y-%m-%dT%H:%M:%S%z").timestamp()


# ---------------------------------------------------------------- basics

def test_health_and_request_id(s):
    c = Client("127.0.0.1", s.port)  # no key: /health is exempt
    r = c.get("/health")
    t.eq((r.status, r.json()), (200, {"status": "healthy"}), "/health 200 without a key")
    t.ok(re.match(r"^[0-9a-f]{32}$", r.headers.get("x-request-id", "")),
         "generated X-Request-ID is 32 hex chars", r.headers)
    r = c.get("/health", headers={"X-Request-ID": "my-req-123"})
    t.eq(r.headers.get("x-request-id"), "my-req-123", "X-Request-ID echoed")
    r = s.get("/v1/sandboxes", headers={"X-Request-ID": "abc.def"})
    t.eq(r.headers.get("x-request-id"), "abc.def", "X-Request-ID echoed on an API route")
    r = s.get("/v1/sandboxes/nope")
    t.ok(r.headers.get("x-request-id"), "X-Request-ID on a 404")


def test_auth(s):
    c = Client("127.0.0.1", s.port)
    for path in ("/v1/sandboxes", "/sandboxes"):
        r = c.get(path, headers={"X-Request-ID": "rid-401"})
        t.eq((r.status, r.json()), (401, {
            "code": "MISSING_API_KEY",
            "message": "Authentication credentials are missing. Provide API key via "
                       "OPEN-SANDBOX-API-KEY header."}), "%s without a key -> 401 body" % path)
        t.eq(r.headers.get("x-request-id"), "rid-401", "%s 401 carries X-Request-ID" % path)
        r = c.get(path, headers={"OPEN-SANDBOX-API-KEY": KEY + "x"})
        t.eq((r.status, r.json()), (401, {
            "code": "INVALID_API_KEY",
            "message": "Authentication credentials are invalid. Check your API key and try "
                       "again."}), "%s with a wrong key -> 401 body" % path)
        r = c.get(path, headers={"OPEN-SANDBOX-API-KEY": KEY[:-1]})
        t.eq(r.status, 401, "%s with a key prefix -> 401" % path)
        r = c.get(path, headers={"OPEN-SANDBOX-API-KEY": ""})
        t.eq(r.status, 401, "%s with an empty key -> 401" % path)
        r = c.get(path, headers={"open-sandbox-api-key": KEY})
        t.eq(r.status, 200, "%s with the key (any header case) -> 200" % path)
    r = c.post("/v1/sandboxes", json={"image": {"uri": "host"}, "entrypoint": ["true"]})
    t.eq(r.status, 401, "create without a key -> 401")
    t.eq(s.list_all(), [], "nothing created by the unauthenticated create")
    r = c.get("/v1/sandboxes/%s/proxy/44772/ping" % uuid.uuid4())
    t.is_error(r, 404, "SANDBOX::NOT_FOUND", "proxy path needs no key (404, not 401)")
    r = c.get("/sandboxes/%s/proxy/44772" % uuid.uuid4())
    t.eq(r.status, 404, "root proxy path needs no key")
    r = c.get("/v1/sandboxes/x/proxy/44772/../../../sandboxes")
    t.eq(r.status, 401, "a proxy path with '..' is not exempt")
    r = c.get("/v1/sandboxes/x/proxy/abc/ping")
    t.eq(r.status, 401, "a non-numeric proxy port is not exempt")


def test_cors(s):
    c = Client("127.0.0.1", s.port)
    r = c.req("OPTIONS", "/v1/sandboxes", headers={
        "Origin": "http://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "open-sandbox-api-key,content-type"})
    t.eq(r.status, 200, "CORS preflight without a key -> 200")
    t.eq(r.headers.get("access-control-allow-origin"), "http://app.example", "preflight origin")
    t.ok("POST" in r.headers.get("access-control-allow-methods", ""), "preflight methods")
    t.ok("open-sandbox-api-key" in r.headers.get("access-control-allow-headers", ""),
         "preflight headers")
    t.eq(r.headers.get("access-control-allow-credentials"), "true", "preflight credentials")
    r = s.get("/v1/sandboxes", headers={"Origin": "http://app.example"})
    t.eq((r.status, r.headers.get("access-control-allow-origin")), (200, "http://app.example"),
         "simple request gets Access-Control-Allow-Origin")
    r = c.get("/v1/sandboxes", headers={"Origin": "http://app.example"})
    t.eq((r.status, r.headers.get("access-control-allow-origin")), (401, "http://app.example"),
         "401 carries CORS headers too")


def test_misc_routes(s):
    for p in ("/v1/metrics/events", "/metrics/events"):
        r = s.post(p, json={"eventType": "sandbox.create", "createDurationMs": 12,
                            "success": True})
        t.eq((r.status, r.body), (204, b""), "POST %s -> 204" % p)
    # Pools: test_pools.py. Here only that the routes exist at /v1 and at /.
    t.eq(s.get("/v1/pools").json(), {"items": []}, "GET /v1/pools -> no pools")
    for m, p in (("GET", "/pools/p1"), ("DELETE", "/v1/pools/p1")):
        t.is_error(s.req(m, p), 404, "POOL::NOT_FOUND", "%s %s -> 404" % (m, p))
    r = s.get("/v1/snapshots")
    t.eq((r.status, r.json().get("items")), (200, []), "GET /v1/snapshots -> 200, no items")
    for m, p, code in (("GET", "/snapshots/x", "SNAPSHOT::NOT_FOUND"),
                       ("DELETE", "/v1/snapshots/x", "SNAPSHOT::NOT_FOUND"),
                       ("POST", "/v1/sandboxes/x/snapshots", "SANDBOX::NOT_FOUND")):
        t.is_error(s.req(m, p, json={} if m == "POST" else None), 404, code,
                   "%s %s -> 404" % (m, p))
    r = s.get("/v1/no/such/route")
    t.is_error(r, 404, None, "unknown route -> 404 JSON")


# ---------------------------------------------------------------- create / get

def test_create_and_get(s):
    t0 = time.time()
    r = s.create(metadata={"team": "backend", "example.com/owner": "me"}, timeout=120,
                 env={"FOO": "bar", "SKIPPED": None})
    t.eq(r.status, 202, "create -> 202")
    j = r.json()
    check_sandbox_shape(j, "CreateSandboxResponse shape", full=False)
    t.eq(j["status"]["state"], "Running", "create returns Running")
    t.eq(j["entrypoint"], ["tail", "-f", "/dev/null"], "entrypoint echoed")
    t.eq(j["metadata"], {"team": "backend", "example.com/owner": "me"}, "metadata echoed")
    created, expires = parse_iso(j["createdAt"]), parse_iso(j["expiresAt"])
    t.ok(abs(expires - created - 120) < 0.01, "expiresAt = createdAt + timeout",
         (j["createdAt"], j["expiresAt"]))
    t.ok(abs(created - t0) < 5, "createdAt is now")
    g = s.get_sbx(j["id"])
    t.eq(g.status, 200, "GET -> 200")
    check_sandbox_shape(g.json(), "Sandbox shape")
    t.eq(g.json()["image"], {"uri": "host"}, "GET image.uri")
    t.eq(g.json()["id"], j["id"], "GET id")
    r = s.get("/sandboxes/" + j["id"])
    t.eq(r.status, 200, "GET at / prefix")
    x = s.execd(j["id"])
    ev = x.sse("/command", json={"command": "echo $FOO; echo ${SKIPPED-unset}"}).events
    t.eq(stdout_lines(ev), ["bar", "unset"], "env reaches the sandbox, null values skipped")
    for body in ({"timeout": None}, {"timeout": ...}):
        r = s.create(**body)
        t.eq(r.status, 202, "manual cleanup create %r" % body)
        t.ok("expiresAt" not in r.json(), "manual cleanup: no expiresAt key", r.json())
        t.ok("expiresAt" not in s.get_sbx(r.json()["id"]).json(), "GET: no expiresAt key")
    r = s.create(platform={"os": "Linux", "arch": "AMD64"}) if os.uname().machine == "x86_64" \
        else s.create(platform={"os": "linux", "arch": "arm64"})
    t.eq(r.status, 202, "create with platform")
    t.ok(r.json().get("platform", {}).get("os") == "linux", "platform normalized to lower case",
         r.json())
    s.delete_all()


def test_create_unknown_image(s):
    # serverlib's config sets [image] pull_policy = "never": no registry is asked.
    r = s.create(image={"uri": "no-such-image:1.0"})
    t.is_error(r, 400, "SANDBOX::IMAGE_NOT_FOUND", "unknown image -> 400")
    t.ok("no-such-image:1.0" in r.json().get("message", ""), "message names the image")
    t.ok("pull_policy" in r.json().get("message", ""), "message says pulls are off")
    t.eq(s.list_all(), [], "nothing created")


# ---------------------------------------------------------------- list

def test_list(s):
    a = s.new(metadata={"team": "a", "env": "prod", "example.com/team": "x"})
    time.sleep(0.002)
    b = s.new(metadata={"team": "b", "env": "prod"})
    time.sleep(0.002)
    c = s.new(metadata={"team": "a", "env": "dev"})
    t.is_empty_ok(s.post("/v1/sandboxes/%s/pause" % c["id"]), status=202)

    def ids(**params):
        r = s.get(qs("/v1/sandboxes", params))
        return [i["id"] for i in r.json()["items"]] if r.status == 200 else r.status

    t.eq(ids(), [c["id"], b["id"], a["id"]], "sorted by createdAt descending")
    r = s.get("/v1/sandboxes")
    t.eq(r.json()["pagination"], {"page": 1, "pageSize": 20, "totalItems": 3, "totalPages": 1,
                                  "hasNextPage": False}, "default pagination")
    for item in r.json()["items"]:
        check_sandbox_shape(item, "list item shape")
    t.eq(ids(state="Running"), [b["id"], a["id"]], "state=Running")
    t.eq(ids(state="PAUSED"), [c["id"]], "state is case-insensitive")
    t.eq(ids(state=["running", "Paused"]), [c["id"], b["id"], a["id"]], "repeated state = OR")
    t.eq(ids(state="Terminated"), [], "state with no match")
    t.eq(ids(state="Bogus"), [], "unknown state matches nothing")
    t.eq(ids(metadata="team=a"), [c["id"], a["id"]], "metadata filter")
    t.eq(ids(metadata="team=a&env=prod"), [a["id"]], "metadata filter is AND")
    t.eq(ids(metadata="team=a", state="Running"), [a["id"]], "metadata + state")
    t.eq(ids(metadata="team=zzz"), [], "metadata with no match")
    t.eq(ids(metadata="example.com/team=x"), [a["id"]], "prefixed key (JS encoding)")
    # Python SDK: keys/values are encoded twice (protocol.md 6.5.1).
    r = s.get("/v1/sandboxes?metadata=example.com%25252Fteam%3Dx")
    t.eq([i["id"] for i in r.json()["items"]], [a["id"]], "Python SDK double encoding")
    r = s.get("/v1/sandboxes?metadata=team%3Da%26env%3Ddev")
    t.eq([i["id"] for i in r.json()["items"]], [c["id"]], "encoded & inside metadata")
    t.eq(ids(metadata=""), [c["id"], b["id"], a["id"]], "empty metadata = no filter")
    for bad in ("team", "=a", "team=a&&env=prod", "team=a&"):
        r = s.get(qs("/v1/sandboxes", {"metadata": bad}))
        t.is_error(r, 400, "INVALID_METADATA_FORMAT", "malformed metadata %r -> 400" % bad)
    # pagination
    r = s.get(qs("/v1/sandboxes", {"pageSize": 2}))
    t.eq(([i["id"] for i in r.json()["items"]], r.json()["pagination"]),
         ([c["id"], b["id"]], {"page": 1, "pageSize": 2, "totalItems": 3, "totalPages": 2,
                               "hasNextPage": True}), "page 1 of 2")
    r = s.get(qs("/v1/sandboxes", {"pageSize": 2, "page": 2}))
    t.eq(([i["id"] for i in r.json()["items"]], r.json()["pagination"]["hasNextPage"]),
         ([a["id"]], False), "page 2 of 2")
    r = s.get(qs("/v1/sandboxes", {"pageSize": 2, "page": 5}))
    t.eq((r.status, r.json()["items"], r.json()["pagination"]["totalPages"]), (200, [], 2),
         "page past the end -> empty items")
    r = s.get(qs("/v1/sandboxes", {"pageSize": 200}))
    t.eq(r.status, 200, "pageSize 200 allowed")
    for params in ({"pageSize": 201}, {"pageSize": 0}, {"page": 0}, {"page": "x"},
                   {"pageSize": "1.5"}, {"page": -1}):
        t.is_error(s.get(qs("/v1/sandboxes", params)), 400, "SANDBOX::INVALID_PARAMETER",
                   "list %r -> 400" % params)
    r = s.get(qs("/v1/sandboxes", {"metadata": "team=a"}))
    t.eq(r.json()["pagination"]["totalItems"], 2, "totalItems counts filtered items")
    s.delete_all()
    r = s.get("/v1/sandboxes")
    t.eq(r.json(), {"items": [], "pagination": {"page": 1, "pageSize": 20, "totalItems": 0,
                                                "totalPages": 0, "hasNextPage": False}},
         "empty list")


# ---------------------------------------------------------------- metadata patch

def test_patch_metadata(s):
    sb = s.new(metadata={"a": "1", "b": "2"})
    p = "/v1/sandboxes/%s/metadata" % sb["id"]
    r = s.req("PATCH", p, json={"b": "3", "c": "4", "a": None, "zz": None})
    t.eq(r.status, 200, "PATCH -> 200")
    check_sandbox_shape(r.json(), "PATCH returns a Sandbox")
    t.eq(r.json()["metadata"], {"b": "3", "c": "4"}, "merge patch: replace, add, delete, ignore")
    t.eq(s.get_sbx(sb["id"]).json()["metadata"], {"b": "3", "c": "4"}, "patch persisted")
    r = s.req("PATCH", p, json={})
    t.eq((r.status, r.json()["metadata"]), (200, {"b": "3", "c": "4"}), "{} is a no-op")
    r = s.req("PATCH", p, body=b'{"d":"5"}', headers={"Content-Type": "application/merge-patch+json"})
    t.eq((r.status, r.json()["metadata"].get("d")), (200, "5"), "merge-patch content type")
    for bad, code in (({"opensandbox.io/x": "y"}, "INVALID_METADATA_LABEL"),
                      ({"opensandbox.io/x": None}, "INVALID_METADATA_LABEL"),
                      ({"k": "bad value!"}, "INVALID_METADATA_LABEL"),
                      ({"-k": "v"}, "INVALID_METADATA_LABEL"),
                      ({"k" * 64: "v"}, "INVALID_METADATA_LABEL"),
                      ({"k": "v" * 64}, "INVALID_METADATA_LABEL"),
                      ({"k": 5}, "SANDBOX::INVALID_PARAMETER"),
                      ({"k": ["x"]}, "SANDBOX::INVALID_PARAMETER")):
        t.is_error(s.req("PATCH", p, json=bad), 400, code, "PATCH %r -> 400" % bad)
    for body in (b"[1]", b"not json", b""):
        t.is_error(s.req("PATCH", p, body=body, headers={"Content-Type": "application/json"}),
                   400, "SANDBOX::INVALID_PARAMETER", "PATCH body %r -> 400" % body)
    t.eq(s.get_sbx(sb["id"]).json()["metadata"], {"b": "3", "c": "4", "d": "5"},
         "rejected patches change nothing")
    t.is_error(s.req("PATCH", "/v1/sandboxes/%s/metadata" % uuid.uuid4(), json={"a": "b"}), 404,
               "SANDBOX::NOT_FOUND", "PATCH unknown sandbox -> 404")
    s.delete("/v1/sandboxes/" + sb["id"])


# ---------------------------------------------------------------- pause / resume

def test_pause_resume(s):
    sb = s.new()
    sid = sb["id"]
    x = s.execd(sid)
    r = s.post("/v1/sandboxes/%s/pause" % sid)
    t.is_empty_ok(r, "pause -> 202 empty, Content-Length 0", status=202)
    j = s.get_sbx(sid).json()
    t.eq(j["status"]["state"], "Paused", "state Paused")
    t.ok(iso_ok(j["status"].get("lastTransitionAt")), "lastTransitionAt set")
    t.is_error(s.post("/v1/sandboxes/%s/pause" % sid), 409, "SANDBOX::NOT_RUNNING",
               "pause twice -> 409")
    t.is_error(x.get("/ping"), 409, "SANDBOX::NOT_RUNNING", "proxy to a paused sandbox -> 409")
    r = s.post("/v1/sandboxes/%s/resume" % sid)
    t.is_empty_ok(r, "resume -> 202 empty", status=202)
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "state Running again")
    t.is_error(s.post("/v1/sandboxes/%s/resume" % sid), 409, "SANDBOX::NOT_PAUSED",
               "resume a running sandbox -> 409")
    t.eq(x.get("/ping").status, 200, "execd answers after resume")
    ev = x.sse("/command", json={"command": "echo alive"}).events
    t.eq(stdout_lines(ev), ["alive"], "commands run after resume")
    for op in ("pause", "resume"):
        t.is_error(s.post("/v1/sandboxes/%s/%s" % (uuid.uuid4(), op)), 404, "SANDBOX::NOT_FOUND",
                   "%s unknown -> 404" % op)
    s.delete("/v1/sandboxes/" + sid)


# ---------------------------------------------------------------- renew

def test_renew(s):
    sb = s.new(timeout=300)
    p = "/v1/sandboxes/%s/renew-expiration" % sb["id"]
    want = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 3600))
    r = s.post(p, json={"expiresAt": want + ".5+00:00"})
    t.eq((r.status, r.json()), (200, {"expiresAt": want + ".500000Z"}),
         "renew -> 200 normalized UTC")
    t.eq(s.get_sbx(sb["id"]).json()["expiresAt"], want + ".500000Z", "GET shows the new expiry")
    local = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 7200 + 3600))
    r = s.post(p, json={"expiresAt": local + "+01:00"})
    t.eq(r.json().get("expiresAt"), time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(parse_iso(local + "Z") - 3600)), "offset converted to UTC")
    js = time.strftime("%Y-%m-%dT%H:%M:%S.123Z", time.gmtime(time.time() + 600))
    r = s.post(p, json={"expiresAt": js})
    t.eq((r.status, r.json()["expiresAt"]), (200, js.replace(".123Z", ".123000Z")),
         "JS toISOString form (earlier than before is allowed)")
    past = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 10))
    t.is_error(s.post(p, json={"expiresAt": past}), 400, "SANDBOX::INVALID_EXPIRATION",
               "renew into the past -> 400")
    for bad in ({"expiresAt": "tomorrow"}, {"expiresAt": 5}, {}, {"expiresAt": None},
                {"expiresAt": "2030-02-30T00:00:00Z"}):
        t.is_error(s.post(p, json=bad), 400, "SANDBOX::INVALID_PARAMETER", "renew %r -> 400" % bad)
    t.is_error(s.post(p, body=b"{", headers={"Content-Type": "application/json"}), 400,
               "SANDBOX::INVALID_PARAMETER", "renew with bad JSON -> 400")
    m = s.new(timeout=None)
    t.is_error(s.post("/v1/sandboxes/%s/renew-expiration" % m["id"], json={"expiresAt": js}), 409,
               "SANDBOX::INVALID_EXPIRATION", "renew a manual-cleanup sandbox -> 409")
    t.is_error(s.post("/v1/sandboxes/%s/renew-expiration" % uuid.uuid4(), json={"expiresAt": js}),
               404, "SANDBOX::NOT_FOUND", "renew unknown -> 404")
    s.delete_all()


# ---------------------------------------------------------------- endpoints + proxy

def test_endpoints(s):
    sb = s.new()
    sid = sb["id"]
    for port in (44772, 18080, 8080, 1, 65535):
        r = s.get("/v1/sandboxes/%s/endpoints/%d" % (sid, port))
        t.eq(r.status, 200, "endpoint %d -> 200" % port)
        j = r.json()
        t.eq(j.get("endpoint"), "127.0.0.1:%d/sandboxes/%s/proxy/%d" % (s.port, sid, port),
             "endpoint %d: server-proxy form, no scheme, no trailing slash" % port)
        token = j.get("headers", {}).get("X-EXECD-ACCESS-TOKEN")
        t.ok(set(j) <= {"endpoint", "headers"}, "endpoint %d: only endpoint and headers" % port, j)
        if port == 44772:
            t.ok(isinstance(token, str), "execd's endpoint carries its token header", j)
        else:
            t.ok(token is None, "endpoint %d does not hand out execd's token" % port, j)
    for q in ("use_server_proxy=true", "use_server_proxy=false"):
        r = s.get("/v1/sandboxes/%s/endpoints/44772?%s" % (sid, q))
        t.eq(r.status, 200, "endpoint with %s" % q)
    r = s.get("/sandboxes/%s/endpoints/44772" % sid, headers={"Host": "sbx.example:9999"})
    t.eq(r.json()["endpoint"], "sbx.example:9999/sandboxes/%s/proxy/44772" % sid,
         "endpoint host follows the Host the client used")
    for port in ("0", "65536", "abc", "-1", "1.5"):
        t.is_error(s.get("/v1/sandboxes/%s/endpoints/%s" % (sid, port)), 400,
                   "SANDBOX::INVALID_PORT", "endpoint port %s -> 400" % port)
    r = s.get("/v1/sandboxes/%s/endpoints/44772?expires=%d" % (sid, time.time() + 60))
    t.ok(r.status == 200 and "/sandboxes/%s/signed/44772/" % sid in r.json().get("endpoint", ""),
         "expires -> a signed URL (test_console.py checks them)", r.body[:200])
    t.is_error(s.get("/v1/sandboxes/%s/endpoints/44772" % uuid.uuid4()), 404,
               "SANDBOX::NOT_FOUND", "endpoint of unknown sandbox -> 404")
    s.delete("/v1/sandboxes/" + sid)


def upload(x, path, data):
    ctype, body = multipart(upload_parts([({"path": path}, data)]))
    return x.post("/files/upload", body=body, headers={"Content-Type": ctype})


def test_proxy(s):
    sb = s.new()
    sid = sb["id"]
    x = s.execd(sid)
    anon = ProxyExecd(s, sid)  # no execd token
    t.eq(anon.get("/ping").status, 200, "proxied /ping (public in execd)")
    r = anon.get("/metrics")
    t.eq(r.status, 401, "execd behind the proxy checks its token")
    r = x.get("/metrics")
    t.ok(r.status == 200 and "cpu_count" in r.json(), "proxied /metrics with the token", r.body)
    t.eq(s.get("/sandboxes/%s/proxy/44772/ping" % sid).status, 200, "proxy at the / prefix")
    # SSE streams through without buffering.
    st = x.sse_stream("/command", json={"command": "echo first; sleep 1; echo second"})
    arrivals = [(at - st.t0, ev) for at, ev in st]
    st.close()
    outs = [(a, e["text"]) for a, e in arrivals if e.get("type") == "stdout"]
    t.ok(len(outs) == 2 and outs[0][0] < 0.8 and outs[1][0] >= 0.9,
         "SSE events arrive as produced (not buffered)", outs)
    # A 1 MiB upload and download round trip through the proxy.
    blob = os.urandom(1 << 20)
    t.eq(upload(x, "/tmp/blob.bin", blob).status, 200, "upload 1 MiB through the proxy")
    r = x.get("/files/download?path=/tmp/blob.bin")
    t.ok(r.status == 200 and r.body == blob, "download 1 MiB through the proxy")
    # An HTTP + WebSocket server inside the sandbox, reached through port proxying.
    port = free_port()
    t.eq(upload(x, "/tmp/echo_srv.py", ECHO_SERVER.encode()).status, 200, "upload echo server")
    ev = x.sse("/command", json={"command": "python3 /tmp/echo_srv.py %d" % port,
                                 "background": True}).events
    t.ok(events_of(ev, "init"), "echo server started", ev)
    app = s.execd(sid, port)
    ok = wait_for(lambda: app.get("/").status == 200, timeout=10, interval=0.05)
    t.ok(ok, "app port answers through /proxy/%d" % port)
    r = app.get("/some/path?x=1&y=%20z", headers={"OPEN-SANDBOX-API-KEY": KEY,
                                                   "X-Custom": "kept"})
    j = r.json() if r.status == 200 else {}
    t.eq(j.get("path"), "/some/path?x=1&y=%20z", "path and raw query forwarded")
    h = j.get("headers", {})
    t.ok("open-sandbox-api-key" not in h, "the API key is not forwarded into the sandbox", h)
    t.ok("x-execd-access-token" not in h, "execd's token never reaches the app", h)
    t.eq(ProxyExecd(s, sid, port).get("/anon").status, 200,
         "an app port needs no execd token through the server proxy")
    t.eq(h.get("x-custom"), "kept", "other headers forwarded")
    t.eq(h.get("x-forwarded-proto"), "http", "X-Forwarded-Proto added")
    r = app.post("/echo", body=b"x" * 100000, headers={"Content-Type": "text/plain"})
    t.eq(len(r.json().get("body", "")) if r.status == 200 else r.status, 100000,
         "request body forwarded")
    ws = app.ws_connect("/ws")
    ws.send_text("hello through the proxy")
    t.eq(ws.recv(), (1, b"hello through the proxy"), "WebSocket text echo through the proxy")
    big = os.urandom(300000)
    ws.send_binary(big)
    t.eq(ws.recv(timeout=20), (2, big), "WebSocket 300 KB binary echo")
    ws.close()
    # Nothing listening on a port: execd's proxy answers 502.
    r = s.execd(sid, 1).get("/")
    t.eq(r.status, 502, "proxy to a closed port -> 502")
    t.is_error(s.get("/v1/sandboxes/%s/proxy/0/x" % sid), 400, "SANDBOX::INVALID_PORT",
               "proxy port 0 -> 400")
    t.is_error(s.get("/v1/sandboxes/%s/proxy/44772/a/%%2e%%2e/b" % sid), 400,
               "SANDBOX::INVALID_PARAMETER", "encoded .. in a proxy path -> 400")
    s.delete("/v1/sandboxes/" + sid)
    t.is_error(x.get("/ping"), 404, "SANDBOX::NOT_FOUND", "proxy to a deleted sandbox -> 404")


# ---------------------------------------------------------------- diagnostics

def test_diagnostics(s):
    sb = s.new(entrypoint=["sh", "-c", "echo hello-from-entrypoint; exec tail -f /dev/null"])
    sid = sb["id"]
    base = "/v1/sandboxes/%s/diagnostics" % sid
    want = {"sandboxId", "kind", "scope", "delivery", "contentType", "truncated"}
    ok = wait_for(lambda: "hello-from-entrypoint" in
                  s.get(base + "/logs?scope=container").json().get("content", ""), timeout=5)
    r = s.get(base + "/logs?scope=container")
    j = r.json()
    t.ok(r.status == 200 and want <= set(j) and j["kind"] == "logs" and
         j["delivery"] == "inline" and j["scope"] == "container" and no_nulls(j),
         "logs?scope=container shape", j)
    t.ok(ok, "entrypoint output in the logs", j.get("content"))
    t.ok(set(j) <= want | {"content", "contentLength", "warnings"}, "no extra properties", j)
    r = s.get(base + "/events?scope=lifecycle")
    j = r.json()
    t.ok(r.status == 200 and j["kind"] == "events" and "Running" in j.get("content", "") and
         "Pending" in j["content"], "events?scope=lifecycle lists the transitions", j)
    s.post("/v1/sandboxes/%s/pause" % sid)
    s.post("/v1/sandboxes/%s/resume" % sid)
    j = s.get(base + "/events?scope=all").json()
    t.ok("Paused" in j["content"] and "Resumed" in j["content"], "pause/resume events", j)
    r = s.get(base + "/logs?scope=lifecycle")
    t.ok(r.status == 200 and "Running" in r.json().get("content", ""), "logs scope=lifecycle")
    r = s.get(base + "/logs?scope=network")
    c = r.json().get("content", "") if r.status == 200 else ""
    t.ok("network mode: nat" in c and "sandbox address: 10." in c and "gateway: 10." in c,
         "logs scope=network describes the sandbox's network (more in test_subnet.py)", c)
    t.is_error(s.get(base + "/logs?scope=bogus"), 400, "DIAGNOSTICS::INVALID_SCOPE",
               "unknown scope -> 400")
    r = s.get(base + "/logs?tail=5")
    t.ok(r.status == 200 and r.headers.get("content-type", "").startswith("text/plain") and
         r.headers.get("deprecation") == "true" and b"hello-from-entrypoint" in r.body,
         "legacy logs text/plain with Deprecation", r.headers)
    r = s.get(base + "/events?limit=2")
    t.ok(r.status == 200 and len(r.text.strip().splitlines()) == 2, "legacy events limit",
         r.text)
    t.is_error(s.get(base + "/logs?tail=0"), 400, "SANDBOX::INVALID_PARAMETER", "tail=0 -> 400")
    r = s.get(base + "/inspect")
    t.ok(r.status == 200 and sid.encode() in r.body, "inspect text")
    r = s.get(base + "/summary")
    t.ok(r.status == 200 and b"Events:" in r.body and b"Logs:" in r.body, "summary text")
    t.is_error(s.get("/v1/sandboxes/%s/diagnostics/logs?scope=all" % uuid.uuid4()), 404,
               "SANDBOX::NOT_FOUND", "diagnostics of unknown sandbox -> 404")
    s.delete("/v1/sandboxes/" + sid)


# ---------------------------------------------------------------- delete / TTL

def test_delete(s):
    sb = s.new()
    r = s.delete("/v1/sandboxes/" + sb["id"])
    t.eq((r.status, r.body), (204, b""), "delete -> 204 empty")
    r = s.get_sbx(sb["id"])
    t.is_error(r, 404, "SANDBOX::NOT_FOUND", "GET after delete -> 404")
    t.eq(r.json().get("message"), "Sandbox %s not found." % sb["id"], "404 message")
    t.is_error(s.delete("/v1/sandboxes/" + sb["id"]), 404, "SANDBOX::NOT_FOUND",
               "delete twice -> 404")
    t.is_error(s.get("/v1/sandboxes/" + sb["id"] + "/endpoints/44772"), 404,
               "SANDBOX::NOT_FOUND", "endpoint after delete -> 404")
    p = s.new()
    s.post("/v1/sandboxes/%s/pause" % p["id"])
    t.eq(s.delete("/v1/sandboxes/" + p["id"]).status, 204, "delete a paused sandbox -> 204")
    t.eq(s.get_sbx(p["id"]).status, 404, "paused sandbox gone")
    t.eq(s.delete("/sandboxes/" + s.new()["id"]).status, 204, "delete at / prefix")
    t.eq(s.list_all(), [], "nothing left")


def test_delete_failed(s):
    """PID 1 dying on its own -> Failed, kept until deleted."""
    sb = s.new(timeout=None)
    insp = s.get("/v1/sandboxes/%s/diagnostics/inspect" % sb["id"]).text
    m = re.search(r"pid: (\d+)", insp)
    t.ok(m, "inspect shows the PID 1", insp)
    u = re.search(r"^  memory: (\d+) bytes\n  cpu: (\d+) ns\n  pids: (\d+)$", insp, re.M)
    t.ok(u and int(u.group(1)) > 0 and int(u.group(3)) >= 1,
         "inspect shows the running sandbox's usage (osb_rt_stats)", insp)
    if not m:
        return
    os.kill(int(m.group(1)), 9)
    ok = wait_for(lambda: s.get_sbx(sb["id"]).json()["status"]["state"] == "Failed", timeout=5)
    j = s.get_sbx(sb["id"]).json()
    t.ok(ok and j["status"].get("reason") == "SANDBOX_EXITED", "killed PID 1 -> Failed", j)
    t.is_error(s.post("/v1/sandboxes/%s/pause" % sb["id"]), 409, "SANDBOX::NOT_RUNNING",
               "pause a failed sandbox -> 409")
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "delete a failed sandbox -> 204")
    t.eq(s.get_sbx(sb["id"]).status, 404, "failed sandbox gone")


def test_delete_while_creating(s):
    """Deletes racing creates: every delete answers 204 and its sandbox is gone."""
    results = {}

    def create(i):
        results[i] = s.create(timeout=300)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(12)]
    for th in threads:
        th.start()
    deleted, seen_pending = {}, 0
    end = time.monotonic() + 10
    while any(th.is_alive() for th in threads) and time.monotonic() < end:
        for item in s.list_all():
            if item["id"] in deleted:
                continue
            if item["status"]["state"] == "Pending":
                seen_pending += 1
            deleted[item["id"]] = s.delete("/v1/sandboxes/" + item["id"]).status
    for th in threads:
        th.join(30)
    t.diag("pending sandboxes caught by a delete: %d of %d" % (seen_pending, len(deleted)))
    t.ok(deleted and all(v == 204 for v in deleted.values()), "every racing delete -> 204",
         deleted)
    codes = sorted(r.status for r in results.values())
    t.ok(all(c in (202, 409) for c in codes), "creates answer 202 or 409 (deleted)", codes)
    for r in results.values():
        if r.status == 409:
            t.is_error(r, 409, "SANDBOX::DELETED", "create cancelled by delete -> 409 JSON")
            break
    for sid in deleted:
        if s.get_sbx(sid).status != 404:
            t.ok(False, "deleted sandbox %s still there" % sid)
    s.delete_all()
    t.eq(s.list_all(), [], "nothing left")


def test_ttl(s):
    a = s.new(timeout=2)
    b = s.new(timeout=4)
    m = s.new(timeout=None)
    t.eq(s.get_sbx(a["id"]).status, 200, "sandbox alive before expiry")
    gone = wait_for(lambda: s.get_sbx(a["id"]).status == 404, timeout=5, interval=0.05)
    lag = time.time() - parse_iso(a["expiresAt"])
    t.ok(gone and -0.1 < lag < 1.0, "timeout 2 s: deleted on time (lag %.3f s)" % lag)
    t.eq(s.get_sbx(b["id"]).status, 200, "a later expiry is still alive")
    s.post("/v1/sandboxes/%s/pause" % b["id"])
    t.ok(wait_for(lambda: s.get_sbx(b["id"]).status == 404, timeout=6, interval=0.05),
         "a paused sandbox expires too")
    r = s.new(timeout=2)
    s.post("/v1/sandboxes/%s/renew-expiration" % r["id"], json={"expiresAt": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 5))})
    time.sleep(2.5)
    t.eq(s.get_sbx(r["id"]).status, 200, "renew pushes the expiry back")
    t.eq(s.get_sbx(m["id"]).status, 200, "manual cleanup never expires")
    s.delete_all()


def test_timeout_limits():
    with Server(api_key=KEY, min_timeout=60, max_timeout=3600) as s2:
        for v in (59, 3601, -1, 0):
            t.is_error(s2.create(timeout=v), 400, "SANDBOX::INVALID_PARAMETER",
                       "timeout %d with min 60 max 3600 -> 400" % v)
        t.eq(s2.create(timeout=60).status, 202, "timeout 60 accepted")
        t.eq(s2.create(timeout=3600).status, 202, "timeout 3600 accepted")
        sb = s2.list_all()[0]
        far = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 7200))
        t.is_error(s2.post("/v1/sandboxes/%s/renew-expiration" % sb["id"],
                           json={"expiresAt": far}), 400, "SANDBOX::INVALID_EXPIRATION",
                   "renew beyond max_sandbox_timeout_seconds -> 400")


def test_concurrent_creates(s):
    n = 50
    results, times = [None] * n, [None] * n

    def create(i):
        t0 = time.monotonic()
        results[i] = s.create(timeout=300)
        times[i] = time.monotonic() - t0

    threads = [threading.Thread(target=create, args=(i,)) for i in range(n)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    wall = time.monotonic() - t0
    codes = [r.status if r else None for r in results]
    t.eq(codes.count(202), n, "%d concurrent creates all 202" % n)
    ids = [r.json()["id"] for r in results if r and r.status == 202]
    t.eq(len(set(ids)), len(ids), "distinct ids")
    t.diag("%d concurrent creates: wall %.2f s, slowest %.3f s" % (n, wall, max(
        x for x in times if x is not None)))
    pings = [ProxyExecd(s, i).get("/ping").status for i in ids]
    t.eq(pings.count(200), len(ids), "every concurrent sandbox answers /ping")
    r = s.get(qs("/v1/sandboxes", {"state": "Running", "pageSize": 200}))
    t.eq(r.json()["pagination"]["totalItems"], n, "all listed Running")
    dres = [None] * len(ids)

    def delete(i):
        dres[i] = s.delete("/v1/sandboxes/" + ids[i]).status

    threads = [threading.Thread(target=delete, args=(i,)) for i in range(len(ids))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    t.eq(dres.count(204), len(ids), "concurrent deletes all 204")
    t.eq(s.list_all(), [], "nothing left")


def test_timings(s):
    """Create-to-ready and delete latency, reported (not asserted)."""
    cr, de = [], []
    for _ in range(20):
        t0 = time.monotonic()
        sb = s.new()
        cr.append(time.monotonic() - t0)
        t0 = time.monotonic()
        s.delete("/v1/sandboxes/" + sb["id"])
        de.append(time.monotonic() - t0)
    cr.sort()
    de.sort()
    t.diag("serial create p50 %.1f ms p90 %.1f ms; delete p50 %.1f ms p90 %.1f ms" % (
        cr[10] * 1000, cr[18] * 1000, de[10] * 1000, de[18] * 1000))
    t.ok(True, "timings reported")


def cli(s, *args):
    import subprocess
    return subprocess.run([SERVER_BIN, "--config", s.config] + list(args), capture_output=True,
                          text=True, timeout=60)


def test_image_cli(s):
    """`image import/list/rm` next to a running server; a sandbox from the imported image."""
    import shutil
    import tarfile
    bb = shutil.which("busybox") or "/bin/busybox"
    tar = os.path.join(s.tmp, "bb.tar")
    with tarfile.open(tar, "w") as tf:
        tf.add(bb, "bin/busybox")
        for name in ("sh", "tail", "echo", "cat"):
            ti = tarfile.TarInfo("bin/" + name)
            ti.type, ti.linkname = tarfile.SYMTYPE, "busybox"
            tf.addfile(ti)
    r = cli(s, "image", "import", "bb-test", tar)
    t.ok(r.returncode == 0, "image import", r.stderr)
    r = cli(s, "image", "list")
    t.ok(r.returncode == 0 and "bb-test" in r.stdout and "host" in r.stdout, "image list", r)
    with open(EXECD_BIN, "rb") as f:
        dynamic = b"ld-linux" in f.read(8192)  # sanitizer builds: execd needs the host's libs
    sb = s.create(image={"uri": "bb-test"}, entrypoint=["tail", "-f", "/dev/null"])
    if dynamic:
        t.skip("sandbox from the imported image", "execd is dynamically linked (sanitizer build)")
        if sb.status == 202:
            s.delete("/v1/sandboxes/" + sb.json()["id"])
    else:
        t.eq(sb.status, 202, "sandbox from the imported image (server kept running meanwhile)")
    if sb.status == 202 and not dynamic:
        t.eq(ProxyExecd(s, sb.json()["id"]).get("/ping").status, 200, "its execd answers")
        r = cli(s, "image", "rm", "bb-test")
        t.ok(r.returncode != 0, "image rm refuses while a sandbox uses it", r)
        s.delete("/v1/sandboxes/" + sb.json()["id"])
    r = cli(s, "image", "rm", "bb-test")
    t.ok(r.returncode == 0, "image rm", r.stderr)
    t.is_error(s.create(image={"uri": "bb-test"}), 400, "SANDBOX::IMAGE_NOT_FOUND",
               "removed image -> 400")
    t.eq(s.create().status, 202, "host sandboxes still work after the CLI ran")
    s.delete_all()


def main():
    with Server(api_key=KEY, min_timeout=1) as s:
        t.run(test_health_and_request_id, s)
        t.run(test_auth, s)
        t.run(test_cors, s)
        t.run(test_misc_routes, s)
        t.run(test_create_and_get, s)
        t.run(test_create_unknown_image, s)
        t.run(test_image_cli, s, timeout=60)
        t.run(test_list, s)
        t.run(test_patch_metadata, s)
        t.run(test_pause_resume, s)
        t.run(test_renew, s)
        t.run(test_endpoints, s)
        t.run(test_proxy, s, timeout=60)
        t.run(test_diagnostics, s)
        t.run(test_delete, s)
        t.run(test_delete_failed, s)
        t.run(test_delete_while_creating, s, timeout=60)
        t.run(test_ttl, s, timeout=60)
        t.run(test_concurrent_creates, s, timeout=120)
        t.run(test_timings, s, timeout=60)
    t.run(test_timeout_limits, timeout=60)


t.run(main, timeout=500)
t.done()
