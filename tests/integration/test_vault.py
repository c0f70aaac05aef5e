#!/usr/bin/python3
"""The credential vault (issue 14) through the real server, against a fake TLS
internet (tlsnet.py: a netns with a DNS zone and HTTPS echo servers whose
certificates come from a test CA; vault_echo.py serves them).

The server runs with [network] mode "nat", DNS upstream = the fake DNS only,
[image] pull_policy "never" and [credential_vault] upstream_ca_file = the test
CA: nothing leaves the machine. The API is reached through the endpoint the
server hands out for port 18080 (header OPENSANDBOX-EGRESS-AUTH); what the
proxy does is probed from inside `host`-image sandboxes with /usr/bin/python3
(tlsnet.SandboxPy / SANDBOX_LIB). Every wait is a poll with a deadline; no
check depends on a time threshold."""
import json
import os
import signal
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import fakenet  # noqa: E402
import tlsnet  # noqa: E402
from tlsnet import NAMES, SandboxPy  # noqa: E402

t = TAP()
KEY = "vault-key-" + uuid.uuid4().hex
AUTH = "OPENSANDBOX-EGRESS-AUTH"
SECRET = "sk-live-" + uuid.uuid4().hex          # api.vault.test (bearer)
SECRET2 = "evil-" + uuid.uuid4().hex            # evil.vault.test (X-Api-Key), bound late
SECRET3 = "rotated-" + uuid.uuid4().hex         # the replacement of SECRET
SECRET4 = "plain-" + uuid.uuid4().hex           # plain.vault.test (http)
SECRET5 = "h2-" + uuid.uuid4().hex              # h2.vault.test (bearer, HTTP/2)
SECRETS = (SECRET, SECRET2, SECRET3, SECRET4, SECRET5)
PLACEHOLDER = "placeholder-" + uuid.uuid4().hex  # what the sandbox itself holds
TESTCA_IN = "/tmp/osbt-testca.pem"              # the test CA copied into sandboxes
TESTCA_CN = "osb tlsnet test CA"
TRUST_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
              "NODE_EXTRA_CA_CERTS")
POLICY = {"defaultAction": "deny",
          "egress": [{"action": "allow", "target": n} for n in NAMES]}
answers = []  # the text of every vault/policy API answer, checked for secrets at the end


class Skip(Exception):
    pass


def config(tn):
    return "\n".join([
        "[network]", 'mode = "nat"', 'subnet = "%s"' % free_subnet(), "pool_size = 2",
        'dns_upstreams = ["%s:53"]' % fakenet.DNS_IP, "allow_host_cidrs = []",
        "[egress]", 'mode = "dns+nft"',
        "[image]", 'pull_policy = "never"',
        "[credential_vault]", "upstream_ca_file = %s" % json.dumps(tn.ca_file), ""])


def until(pred, timeout=60, interval=0.2):
    """Polls pred() until it is truthy or the deadline passes; its last value.
    An exception counts as falsy (the server may be settling) until the end."""
    end = time.monotonic() + timeout
    while True:
        try:
            v = pred()
        except Exception:
            if time.monotonic() >= end:
                raise
            v = None
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)


class Vault(Client):
    """The sandbox's egress endpoint (GET /v1/sandboxes/{id}/endpoints/18080)."""

    def __init__(self, s, sid, token=Ellipsis):
        r = s.get("/v1/sandboxes/%s/endpoints/18080" % sid)
        if r.status != 200:
            raise RuntimeError("endpoint 18080 -> %d %r" % (r.status, r.body[:300]))
        ep = r.json()
        hostport, _, path = ep["endpoint"].partition("/")
        host, _, port = hostport.rpartition(":")
        Client.__init__(self, host, int(port))
        self.prefix = "/" + path
        self.token = ep.get("headers", {}).get(AUTH) if token is Ellipsis else token

    def _auth_headers(self):
        return {AUTH: self.token} if self.token is not None else {}

    def req(self, method, path, **kw):
        r = Client.req(self, method, self.prefix + path, **kw)
        answers.append(r.text)
        return r

    def state(self):
        r = self.get("/credential-vault")
        return r.json() if r.status == 200 else r.status


def new_sbx(s, **fields):
    r = s.create(**fields)
    if r.status != 202 and "network" in r.text.lower() and "unavailable" in r.text.lower():
        raise Skip("create: " + r.text[:200])
    if r.status != 202:
        raise RuntimeError("create -> %d %r" % (r.status, r.body[:500]))
    sid = r.json()["id"]
    if not until(lambda: s.get_sbx(sid).json()["status"]["state"] == "Running", 120):
        raise RuntimeError("sandbox %s never Running: %r" % (sid, s.get_sbx(sid).text[:300]))
    return sid


def vault_sbx(s, tn, **fields):
    sid = new_sbx(s, networkPolicy=POLICY, credentialProxy={"enabled": True}, **fields)
    sp = SandboxPy(s, sid)
    sp.upload(TESTCA_IN, open(tn.ca_file, "rb").read())
    return sid, sp


def cred(name, value):
    return {"name": name, "source": {"type": "inline", "value": value}}


