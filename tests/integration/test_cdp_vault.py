#!/usr/bin/python3
"""The credential vault and a browser over CDP (issue 16): Chromium in a
sandbox, driven from outside through the server proxy, loads an HTTPS page
of a host the vault has a binding for, and the upstream receives the
injected credential. Chromium trusts its NSS database ($HOME/.pki/nssdb),
not the CA bundle the sandbox gets, so it is started with
images/chromium/entrypoint.sh (the chromium image's entrypoint, here run by
/bin/sh -c from the host image), which adds /etc/opensandbox/vault-ca.pem
there first.

Four sandboxes, the same egress policy (api.vault.test allowed):
- credentialProxy, Chromium through the entrypoint: the page loads and the
  upstream sees "Authorization: Bearer <secret>";
- credentialProxy, Chromium started directly (no NSS import): the page
  fails with a certificate error and nothing reaches the upstream;
- no credentialProxy, through the entrypoint (no CA to import): the page
  fails (the upstream's certificate is from a CA the sandbox does not
  trust), nothing reaches the upstream;
- credentialProxy, images/desktop/entrypoint.sh (Xvfb, openbox, its
  Chromium with DevTools on 9222, ...): its Chromium loads the page too and
  the upstream sees the credential.
The fake TLS internet is vaultnet's; DNS goes to its zone only, Chromium
resolves only 127.0.0.1 and api.vault.test (--host-resolver-rules; the
desktop's Chromium goes through the sandbox's DNS, which answers from that
zone, and its egress policy): nothing leaves the machine."""
import json
import os
import shutil
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import fakenet  # noqa: E402
import vaultnet  # noqa: E402
from test_egress import Egress, Skip, net_config, start  # noqa: E402
from osbtest import stdout_lines  # noqa: E402

t = TAP()
CONSOLE_TESTS = os.path.join(REPO, "tests", "console")
ENTRYPOINT = os.path.join(REPO, "images", "chromium", "entrypoint.sh")
DESKTOP_ENTRYPOINT = os.path.join(REPO, "images", "desktop", "entrypoint.sh")
CHROMIUM = "/usr/lib/chromium/chromium"
HOST = "api.vault.test"
SECRET = "sk-" + uuid.uuid4().hex
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=9222",
         "--user-data-dir=/tmp/chromium",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE " + HOST,
         "about:blank"]
POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": HOST}]}
VAULT = {"credentials": [{"name": "tok", "source": {"type": "inline", "value": SECRET}}],
         "bindings": [{"name": "api", "match": {"hosts": [HOST]},
                       "auth": {"type": "bearer", "credential": "tok"}}]}


def entry(script):
    """Chromium's entrypoint: the image's script (by sh -c, the host image
    has no /usr/local/bin/entrypoint.sh) or the binary itself."""
    if not script:
        return [CHROMIUM] + FLAGS
    with open(ENTRYPOINT) as f:
        return ["/bin/sh", "-c", f.read(), "entrypoint.sh", CHROMIUM] + FLAGS


def desktop_entry():
    """The desktop image's entrypoint (Xvfb, openbox, Chromium on 9222, x11vnc,
    noVNC), by bash -c as above."""
    with open(DESKTOP_ENTRYPOINT) as f:
        return ["/bin/bash", "-c", f.read(), "entrypoint.sh"]


def browser(s, name, vault, entrypoint, env=None):
    """A sandbox running Chromium; its proxy route to port 9222."""
    fields = dict(entrypoint=entrypoint, networkPolicy=POLICY,
                  resourceLimits={"cpu": "2", "memory": "2Gi"}, env=env or {})
    if vault:
        fields["credentialProxy"] = {"enabled": True}
    r = s.create(**fields)
    if r.status != 202:
        raise RuntimeError("%s: create -> %d %s" % (name, r.status, r.text[:500]))
    sid = r.json()["id"]
    if vault:
        eg = Egress(s, sid)
        t.eq(eg.req("POST", "/credential-vault", json=VAULT).status, 201, name + ": vault written")
    route = "/sandboxes/%s/proxy/9222" % sid
    up = until(lambda: s.req("GET", route + "/json/version").status == 200, 60, 0.2)
    t.ok(up, name + ": Chromium's DevTools server answers through the proxy",
         s.req("GET", route + "/json/version").text[:300])
    return sid, route


