#!/usr/bin/python3
"""Sandbox networking and egress policy end to end (issue #5, protocol.md
section 4, DESIGN.md section 7) through the real server: sandboxes made with
POST /v1/sandboxes, probes run inside them through execd (netprobe.py), the
/policy API reached through the endpoint the server hands out for port 18080.

The "internet" is fakenet.FakeInternet (a netns on 10.203.0.0/24 with a DNS
server and HTTP servers); no packet leaves the machine. Servers run with
[network] mode "nat" and [egress] "dns+nft" then [egress] "dns", then [network] "bridge", then "none", each on a free
subnet (serverlib.free_subnet). Skips (TAP SKIP) when not root or when the server reports that it
cannot provide sandbox networking."""
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import fakenet  # noqa: E402
from fakenet import DNS_IP, HOST_IP, META_IP, ECHO_PORT, ZONE  # noqa: E402

t = TAP()
KEY = "egress-key-" + uuid.uuid4().hex
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netprobe.py")
PY = "/usr/bin/python3"
IP_ALLOWED, IP_DENIED, IP_WILD, IP_APEX = (ZONE["allowed.test"], ZONE["denied.test"],
                                           ZONE["a.wild.test"], ZONE["wild.test"])
AUTH = "OPENSANDBOX-EGRESS-AUTH"


def net_config(mode="nat", subnet=None, egress="dns+nft", pool=2):
    subnet = subnet or free_subnet()
    return "\n".join([
        "[network]", 'mode = "%s"' % mode, 'subnet = "%s"' % subnet, "pool_size = %d" % pool,
        'dns_upstreams = ["%s:53"]' % DNS_IP, "allow_host_cidrs = []",
        "[egress]", 'mode = "%s"' % egress, ""])


POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "allowed.test"},
                                              {"action": "allow", "target": "*.wild.test"}]}


class Skip(Exception):
    pass


UNAVAILABLE = re.compile(r"network[^\n]*(unavailable|not available|not supported|unsupported)",
                         re.I)


def start(s):
    """Starts the server; Skip when it says networking is unavailable here."""
    try:
        return s.start()
    except RuntimeError as e:
        if UNAVAILABLE.search(str(e)):
            s.stop()
            raise Skip(str(e).splitlines()[-1][:200])
        raise


# ---------------------------------------------------------------- helpers

class Sbx:
    """A sandbox with netprobe.py uploaded; .ip .gw .nameservers from inside."""

    def __init__(self, s, sid):
        self.s, self.id = s, sid
        self.x = s.execd(sid)
        ctype, body = multipart(upload_parts([({"path": "/tmp/netprobe.py"},
                                               open(PROBE, "rb").read())]))
        r = self.x.post("/files/upload", body=body, headers={"Content-Type": ctype})
        if r.status != 200:
            raise RuntimeError("upload netprobe.py -> %d %r" % (r.status, r.body[:300]))
        self.info = json.loads(self.probe(["info"])[0])
        self.ip, self.gw = self.info["ip"], self.info["gw"]

    def sh(self, cmd, background=False, timeout=60):
        ev = self.x.sse("/command", json={"command": cmd, "background": background},
                        timeout=timeout).events
        return ev

    def probe(self, *probes):
        ev = self.sh("%s /tmp/netprobe.py %s" % (PY, shlex.quote(json.dumps(probes))))
        out = stdout_lines(ev)
        if len(out) != len(probes):
            raise RuntimeError("netprobe gave %r for %r (events %r)" % (out, probes, ev[-3:]))
        return out

    def egress(self, token=Ellipsis):
        return Egress(self.s, self.id, token)


class Egress(Client):
    """The /policy API at the endpoint the server returns for port 18080."""

    def __init__(self, s, sid, token=Ellipsis):
        r = s.get("/v1/sandboxes/%s/endpoints/18080" % sid)
        if r.status != 200:
            raise RuntimeError("endpoint 18080 -> %d %r" % (r.status, r.body[:300]))
        self.ep = r.json()
        hostport, _, path = self.ep["endpoint"].partition("/")
        host, _, port = hostport.rpartition(":")
        Client.__init__(self, host, int(port))
        self.prefix = "/" + path
        self.token = self.ep.get("headers", {}).get(AUTH) if token is Ellipsis else token

    def _auth_headers(self):
        return {AUTH: self.token} if self.token is not None else {}

    def req(self, method, path, **kw):
        return Client.req(self, method, self.prefix + path, **kw)

    def policy(self):
        r = self.get("/policy")
        if r.status != 200:
            raise RuntimeError("GET /policy -> %d %r" % (r.status, r.body[:300]))
        return r.json()