def binding(name, hosts, credential, auth="bearer", **match):
    m = {"hosts": hosts}
    m.update(match)
    a = {"type": auth, "credential": credential}
    if auth == "apiKey":
        a["name"] = "X-Api-Key"
    return {"name": name, "match": m, "auth": a}


def is_err(r, status, name, prefix="EGRESS::"):
    """status, JSON {code, message} with code starting with prefix."""
    ok = t.is_error(r, status, None, name)
    if ok:
        code = r.json().get("code", "")
        ok = t.ok(code.startswith(prefix), "  code %s starts with %s" % (code, prefix))
    return ok


def auth_of(res):
    """The Authorization the echo server saw for a request made in the sandbox."""
    try:
        h = res["json"]["headers"]
    except (KeyError, TypeError):
        return "no echo: %r" % ({k: v for k, v in (res or {}).items() if k != "body"},)
    return {k.lower(): v for k, v in h.items()}.get("authorization")


def hexed(s):
    return "bytes.fromhex(%r).decode()" % s.encode().hex()


# ================================================================ API

def test_create_rules(s):
    r = s.create(credentialProxy={"enabled": True})
    is_err(r, 400, "create: credentialProxy.enabled without networkPolicy -> 400 {code,message}",
           "SANDBOX::")
    t.ok("networkPolicy" in r.text, "  the message names networkPolicy", r.text[:300])
    is_err(s.create(credentialProxy="yes", networkPolicy=POLICY), 400,
           "create: credentialProxy not an object -> 400", "SANDBOX::")
    is_err(s.create(credentialProxy={"enabled": "true"}, networkPolicy=POLICY), 400,
           "create: credentialProxy.enabled not a boolean -> 400", "SANDBOX::")
    # a sandbox without the proxy: the vault API says so, and it gets no trust vars
    sid = new_sbx(s, networkPolicy=POLICY)
    v = Vault(s, sid)
    r = v.post("/credential-vault", json={"credentials": [cred("c", SECRET)], "bindings": []})
    t.ok(r.status in (400, 404, 412) and r.status != 201,
         "POST /credential-vault on a sandbox without credentialProxy is refused (%d)" % r.status,
         r.text[:300])
    env = SandboxPy(s, sid).py("out({k: os.environ.get(k) for k in %r})" % (TRUST_VARS,))
    t.eq(env, {k: None for k in TRUST_VARS},
         "a sandbox without credentialProxy gets none of the trust variables")
    s.delete("/v1/sandboxes/" + sid)


VAULT = {
    "credentials": [cred("tok", SECRET), cred("spare", "spare-" + SECRET)],
    "bindings": [
        binding("api", ["api.vault.test"], "tok", paths=["/v1/*", "/echo-secret", "/ws", "/big"]),
        binding("badcert", ["badcert.vault.test"], "tok"),
        binding("untrusted", ["untrusted.vault.test"], "tok"),
    ]}


def bad(binding_=None, creds=None, **top):
    body = {"credentials": creds if creds is not None else [cred("c", "v-" + SECRET)],
            "bindings": [binding_] if binding_ else []}
    body.update(top)
    return body


BAD_BODIES = [
    ("a host without an allow rule in the policy",
     bad(binding("b", ["nowhere.vault.test"], "c"))),
    ("an IP literal host", bad(binding("b", [NAMES["api.vault.test"]], "c"))),
    ("port 8080", bad(binding("b", ["api.vault.test"], "c", ports=[8080]))),
    ("the forbidden header name Host",
     bad({"name": "b", "match": {"hosts": ["api.vault.test"]},
          "auth": {"type": "apiKey", "name": "Host", "credential": "c"}})),
    ("the forbidden header name Content-Length (customHeaders)",
     bad({"name": "b", "match": {"hosts": ["api.vault.test"]},
          "auth": {"type": "customHeaders",
                   "headers": [{"name": "Content-Length", "credential": "c"}]}})),
    ("a binding referencing a missing credential", bad(binding("b", ["api.vault.test"], "zz"))),
    ("duplicate credential names", bad(creds=[cred("c", "a-" + SECRET), cred("c", "b")])),
    ("duplicate binding names",
     {"credentials": [cred("c", "v")],
      "bindings": [binding("b", ["api.vault.test"], "c"), binding("b", ["evil.vault.test"], "c")]}),
    ("two bindings matching the same requests",
     {"credentials": [cred("c", "v")],
      "bindings": [binding("b1", ["api.vault.test"], "c"),
                   binding("b2", ["api.vault.test"], "c", paths=["/v1/*"])]}),
    ("credentials not an array", bad(creds="c")),
    ("hosts a string", bad({"name": "b", "match": {"hosts": "api.vault.test"},
                            "auth": {"type": "bearer", "credential": "c"}})),
    ("a port as a string", bad(binding("b", ["api.vault.test"], "c", ports=["443"]))),
    ("a value as a number", bad(creds=[{"name": "c", "source": {"type": "inline", "value": 7}}])),
    ("an unknown top-level field", bad(extra=1)),
    ("an unknown field in a binding",
     bad({"name": "b", "match": {"hosts": ["api.vault.test"]}, "color": "red",
          "auth": {"type": "bearer", "credential": "c"}})),
    ("an unknown auth type",
     bad({"name": "b", "match": {"hosts": ["api.vault.test"]},
          "auth": {"type": "digest", "credential": "c"}})),
    ("a source type other than inline",
     bad(creds=[{"name": "c", "source": {"type": "env", "value": "X"}}])),
]