def goto(s, route, url):
    """tests/console/cdp.test.mjs opens url in the browser: "ok", or why not."""
    gotos = [{"url": url, "want": "ok"}]
    r, checks = run_node_checks("cdp.test.mjs", ["http://127.0.0.1:%d%s" % (s.port, route)],
                                {"OSB_CDP_EGRESS": json.dumps(gotos)}, timeout=120)
    if checks:
        return checks[0].get("diag") or ""
    return "no answer from cdp.test.mjs: rc=%d %s" % (r.returncode, r.stderr[-800:])


def auths(vn, path):
    """The Authorization headers the upstream received on path."""
    return [{k.lower(): v for k, v in x["headers"].items()}.get("authorization")
            for x in vn.seen(HOST) if x.get("path") == path]


def loads_with_credential(s, vn, route, path, name, browser_is):
    """The browser at route loads https://HOST{path}; the upstream got the secret."""
    got = goto(s, route, "https://%s%s" % (HOST, path))
    t.eq(got, "ok", "%s: %s loads https://%s/ through the vault" % (name, browser_is, HOST))
    seen = auths(vn, path)
    t.ok(seen and all(a == "Bearer " + SECRET for a in seen),
         "%s: the upstream received the injected credential" % name, seen)


def with_vault(s, vn):
    sid, route = browser(s, "vault", vault=True, entrypoint=entry(True))
    loads_with_credential(s, vn, route, "/v1/cdp", "vault", "Chromium")
    x = s.execd(sid)
    ev = x.sse("/command", json={"command": "certutil -d sql:$HOME/.pki/nssdb -L"}).events
    out = "".join(stdout_lines(ev))
    t.ok("opensandbox-vault" in out and "C,," in out,
         "vault: the entrypoint put the vault's CA in the NSS database", out[-500:])
    s.delete("/v1/sandboxes/" + sid)


def direct(s, vn):
    sid, route = browser(s, "direct", vault=True, entrypoint=entry(False))
    got = goto(s, route, "https://%s/v1/direct" % HOST)
    t.ok(got.startswith("blocked") and "ERR_CERT" in got,
         "direct: without the NSS import Chromium refuses the vault's certificate", got)
    t.eq(auths(vn, "/v1/direct"), [], "direct: nothing reached the upstream")
    s.delete("/v1/sandboxes/" + sid)


def desktop(s, vn):
    """The desktop image's entrypoint adds the CA before it starts its Chromium."""
    if not all(os.access(p, os.X_OK) for p in ("/usr/bin/Xvfb", "/usr/bin/openbox",
                                                   "/usr/bin/x11vnc", "/usr/bin/websockify")):
        t.skip("desktop", "the desktop's packages are not installed (scripts/install-deps.sh test)")
        return
    sid, route = browser(s, "desktop", vault=True, entrypoint=desktop_entry(),
                         env={"DISPLAY": ":0"})
    loads_with_credential(s, vn, route, "/v1/desktop", "desktop", "its Chromium")
    s.delete("/v1/sandboxes/" + sid)


def no_vault(s, vn):
    sid, route = browser(s, "no vault", vault=False, entrypoint=entry(True))
    got = goto(s, route, "https://%s/v1/bare" % HOST)
    t.ok(got.startswith("blocked") and "ERR_CERT" in got,
         "no vault: the page fails (the upstream's certificate is not trusted)", got)
    t.eq(auths(vn, "/v1/bare"), [], "no vault: nothing reached the upstream")
    s.delete("/v1/sandboxes/" + sid)


def suite(vn):
    extra = net_config() + '[credential_vault]\nupstream_ca_file = "%s"\n' % vn.ca_file
    s = Server(extra=extra, tmp_dir=os.path.expanduser("~"))
    start(s)
    try:
        err = npm_ci(CONSOLE_TESTS, "playwright-core")
        if not t.ok(err is None, "npm ci of tests/console", err):
            return
        t.run(with_vault, s, vn, timeout=240)
        t.run(direct, s, vn, timeout=240)
        t.run(no_vault, s, vn, timeout=240)
        t.run(desktop, s, vn, timeout=240)
    finally:
        problems = s.stop()
        t.ok(not problems, "server teardown clean", problems)


def main():
    why = fakenet.available()
    if why:
        t.skip("the vault and a browser over CDP", why)
        return
    with vaultnet.VaultNet() as vn:
        try:
            suite(vn)
        except Skip as e:
            t.skip("the vault and a browser over CDP", "server: %s" % e)


if not os.path.exists(CHROMIUM) or not shutil.which("node") or not shutil.which("certutil"):
    t.ok(False, "Debian's Chromium, certutil and node are needed (scripts/install-deps.sh test)")
else:
    t.run(main, timeout=900)
t.done()
