"""Helpers for the lifecycle-server integration tests (test_server*.py).

    from serverlib import *

    with Server(api_key=None, min_timeout=1, max_timeout=0, extra="", state_dir=None,
                tmp_dir=None, native="") as s:
        extra: TOML text appended to the config (e.g. an [image] table)
        server: TOML lines added to its [server] table (e.g. max_sandboxes = 2)
        native: TOML lines added to its [native] table (e.g. user_namespaces = true);
                OSB_TEST_USERNS=1 (=0) in the environment adds user_namespaces = true (false) to all
        runtime: the [runtime] type (e.g. "gvisor"); default: $OSB_TEST_RUNTIME (a whole
                 suite against another backend), else the server's (native)
        userns_slots: unless native sets userns_range, the server gets a range of this many
                      65536-id slots (100, as the default range) of its own
                      (s.userns_first, s.userns_count say which)
        tmp_dir: where the temp dir (config, log, state) is made; default $TMPDIR
        s.url, s.port, s.state_dir, s.proc, s.log_text()
        s.req(method, path, ...)          osbtest.Client.req plus OPEN-SANDBOX-API-KEY
        s.create(**fields) -> Resp        POST /v1/sandboxes with defaults (host image,
                                          tail -f /dev/null, timeout 600) merged with fields
        s.new(**fields) -> sandbox json   create + assert 202
        s.delete_all()                    DELETE every listed sandbox
        s.kill(sig=SIGKILL); s.restart()  same port, config and state dir
        s.pid_of(sbx_id) -> int|None     host pid of the sandbox's PID 1
        s.execd(sbx_id) -> ProxyExecd     an osbtest.Client reaching execd through the
                                          server proxy with the endpoint's token header
    Server.stop() deletes what is left, stops the server, checks for leaks (processes
    whose command line names the state dir, mounts under it) and removes the temp dir.

Run as a script it only checks that it imports (run.sh runs every test_*.py).
Set OSB_SERVER_BIN to test another build of the server.
"""
import json as _json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import osbtest  # noqa: E402
from osbtest import *  # noqa: F401,F403,E402

__all__ = ["Server", "npm_ci", "run_node_checks", "ProxyExecd", "SERVER_BIN", "free_subnet", "leaked_processes",
           "leaked_mounts", "iso_ok", "no_nulls", "cg_base_name", "sandbox_processes", "sandbox_cgroups"] + \
    osbtest.__all__

SERVER_BIN = os.environ.get("OSB_SERVER_BIN") or os.path.join(
    REPO, os.environ.get("BUILD", "build"), "bin", "opensandbox-server")

DEFAULT_SANDBOX = {
    "image": {"uri": "host"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "512Mi"},
}


_subnet_locks = {}


