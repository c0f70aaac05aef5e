#!/usr/bin/python3
"""Network slots (src/net/netns.c, issue #5 "Networking") against the live
kernel: drives build/tests/net/test_net_live (one command per line, see its
header) and checks every property from inside the slots' namespaces with
nsenter. The "internet" is a network namespace made here (veth tinet<pid>,
10.202.0.2, plus 169.254.169.254 routed to it), so no packet leaves the
machine. Everything made here is removed at the end, and the test checks that
the manager itself leaves no netns, veth, address, mount or nft table."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import REPO, TAP, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
LIVE = os.path.join(REPO, BUILD, "tests", "net", "test_net_live")
SUBNET = "10.201.0.0/16"
INET_NS = "osbt-inet-%d" % os.getpid()
INET_IF = "tinet%d" % (os.getpid() % 100000)
INET_HOST, INET_IP, META_IP = "10.202.0.1", "10.202.0.2", "169.254.169.254"
INET_IP2 = "10.202.0.3"  # a second address of the "internet" (deny tests)
PY = "/usr/bin/python3"

# Tiny servers and clients, run with `python3 -c`.
HTTP_SRV = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = self.client_address[0].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
'''
ECHO_SRV = r'''
import socketserver, sys
class E(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile: self.wfile.write(line)
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer((sys.argv[1], int(sys.argv[2])), E).serve_forever()
'''
UDP_ECHO = r'''
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(512); s.sendto(d, a)
'''
GET = r'''
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
    s.sendall(b"GET / HTTP/1.0\r\n\r\n"); d = b""
    while True:
        c = s.recv(4096)
        if not c: break
        d += c
    print("OK " + d.split(b"\r\n\r\n", 1)[1].decode())
except Exception as e: print("FAIL " + type(e).__name__)
'''
UDP_ASK = r'''
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
try:
    s.sendto(b"q", (sys.argv[1], int(sys.argv[2]))); print("OK", s.recv(512).decode())
except Exception as e: print("FAIL " + type(e).__name__)
'''
CONN_CLIENT = r'''
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
for _ in sys.stdin:
    try:
        s.sendall(b"x\n"); d = s.recv(100); print("ok" if d else "closed", flush=True)
    except Exception as e: print("error " + type(e).__name__, flush=True)
'''


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def in_ns(path, code, *args, timeout=10):
    """Runs a python snippet in netns `path` (a pin file; None: here)."""
    ns = [] if path is None else ["nsenter", "--net=" + path]
    r = subprocess.run(ns + [PY, "-c", code] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout)
    return r.stdout.strip() or "FAIL " + r.stderr.strip()[-200:]


class Live:
    def __init__(self):
        self.p = subprocess.Popen([LIVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, OSB_NET_LIVE="1"))

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().strip()
        if not out:
            raise RuntimeError("test_net_live died on: " + line)
        return out

    def must(self, line):
        out = self.cmd(line)
        if not out.startswith("ok"):
            raise RuntimeError("%s -> %s" % (line, out))
        return out[3:]

    def claim(self, sid):
        idx, path, hif, hip, sip = self.must("claim " + sid).split()
        return dict(index=int(idx), path=path, host_if=hif, host_ip=hip, ip=sip.split("/")[0],
                    cidr=sip)

    def kill(self):
        self.p.kill()
        self.p.wait()

    def finish(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


class World:
    """The test's own namespaces and servers."""

    def __init__(self):
        self.procs = []

    def setup(self):
        sh("ip", "netns", "add", INET_NS)
        sh("ip", "link", "add", INET_IF, "type", "veth", "peer", "name", "eth0", "netns", INET_NS)
        sh("ip", "addr", "add", INET_HOST + "/24", "dev", INET_IF)
        sh("ip", "link", "set", INET_IF, "up")
        sh("ip", "route", "replace", META_IP + "/32", "via", INET_IP)
        for c in (["addr", "add", INET_IP + "/24", "dev", "eth0"],
                  ["addr", "add", INET_IP2 + "/24", "dev", "eth0"],
                  ["addr", "add", META_IP + "/32", "dev", "eth0"],
                  ["link", "set", "eth0", "up"], ["link", "set", "lo", "up"],
                  ["route", "add", "default", "via", INET_HOST]):
            sh("ip", "-n", INET_NS, *c)
        self.spawn(["ip", "netns", "exec", INET_NS, PY, "-c", HTTP_SRV, "0.0.0.0", "8080"])
        self.spawn(["ip", "netns", "exec", INET_NS, PY, "-c", ECHO_SRV, INET_IP, "7007"])
        self.spawn([PY, "-c", HTTP_SRV, INET_HOST, "8081"])  # a host service
        time.sleep(0.4)

    def spawn(self, argv):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def teardown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        sh("ip", "route", "del", META_IP + "/32", check=False)
        sh("ip", "link", "del", INET_IF, check=False)
        sh("ip", "netns", "del", INET_NS, check=False)


