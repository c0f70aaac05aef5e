#!/usr/bin/python3
"""libopensandbox as a user gets it: examples/osb_example.c (built against
the shared library) against a real server, over http and over https through
a local TLS relay (the system CAs refuse its self-signed certificate; the
same certificate in SSL_CERT_FILE is trusted); the shared object exports
only the public osbc_ names; the public header compiles on its own as C99
and as C++."""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BUILD = os.environ.get("BUILD", "build")
EXAMPLE = os.path.join(REPO, BUILD, "bin", "osb-example")
SO = os.path.join(REPO, BUILD, "lib", "libopensandbox.so")


class TLSRelay:
    """Accepts TLS on a loopback port and pipes each connection's bytes to
    the plain-HTTP server."""

    def __init__(self, backend_port, cert, key):
        self.backend = backend_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            tc = self.ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            c.close()
            return
        b = socket.create_connection(("127.0.0.1", self.backend))

        def pump(src, dst):
            try:
                while True:
                    d = src.recv(65536)
                    if not d:
                        break
                    dst.sendall(d)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        threading.Thread(target=pump, args=(b, tc), daemon=True).start()
        pump(tc, b)

    def close(self):
        self.ls.close()


def run_example(s, extra_env=None):
    env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
               OPEN_SANDBOX_API_KEY=s.api_key)
    env.pop("SSL_CERT_FILE", None)
    env.update(extra_env or {})
    return subprocess.run([EXAMPLE], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def check_example_output(t, r, mode):
    out = r.stdout
    t.ok(r.returncode == 0, "%s: osb-example exits 0" % mode,
         "rc %d\nstdout %s\nstderr %s" % (r.returncode, out[-1500:], r.stderr[-1500:]))
    t.ok("  | Linux" in out and "  | to-stderr" in out, "%s: live stdout and stderr" % mode, out)
    t.ok("exit code 3" in out, "%s: the command's exit code" % mode, out)
    t.ok("as written" in out, "%s: file written and read back" % mode, out)
    t.ok("  | 42" in out, "%s: python code ran in a context" % mode, out)
    t.ok(out.rstrip().endswith("deleted"), "%s: sandbox deleted" % mode, out)


def test_http(t, s):
    r = run_example(s)
    check_example_output(t, r, "http")
    t.eq(s.get("/v1/sandboxes", headers=s._auth_headers()).json()["items"], [],
         "http: nothing left behind")


def test_https(t, s):
    d = tempfile.mkdtemp(prefix="osb-tls-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    relay = TLSRelay(s.port, cert, key)
    try:
        base = {"OPEN_SANDBOX_DOMAIN": "127.0.0.1:%d" % relay.port,
                "OPEN_SANDBOX_PROTOCOL": "https"}
        r = run_example(s, base)
        t.ok(r.returncode != 0 and "certificate" in r.stderr,
             "https: a certificate the system does not trust is refused",
             "rc %d stderr %s" % (r.returncode, r.stderr[-500:]))
        r = run_example(s, dict(base, SSL_CERT_FILE=cert))
        check_example_output(t, r, "https")
    finally:
        relay.close()


def test_exports(t):
    r = subprocess.run(["nm", "-D", "--defined-only", SO], capture_output=True, text=True)
    names = [ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()]
    bad = [n for n in names if not n.startswith("osbc_")]
    t.ok(r.returncode == 0 and names and not bad,
         "the shared library exports only osbc_ names (%d)" % len(names), bad[:20])


def test_header(t):
    hdr = os.path.join(REPO, "include")
    src = '#include <osb/opensandbox.h>\nint main(void){return osbc_strerror(0) == 0;}\n'
    for lang, cc in (("c", ["cc", "-std=c99", "-pedantic"]), ("c++", ["g++", "-std=c++11"])):
        r = subprocess.run(cc + ["-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", lang,
                                 "-I", hdr, "-"], input=src, capture_output=True, text=True)
        t.ok(r.returncode == 0, "the public header compiles alone as %s" % lang, r.stderr[-800:])


def main():
    test_exports(t)
    test_header(t)
    with Server(api_key="clientlib-key") as s:
        t.run(test_http, t, s, name="http", timeout=150)
        t.run(test_https, t, s, name="https", timeout=200)


t.run(main, name="clientlib", timeout=400)
t.done()
