#!/usr/bin/python3
"""Servers sharing one host: the [network] subnet check at start-up
(src/net/hostnet.c), two servers side by side, restarts, init-config's
subnet, and the `network` diagnostics scope in every mode.

Everything lives in the host network namespace the servers run in: a dummy
link with an address and a blackhole route in a private routing table are
created here (a veth pair when the kernel has no dummy driver; unique names, free subnets from serverlib.free_subnet) and
removed at the end, even on failure. The sandboxes' DNS upstream is a tiny
resolver on 127.0.0.1 (answers every A query with 192.0.2.7); nothing
leaves the machine."""
import ipaddress
import json
import os
import random
import re
import shlex
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverlib  # noqa: E402
from serverlib import *  # noqa: E402,F403

t = TAP()
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netprobe.py")
PY = "/usr/bin/python3"
ANSWER = "192.0.2.7"


def ipcmd(*args, check=True):
    r = subprocess.run(["ip"] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def link_prefix(state_dir):
    """The server's link prefix: "osb" + 16-bit fold of FNV-1a of the real path."""
    h = 2166136261
    for b in os.path.realpath(state_dir).encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return "osb%04x" % ((h ^ (h >> 16)) & 0xffff)


def host_links():
    return [l.split(":")[1].strip().split("@")[0] for l in ipcmd("-o", "link").splitlines()]


def is_free(cidr):
    n = ipaddress.ip_network(cidr)
    return not any(n.overlaps(h) for h in serverlib._host_networks())


class Resolver:
    """UDP DNS on 127.0.0.1: every A query -> ANSWER, others -> no data."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                q, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                self.sock.sendto(self.answer(q), peer)
            except (OSError, IndexError, struct.error):
                continue

    @staticmethod
    def answer(q):
        qid = struct.unpack(">H", q[:2])[0]
        off = 12
        while q[off]:
            off += 1 + q[off]
        qtype = struct.unpack(">H", q[off + 1:off + 3])[0]
        question = q[12:off + 5]
        if qtype != 1:
            return struct.pack(">HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question
        rr = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(ANSWER)
        return struct.pack(">HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr


def net_toml(subnet, dns_port=9, mode="nat"):
    return "\n".join(["[network]", 'mode = "%s"' % mode, 'subnet = "%s"' % subnet,
                      "pool_size = 2", 'dns_upstreams = ["127.0.0.1:%d"]' % dns_port, ""])


def refused(s):
    """Starts s expecting a refusal: (exit status, log text)."""
    try:
        s.start()
    except RuntimeError:
        return s.proc.returncode, s.log_text()
    return 0, s.log_text()


def suggestion(log):
    m = re.search(r'set \[network\] subnet = "(10\.\d+\.0\.0/16)"', log)
    return m.group(1) if m else None


class Sbx:
    """A sandbox with netprobe.py uploaded."""

    def __init__(self, s, **fields):
        self.s = s
        self.id = s.new(**fields)["id"]
        self.x = s.execd(self.id)
        ctype, body = multipart(upload_parts([({"path": "/tmp/netprobe.py"},
                                               open(PROBE, "rb").read())]))
        r = self.x.post("/files/upload", body=body, headers={"Content-Type": ctype})
        if r.status != 200:
            raise RuntimeError("upload netprobe.py -> %d %r" % (r.status, r.body[:300]))

    def probe(self, *probes):
        ev = self.x.sse("/command", json={"command": "%s /tmp/netprobe.py %s" % (
            PY, shlex.quote(json.dumps(probes)))}, timeout=60).events
        out = stdout_lines(ev)
        if len(out) != len(probes):
            raise RuntimeError("netprobe gave %r for %r" % (out, probes))
        return out

    def info(self):
        return json.loads(self.probe(["info"])[0])

    def diag(self):
        r = self.s.get("/v1/sandboxes/%s/diagnostics/logs?scope=network" % self.id)
        return r.json().get("content", "") if r.status == 200 else "HTTP %d" % r.status


# ------------------------------------------------------------ refusals

def test_dummy_address(t):
    sub = free_subnet()
    net = ipaddress.ip_network(sub)
    name = "tsd" + os.urandom(4).hex()[:7]
    addr = "%s/24" % (net.network_address + 7 * 256 + 1)
    s = None
    try:
        # A dummy link where the kernel has the module, else a veth pair
        # (always there: the server's own slots need it).
        if subprocess.run(["ip", "link", "add", name, "type", "dummy"],
                          capture_output=True).returncode != 0:
            ipcmd("link", "add", name, "type", "veth", "peer", "name", name + "p")
        ipcmd("addr", "add", addr, "dev", name)
        ipcmd("link", "set", name, "up")
        s = Server(extra=net_toml(sub))
        rc, log = refused(s)
        t.ok(rc not in (0, None), "a subnet overlapping a dummy link's address: exit %s" % rc, log)
        t.ok("overlaps the host's address %s on %s" % (addr, name) in log,
             "the message names the interface and its address", log[-600:])
        t.ok("listening on" not in log, "it never served", log[-600:])
        free = suggestion(log)
        t.ok(free and is_free(free), "the suggested range %s is free on the host" % free, log)
        prefix = link_prefix(s.state_dir)
        t.ok(not [l for l in host_links() if l.startswith(prefix)],
             "no network slot was built before the refusal")
    finally:
        if s:
            s.stop()
        ipcmd("link", "del", name, check=False)
        serverlib.release_subnet(sub)


def test_blackhole_route(t):
    sub = free_subnet()
    net = ipaddress.ip_network(sub)
    table = str(random.randrange(20000, 60000))
    s = None
    try:
        ipcmd("route", "add", "blackhole", sub, "table", table)
        inner = "%s/20" % (net.network_address + 16 * 256)
        s = Server(extra=net_toml(inner))
        rc, log = refused(s)
        t.ok(rc not in (0, None), "a subnet inside a blackhole route of table %s: exit %s"
             % (table, rc), log)
        t.ok("route %s (blackhole, table %s)" % (sub, table) in log,
             "the message names the route and its table", log[-600:])
        free = suggestion(log)
        t.ok(free and is_free(free) and free != sub, "suggests a free range: %s" % free, log)
    finally:
        if s:
            s.stop()
        ipcmd("route", "del", "blackhole", sub, "table", table, check=False)
        serverlib.release_subnet(sub)


# ------------------------------------------------------------ side by side

def check_sandbox(t, s, sb, subnet, what):
    info = sb.info()
    t.ok(ipaddress.ip_address(info["ip"]) in ipaddress.ip_network(subnet),
         "%s: the sandbox's address %s is in %s" % (what, info["ip"], subnet), info)
    res, direct = sb.probe(["resolve", "name.subnet.test"],
                           ["dns", info["gw"], "other.subnet.test", "udp"])
    t.eq(res, "OK " + ANSWER, "%s: the sandbox resolves a name" % what)
    t.eq(direct, "RCODE 0 " + ANSWER, "%s: it reaches its gateway %s (DNS on it)"
         % (what, info["gw"]))
    return info


def test_side_by_side(t, dns):
    sub_a, sub_b = free_subnet(), free_subnet()
    a = Server(extra=net_toml(sub_a, dns.port))
    b = Server(extra=net_toml(sub_b, dns.port))
    c = None
    try:
        a.start()
        b.start()
        sa, sb = Sbx(a), Sbx(b)
        ia = check_sandbox(t, a, sa, sub_a, "server A")
        check_sandbox(t, b, sb, sub_b, "server B")
        d = sa.diag()
        t.ok("network mode: nat" in d and "sandbox address: %s/30" % ia["ip"] in d and
             "gateway: %s" % ia["gw"] in d and "upstream 127.0.0.1:%d" % dns.port in d and
             "through the server proxy" in d and "egress policy: none" in d,
             "diagnostics scope=network (nat): address, gateway, DNS, endpoints, policy", d)

        # A third server on A's subnet: refused, naming A.
        c = Server(extra=net_toml(sub_a, dns.port))
        rc, log = refused(c)
        hash4 = link_prefix(a.state_dir)[3:]
        t.ok(rc not in (0, None) and
             "another opensandbox-server (state dir hash %s)" % hash4 in log,
             "a second server on the same subnet is refused, naming the other server", log[-800:])
        free = suggestion(log)
        t.ok(free and is_free(free), "and suggests a free range: %s" % free)
        c.stop()
        c = None

        # Restarts with a live sandbox: the server's own links do not count.
        for how, sig in (("SIGKILL", signal.SIGKILL), ("SIGTERM", signal.SIGTERM)):
            a.kill(sig)
            try:
                a.start()
                started = True
            except RuntimeError as e:
                started = False
                t.diag(str(e)[-800:])
            t.ok(started, "restart after %s with a live sandbox is not refused" % how)
            if not started:
                return
            st = a.get_sbx(sa.id).json().get("status", {}).get("state")
            t.eq(st, "Running", "after %s: the sandbox is still Running" % how)
            sa.x = a.execd(sa.id)
            res = sa.probe(["resolve", "again.subnet.test"])[0]
            t.eq(res, "OK " + ANSWER, "after %s: its DNS still answers" % how)
        check_sandbox(t, a, Sbx(a), sub_a, "server A after the restarts")

        # Policy in the diagnostics.
        pol = {"defaultAction": "deny", "egress": [{"action": "allow",
                                                    "target": "name.subnet.test"}]}
        d = Sbx(b, networkPolicy=pol).diag()
        t.ok("egress policy: default deny, 1 rule" in d and "(dns+nft)" in d,
             "diagnostics scope=network shows the egress policy", d)
    finally:
        for s in (a, b, c):
            if s:
                problems = s.stop()
                if problems:
                    t.diag("teardown: %r" % problems)
        serverlib.release_subnet(sub_a)
        serverlib.release_subnet(sub_b)


def test_diag_modes(t, dns):
    sub = free_subnet()
    s = Server(extra=net_toml(sub, dns.port, mode="bridge"))
    try:
        s.start()
        sb = Sbx(s)
        info = sb.info()
        d = sb.diag()
        t.ok("network mode: bridge" in d and "sandbox address: %s/30" % info["ip"] in d and
             "endpoints: the sandbox's own address (%s:<port>)" % info["ip"] in d,
             "diagnostics scope=network (bridge): the sandbox's own address", d)
        t.ok("bridge" in s.log_text() and sub in s.log_text(),
             "the start-up line says bridge on %s" % sub, s.log_text()[-800:])
    finally:
        s.stop()
        serverlib.release_subnet(sub)
    s = Server(extra='[network]\nmode = "none"\n')
    try:
        s.start()
        d = Sbx(s).diag()
        t.ok("network mode: none" in d and "lo (127.0.0.1) only" in d and "gateway" not in d,
             "diagnostics scope=network (none): loopback only", d)
        t.ok("sandbox networking: none" in s.log_text(), "the start-up line says none")
    finally:
        s.stop()


# ------------------------------------------------------------ init-config

def test_init_config(t):
    d = tempfile.mkdtemp(prefix="osb-initcfg-")
    path = os.path.join(d, "sandbox.toml")
    r = subprocess.run([SERVER_BIN, "init-config", path], capture_output=True, text=True)
    t.eq(r.returncode, 0, "init-config PATH", r.stderr)
    text = open(path).read() if os.path.exists(path) else ""
    m = re.search(r'^subnet = "(10\.\d+\.0\.0/16)"$', text, re.M)
    t.ok(m and is_free(m.group(1)), "init-config writes a subnet free on this host: %s"
         % (m and m.group(1)), text[-400:])
    subprocess.run(["rm", "-rf", d])


def main():
    if os.geteuid() != 0:
        t.skip("subnet checks", "needs root")
        t.done()
    dns = Resolver()
    t.run(test_dummy_address, t, timeout=60)
    t.run(test_blackhole_route, t, timeout=60)
    t.run(test_side_by_side, t, dns, timeout=300)
    t.run(test_diag_modes, t, dns, timeout=120)
    t.run(test_init_config, t, timeout=30)
    t.done()


main()