def leftovers(state, prefix, table):
    """Everything of the manager's that still exists, as a list of strings."""
    left = []
    links = sh("ip", "-o", "link")
    names = [l.split(":")[1].strip().split("@")[0] for l in links.splitlines()]
    left += ["link " + n for n in names if n.startswith(prefix)]
    addrs = sh("ip", "-o", "-4", "addr")
    left += ["addr " + l.split()[3] for l in addrs.splitlines() if " 10.201." in l]
    nsdir = os.path.join(state, "netns")
    if os.path.isdir(nsdir):
        left += ["pin " + n for n in os.listdir(nsdir)]
    with open("/proc/self/mountinfo") as f:
        left += ["mount " + l.split()[4] for l in f if nsdir in l]
    if ("inet " + table) in sh("nft", "list", "tables"):
        left.append("table " + table)
    return left


def main():
    t = TAP()
    if os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("nsenter"):
        t.skip("network slots", "needs root, nft and nsenter")
        t.done()
    if not os.path.exists(LIVE):
        t.ok(False, "test_net_live is built (make %s)" % LIVE)
        t.done()
    state = tempfile.mkdtemp(prefix="osb-netns-", dir=os.path.expanduser("~"))
    world = World()
    live = None
    try:
        world.setup()
        live = Live()
        t.run(scenario, t, live, world, state, timeout=150, name="scenario")
    finally:
        if live and live.p.poll() is None:
            live.kill()
        world.teardown()
        # Whatever a failure left behind: a recovery with nothing in use.
        r = Live()
        r.cmd("open %s %s 1" % (state, SUBNET))
        r.cmd("close")
        r.finish()
        shutil.rmtree(state, ignore_errors=True)
    t.done()


