"""The web console (issue 15) and the signed endpoint URLs it stands on.

Signed URLs: GET /v1/sandboxes/{id}/endpoints/{port}?expires=T answers a URL
through the server proxy that needs no header until T; checked: execd reached
with no token (HTTP and the PTY WebSocket), a forged, altered, expired or
other-sandbox ticket refused with 403 before the sandbox is looked up, bad
`expires` values, the egress port refused, the key kept across a restart.

The console: /console and its assets without a key, with headers that keep it
to its own origin; then tests/console/console.test.mjs drives it in Debian's
Chromium (playwright-core from npm): a wrong key refused, sign in, create a
sandbox, filter the list, `echo hi` typed in the terminal and read on the
screen, reconnect, upload a file and see it listed, resource graphs, events and
logs, pause/resume, the pools, images and audit pages, kill; no script error
and no request outside the server's origin. Screenshots of each page are kept
in $BUILD/test-artifacts/console/."""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
KEY = "console-key-" + os.urandom(8).hex()
CONSOLE_TESTS = os.path.join(REPO, "tests", "console")
SHOTS = os.path.join(REPO, os.environ.get("BUILD", "build"), "test-artifacts", "console")
CHROMIUM = os.environ.get("OSB_CHROMIUM", "/usr/bin/chromium")


def signed(s, sid, port=44772, expires=None):
    exp = expires if expires is not None else int(time.time()) + 300
    return s.req("GET", qs(f"/v1/sandboxes/{sid}/endpoints/{port}", {"expires": str(exp)}))


def path_of(endpoint):
    return endpoint[endpoint.index("/sandboxes/"):]


def signed_urls(s):
    sb = s.new()
    sid = sb["id"]
    other = s.new()["id"]
    r = signed(s, sid)
    t.eq(r.status, 200, "signed: 200 for execd's port")
    ep = r.json().get("endpoint", "")
    t.ok("/signed/44772/" in ep and "headers" not in r.json(), "signed: a URL of the signed route and no headers",
         r.text)
    p = path_of(ep)
    anon = Client(port=s.port)
    t.eq(anon.req("GET", p + "/ping").status, 200, "signed: execd answers with no key and no token")
    cmd = anon.req("POST", p + "/command", json={"command": "echo signed-ok"},
                   headers={"Accept": "text/event-stream"})
    t.ok(cmd.status == 200 and "signed-ok" in cmd.text, "signed: a command runs through it", cmd.text[:300])
    def audited():
        items = s.req("GET", qs("/v1/audit", {"sandboxId": sid})).json().get("items", [])
        return next((a for a in items if a.get("detail", {}).get("text") == "echo signed-ok"), None)
    rec = until(audited, 30)
    t.ok(rec and rec["actor"] == "signed-url" and rec["detail"].get("exitCode") == 0 and
         "/signed/" in rec["action"] and p.rsplit("/", 1)[1] not in json.dumps(rec),
         "signed: the run is in the audit trail, by 'signed-url', without the ticket", rec)
    with open(os.path.join(s.state_dir, "audit.log")) as f:
        trail = f.read()
    t.ok(p.rsplit("/", 1)[1] not in trail and p.rsplit("/", 1)[1] not in s.log_text(),
         "signed: the ticket is neither in the audit trail nor in the log")
    pty = anon.req("POST", p + "/pty", json={})
    t.eq(pty.status, 201, "signed: a PTY session is created")
    sess = pty.json().get("session_id", "")
    resp, ws = anon.try_ws_connect(f"{p}/pty/{sess}/ws")
    t.eq(resp.status, 101, "signed: the PTY WebSocket upgrades with no header")
    if ws:
        ws.sock.close()
    # a client's own token is dropped, the server's is used
    t.eq(anon.req("GET", p + "/ping", headers={"X-EXECD-ACCESS-TOKEN": "wrong"}).status, 200,
         "signed: a wrong token header sent along is replaced")
    exp36, sig = p.rsplit("/", 1)[1].split("-")
    forged = p.rsplit("/", 1)[0] + "/" + exp36 + "-" + ("0" * 32)
    r = anon.req("GET", forged + "/ping")
    t.is_error(r, 403, "SANDBOX::INVALID_SIGNATURE", "signed: a forged signature is refused")
    later = p.rsplit("/", 1)[0] + "/" + "zzzzzz" + "-" + sig
    t.is_error(anon.req("GET", later + "/ping"), 403, "SANDBOX::INVALID_SIGNATURE",
               "signed: a changed expiry is refused")
    t.is_error(anon.req("GET", p.replace(sid, other) + "/ping"), 403, "SANDBOX::INVALID_SIGNATURE",
               "signed: another sandbox's id with this ticket is refused")
    t.is_error(anon.req("GET", p.replace(sid, "no-such-sandbox") + "/ping"), 403,
               "SANDBOX::INVALID_SIGNATURE", "signed: an unknown sandbox gets 403, not 404")
    t.is_error(anon.req("GET", p.replace("/signed/44772/", "/signed/8080/") + "/"), 403,
               "SANDBOX::INVALID_SIGNATURE", "signed: the ticket of one port does not open another")
    r = anon.req("GET", p + "/../../" + other + "/ping")
    t.ok(400 <= r.status < 500, "signed: a '..' path is refused", r.status)
    # expiry: a URL valid for 2 s stops working once they have passed
    exp = int(time.time()) + 2
    short = path_of(signed(s, sid, expires=exp).json()["endpoint"])
    wait_for(lambda: time.time() > exp + 1, timeout=10, interval=0.1)
    t.is_error(anon.req("GET", short + "/ping"), 403, "SANDBOX::INVALID_SIGNATURE",
               "signed: an expired URL is refused")
    for bad in ["0", str(int(time.time()) - 5), "abc", "1e9", str(int(time.time()) + 8 * 86400), "-1", " 1"]:
        t.is_error(signed(s, sid, expires=bad), 400, "SANDBOX::INVALID_PARAMETER",
                   f"signed: expires={bad!r} is refused")
    r = s.req("GET", qs(f"/v1/sandboxes/{sid}/endpoints/44772",
                        {"expires": str(int(time.time()) + 60), "use_server_proxy": "true"}))
    t.is_error(r, 400, "SANDBOX::INVALID_PARAMETER", "signed: not with use_server_proxy=true (as upstream)")
    t.is_error(signed(s, sid, port=18080), 400, "SANDBOX::INVALID_PARAMETER",
               "signed: the egress port has no signed URL")
    key = os.path.join(s.state_dir, "signing.key")
    st = os.stat(key)
    t.ok(st.st_size == 32 and (st.st_mode & 0o777) == 0o600, "signed: the key is 32 bytes, mode 0600",
         oct(st.st_mode))
    s.restart()
    t.eq(anon.req("GET", p + "/ping").status, 200, "signed: a URL made before a restart still works")
    s.req("DELETE", f"/v1/sandboxes/{other}")
    return sid


