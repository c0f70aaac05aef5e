#!/usr/bin/python3
"""The host-side DNS forwarder (src/net/dns.c) against a fake upstream.

The forwarder runs in the driver build/tests/net/test_dns_live (commands on
its stdin, learned addresses on its stdout); the upstream is a Python DNS
server on 127.0.0.1 answering from a small zone and counting the queries it
gets. Sandboxes listen on 127.0.0.2 and 127.0.0.3. Only loopback is used."""
import os
import random
import select
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, os.environ.get("BUILD", "build"), "tests/net/test_dns_live")

A, CNAME, TXT, AAAA = 1, 5, 16, 28
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP = 0, 1, 2, 3, 4

# name -> list of (type, ttl, value)
ZONE = {
    "allowed.test": [(A, 300, "10.99.0.10"), (AAAA, 120, "2001:db8::10"),
                     (TXT, 60, "hello")],
    "denied.test": [(A, 300, "10.99.0.11")],
    "a.wild.test": [(A, 60, "10.99.0.12")],
    "b.c.wild.test": [(A, 60, "10.99.0.14")],
    "wild.test": [(A, 60, "10.99.0.13")],
}
CNAMES = {"cname.test": "allowed.test"}


# ---------------------------------------------------------------- wire format

def enc_name(name):
    out = b""
    for label in name.rstrip(".").split("."):
        if label:
            out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def read_name(msg, off):
    labels, jumped, end = [], False, None
    for _ in range(128):
        n = msg[off]
        if n & 0xC0 == 0xC0:
            if end is None:
                end = off + 2
            off = ((n & 0x3F) << 8) | msg[off + 1]
            continue
        if n == 0:
            break
        labels.append(msg[off + 1:off + 1 + n].decode("latin-1"))
        off += 1 + n
    return ".".join(labels), (end if end is not None else off + 1)


def build_query(name, qtype=A, qid=None, flags=0x0100, qd=1):
    qid = random.randrange(65536) if qid is None else qid
    return struct.pack(">HHHHHH", qid, flags, qd, 0, 0, 0) + enc_name(name) + \
        struct.pack(">HH", qtype, 1)


def parse(msg):
    qid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", msg[:12])
    off, qs = 12, []
    for _ in range(qd):
        name, off = read_name(msg, off)
        qtype, qclass = struct.unpack(">HH", msg[off:off + 4])
        off += 4
        qs.append((name, qtype))
    answers = []
    for _ in range(an):
        name, off = read_name(msg, off)
        rtype, rclass, ttl, rdlen = struct.unpack(">HHIH", msg[off:off + 10])
        off += 10
        rdata = msg[off:off + rdlen]
        if rtype == A:
            val = socket.inet_ntop(socket.AF_INET, rdata)
        elif rtype == AAAA:
            val = socket.inet_ntop(socket.AF_INET6, rdata)
        elif rtype == CNAME:
            val = read_name(msg, off)[0]
        else:
            val = rdata
        off += rdlen
        answers.append((name, rtype, ttl, val))
    return {"id": qid, "flags": flags, "rcode": flags & 0xF, "qr": bool(flags & 0x8000),
            "questions": qs, "answers": answers, "raw": msg}


def rr(name, rtype, ttl, value):
    if rtype == A:
        data = socket.inet_pton(socket.AF_INET, value)
    elif rtype == AAAA:
        data = socket.inet_pton(socket.AF_INET6, value)
    elif rtype == CNAME:
        data = enc_name(value)
    else:
        data = bytes([len(value)]) + value.encode()
    return enc_name(name) + struct.pack(">HHIH", rtype, 1, ttl, len(data)) + data


def answer(query):
    """The fake zone's answer to a query (bytes), echoing the question as sent."""
    qid, flags = struct.unpack(">HH", query[:4])
    name, off = read_name(query, 12)
    qtype = struct.unpack(">H", query[off:off + 2])[0]
    question = query[12:off + 4]
    key = name.lower()
    records = []
    if key in CNAMES:
        records.append(rr(name, CNAME, 30, CNAMES[key]))
        key = CNAMES[key]
    if key not in ZONE:
        rcode, records = NXDOMAIN, []
    else:
        rcode = NOERROR
        records += [rr(key, ty, ttl, v) for ty, ttl, v in ZONE[key] if ty == qtype]
    head = struct.pack(">HHHHHH", qid, 0x8180 | (flags & 0x0100) | rcode, 1, len(records), 0, 0)
    return head + question + b"".join(records)