def scenario(t, live, world, state):
    t0 = time.monotonic()
    live.must("open %s %s 4" % (state, SUBNET))
    t.diag("open (recovery + table): %.1f ms" % ((time.monotonic() - t0) * 1000))
    fill = live.must("wait_ready 4")
    t.diag("pool of 4 slots built in %s ms" % fill)
    desc = live.must("stats")
    prefix = desc.split()[1].rstrip(":")
    table = desc.split("table inet ")[1].split()[0]
    t.ok(len(prefix) == 7 and prefix.startswith("osb"), "prefix osb<hash4>: " + prefix)
    empty = table_objects(table)

    a, b = live.claim("sbx-a"), live.claim("sbx-b")
    t.ok(a["index"] != b["index"] and os.path.exists(a["path"]), "two distinct slots claimed")
    addr = sh("nsenter", "--net=" + a["path"], "ip", "-o", "-4", "addr", "show", "eth0")
    t.ok(a["cidr"] in addr, "sandbox end eth0 has " + a["cidr"], addr)
    route = sh("nsenter", "--net=" + a["path"], "ip", "route", "show", "default")
    t.ok(("via " + a["host_ip"]) in route, "default route via the host end", route)
    lo = sh("nsenter", "--net=" + a["path"], "ip", "-o", "link", "show", "lo")
    t.ok("UP" in lo, "lo is up in the slot")

    r = in_ns(a["path"], GET, INET_IP, 8080, 3)
    t.eq(r, "OK " + INET_HOST, "internet server reached via NAT, sees the host address")
    r = in_ns(b["path"], GET, INET_IP, 8080, 3)
    t.eq(r, "OK " + INET_HOST, "second slot reaches the internet too")

    # Isolation.
    srv_b = world.spawn(["nsenter", "--net=" + b["path"], PY, "-c", HTTP_SRV, "0.0.0.0", "8090"])
    time.sleep(0.4)
    t.ok(in_ns(None, GET, b["ip"], 8090, 2).startswith("OK"),
         "control: the host reaches slot B's server")
    t.ok(in_ns(a["path"], GET, b["ip"], 8090, 2).startswith("FAIL"), "slot A cannot reach slot B")
    t.ok(in_ns(a["path"], GET, b["host_ip"], 8090, 2).startswith("FAIL"),
         "slot A cannot reach slot B's host end")
    srv_b.kill()
    t.ok(in_ns(None, GET, INET_HOST, 8081, 2).startswith("OK"),
         "control: the host service answers on " + INET_HOST)
    t.ok(in_ns(a["path"], GET, INET_HOST, 8081, 2).startswith("FAIL"),
         "slot cannot reach a host service on the host's own address")
    world.spawn([PY, "-c", HTTP_SRV, a["host_ip"], "8082"])
    world.spawn([PY, "-c", UDP_ECHO, a["host_ip"], "53"])
    world.spawn([PY, "-c", HTTP_SRV, b["host_ip"], "8082"])
    world.spawn([PY, "-c", UDP_ECHO, b["host_ip"], "53"])
    time.sleep(0.4)
    t.ok(in_ns(a["path"], GET, a["host_ip"], 8082, 2).startswith("FAIL"),
         "slot cannot reach its host end on a port other than 53")
    t.eq(in_ns(a["path"], UDP_ASK, a["host_ip"], 53), "OK q", "DNS (udp 53) to its host end works")
    t.ok(in_ns(a["path"], UDP_ASK, b["host_ip"], 53).startswith("FAIL"),
         "DNS to another slot's host end is refused")
    t.ok(in_ns(None, GET, META_IP, 8080, 2).startswith("OK"),
         "control: the host reaches " + META_IP)
    t.ok(in_ns(a["path"], GET, META_IP, 8080, 2).startswith("FAIL"), "slot cannot reach " + META_IP)
    spoof = sh("nsenter", "--net=" + a["path"], "sh", "-c",
               "ip addr add 10.201.0.66/32 dev eth0 && " + PY + " -c '" +
               "import socket,sys\ns=socket.socket()\ns.settimeout(2)\ns.bind((\"10.201.0.66\",0))\n"
               "try:\n s.connect((\"%s\",8080)); print(\"OK\")\nexcept Exception as e: print(\"FAIL\")'; "
               "ip addr del 10.201.0.66/32 dev eth0" % INET_IP, check=False)
    t.eq(spoof.strip(), "FAIL", "a spoofed source address is dropped")

    egress(t, live, world, a)
    deny(t, live, a)
    shared_sets(t, live, table, empty, a, b)

    # Claim latency from a warm pool.
    live.must("wait_ready 4")
    p50, p99, mx = (float(x) for x in live.must("bench 300").split())
    t.diag("claim latency over 300 claims: p50 %.1f us, p99 %.1f us, max %.1f us" % (p50, p99, mx))

    # Release + close leave nothing behind.
    def tracked(ip):
        return len(sh("conntrack", "-L", "-s", ip, check=False).splitlines())
    if shutil.which("conntrack"):
        in_ns(a["path"], UDP_ASK, a["host_ip"], 53)
        before_b = tracked(b["ip"])
        t.ok(tracked(a["ip"]) > 0, "control: slot A has tracked connections")
        live.must("release sbx-a")
        t.ok(tracked(a["ip"]) == 0 and tracked(b["ip"]) == before_b,
             "release flushes the conntrack entries of that slot only")
    else:
        t.skip("release flushes conntrack", "no conntrack tool")
        live.must("release sbx-a")
    live.must("release sbx-b")
    t.ok(live.cmd("release sbx-b").startswith("err"), "releasing twice is an error")
    live.must("close")
    left = leftovers(state, prefix, table)
    t.ok(not left, "release + close leave no netns, veth, address, mount or table", left)

    crash(t, live, world, state, prefix, table)


