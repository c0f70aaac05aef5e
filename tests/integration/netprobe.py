"""Network probes run INSIDE a sandbox (uploaded by test_egress.py and
bench/net_bench.py, run with /usr/bin/python3): stdlib only.

    netprobe.py '<json list of probes>'    runs them in parallel, prints one
                                           result line per probe, in order
Probes (each a JSON list):
    ["info"]                    {"ip", "nameservers", "gw"} as JSON
    ["resolve", name]           getaddrinfo (the libc resolver, /etc/resolv.conf):
                                "OK ip[,ip]" | "ERR NONAME" (NXDOMAIN) | "ERR AGAIN" | "ERR <n>"
    ["dns", server, name, "udp"|"tcp"]
                                a raw A query: "RCODE n ip[,ip]" | "FAIL <exception>"
    ["get", host, port]         HTTP/1.0 GET /: "OK <body>" | "FAIL <exception>"
    ["hold", host, port, file]  resolve + connect to a line echo, then every 0.1 s send a
                                line and wait for it; appends "<unix time> ok|closed|error X"
                                to file, stops at the first failure (or after 120 s)
    ["send", host, port, nbytes] send nbytes to a sink, wait for its count:
                                "OK <bytes> <seconds>" | "FAIL <exception>"
Timeouts are 2 s."""
import json
import random
import socket
import struct
import sys
import threading
import time

T = 2.0


def resolve(name):
    try:
        ai = socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
        return "OK " + ",".join(sorted({a[4][0] for a in ai}))
    except socket.gaierror as e:
        names = {socket.EAI_NONAME: "NONAME", socket.EAI_AGAIN: "AGAIN"}
        return "ERR " + names.get(e.errno, str(e.errno))


def recvall(s, n):
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        if not c:
            raise EOFError("short read")
        d += c
    return d


def skip_name(m, off):
    while True:
        n = m[off]
        if n & 0xC0 == 0xC0:
            return off + 2
        if n == 0:
            return off + 1
        off += 1 + n


def dns(server, name, proto="udp"):
    q = struct.pack(">HHHHHH", random.randrange(65536), 0x100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    q += struct.pack(">HH", 1, 1)
    try:
        if proto == "tcp":
            s = socket.create_connection((server, 53), timeout=T)
            s.sendall(struct.pack(">H", len(q)) + q)
            a = recvall(s, struct.unpack(">H", recvall(s, 2))[0])
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(T)
            s.sendto(q, (server, 53))
            a = s.recv(4096)
        s.close()
    except Exception as e:
        return "FAIL " + type(e).__name__
    rcode, qd, an = a[3] & 15, struct.unpack(">H", a[4:6])[0], struct.unpack(">H", a[6:8])[0]
    off, ips = 12, []
    for _ in range(qd):
        off = skip_name(a, off) + 4
    for _ in range(an):
        off = skip_name(a, off)
        rtype, _, _, rdlen = struct.unpack(">HHIH", a[off:off + 10])
        off += 10
        if rtype == 1 and rdlen == 4:
            ips.append(socket.inet_ntoa(a[off:off + 4]))
        off += rdlen
    return ("RCODE %d %s" % (rcode, ",".join(sorted(ips)))).strip()


def get(host, port):
    try:
        s = socket.create_connection((host, int(port)), timeout=T)
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        d = b""
        while True:
            c = s.recv(4096)
            if not c:
                break
            d += c
        s.close()
        head, _, body = d.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1."):
            return "FAIL bad response %r" % d[:40]
        return "OK " + body.decode("latin-1")
    except Exception as e:
        return "FAIL " + type(e).__name__


def info():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.203.0.2", 53))  # no packet: picks the source address
        ip = s.getsockname()[0]
    except OSError:
        ip = None
    ns = []
    try:
        with open("/etc/resolv.conf") as f:
            ns = [l.split()[1] for l in f if l.startswith("nameserver") and len(l.split()) > 1]
    except OSError:
        pass
    gw = None
    with open("/proc/net/route") as f:
        for l in f.readlines()[1:]:
            p = l.split()
            if p[1] == "00000000" and p[7] == "00000000":
                gw = socket.inet_ntoa(struct.pack("<I", int(p[2], 16)))
    return json.dumps({"ip": ip, "nameservers": ns, "gw": gw})


def hold(host, port, path):
    def note(what):
        with open(path, "a") as f:
            f.write("%.3f %s\n" % (time.time(), what))
    try:
        s = socket.create_connection((host, int(port)), timeout=T)
    except Exception as e:
        note("error connect " + type(e).__name__)
        return "FAIL"
    s.settimeout(1.0)
    end = time.time() + 120
    while time.time() < end:
        try:
            s.sendall(b"x\n")
            d = s.recv(100)
            if not d:
                note("closed")
                return "closed"
            note("ok")
        except Exception as e:
            note("error " + type(e).__name__)
            return "error"
        time.sleep(0.1)
    return "timeout"


def send(host, port, n):
    n = int(n)
    buf = b"\0" * (1 << 20)
    try:
        s = socket.create_connection((host, int(port)), timeout=10)
        t0 = time.monotonic()
        left = n
        while left > 0:
            left -= s.send(buf[:min(left, len(buf))])
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            c = s.recv(100)
            if not c:
                break
            got += c
        return "OK %s %.6f" % (got.decode(), time.monotonic() - t0)
    except Exception as e:
        return "FAIL " + type(e).__name__


PROBES = {"info": info, "resolve": resolve, "dns": dns, "get": get, "hold": hold,
          "send": send}


def main():
    probes = json.loads(sys.argv[1])
    out = [None] * len(probes)

    def run(i, p):
        try:
            out[i] = PROBES[p[0]](*p[1:])
        except Exception as e:
            out[i] = "FAIL probe %s" % type(e).__name__
    th = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(probes)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    for r in out:
        print(r.replace("\n", " "))


if __name__ == "__main__":
    main()
