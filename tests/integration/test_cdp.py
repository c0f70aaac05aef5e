"""A browser over CDP (issue 16). A sandbox from the `host` image runs headless
Chromium with its DevTools server on 127.0.0.1:9222, plus a page served on
127.0.0.1:8000; everything is reached from outside through the server proxy.

Checked: GET /endpoints/9222 is the proxy route; /json/version, /json/list,
/json (/json/version and /json/list with a trailing slash too) come back with webSocketDebuggerUrl
and devtoolsFrontendUrl rewritten to this route, by the Host the client used
(an IP, localhost, a host name Chromium itself would refuse) and wss:// behind
X-Forwarded-Proto https, a correct Content-Length, a page's own url untouched;
the same through a signed URL; execd's hop sends Host 127.0.0.1:PORT on the
DevTools paths only (an app keeps the client's Host elsewhere); an app's
chunked, large, non-JSON or non-200 answer is relayed untouched; then
tests/console/cdp.test.mjs: Playwright's connectOverCDP to the endpoint (by IP,
by localhost, the signed URL, the rewritten ws:// URL itself), opens the page
inside the sandbox, clicks its button and reads the result; Puppeteer's
connect() the same way (browserWSEndpoint, with headers: the ws:// URL itself
and the webSocketDebuggerUrl of each http:// URL's /json/version, the signed
one too); and the official JS SDK's getEndpoint(9222) with useServerProxy off
and on. Last, the egress
policy on the browser's own traffic, against fakenet's local "internet".
Chromium resolves no name but 127.0.0.1 and those of fakenet's zone
(--host-resolver-rules), so nothing leaves the machine."""
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import fakenet  # noqa: E402