def egress(t, live, world, a):
    i = a["index"]
    t1 = time.monotonic()
    live.must("restrict %d 1" % i)
    t.diag("restrict: %.2f ms command round trip" % ((time.monotonic() - t1) * 1000))
    r = in_ns(a["path"], GET, INET_IP, 8080, 2)
    t.ok(r.startswith("FAIL"), "restricted: a destination not allowed is blocked", r)
    t.ok(in_ns(a["path"], UDP_ASK, a["host_ip"], 53) == "OK q", "restricted: DNS still works")
    t1 = time.monotonic()
    live.must("allow %d %s/32 0" % (i, INET_IP))
    t.diag("allow: %.2f ms command round trip" % ((time.monotonic() - t1) * 1000))
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("OK"), "allowed address reachable")
    live.must("allow %d %s/32 0" % (i, INET_IP))  # re-adding is fine
    live.must("reset %d" % i)
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("FAIL"), "reset: blocked again")
    live.must("allow %d 10.202.0.0/24 0" % i)
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("OK"), "allowed CIDR reachable")
    r = live.cmd("allow %d 10.0.0.0/8 0" % i)
    t.ok(r.startswith("err") and "overlaps" in r, "a nested CIDR is refused precisely", r)

    # An established connection is cut by a reset.
    c = subprocess.Popen(["nsenter", "--net=" + a["path"], PY, "-c", CONN_CLIENT, INET_IP, "7007"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        c.stdin.write("\n"); c.stdin.flush()
        t.eq(c.stdout.readline().strip(), "ok", "echo connection established while allowed")
        t2 = time.monotonic()
        live.must("reset %d" % i)
        c.stdin.write("\n"); c.stdin.flush()
        got = c.stdout.readline().strip()
        t.ok(got.startswith("error") or got == "closed",
             "reset cuts the established connection (%s, %.1f ms)" %
             (got, (time.monotonic() - t2) * 1000))
    finally:
        c.kill()
        c.wait()

    # A TTL long enough for one probe on a loaded machine, then wait for
    # the kernel to expire it.
    live.must("allow %d %s 8" % (i, INET_IP))
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("OK"), "entry with an 8 s TTL works")
    t.ok(wait_for(lambda: in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("FAIL"), 60),
         "and expires")
    t.ok(live.cmd("allow %d 10.202.0.1/8 0" % i).startswith("err"), "host bits set: refused")
    t.ok(live.cmd("restrict 9999 1").startswith("err"), "unclaimed slot: refused")
    live.must("restrict %d 0" % i)
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("OK"), "unrestricted again")
    ops = [float(x) for x in live.must("bench_ops %d 100" % i).split()]
    t.diag("policy ops p50: restrict %.1f us, allow %.1f us, reset %.1f us" % tuple(ops))


def reach(a, ip):
    return in_ns(a["path"], GET, ip, 8080, 2).startswith("OK")


