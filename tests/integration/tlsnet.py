"""A fake TLS internet for the credential vault tests (test_vault.py), built on
fakenet.FakeInternet: one network namespace, no packet leaves the machine.

    with TLSNet() as tn:
        tn.inet                   the fakenet.FakeInternet (tn.inet.ns: its netns); its DNS
                                  server (fakenet.DNS_IP) also answers every name in NAMES
        tn.ca_file                the test CA (PEM): the server's [credential_vault]
                                  upstream_ca_file
        tn.rogue_ca_file          another CA, trusted by nobody (untrusted.vault.test's issuer)
        NAMES                     name -> address
        tn.events(kind=None)      every event the servers logged (vault_echo.py), oldest first
        tn.seen(name)             the requests ("http" events) name's server received:
                                  {"server", "sni", "client", "method", "path", "headers",
                                   "header_list"}
        tn.auth_seen(name)        the Authorization header of each of them (None if absent)
        tn.handshakes(name)       the TLS handshakes name's server completed
        tn.wait_for(pred, timeout=30)  polls pred() until true (the log is written by
                                  another process); returns its last value
        tn.run(code, *args)       python code run inside the netns -> stdout
        tn.fetch(name, path="/")  (status, json/body) of an HTTPS GET from inside the netns,
                                  verified against the test CA for name (self check)
        tn.resolve(name)          the fake DNS's A answer for name (from inside the netns)

Names (HTTPS on :443 of each address unless said otherwise):
    api.vault.test        10.203.0.40  certificate for itself from the test CA
    other.vault.test      10.203.0.40  the SAME address; its own certificate (SNI picks it)
    evil.vault.test       10.203.0.41  certificate for itself
    badcert.vault.test    10.203.0.42  a test-CA certificate for wrong.vault.test
    untrusted.vault.test  10.203.0.43  a certificate for itself from rogue CA
    h2.vault.test         10.203.0.45  HTTP/2 and HTTP/1.1 (ALPN), vault_h2echo.js: the
                                       same answers, plus "version" in the echo
    plain.vault.test      10.203.0.44  plain HTTP: port 80 is DNATed (in the netns) to the
                                       echo server on :8080 (fakenet's own :80 server on
                                       that address is never reached)
What every server answers: see vault_echo.py (JSON echo of the request, /big?n=,
/echo-secret, /ws).

Inside a sandbox (through the server's execd proxy):
    sp = SandboxPy(server, sandbox_id)
        sp.upload(path, data)                    a file into the sandbox
        sp.sh(cmd) -> (exit code, stdout, stderr)
        sp.py(code, timeout=120) -> JSON value   runs SANDBOX_LIB + code with /usr/bin/python3
                                                 in the sandbox; code calls out(value) once
    SANDBOX_LIB defines, for the code run there:
        https(host, path="/", method="GET", headers=None, cafile=None, verify=True,
              host_header=None, port=443, body=None)
            -> {"status", "headers" (dict, lower-case names), "body" (text, cut at 20000),
                "length" (of the whole body), "json",
                "issuer", "subject" (the peer certificate's CN/O), "error" (on failure)}
            cafile None: the sandbox's default trust (SSL_CERT_FILE etc.)
        http_plain(host, path="/", headers=None, port=80) -> same without the cert fields
        cert_of(host, sni=None, port=443) -> {"issuer", "subject", "san"} without verifying
        verifies(host, cafile) -> True/False (handshake verified against cafile only)
        keepalive(host, paths, cafile=None) -> [{"status", "auth", "error"}] on ONE connection
            ("auth": the Authorization the echo saw)
        ws(host, text, path="/ws", cafile=None) -> {"status", "echo"}
        find_secret(secret) -> [where it was found]: os.environ, /proc/*/environ and
            cmdline, files under /etc /tmp /run /root /home /var/tmp /opt
        out(value)                                 hands the result back

Needs root, `ip`, `nft`, `openssl` and /usr/bin/python3."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakenet  # noqa: E402

PY = fakenet.PY
HERE = os.path.dirname(os.path.abspath(__file__))
ECHO = os.path.join(HERE, "vault_echo.py")
NAMES = {
    "api.vault.test": "10.203.0.40",
    "other.vault.test": "10.203.0.40",
    "evil.vault.test": "10.203.0.41",
    "badcert.vault.test": "10.203.0.42",
    "untrusted.vault.test": "10.203.0.43",
    "plain.vault.test": "10.203.0.44",
    "h2.vault.test": "10.203.0.45",
}
PLAIN = {"plain.vault.test"}
H2 = {"h2.vault.test"}  # served by vault_h2echo.js (Node's http2: ALPN h2 and http/1.1)
H2ECHO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vault_h2echo.js")
PLAIN_PORT = 8080
# what each name's certificate says (and who signs it)
CERT_NAME = {"badcert.vault.test": "wrong.vault.test"}
ROGUE = {"untrusted.vault.test"}


def available():
    """None when a TLSNet can be built here, else why not."""
    why = fakenet.available()
    if why:
        return why
    if not shutil.which("openssl"):
        return "needs openssl"
    if not shutil.which("node"):
        return "needs node (the HTTP/2 server)"
    return None


def _openssl(cwd, *args):
    r = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args[:2]), r.stderr.strip()[-500:]))


CA_EXT = """[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
"""
LEAF_EXT = """basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
subjectAltName = DNS:%s
"""


def make_ca(d, stem, cn):
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[req]\ndistinguished_name = dn\n[dn]\n" + CA_EXT)
    _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", stem + ".key", "-out", stem + ".pem", "-days", "3", "-subj",
             "/O=osb tlsnet/CN=" + cn, "-config", "ca.cnf", "-extensions", "v3_ca")
    return os.path.join(d, stem + ".pem")


def make_leaf(d, name, san, ca_stem):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(LEAF_EXT % san)
    _openssl(d, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + san)
    _openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca_stem + ".pem", "-CAkey",
             ca_stem + ".key", "-CAcreateserial", "-out", name + ".pem", "-days", "3",
             "-extfile", name + ".ext")
    return os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")


class TLSNet:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="osb-tlsnet-")
        os.chmod(self.tmp, 0o755)
        self.log = os.path.join(self.tmp, "echo.log")
        self.ca_file = os.path.join(self.tmp, "testca.pem")
        self.rogue_ca_file = os.path.join(self.tmp, "rogueca.pem")
        self.inet = None
        self.proc = None
        self.h2procs = []

    # ------------------------------------------------------------ setup
    def _certs(self):
        d = self.tmp
        make_ca(d, "testca", "osb tlsnet test CA")
        make_ca(d, "rogueca", "osb tlsnet rogue CA")
        certs = {}
        for name in NAMES:
            if name in PLAIN:
                continue
            certs[name] = make_leaf(d, name, CERT_NAME.get(name, name),
                                    "rogueca" if name in ROGUE else "testca")
        return certs

    def _wait_alone(self, timeout=300):
        """fakenet's addresses are fixed (10.203.0.0/24, a host route): two fake
        internets at once break each other. Holds a lock against other TLSNets
        and waits while another live osbt-inet-* netns (one with processes) is up."""
        import fcntl
        self._lock = open("/tmp/osb-test-fakenet.lock", "w")
        end = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError("another TLSNet holds /tmp/osb-test-fakenet.lock")
                time.sleep(0.5)
        while True:
            out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            live = [l.split()[0] for l in out.splitlines() if l.startswith("osbt-inet-") and
                    subprocess.run(["ip", "netns", "pids", l.split()[0]], capture_output=True,
                                   text=True).stdout.strip()]
            if not live:
                return
            if time.monotonic() > end:
                raise RuntimeError("another fake internet stays up: %s" % live)
            time.sleep(1)

    def setup(self):
        self._wait_alone()
        certs = self._certs()
        # fakenet's DNS serves (and its eth0 carries the addresses of) the
        # module's ZONE as it is when the netns is built: add ours for that.
        saved = dict(fakenet.ZONE)
        fakenet.ZONE.update(NAMES)
        try:
            self.inet = fakenet.FakeInternet().setup()
        finally:
            fakenet.ZONE.clear()
            fakenet.ZONE.update(saved)
        ns = self.inet.ns
        tls, plain = {}, {}
        for name, ip in NAMES.items():
            if name in PLAIN:
                plain["%s:%d" % (ip, PLAIN_PORT)] = name
            elif name not in H2:
                tls.setdefault(ip, []).append([name] + list(certs[name]))
        for name in PLAIN:
            ip = NAMES[name]
            # prerouting: from sandboxes; output: from the netns itself (self check)
            rules = "add table ip tlsnet\n"
            for hook in ("prerouting", "output"):
                rules += ("add chain ip tlsnet %s { type nat hook %s priority -100; }\n"
                          "add rule ip tlsnet %s ip daddr %s tcp dport 80 dnat to %s:%d\n"
                          % (hook, hook, hook, ip, ip, PLAIN_PORT))
            r = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=rules,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("nft in the fake internet: " + r.stderr.strip())
        cfg = os.path.join(self.tmp, "echo.json")
        with open(cfg, "w") as f:
            json.dump({"tls": tls, "plain": plain}, f)
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, PY, ECHO, self.log, cfg],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the TLS servers did not start: " +
                               self.proc.stderr.read()[-2000:])
        for name in H2:
            p = subprocess.Popen(["ip", "netns", "exec", ns, "node", H2ECHO, self.log, NAMES[name],
                                  name] + list(certs[name]), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.h2procs.append(p)
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("the HTTP/2 server did not start: " + p.stderr.read()[-2000:])
        return self

    def teardown(self):
        for p in [self.proc] + self.h2procs:
            if p and p.poll() is None:
                p.kill()
                p.wait()
        if self.inet:
            self.inet.teardown()
        shutil.rmtree(self.tmp, ignore_errors=True)
        lock = getattr(self, "_lock", None)
        if lock:
            lock.close()
            self._lock = None

    def __enter__(self):
        try:
            return self.setup()
        except BaseException:
            self.teardown()
            raise

    def __exit__(self, *a):
        self.teardown()
        return False

    # ------------------------------------------------------------ logs
    def events(self, kind=None):
        return fakenet.read_events(self.log, kind)

    def seen(self, name):
        return [e for e in self.events("http") if e.get("server") == name]

    def auth_seen(self, name):
        return [{k.lower(): v for k, v in e["headers"].items()}.get("authorization")
                for e in self.seen(name)]

    def handshakes(self, name):
        return [e for e in self.events("tls") if e.get("server") == name]

    @staticmethod
    def wait_for(pred, timeout=30, interval=0.05):
        end = time.monotonic() + timeout
        while True:
            v = pred()
            if v or time.monotonic() >= end:
                return v
            time.sleep(interval)

    # ------------------------------------------------------------ inside the netns
    def run(self, code, *args, timeout=30):
        return self.inet.run(code, *args, timeout=timeout)

    def fetch(self, name, path="/"):
        code = r'''
import http.client, json, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
c = http.client.HTTPSConnection(sys.argv[3], 443, context=ctx, timeout=10)
c.sock = ctx.wrap_socket(__import__("socket").create_connection((sys.argv[2], 443), 10),
                         server_hostname=sys.argv[3])
c.request("GET", sys.argv[4])
r = c.getresponse()
print(json.dumps([r.status, r.read().decode("latin-1")]))
'''
        out = self.run(code, self.ca_file, NAMES[name], name, path)
        if out.startswith("FAIL"):
            return None, out
        status, body = json.loads(out)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body

    def resolve(self, name):
        code = r'''
import socket, struct, sys
q = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(l)]) + l.encode() for l in sys.argv[2].split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.sendto(q, (sys.argv[1], 53)); a = s.recv(4096)
print(socket.inet_ntoa(a[-4:]) if struct.unpack(">H", a[6:8])[0] else "NXDOMAIN")
'''
        return self.run(code, fakenet.DNS_IP, name)


# ---------------------------------------------------------------- inside a sandbox

SANDBOX_LIB = r'''
import base64, hashlib, http.client, json, os, socket, ssl, struct, sys, tempfile
_OUT = sys.argv[1]

def out(v):
    with open(_OUT + ".tmp", "w") as f:
        json.dump(v, f)
    os.rename(_OUT + ".tmp", _OUT)

def _name(parts):
    d = {}
    for rdn in parts or ():
        for k, v in rdn:
            d[k] = v
    return d.get("commonName", "") + " / " + d.get("organizationName", "")

def _decode(der):
    pem = ssl.DER_cert_to_PEM_cert(der)
    fd, p = tempfile.mkstemp(suffix=".pem")
    try:
        os.write(fd, pem.encode()); os.close(fd)
        return ssl._ssl._test_decode_cert(p)
    finally:
        os.unlink(p)

def _ctx(cafile, verify):
    if not verify:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
    elif cafile:
        c = ssl.create_default_context(cafile=cafile)
    else:
        c = ssl.create_default_context()
    c.set_alpn_protocols(["http/1.1"])
    return c

def _certinfo(sock):
    try:
        d = _decode(sock.getpeercert(binary_form=True))
        return {"issuer": _name(d.get("issuer")), "subject": _name(d.get("subject")),
                "san": [v for k, v in d.get("subjectAltName", ()) if k == "DNS"]}
    except Exception as e:
        return {"issuer": None, "subject": None, "san": None, "certerror": repr(e)}

def _resp(r, extra=None):
    body = r.read()
    res = {"status": r.status, "headers": {k.lower(): v for k, v in r.getheaders()},
           "body": body.decode("latin-1")[:20000], "length": len(body), "json": None}
    try:
        res["json"] = json.loads(body)
    except ValueError:
        pass
    res.update(extra or {})
    return res

def https(host, path="/", method="GET", headers=None, cafile=None, verify=True,
          host_header=None, port=443, body=None, timeout=30):
    try:
        ctx = _ctx(cafile, verify)
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
        c.connect()
        info = _certinfo(c.sock)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host_header or host)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body.encode() if isinstance(body, str) else body)
        res = _resp(c.getresponse(), info)
        c.close()
        return res
    except Exception as e:
        return {"status": None, "error": repr(e)[:500]}

def http_plain(host, path="/", headers=None, port=80, host_header=None, timeout=30):
    try:
        c = http.client.HTTPConnection(host, port, timeout=timeout)
        c.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host_header or host)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        c.endheaders()
        res = _resp(c.getresponse())
        c.close()
        return res
    except Exception as e:
        return {"status": None, "error": repr(e)[:500]}

def cert_of(host, sni=None, port=443):
    try:
        s = _ctx(None, False).wrap_socket(socket.create_connection((host, port), 15),
                                          server_hostname=sni or host)
        info = _certinfo(s)
        s.close()
        return info
    except Exception as e:
        return {"error": repr(e)[:500]}

def verifies(host, cafile, port=443):
    try:
        s = _ctx(cafile, True).wrap_socket(socket.create_connection((host, port), 15),
                                           server_hostname=host)
        s.close()
        return True
    except ssl.SSLError:
        return False
    except Exception as e:
        return repr(e)[:300]

def keepalive(host, paths, cafile=None):
    res = []
    c = http.client.HTTPSConnection(host, 443, context=_ctx(cafile, True), timeout=30)
    socks = set()
    for p in paths:
        try:
            c.request("GET", p)
            socks.add(id(c.sock))
            r = c.getresponse()
            body = r.read()
            try:
                h = {k.lower(): v for k, v in json.loads(body)["headers"].items()}
            except (ValueError, KeyError, TypeError):
                h = {}
            res.append({"status": r.status, "auth": h.get("authorization"),
                        "reused": len(socks) == 1})
        except Exception as e:
            res.append({"status": None, "error": repr(e)[:300]})
    c.close()
    return res

def ws(host, text, path="/ws", cafile=None):
    try:
        s = _ctx(cafile, True).wrap_socket(socket.create_connection((host, 443), 15),
                                           server_hostname=host)
        s.settimeout(30)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   % (path, host, key)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                return {"status": None, "error": "EOF in the handshake: %r" % buf[:300]}
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        status = int(head.split()[1])
        want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                             .encode()).digest()).decode()
        hdrs = {l.split(b":", 1)[0].strip().lower().decode(): l.split(b":", 1)[1].strip().decode()
                for l in head.split(b"\r\n")[1:] if b":" in l}
        if status != 101:
            return {"status": status, "echo": None}
        data = text.encode()
        mask = os.urandom(4)
        s.sendall(bytes([0x81, 0x80 | len(data)]) + mask +
                  bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while len(buf) < 2 or len(buf) < 2 + (buf[1] & 0x7f):
            d = s.recv(4096)
            if not d:
                break
            buf += d
        echo = buf[2:2 + (buf[1] & 0x7f)].decode("latin-1") if len(buf) >= 2 else None
        s.close()
        return {"status": status, "echo": echo,
                "accept_ok": hdrs.get("sec-websocket-accept") == want}
    except Exception as e:
        return {"status": None, "error": repr(e)[:500]}

def find_secret(secret):
    sb = secret.encode()
    found = []
    if any(secret in k or secret in v for k, v in os.environ.items()):
        found.append("os.environ")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for f in ("environ", "cmdline"):
            try:
                with open("/proc/%s/%s" % (pid, f), "rb") as fh:
                    if sb in fh.read():
                        found.append("/proc/%s/%s" % (pid, f))
            except OSError:
                pass
    for top in ("/etc", "/tmp", "/run", "/root", "/home", "/var/tmp", "/opt"):
        for root, dirs, files in os.walk(top, followlinks=False):
            for fn in files:
                p = os.path.join(root, fn)
                try:
                    if os.path.islink(p) or not os.path.isfile(p) or \
                            os.path.getsize(p) > (8 << 20):
                        continue
                    with open(p, "rb") as fh:
                        if sb in fh.read():
                            found.append(p)
                except OSError:
                    pass
    return found
'''


class SandboxPy:
    """Python run inside a sandbox through the server's execd proxy."""

    def __init__(self, server, sid):
        self.s, self.id = server, sid
        self.x = server.execd(sid)
        self.n = 0

    def upload(self, path, data):
        from osbtest import multipart, upload_parts
        if isinstance(data, str):
            data = data.encode()
        ctype, body = multipart(upload_parts([({"path": path}, data)]))
        r = self.x.post("/files/upload", body=body, headers={"Content-Type": ctype})
        if r.status != 200:
            raise RuntimeError("upload %s -> %d %r" % (path, r.status, r.body[:300]))

    def download(self, path):
        from osbtest import qs
        r = self.x.get(qs("/files/download", {"path": path}))
        return r.body if r.status == 200 else None

    def sh(self, cmd, timeout=120):
        from osbtest import exit_code, stderr_lines, stdout_lines
        ev = self.x.sse("/command", json={"command": cmd}, timeout=timeout).events
        return exit_code(ev), "\n".join(stdout_lines(ev)), "\n".join(stderr_lines(ev))

    def py(self, code, timeout=120):
        self.n += 1
        tag = "%s-%d" % (os.urandom(4).hex(), self.n)
        script, result = "/tmp/osbt-%s.py" % tag, "/tmp/osbt-%s.json" % tag
        self.upload(script, SANDBOX_LIB + "\n" + code)
        rc, so, se = self.sh("%s %s %s" % (PY, script, result), timeout=timeout)
        data = self.download(result)
        self.sh("rm -f %s %s" % (script, result))
        if data is None:
            raise RuntimeError("sandbox python gave no result (exit %r)\nstdout: %s\nstderr: %s"
                               % (rc, so[-1500:], se[-3000:]))
        return json.loads(data)


if __name__ == "__main__":
    # Self check, standalone: the zone, each server's certificate and echo.
    why = available()
    if why:
        print("ok - tlsnet # SKIP " + why)
        print("1..1")
        sys.exit(0)
    n = 0
    bad = 0

    def check(cond, name, diag=None):
        global n, bad
        n += 1
        bad += not cond
        print("%s - %s" % ("ok" if cond else "not ok", name))
        if not cond and diag is not None:
            print("# %r" % (diag,))

    with TLSNet() as tn:
        for name, ip in NAMES.items():
            check(tn.resolve(name) == ip, "DNS %s -> %s" % (name, ip), tn.resolve(name))
        for name in ("api.vault.test", "other.vault.test", "evil.vault.test"):
            st, body = tn.fetch(name, "/v1/x")
            check(st == 200 and isinstance(body, dict) and body.get("server") == name and
                  body.get("path") == "/v1/x", "%s: verified HTTPS echo" % name, (st, body))
        st, body = tn.fetch("badcert.vault.test")
        check(st is None and "CERTIFICATE_VERIFY_FAILED" in body, "badcert does not verify", body)
        st, body = tn.fetch("untrusted.vault.test")
        check(st is None and "CERTIFICATE_VERIFY_FAILED" in body, "untrusted does not verify",
              body)
        out = tn.run(r'''
import http.client, json, sys
c = http.client.HTTPConnection(sys.argv[1], 80, timeout=10)
c.request("GET", "/plain", headers={"Authorization": "Bearer x"})
print(c.getresponse().read().decode())
''', NAMES["plain.vault.test"])
        check('"server": "plain.vault.test"' in out, "plain.vault.test: HTTP echo on :80", out)
        check(tn.auth_seen("api.vault.test") == [None], "the log has the api request", tn.seen(
            "api.vault.test"))
        check(tn.auth_seen("plain.vault.test") == ["Bearer x"], "the log has the plain request")
    print("1..%d" % n)
    sys.exit(1 if bad else 0)
