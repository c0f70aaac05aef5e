"""execd benchmarks: command round trip, stdout streaming, upload/download
throughput, idle RSS, concurrent SSE streams. Uses curl for bulk transfers so
the client is not the bottleneck."""
import json, os, socket, statistics, subprocess, sys, tempfile, time

EXECD = os.environ.get("EXECD_BIN", "build/bin/execd")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(env=None):
    """execd on a free loopback port; (process, port) once it accepts."""
    port = free_port()
    p = subprocess.Popen([EXECD, "--listen", "127.0.0.1", "--port", str(port)],
                         stderr=subprocess.DEVNULL, env=env)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return p, port
        except OSError:
            time.sleep(0.01)
    raise SystemExit("execd did not start")


def header_lines(headers):
    return "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())


def post_stream(port, path, body, host="127.0.0.1", headers=None):
    """One keep-alive-free request; returns elapsed seconds to end of stream.
    host, headers: execd elsewhere (a sandbox's endpoint and its headers)."""
    data = json.dumps(body).encode()
    req = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"{header_lines(headers)}"
           f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data
    t0 = time.perf_counter()
    s = socket.create_connection((host, port))
    s.sendall(req)
    while s.recv(65536):
        pass
    s.close()
    return time.perf_counter() - t0


def bench_roundtrip(port, n=300, cmd="echo hi", host="127.0.0.1", headers=None, prefix=""):
    """Returns {"p50_ms", "p99_ms", "n"} of POST /command to its end of stream.
    host, port, prefix, headers: execd elsewhere, e.g. a sandbox's endpoint
    ("127.0.0.1:8080/sandboxes/<id>/proxy/44772": prefix "/sandboxes/<id>/proxy/44772")."""
    body = {"command": cmd}
    for _ in range(20):
        post_stream(port, prefix + "/command", body, host, headers)
    xs = sorted(post_stream(port, prefix + "/command", body, host, headers) for _ in range(n))
    p50, p99 = xs[len(xs) // 2] * 1000, xs[int(len(xs) * 0.99)] * 1000
    print(f"command {cmd!r} request-to-end-of-stream: p50 {p50:.2f} ms, p99 {p99:.2f} ms  [goal p50 <= 2 ms]")
    return {"command": cmd, "n": n, "p50_ms": p50, "p99_ms": p99}


def curl(args, headers=None):
    hs = [a for k, v in (headers or {}).items() for a in ("-H", f"{k}: {v}")]
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{size_download} %{size_upload} %{time_total}"] + hs + args,
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def bench_stdout(port, mib=512, host="127.0.0.1", headers=None, perl=True, prefix=""):
    """Returns {"mib", "mb_s", "wire_mb_s", "seconds"}. perl=False prints the
    4 KiB lines with busybox yes|head (images without perl)."""
    lines = mib * 256  # 4 KiB lines
    if perl:
        cmd = f"perl -e '$l=\"x\"x4095; print \"$l\\n\" for 1..{lines}'"
    else:
        cmd = f"yes $(printf %4095s | tr ' ' x) | head -n {lines}"
    body = json.dumps({"command": cmd})
    n, _, t = curl(["-N", "-H", "Content-Type: application/json", "-d", body, f"http://{host}:{port}{prefix}/command"],
                   headers)
    payload = lines * 4096
    print(f"stdout streaming: {payload / t / 1e6:.0f} MB/s of command output ({n / t / 1e6:.0f} MB/s on the wire, {mib} MiB)  [goal >= 200 MB/s]")
    return {"mib": mib, "mb_s": payload / t / 1e6, "wire_mb_s": n / t / 1e6, "seconds": t}


def bench_files(port, mib=1024, host="127.0.0.1", headers=None, dest_dir=None, prefix=""):
    """Returns {"mib", "upload_mb_s", "download_mb_s"}. dest_dir: where execd
    writes the file (default: beside the source, execd on this host)."""
    d = tempfile.mkdtemp(dir="/var/tmp")
    src = os.path.join(d, "src.bin")
    with open(src, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(mib):
            f.write(chunk)
    dest = os.path.join(dest_dir or d, "dest.bin")
    meta = json.dumps({"path": dest})
    _, up, t = curl(["-F", f"metadata={meta};filename=metadata;type=application/json",
                     "-F", f"file=@{src};filename=src.bin", f"http://{host}:{port}{prefix}/files/upload"], headers)
    print(f"upload {mib} MiB: {up / t / 1e6:.0f} MB/s  [goal >= 300 MB/s]")
    upload = up / t / 1e6
    n, _, t = curl([f"http://{host}:{port}{prefix}/files/download?path={dest}"], headers)
    print(f"download {mib} MiB: {n / t / 1e6:.0f} MB/s  [goal >= 300 MB/s]")
    subprocess.run(["rm", "-rf", d])
    return {"mib": mib, "upload_mb_s": upload, "download_mb_s": n / t / 1e6, "download_bytes": n}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def bench_sse(port, n=1000):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * n)), hard))
    data = json.dumps({"command": "sleep 3"}).encode()
    req = (f"POST /command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(data)}\r\n\r\n").encode() + data
    socks = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req)
        socks.append(s)
    ok = 0
    for s in socks:
        s.settimeout(10)
        buf = b""
        while b'"type":"init"' not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        ok += b'"type":"init"' in buf and buf.startswith(b"HTTP/1.1 200")
    opened = time.perf_counter() - t0
    done = 0
    for s in socks:
        buf = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
            if b"0\r\n\r\n" in buf[-16:]:
                break
        done += b"execution_complete" in buf
        s.close()
    print(f"{n} concurrent SSE streams: {ok} opened with init in {opened:.2f} s, {done} completed  [goal: all, no errors]")


def main():
    which = sys.argv[1:] or ["roundtrip", "stdout", "files", "rss", "sse"]
    p, port = start()
    try:
        if "rss" in which:
            time.sleep(0.2)
            print(f"idle RSS: {rss_kib(p.pid) / 1024:.2f} MiB  [goal <= 4 MiB]")
        if "roundtrip" in which:
            bench_roundtrip(port)
        if "stdout" in which:
            bench_stdout(port)
        if "files" in which:
            bench_files(port)
        if "sse" in which:
            bench_sse(port)
        if "rss" in which:
            print(f"RSS after the run: {rss_kib(p.pid) / 1024:.2f} MiB")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