def new_sbx(s, **fields):
    r = s.create(**fields)
    if r.status != 202 and UNAVAILABLE.search(r.text):
        raise Skip("create: " + r.text[:200])
    if r.status != 202:
        raise RuntimeError("create -> %d %r" % (r.status, r.body[:500]))
    return Sbx(s, r.json()["id"])


def want_policy(eg, mode, egress, default="deny", enf="dns+nft", name="GET /policy"):
    r = eg.get("/policy")
    want = {"status": "ok", "mode": mode, "enforcementMode": enf,
            "policy": {"egress": egress, "defaultAction": default}}
    got = r.json() if r.status == 200 else (r.status, r.body[:300])
    ok = t.eq(got, want, name)
    if r.status == 200:
        t.ok(r.headers.get("content-type", "").startswith("application/json"),
             name + ": application/json", r.headers)
    return ok


def want_ok(r, mode, name, enf="dns+nft", reason=None):
    want = {"status": "ok", "mode": mode, "enforcementMode": enf}
    if reason:
        want["reason"] = reason
    return t.eq(r.json() if r.status == 200 else (r.status, r.body[:300]), want, name)


def is_egress_error(r, status, name, code=None):
    """A JSON {code,message} error (SDKs parse only that) with the status."""
    return t.is_error(r, status, code, name)


def host_link(gw):
    """(name, prefix, table) of the host end that carries gw."""
    for line in subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if f[2] == "inet" and f[3].split("/")[0] == gw:
            name = f[1].split("@")[0]
            return name, name[:7], "osb_" + name[3:7]
    return None, None, None


def leftovers(state, prefix, table):
    left = []
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = [l.split(":")[1].strip().split("@")[0] for l in out.splitlines()]
    left += ["link " + n for n in names if prefix and n.startswith(prefix)]
    nsdir = os.path.join(state, "netns")
    if os.path.isdir(nsdir):
        left += ["pin " + n for n in os.listdir(nsdir)]
    with open("/proc/self/mountinfo") as f:
        left += ["mount " + l.split()[4] for l in f if state in l.split()[4]]
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    if table and ("table inet " + table) in [l.strip() for l in tables.splitlines()]:
        left.append("table " + table)
    return left


def stop_and_check(s, prefix, table, what):
    """Deletes everything, SIGTERM, then no netns pin, veth, mount or table left."""
    s.delete_all()
    s._expected_exit = True
    s.proc.send_signal(signal.SIGTERM)
    rc = s.proc.wait(20)
    t.eq(rc, 0, "%s: server exits 0 on SIGTERM" % what)
    left = leftovers(s.state_dir, prefix, table)
    t.ok(not left, "%s: no netns pin, %s* link, mount or nft table %s left" % (what, prefix, table),
         left)
    problems = s.stop()
    t.ok(not problems, "%s: server teardown clean" % what, problems)


# ---------------------------------------------------------------- nat, no policy

