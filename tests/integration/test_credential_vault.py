#!/usr/bin/python3
"""The credential vault end to end (issue 14, docs/credential-vault.md): the
/credential-vault API on a sandbox's port-18080 endpoint, and what the
intercepting proxy does to the sandbox's real HTTPS traffic, probed from
inside sandboxes (vaultprobe.py) against a fake TLS internet (vaultnet.py:
HTTPS servers with certificates from a test CA, a DNS zone, request logs).
The server runs with NAT networking, DNS to the fake zone only,
pull_policy never and [credential_vault] upstream_ca_file = the test CA;
no packet leaves the machine."""
import json
import os
import re
import shlex
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import fakenet  # noqa: E402
import vaultnet  # noqa: E402
from test_egress import Egress, Sbx, Skip, net_config, start, new_sbx  # noqa: E402
from osbtest import stdout_lines, multipart, upload_parts  # noqa: E402

t = TAP()
KEY = "vault-key-" + uuid.uuid4().hex
SECRET = "sk-" + uuid.uuid4().hex
SECRET2 = "ak-" + uuid.uuid4().hex
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vaultprobe.py")
PY = "/usr/bin/python3"
OUR_CA = "/etc/opensandbox/vault-ca.pem"
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
NAMES = ["api.vault.test", "other.vault.test", "evil.vault.test", "badcert.vault.test",
         "bulk.vault.test"]
POLICY = {"defaultAction": "deny",
          "egress": [{"action": "allow", "target": n} for n in NAMES]}
seen_text = []  # every API answer, checked for secrets at the end


def vault_cfg(vn):
    return net_config() + '[credential_vault]\nupstream_ca_file = "%s"\n' % vn.ca_file


def upload(sb, path, data):
    ctype, body = multipart(upload_parts([({"path": path}, data)]))
    r = sb.x.post("/files/upload", body=body, headers={"Content-Type": ctype})
    if r.status != 200:
        raise RuntimeError("upload %s -> %d" % (path, r.status))


def probe(sb, *probes):
    ev = sb.sh("%s /tmp/vaultprobe.py %s" % (PY, shlex.quote(json.dumps(probes))), timeout=120)
    out = stdout_lines(ev)
    if len(out) != len(probes):
        raise RuntimeError("vaultprobe gave %r for %r (events %r)" % (out, probes, ev[-3:]))
    return [json.loads(x) for x in out]


def vault_sbx(s, vn, **extra):
    sb = new_sbx(s, networkPolicy=POLICY, credentialProxy={"enabled": True}, **extra)
    upload(sb, "/tmp/vaultprobe.py", open(PROBE, "rb").read())
    upload(sb, "/tmp/testca.pem", open(vn.ca_file, "rb").read())
    return sb


def cred(name, value):
    return {"name": name, "source": {"type": "inline", "value": value}}


def bearer(name, host, credname, paths=None):
    m = {"hosts": [host]}
    if paths:
        m["paths"] = paths
    return {"name": name, "match": m, "auth": {"type": "bearer", "credential": credname}}


VAULT = {"credentials": [cred("tok", SECRET), cred("evil-key", SECRET2)],
         "bindings": [bearer("api", "api.vault.test", "tok", ["/v1/*"]),
                      bearer("badcert", "badcert.vault.test", "tok"),
                      {"name": "evil", "match": {"hosts": ["evil.vault.test"]},
                       "auth": {"type": "apiKey", "name": "x-api-key",
                                "credential": "evil-key"}}]}


def req(eg, method, path, **kw):
    r = eg.req(method, path, **kw)
    seen_text.append(r.text)
    return r


# ---------------------------------------------------------------- the API

def test_create_rules(s):
    r = s.create(credentialProxy={"enabled": True})
    t.is_error(r, 400, "SANDBOX::INVALID_PARAMETER", "credentialProxy without networkPolicy -> 400")
    t.ok("networkPolicy" in r.text, "the message names networkPolicy", r.text[:300])
    plain = new_sbx(s, networkPolicy=POLICY)
    eg = Egress(s, plain.id)
    t.is_error(req(eg, "POST", "/credential-vault", json=VAULT), 412, "EGRESS::VAULT_NOT_ENABLED",
               "a sandbox without credentialProxy: 412")
    t.eq(stdout_lines(plain.sh("test -e %s && echo yes || echo none" % OUR_CA)), ["none"],
         "a sandbox without credentialProxy does not get the CA")
    s.delete("/v1/sandboxes/" + plain.id)