def test_api(s, tn):
    sid, _ = vault_sbx(s, tn)
    v = Vault(s, sid)
    for tok, what in (("wrong-" + uuid.uuid4().hex, "a wrong"), (None, "no")):
        w = Vault(s, sid, token=tok)
        is_err(w.get("/credential-vault"), 401, "GET with %s egress token -> 401" % what)
        is_err(w.post("/credential-vault", json=VAULT), 401, "POST with %s egress token -> 401"
               % what)
        is_err(w.req("PATCH", "/credential-vault", json={}), 401,
               "PATCH with %s egress token -> 401" % what)
        is_err(w.delete("/credential-vault"), 401, "DELETE with %s egress token -> 401" % what)
    is_err(v.get("/credential-vault"), 404, "GET before any vault -> 404")
    is_err(v.req("PATCH", "/credential-vault", json={}), 404, "PATCH before any vault -> 404")
    is_err(v.delete("/credential-vault"), 404, "DELETE before any vault -> 404")
    def refused(r, name):
        is_err(r, 400, name)
        if r.status == 201:  # wrongly accepted: clear it, so the next checks still mean something
            v.delete("/credential-vault")

    for name, body in BAD_BODIES:
        refused(v.post("/credential-vault", json=body), "POST with %s -> 400" % name)
    for name, raw in (("malformed JSON", b'{"credentials": ['), ("a JSON array", b"[]"),
                      ("an empty body", b"")):
        refused(v.post("/credential-vault", body=raw,
                       headers={"Content-Type": "application/json"}),
                "POST with %s -> 400" % name)
    is_err(v.get("/credential-vault"), 404, "no refused POST created a vault")

    r = v.post("/credential-vault", json=VAULT)
    t.eq(r.status, 201, "POST a vault -> 201", r.text[:500])
    st = r.json() if r.status == 201 else {}
    t.ok(isinstance(st.get("revision"), int), "  with an integer revision", st)
    t.eq(sorted(c.get("name") for c in st.get("credentials", [])), ["spare", "tok"],
         "  the credentials by name")
    t.ok(all(set(c) <= {"name", "sourceType", "revision"} and c.get("sourceType") == "inline"
             for c in st.get("credentials", [])),
         "  credentials sanitized: name, sourceType (inline), revision only",
         st.get("credentials"))
    bs = {b.get("name"): b for b in st.get("bindings", [])}
    t.eq(sorted(bs), ["api", "badcert", "untrusted"], "  the bindings by name")
    t.eq(bs.get("api", {}).get("auth"), {"type": "bearer"}, "  a bearer binding shows its type only")
    m = bs.get("api", {}).get("match", {})
    t.eq((m.get("hosts"), m.get("ports"), m.get("schemes")),
         (["api.vault.test"], [443], ["https"]), "  match with defaults (port 443, https)")
    t.ok(not any(x in r.text for x in SECRETS) and "spare-" not in r.text,
         "  no value anywhere in the answer")
    rev = st.get("revision")
    is_err(v.post("/credential-vault", json=VAULT), 409, "POST again -> 409")
    t.eq(v.state(), st, "GET -> the same sanitized state")
    r = v.get("/credential-vault/credentials")
    t.eq((r.status, r.json().get("revision") if r.status == 200 else None,
          sorted(c["name"] for c in r.json().get("credentials", [])) if r.status == 200 else None),
         (200, rev, ["spare", "tok"]), "GET /credentials lists them with the revision")
    r = v.get("/credential-vault/credentials/tok")
    t.eq((r.status, r.json().get("name") if r.status == 200 else None,
          r.json().get("sourceType") if r.status == 200 else None), (200, "tok", "inline"),
         "GET /credentials/tok")
    r = v.get("/credential-vault/bindings")
    t.eq((r.status, sorted(b["name"] for b in r.json().get("bindings", []))
          if r.status == 200 else None), (200, ["api", "badcert", "untrusted"]),
         "GET /bindings lists them")
    r = v.get("/credential-vault/bindings/api")
    t.eq((r.status, r.json().get("name") if r.status == 200 else None,
          (r.json().get("match") or {}).get("hosts") if r.status == 200 else None),
         (200, "api", ["api.vault.test"]), "GET /bindings/api")
    is_err(v.get("/credential-vault/credentials/nope"), 404, "GET a missing credential -> 404")
    is_err(v.get("/credential-vault/bindings/nope"), 404, "GET a missing binding -> 404")

    # PATCH: atomic, revisions
    r = v.req("PATCH", "/credential-vault",
              json={"credentials": {"add": [cred("new", "n-" + SECRET)]},
                    "bindings": {"add": [binding("nb", ["evil.vault.test"], "missing")]}})
    is_err(r, 400, "PATCH with one good and one bad item -> 400")
    t.eq(v.state(), st, "  and changes nothing (same revision, no 'new')")
    r = v.req("PATCH", "/credential-vault",
              json={"bindings": {"add": [binding("dup", ["api.vault.test"], "tok",
                                                 paths=["/v1/x"])]}})
    is_err(r, 400, "PATCH adding a binding that overlaps another -> 400")
    is_err(v.req("PATCH", "/credential-vault", json={"credentials": {"delete": ["tok"]}}), 400,
           "PATCH deleting a credential a binding uses -> 400")
    is_err(v.req("PATCH", "/credential-vault",
                 json={"credentials": {"replace": [cred("nope", "x")]}}), 400,
           "PATCH replacing a missing credential -> 400")
    is_err(v.req("PATCH", "/credential-vault",
                 json={"credentials": {"delete": ["spare"], "replace": [cred("spare", "y")]}}),
           400, "PATCH naming one credential in two operations -> 400")
    is_err(v.req("PATCH", "/credential-vault", json={"bindings": {"delete": ["nope"]}}), 400,
           "PATCH deleting a missing binding -> 400")
    is_err(v.req("PATCH", "/credential-vault", json={"credentials": {"upsert": []}}), 400,
           "PATCH with an unknown operation -> 400")
    t.eq(v.state(), st, "none of the refused PATCHes changed anything")
    is_err(v.req("PATCH", "/credential-vault",
                 json={"expectedRevision": rev + 5, "credentials": {"delete": ["spare"]}}), 409,
           "PATCH with a stale expectedRevision -> 409")
    t.eq(v.state(), st, "  and changes nothing")
    r = v.req("PATCH", "/credential-vault",
              json={"expectedRevision": rev,
                    "credentials": {"add": [cred("new", "n-" + SECRET)],
                                    "replace": [cred("spare", "spare2-" + SECRET)]},
                    "bindings": {"add": [binding("nb", ["evil.vault.test"], "new",
                                                 auth="apiKey")]}})
    t.eq(r.status, 200, "PATCH add + replace with the current expectedRevision -> 200", r.text[:300])
    st2 = r.json() if r.status == 200 else {}
    t.ok(isinstance(st2.get("revision"), int) and st2["revision"] > rev, "  a new revision",
         st2.get("revision"))
    t.eq(sorted(c["name"] for c in st2.get("credentials", [])), ["new", "spare", "tok"],
         "  the added credential is listed")
    t.eq(sorted(b["name"] for b in st2.get("bindings", [])), ["api", "badcert", "nb", "untrusted"],
         "  and the added binding")
    t.ok(not any(x in r.text for x in SECRETS) and "n-sk" not in r.text, "  no value in the answer")
    r = v.req("PATCH", "/credential-vault",
              json={"credentials": {"delete": ["new", "spare"]}, "bindings": {"delete": ["nb"]}})
    t.eq((r.status, sorted(c["name"] for c in r.json().get("credentials", []))
          if r.status == 200 else None), (200, ["tok"]), "PATCH delete -> 200, gone")
    t.eq(v.delete("/credential-vault").status, 204, "DELETE -> 204")
    is_err(v.get("/credential-vault"), 404, "GET after DELETE -> 404")
    is_err(v.get("/credential-vault/credentials"), 404, "GET /credentials after DELETE -> 404")
    is_err(v.delete("/credential-vault"), 404, "DELETE again -> 404")
    t.eq(v.post("/credential-vault", json=VAULT).status, 201, "POST after DELETE -> 201")
    s.delete("/v1/sandboxes/" + sid)