def test_no_policy(s, inet):
    a, b = new_sbx(s), new_sbx(s)
    net = ipaddress.ip_network(re.search(r'subnet = "([^"]+)"', open(s.config).read()).group(1))
    ia = ipaddress.ip_address(a.ip or "0.0.0.0")
    t.ok(ia in net and int(ia) % 4 == 2, "sandbox address %s is .2 of a /30 in %s" % (a.ip, net),
         a.info)
    t.eq(a.gw, str(ia - 1), "default route via the host end (.1 of the /30)", a.info)
    t.eq(a.info["nameservers"], [a.gw], "/etc/resolv.conf: nameserver <host end>")
    t.ok(b.ip != a.ip and b.gw != a.gw, "two sandboxes, two addresses", (a.info, b.info))
    name, prefix, table = host_link(a.gw)
    t.ok(name is not None and name.startswith("osb"), "host end %r carries %s" % (name, a.gw))

    b.sh("cd /tmp && exec %s -m http.server 18099 --bind 0.0.0.0" % PY, background=True)
    hs_inet = fakenet.host_service(HOST_IP)
    hs_gw = fakenet.host_service(a.gw)
    try:
        t.ok(wait_for(lambda: b.probe(["get", b.ip, 18099])[0].startswith("OK"), timeout=10,
                      interval=0.2), "control: B's server answers on B's address (from B)")
        r = inet.run("import urllib.request,sys\nprint(urllib.request.urlopen("
                     "'http://%s:%d/', timeout=2).read().decode())" % (HOST_IP, hs_inet.port))
        t.eq(r, "host service", "control: the host service answers the fake internet")
        t.ok(fakenet.wait_port(a.gw, hs_gw.port), "control: a host service on A's host end")
        hits_before = len(hs_inet.hits) + len(hs_gw.hits)
        got = a.probe(["resolve", "allowed.test"], ["resolve", "denied.test"],
                      ["resolve", "nothere.test"], ["dns", a.gw, "allowed.test", "tcp"],
                      ["dns", DNS_IP, "denied.test", "udp"],
                      ["get", "allowed.test", 80], ["get", "denied.test", 80],
                      ["get", IP_APEX, 80],
                      ["get", b.ip, 18099], ["get", HOST_IP, hs_inet.port],
                      ["get", a.gw, hs_gw.port], ["get", META_IP, 80],
                      ["dns", b.gw, "allowed.test", "udp"], ["get", b.gw, 18099])
        t.eq(got[0], "OK " + IP_ALLOWED, "allowed.test resolves")
        t.eq(got[1], "OK " + IP_DENIED, "denied.test resolves (no policy: allow all)")
        t.eq(got[2], "ERR NONAME", "an unknown name: NXDOMAIN passed through")
        t.eq(got[3], "RCODE 0 " + IP_ALLOWED, "DNS over TCP to the host end")
        t.eq(got[4], "RCODE 0 " + IP_DENIED, "a resolver at a literal IP works without policy")
        t.eq(got[5], "OK %s %s" % (IP_ALLOWED, HOST_IP), "GET allowed.test, NAT source " + HOST_IP)
        t.eq(got[6], "OK %s %s" % (IP_DENIED, HOST_IP), "GET denied.test, NAT source " + HOST_IP)
        t.eq(got[7], "OK %s %s" % (IP_APEX, HOST_IP), "GET a literal IP")
        t.ok(got[8].startswith("FAIL"), "A cannot reach sandbox B's address", got[8])
        t.ok(got[9].startswith("FAIL"), "A cannot reach a host service on %s" % HOST_IP, got[9])
        t.ok(got[10].startswith("FAIL"), "A cannot reach a host service on its own host end",
             got[10])
        t.ok(got[11].startswith("FAIL"), "A cannot reach link-local %s" % META_IP, got[11])
        t.ok(got[12].startswith("FAIL"), "A cannot use B's host-end DNS", got[12])
        t.ok(got[13].startswith("FAIL"), "A cannot reach B's host end", got[13])
        t.eq(len(hs_inet.hits) + len(hs_gw.hits), hits_before, "the host services saw nothing")
        t.ok(set(inet.clients(IP_ALLOWED)) == {HOST_IP}, "the internet only ever saw " + HOST_IP,
             inet.clients(IP_ALLOWED))
    finally:
        hs_inet.close()
        hs_gw.close()
    ep = s.endpoint(a.id, 18080)
    t.ok(AUTH not in ep.get("headers", {}), "no egress token for a sandbox without policy", ep)
    r = Egress(s, a.id, token="x").get("/policy")
    is_egress_error(r, 500, "/policy of a sandbox without networkPolicy -> 500 EGRESS::NOT_ENABLED",
                    "EGRESS::NOT_ENABLED")
    for sb in (a, b):
        s.delete("/v1/sandboxes/" + sb.id)
    return prefix, table


# ---------------------------------------------------------------- the /policy API

