"""Every error a route answers has a status the upstream OpenAPI file (docs/specs/) lists
for that operation, or one of the exceptions docs/errors.md documents, and a JSON body with
string `code` and `message`: generated SDK clients parse the body only for listed statuses.
Failed creates leave no sandbox behind.

Also checks that the status tables in src/server/apierr.c and src/execd/errmap.c list exactly
what the spec files list.
"""
import json
import os
import re
import sys
import uuid

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: F401,F403,E402
from serverlib import DEFAULT_SANDBOX  # noqa: E402
from registrylib import Registry, busybox_layer, registry_available, scratch_base  # noqa: E402

t = TAP()

SPECS = os.path.join(REPO, "docs", "specs")
KEY = "statuses-key"
# Transport-level answers any route may give (docs/errors.md): auth where the spec lists
# none (execd), 405, 411, 413, 414, 426, 431.
TRANSPORT = {401, 405, 411, 413, 414, 426, 431}


def load_spec(name):
    with open(os.path.join(SPECS, name)) as f:
        doc = yaml.safe_load(f)
    ops = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                norm = re.sub(r"\{[^}]+\}", "{}", path)
                ops[(method.upper(), norm)] = {int(c) for c in op["responses"]
                                               if str(c).isdigit() and int(c) >= 400}
    return ops


LIFECYCLE = load_spec("sandbox-lifecycle.yml")
LIFECYCLE.update(load_spec("diagnostic-api.yml"))
EXECD = load_spec("execd-api.yaml")
EGRESS = load_spec("egress-api.yaml")


def norm(pattern):
    return re.sub(r":[a-z_]+", "{}", pattern)


def check(api, method, path, r, name, code=None, want=None):
    """r is an error whose status the spec lists for (method, path) or is transport-level."""
    listed = api[(method, path)]
    problems = []
    if r.status not in listed | TRANSPORT:
        problems.append("status %d not in the spec's %s" % (r.status, sorted(listed)))
    if want is not None and r.status != want:
        problems.append("status %d, want %d" % (r.status, want))
    try:
        j = r.json()
    except Exception:
        j = None
    if not isinstance(j, dict) or not isinstance(j.get("code"), str) or \
            not isinstance(j.get("message"), str) or not j["code"] or not j["message"]:
        problems.append("body is not {code,message}")
    elif code is not None and j["code"] != code:
        problems.append("code %r, want %r" % (j["code"], code))
    return t.ok(not problems, "%s %s: %s -> %d" % (method, path, name, r.status),
                "; ".join(problems) + "\nbody: %r" % r.body[:300] if problems else None)


# ------------------------------------------------------------------ tables vs spec

def c_table(path, array):
    with open(os.path.join(REPO, path)) as f:
        src = f.read()
    body = src[src.index(array):]
    body = body[:body.index("};")]
    return {(m, norm(p)): {int(x) for x in st.split()}
            for m, p, st in re.findall(r'\{"([A-Z]+)", "([^"]+)", "([0-9 ]*)"\}', body)}


def test_tables():
    got = c_table("src/server/apierr.c", "lifecycle_rules[]")
    t.eq(got, LIFECYCLE, "apierr.c lifecycle table == sandbox-lifecycle.yml + diagnostic-api.yml")
    got = c_table("src/server/apierr.c", "egress_rules[]")
    want = {k: v for k, v in EGRESS.items() if k[1] == "/policy"}
    t.eq(got, want, "apierr.c egress table == egress-api.yaml /policy")
    got = c_table("src/execd/errmap.c", "rules[]")
    t.eq(got, {k: v for k, v in EXECD.items() if v},
         "execd errmap.c table == execd-api.yaml (operations with error statuses)")
    used, table = server_codes()
    t.eq(sorted(used - table), [], "every error code src/server/ raises is in apierr.c's code table")
    t.eq(sorted(table - used), [], "every code in apierr.c's code table is raised somewhere")


# The wire codes of src/server/*.c (string literals "AREA::NAME" and the area-less ones
# upstream has) and the keys of apierr.c's codes[] (without a "#reason").
CODE_LITERAL = r'"([A-Z][A-Z_]*::[A-Z_]+|MISSING_API_KEY|INVALID_API_KEY|INVALID_METADATA_[A-Z]+)"'