# ---------------------------------------------------------------- fake upstream

class Upstream:
    """UDP + TCP DNS server on 127.0.0.1 answering from ZONE. mute=True:
    receive and count, never answer (a resolver that hangs)."""

    def __init__(self, mute=False):
        self.mute = mute
        self.counts = {}
        self.lock = threading.Lock()
        # One port for UDP and TCP: a free UDP port may be busy for TCP, so
        # try another until both bind.
        for _ in range(50):
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket()
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        self.tcp.listen(16)
        self.stop = False
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def addr(self):
        return "127.0.0.1:%d" % self.port

    def count(self, name):
        with self.lock:
            return self.counts.get(name.lower().rstrip("."), 0)

    def note(self, query):
        name = read_name(query, 12)[0].lower()
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1

    def serve_tcp(self, c):
        c.settimeout(5)
        try:
            while True:
                head = c.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return
                n = struct.unpack(">H", head)[0]
                q = c.recv(n, socket.MSG_WAITALL)
                self.note(q)
                if not self.mute:
                    a = answer(q)
                    c.sendall(struct.pack(">H", len(a)) + a)
        except OSError:
            pass
        finally:
            c.close()

    def loop(self):
        while not self.stop:
            r, _, _ = select.select([self.udp, self.tcp], [], [], 0.1)
            if self.udp in r:
                q, peer = self.udp.recvfrom(65535)
                self.note(q)
                if not self.mute:
                    self.udp.sendto(answer(q), peer)
            if self.tcp in r:
                c, _ = self.tcp.accept()
                threading.Thread(target=self.serve_tcp, args=(c,), daemon=True).start()

    def close(self):
        self.stop = True
        self.th.join()
        self.udp.close()
        self.tcp.close()