# ================================================================ enforcement

def test_enforcement(s, tn):
    sid, sp = vault_sbx(s, tn, env={"API_TOKEN": PLACEHOLDER})
    v = Vault(s, sid)
    r = v.post("/credential-vault", json=VAULT)
    if not t.eq(r.status, 201, "enforcement: vault written", r.text[:300]):
        return None

    # ---- the bound request
    res = sp.py('out(https("api.vault.test", "/v1/x", headers={"Authorization": '
                '"Bearer " + os.environ["API_TOKEN"]}))')
    t.eq((res.get("status"), auth_of(res)), (200, "Bearer " + SECRET),
         "a bound request gets the credential (the sandbox's placeholder replaced)", res)
    t.ok(until(lambda: "Bearer " + SECRET in tn.auth_seen("api.vault.test"), 30),
         "  and api.vault.test's server received it", tn.auth_seen("api.vault.test"))
    t.ok(res.get("issuer") and TESTCA_CN not in res.get("issuer", ""),
         "the certificate the sandbox sees for api.vault.test is not the test CA's (%s)"
         % res.get("issuer"), res)
    got = sp.py('out([verifies("api.vault.test", %r), verifies("api.vault.test", None)])'
                % TESTCA_IN)
    t.eq(got, [False, True], "  it is issued by the server's CA, trusted by the sandbox's "
         "default store (not by the test CA)")

    # ---- an unbound name on the same address: not intercepted
    n_other = len(tn.handshakes("other.vault.test"))
    res = sp.py('out([cert_of("other.vault.test"), verifies("other.vault.test", %r), '
                'https("other.vault.test", "/v1/x", cafile=%r)])' % (TESTCA_IN, TESTCA_IN))
    t.ok(TESTCA_CN in (res[0].get("issuer") or ""),
         "other.vault.test (unbound, same address) is not intercepted: the test CA's "
         "certificate", res[0])
    t.eq(res[0].get("san"), ["other.vault.test"], "  its own certificate (SNI decides)")
    t.eq(res[1], True, "  which verifies against the test CA")
    t.eq((res[2].get("status"), auth_of(res[2])), (200, None),
         "  a request to it gets no credential", res[2])
    t.ok(until(lambda: len(tn.handshakes("other.vault.test")) >= n_other + 3, 30),
         "  its server completed the sandbox's handshakes itself")

    # ---- path outside the binding, redaction, keep-alive, websocket, streaming
    res = sp.py('out(https("api.vault.test", "/public"))')
    t.eq((res.get("status"), auth_of(res)), (200, None),
         "a path the binding does not match is forwarded without a credential", res)
    res = sp.py('out(https("api.vault.test", "/echo-secret"))')
    echoed = (res.get("headers") or {}).get("x-echo-auth")
    t.ok(res.get("status") == 200 and echoed is not None and SECRET not in echoed,
         "a response header echoing the secret is redacted (%r)" % echoed, res.get("headers"))
    res = sp.py('out(keepalive("api.vault.test", ["/v1/a", "/v1/b", "/public", "/v1/c"]))')
    t.eq([(x.get("status"), x.get("auth"), x.get("reused")) for x in res],
         [(200, "Bearer " + SECRET, True), (200, "Bearer " + SECRET, True), (200, None, True),
          (200, "Bearer " + SECRET, True)],
         "keep-alive: every bound request on one connection gets the credential", res)
    res = sp.py('out(ws("api.vault.test", "hello vault"))')
    t.eq((res.get("status"), res.get("echo"), res.get("accept_ok")), (101, "hello vault", True),
         "a WebSocket upgrade through the bound host works (one frame echoed)", res)
    t.ok(until(lambda: any(e["path"] == "/ws" and "Bearer " + SECRET in e["headers"].values()
                           for e in tn.seen("api.vault.test")), 30),
         "  and the upgrade request carried the credential")
    size = 16 << 20
    res = sp.py('r = https("api.vault.test", "/big?n=%d"); r.pop("body"); r.pop("json"); out(r)'
                % size)
    t.eq((res.get("status"), res.get("length")), (200, size),
         "a streamed 16 MiB answer arrives whole through the proxy", res)

    # ---- Host != SNI
    res = sp.py('out(https("api.vault.test", "/v1/misdirected", host_header="other.vault.test"))')
    t.ok(res.get("status") in (421, 403), "Host different from the SNI name -> 421 (or 403): %s"
         % res.get("status"), res)
    t.ok(not any(e["path"] == "/v1/misdirected" for e in tn.events("http")),
         "  and no upstream server saw that request")

    # ---- upstreams that do not verify
    for name, what in (("badcert.vault.test", "a certificate for another name"),
                       ("untrusted.vault.test", "a certificate from an untrusted CA")):
        res = sp.py('out(https(%r, "/v1/x"))' % name)
        t.eq(res.get("status"), 502, "a bound upstream with %s -> 502" % what, res)
        t.eq([e for e in tn.seen(name) if SECRET in json.dumps(e)], [],
             "  and its server received no credential")

    # ---- the workload's own view
    env = sp.py("out({k: os.environ.get(k) for k in %r})" % (TRUST_VARS,))
    t.ok(all(env.get(k) for k in TRUST_VARS), "the trust variables are set: %s" % env, env)
    got = sp.py("out({k: verifies('api.vault.test', os.environ[k]) if os.environ.get(k) else None"
                " for k in %r})" % (TRUST_VARS,))
    t.eq(got, {k: True for k in TRUST_VARS}, "  each names a bundle holding the server's CA")
    got = sp.py("out([find_secret(%s), find_secret(%s)])" % (hexed(SECRET), hexed(PLACEHOLDER)))
    t.eq(got[0], [], "the sandbox's env, /proc/*/environ, cmdlines and files (/etc, /tmp, /run, "
         "...) never hold the secret")
    t.ok("os.environ" in got[1] and any(x.endswith("/environ") for x in got[1]),
         "  (control: the same scan finds the sandbox's placeholder in its environment)", got[1])

    # ---- a forged address: /etc/hosts inside the sandbox
    sp.py('out(cert_of("evil.vault.test"))')  # the sandbox may now reach evil's address
    rc, _, err = sp.sh("cp /etc/hosts /tmp/osbt-hosts && echo '%s api.vault.test' >> /etc/hosts"
                       % NAMES["evil.vault.test"])
    if t.eq(rc, 0, "the sandbox maps api.vault.test to evil.vault.test's address in /etc/hosts",
            err):
        res = sp.py('out(https("api.vault.test", "/v1/forged-a", verify=False))')
        t.diag("forged, evil unbound: %r" % ({k: res.get(k) for k in ("status", "error")},))
        t.ok(until(lambda: tn.seen("evil.vault.test"), 30) or res.get("status") is None,
             "  (evil unbound: the connection went to evil itself, not through the proxy)")
        t.eq([e for e in tn.seen("evil.vault.test") if SECRET in json.dumps(e)], [],
             "  no credential reaches evil.vault.test")
        # now evil is bound too (its own key): the forged connection is intercepted
        r = v.req("PATCH", "/credential-vault",
                  json={"credentials": {"add": [cred("evilkey", SECRET2)]},
                        "bindings": {"add": [binding("evil", ["evil.vault.test"], "evilkey",
                                                     auth="apiKey")]}})
        t.eq(r.status, 200, "PATCH binding evil.vault.test to its own key", r.text[:300])
        sp.sh("cp /tmp/osbt-hosts /etc/hosts")
        res = sp.py('out(https("evil.vault.test", "/v1/control"))')
        t.eq((res.get("status"), ((res.get("json") or {}).get("headers") or {}).get("X-Api-Key")),
             (200, SECRET2), "  control: evil.vault.test gets its own key", res)
        sp.sh("echo '%s api.vault.test' >> /etc/hosts" % NAMES["evil.vault.test"])
        res = sp.py('out(https("api.vault.test", "/v1/forged-b"))')
        t.eq(res.get("status"), 403, "a forged /etc/hosts entry for a bound name -> 403", res)
        t.eq([e["path"] for e in tn.events("http") if e["path"] == "/v1/forged-b"], [],
             "  and no server saw that request")
        t.eq([e for e in tn.seen("evil.vault.test") if SECRET in json.dumps(e)], [],
             "  evil.vault.test never received api's credential")
        sp.sh("cp /tmp/osbt-hosts /etc/hosts")

    t.skip("a request matching two bindings -> 403",
           "not reachable through the API: bindings that can match one request are refused "
           "with 400 (checked in api)")

    # ---- plain HTTP on port 80
    r = v.req("PATCH", "/credential-vault",
              json={"credentials": {"add": [cred("plainkey", SECRET4)]},
                    "bindings": {"add": [binding("plain", ["plain.vault.test"], "plainkey",
                                                 schemes=["http"], ports=[80])]}})
    if r.status == 400 and any(w in r.text.lower() for w in ("http", "scheme", "port")):
        t.skip("a plain-HTTP binding on port 80", "the server refuses it: %s" % r.text[:200])
    elif t.eq(r.status, 200, "PATCH a plain-HTTP binding (scheme http, port 80)", r.text[:300]):
        res = sp.py('out(http_plain("plain.vault.test", "/v1/p"))')
        t.eq((res.get("status"), auth_of(res)), (200, "Bearer " + SECRET4),
             "a plain-HTTP bound request gets its credential", res)
        res = sp.py('out(http_plain("plain.vault.test", "/v1/p2", host_header="api.vault.test"))')
        t.eq([e for e in tn.seen("plain.vault.test") if SECRET in json.dumps(e)], [],
             "  a plain-HTTP request naming another bound Host gets no credential (%s)"
             % res.get("status"))

    # ---- rotation: replace takes effect on the next request
    r = v.req("PATCH", "/credential-vault", json={"credentials": {"replace": [cred("tok", SECRET3)]}})
    t.eq(r.status, 200, "PATCH replace the credential's value", r.text[:300])
    res = sp.py('out(https("api.vault.test", "/v1/rotated"))')
    t.eq(auth_of(res), "Bearer " + SECRET3, "  the next request carries the new value", res)
    r = v.req("PATCH", "/credential-vault", json={"credentials": {"replace": [cred("tok", SECRET)]}})
    t.eq(r.status, 200, "  (and back)")

    # ---- the upstream behaviour: a bound host's allow rule cannot be removed
    r = v.req("DELETE", "/policy", json=["api.vault.test"])
    t.ok(r.status == 400, "DELETE /policy of a bound host's allow rule -> 400 (%d)" % r.status,
         r.text[:300])
    pol = v.get("/policy")
    t.ok(pol.status == 200 and {"action": "allow", "target": "api.vault.test"} in
         pol.json().get("policy", {}).get("egress", []), "  the allow rule is still there",
         pol.text[:300])
    if r.status in (200, 204):  # restore it so the rest of the run means something
        v.req("PATCH", "/policy", json=[{"action": "allow", "target": "api.vault.test"}])

    # ---- nothing leaks outside the sandbox either
    logs = s.get("/v1/sandboxes/%s/diagnostics/logs" % sid).text + \
        s.get("/v1/sandboxes/%s/diagnostics/events" % sid).text + \
        s.get("/v1/sandboxes/%s" % sid).text + s.get("/v1/sandboxes/%s/diagnostics/inspect"
                                                       % sid).text
    t.ok(not any(x in logs for x in SECRETS), "no secret in the sandbox's record or diagnostics")
    t.ok(not any(x in s.log_text() for x in SECRETS), "no secret in the server's log")
    plain_files = []
    for root, _, files in os.walk(s.state_dir):
        for f in files:
            p = os.path.join(root, f)
            try:
                if os.path.isfile(p) and not os.path.islink(p) and os.path.getsize(p) < (64 << 20):
                    with open(p, "rb") as fh:
                        if any(x.encode() in fh.read() for x in SECRETS):
                            plain_files.append(p)
            except OSError:
                pass
    t.eq(plain_files, [], "no file under the server's state dir holds a secret in clear")
    return sid, sp, v