def server_codes():
    used = set()
    src_dir = os.path.join(REPO, "src", "server")
    for name in sorted(os.listdir(src_dir)):
        if name.endswith(".c") and name != "apierr.c":
            with open(os.path.join(src_dir, name)) as f:
                used |= set(re.findall(CODE_LITERAL, f.read()))
    with open(os.path.join(src_dir, "apierr.c")) as f:
        src = f.read()
    body = src[src.index("codes[] = {"):]
    body = body[:body.index("};")]
    table = {a or b for a, b in re.findall(r'ROW\("([A-Z_:]+)"|\.key = "([A-Z_:]+)#', body)}
    return used, table


# ------------------------------------------------------------------ lifecycle

def count(s):
    return len(s.list_all())


def test_create(s, dead_ref):
    P = ("POST", "/sandboxes")
    before = count(s)
    hdr = {"Content-Type": "application/json"}
    cases = [
        ("bad JSON", dict(raw=b"{"), 400, "SANDBOX::INVALID_PARAMETER"),
        ("not an object", dict(raw=b"[1]"), 400, None),
        ("entrypoint a string", dict(entrypoint="x"), 400, None),
        ("entrypoint empty", dict(entrypoint=[]), 400, None),
        ("timeout a string", dict(timeout="x"), 400, None),
        ("timeout too small", dict(timeout=0), 400, None),
        ("resourceLimits wrong type", dict(resourceLimits={"cpu": 1}), 400, None),
        ("image without uri", dict(image={}), 400, None),
        ("unknown snapshotId", dict(image=None, snapshotId="no-such-snap"), 400,
         "SNAPSHOT::NOT_FOUND"),
        ("credential proxy without networkPolicy", dict(credentialProxy={"enabled": True}), 400,
         "SANDBOX::INVALID_PARAMETER"),
        ("registry unreachable", dict(image={"uri": dead_ref}), 500,
         "SANDBOX::IMAGE_REGISTRY_UNAVAILABLE"),
        ("pool ref", dict(extensions={"poolRef": "p"}), 400, None),
    ]
    for name, fields, want, code in cases:
        if "raw" in fields:
            r = s.req("POST", "/v1/sandboxes", body=fields["raw"], headers=hdr)
        else:
            body = dict(DEFAULT_SANDBOX)
            body.update(fields)
            body = {k: v for k, v in body.items() if v is not None}
            r = s.req("POST", "/v1/sandboxes", json=body, timeout=60)
        check(LIFECYCLE, *P, r, name, code, want)
    big = b'{"x":"' + b"a" * (17 << 20) + b'"}'
    check(LIFECYCLE, *P, s.req("POST", "/v1/sandboxes", body=big, headers=hdr),
          "17 MiB body", None, 413)
    no_key = Client("127.0.0.1", s.port)
    check(LIFECYCLE, *P, no_key.post("/v1/sandboxes", json=DEFAULT_SANDBOX), "no API key",
          "MISSING_API_KEY", 401)
    check(LIFECYCLE, *P, no_key.req("POST", "/v1/sandboxes", json=DEFAULT_SANDBOX,
                                    headers={"OPEN-SANDBOX-API-KEY": "wrong"}),
          "wrong API key", "INVALID_API_KEY", 401)
    t.eq(count(s), before, "no failed create left a sandbox behind")


def test_pull_denied(s, preg):
    ref = "%s/private/app:v1" % preg.addr
    preg.push_image("private/app", "v1", [busybox_layer()])
    before = count(s)
    r = s.create(image={"uri": ref}, http_timeout=60)
    check(LIFECYCLE, "POST", "/sandboxes", r, "pull denied (no credentials)",
          "SANDBOX::IMAGE_PULL_DENIED", 400)
    r = s.create(image={"uri": ref, "auth": {"username": "alice", "password": "wrong"}},
                 http_timeout=60)
    check(LIFECYCLE, "POST", "/sandboxes", r, "pull denied (wrong password)",
          "SANDBOX::IMAGE_PULL_DENIED", 400)
    t.eq(count(s), before, "denied pulls left no sandbox behind")


