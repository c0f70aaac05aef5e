"""Runs inside a sandbox for test_credential_vault.py and bench/vault_bench.py:
argv[1] is a JSON list of probes, one JSON line is printed per probe.

  ["get", url, {headers}, cafile?]  GET through the system trust (the bundle the
                                    server mounts) or cafile only: {"status",
                                    "headers", "body"} or {"error"}
  ["keepalive", host, [paths]]      several GETs on one connection: [status, Authorization seen]
  ["host", sni_host, host_header]   one request whose Host differs from the SNI
  ["raw", sni_host, text]           send text as the request: {"status", "body"}
  ["trusts", host, cafile]          does a handshake with host verify against cafile only?
  ["ws", host, text]                WebSocket upgrade on /ws, one text frame echoed
  ["secret_in_sandbox", secret]     is the secret in this process's environment,
                                    /proc/*/environ or a file under /etc, /tmp, /root?
  ["env", name]                     an environment variable
  ["big", url, n, cafile?]          download (n bytes expected): {"bytes", "seconds"}
  ["curl", url, cafile?]            the same with curl: {"status", "bytes", "seconds"}
  ["lat", host, path, n, cafile?]   p50 of n GETs on one connection and of n GETs
                                    each on a new connection (ms)"""
import http.client
import json
import os
import socket
import ssl
import sys
import time
import urllib.request


def get(url, headers=None, cafile=None):
    try:
        ctx = ssl.create_default_context(cafile=cafile) if cafile else None
        r = urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                   timeout=20, context=ctx)
        return {"status": r.status, "headers": dict(r.headers), "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "headers": dict(e.headers), "body": e.read().decode()}
    except Exception as e:
        return {"error": repr(e)[:300]}


def keepalive(host, paths):
    c = http.client.HTTPSConnection(host, timeout=20, context=ssl.create_default_context())
    out = []
    for p in paths:
        c.request("GET", p)
        r = c.getresponse()
        body = json.loads(r.read())
        out.append([r.status, body["headers"].get("Authorization")])
    c.close()
    return out


def host_mismatch(sni, host):
    return raw_request(sni, "GET /v1/x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host)


def raw_request(sni, text):
    ctx = ssl.create_default_context()
    with socket.create_connection((sni, 443), timeout=20) as raw:
        with ctx.wrap_socket(raw, server_hostname=sni) as s:
            s.sendall(text.encode())
            data = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
    head = data.split(b"\r\n", 1)[0].decode()
    return {"status": int(head.split()[1]), "body": data.split(b"\r\n\r\n", 1)[1].decode()}


def trusts(host, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.load_verify_locations(cafile)
    try:
        with socket.create_connection((host, 443), timeout=20) as raw:
            with ctx.wrap_socket(raw, server_hostname=host):
                return True
    except ssl.SSLError:
        return False


def ws(host, text):
    ctx = ssl.create_default_context()
    with socket.create_connection((host, 443), timeout=20) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as s:
            s.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n" % host).encode())
            head = b""
            while b"\r\n\r\n" not in head:
                b = s.recv(1)
                if not b:
                    return {"error": "closed after %r" % head[:200]}
                head += b
            data = text.encode()
            mask = b"\x01\x02\x03\x04"
            s.sendall(bytes([0x81, 0x80 | len(data)]) + mask +
                      bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
            frame = b""
            while len(frame) < 2 or len(frame) < 2 + frame[1]:
                b = s.recv(4096)
                if not b:
                    return {"error": "closed after %r" % (head + frame)[:300]}
                frame += b
            return {"status": int(head.split()[1]), "echo": frame[2:2 + frame[1]].decode()}


def secret_in_sandbox(secret):
    needle = secret.encode()
    if needle in json.dumps(dict(os.environ)).encode():
        return "environment"
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and needle in open("/proc/%s/environ" % pid, "rb").read():
                return "/proc/%s/environ" % pid
        except OSError:
            pass
    for top in ("/etc", "/tmp", "/root"):
        for d, _, files in os.walk(top):
            for f in files:
                p = os.path.join(d, f)
                try:
                    if os.path.isfile(p) and os.path.getsize(p) < (8 << 20) and \
                            needle in open(p, "rb").read():
                        return p
                except OSError:
                    pass
    return None


def big(url, n, cafile=None):
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    t = time.time()
    r = urllib.request.urlopen(url, timeout=120, context=ctx)
    got = 0
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        got += len(b)
    return {"bytes": got, "seconds": time.time() - t}


def lat(host, path, n, cafile=None):
    ctx = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()

    def p50(xs):
        return sorted(xs)[len(xs) // 2] * 1000
    c = http.client.HTTPSConnection(host, timeout=20, context=ctx)
    ka = []
    for i in range(n + 5):
        t = time.perf_counter()
        c.request("GET", path)
        c.getresponse().read()
        if i >= 5:
            ka.append(time.perf_counter() - t)
    c.close()
    new = []
    for i in range(n):
        t = time.perf_counter()
        c = http.client.HTTPSConnection(host, timeout=20, context=ctx)
        c.request("GET", path)
        c.getresponse().read()
        c.close()
        new.append(time.perf_counter() - t)
    return {"keepalive_p50_ms": p50(ka), "new_p50_ms": p50(new)}


def curl(url, cafile=None):
    import subprocess
    argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}",
            url] + (["--cacert", cafile] if cafile else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    code, size, secs = r.stdout.split()
    return {"status": int(code), "bytes": int(size), "seconds": float(secs)}


def run(p):
    kind = p[0]
    try:
        if kind == "get":
            return get(p[1], p[2] if len(p) > 2 else None, p[3] if len(p) > 3 else None)
        if kind == "keepalive":
            return keepalive(p[1], p[2])
        if kind == "host":
            return host_mismatch(p[1], p[2])
        if kind == "raw":
            return raw_request(p[1], p[2])
        if kind == "trusts":
            return trusts(p[1], p[2])
        if kind == "ws":
            return ws(p[1], p[2])
        if kind == "secret_in_sandbox":
            return secret_in_sandbox(p[1])
        if kind == "env":
            return os.environ.get(p[1])
        if kind == "big":
            return big(p[1], p[2], p[3] if len(p) > 3 else None)
        if kind == "curl":
            return curl(p[1], p[2] if len(p) > 2 else None)
        if kind == "lat":
            return lat(p[1], p[2], p[3], p[4] if len(p) > 4 else None)
    except Exception as e:
        return {"error": repr(e)[:300]}
    return {"error": "unknown probe " + kind}


for probe in json.loads(sys.argv[1]):
    print(json.dumps(run(probe)), flush=True)