BAD_BODIES = [
    ("a host without an allow rule",
     {"credentials": [cred("c", "v1")], "bindings": [bearer("b", "nope.vault.test", "c")]},
     "explicit allow"),
    ("an IP literal host",
     {"credentials": [cred("c", "v1")], "bindings": [bearer("b", "10.203.0.20", "c")]},
     "IP address"),
    ("port 8080",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"], "ports": [8080]},
                    "auth": {"type": "bearer", "credential": "c"}}]}, "8080"),
    ("a reserved header name",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"]},
                    "auth": {"type": "apiKey", "name": "Host", "credential": "c"}}]}, "Host"),
    ("a header name that is not a token",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"]},
                    "auth": {"type": "apiKey", "name": "x y", "credential": "c"}}]}, "x y"),
    ("an unknown credential",
     {"credentials": [cred("c", "v1")], "bindings": [bearer("b", "api.vault.test", "zz")]},
     "zz"),
    ("duplicate credential names", {"credentials": [cred("c", "v1"), cred("c", "v2")],
                                    "bindings": []}, "\"c\""),
    ("credentials not an array", {"credentials": "x", "bindings": []}, "credentials"),
    ("a port as a string",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"], "ports": ["443"]},
                    "auth": {"type": "bearer", "credential": "c"}}]}, "ports"),
    ("an unknown field", {"credentials": [], "bindings": [], "extra": 1}, "extra"),
    ("an empty value", {"credentials": [cred("c", "")], "bindings": []}, "empty"),
    ("scheme ftp",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"], "schemes": ["ftp"]},
                    "auth": {"type": "bearer", "credential": "c"}}]}, "ftp"),
    ("a path without /",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"], "paths": ["v1"]},
                    "auth": {"type": "bearer", "credential": "c"}}]}, "path"),
    ("two bindings for the same requests",
     {"credentials": [cred("c", "v1")],
      "bindings": [bearer("b1", "api.vault.test", "c"), bearer("b2", "api.vault.test", "c")]},
     "same request"),
    ("an unknown auth type",
     {"credentials": [cred("c", "v1")],
      "bindings": [{"name": "b", "match": {"hosts": ["api.vault.test"]},
                    "auth": {"type": "digest", "credential": "c"}}]}, "digest"),
]