def test_persistence(s, tn, sid, sp, v):
    before = v.state()
    rev = before.get("revision") if isinstance(before, dict) else None

    def bound_ok(path):
        res = sp.py('out(https("api.vault.test", %r))' % path)
        return res if res.get("status") == 200 and auth_of(res) == "Bearer " + SECRET else None

    def state():
        return s.get_sbx(sid).json()["status"]["state"]

    r = s.post("/v1/sandboxes/%s/pause" % sid)
    if r.status not in (200, 202, 204):
        t.skip("pause/resume keeps the vault", "pause -> %d" % r.status)
    else:
        t.ok(until(lambda: state() == "Paused", 60), "sandbox paused")
        t.eq(s.post("/v1/sandboxes/%s/resume" % sid).status, 202, "resume -> 202")
        t.ok(until(lambda: state() == "Running", 60), "sandbox running again")
        t.eq(Vault(s, sid).state(), before, "the vault survives pause/resume (same state)")
        t.ok(until(lambda: bound_ok("/v1/after-resume"), 60),
             "  and is enforced after it")
    s.kill(signal.SIGKILL)
    s.start()
    v2 = Vault(s, sid)
    t.eq(until(lambda: v2.state() if isinstance(v2.state(), dict) else None, 60), before,
         "the vault survives a server SIGKILL + restart (same state, revision %s)" % rev)
    sp = SandboxPy(s, sid)  # bound_ok() uses this one from now on
    t.ok(until(lambda: bound_ok("/v1/after-restart"), 60), "  and is enforced after it")
    res = sp.py('out(https("other.vault.test", "/v1/x", cafile=%r))' % TESTCA_IN)
    t.eq((res.get("status"), auth_of(res)), (200, None),
         "  the unbound name still passes through after the restart", res)
    # DELETE: the name is no longer intercepted
    t.eq(v2.delete("/credential-vault").status, 204, "DELETE the vault -> 204")
    is_err(v2.get("/credential-vault"), 404, "  GET -> 404")
    res = until(lambda: (lambda r: r if TESTCA_CN in (r.get("issuer") or "") else None)(
        sp.py('out(https("api.vault.test", "/v1/after-delete", cafile=%r))' % TESTCA_IN)), 60)
    t.ok(res and res.get("status") == 200 and auth_of(res) is None,
         "  after DELETE api.vault.test is no longer intercepted (test CA certificate, "
         "no credential)", res)
    s.delete("/v1/sandboxes/" + sid)


