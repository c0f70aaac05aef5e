"""A fake internet for the sandbox networking tests (test_egress.py) and
bench/net_bench.py. No packet leaves the machine: everything lives in a
network namespace made here and on a veth pair to it.

    with FakeInternet() as inet:
        inet.ns                  netns name ("osbt-inet-<rand>")
        HOST_IP                  10.203.0.1, the host end of the link (the NAT source)
        DNS_IP                   10.203.0.2, a DNS server on UDP+TCP 53 with ZONE
        ZONE                     name -> A address (HTTP servers on :80 of each)
        ECHO_PORT                TCP line echo on every zone address
        SINK_IP, SINK_PORT       TCP sink: reads to EOF, answers the byte count
        META_IP                  169.254.203.1 (link-local, routed to the netns)
        inet.clients(ip)         client addresses the HTTP server on ip has seen
        inet.run(code, *args)    python code run inside the netns -> stdout

Each HTTP server answers "<its own address> <client address>". Both the DNS
and HTTP servers log to a file in the temp dir (read back by clients()).

    host_service(ip, port=0) -> HostService: an HTTP server in the host netns
        (a thread of the test process) bound to ip; .port, .hits, .close()

Needs root, `ip` and python3 at /usr/bin/python3."""
import http.server
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

PY = "/usr/bin/python3"
HOST_IP, DNS_IP = "10.203.0.1", "10.203.0.2"
META_IP = "169.254.203.1"
ZONE = {
    "allowed.test": "10.203.0.10",
    "denied.test": "10.203.0.11",
    "a.wild.test": "10.203.0.12",
    "b.c.wild.test": "10.203.0.12",
    "wild.test": "10.203.0.13",
}
ECHO_PORT = 7007
SINK_IP, SINK_PORT = DNS_IP, 9000

# Everything that runs inside the fake internet, one process: argv[1] is the
# log file, argv[2:] the HTTP addresses.
SERVE = r'''
import json, socket, socketserver, struct, sys, threading, http.server
LOG = open(sys.argv[1], "a", buffering=1)
lock = threading.Lock()
def log(**kw):
    with lock:
        LOG.write(json.dumps(kw) + "\n")
ZONE = json.loads(sys.argv[2])
def read_name(m, off):
    labels = []
    while m[off]:
        labels.append(m[off + 1:off + 1 + m[off]].decode("latin-1")); off += 1 + m[off]
    return ".".join(labels), off + 1
def answer(q):
    qid, flags = struct.unpack(">HH", q[:4])
    name, off = read_name(q, 12)
    qtype = struct.unpack(">H", q[off:off + 2])[0]
    ip = ZONE.get(name.lower().rstrip("."))
    rcode = 0 if ip else 3
    recs = b""
    if ip and qtype == 1:
        recs = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(ip)
    return struct.pack(">HHHHHH", qid, 0x8580 | (flags & 0x0100) | rcode, 1,
                       1 if recs else 0, 0, 0) + q[12:off + 4] + recs, name, rcode
def udp_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[3], 53))
    while True:
        q, peer = s.recvfrom(4096)
        try:
            a, name, rc = answer(q)
        except Exception:
            continue
        log(kind="dns", proto="udp", name=name, client=peer[0], rcode=rc)
        s.sendto(a, peer)
class TcpDns(socketserver.BaseRequestHandler):
    def handle(self):
        c = self.request
        while True:
            h = c.recv(2, socket.MSG_WAITALL)
            if len(h) < 2: return
            q = c.recv(struct.unpack(">H", h)[0], socket.MSG_WAITALL)
            a, name, rc = answer(q)
            log(kind="dns", proto="tcp", name=name, client=self.client_address[0], rcode=rc)
            c.sendall(struct.pack(">H", len(a)) + a)
class Http(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        me, peer = self.connection.getsockname()[0], self.client_address[0]
        log(kind="http", server=me, client=peer)
        b = ("%s %s" % (me, peer)).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a): pass
class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        log(kind="echo", server=self.connection.getsockname()[0], client=self.client_address[0])
        for line in self.rfile:
            self.wfile.write(line); self.wfile.flush()
class Sink(socketserver.BaseRequestHandler):
    def handle(self):
        n = 0
        while True:
            d = self.request.recv(1 << 20)
            if not d: break
            n += len(d)
        self.request.sendall(str(n).encode())
class T(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
srvs = [T((sys.argv[3], 53), TcpDns), T((sys.argv[3], SINK_PORT), Sink)]
for ip in sys.argv[4:]:
    srvs += [T((ip, 80), Http), T((ip, ECHO_PORT), Echo)]
threading.Thread(target=udp_dns, daemon=True).start()
for s in srvs:
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
'''.replace("SINK_PORT", str(SINK_PORT)).replace("ECHO_PORT", str(ECHO_PORT))


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r.stdout