def test_api(s, vn):
    sb = vault_sbx(s, vn)
    eg = Egress(s, sb.id)
    t.is_error(req(eg, "GET", "/credential-vault"), 404, "EGRESS::VAULT_NOT_FOUND",
               "GET before any vault: 404")
    t.is_error(req(eg, "PATCH", "/credential-vault", json={}), 404, "EGRESS::VAULT_NOT_FOUND",
               "PATCH before any vault: 404")
    bad = Egress(s, sb.id, token="wrong")
    t.is_error(bad.req("POST", "/credential-vault", json=VAULT), 401, "EGRESS::UNAUTHORIZED",
               "a wrong egress token: 401")
    t.is_error(Egress(s, sb.id, token=None).req("GET", "/credential-vault"), 401,
               "EGRESS::UNAUTHORIZED", "no egress token: 401")
    for name, body, word in BAD_BODIES:
        r = req(eg, "POST", "/credential-vault", json=body)
        t.is_error(r, 400, "EGRESS::VAULT_INVALID", "POST with %s: 400" % name)
        msg = r.json().get("message", "") if r.status == 400 else ""
        t.ok(word in msg, "  the message names it (%s)" % word, r.text[:300])
    t.is_error(req(eg, "POST", "/credential-vault", body=b'{"credentials": [',
                   headers={"Content-Type": "application/json"}), 400, "EGRESS::VAULT_INVALID",
               "malformed JSON: 400")
    t.is_error(req(eg, "GET", "/credential-vault"), 404, "EGRESS::VAULT_NOT_FOUND",
               "none of the bad bodies made a vault")
    r = req(eg, "POST", "/credential-vault", json=VAULT)
    t.eq(r.status, 201, "POST a vault: 201", r.text[:500])
    st = r.json() if r.status == 201 else {}
    t.eq(st.get("revision"), 1, "revision 1")
    t.eq([c["name"] for c in st.get("credentials", [])], ["evil-key", "tok"],
         "credentials listed by name, sanitized")
    t.eq([c.get("sourceType") for c in st.get("credentials", [])], ["inline", "inline"],
         "sourceType inline")
    b = {x["name"]: x for x in st.get("bindings", [])}
    t.eq(b.get("api", {}).get("auth"), {"type": "bearer"}, "bearer auth shows its type only")
    t.eq(b.get("evil", {}).get("auth"), {"type": "apiKey", "name": "X-Api-Key"},
         "apiKey auth shows its (canonical) header name")
    t.eq(b.get("api", {}).get("match"),
         {"schemes": ["https"], "ports": [443], "hosts": ["api.vault.test"],
          "methods": ["GET", "POST", "PUT", "PATCH", "DELETE"], "paths": ["/v1/*"]},
         "match defaults filled in")
    t.is_error(req(eg, "POST", "/credential-vault", json=VAULT), 409, "EGRESS::VAULT_CONFLICT",
               "POST again: 409")
    t.eq(req(eg, "GET", "/credential-vault").json(), st, "GET gives the same state")
    t.eq(req(eg, "GET", "/credential-vault/credentials").json(),
         {"revision": 1, "credentials": st.get("credentials")}, "GET credentials")
    t.eq(req(eg, "GET", "/credential-vault/credentials/tok").json(),
         {"name": "tok", "sourceType": "inline", "revision": 1}, "GET one credential")
    t.eq(req(eg, "GET", "/credential-vault/bindings").json(),
         {"revision": 1, "bindings": st.get("bindings")}, "GET bindings")
    t.eq(req(eg, "GET", "/credential-vault/bindings/api").json(), b.get("api"), "GET one binding")
    t.is_error(req(eg, "GET", "/credential-vault/credentials/nope"), 404,
               "EGRESS::VAULT_NOT_FOUND", "GET an unknown credential: 404")
    t.is_error(req(eg, "GET", "/credential-vault/bindings/nope"), 404, "EGRESS::VAULT_NOT_FOUND",
               "GET an unknown binding: 404")
    t.is_error(req(eg, "PUT", "/credential-vault", json={}), 405, "EGRESS::METHOD_NOT_ALLOWED",
               "PUT: 405")
    r = req(eg, "PATCH", "/credential-vault",
            json={"credentials": {"add": [cred("new", "v"), cred("tok", "dup")]}})
    t.is_error(r, 400, "EGRESS::VAULT_INVALID", "PATCH adding an existing name: 400")
    r = req(eg, "PATCH", "/credential-vault", json={"credentials": {"delete": ["tok"]}})
    t.is_error(r, 400, "EGRESS::VAULT_INVALID", "PATCH deleting a credential still bound: 400")
    t.eq(req(eg, "GET", "/credential-vault").json().get("revision"), 1,
         "failed PATCHes changed nothing (revision 1)")
    t.is_error(req(eg, "PATCH", "/credential-vault", json={"expectedRevision": 7}), 409,
               "EGRESS::VAULT_CONFLICT", "PATCH with a stale expectedRevision: 409")
    r = req(eg, "PATCH", "/credential-vault",
            json={"expectedRevision": 1, "credentials": {"add": [cred("extra", "x-" + SECRET2)]},
                  "bindings": {"add": [bearer("other", "other.vault.test", "extra")]}})
    t.eq(r.status, 200, "PATCH adding a credential and a binding: 200", r.text[:300])
    t.eq(r.json().get("revision") if r.status == 200 else None, 2, "revision 2")
    r = req(eg, "PATCH", "/credential-vault",
            json={"credentials": {"delete": ["extra"]}, "bindings": {"delete": ["other"]}})
    t.eq((r.status, r.json().get("revision") if r.status == 200 else None), (200, 3),
         "PATCH deleting them again: 200, revision 3")
    t.eq(req(eg, "DELETE", "/credential-vault").status, 204, "DELETE: 204")
    t.is_error(req(eg, "GET", "/credential-vault"), 404, "EGRESS::VAULT_NOT_FOUND",
               "GET after DELETE: 404")
    t.is_error(req(eg, "DELETE", "/credential-vault"), 404, "EGRESS::VAULT_NOT_FOUND",
               "DELETE again: 404")
    s.delete("/v1/sandboxes/" + sb.id)


# ---------------------------------------------------------------- enforcement