def test_policy_api(s):
    sb = new_sbx(s, networkPolicy=POLICY)
    eg = sb.egress()
    t.eq(eg.ep.get("endpoint"), "127.0.0.1:%d/sandboxes/%s/proxy/18080" % (s.port, sb.id),
         "endpoint 18080: the server's own proxy path")
    tok = eg.ep.get("headers", {}).get(AUTH)
    t.ok(isinstance(tok, str) and len(tok) >= 16, "endpoint 18080 carries %s" % AUTH, eg.ep)
    e44 = s.endpoint(sb.id, 44772)
    t.ok(AUTH not in e44.get("headers", {}), "execd's endpoint does not carry the egress token")
    t.ok("X-EXECD-ACCESS-TOKEN" not in eg.ep.get("headers", {}),
         "the egress endpoint does not carry execd's token")
    want_policy(eg, "enforcing", POLICY["egress"], name="GET /policy after create")
    r = s.get("/v1/sandboxes/%s/proxy/18080/policy" % sb.id, headers={AUTH: tok})
    t.eq(r.status, 200, "GET /policy under /v1 too")

    # Auth.
    for tok_ in (None, "wrong", tok[:-1]):
        bad = sb.egress(token=tok_)
        is_egress_error(bad.get("/policy"), 401, "GET /policy with token %r -> 401" % tok_,
                        "EGRESS::UNAUTHORIZED")
    bad = sb.egress(token="wrong")
    is_egress_error(bad.req("PATCH", "/policy", json=[{"action": "allow", "target": "x.test"}]),
                    401, "PATCH with a wrong token -> 401", "EGRESS::UNAUTHORIZED")
    is_egress_error(bad.delete("/policy", json=["allowed.test"]), 401,
                    "DELETE with a wrong token -> 401", "EGRESS::UNAUTHORIZED")
    is_egress_error(bad.post("/policy", json={}), 401, "POST with a wrong token -> 401",
                    "EGRESS::UNAUTHORIZED")
    r = sb.egress(token=None).get("/healthz")
    t.eq((r.status, r.text.strip()), (200, "ok"), "GET /healthz without a token -> 200 ok")
    other = new_sbx(s, networkPolicy={"defaultAction": "allow"})
    eo = other.egress()
    t.ok(eo.token != tok, "each sandbox has its own token")
    is_egress_error(Egress(s, sb.id, token=eo.token).get("/policy"), 401,
                    "another sandbox's token -> 401", "EGRESS::UNAUTHORIZED")
    want_policy(eo, "allow_all", [], default="allow", name="allow + no rules: allow_all, egress []")
    want_policy(eg, "enforcing", POLICY["egress"], name="unauthorized calls changed nothing")

    # Bad bodies: 400 {code,message}, nothing changed.
    bads = [("PATCH", b"{"), ("PATCH", b"[]"), ("PATCH", b'{"action":"allow","target":"x"}'),
            ("PATCH", b'[{"action":"maybe","target":"x.test"}]'),
            ("PATCH", b'[{"action":"allow","target":""}]'),
            ("PATCH", b'[{"action":"allow"}]'), ("PATCH", b""),
            ("DELETE", b""), ("DELETE", b"[]"), ("DELETE", b"not json"),
            ("DELETE", b'"allowed.test"'),
            ("POST", b"not json"), ("POST", b'{"defaultAction":"maybe"}'),
            ("PUT", b'{"egress":[{"action":"allow","target":""}]}'),
            ("POST", b'{"egress":{"action":"allow","target":"x"}}')]
    for method, body in bads:
        r = eg.req(method, "/policy", body=body, headers={"Content-Type": "application/json"})
        is_egress_error(r, 400, "%s /policy %r -> 400 JSON error" % (method, body))
    want_policy(eg, "enforcing", POLICY["egress"], name="bad bodies changed nothing")

    # A sandbox reaches this API: its bodies go through the server's one JSON
    # parser, which refuses duplicate keys and nesting past 64 levels.
    deep = b'[{"action":"allow","target":"deep.test","x":' + b"[" * 80 + b"]" * 80 + b"}]"
    hostile = [("PATCH", b'[{"action":"allow","target":"dup.test","target":"other.test"}]',
                "duplicate"),
               ("POST", b'{"defaultAction":"allow","defaultAction":"deny"}', "duplicate"),
               ("PUT", b'{"egress":[],"egress":[{"action":"allow","target":"x.test"}]}',
                "duplicate"),
               ("PATCH", deep, "nested deeper than 64"),
               ("POST", b'{"egress":' + b"[" * 80 + b"]" * 80 + b"}", "nested deeper than 64"),
               ("DELETE", b"[" * 80 + b"]" * 80, "nested deeper than 64")]
    for method, body, why in hostile:
        r = eg.req(method, "/policy", body=body, headers={"Content-Type": "application/json"})
        if is_egress_error(r, 400, "%s /policy %s -> 400 EGRESS::INVALID_BODY" % (method, why),
                           "EGRESS::INVALID_BODY"):
            t.ok(why in r.json().get("message", ""), "%s /policy: the message says %r"
                 % (method, why), r.body[:300])
    want_policy(eg, "enforcing", POLICY["egress"],
                name="duplicate keys and over-deep bodies changed nothing")

    # PATCH merge: new rules first (first of duplicates wins), then the old
    # rules whose target (any case) is not in the patch.
    r = eg.req("PATCH", "/policy", json=[{"action": "deny", "target": "*.WILD.test"},
                                         {"action": "ALLOW", "target": "x.test"},
                                         {"action": "deny", "target": "x.test"},
                                         {"action": "", "target": "y.test"}])
    want_ok(r, "enforcing", "PATCH -> 200 {status, mode, enforcementMode}")
    got = eg.policy()["policy"]["egress"]
    norm = [{"action": g.get("action"), "target": str(g.get("target")).lower()} for g in got]
    t.eq(norm, [{"action": "deny", "target": "*.wild.test"}, {"action": "allow", "target": "x.test"},
                {"action": "deny", "target": "y.test"},
                {"action": "allow", "target": "allowed.test"}],
         "PATCH merge order; actions lower-cased; empty action = deny", got)
    r = eg.delete("/policy", json=["X.TEST", "nothing.test"])
    want_ok(r, "enforcing", "DELETE (targets any case) -> 200")
    t.eq([g["target"].lower() for g in eg.policy()["policy"]["egress"]],
         ["*.wild.test", "y.test", "allowed.test"], "DELETE removed x.test only")
    r = eg.delete("/policy", json=["nothing.test"])
    want_ok(r, "enforcing", "DELETE of unknown targets -> reason", reason="no matching targets found")

    # Replace.
    r = eg.post("/policy", json={"defaultAction": "allow", "egress": [
        {"action": "deny", "target": "denied.test"}]})
    want_ok(r, "enforcing", "POST replaces the policy")
    want_policy(eg, "enforcing", [{"action": "deny", "target": "denied.test"}], default="allow",
                name="GET after POST")
    r = eg.req("PUT", "/policy", body=b"")
    t.eq(r.json() if r.status == 200 else (r.status, r.body[:200]),
         {"status": "ok", "mode": "deny_all", "reason": "policy reset to default deny-all"},
         "PUT with an empty body resets to deny-all")
    want_policy(eg, "deny_all", [], name="deny_all: egress [] (never null)")
    r = eg.post("/policy", json={"egress": [{"action": "allow", "target": "allowed.test"}]})
    want_ok(r, "enforcing", "POST without defaultAction")
    want_policy(eg, "enforcing", [{"action": "allow", "target": "allowed.test"}],
                name="missing defaultAction -> deny")
    r = eg.req("PUT", "/policy", json={"defaultAction": "allow"})
    want_ok(r, "allow_all", "PUT allow + no rules -> allow_all")
    r = eg.post("/policy", json={})
    t.ok(r.status == 200 and r.json().get("mode") == "deny_all", "POST {} -> deny_all", r.body)
    want_policy(eg, "deny_all", [], name="GET after POST {}")

    # Create-time validation.
    before = len(s.list_all())
    for bad in ({"defaultAction": "maybe"}, {"egress": [{"action": "allow", "target": ""}]},
                {"egress": [{"action": "sometimes", "target": "x.test"}]},
                {"egress": [{"action": "allow"}]}, {"egress": "allowed.test"}):
        r = s.create(networkPolicy=bad)
        t.ok(400 <= r.status < 500, "create with networkPolicy %s -> 4xx" % json.dumps(bad),
             (r.status, r.body[:200]))
    t.eq(len(s.list_all()), before, "no sandbox made by the invalid creates")
    s.delete("/v1/sandboxes/" + sb.id)
    s.delete("/v1/sandboxes/" + other.id)
    r = eg.get("/policy")
    # GET /policy lists only 401 and 500 (egress-api.yaml).
    is_egress_error(r, 500, "/policy of a deleted sandbox -> 500 SANDBOX::NOT_FOUND",
                    "SANDBOX::NOT_FOUND")