def available():
    """None when a fake internet can be built here, else why not."""
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            return "needs %s" % tool
    if not os.path.exists(PY):
        return "needs " + PY
    return None


def read_events(path, kind=None):
    """The JSON lines of a server log (one event each), oldest first; only
    those whose "kind" is kind when given. Torn or foreign lines are skipped."""
    import json
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if kind is None or ev.get("kind") == kind:
                    out.append(ev)
    except OSError:
        pass
    return out


class FakeInternet:
    def __init__(self):
        tag = os.urandom(3).hex()
        self.ns = "osbt-inet-" + tag
        self.ifname = "tinet" + tag  # <= 15 chars
        self.tmp = tempfile.mkdtemp(prefix="osb-inet-")
        self.log = os.path.join(self.tmp, "inet.log")
        self.proc = None
        self.meta_route = False

    def setup(self):
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.ifname, "type", "veth", "peer", "name", "eth0",
           "netns", self.ns)
        sh("ip", "addr", "add", HOST_IP + "/24", "dev", self.ifname)
        sh("ip", "link", "set", self.ifname, "up")
        inside = [["addr", "add", DNS_IP + "/24", "dev", "eth0"]]
        inside += [["addr", "add", ip + "/32", "dev", "eth0"]
                   for ip in sorted(set(ZONE.values()))]
        inside += [["addr", "add", META_IP + "/32", "dev", "eth0"],
                   ["link", "set", "eth0", "up"], ["link", "set", "lo", "up"],
                   ["route", "add", "default", "via", HOST_IP]]
        for c in inside:
            sh("ip", "-n", self.ns, *c)
        # A host route for the link-local test address, so a sandbox that
        # is wrongly let through reaches this netns and nothing else.
        sh("ip", "route", "replace", META_IP + "/32", "via", DNS_IP)
        self.meta_route = True
        import json
        ips = sorted(set(ZONE.values())) + [META_IP]
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, PY, "-c", SERVE, self.log,
                                      json.dumps(ZONE), DNS_IP] + ips,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("fake internet servers did not start: " +
                               self.proc.stderr.read()[-2000:])
        return self

    def run(self, code, *args, timeout=20):
        r = subprocess.run(["ip", "netns", "exec", self.ns, PY, "-c", code] +
                           [str(a) for a in args], capture_output=True, text=True,
                           timeout=timeout)
        return r.stdout.strip() or "FAIL " + r.stderr.strip()[-300:]

    def events(self, kind=None):
        return read_events(self.log, kind)

    def clients(self, server_ip):
        return [e["client"] for e in self.events("http") if e.get("server") == server_ip]

    def teardown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.meta_route:
            sh("ip", "route", "del", META_IP + "/32", check=False)
        sh("ip", "link", "del", self.ifname, check=False)
        sh("ip", "netns", "del", self.ns, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        try:
            return self.setup()
        except BaseException:
            self.teardown()
            raise

    def __exit__(self, *a):
        self.teardown()
        return False


class _Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        self.server.hits.append(self.client_address[0])
        b = b"host service"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


class HostService:
    """An HTTP server in the host's network namespace (a 'host service')."""

    def __init__(self, ip, port=0):
        self.srv = http.server.ThreadingHTTPServer((ip, port), _Quiet)
        self.srv.daemon_threads = True
        self.srv.hits = []
        self.hits = self.srv.hits
        self.ip, self.port = ip, self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def host_service(ip, port=0):
    return HostService(ip, port)


def wait_port(ip, port, timeout=5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection((ip, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False