def _host_networks():
    """IPv4 networks of every address and route on the host (all tables)."""
    import ipaddress
    nets = []
    for cmd in (["ip", "-4", "-o", "addr", "show"], ["ip", "-4", "route", "show", "table", "all"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for tok in out.split():
            try:
                n = ipaddress.ip_network(tok, strict=False)
            except ValueError:
                continue
            if n.version == 4 and n.prefixlen > 0 and not n.is_loopback:
                nets.append(n)
    return nets


SUBNET_LOCK_DIR = "/tmp/osb-test-subnets"


def subnet_candidates():
    """The X of every 10.X.0.0/16 (X in 100..199) no host address or route
    overlaps; tests/sdk/test_sdk.sh flocks SUBNET_LOCK_DIR/10.X.lock itself."""
    import ipaddress
    taken = _host_networks()
    return [x for x in range(100, 200)
            if not any(ipaddress.ip_network("10.%d.0.0/16" % x).overlaps(n) for n in taken)]


def free_subnet():
    """A 10.X.0.0/16 that no host address or route overlaps and that no other
    test process on this machine holds (an flock kept until release_subnet or
    exit), so servers of concurrent tests (and worktrees) never share one."""
    import fcntl
    d = SUBNET_LOCK_DIR
    os.makedirs(d, exist_ok=True)
    for x in subnet_candidates():
        net = "10.%d.0.0/16" % x
        if net in _subnet_locks:
            continue
        f = open(os.path.join(d, "10.%d.lock" % x), "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _subnet_locks[net] = f
        return net
    raise RuntimeError("no free 10.X.0.0/16 subnet for a test server")


def release_subnet(net):
    f = _subnet_locks.pop(net, None)
    if f:
        f.close()


def iso_ok(s):
    """RFC 3339 UTC with Z, as the server prints it."""
    import re
    return isinstance(s, str) and re.match(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$", s) is not None


def no_nulls(j):
    """True when no value anywhere in the JSON document is null."""
    if j is None:
        return False
    if isinstance(j, dict):
        return all(no_nulls(v) for v in j.values())
    if isinstance(j, list):
        return all(no_nulls(v) for v in j)
    return True


def leaked_processes(marker):
    """PIDs whose command line mentions marker (e.g. a state dir)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd:
            out.append((int(p), cmd[:200]))
    return out


def leaked_mounts(marker):
    try:
        with open("/proc/self/mountinfo") as f:
            return [l.split()[4] for l in f if marker in l.split()[4]]
    except OSError:
        return []


def cg_base_name(state_dir):
    """The runtime's cgroup base for a state dir: "opensandbox-<FNV-1a 32 of the path>"."""
    h = 2166136261
    for b in state_dir.encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return "opensandbox-%08x" % h


def _zombie(pid):
    """Dead and waiting to be reaped (by PID 1 once the server that was its parent died)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def sandbox_processes(state_dir):
    """{pid: cgroup line} of every process in a cgroup of this state dir's sandboxes."""
    base = cg_base_name(state_dir)
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % p) as f:
                cg = f.read()
        except OSError:
            continue
        if base + "/" in cg and not _zombie(p):
            out[int(p)] = [l for l in cg.splitlines() if base in l][0]
    return out


def sandbox_cgroups(state_dir):
    """Per-sandbox cgroup directories left under this state dir's cgroup base."""
    base = cg_base_name(state_dir)
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if root.count("/") > 8:
            dirs[:] = []
            continue
        if os.path.basename(root) == base:
            found += [os.path.join(root, d) for d in dirs]
            dirs[:] = []
    return found


class ProxyExecd(Client):
    """execd reached through the server proxy: GET /ping -> /sandboxes/{id}/proxy/44772/ping."""

    def __init__(self, server, sbx_id, port=44772, token=None):
        Client.__init__(self, "127.0.0.1", server.port, token)
        self.prefix = "/v1/sandboxes/%s/proxy/%d" % (sbx_id, port)

    def req(self, method, path, **kw):
        return Client.req(self, method, self.prefix + path, **kw)

    def sse_stream(self, path, **kw):
        return Client.sse_stream(self, self.prefix + path, **kw)

    def upload_stream(self, path, *a, **kw):
        return Client.upload_stream(self, self.prefix + path, *a, **kw)

    def try_ws_connect(self, path, headers=None, timeout=10):
        return Client.try_ws_connect(self, self.prefix + path, headers, timeout)


class Server(Client):
    def __init__(self, api_key=None, min_timeout=1, max_timeout=0, extra="", state_dir=None,
                 env=None, start_timeout=10.0, tmp_dir=None, native="", runtime=None,
                 userns_slots=100, server=""):
        Client.__init__(self, "127.0.0.1", free_port())
        self.api_key = api_key
        self.tmp = tempfile.mkdtemp(prefix="osb-srv-", dir=tmp_dir)
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.config = os.path.join(self.tmp, "sandbox.toml")
        self.env_extra = dict(env or {})
        self.start_timeout = start_timeout
        self.proc = None
        self.subnet = None
        self._expected_exit = False
        self._log_path = os.path.join(self.tmp, "server.log")
        self._log_pos = 0
        lines = ["[server]", 'host = "127.0.0.1"', "port = %d" % self.port,
                 "min_sandbox_timeout_seconds = %d" % min_timeout,
                 "max_sandbox_timeout_seconds = %d" % max_timeout, server]
        if api_key:
            lines.append("api_key = %s" % _json.dumps(api_key))
        lines += ["[runtime]", "execd_path = %s" % _json.dumps(EXECD_BIN)]
        runtime = runtime or os.environ.get("OSB_TEST_RUNTIME")
        if runtime:
            lines.append("type = %s" % _json.dumps(runtime))
        lines += ["[native]", "state_dir = %s" % _json.dumps(self.state_dir), native]
        self._userns_auto = "userns_range" not in native
        self._userns_attempt = 0
        if self._userns_auto:
            self.userns_count = userns_slots * 65536
            lines.append(self._userns_line())
        else:
            import re
            m = re.search(r'userns_range\s*=\s*"(\d+):(\d+)"', native)
            self.userns_first, self.userns_count = \
                (int(m.group(1)), int(m.group(2))) if m else (None, None)
        userns = os.environ.get("OSB_TEST_USERNS")
        if userns and "user_namespaces" not in native:
            # Run a whole suite with user namespaces explicitly on (=1) or
            # in the old mode (=0); unset, the server's default (on).
            lines.append("user_namespaces = %s" % ("false" if userns == "0" else "true"))
        if "[image]" not in extra:
            # Tests never reach a registry outside this machine: an unknown
            # name must not turn into a pull from Docker Hub.
            lines += ["[image]", 'pull_policy = "never"']
        if "[network]" not in extra:
            # Sandboxes get real networks (NAT slots), but their DNS never
            # leaves this machine: the forwarder's upstream refuses at once.
            self.subnet = free_subnet()
            lines += ["[network]", 'dns_upstreams = ["127.0.0.1:9"]', "pool_size = 2",
                      'subnet = "%s"' % self.subnet]
        lines += [extra, ""]
        with open(self.config, "w") as f:
            f.write("\n".join(lines))

    # ------------------------------------------------------- userns range
    # Every server claims its [native] userns_range host-wide, and tests run
    # many servers at once (several suites, several worktrees): each gets a
    # range of its own in [2^24, 2^31), picked from its state dir (a new
    # Server on the same state dir gets the same one, as its sandboxes'
    # recorded ranges need) and picked again when another server holds an
    # overlapping one.
    def _userns_line(self):
        import hashlib
        seed = "%s#%d" % (self.state_dir, self._userns_attempt)
        h = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
        slots = ((1 << 31) - (1 << 24) - self.userns_count) // 65536
        self.userns_first = (1 << 24) + (h % slots) * 65536
        return 'userns_range = "%d:%d"' % (self.userns_first, self.userns_count)

    def _userns_repick(self, log):
        if not self._userns_auto or "its own userns_range" not in log or \
                self._userns_attempt >= 20:
            return False
        with open(self.config) as f:
            text = f.read()
        old = self._userns_line()
        self._userns_attempt += 1
        with open(self.config, "w") as f:
            f.write(text.replace(old, self._userns_line(), 1))
        return True

    # -------------------------------------------------------------- process
    def start(self):
        while True:
            pos = len(self.log_text())
            try:
                return self._start()
            except RuntimeError:
                if not self._userns_repick(self.log_text()[pos:]):
                    raise

    def _start(self):
        env = dict(os.environ)
        env.pop("OPENSANDBOX_SERVER_API_KEY", None)
        env.pop("SANDBOX_CONFIG_PATH", None)
        if not self.api_key:
            env["OPENSANDBOX_INSECURE_SERVER"] = "YES"
        else:
            env.pop("OPENSANDBOX_INSECURE_SERVER", None)
        env.update(self.env_extra)
        self._expected_exit = False
        log = open(self._log_path, "ab")
        self.proc = subprocess.Popen([SERVER_BIN, "--config", self.config],
                                     stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()
        if self not in osbtest._live_execds:
            osbtest._live_execds.append(self)
        end = time.monotonic() + self.start_timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %s\n%s" % (self.proc.returncode,
                                                                  self.log_text()[-3000:]))
            try:
                if Client.req(self, "GET", "/health", timeout=1).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("server did not answer /health\n" + self.log_text()[-3000:])

    def kill(self, sig=signal.SIGKILL):
        self._expected_exit = True
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)

    def restart(self):
        self.kill(signal.SIGKILL)
        return self.start()

    def log_text(self):
        try:
            with open(self._log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _new_stderr(self):
        text = self.log_text()
        new, self._log_pos = text[self._log_pos:], len(text)
        return new

    def stop(self):
        """Delete what is left, stop, check for leaks; returns a list of problems."""
        problems = []
        if self.proc and self.proc.poll() is not None and not self._expected_exit:
            problems.append("the server died on its own (status %s)" % self.proc.returncode)
        if self.proc and self.proc.poll() is None:
            try:
                self.delete_all()
            except Exception as e:  # still stop the server
                problems.append("delete_all: %r" % e)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problems.append("server ignored SIGTERM")
            if self.proc.returncode not in (0, None):
                problems.append("server exit status %s" % self.proc.returncode)
        if self in osbtest._live_execds:
            osbtest._live_execds.remove(self)
        if any(m in self.log_text() for m in osbtest.SANITIZER_MARKS):
            problems.append("sanitizer report in the server log")
        procs = leaked_processes(self.state_dir)
        if procs:
            problems.append("leaked processes: %r" % procs)
        mounts = leaked_mounts(self.state_dir)
        if mounts:
            problems.append("leaked mounts: %r" % mounts)
        procs = sandbox_processes(self.state_dir)
        if procs:
            problems.append("leaked sandbox processes: %r" % procs)
        cgs = sandbox_cgroups(self.state_dir)
        if cgs:
            problems.append("leaked cgroups: %r" % cgs)
        sdir = os.path.join(self.state_dir, "sandboxes")
        left = os.listdir(sdir) if os.path.isdir(sdir) else []
        if left:
            problems.append("leaked sandbox state dirs: %r" % left)
        if not mounts:  # never rm -rf through a live mount
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.subnet and (self.proc is None or self.proc.poll() is not None):
            release_subnet(self.subnet)
        return problems

    def __enter__(self):
        return self.start()

    def __exit__(self, et, ev, tb):
        problems = self.stop()
        if problems and et is None:
            raise RuntimeError("server teardown: " + "; ".join(problems))
        return False

    # ----------------------------------------------------------------- http
    def _auth_headers(self):
        return {"OPEN-SANDBOX-API-KEY": self.api_key} if self.api_key else {}

    def create(self, headers=None, http_timeout=60, **fields):
        body = dict(DEFAULT_SANDBOX)
        body.update(fields)
        for k in [k for k, v in fields.items() if v is Ellipsis]:
            body.pop(k)  # field=... removes a default
        return self.post("/v1/sandboxes", json=body, headers=headers, timeout=http_timeout)

    def new(self, **fields):
        r = self.create(**fields)
        if r.status != 202:
            raise RuntimeError("create -> %d %r" % (r.status, r.body[:500]))
        return r.json()

    def get_sbx(self, sid):
        return self.get("/v1/sandboxes/" + sid)

    def list_all(self, **params):
        params.setdefault("pageSize", 200)
        return self.get(qs("/v1/sandboxes", params)).json()["items"]

    def delete_all(self):
        for item in self.list_all():
            self.delete("/v1/sandboxes/" + item["id"])

    def pid_of(self, sid):
        """Host pid of the sandbox's PID 1 (from diagnostics/inspect), or None."""
        import re
        m = re.search(r"pid: (\d+)", self.get("/v1/sandboxes/%s/diagnostics/inspect" % sid).text)
        return int(m.group(1)) if m else None

    def endpoint(self, sid, port=44772):
        return self.get("/v1/sandboxes/%s/endpoints/%d" % (sid, port)).json()

    def execd(self, sid, port=44772):
        ep = self.endpoint(sid, port)
        return ProxyExecd(self, sid, port, ep.get("headers", {}).get("X-EXECD-ACCESS-TOKEN"))



def npm_ci(pkg_dir, module):
    """npm ci of a pinned tests/ package (once per lock file: a stamp in
    node_modules); offline, an installed `module` will do. None, or npm's error."""
    import hashlib
    stamp = os.path.join(pkg_dir, "node_modules", ".osb-lock-sha256")
    with open(os.path.join(pkg_dir, "package-lock.json"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    try:
        with open(stamp) as f:
            if f.read().strip() == want:
                return None
    except OSError:
        pass
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=pkg_dir,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if os.path.isdir(os.path.join(pkg_dir, "node_modules", module)):
            return None
        return r.stderr[-500:]
    with open(stamp, "w") as f:
        f.write(want)
    return None


def run_node_checks(script, args=(), env=None, timeout=480):
    """Runs a driver of tests/console/ under node; (its completed process, the
    JSON objects of its stdout lines: one {check, ok, diag} per check, other
    lines skipped)."""
    r = subprocess.run(["node", os.path.join(REPO, "tests", "console", script)] + list(args),
                       env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                       timeout=timeout)
    checks = []
    for line in r.stdout.splitlines():
        try:
            checks.append(_json.loads(line))
        except ValueError:
            continue
    return r, checks

if __name__ == "__main__":
    print("ok - serverlib imports (helpers for test_server*.py)")
    print("1..1")
