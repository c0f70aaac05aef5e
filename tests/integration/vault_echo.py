"""The servers of tlsnet's fake TLS internet, one process run inside its
network namespace (tlsnet.TLSNet starts it; not a test on its own):

    /usr/bin/python3 vault_echo.py LOG CONFIG

CONFIG is a JSON file:
    {"tls":   {"ADDR": [["name", "cert.pem", "key.pem"], ...]},   HTTPS on ADDR:443,
                                                                    certificate chosen by SNI
                                                                    (the first one without or
                                                                    with an unknown SNI)
     "plain": {"ADDR:PORT": "name"}}                                plain HTTP

Every server speaks HTTP/1.1 with keep-alive and answers any method:
    /big?n=BYTES        n bytes of "x" (Content-Length), streamed
    /echo-secret        the JSON echo, plus the request's Authorization in X-Echo-Auth
    /ws (Upgrade)       a WebSocket echo (RFC 6455): every data frame is sent back
                        unmasked until a close frame or EOF
    anything else       {"server", "sni", "method", "path", "headers", "body"} (JSON)

LOG gets one JSON line per event: {"kind": "tls", "server", "sni", "client"} when
a handshake completes, {"kind": "tls-error", "addr", "client", "error"} when one
fails, {"kind": "http", "server", "sni", "client", "method", "path", "headers",
"header_list"} for every request (before it is answered), {"kind": "ws",
"server", "text"} for every echoed frame. Prints "ready" once all listen."""
import base64
import hashlib
import http.server
import json
import socketserver
import ssl
import struct
import sys
import threading

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
LOG = open(sys.argv[1], "a", buffering=1)
CFG = json.load(open(sys.argv[2]))
_lock = threading.Lock()


def log(**kw):
    with _lock:
        LOG.write(json.dumps(kw) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 120

    def setup(self):
        self.sni = None
        self.name = self.server.plain_name
        ctxs = self.server.tls
        if ctxs is not None:
            first = ctxs[self.server.names[0]]
            try:
                self.request.settimeout(30)
                self.request = first.wrap_socket(self.request, server_side=True)
                self.request.settimeout(None)
            except (OSError, ssl.SSLError) as e:
                log(kind="tls-error", addr=self.server.server_address[0],
                    client=self.client_address[0], error=str(e)[:200])
                raise
            self.sni = getattr(self.request, "osb_sni", None)
            self.name = self.sni if self.sni in ctxs else self.server.names[0]
            log(kind="tls", server=self.name, sni=self.sni, client=self.client_address[0])
        http.server.BaseHTTPRequestHandler.setup(self)

    def log_message(self, *a):
        pass

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, code, body, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def any(self):
        body = self.read_body()
        log(kind="http", server=self.name, sni=self.sni, client=self.client_address[0],
            method=self.command, path=self.path, headers=dict(self.headers),
            header_list=[[k, v] for k, v in self.headers.items()])
        path = self.path.split("?")[0]
        if path == "/big":
            n = int(self.path.split("n=", 1)[1].split("&")[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * (1 << 18)
            while n:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            self.wfile.flush()
            return
        if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        doc = {"server": self.name, "sni": self.sni, "method": self.command, "path": self.path,
               "headers": dict(self.headers), "body": body.decode("latin-1")}
        extra = []
        if path == "/echo-secret":
            extra.append(("X-Echo-Auth", self.headers.get("Authorization", "")))
        self.send(200, json.dumps(doc).encode(), extra)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = any

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        acc = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, ln = h[0] & 0x0f, h[1] & 0x7f
            if ln == 126:
                ln = struct.unpack(">H", self.rfile.read(2))[0]
            elif ln == 127:
                ln = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(ln)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                self.wfile.flush()
                return
            if op in (1, 2):
                log(kind="ws", server=self.name, text=data.decode("latin-1"))
                n = len(data)
                head = bytes([0x80 | op]) + (bytes([n]) if n < 126 else
                                             b"\x7e" + struct.pack(">H", n) if n < 65536 else
                                             b"\x7f" + struct.pack(">Q", n))
                self.wfile.write(head + data)
                self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # a client that went away, a failed handshake (logged in setup)


def tls_server(addr, entries):
    s = Server((addr, 443), Handler)
    s.tls = {}
    s.names = [e[0] for e in entries]
    s.plain_name = None

    def pick(sock, sni, ctx):  # sock: the SSLSocket being accepted
        sock.osb_sni = sni
        if sni in s.tls:
            sock.context = s.tls[sni]

    for name, cert, key in entries:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        c.load_cert_chain(cert, key)
        c.set_alpn_protocols(["http/1.1"])
        c.sni_callback = pick
        s.tls[name] = c
    return s


def plain_server(addr_port, name):
    addr, _, port = addr_port.rpartition(":")
    s = Server((addr, int(port)), Handler)
    s.tls = None
    s.names = [name]
    s.plain_name = name
    return s


servers = [tls_server(a, e) for a, e in CFG.get("tls", {}).items()]
servers += [plain_server(a, n) for a, n in CFG.get("plain", {}).items()]
for srv in servers:
    threading.Thread(target=srv.serve_forever, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