def closed_port():
    """A UDP port on 127.0.0.1 with nothing behind it (ICMP unreachable)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- the driver

class Driver:
    def __init__(self, upstreams, port, timeout_ms=None):
        env = dict(os.environ, OSB_DNS_LIVE_UPSTREAMS=",".join(upstreams),
                   OSB_DNS_LIVE_PORT=str(port))
        if timeout_ms:
            env["OSB_DNS_LIVE_TIMEOUT_MS"] = str(timeout_ms)
        self.port = port
        self.p = subprocess.Popen([DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()
        if not self.wait_line(lambda l: l == "# ready", 5):
            raise RuntimeError("driver did not start: %r" % self.lines)

    def reader(self):
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait_line(self, pred, timeout, start=0):
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for l in self.lines[start:]:
                    if pred(l):
                        return l
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def cmd(self, line):
        with self.cv:
            start = len(self.lines)
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        got = self.wait_line(lambda l: l.startswith("# done") or l.startswith("# error"), 5,
                             start)
        if not got or not got.startswith("# done"):
            raise RuntimeError("%s -> %r" % (line, got))

    def learned(self, key=None):
        with self.cv:
            out = []
            for l in self.lines:
                if l.startswith("# learn "):
                    _, _, k, addr, ttl = l.split(" ")[:5]
                    if key is None or k == key:
                        out.append((addr, int(ttl)))
            return out

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        rc = self.p.wait(10)
        time.sleep(0.05)
        with self.cv:
            return rc, list(self.lines), self.p.stderr.read()


def udp_query(ip, port, msg, timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        s.sendto(msg, (ip, port))
        data, _ = s.recvfrom(65535)
        return parse(data), time.monotonic() - t0
    except socket.timeout:
        return None, time.monotonic() - t0
    finally:
        s.close()


def q(ip, port, name, qtype=A, timeout=5.0):
    return udp_query(ip, port, build_query(name, qtype), timeout)[0]


def tcp_queries(ip, port, msgs, timeout=5.0):
    s = socket.create_connection((ip, port), timeout=timeout)
    try:
        s.sendall(b"".join(struct.pack(">H", len(m)) + m for m in msgs))
        out = []
        for _ in msgs:
            head = s.recv(2, socket.MSG_WAITALL)
            n = struct.unpack(">H", head)[0]
            out.append(parse(s.recv(n, socket.MSG_WAITALL)))
        return out
    finally:
        s.close()


def addrs(resp, rtype=A):
    return [a[3] for a in resp["answers"] if a[1] == rtype] if resp else None


def free_dns_port():
    for _ in range(50):
        port = random.randrange(20000, 60000)
        ok = True
        for ip in ("127.0.0.2", "127.0.0.3"):
            for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
                s = socket.socket(socket.AF_INET, kind)
                try:
                    s.bind((ip, port))
                except OSError:
                    ok = False
                finally:
                    s.close()
        if ok:
            return port
    raise RuntimeError("no free port")


POLICY1 = ('{"defaultAction":"deny","egress":['
           '{"action":"allow","target":"allowed.test"},'
           '{"action":"allow","target":"*.wild.test"},'
           '{"action":"allow","target":"cname.test"}]}')
IP1, IP2 = "127.0.0.2", "127.0.0.3"


# ---------------------------------------------------------------- tests

def test_policy_answers(d, up):
    r = q(IP1, d.port, "allowed.test")
    t.eq(r and r["rcode"], NOERROR, "allowed name resolves")
    t.eq(addrs(r), ["10.99.0.10"], "with the upstream's address")
    t.ok(r and r["qr"] and r["flags"] & 0x0080, "QR and RA set")
    t.ok(wait_for(lambda: ("10.99.0.10", 300) in d.learned("sb1"), 60),
         "learned 10.99.0.10 with TTL 300", d.learned())

    n0 = up.count("denied.test")
    r = q(IP1, d.port, "denied.test")
    t.eq(r and r["rcode"], NXDOMAIN, "denied name -> NXDOMAIN")
    t.eq(r and r["questions"], [("denied.test", A)], "question echoed")
    t.eq(r and r["answers"], [], "no answers")
    t.eq(up.count("denied.test"), n0, "denied name never reaches upstream")
    t.ok(("10.99.0.11", 300) not in d.learned(), "nothing learned for a denied name")

    r = q(IP1, d.port, "a.wild.test")
    t.eq(addrs(r), ["10.99.0.12"], "wildcard: subdomain resolves")
    r = q(IP1, d.port, "b.c.wild.test")
    t.eq(addrs(r), ["10.99.0.14"], "wildcard: deeper subdomain resolves")
    n0 = up.count("wild.test")
    r = q(IP1, d.port, "wild.test")
    t.eq(r and r["rcode"], NXDOMAIN, "wildcard does not cover the apex")
    t.eq(up.count("wild.test"), n0, "apex query not forwarded")

    r = q(IP1, d.port, "ALLOWED.Test.")
    t.eq(addrs(r), ["10.99.0.10"], "case-insensitive, trailing dot")
    t.eq(r and r["questions"], [("ALLOWED.Test", A)], "question case preserved")

    r = q(IP1, d.port, "allowed.test", AAAA)
    t.eq(addrs(r, AAAA), ["2001:db8::10"], "AAAA resolves")
    t.ok(wait_for(lambda: ("2001:db8::10", 120) in d.learned("sb1"), 60), "AAAA learned")

    n0 = up.count("allowed.test")
    r = q(IP1, d.port, "allowed.test", TXT)
    t.ok(r and r["rcode"] == NOERROR and [a for a in r["answers"] if a[1] == TXT],
         "other types (TXT) are forwarded", r)
    t.eq(up.count("allowed.test"), n0 + 1, "TXT reached upstream")

    r = q(IP1, d.port, "cname.test")
    t.eq(r and [a[1] for a in r["answers"]], [CNAME, A], "CNAME chain relayed")
    before = len([x for x in d.learned("sb1") if x[0] == "10.99.0.10"])
    t.ok(before >= 2, "address at the end of the CNAME chain learned", d.learned())

    r = q(IP1, d.port, "nothere.test")
    t.eq(r and r["rcode"], NXDOMAIN, "denied by default")


def test_tcp(d, up):
    msgs = [build_query("allowed.test"), build_query("denied.test"),
            build_query("a.wild.test", AAAA)]
    n0 = up.count("allowed.test")
    rs = tcp_queries(IP1, d.port, msgs)
    by_id = {r["id"]: r for r in rs}
    ids = [struct.unpack(">H", m[:2])[0] for m in msgs]
    t.eq(addrs(by_id.get(ids[0])), ["10.99.0.10"], "TCP: allowed resolves")
    t.eq(by_id.get(ids[1], {}).get("rcode"), NXDOMAIN, "TCP: denied -> NXDOMAIN")
    t.eq(by_id.get(ids[2], {}).get("rcode"), NOERROR, "TCP: pipelined third query answered")
    t.eq(up.count("allowed.test"), n0 + 1, "TCP query forwarded once")


def test_garbage(d, up):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    junk = [b"", b"\x00", b"\x12\x34" * 3, os.urandom(11), os.urandom(512),
            build_query("allowed.test")[:-3],
            build_query("allowed.test", flags=0x8180)]  # a response: dropped
    for _ in range(200):
        junk.append(os.urandom(random.randrange(12, 300)))
    for m in junk:
        s.sendto(m, (IP1, d.port))
    time.sleep(0.3)
    s.close()
    r, _ = udp_query(IP1, d.port, build_query("allowed.test", qd=2))
    t.eq(r and r["rcode"], FORMERR, "two questions -> FORMERR")
    r, _ = udp_query(IP1, d.port, build_query("allowed.test", flags=0x2900))
    t.eq(r and r["rcode"], NOTIMP, "opcode UPDATE -> NOTIMP")
    r, _ = udp_query(IP1, d.port, build_query("allowed.test", qid=7)[:-3])
    t.eq(r and (r["id"], r["rcode"]), (7, FORMERR), "truncated question -> FORMERR, same id")
    r, _ = udp_query(IP1, d.port, build_query("allowed.test", flags=0x8100), timeout=0.5)
    t.eq(r, None, "a response sent as a query is dropped")
    # a TCP stream of garbage, then a good query on a new connection
    c = socket.create_connection((IP1, d.port), timeout=2)
    c.sendall(b"\x00\x05hello\x00\x00" + os.urandom(300))
    c.close()
    t.eq(addrs(q(IP1, d.port, "allowed.test")), ["10.99.0.10"], "still answers after garbage")
    t.ok(d.p.poll() is None, "forwarder alive")


def test_policy_change(d, up):
    d.cmd('policy sb1 {"defaultAction":"allow","egress":[{"action":"deny","target":"allowed.test"}]}')
    r = q(IP1, d.port, "allowed.test")
    t.eq(r and r["rcode"], NXDOMAIN, "after PATCH-like change: allowed.test denied")
    t.eq(addrs(q(IP1, d.port, "denied.test")), ["10.99.0.11"], "default allow now")
    t.ok(wait_for(lambda: ("10.99.0.11", 300) in d.learned("sb1"), 60), "learned under new policy")
    d.cmd("policy sb1")
    t.eq(addrs(q(IP1, d.port, "allowed.test")), ["10.99.0.10"], "no policy: everything allowed")
    d.cmd("policy sb1 {}")
    r = q(IP1, d.port, "allowed.test")
    t.eq(r and r["rcode"], NXDOMAIN, "{} policy: deny all")
    d.cmd("policy sb1 " + POLICY1)


def test_two_sandboxes(d, up):
    d.cmd('serve sb2 %s {"defaultAction":"allow","egress":[{"action":"deny","target":"allowed.test"}]}'
          % IP2)
    t.eq(q(IP2, d.port, "allowed.test")["rcode"], NXDOMAIN, "sb2 has its own policy")
    t.eq(addrs(q(IP1, d.port, "allowed.test")), ["10.99.0.10"], "sb1 unaffected")
    t.eq(addrs(q(IP2, d.port, "a.wild.test")), ["10.99.0.12"], "sb2 default allow")
    t.ok(wait_for(lambda: ("10.99.0.12", 60) in d.learned("sb2"), 60), "learned under key sb2")
    d.cmd("stop sb2")
    r, _ = udp_query(IP2, d.port, build_query("a.wild.test"), timeout=0.5)
    t.eq(r, None, "stopped sandbox gets no answer")
    t.eq(addrs(q(IP1, d.port, "allowed.test")), ["10.99.0.10"], "sb1 still served")
    d.cmd('serve sb2 %s' % IP2)
    t.eq(addrs(q(IP2, d.port, "allowed.test")), ["10.99.0.10"], "sb2 served again after stop")


def test_failover(up):
    mute = Upstream(mute=True)
    port = free_dns_port()
    d = Driver(["127.0.0.1:%d" % closed_port(), mute.addr(), up.addr()], port)
    try:
        d.cmd("serve s %s" % IP1)
        r, dt = udp_query(IP1, port, build_query("allowed.test"), timeout=8)
        t.eq(addrs(r), ["10.99.0.10"], "refused, then hanging, then good upstream: answered")
        t.ok(dt >= 1.8, "only after the 2 s timeout of the hanging one (%.2f s)" % dt)
        t.eq(mute.count("allowed.test"), 1, "the hanging upstream was asked once")
        rs = tcp_queries(IP1, port, [build_query("a.wild.test")], timeout=8)
        t.eq(addrs(rs[0]), ["10.99.0.12"], "TCP fails over the same way")
    finally:
        rc, lines, err = d.quit()
        t.eq(rc, 0, "failover driver exits cleanly")
        mute.close()


def test_all_down():
    mute = Upstream(mute=True)
    port = free_dns_port()
    d = Driver([mute.addr()], port)
    d2 = Driver(["127.0.0.1:%d" % closed_port()], free_dns_port())
    try:
        d.cmd("serve s %s" % IP1)
        d2.cmd("serve s %s" % IP2)
        # Both asked at once: the refusing upstream's SERVFAIL comes first,
        # the hanging one's only after its 2 s timeout.
        got, order = {}, []

        def ask(key, ip, p):
            got[key] = udp_query(ip, p, build_query("allowed.test"), timeout=30)
            order.append(key)
        ths = [threading.Thread(target=ask, args=a)
               for a in (("hang", IP1, port), ("refuse", IP2, d2.port))]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        r, dt = got["hang"]
        t.eq(r and r["rcode"], SERVFAIL, "hanging upstream -> SERVFAIL")
        t.ok(dt >= 1.8, "only after the 2 s timeout (%.2f s)" % dt)
        t.eq(r and r["questions"], [("allowed.test", A)], "SERVFAIL echoes the question")
        r, dt = got["refuse"]
        t.eq(r and r["rcode"], SERVFAIL, "refusing upstream -> SERVFAIL")
        t.eq(order, ["refuse", "hang"], "at once: before the hanging upstream's timeout")
        r = tcp_queries(IP1, port, [build_query("allowed.test")], timeout=8)[0]
        t.eq(r["rcode"], SERVFAIL, "TCP: hanging upstream -> SERVFAIL")
    finally:
        for x in (d, d2):
            rc, lines, err = x.quit()
            t.eq(rc, 0, "driver exits cleanly")
        mute.close()


def test_stop_in_flight():
    """Stopping a sandbox with queries in flight (and quitting with them)
    must free everything: the driver checks uv_loop_close."""
    mute = Upstream(mute=True)
    port = free_dns_port()
    d = Driver([mute.addr()], port)
    d.cmd("serve s %s" % IP1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(20):
        s.sendto(build_query("allowed.test"), (IP1, port))
    c = socket.create_connection((IP1, port), timeout=2)
    c.sendall(struct.pack(">H", 29) + build_query("allowed.test"))
    wait_for(lambda: mute.count("allowed.test") >= 21, 2)
    d.cmd("stop s")
    d.cmd("serve s %s" % IP1)
    for i in range(5):
        s.sendto(build_query("allowed.test"), (IP1, port))
    time.sleep(0.2)
    rc, lines, err = d.quit()
    t.eq(rc, 0, "quit with queries in flight")
    t.ok("ok - every handle closed" in lines, "every handle closed", err[-2000:])
    s.close()
    c.close()
    mute.close()


def main():
    if not os.path.exists(DRIVER):
        t.skip("dns forwarder", "%s not built" % DRIVER)
        return
    up = Upstream()
    port = free_dns_port()
    d = Driver([up.addr()], port)
    try:
        d.cmd("serve sb1 %s %s" % (IP1, POLICY1))
        t.run(test_policy_answers, d, up)
        t.run(test_tcp, d, up)
        t.run(test_garbage, d, up)
        t.run(test_policy_change, d, up)
        t.run(test_two_sandboxes, d, up)
    finally:
        rc, lines, err = d.quit()
        t.eq(rc, 0, "driver exits 0")
        t.ok("ok - every handle closed" in lines, "every handle closed", err[-2000:])
        t.ok("ERROR: AddressSanitizer" not in err and "runtime error" not in err,
             "no sanitizer report", err[-2000:])
    t.run(test_failover, up, timeout=30)
    t.run(test_all_down, timeout=30)
    t.run(test_stop_in_flight, timeout=30)
    up.close()


t.run(main, timeout=120)
t.done()