def auth_seen(vn, name):
    """The Authorization (or X-Api-Key) values name's server received."""
    out = []
    for ev in vn.seen(name):
        h = {k.lower(): v for k, v in ev["headers"].items()}
        out.append(h.get("authorization") or h.get("x-api-key"))
    return out


def echo_auth(res):
    try:
        h = json.loads(res["body"])["headers"]
    except (KeyError, ValueError, TypeError):
        return "no echo: %r" % (res,)
    return {k.lower(): v for k, v in h.items()}.get("authorization")


def test_injection(s, vn):
    sb = vault_sbx(s, vn, env={"API_TOKEN": "placeholder"})
    eg = Egress(s, sb.id)
    t.eq(req(eg, "POST", "/credential-vault", json=VAULT).status, 201, "vault written")
    got = probe(sb, ["get", "https://api.vault.test/v1/models",
                     {"Authorization": "Bearer placeholder"}],
                ["get", "https://api.vault.test/public"],
                ["get", "https://api.vault.test/v1/echo-auth"],
                ["trusts", "api.vault.test", OUR_CA],
                ["trusts", "other.vault.test", "/tmp/testca.pem"],
                ["trusts", "other.vault.test", OUR_CA],
                ["get", "https://other.vault.test/v1/models", {}, "/tmp/testca.pem"],
                ["keepalive", "api.vault.test", ["/v1/a", "/v1/b", "/other"]],
                ["ws", "api.vault.test", "hello"],
                ["secret_in_sandbox", SECRET],
                ["env", "SSL_CERT_FILE"], ["env", "REQUESTS_CA_BUNDLE"],
                ["env", "CURL_CA_BUNDLE"], ["env", "GIT_SSL_CAINFO"],
                ["env", "NODE_EXTRA_CA_CERTS"])
    t.eq((got[0].get("status"), echo_auth(got[0])), (200, "Bearer " + SECRET),
         "a bound request leaves with the credential (the sandbox's own value replaced)")
    t.eq(auth_seen(vn, "api.vault.test")[:1], ["Bearer " + SECRET],
         "  and the upstream received exactly that")
    t.eq((got[1].get("status"), echo_auth(got[1])), (200, None),
         "a path outside the binding goes out without a credential")
    t.eq(got[2].get("headers", {}).get("X-Echo-Auth"), "[REDACTED]",
         "a response header echoing the secret is redacted")
    t.ok(SECRET not in json.dumps([g.get("headers") for g in got[:3]]),
         "no answer's headers carry the secret to the sandbox")
    t.eq(got[3], True, "the sandbox sees a certificate from the server's CA for the bound name")
    t.eq((got[4], got[5]), (True, False),
         "an unbound name on the same address is not intercepted: the upstream's own "
         "certificate")
    t.eq((got[6].get("status"), echo_auth(got[6])), (200, None),
         "  and it gets no credential")
    t.eq(got[7], [[200, "Bearer " + SECRET], [200, "Bearer " + SECRET], [200, None]],
         "keep-alive: every bound request on one connection gets the credential")
    t.eq(got[8], {"status": 101, "echo": "hello"}, "a WebSocket upgrade through the proxy works")
    t.eq(got[9], None, "the secret is nowhere in the sandbox's environment or files")
    t.eq(got[10:14], [BUNDLE] * 4, "SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, "
         "GIT_SSL_CAINFO name the bundle")
    t.eq(got[14], OUR_CA, "NODE_EXTRA_CA_CERTS names the CA")
    return sb, eg