# ---------------------------------------------------------------- enforcement

def test_enforcement(s, inet):
    sb = new_sbx(s, networkPolicy=POLICY)
    gw = sb.gw
    got = sb.probe(["resolve", "allowed.test"], ["resolve", "denied.test"],
                   ["dns", gw, "denied.test", "udp"], ["resolve", "a.wild.test"],
                   ["resolve", "b.c.wild.test"], ["dns", gw, "wild.test", "udp"],
                   ["dns", gw, "AlLoWeD.TeSt", "udp"], ["dns", gw, "allowed.test", "tcp"],
                   ["dns", gw, "denied.test", "tcp"],
                   ["dns", DNS_IP, "denied.test", "udp"], ["dns", DNS_IP, "allowed.test", "tcp"],
                   ["get", IP_DENIED, 80], ["get", IP_APEX, 80], ["get", META_IP, 80])
    t.eq(got[0], "OK " + IP_ALLOWED, "allowed.test resolves")
    t.eq(got[1], "ERR NONAME", "denied.test: NXDOMAIN through libc")
    t.eq(got[2], "RCODE 3", "denied.test: rcode 3 (NXDOMAIN), no answer")
    t.eq(got[3], "OK " + IP_WILD, "*.wild.test matches a.wild.test")
    t.eq(got[4], "OK " + IP_WILD, "*.wild.test matches b.c.wild.test")
    t.eq(got[5], "RCODE 3", "*.wild.test does not match the apex wild.test")
    t.eq(got[6], "RCODE 0 " + IP_ALLOWED, "matching is case-insensitive")
    t.eq(got[7], "RCODE 0 " + IP_ALLOWED, "allowed name over TCP DNS")
    t.eq(got[8], "RCODE 3", "denied name over TCP DNS: NXDOMAIN")
    t.ok(got[9].startswith("FAIL"), "a hard-coded resolver at a literal IP: blocked (udp)", got[9])
    t.ok(got[10].startswith("FAIL"), "a hard-coded resolver at a literal IP: blocked (tcp)",
         got[10])
    t.ok(got[11].startswith("FAIL"), "literal IP of a denied name: blocked", got[11])
    t.ok(got[12].startswith("FAIL"), "literal IP never resolved: blocked", got[12])
    t.ok(got[13].startswith("FAIL"), "link-local still blocked", got[13])
    got = sb.probe(["get", "allowed.test", 80], ["get", "a.wild.test", 80], ["get", IP_ALLOWED, 80])
    t.eq(got[0], "OK %s %s" % (IP_ALLOWED, HOST_IP), "GET allowed.test connects (learned IP)")
    t.eq(got[1], "OK %s %s" % (IP_WILD, HOST_IP), "GET a.wild.test connects")
    t.eq(got[2], "OK %s %s" % (IP_ALLOWED, HOST_IP), "the learned IP by literal works")
    s.delete("/v1/sandboxes/" + sb.id)