# ================================================================ HTTP/2

def curl(sp, args, timeout=120):
    """curl run in the sandbox: (exit code, stdout, stderr)."""
    return sp.sh("curl -sS --max-time 90 " + args, timeout=timeout)


def echo_of(text):
    try:
        return json.loads(text)
    except ValueError:
        return {"unparsed": text[:500]}


def test_http2(s, tn):
    sid, sp = vault_sbx(s, tn)
    v = Vault(s, sid)
    r = v.post("/credential-vault", json={
        "credentials": [cred("h2key", SECRET5), cred("apikey", SECRET)],
        "bindings": [binding("h2", ["h2.vault.test"], "h2key",
                             paths=["/v1/*", "/echo-secret", "/big"]),
                     binding("api", ["api.vault.test"], "apikey")]})
    if not t.eq(r.status, 201, "http2: vault written", r.text[:300]):
        return
    url = "https://h2.vault.test"
    n_tls = len(tn.handshakes("h2.vault.test"))
    rc, so, se = curl(sp, "--http2 -H 'Authorization: Bearer mine' -w '\\n%%{http_version}' "
                          "%s/v1/x" % url)
    body, _, ver = so.rpartition("\n")
    e = echo_of(body)
    t.eq((rc, ver, e.get("version"), (e.get("headers") or {}).get("authorization")),
         (0, "2", "2.0", "Bearer " + SECRET5),
         "HTTP/2 both ways (ALPN h2 to the sandbox and to the upstream); the request gets the "
         "credential in place of the sandbox's own", (so[-600:], se[-600:]))
    seen = [x for x in tn.seen("h2.vault.test") if x["path"] == "/v1/x"]
    auths = [k for x in seen for k, _ in x["header_list"] if k.lower() == "authorization"]
    t.eq(auths, ["authorization"], "  the upstream received exactly one Authorization", seen)

    # several requests multiplexed on one connection
    rc, so, se = curl(sp, "--http2 --parallel -w '%%{http_version}\\n' "
                          "%s/v1/a -o /tmp/h2a %s/public -o /tmp/h2b %s/v1/b -o /tmp/h2c"
                          % (url, url, url))
    got = [echo_of(sp.sh("cat /tmp/h2" + k)[1]) for k in "abc"]
    t.eq((rc, so.split(), [(g.get("headers") or {}).get("authorization") for g in got]),
         (0, ["2", "2", "2"], ["Bearer " + SECRET5, None, "Bearer " + SECRET5]),
         "three parallel HTTP/2 requests: the bound paths get the credential, the other none",
         (so, se[-400:], got))
    t.ok(until(lambda: len(tn.handshakes("h2.vault.test")) == n_tls + 2, 30),
         "  one upstream TLS connection per sandbox connection (%d)"
         % (len(tn.handshakes("h2.vault.test")) - n_tls))

    # bodies both ways, streamed
    rc, so, se = sp.sh("head -c 3000000 /dev/zero | curl -sS --max-time 90 --http2 "
                       "--data-binary @- %s/v1/upload" % url)
    e = echo_of(so)
    t.eq((rc, e.get("method"), e.get("body_length"),
          (e.get("headers") or {}).get("authorization")), (0, "POST", 3000000, "Bearer " + SECRET5),
         "an HTTP/2 POST of 3 MB arrives whole, with the credential", (so[-300:], se[-300:]))
    size = 16 << 20
    rc, so, se = curl(sp, "--http2 -o /dev/null -w '%%{size_download} %%{http_version}' "
                          "'%s/big?n=%d'" % (url, size))
    t.eq((rc, so), (0, "%d 2" % size), "a 16 MiB HTTP/2 answer arrives whole", se[-300:])

    # redaction of the upstream's header fields
    rc, so, se = curl(sp, "--http2 -D - -o /dev/null %s/echo-secret" % url)
    t.ok(rc == 0 and SECRET5 not in so and "x-echo-auth: [REDACTED]" in so,
         "HTTP/2: a response header echoing the secret is redacted", so[-500:])

    # :authority must name the TLS connection's server
    rc, so, se = curl(sp, "--http2 -H 'Host: api.vault.test' -w '\\n%%{http_code}' "
                          "%s/v1/misdirected" % url)
    body, _, code = so.rpartition("\n")
    t.eq((code, echo_of(body).get("code")), ("421", "VAULT::HOST_MISMATCH"),
         "HTTP/2: :authority different from the SNI name -> 421 on that stream",
         (so[-400:], se[-400:]))
    t.ok(not any(x["path"] == "/v1/misdirected" for x in tn.seen("h2.vault.test")),
         "  and nothing reached the upstream")

    # each side's protocol follows the other
    rc, so, se = curl(sp, "--http2 -w '\\n%{http_version}' https://api.vault.test/v1/x")
    body, _, ver = so.rpartition("\n")
    t.eq((ver, auth_of({"json": echo_of(body)})), ("1.1", "Bearer " + SECRET),
         "a client offering h2 to an HTTP/1.1-only upstream gets HTTP/1.1, with the credential",
         (so[-400:], se[-400:]))
    rc, so, se = curl(sp, "--http1.1 %s/v1/one" % url)
    e = echo_of(so)
    t.eq((e.get("version"), (e.get("headers") or {}).get("authorization")),
         ("1.1", "Bearer " + SECRET5),
         "an HTTP/1.1 client to the h2-capable upstream: HTTP/1.1 both ways, with the credential",
         so[-400:])

    # recorded like any injection
    text = s.get("/v1/sandboxes/%s/diagnostics/events" % sid).text
    t.ok("injected: GET h2.vault.test/v1/x -> 200 (binding h2)" in text,
         "an HTTP/2 injection is recorded in the sandbox's events", text[-1200:])
    t.ok(SECRET5 not in text and SECRET5 not in s.log_text(), "  no secret in events or log")
    s.delete("/v1/sandboxes/%s" % sid)


def suite(tn):
    s = Server(api_key=KEY, extra=config(tn), tmp_dir=os.path.expanduser("~"))
    try:
        s.start()
    except RuntimeError as e:
        s.stop()
        if "network" in str(e).lower() and ("unavailable" in str(e).lower() or
                                            "not supported" in str(e).lower()):
            raise Skip(str(e).splitlines()[-1][:200])
        raise
    try:
        t.run(test_create_rules, s, timeout=240)
        t.run(test_api, s, tn, timeout=300)
        res = t.run(test_enforcement, s, tn, timeout=600)
        if res:
            t.run(test_persistence, s, tn, *res, timeout=400)
        t.run(test_http2, s, tn, timeout=400)
        t.ok(not any(x in a for a in answers for x in SECRETS),
             "no API answer ever contained a secret value")
    finally:
        problems = s.stop()
        t.ok(not problems, "server teardown clean", problems)


def main():
    why = tlsnet.available()
    if why:
        t.skip("credential vault", why)
        return
    with tlsnet.TLSNet() as tn:
        try:
            suite(tn)
        except Skip as e:
            t.skip("credential vault", "server: %s" % e)


if __name__ == "__main__":
    t.run(main, timeout=1800)
    t.done()