def test_sandbox_routes(s):
    L = LIFECYCLE
    nope = "no-such-" + uuid.uuid4().hex[:8]
    check(L, "GET", "/sandboxes", s.get("/v1/sandboxes?pageSize=0"), "pageSize=0", None, 400)
    check(L, "GET", "/sandboxes", s.get("/v1/sandboxes?page=x"), "page=x", None, 400)
    check(L, "GET", "/sandboxes", s.get("/v1/sandboxes?metadata=%3D"), "bad metadata filter",
          None, 400)
    for method, path, sub in [("GET", "/sandboxes/{}", ""), ("DELETE", "/sandboxes/{}", ""),
                              ("POST", "/sandboxes/{}/pause", "/pause"),
                              ("POST", "/sandboxes/{}/resume", "/resume"),
                              ("PATCH", "/sandboxes/{}/metadata", "/metadata"),
                              ("POST", "/sandboxes/{}/renew-expiration", "/renew-expiration"),
                              ("GET", "/sandboxes/{}/endpoints/{}", "/endpoints/44772"),
                              ("POST", "/sandboxes/{}/snapshots", "/snapshots"),
                              ("GET", "/sandboxes/{}/diagnostics/logs", "/diagnostics/logs"),
                              ("GET", "/sandboxes/{}/diagnostics/events",
                               "/diagnostics/events")]:
        body = {"expiresAt": "2100-01-01T00:00:00Z"} if "renew" in sub else \
            ({} if method in ("POST", "PATCH") else None)
        r = s.req(method, "/v1/sandboxes/%s%s" % (nope, sub), json=body)
        check(L, method, path, r, "unknown sandbox", "SANDBOX::NOT_FOUND", 404)

    sid = s.new()["id"]
    base = "/v1/sandboxes/" + sid
    hdr = {"Content-Type": "application/json"}
    check(L, "PATCH", "/sandboxes/{}/metadata",
          s.req("PATCH", base + "/metadata", body=b"{", headers=hdr), "bad JSON", None, 400)
    check(L, "PATCH", "/sandboxes/{}/metadata", s.req("PATCH", base + "/metadata", json=[1]),
          "not an object", None, 400)
    check(L, "PATCH", "/sandboxes/{}/metadata",
          s.req("PATCH", base + "/metadata", json={"k": 1}), "value not a string", None, 400)
    for body, name in [({}, "no expiresAt"), ({"expiresAt": 5}, "expiresAt a number"),
                       ({"expiresAt": "yesterday"}, "expiresAt garbage"),
                       ({"expiresAt": "2000-01-01T00:00:00Z"}, "expiresAt in the past")]:
        check(L, "POST", "/sandboxes/{}/renew-expiration",
              s.post(base + "/renew-expiration", json=body), name, None, 400)
    E = ("GET", "/sandboxes/{}/endpoints/{}")
    check(L, *E, s.get(base + "/endpoints/0"), "port 0", "SANDBOX::INVALID_PORT", 400)
    check(L, *E, s.get(base + "/endpoints/x"), "port x", "SANDBOX::INVALID_PORT", 400)
    check(L, *E, s.get(base + "/endpoints/8080?expires=1"), "expires", None, 400)
    check(L, "GET", "/sandboxes/{}/diagnostics/logs",
          s.get(base + "/diagnostics/logs?scope=nope"), "bad scope", None, 400)
    check(L, "POST", "/sandboxes/{}/resume", s.post(base + "/resume"), "resume a running one",
          "SANDBOX::NOT_PAUSED", 409)
    t.eq(s.post(base + "/pause").status, 202, "pause")
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] == "Paused", timeout=60)
    check(L, "POST", "/sandboxes/{}/pause", s.post(base + "/pause"), "pause a paused one",
          "SANDBOX::NOT_RUNNING", 409)
    check(L, "POST", "/sandboxes/{}/snapshots", s.req("POST", base + "/snapshots",
                                                      body=b"{", headers=hdr),
          "bad JSON", None, 400)
    t.eq(s.post(base + "/resume").status, 202, "resume")
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] == "Running", timeout=60)
    s.delete(base)


def test_snapshot_routes(s):
    L = LIFECYCLE
    nope = "no-such-snap-" + uuid.uuid4().hex[:8]
    check(L, "GET", "/snapshots", s.get("/v1/snapshots?pageSize=201"), "pageSize=201", None, 400)
    check(L, "GET", "/snapshots/{}", s.get("/v1/snapshots/" + nope), "unknown",
          "SNAPSHOT::NOT_FOUND", 404)
    check(L, "DELETE", "/snapshots/{}", s.delete("/v1/snapshots/" + nope), "unknown",
          "SNAPSHOT::NOT_FOUND", 404)
    sid = s.new()["id"]
    r = s.post("/v1/sandboxes/%s/snapshots" % sid, json={"name": "st"})
    if not t.eq(r.status, 202, "take a snapshot", r.body[:300]):
        return
    snap_id = r.json()["id"]
    state = {}

    def ready():
        state["j"] = s.get("/v1/snapshots/" + snap_id).json()
        return state["j"]["status"]["state"] != "Creating"
    wait_for(ready, timeout=120, interval=0.05)
    if not t.eq(state["j"]["status"]["state"], "Ready", "snapshot Ready", state["j"]):
        return
    body = {"snapshotId": snap_id, "resourceLimits": DEFAULT_SANDBOX["resourceLimits"],
            "timeout": 600}
    r = s.post("/v1/sandboxes", json=body)
    t.eq(r.status, 202, "restore from it", r.body[:300])
    check(L, "DELETE", "/snapshots/{}", s.delete("/v1/snapshots/" + snap_id),
          "a sandbox created from it is alive", "SNAPSHOT::IN_USE", 409)
    s.delete_all()
    wait_for(lambda: s.delete("/v1/snapshots/" + snap_id).status == 204, timeout=60)