def hold_lines(sb):
    ev = sb.sh("cat /tmp/hold.log 2>/dev/null; true")
    return stdout_lines(ev)


def test_live_changes(s, inet):
    sb = new_sbx(s, networkPolicy=POLICY)
    eg = sb.egress()
    t.eq(sb.probe(["resolve", "denied.test"])[0], "ERR NONAME", "control: denied.test denied")
    t0 = time.monotonic()
    r = eg.req("PATCH", "/policy", json=[{"action": "allow", "target": "denied.test"}])
    t.diag("PATCH round trip %.1f ms" % ((time.monotonic() - t0) * 1000))
    want_ok(r, "enforcing", "PATCH allow denied.test")
    got = sb.probe(["resolve", "denied.test"])  # first try, no retry: applies at once
    t.eq(got[0], "OK " + IP_DENIED, "denied.test resolves right after the PATCH")
    t.eq(sb.probe(["get", "denied.test", 80])[0], "OK %s %s" % (IP_DENIED, HOST_IP),
         "and connects")
    want_policy(eg, "enforcing", [{"action": "allow", "target": "denied.test"}] + POLICY["egress"],
                name="GET after PATCH: patch first")
    r = eg.delete("/policy", json=["allowed.test"])
    want_ok(r, "enforcing", "DELETE allowed.test")
    t.eq(sb.probe(["resolve", "allowed.test"])[0], "ERR NONAME",
         "allowed.test no longer resolves after DELETE")
    r = eg.req("PATCH", "/policy", json=[{"action": "deny", "target": "*.wild.test"}])
    t.eq(sb.probe(["resolve", "a.wild.test"])[0], "ERR NONAME", "PATCH deny *.wild.test applies")

    # An established connection to a destination that becomes denied is cut.
    sb.sh("%s /tmp/netprobe.py %s" % (PY, shlex.quote(json.dumps(
        [["hold", "denied.test", ECHO_PORT, "/tmp/hold.log"]]))), background=True)
    ok = wait_for(lambda: len([l for l in hold_lines(sb) if l.endswith(" ok")]) >= 3,
                  timeout=10, interval=0.2)
    t.ok(ok, "a held connection to denied.test:%d echoes" % ECHO_PORT, hold_lines(sb))
    t_post = time.time()
    r = eg.post("/policy", json={"defaultAction": "deny", "egress": []})
    want_ok(r, "deny_all", "POST a deny-all policy")
    wait_for(lambda: not hold_lines(sb)[-1].endswith(" ok"), timeout=4, interval=0.2)
    lines = hold_lines(sb)
    last = lines[-1] if lines else ""
    cut_after = float(last.split()[0]) - t_post if last and last.split()[0][0].isdigit() else -1
    t.ok(not last.endswith(" ok") and cut_after < 2.5,
         "the established connection is cut (%r, %.2f s after the POST)" % (last, cut_after),
         lines[-5:])
    got = sb.probe(["resolve", "denied.test"], ["get", IP_DENIED, 80])
    t.eq(got[0], "ERR NONAME", "deny-all: denied.test NXDOMAIN again")
    t.ok(got[1].startswith("FAIL"), "deny-all: its learned IP no longer reachable", got[1])
    want_policy(eg, "deny_all", [], name="GET after deny-all")

    # Replace: default allow, first match wins, IP rules.
    r = eg.req("PUT", "/policy", json={"defaultAction": "allow", "egress": [
        {"action": "deny", "target": "a.wild.test"}, {"action": "allow", "target": "*.wild.test"},
        {"action": "deny", "target": "denied.test"}, {"action": "deny", "target": IP_APEX},
        {"action": "deny", "target": IP_DENIED + "/32"}]})
    want_ok(r, "enforcing", "PUT a default-allow policy")
    got = sb.probe(["resolve", "a.wild.test"], ["resolve", "b.c.wild.test"],
                   ["resolve", "denied.test"], ["resolve", "allowed.test"],
                   ["get", IP_APEX, 80], ["get", "allowed.test", 80], ["get", IP_DENIED, 80])
    t.eq(got[0], "ERR NONAME", "first matching rule wins (deny a.wild.test before *.wild.test)")
    t.eq(got[1], "OK " + IP_WILD, "b.c.wild.test allowed by *.wild.test")
    t.eq(got[2], "ERR NONAME", "denied.test denied")
    t.eq(got[3], "OK " + IP_ALLOWED, "unlisted name: default allow")
    t.ok(got[4].startswith("FAIL"), "deny rule for a literal IP blocks it", got[4])
    t.eq(got[5], "OK %s %s" % (IP_ALLOWED, HOST_IP), "default allow: allowed.test connects")
    t.ok(got[6].startswith("FAIL"), "deny CIDR rule blocks %s" % IP_DENIED, got[6])
    r = eg.req("PATCH", "/policy", json=[{"action": "allow", "target": "10.203.0.11"}])
    t.eq(sb.probe(["get", IP_DENIED, 80])[0], "OK %s %s" % (IP_DENIED, HOST_IP),
         "an allow rule for an IP placed before the deny CIDR opens it")
    s.delete("/v1/sandboxes/" + sb.id)