def deny(t, live, a):
    """Deny sets: checked first, restricted or not."""
    i = a["index"]
    t.ok(reach(a, INET_IP) and reach(a, INET_IP2), "control: unrestricted slot reaches both")
    live.must("deny %d %s" % (i, INET_IP))
    t.ok(not reach(a, INET_IP), "unrestricted: a denied address is unreachable")
    t.ok(reach(a, INET_IP2), "unrestricted: another address still reachable")
    live.must("deny %d %s" % (i, INET_IP))  # re-adding is fine
    live.must("reset %d" % i)
    t.ok(reach(a, INET_IP), "reset: the denied address is reachable again")
    live.must("deny %d %s/32" % (i, INET_IP2))
    t.ok(not reach(a, INET_IP2) and reach(a, INET_IP), "a denied /32 CIDR is unreachable")
    live.must("reset %d" % i)
    live.must("deny %d 10.202.0.2/31" % i)
    t.ok(not reach(a, INET_IP) and not reach(a, INET_IP2), "a denied /31 covers both addresses")
    r = live.cmd("deny %d 10.202.0.0/24" % i)
    t.ok(r.startswith("err") and "overlaps" in r, "a nested deny CIDR is refused precisely", r)
    t.ok(live.cmd("deny %d 10.202.0.1/8" % i).startswith("err"), "deny: host bits set: refused")
    t.ok(live.cmd("deny 9999 %s" % INET_IP).startswith("err"), "deny: unclaimed slot: refused")
    live.must("reset %d" % i)
    t.ok(reach(a, INET_IP) and reach(a, INET_IP2), "reset: the /31 is reachable again")

    # An established connection to a newly denied address is cut.
    c = subprocess.Popen(["nsenter", "--net=" + a["path"], PY, "-c", CONN_CLIENT, INET_IP, "7007"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        c.stdin.write("\n"); c.stdin.flush()
        t.eq(c.stdout.readline().strip(), "ok", "echo connection established (unrestricted)")
        t2 = time.monotonic()
        live.must("deny %d %s" % (i, INET_IP))
        c.stdin.write("\n"); c.stdin.flush()
        got = c.stdout.readline().strip()
        t.ok(got.startswith("error") or got == "closed",
             "deny cuts the established connection (%s, %.1f ms)" %
             (got, (time.monotonic() - t2) * 1000))
    finally:
        c.kill()
        c.wait()

    # Restricted: the deny sets win over a wider allow.
    live.must("restrict %d 1" % i)
    live.must("allow %d 10.202.0.0/24 0" % i)
    t.ok(not reach(a, INET_IP) and reach(a, INET_IP2),
         "restricted: deny checked before a wider allow")
    live.must("reset %d" % i)
    t.ok(not reach(a, INET_IP) and not reach(a, INET_IP2), "restricted + reset: all blocked")
    live.must("restrict %d 0" % i)
    t.ok(reach(a, INET_IP), "unrestricted, empty sets: reachable")


def table_objects(table):
    """(sets, chains, rules) of the table: what must not grow with the slots."""
    out = sh("nft", "-a", "list", "table", "inet", table)
    sets = len(re.findall(r"^\s*set ", out, re.M))
    chains = len(re.findall(r"^\s*chain ", out, re.M))
    return sets, chains, len(re.findall(r"# handle \d+", out)) - sets - chains - 1


def set_text(table, name):
    return sh("nft", "list", "set", "inet", table, name)


def shared_sets(t, live, table, empty, a, b):
    """Slots are elements of shared sets: the table's sets, chains and rules
    stay as they were with no slot, and a reset removes exactly the slot's
    own elements."""
    t.eq(table_objects(table), empty, "claimed slots add no set, chain or rule")
    ia, ib = a["index"], b["index"]
    live.must("allow %d 10.203.0.0/24 0" % ia)
    live.must("allow %d 10.204.0.7/32 600" % ia)
    live.must("allow %d 10.204.0.7/32 600" % ib)  # the same destination for another slot
    live.must("deny %d 10.205.0.0/16" % ib)
    t.eq(table_objects(table), empty, "allow and deny entries add no set, chain or rule")
    a4 = set_text(table, "a4")
    t.ok(("%s . 10.204.0.7" % a["ip"]) in a4 and ("%s . 10.204.0.7" % b["ip"]) in a4,
         "a single address is keyed by each slot's sandbox address", a4)
    live.must("reset %d" % ia)
    a4, c4, dc4 = set_text(table, "a4"), set_text(table, "c4"), set_text(table, "dc4")
    t.ok(a["ip"] + " . " not in a4 + c4, "reset removes the slot's allow entries", a4 + c4)
    t.ok(("%s . 10.204.0.7" % b["ip"]) in a4 and ("%s . 10.205.0.0/16" % b["ip"]) in dc4,
         "and leaves another slot's entries alone", a4 + dc4)
    live.must("reset %d" % ib)
    t.ok(b["ip"] + " . " not in set_text(table, "a4") + set_text(table, "dc4"),
         "the other slot's reset removes its allow and deny entries")


def crash(t, live, world, state, prefix, table):
    p = Live()
    p.must("open %s %s 2" % (state, SUBNET))
    a, b = p.claim("sbx-a"), p.claim("sbx-b")
    p.must("restrict %d 1" % a["index"])
    p.must("wait_ready 2")
    p.kill()  # SIGKILL: no cleanup at all
    t.ok(leftovers(state, prefix, table), "after SIGKILL the slots are still there")
    t.ok(in_ns(b["path"], GET, INET_IP, 8080, 3).startswith("OK"), "and B still has network")

    # Restart with A still in use: A survives, restricted; the rest is removed.
    p = Live()
    p.must("inuse sbx-a %d 1" % a["index"])
    p.must("open %s %s 1" % (state, SUBNET))
    t.ok(os.path.exists(a["path"]) and
         a["cidr"] in sh("nsenter", "--net=" + a["path"], "ip", "-o", "-4", "addr"),
         "in-use slot kept across the restart")
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("FAIL"), "and still restricted")
    t.ok(p.cmd("claim sbx-a").startswith("err"), "its sandbox id is still taken")
    p.must("allow %d %s 0" % (a["index"], INET_IP))
    t.ok(in_ns(a["path"], GET, INET_IP, 8080, 2).startswith("OK"), "allow works after restart")
    p.must("close")
    left = leftovers(state, prefix, table)
    t.ok(("link " + a["host_if"]) in left and ("table " + table) in left and len(
        [x for x in left if x.startswith("link")]) == 1,
        "close keeps only the claimed slot and the table", left)
    p.finish()

    # Restart with nothing in use: everything goes.
    p = Live()
    p.must("open %s %s 1 %s/32" % (state, SUBNET, META_IP))
    c = p.claim("sbx-c")
    t.ok(in_ns(c["path"], GET, META_IP, 8080, 2).startswith("OK"),
         "allow_host_cidrs lets a slot reach " + META_IP)
    p.must("release sbx-c")
    p.must("close")
    p.finish()
    left = leftovers(state, prefix, table)
    t.ok(not left, "recovery with an empty in-use list removes everything", left)


if __name__ == "__main__":
    main()