t = TAP()
CONSOLE_TESTS = os.path.join(REPO, "tests", "console")
SDK_DIR = os.path.join(REPO, "tests", "sdk")
# Not /usr/bin/chromium: that wrapper reads /etc/chromium.d, which the host
# image's private /etc does not have.
CHROMIUM = "/usr/lib/chromium/chromium"
ENTRY = [CHROMIUM, "--headless=new", "--no-sandbox", "--remote-debugging-port=9222",
         "--remote-debugging-address=127.0.0.1", "--user-data-dir=/tmp/cdp", "--no-first-run",
         "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         "about:blank"]
PAGE = """<!doctype html><title>cdp</title>
<button id="go" onclick="document.getElementById('result').textContent = 'clicked'">go</button>
<p id="result"></p>
"""
# An app on 8001: answers with the Host it was asked with (what execd's hop
# sends an app), or with ?json=KIND a discovery-like JSON answer in a shape
# the server must leave alone (only "plain" is rewritten).
FAKE_APP = """import http.server, json, urllib.parse
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        kind = q.get("json", [""])[0]
        if not kind:
            return self.answer(200, "text/plain", (self.headers.get("Host") or "").encode())
        port = 9999 if kind == "other" else 8001
        doc = {"webSocketDebuggerUrl": "ws://127.0.0.1:%d/devtools/browser/x" % port}
        if kind == "big":
            doc["pad"] = "x" * (1 << 20)
        b = json.dumps(doc).encode()
        if kind == "chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\\r\\n%s\\r\\n0\\r\\n\\r\\n" % (len(b), b))
            return
        ctype = "text/plain" if kind == "text" else "application/json; charset=UTF-8"
        self.answer(404 if kind == "404" else 200, ctype, b)
    def answer(self, status, ctype, b):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 8001), H).serve_forever()
"""


def upload(x, path, data):
    ctype, body = multipart(upload_parts([({"path": path}, data)]))
    return x.post("/files/upload", body=body, headers={"Content-Type": ctype})


def start(s):
    """The Chromium sandbox with its page and the Host echo; its id."""
    sid = s.new(entrypoint=ENTRY, resourceLimits={"cpu": "2", "memory": "2Gi"})["id"]
    x = s.execd(sid)
    t.eq(upload(x, "/tmp/www/index.html", PAGE.encode()).status, 200, "setup: the page uploaded")
    t.eq(upload(x, "/tmp/fake_app.py", FAKE_APP.encode()).status, 200, "setup: the app on 8001 uploaded")
    for cmd in ["/usr/bin/python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www",
                "/usr/bin/python3 /tmp/fake_app.py"]:
        x.sse("/command", json={"command": cmd, "background": True})
    route = f"/sandboxes/{sid}/proxy/9222"
    up = until(lambda: s.req("GET", route + "/json/version").status == 200, 60, 0.2)
    t.ok(up, "setup: Chromium's DevTools server answers through the proxy",
         s.req("GET", route + "/json/version").text[:300])
    page = until(lambda: s.req("GET", f"/sandboxes/{sid}/proxy/8000/").status == 200, 20, 0.1)
    t.ok(page, "setup: the page inside the sandbox answers")
    return sid


def json_answer(r):
    try:
        return json.loads(r.body)
    except ValueError:
        return None


def check_version(s, sid, route, host, scheme="ws", headers=None):
    h = dict(headers or {}, Host=host)
    r = s.req("GET", route + "/json/version", headers=h)
    j = json_answer(r) or {}
    ws = j.get("webSocketDebuggerUrl", "")
    want = f"{scheme}://{host}{route}/devtools/browser/"
    t.ok(r.status == 200 and ws.startswith(want) and "Browser" in j,
         f"/json/version by Host {host} ({scheme}): webSocketDebuggerUrl is {want}...", r.text[:500])
    t.eq(r.headers.get("content-length"), str(len(r.body)), f"/json/version by Host {host}: its Content-Length")
    return ws


def discovery(s, sid):
    route = f"/sandboxes/{sid}/proxy/9222"
    ep = s.endpoint(sid, 9222)
    t.eq(ep, {"endpoint": f"127.0.0.1:{s.port}{route}"}, "endpoints/9222: the proxy route, no headers")
    check_version(s, sid, route, f"127.0.0.1:{s.port}")
    check_version(s, sid, route, f"localhost:{s.port}")
    # The /v1 prefix the client came in by is kept.
    check_version(s, sid, "/v1" + route, f"127.0.0.1:{s.port}")
    # Chromium refuses this Host itself: execd's hop sends 127.0.0.1:9222.
    check_version(s, sid, route, f"sbx.example:{s.port}")
    check_version(s, sid, route, f"sbx.example:{s.port}", "wss", {"X-Forwarded-Proto": "https"})
    r = s.req("GET", route + "/json/version/")
    t.ok(r.status == 200 and route in (json_answer(r) or {}).get("webSocketDebuggerUrl", ""),
         "/json/version/ (Playwright's form) is rewritten too", r.text[:300])
    host = f"127.0.0.1:{s.port}"
    # (Chromium has no "/json/": the server rewrites it too, should one answer it.)
    for path in ["/json/list", "/json/list/", "/json"]:
        r = s.req("GET", route + path)
        targets = json_answer(r)
        pages = [x for x in targets or [] if x.get("type") == "page"]
        good = all(x["webSocketDebuggerUrl"] == f"ws://{host}{route}/devtools/page/{x['id']}" and
                   f"?ws={host}{route}/devtools/page/{x['id']}" in x.get("devtoolsFrontendUrl", "")
                   for x in targets or [])
        t.ok(r.status == 200 and pages and good and
             r.headers.get("content-length") == str(len(r.body)),
             f"{path}: every target's URLs point through the proxy", r.text[:800])
        t.ok(any(x.get("url") == "about:blank" for x in pages), f"{path}: a page's own url is kept",
             r.text[:300])


def signed(s, sid):
    exp = int(time.time()) + 600
    r = s.req("GET", qs(f"/v1/sandboxes/{sid}/endpoints/9222", {"expires": str(exp)}))
    ep = r.json().get("endpoint", "")
    t.ok(r.status == 200 and f"/sandboxes/{sid}/signed/9222/" in ep, "signed: a URL for port 9222", r.text)
    route = ep[ep.index("/sandboxes/"):]
    check_version(s, sid, route, f"127.0.0.1:{s.port}")
    r = s.req("GET", route + "/json/list")
    t.ok(r.status == 200 and all(x["webSocketDebuggerUrl"].startswith(f"ws://127.0.0.1:{s.port}{route}/devtools/")
                                 for x in json_answer(r) or [{"webSocketDebuggerUrl": ""}]),
         "signed: /json/list points through the signed route", r.text[:500])
    return "http://" + ep


def host_rule(s, sid):
    """execd's hop: Host 127.0.0.1:PORT on DevTools paths, the client's elsewhere."""
    route = f"/sandboxes/{sid}/proxy/8001"
    host = f"sbx.example:{s.port}"
    for path, want in [("/json/version", "127.0.0.1:8001"), ("/devtools/x", "127.0.0.1:8001"),
                       ("/app/json", host), ("/", host)]:
        r = s.req("GET", route + path, headers={"Host": host})
        t.ok(r.status == 200 and r.text == want, f"Host rule: {path} reaches the app with Host {want}",
             f"{r.status} {r.text[:200]}")


def untouched(s, sid):
    """Only a whole 200 application/json answer with a Content-Length of at
    most 1 MiB is rewritten; every other answer is relayed as the app sent it."""
    route = f"/sandboxes/{sid}/proxy/8001"
    inside = "ws://127.0.0.1:8001/devtools/browser/x"
    r = s.req("GET", route + "/json/version?json=plain")
    t.ok(r.status == 200 and json_answer(r) == {"webSocketDebuggerUrl":
                                                f"ws://127.0.0.1:{s.port}{route}/devtools/browser/x"},
         "rewrite: any app's discovery answer on any port", r.text[:300])
    for kind, status in [("chunked", 200), ("big", 200), ("text", 200), ("404", 404)]:
        r = s.req("GET", route + "/json/version?json=" + kind)
        j = json_answer(r) or {}
        t.ok(r.status == status and j.get("webSocketDebuggerUrl") == inside,
             f"rewrite: a {kind} answer is relayed untouched", f"{r.status} {r.text[:200]}")
    r = s.req("GET", route + "/json/list?json=other")
    t.ok(r.status == 200 and r.text == '{"webSocketDebuggerUrl": "ws://127.0.0.1:9999/devtools/browser/x"}' and
         r.headers.get("content-length") == str(len(r.body)),
         "rewrite: another port's URL is left as it was", r.text[:200])
    r = s.req("GET", route + "/other?json=plain")
    t.ok(r.status == 200 and (json_answer(r) or {}).get("webSocketDebuggerUrl") == inside,
         "rewrite: not on other paths", r.text[:200])


def run_node(urls, env, timeout=400):
    """tests/console/cdp.test.mjs; its checks reported here, and their count."""
    r, checks = run_node_checks("cdp.test.mjs", urls, env, timeout)
    for j in checks:
        t.ok(j["ok"], "browser: " + j["check"], j.get("diag"))
    return r, len(checks)


def egress(inet):
    """The browser's traffic under an egress policy: allowed.test loads,
    denied.test does not resolve, a denied address is not reached (the
    "internet" is fakenet's netns; Chromium resolves only those two names)."""
    extra = "\n".join(["[network]", 'mode = "nat"', 'subnet = "%s"' % free_subnet(), "pool_size = 1",
                       'dns_upstreams = ["%s:53"]' % fakenet.DNS_IP, "allow_host_cidrs = []",
                       "[egress]", 'mode = "dns+nft"', ""])
    with Server(extra=extra) as s:
        rules = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE allowed.test, " \
                "EXCLUDE denied.test"
        entry = [a if not a.startswith("--host-resolver-rules") else rules for a in ENTRY]
        r = s.create(entrypoint=entry, resourceLimits={"cpu": "2", "memory": "2Gi"},
                     networkPolicy={"defaultAction": "deny",
                                    "egress": [{"action": "allow", "target": "allowed.test"}]})
        if r.status != 202:
            t.skip("egress: the browser under a policy", "no sandbox networking here: " + r.text[:200])
            return
        route = f"/sandboxes/{r.json()['id']}/proxy/9222"
        t.ok(until(lambda: s.req("GET", route + "/json/version").status == 200, 60, 0.2),
             "egress: Chromium answers through the proxy")
        ip_denied = fakenet.ZONE["denied.test"]
        gotos = [{"url": "http://allowed.test/", "want": "ok"},
                 {"url": "http://denied.test/", "want": "blocked"},
                 {"url": f"http://{ip_denied}/", "want": "blocked"}]
        res, seen = run_node([f"http://127.0.0.1:{s.port}{route}"], {"OSB_CDP_EGRESS": json.dumps(gotos)})
        t.ok(res.returncode == 0 and seen == len(gotos), "egress: the script ran to its end",
             f"rc={res.returncode} checks={seen} stderr={res.stderr[-800:]}")
        t.ok(inet.clients(fakenet.ZONE["allowed.test"]) and not inet.clients(ip_denied),
             "egress: the fake internet saw allowed.test only")


def egress_suite():
    why = fakenet.available()
    if why:
        t.skip("egress: the browser under a policy", why)
        return
    with fakenet.FakeInternet() as inet:
        egress(inet)


def browser(s, sid, signed_url):
    err = npm_ci(CONSOLE_TESTS, "puppeteer-core")
    if err:
        t.ok(False, "browser: npm ci of playwright-core and puppeteer-core", err)
        return
    sdk_err = npm_ci(SDK_DIR, "@alibaba-group/opensandbox")
    if sdk_err:
        t.skip("browser: the JS SDK", "npm ci failed: " + sdk_err)
    route = f"/sandboxes/{sid}/proxy/9222"
    ws = json.loads(s.req("GET", route + "/json/version").body)["webSocketDebuggerUrl"]
    urls = [f"http://127.0.0.1:{s.port}{route}", f"http://localhost:{s.port}{route}", signed_url, ws]
    env = dict(OSB_CDP_PAGE="http://127.0.0.1:8000/", OSB_SANDBOX=sid,
               OSB_DOMAIN=f"127.0.0.1:{s.port}")
    if not sdk_err:
        env["OSB_SDK_DIR"] = SDK_DIR
    r, seen = run_node(urls, env)
    want = 2 * len(urls) + (0 if sdk_err else 2)  # Playwright and Puppeteer
    t.ok(r.returncode == 0 and seen == want, "browser: the script ran to its end",
         f"rc={r.returncode} checks={seen}/{want} stderr={r.stderr[-800:]}")


if not os.path.exists(CHROMIUM) or not shutil.which("node"):
    t.ok(False, "Debian's Chromium and node are needed (scripts/install-deps.sh test)")
else:
    with Server() as s:
        sid = start(s)
        t.run(discovery, s, sid, timeout=120)
        signed_url = None
        try:
            signed_url = signed(s, sid)
        except Exception as e:  # noqa: BLE001 - reported, then the rest runs
            t.ok(False, "signed: the signed URL", repr(e))
        t.run(host_rule, s, sid, timeout=60)
        t.run(untouched, s, sid, timeout=60)
        if signed_url:
            t.run(browser, s, sid, signed_url, timeout=450)
    t.run(egress_suite, timeout=300)
t.done()