def console_assets(s):
    anon = Client(port=s.port)
    r = anon.req("GET", "/console")
    t.eq(r.status, 200, "console: the page needs no key")
    t.ok("text/html" in r.headers.get("content-type", ""), "console: the page is HTML")
    csp = r.headers.get("content-security-policy", "")
    t.ok("default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "connect-src 'self'" in csp,
         "console: its CSP keeps it to its origin and out of frames", csp)
    t.eq(r.headers.get("x-frame-options"), "DENY", "console: X-Frame-Options DENY")
    t.eq(r.headers.get("referrer-policy"), "no-referrer", "console: no Referer leaves it")
    for f, typ in [("app.js", "javascript"), ("vendor.js", "javascript"), ("app.css", "css"), ("vendor.css", "css")]:
        a = anon.req("GET", "/console/" + f)
        t.ok(a.status == 200 and typ in a.headers.get("content-type", "") and len(a.body) > 100,
             f"console: {f} is served", a.status)
    t.ok(b"xterm" in anon.req("GET", "/console/vendor.js").body, "console: vendor.js is xterm.js")
    t.is_error(anon.req("GET", "/console/nothing.js"), 404, "CONSOLE::NOT_FOUND", "console: an unknown file is 404")
    r = anon.req("GET", "/console/../v1/sandboxes")
    t.ok(r.status in (400, 401, 404), "console: no way out of /console", r.status)
    t.eq(anon.req("GET", "/v1/sandboxes").status, 401, "console: the API still needs the key")


def browser(s):
    err = npm_ci(CONSOLE_TESTS, "playwright-core")
    if err:
        t.ok(False, "console: npm ci of playwright-core", err)
        return
    shutil.rmtree(SHOTS, ignore_errors=True)
    pool = s.req("POST", "/v1/pools", json={
        "name": "console-pool", "template": {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"]},
        "capacitySpec": {"bufferMin": 0, "bufferMax": 0, "poolMin": 0, "poolMax": 1}})
    t.ok(pool.status in (200, 201), "console: a pool for the pools page", pool.text[:300])
    r, checks = run_node_checks("console.test.mjs", env=dict(
        OSB_URL=s.url, OSB_KEY=KEY, OSB_CONSOLE_SHOTS=SHOTS, OSB_CHROMIUM=CHROMIUM))
    seen = []
    for j in checks:
        seen.append(j["check"])
        t.ok(j["ok"], "browser: " + j["check"], j.get("diag"))
    t.ok(r.returncode == 0 and len(seen) == 15, "browser: the script ran to its end",
         f"rc={r.returncode} checks={len(seen)} stderr={r.stderr[-800:]}")
    s.req("DELETE", "/v1/pools/console-pool")
    t.ok(all(os.path.exists(os.path.join(SHOTS, n + ".png"))
             for n in ["signin-refused", "sandboxes", "sandbox", "terminal", "files", "pools", "images", "audit"]),
         "browser: a screenshot of each page is kept", SHOTS)


with Server(api_key=KEY) as s:
    t.run(signed_urls, s, timeout=240)
    t.run(console_assets, s)
    if shutil.which("node") and os.path.exists(CHROMIUM):
        t.run(browser, s, timeout=600)
    else:
        t.ok(False, "browser: node and Debian's Chromium are needed (scripts/install-deps.sh test)")
t.done()