def test_restart(s, inet):
    free = new_sbx(s)
    sb = new_sbx(s, networkPolicy=POLICY)
    eg = sb.egress()
    eg.req("PATCH", "/policy", json=[{"action": "deny", "target": "a.wild.test"}])
    before = eg.policy()
    t.eq(sb.probe(["get", "allowed.test", 80])[0], "OK %s %s" % (IP_ALLOWED, HOST_IP),
         "control: allowed.test reachable before the restart")
    s.restart()  # SIGKILL + start on the same state
    eg2 = sb.egress()
    t.eq(eg2.token, eg.token, "the egress token survives a restart")
    t.eq(eg2.policy() if eg2.token else None, before, "the policy survives a restart")
    got = sb.probe(["resolve", "allowed.test"], ["resolve", "a.wild.test"],
                   ["resolve", "b.c.wild.test"], ["resolve", "denied.test"],
                   ["get", IP_DENIED, 80], ["dns", DNS_IP, "denied.test", "udp"])
    t.eq(got[:4], ["OK " + IP_ALLOWED, "ERR NONAME", "OK " + IP_WILD, "ERR NONAME"],
         "after the restart: DNS policy still enforced")
    t.ok(got[4].startswith("FAIL") and got[5].startswith("FAIL"),
         "after the restart: literal IPs still blocked", got[4:])
    t.eq(sb.probe(["get", "allowed.test", 80])[0], "OK %s %s" % (IP_ALLOWED, HOST_IP),
         "after the restart: allowed.test connects")
    r = eg2.req("PATCH", "/policy", json=[{"action": "allow", "target": "denied.test"}])
    want_ok(r, "enforcing", "PATCH after the restart")
    t.eq(sb.probe(["resolve", "denied.test"])[0], "OK " + IP_DENIED, "and it applies")
    t.eq(free.probe(["get", "denied.test", 80])[0], "OK %s %s" % (IP_DENIED, HOST_IP),
         "a sandbox without policy still has network after the restart")
    fresh = new_sbx(s, networkPolicy=POLICY)
    t.eq(fresh.probe(["resolve", "denied.test"], ["resolve", "allowed.test"]),
         ["ERR NONAME", "OK " + IP_ALLOWED], "a sandbox created after the restart is enforced")


def nat_suite(inet):
    s = Server(api_key=KEY, extra=net_config(), tmp_dir=os.path.expanduser("~"))
    start(s)
    prefix = table = None
    try:
        res = t.run(test_no_policy, s, inet, timeout=90)
        if res:
            prefix, table = res
        t.run(test_policy_api, s, timeout=90)
        t.run(test_enforcement, s, inet, timeout=90)
        t.run(test_live_changes, s, inet, timeout=120)
        t.run(test_restart, s, inet, timeout=120)
    finally:
        if s.proc and s.proc.poll() is None:
            stop_and_check(s, prefix, table, "nat (after SIGKILL + restart)")
        else:
            t.ok(False, "nat: the server was still running at the end", s.log_text()[-2000:])
            s.stop()


# ---------------------------------------------------------------- other modes