def test_refusals(s, vn, sb):
    before = len(vn.seen("other.vault.test")), len(vn.seen("api.vault.test"))
    got = probe(sb, ["raw", "api.vault.test", "GET /v1/x HTTP/1.1\r\nHost: api.vault.test\r\n"
                     "Host: evil.vault.test\r\nConnection: close\r\n\r\n"])
    t.eq(got[0].get("status"), 400, "two Host fields: 400", got[0])
    got = probe(sb, ["host", "api.vault.test", "other.vault.test"],
                ["get", "https://badcert.vault.test/v1/x"],
                ["get", "https://evil.vault.test/v1/x"])
    t.eq(got[0].get("status"), 421, "Host different from the SNI name: 421", got[0])
    t.eq((len(vn.seen("other.vault.test")), len(vn.seen("api.vault.test"))), before,
         "  and no upstream saw that request")
    t.eq(got[1].get("status"), 502, "an upstream whose certificate does not verify: 502", got[1])
    t.ok("UPSTREAM_UNTRUSTED" in got[1].get("body", ""), "  VAULT::UPSTREAM_UNTRUSTED", got[1])
    t.eq(auth_seen(vn, "badcert.vault.test"), [], "  and it received nothing")
    t.eq((got[2].get("status"), echo_auth(got[2])), (200, None),
         "control: evil.vault.test is reachable (its own binding is an X-Api-Key)")
    t.eq(auth_seen(vn, "evil.vault.test"), [SECRET2], "  which it got, and nothing else")
    # A forged answer inside the sandbox: api.vault.test -> evil's address.
    sb.sh("cp /etc/hosts /tmp/hosts.bak; echo '%s api.vault.test' >> /etc/hosts" %
          vaultnet.NAMES["evil.vault.test"])
    got = probe(sb, ["get", "https://api.vault.test/v1/x"])
    sb.sh("cp /tmp/hosts.bak /etc/hosts")
    t.eq(got[0].get("status"), 403, "an /etc/hosts entry cannot steer the credential: 403",
         got[0])
    t.ok("UNVERIFIED_DESTINATION" in got[0].get("body", ""), "  VAULT::UNVERIFIED_DESTINATION")
    t.eq(auth_seen(vn, "evil.vault.test"), [SECRET2], "  and evil.vault.test received nothing")


def test_policy_guard(s, sb):
    eg = Egress(s, sb.id)
    t.is_error(eg.req("DELETE", "/policy", json=["api.vault.test"]), 400, "EGRESS::INVALID_POLICY",
               "removing the allow rule of a bound host is refused (400, as upstream)")
    t.is_error(eg.req("POST", "/policy", body=b""), 400, "EGRESS::INVALID_POLICY",
               "resetting the policy to deny-all under bindings is refused")
    t.ok("api.vault.test" in json.dumps(eg.policy()), "  the policy is unchanged")
    r = eg.req("PATCH", "/policy", json=[{"action": "allow", "target": "more.vault.test"}])
    t.eq(r.status, 200, "a change that keeps the bound hosts allowed goes through", r.text[:200])


def test_events(s, sb):
    text = s.get("/v1/sandboxes/%s/diagnostics/events" % sb.id).text
    t.ok("CredentialVault" in text and "injected" in text and "binding api" in text,
         "injections are recorded in the sandbox's events", text[-800:])
    logs = s.get("/v1/sandboxes/%s/diagnostics/logs" % sb.id).text
    t.ok(SECRET not in text and SECRET not in logs, "no secret in events or logs")
    net = s.get("/v1/sandboxes/%s/diagnostics/logs?scope=network" % sb.id).text
    t.ok("credential proxy: on; vault revision 1" in net and
         re.search(r"binding api: credential added: \d+ requests", net) and
         re.search(r"VAULT::HOST_MISMATCH: 1 requests", net),
         "the network diagnostics count the requests per binding and per refusal", net[-1200:])


# ---------------------------------------------------------------- persistence

def test_snapshot(s, vn, sb):
    """A snapshot carries the sandbox's files, never its vault."""
    r = s.post("/v1/sandboxes/%s/snapshots" % sb.id, json={})
    if r.status != 202:
        t.skip("snapshot of a vault sandbox", "POST snapshots answered %d" % r.status)
        return
    snap_id = r.json()["id"]
    state = {}

    def ready():
        g = s.get("/v1/snapshots/" + snap_id)
        state["s"] = g.json().get("status", {}).get("state") if g.status == 200 else None
        return state["s"] != "Creating"
    wait_for(ready, timeout=120, interval=0.1)
    t.eq(state.get("s"), "Ready", "a snapshot of the vault sandbox is Ready")
    r = s.post("/v1/sandboxes", json={"snapshotId": snap_id, "timeout": 600,
                                      "resourceLimits": {"cpu": "1", "memory": "1Gi"},
                                      "networkPolicy": POLICY,
                                      "credentialProxy": {"enabled": True}}, timeout=120)
    t.eq(r.status, 202, "a sandbox restored from it (with a credential proxy)", r.text[:300])
    if r.status == 202:
        nid = r.json()["id"]
        t.is_error(req(Egress(s, nid), "GET", "/credential-vault"), 404,
                   "EGRESS::VAULT_NOT_FOUND", "  has no vault: the secrets stayed behind")
        restored = Sbx(s, nid)
        upload(restored, "/tmp/vaultprobe.py", open(PROBE, "rb").read())
        t.eq(probe(restored, ["secret_in_sandbox", SECRET])[0], None,
             "  and the secret is nowhere in its files")
        s.delete("/v1/sandboxes/" + nid)
    s.delete("/v1/snapshots/" + snap_id)