def test_fallback(s):
    r = s.get("/v1/no-such-route")
    t.is_error(r, 404, "GENERAL::NOT_FOUND", "unknown lifecycle route -> 404 {code,message}")


# ------------------------------------------------------------------ egress

def test_egress(s):
    G = EGRESS
    sb = s.new(networkPolicy={"defaultAction": "deny",
                              "egress": [{"action": "allow", "target": "a.test"}]})
    ep = s.endpoint(sb["id"], 18080)
    tok = ep["headers"]["OPENSANDBOX-EGRESS-AUTH"]
    base = "/v1/sandboxes/%s/proxy/18080" % sb["id"]
    anon = Client("127.0.0.1", s.port)
    hdr = {"OPENSANDBOX-EGRESS-AUTH": tok, "Content-Type": "application/json"}
    for m in ("GET", "PATCH", "DELETE"):
        for tk, name in ((None, "no token"), ("wrong", "wrong token")):
            r = anon.req(m, base + "/policy", body=b"[]",
                         headers={"OPENSANDBOX-EGRESS-AUTH": tk})
            check(G, m, "/policy", r, name, "EGRESS::UNAUTHORIZED", 401)
    for m, body, name in [("PATCH", b"{", "bad JSON"), ("PATCH", b"[]", "empty array"),
                          ("PATCH", b'[{"action":"maybe","target":"x.test"}]', "bad action"),
                          ("PATCH", b'{"action":"allow"}', "object, not array"),
                          ("PATCH", b"", "empty body"),
                          ("DELETE", b"", "empty body"), ("DELETE", b"nope", "bad JSON"),
                          ("DELETE", b'"a.test"', "a string, not an array")]:
        check(G, m, "/policy", anon.req(m, base + "/policy", body=body, headers=hdr), name,
              None, 400)
    r = anon.get(base + "/policy", headers={"OPENSANDBOX-EGRESS-AUTH": tok})
    t.eq((r.status, [e["target"] for e in r.json()["policy"]["egress"]]), (200, ["a.test"]),
         "the bad calls changed nothing")
    plain = s.new()
    pbase = "/v1/sandboxes/%s/proxy/18080" % plain["id"]
    check(G, "GET", "/policy", anon.get(pbase + "/policy"), "sandbox without networkPolicy",
          "EGRESS::NOT_ENABLED", 500)
    check(G, "PATCH", "/policy", anon.req("PATCH", pbase + "/policy", body=b'[]', headers=hdr),
          "sandbox without networkPolicy", "EGRESS::NOT_ENABLED", 400)
    gone = "/v1/sandboxes/no-such-sbx/proxy/18080/policy"
    check(G, "GET", "/policy", anon.get(gone), "unknown sandbox", "SANDBOX::NOT_FOUND", 500)
    s.delete("/v1/sandboxes/" + sb["id"])
    s.delete("/v1/sandboxes/" + plain["id"])


# ------------------------------------------------------------------ execd

