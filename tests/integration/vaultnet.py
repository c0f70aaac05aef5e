"""A fake TLS internet for the credential vault tests (test_credential_vault.py,
bench/vault_bench.py), on top of fakenet.FakeInternet: no packet leaves the
machine.

    with VaultNet() as vn:
        vn.inet                 the FakeInternet (its DNS answers the names below)
        vn.ca_file              the test CA (PEM): the server's upstream_ca_file
        NAMES                   name -> address; HTTPS on :443 of each address
        vn.seen(name)           requests that name's server received, oldest first:
                                {"server", "method", "path", "headers"}

api.vault.test and other.vault.test share an address (the server picks the
certificate by SNI); evil.vault.test and bulk.vault.test have their own;
badcert.vault.test serves a certificate for another name. Every server
answers a JSON echo of the request; /big?n=BYTES streams n bytes; /echo-auth
puts the request's Authorization into the answer header X-Echo-Auth; /ws is
a WebSocket echo of one text frame. (Port 80 of each address is
fakenet's plain HTTP server.)"""
import json
import os
import shutil
import subprocess
import tempfile

import fakenet

NAMES = {
    "api.vault.test": "10.203.0.20",
    "other.vault.test": "10.203.0.20",
    "evil.vault.test": "10.203.0.21",
    "badcert.vault.test": "10.203.0.22",
    "bulk.vault.test": "10.203.0.23",
    "fast.vault.test": "10.203.0.24",  # no Python server: start_file_server()
    "fastnat.vault.test": "10.203.0.25",  # likewise
}
FILE_SERVED = ("fast.vault.test", "fastnat.vault.test")
PY = "/usr/bin/python3"

SERVE = r'''
import base64, hashlib, json, socket, socketserver, ssl, struct, sys, threading, http.server
LOG = open(sys.argv[1], "a", buffering=1)
CERTS = json.loads(sys.argv[2])   # name -> [cert, key]
ADDRS = json.loads(sys.argv[3])   # address -> [names]
lock = threading.Lock()
def log(**kw):
    with lock:
        LOG.write(json.dumps(kw) + "\n")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and body go as written
    def name(self):
        return getattr(self.connection, "sni", None) or "plain:" + self.server.server_address[0]
    def reply(self, code, body, extra=()):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        log(server=self.name(), method=self.command, path=self.path, headers=dict(self.headers))
        if "/big" in self.path:
            size = int(self.path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b"x" * 65536
            while size:
                k = min(size, len(chunk)); self.wfile.write(chunk[:k]); size -= k
            return
        if self.path.startswith("/ws") and self.headers.get("Upgrade", "").lower() == "websocket":
            acc = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] +
                  "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket"); self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", acc); self.end_headers(); self.wfile.flush()
            h = self.rfile.read(2); ln = h[1] & 0x7f
            mask = self.rfile.read(4); data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
            self.wfile.write(bytes([0x81, len(data)]) + data); self.wfile.flush()
            self.close_connection = True
            return
        extra = [("X-Echo-Auth", self.headers.get("Authorization", ""))] if "echo-auth" in self.path else []
        self.reply(200, json.dumps({"server": self.name(), "method": self.command, "path": self.path,
                                    "headers": dict(self.headers), "body": body.decode("latin-1")}).encode(), extra)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any
    def log_message(self, *a): pass
class Srv(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
def tls_server(addr, names):
    ctxs = {}
    for n in names:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(*CERTS[n]); ctxs[n] = c
    first = ctxs[names[0]]
    def pick(sock, sni, ctx):
        sock.sni = sni if sni in ctxs else names[0]
        sock.context = ctxs.get(sni, first)
    first.sni_callback = pick
    for c in ctxs.values():
        c.sni_callback = pick
    s = Srv((addr, 443), H)
    s.socket = first.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
for addr, names in ADDRS.items():
    tls_server(addr, names)
print("ready", flush=True)
threading.Event().wait()
'''


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


# argv: address cert key size. /file: size bytes in 1 MiB writes, honouring
# backpressure; anything else 404.
NODE_FILE_SERVER = r"""
const [addr, cert, key, size] = process.argv.slice(1);
const fs = require("fs"), https = require("https");
const chunk = Buffer.alloc(1 << 20, "x");
https.createServer({cert: fs.readFileSync(cert), key: fs.readFileSync(key)}, (req, res) => {
  if (!req.url.startsWith("/file")) { res.writeHead(404); res.end(); return; }
  let left = Number(size);
  res.writeHead(200, {"content-length": left});
  const more = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once("drain", more);
        return;
      }
    }
    res.end();
  };
  more();
}).listen(443, addr);
"""


class VaultNet:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="osb-vaultnet-")
        self.ca_file = os.path.join(self.tmp, "ca.pem")
        self.log = os.path.join(self.tmp, "tls.log")
        self.inet = None
        self.proc = None
        self.extra_procs = []

    def _certs(self):
        d = self.tmp
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                 "-subj", "/CN=vault test CA", cwd=d)
        certs = {}
        for name in NAMES:
            san = "wrong.vault.test" if name.startswith("badcert") else name
            with open(os.path.join(d, name + ".ext"), "w") as f:
                f.write("subjectAltName=DNS:%s\n" % san)
            _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + san,
                     cwd=d)
            _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                     "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile",
                     name + ".ext", cwd=d)
            certs[name] = [os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")]
        return certs

    def setup(self):
        fakenet.ZONE.update(NAMES)  # the fake DNS answers them; eth0 gets the addresses
        self.inet = fakenet.FakeInternet().setup()
        certs = self._certs()
        addrs = {}
        for name, ip in NAMES.items():
            if name not in FILE_SERVED:
                addrs.setdefault(ip, []).append(name)
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.inet.ns, PY, "-c", SERVE, self.log, json.dumps(certs),
             json.dumps(addrs)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the TLS servers did not start: " + self.proc.stderr.read()[-2000:])
        return self

    def start_file_server(self, name, size):
        """A C or JIT-compiled HTTPS server on name's address serving /file
        (size bytes), so a throughput figure is not Python's: Node's https
        (1 MiB writes) when node is there, else `openssl s_server -WWW`."""
        d = os.path.join(self.tmp, "www-" + name)
        os.makedirs(d, exist_ok=True)
        cert, key = os.path.join(self.tmp, name + ".pem"), os.path.join(self.tmp, name + ".key")
        if shutil.which("node"):
            argv = ["node", "-e", NODE_FILE_SERVER, NAMES[name], cert, key, str(size)]
        else:
            with open(os.path.join(d, "file"), "wb") as f:
                f.truncate(size)
            argv = ["openssl", "s_server", "-quiet", "-WWW", "-accept", NAMES[name] + ":443",
                    "-cert", cert, "-key", key]
        p = subprocess.Popen(["ip", "netns", "exec", self.inet.ns] + argv, cwd=d,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.extra_procs.append(p)
        fakenet.wait_port(NAMES[name], 443, timeout=20)
        return p

    def seen(self, name):
        out = []
        try:
            with open(self.log) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev.get("server") == name:
                        out.append(ev)
        except (OSError, ValueError):
            pass
        return out

    def teardown(self):
        for p in self.extra_procs:
            p.kill()
            p.wait()
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.inet:
            self.inet.teardown()
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