def test_persistence(s, vn, sb, eg):
    state = s.state_dir
    vfile = os.path.join(state, "vault", sb.id + ".vault")
    t.ok(os.path.exists(vfile), "the vault is stored")
    raw = open(vfile, "rb").read() if os.path.exists(vfile) else b""
    t.ok(SECRET.encode() not in raw and b"tok" not in raw, "  encrypted (no name, no value)")
    for f in ("vault.key", "ca.key"):
        p = os.path.join(state, "vault", f)
        t.eq(oct(os.stat(p).st_mode & 0o777) if os.path.exists(p) else None, "0o600",
             "%s is mode 0600" % f)
    r = s.post("/v1/sandboxes/%s/pause" % sb.id)
    if r.status in (200, 202, 204):
        s.post("/v1/sandboxes/%s/resume" % sb.id)
        got = probe(sb, ["get", "https://api.vault.test/v1/after-resume"])
        t.eq(echo_auth(got[0]), "Bearer " + SECRET, "the vault survives pause and resume")
    else:
        t.skip("pause/resume", "pause answered %d" % r.status)
    rev = req(eg, "GET", "/credential-vault").json().get("revision")
    s.restart()  # SIGKILL + start on the same state
    eg2 = Egress(s, sb.id)
    t.eq(req(eg2, "GET", "/credential-vault").json().get("revision"), rev,
         "the vault survives a server SIGKILL and restart")
    got = probe(sb, ["get", "https://api.vault.test/v1/after-restart"])
    t.eq(echo_auth(got[0]), "Bearer " + SECRET, "  and is enforced after it")
    # Fail closed: a vault that no longer decrypts refuses, never sends bare.
    with open(vfile, "r+b") as f:
        f.seek(len(raw) // 2)
        b = f.read(1)
        f.seek(len(raw) // 2)
        f.write(bytes([b[0] ^ 1]))
    s.restart()
    eg3 = Egress(s, sb.id)
    t.is_error(req(eg3, "GET", "/credential-vault"), 500, "EGRESS::VAULT_UNREADABLE",
               "a tampered vault file is refused (500)")
    n = len(vn.seen("api.vault.test"))
    got = probe(sb, ["get", "https://api.vault.test/v1/tampered"])
    t.eq(got[0].get("status"), 502, "  requests to its bound names are refused (502)", got[0])
    t.eq(len(vn.seen("api.vault.test")), n, "  and nothing reached the upstream")
    t.eq(req(eg3, "DELETE", "/credential-vault").status, 204, "  DELETE clears it")
    s.delete("/v1/sandboxes/" + sb.id)
    t.ok(not os.path.exists(vfile), "a deleted sandbox's vault file is gone")


def suite(vn):
    s = Server(api_key=KEY, extra=vault_cfg(vn), tmp_dir=os.path.expanduser("~"))
    start(s)
    try:
        t.run(test_create_rules, s, timeout=120)
        t.run(test_api, s, vn, timeout=180)
        res = t.run(test_injection, s, vn, timeout=180)
        if res:
            sb, eg = res
            t.run(test_refusals, s, vn, sb, timeout=180)
            t.run(test_policy_guard, s, sb, timeout=60)
            t.run(test_events, s, sb, timeout=60)
            t.run(test_snapshot, s, vn, sb, timeout=240)
            t.run(test_persistence, s, vn, sb, eg, timeout=300)
        t.ok(all(SECRET not in x and SECRET2 not in x for x in seen_text),
             "no API answer ever contained a secret")
    finally:
        problems = s.stop()
        t.ok(not problems, "server teardown clean", problems)


def main():
    why = fakenet.available()
    if why:
        t.skip("credential vault", why)
        return
    with vaultnet.VaultNet() as vn:
        try:
            suite(vn)
        except Skip as e:
            t.skip("credential vault", "server: %s" % e)


if __name__ == "__main__":
    t.run(main, timeout=1200)
    t.done()