def test_execd(s):
    X = EXECD
    sid = s.new()["id"]
    x = s.execd(sid)
    hdr = {"Content-Type": "application/json"}

    def c(method, path, r, name, code=None, want=None):
        check(X, method, path, r, name, code, want)

    c("POST", "/command", x.req("POST", "/command", body=b"{", headers=hdr), "bad JSON",
      None, 400)
    c("POST", "/command", x.post("/command", json={"command": 5}), "command a number", None, 400)
    c("POST", "/command", x.post("/command", json={}), "no command", None, 400)
    c("DELETE", "/command", x.delete("/command"), "no id", None, 400)
    c("GET", "/command/status/{}", x.get("/command/status/nope"), "unknown id", None, 404)
    c("GET", "/command/{}/logs", x.get("/command/nope/logs"), "unknown id")
    c("POST", "/session", x.req("POST", "/session", body=b"{", headers=hdr), "bad JSON",
      None, 400)
    c("POST", "/session/{}/run", x.post("/session/nope/run", json={"command": "true"}),
      "unknown session")
    c("POST", "/session/{}/run", x.req("POST", "/session/nope/run", body=b"{", headers=hdr),
      "bad JSON", None, 400)
    c("DELETE", "/session/{}", x.delete("/session/nope"), "unknown session", None, 404)
    c("POST", "/code/context", x.req("POST", "/code/context", body=b"{", headers=hdr),
      "bad JSON", None, 400)
    c("POST", "/code/context", x.post("/code/context", json={"language": "cobol"}),
      "unknown language", None, 400)
    c("GET", "/code/contexts/{}", x.get("/code/contexts/nope"), "unknown context", None, 404)
    c("DELETE", "/code/contexts/{}", x.delete("/code/contexts/nope"), "unknown context", None,
      404)
    c("DELETE", "/code/contexts", x.delete("/code/contexts"), "no language", None, 400)
    c("POST", "/code", x.req("POST", "/code", body=b"{", headers=hdr), "bad JSON", None, 400)
    c("POST", "/code", x.post("/code", json={"code": ""}), "empty code", None, 400)
    c("DELETE", "/code", x.delete("/code"), "no id", None, 400)
    c("GET", "/files/info", x.get("/files/info?path=/no/such/file"), "missing file", None, 404)
    c("POST", "/files/permissions", x.req("POST", "/files/permissions", body=b"{",
                                          headers=hdr), "bad JSON", None, 400)
    c("POST", "/files/mv", x.req("POST", "/files/mv", body=b"{", headers=hdr), "bad JSON",
      None, 400)
    c("POST", "/files/mv", x.post("/files/mv", json=[{"src": "/no/such", "dest": "/tmp/x"}]),
      "missing source", None, 404)
    c("GET", "/files/search", x.get("/files/search"), "no path", None, 400)
    c("GET", "/files/search", x.get("/files/search?path=/no/such/dir&pattern=*"), "missing dir",
      None, 404)
    c("POST", "/files/replace", x.req("POST", "/files/replace", body=b"{", headers=hdr),
      "bad JSON", None, 400)
    c("POST", "/files/upload", x.req("POST", "/files/upload", body=b"x",
                                     headers={"Content-Type": "text/plain"}),
      "not multipart", None, 400)
    c("GET", "/files/download", x.get("/files/download?path=/no/such"), "missing file", None,
      404)
    c("GET", "/files/download", x.get("/files/download?path=/etc/hostname",
                                      headers={"Range": "bytes=999999-"}),
      "unsatisfiable range", None, 416)
    c("GET", "/directories/list", x.get("/directories/list?path=/no/such"), "missing dir",
      None, 404)
    c("POST", "/directories", x.req("POST", "/directories", body=b"{", headers=hdr),
      "bad JSON", None, 400)
    bad = ProxyExecd(s, sid, token="wrong")
    c("POST", "/command", bad.post("/command", json={"command": "true"}), "wrong token",
      "UNAUTHORIZED", 401)
    r = x.get("/no-such-route")
    t.eq((r.status, r.body), (404, b"404 page not found"),
         "unknown execd route -> gin's 404 text (documented exception)")
    s.delete("/v1/sandboxes/" + sid)


def main():
    dead = free_port()
    regs = registry_available()
    with Registry(users={"alice": "pw-" + uuid.uuid4().hex}) if regs else _Null() as preg:
        insecure = ["127.0.0.1:%d" % dead] + ([preg.addr] if regs else [])
        extra = "[image]\ninsecure_registries = %s\n" % json.dumps(insecure)
        with Server(api_key=KEY, extra=extra, tmp_dir=scratch_base()) as s:
            t.run(test_tables, timeout=30)
            t.run(test_create, s, "127.0.0.1:%d/test/down:1" % dead, timeout=180)
            if regs:
                t.run(test_pull_denied, s, preg, timeout=120)
            else:
                t.skip("pull denied", "docker-registry or htpasswd missing")
            t.run(test_sandbox_routes, s, timeout=180)
            t.run(test_snapshot_routes, s, timeout=240)
            t.run(test_fallback, s, timeout=30)
            t.run(test_egress, s, timeout=120)
            t.run(test_execd, s, timeout=180)


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


t.run(main, timeout=900)
t.done()