def dns_suite(inet):
    s = Server(api_key=KEY, extra=net_config(egress="dns"),
               tmp_dir=os.path.expanduser("~"))
    start(s)
    prefix = table = None
    try:
        sb = new_sbx(s, networkPolicy={"defaultAction": "deny", "egress": [
            {"action": "allow", "target": "allowed.test"}]})
        _, prefix, table = host_link(sb.gw)
        eg = sb.egress()
        want_policy(eg, "enforcing", [{"action": "allow", "target": "allowed.test"}], enf="dns",
                    name="dns mode: enforcementMode dns")
        got = sb.probe(["resolve", "denied.test"], ["resolve", "allowed.test"],
                       ["get", IP_DENIED, 80], ["get", META_IP, 80])
        t.eq(got[0], "ERR NONAME", "dns mode: denied.test NXDOMAIN")
        t.eq(got[1], "OK " + IP_ALLOWED, "dns mode: allowed.test resolves")
        t.eq(got[2], "OK %s %s" % (IP_DENIED, HOST_IP), "dns mode: a literal IP stays reachable")
        t.ok(got[3].startswith("FAIL"), "dns mode: link-local still blocked", got[3])
        want_ok(eg.req("PATCH", "/policy", json=[{"action": "allow", "target": "denied.test"}]),
                "enforcing", "dns mode: PATCH", enf="dns")
        t.eq(sb.probe(["resolve", "denied.test"])[0], "OK " + IP_DENIED, "dns mode: PATCH applies")
    finally:
        stop_and_check(s, prefix, table, "dns mode (clean stop)")


def bridge_suite(inet):
    s = Server(api_key=KEY, extra=net_config(mode="bridge"),
               tmp_dir=os.path.expanduser("~"))
    start(s)
    prefix = table = None
    try:
        sb = new_sbx(s)
        _, prefix, table = host_link(sb.gw)
        ep = s.endpoint(sb.id, 8080)
        t.eq(ep.get("endpoint"), "%s:8080" % sb.ip, "bridge: endpoint 8080 is <sandbox ip>:8080")
        sb.sh("mkdir -p /tmp/www && cd /tmp/www && echo bridged > hi.txt && exec %s -m http.server "
              "8080 --bind 0.0.0.0" % PY, background=True)
        host, _, port = ep.get("endpoint", ":0").rpartition(":")
        c = Client(host, int(port) if port.isdigit() else 0)
        ok = wait_for(lambda: c.get("/hi.txt", timeout=2).status == 200, timeout=10, interval=0.2)
        r = c.get("/hi.txt", timeout=2) if ok else None
        t.ok(ok and r.text == "bridged\n", "bridge: the sandbox's HTTP server answers the host "
             "at the endpoint", r)
        e44 = s.endpoint(sb.id, 44772)
        hostport, _, path = e44["endpoint"].partition("/")
        xc = Client(hostport.rpartition(":")[0], int(hostport.rpartition(":")[2]))
        r = xc.get(("/" + path if path else "") + "/ping", headers=e44.get("headers"), timeout=3)
        t.eq(r.status, 200, "bridge: execd answers at its endpoint %s" % e44["endpoint"])
        got = sb.probe(["get", "allowed.test", 80])
        t.eq(got[0], "OK %s %s" % (IP_ALLOWED, HOST_IP), "bridge: NAT out works")
    finally:
        stop_and_check(s, prefix, table, "bridge (clean stop)")


def none_suite():
    s = Server(api_key=KEY, extra=net_config(mode="none"),
               tmp_dir=os.path.expanduser("~"))
    start(s)
    try:
        r = s.create(networkPolicy=POLICY)
        t.eq(r.status, 400, "mode none: create with networkPolicy -> 400", r.body[:300])
        sb = new_sbx(s)
        got = sb.probe(["info"], ["get", IP_ALLOWED, 80])
        t.eq(json.loads(got[0])["ip"], None, "mode none: no route out (loopback only)", got[0])
        t.ok(got[1].startswith("FAIL"), "mode none: nothing reachable", got[1])
        out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        hashes = [l for l in out.splitlines() if ": osb" in l]
        t.diag("osb links while a none-mode server runs: %d" % len(hashes))
    finally:
        problems = s.stop()
        t.ok(not problems, "none: server teardown clean", problems)


def main():
    why = fakenet.available()
    if why:
        t.skip("sandbox networking", why)
        return
    with fakenet.FakeInternet() as inet:
        for name, fn, args, tmo in (("nat", nat_suite, (inet,), 500),
                                    ("dns", dns_suite, (inet,), 90),
                                    ("bridge", bridge_suite, (inet,), 90),
                                    ("none", none_suite, (), 60)):
            t.run(_skippable, fn, *args, name=name, timeout=tmo)


def _skippable(fn, *args):
    try:
        fn(*args)
    except Skip as e:
        t.skip("sandbox networking", "server: %s" % e)


if __name__ == "__main__":
    t.run(main, timeout=900)
    t.done()
