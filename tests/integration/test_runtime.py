#!/usr/bin/python3
"""The native runtime without the server (src/runtime, issue #3 "Native
runtime" and "Isolation must hold").

Drives build/tests/runtime/test_runtime_driver (`serve STATE_DIR`: one JSON
request per line on stdin, one JSON answer per line on stdout) and talks to
each sandbox's execd over its unix socket (<state>/sandboxes/<id>/
execd.sock, host-only), as the server does. Every isolation property is checked from
inside a sandbox, with commands run through execd's /command.

This module is also imported by test_runtime_images.py (Driver, Sandbox)."""
import re
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import REPO, TAP, exit_code, stderr_lines, stdout_lines, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
DRIVER = os.path.join(REPO, BUILD, "tests", "runtime", "test_runtime_driver")
TOKEN = "rt-test-token"
DOCKER_CAPS = 0xa80425fb  # Docker's default capability set


def execd_is_static():
    execd = os.environ.get("EXECD_BIN") or os.path.join(REPO, BUILD, "bin", "execd")
    r = subprocess.run(["file", "-L", execd], capture_output=True, text=True)
    return "statically linked" in r.stdout or "static-pie linked" in r.stdout


def skip_reason():
    if os.geteuid() != 0:
        return "needs root"
    if not os.path.exists(DRIVER):
        return "%s not built" % DRIVER
    return None


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        http.client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Sandbox:
    """A created sandbox: .id .pid .sock .log .info (the driver's answer)."""

    def __init__(self, driver, info):
        self.driver = driver
        self.info = info
        self.id = info["id"]
        self.pid = info["pid"]
        self.sock = info["sock"]
        self.log = info["log"]

    def request(self, method, path, body=None, timeout=30):
        c = UnixHTTPConnection(self.sock, timeout)
        try:
            hdrs = {"X-EXECD-ACCESS-TOKEN": TOKEN}
            if body is not None:
                body = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def ready(self, timeout=5):
        def ping():
            return self.request("GET", "/ping", timeout=1)[0] == 200
        return wait_for(ping, timeout, 0.002)

    def run(self, cmd, timeout=60):
        """-> (stdout text, stderr text, exit code)"""
        status, body = self.request("POST", "/command", {"command": cmd}, timeout=timeout)
        if status != 200:
            raise RuntimeError("POST /command -> %d: %r" % (status, body[:300]))
        events = [json.loads(b) for b in body.decode().split("\n\n") if b.strip()]
        return ("\n".join(stdout_lines(events)), "\n".join(stderr_lines(events)),
                exit_code(events))

    def host_path(self, path):
        """The host's view of a path inside the sandbox."""
        return "/proc/%d/root%s" % (self.pid, path)

    def destroy(self):
        return self.driver.call("destroy", id=self.id)


class Driver:
    def __init__(self, state=None, keep_state=False, env=None):
        self.state = state or tempfile.mkdtemp(prefix="osb-rt-")
        self.keep_state = keep_state or state is not None
        # stderr (the driver's, every helper's) goes to a file: a pipe
        # nobody drains would block them all once full.
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([DRIVER, "serve", self.state], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, text=True,
                                     bufsize=1, cwd=REPO, env=dict(os.environ, **(env or {})))
        self.seq = 0
        self.answers = {}
        self.events = []
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        hello = self._wait(0, 30)
        if not hello.get("ok"):
            raise RuntimeError("driver: %s" % hello.get("error"))
        self.describe = hello.get("describe")
        self.sandboxes = []

    def _read(self):
        for line in self.proc.stdout:
            try:
                j = json.loads(line)
            except ValueError:
                continue
            with self.cv:
                if "event" in j:
                    self.events.append(j)
                else:
                    self.answers[j.get("seq")] = j
                self.cv.notify_all()

    def _wait(self, seq, timeout):
        end = time.monotonic() + timeout
        with self.cv:
            while seq not in self.answers:
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and seq not in self.answers:
                    raise RuntimeError("driver: no answer to request %d (stderr tail: %s)" % (
                        seq, self.stderr_tail()))
                self.cv.wait(min(left, 0.1))
            return self.answers.pop(seq)

    def stderr_tail(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read()[-2000:]

    def send(self, op, **kw):
        self.seq += 1
        kw.update(op=op, seq=self.seq)
        self.proc.stdin.write(json.dumps(kw) + "\n")
        self.proc.stdin.flush()
        return self.seq

    def call(self, op, timeout=45, **kw):
        return self._wait(self.send(op, **kw), timeout)

    def create(self, id, image="host", entrypoint=None, token=TOKEN, check=True, wait=True,
               **kw):
        if entrypoint is None:
            entrypoint = ["/bin/sh", "-c", "exec sleep 100000"]
        r = self.call("create", id=id, image=image, entrypoint=entrypoint, token=token, **kw)
        if not check:
            return r
        if not r.get("ok"):
            raise RuntimeError("create %s: %s" % (id, r.get("error")))
        r["id"] = id
        sb = Sandbox(self, r)
        self.sandboxes.append(sb)
        if wait and not sb.ready():
            raise RuntimeError("execd of %s did not answer on %s" % (id, sb.sock))
        return sb

    def exited(self, id):
        with self.cv:
            return any(e.get("event") == "exit" and e.get("id") == id for e in self.events)

    def close(self):
        for sb in self.sandboxes:
            try:
                sb.destroy()
            except Exception:
                pass
        try:
            self.call("quit", timeout=5)
        except Exception:
            pass
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not self.keep_state:
            shutil.rmtree(self.state, ignore_errors=True)


def host_mounts():
    with open("/proc/self/mountinfo") as f:
        return sorted(" ".join(l.split()[3:5]) for l in f)


def cgroup_dirs(id):
    out = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if os.path.basename(root).startswith("opensandbox-") and id in dirs:
            out.append(os.path.join(root, id))
        if root.count("/") > 8:
            dirs[:] = []
    return out


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


# ------------------------------------------------------------------ tests

def test_basics(t, d):
    sb = d.create("basics")
    out, err, code = sb.run("echo hi; id -u; hostname; cat /etc/hostname")
    t.eq((out.split("\n"), code), (["hi", "0", "basics", "basics"], 0),
         "a command runs as root with the sandbox's hostname")
    out, _, _ = sb.run("cat /proc/1/cmdline | tr '\\0' ' '")
    t.ok(re.match(r"/opt/opensandbox/execd --port 44772 --listen-fd 102"
                  r" --ready-fd \d+ --keep-fd 100 --keep-fd 101 --report-fd 103 -- /bin/sh", out), "execd is PID 1 with the entrypoint after --",
         out)
    out, _, code = sb.run("/usr/bin/python3 -c 'print(6*7)'")
    t.eq((out, code), ("42", 0), "the host image runs the host's python3")
    # execd keeps the writable layer's handle (fd 100) for snapshots; root in
    # the sandbox must not reach it, nor execd's memory and environment.
    out, _, code = sb.run("ls /proc/$$/fd/ | grep -cx 100; readlink /proc/1/fd/100 || echo denied;"
                          " cat /proc/1/environ >/dev/null 2>&1 || echo denied")
    t.eq(out.split("\n"), ["0", "denied", "denied"],
         "the layer fd is not inherited; /proc/1/fd and /proc/1/environ are closed to the sandbox")
    out, _, _ = sb.run("grep -E '^(CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")
    f = dict(l.split(":\t") for l in out.splitlines())
    t.eq((int(f.get("CapEff", "0"), 16), int(f.get("CapBnd", "0"), 16),
          int(f.get("CapAmb", "1"), 16)), (DOCKER_CAPS, DOCKER_CAPS, 0),
         "capabilities are Docker's default set, nothing ambient")
    t.eq((f.get("NoNewPrivs"), f.get("Seccomp")), ("1", "2"), "no_new_privs and a seccomp filter")
    out, _, _ = sb.run("cat /proc/self/cgroup")
    t.ok(out and all(l.endswith(":/") for l in out.splitlines()),
         "a private cgroup namespace rooted at the sandbox's cgroups", out)
    out, _, _ = sb.run("for f in /proc/kcore /proc/keys /proc/timer_list; do "
                       "cat $f 2>/dev/null | wc -c; done; ls /sys/firmware 2>/dev/null | wc -l; "
                       "grep -c ' /proc/sys ro,' /proc/self/mountinfo")
    t.eq(out.split(), ["0", "0", "0", "0", "1"], "Docker's masked and read-only paths")
    out, _, _ = sb.run("cat /etc/os-release | head -1; grep -c . /etc/passwd; env | sort | "
                       "grep -E '^(HOME|HOSTNAME|PATH|EXECD_ACCESS_TOKEN)='")
    t.ok("OpenSandbox host image" in out and "HOSTNAME=basics" in out and
         "HOME=/root" in out and "EXECD_ACCESS_TOKEN" not in out,
         "private /etc and Docker-like env; the token is not inherited", out)
    with open(sb.log) as f:
        log = f.read()
    t.ok("listening on" in log, "execd's output goes to the sandbox log", log[-500:])
    st = d.call("stats", id="basics")
    t.ok(st["ok"] and st["pids"] >= 2 and st["memory"] > 0 and st["cpu_ns"] > 0,
         "stats", st)
    t.ok(d.call("alive", id="basics")["alive"], "alive")


def test_env_and_entrypoint(t, d):
    sb = d.create("entry", env=["FOO=bar baz", "PATH=/usr/bin:/bin"],
                  entrypoint=["/bin/sh", "-c", "echo \"entry $FOO\"; exec sleep 100000"],
                  hostname="custom-host")
    out, _, _ = sb.run("echo $FOO; echo $PATH; hostname")
    t.eq(out.split("\n"), ["bar baz", "/usr/bin:/bin", "custom-host"],
         "spec env and hostname reach the sandbox")
    t.ok(wait_for(lambda: "entry bar baz" in open(sb.log).read(), 60),
         "the entrypoint runs with the env and logs to the sandbox log")


def test_processes_and_files(t, d):
    sb = d.create("iso-files")
    marker = tempfile.mkdtemp(prefix="osb-host-secret-", dir="/tmp")
    try:
        procs, _, _ = sb.run("ps -e -o pid=,args=")
        cmdlines, _, _ = sb.run("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
        n = len([l for l in procs.splitlines() if l.strip()])
        t.ok(n <= 6, "ps shows only the sandbox's processes", procs)
        t.ok("test_runtime" not in cmdlines and "python3" not in procs.replace("ps -e", ""),
             "no host process is visible in /proc", cmdlines)
        out, _, _ = sb.run("ls -A /root /home /tmp")
        t.ok("osb-host-secret" not in out and len(out.split()) <= 6,
             "host /root, /home and /tmp are not visible", out)
        out, _, code = sb.run("ls /work %s 2>&1" % marker)
        t.ok(code != 0 and "No such file" in out, "nor /work", out)
        out, _, code = sb.run("ls /etc/ssl/private /etc/ssh 2>&1")
        t.ok(code != 0 and "No such file" in out, "host keys are not copied into /etc", out)
        out, _, _ = sb.run("cat /etc/shadow")
        t.eq(out, "root:*:19000:0:99999:7:::", "/etc/shadow is the image's, not the host's")
        out, _, code = sb.run("ls /usr/bin/python3 && touch /usr/bin/x 2>&1; echo $?; "
                              "touch /bin/y 2>&1; echo $?")
        t.ok("Read-only file system" in out and out.strip().endswith("1"),
             "the host's /usr is read-only", out)
        out, _, _ = sb.run("echo data > /tmp/f && cat /tmp/f && touch /etc/newfile && echo ok")
        t.eq(out, "data\nok", "the root is writable (overlay)")
        t.ok(not os.path.exists("/etc/newfile"), "writes stay in the sandbox")
    finally:
        shutil.rmtree(marker, ignore_errors=True)


# A python3 one-liner that makes a raw system call and prints its errno.
SYSCALL = ("/usr/bin/python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
           "r=%s; print(\"errno=%%d\" %% (ctypes.get_errno() if r < 0 else 0))'")
EPERM, ESRCH = 1, 3


def test_privileged_ops(t, d):
    sb = d.create("iso-priv")
    shell_cases = [
        ("mount", "mkdir -p /mnt/x && mount -t tmpfs none /mnt/x"),
        ("bind mount", "mount --bind /tmp /mnt"),
        ("unshare user ns", "unshare -U true"),
        ("unshare mount ns", "unshare -m true"),
        ("unshare net ns", "unshare -n true"),
        ("write /proc/sys", "echo core > /proc/sys/kernel/core_pattern"),
        ("write /proc/sys (net)", "echo 1 > /proc/sys/net/ipv4/ip_forward"),
        ("write /sys", "echo 1 > /sys/kernel/mm/ksm/run || echo x > /sys/kernel/uevent_helper"),
        ("create files in /sys", "touch /sys/x"),
        ("use a device node it made", "mknod /tmp/sda b 8 0 && head -c1 /tmp/sda"),
        ("read the host disk", "head -c1 /dev/vda"),
        ("set the clock", "date -s 2000-01-01"),
        ("sethostname", "hostname evil"),
        ("kill a host process", "kill -0 %d" % os.getpid()),
    ]
    for name, cmd in shell_cases:
        out, err, code = sb.run(cmd + " 2>&1")
        t.ok(code not in (0, None), "%s fails" % name, "exit %r: %s %s" % (code, out, err))
        if "/proc/sys" in cmd or "/sys/" in cmd:
            t.ok("Read-only file system" in out + err, "... because it is read-only", out + err)
    sys_cases = [
        ("finit_module", "l.syscall(313, os.open(\"/dev/null\", 0), b\"\", 0)", EPERM),
        ("init_module", "l.syscall(175, b\"x\", 1, b\"\")", EPERM),
        ("unshare(CLONE_NEWUSER)", "l.syscall(272, 0x10000000)", EPERM),
        ("setns", "l.syscall(308, 0, 0)", EPERM),
        ("clone(CLONE_NEWUSER)", "l.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)", EPERM),
        ("clone3", "l.syscall(435, 0, 0)", 38),
        ("keyctl", "l.syscall(250, 0, -1, 0, 0, 0)", EPERM),
        ("bpf", "l.syscall(321, 0, 0, 0)", EPERM),
        ("perf_event_open", "l.syscall(298, 0, 0, -1, -1, 0)", EPERM),
        ("open_by_handle_at", "l.syscall(304, -100, 0, 0)", EPERM),
        ("personality(ADDR_NO_RANDOMIZE)", "l.personality(0x0040000)", EPERM),
        ("personality with high bits", "l.syscall(135, 0x100040000)", EPERM),
        ("ptrace of a host process", "l.ptrace(16, %d, 0, 0)" % os.getpid(), ESRCH),
        ("reboot", "l.syscall(169, 0xfee1dead, 672274793, 0x1234567, 0)", EPERM),
        ("swapon", "l.syscall(167, b\"/tmp\", 0)", EPERM),
    ]
    for name, call, want in sys_cases:
        out, err, code = sb.run(SYSCALL % call)
        t.eq(out, "errno=%d" % want, "%s is refused" % name)
    out, _, _ = sb.run(SYSCALL % "l.personality(0xffffffff)")
    t.eq(out, "errno=0", "personality query (0xffffffff) is allowed, as in Docker")
    out, _, code = sb.run("/usr/bin/python3 -c 'import os; pid=os.fork(); os._exit(0) if pid==0 "
                          "else print(os.waitpid(pid,0)[1])'")
    t.eq((out, code), ("0", 0), "fork (clone without namespace flags) works")
    out, _, code = sb.run("sleep 100 & pid=$!; /usr/bin/python3 -c 'import ctypes,sys; "
                          "l=ctypes.CDLL(None,use_errno=True); print(l.ptrace(16, int(sys.argv[1]),"
                          " 0, 0))' $pid; kill $pid")
    t.eq(out, "0", "ptrace of a process in the same sandbox works (as in Docker)")
    out, _, _ = sb.run("hostname; cat /proc/sys/kernel/hostname")
    t.eq(out, "iso-priv\niso-priv", "the hostname did not change")


BOMB = """/usr/bin/python3 -c '
import os, time
kids = []
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print(len(kids))
for k in kids:
    os.kill(k, 9)
for k in kids:
    os.waitpid(k, 0)
print("done")'"""


def test_fork_bomb(t, d):
    sb = d.create("bomb", pids=64)
    out, err, code = sb.run(BOMB, timeout=60)
    lines = out.split("\n")
    started = int(lines[0]) if lines and lines[0].isdigit() else -1
    t.ok(0 < started < 64 and lines[-1] == "done", "a fork bomb stops at the pids limit",
         "started %d: %s %s" % (started, out[-300:], err[-300:]))
    st = d.call("stats", id="bomb")
    t.ok(st["ok"] and st["pids"] <= 64, "pids.current stays within the limit", st)
    out, _, code = sb.run("echo alive")
    t.eq((out, code), ("alive", 0), "execd still serves after the bomb")


def test_memory_hog(t, d, other):
    sb = d.create("hog", memory=64 << 20)
    out, err, code = sb.run("/usr/bin/python3 -c 'a = bytearray(200 << 20); print(len(a))'; "
                            "echo exit=$?", timeout=60)
    t.ok("exit=137" in out and "209715200" not in out,
         "a 200 MiB allocation is OOM-killed in a 64 MiB sandbox", out + err)
    out, _, code = sb.run("echo still-here")
    t.eq(out, "still-here", "the sandbox's execd survives its OOM")
    t.ok(other.run("echo ok")[0] == "ok", "another sandbox is unaffected")
    out, _, _ = sb.run("/usr/bin/python3 -c 'a = bytearray(20 << 20); print(len(a))'")
    t.eq(out, str(20 << 20), "allocations within the limit work")


def test_disk_limit(t, d):
    sb = d.create("disk", disk=8 << 20)
    out, _, _ = sb.run("dd if=/dev/zero of=/tmp/big bs=1M count=20 2>&1; echo exit=$?")
    t.ok("No space left" in out and "exit=1" in out, "the writable layer is bounded", out)


def test_network(t, d, other):
    import http.server
    srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    port = srv.server_address[1]
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        sb = d.create("net")
        probe = ("/usr/bin/python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(2); "
                 "s.connect((\"127.0.0.1\", int(sys.argv[1]))); print(\"connected\")' %d 2>&1; "
                 "echo exit=$?")
        out, _, _ = sb.run(probe % port)
        t.ok("connected" not in out and "Connection refused" in out,
             "the host's loopback services are unreachable", out)
        out, _, _ = sb.run("ip -o link 2>/dev/null | awk '{print $2}' || ls /sys/class/net")
        t.eq(out.replace(":", "").split(), ["lo"], "only lo in the sandbox's network namespace")
        # a server inside `other`, on the same loopback port number
        other.run("/usr/bin/python3 -m http.server 18999 --bind 127.0.0.1 >/dev/null 2>&1 &")
        t.ok(wait_for(lambda: "connected" in other.run(probe % 18999)[0], 60),
             "a sandbox reaches its own loopback service")
        out, _, _ = sb.run(probe % 18999)
        t.ok("connected" not in out, "one sandbox cannot reach another's loopback", out)
    finally:
        srv.shutdown()


def test_few_filesystems(t, d, a, b):
    """/dev/shm is a directory of the writable layer bound noexec, and /sys is a
    clone of one sysfs shared by every sandbox: neither is a superblock of its own
    (docs/runtime.md, "Why so few filesystems")."""
    stat = ("stat -c '%d %a' /dev /dev/shm /sys; "
            "awk '$5 == \"/dev/shm\" || $5 == \"/sys\"' /proc/self/mountinfo")
    out_a, _, _ = a.run(stat)
    out_b, _, _ = b.run(stat)
    la, lb = out_a.splitlines(), out_b.splitlines()
    t.ok(len(la) == 5 and la[0].split()[0] == la[1].split()[0],
         "/dev/shm is on the writable layer's filesystem, as /dev is", out_a)
    t.eq(la[1].split()[1] if len(la) > 1 else "", "1777", "/dev/shm is mode 1777")
    t.ok(len(lb) == 5 and la[2].split()[0] == lb[2].split()[0], "two sandboxes share one sysfs",
         (out_a, out_b))
    shm = [l for l in la if " /dev/shm " in l]
    t.ok(shm and "noexec" in shm[0].split()[5] and "nosuid" in shm[0].split()[5],
         "/dev/shm is nosuid and noexec", shm)
    sysm = [l for l in la if " /sys " in l]
    t.ok(sysm and sysm[0].split()[5].startswith("ro,"), "/sys is read-only", sysm)
    out, _, code = a.run("echo x > /dev/shm/f && cat /dev/shm/f && cp /bin/true /dev/shm/t && "
                         "(/dev/shm/t && echo ran || echo refused)")
    t.eq(out.split(), ["x", "refused"], "/dev/shm is writable, and nothing there executes", out)


def test_sandboxes_apart(t, d, a, b):
    b.run("echo secret-b > /tmp/secret-b; sleep 777 >/dev/null 2>&1 &")
    out, _, _ = a.run("ls /tmp; ps -e -o args=")
    t.ok("secret-b" not in out and "sleep 777" not in out,
         "a sandbox sees neither another's files nor its processes", out)
    out, _, _ = a.run("cat /proc/%d/root/tmp/secret-b 2>&1; ls /proc | grep -c '^[0-9]'" % b.pid)
    t.ok("No such file" in out, "nor through /proc with the other's host pid", out)


def test_pause_resume(t, d):
    sb = d.create("pause")
    sb.run("(i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.01; done) "
           ">/dev/null 2>&1 &")
    counter = sb.host_path("/tmp/n")

    def value():
        with open(counter) as f:
            return int(f.read().strip() or 0)
    t.ok(wait_for(lambda: value() > 3, 60), "the counter runs")
    r = d.call("pause", id="pause")
    t.ok(r["ok"], "pause", r)
    v1 = value()
    time.sleep(0.3)
    v2 = value()
    t.eq(v2, v1, "the counter stops while paused")
    t.diag("pause took %.2f ms" % r["ms"])
    r = d.call("resume", id="pause")
    t.ok(r["ok"], "resume", r)
    t.ok(wait_for(lambda: value() > v2 + 3, 60), "the counter runs again after resume")
    t.diag("resume took %.2f ms" % r["ms"])
    t.ok(d.call("pause", id="pause")["ok"], "pause again")
    r = d.call("destroy", id="pause")
    t.ok(r["ok"], "destroy a paused sandbox", r)
    t.ok(not pid_alive(sb.pid) and not cgroup_dirs("pause"), "nothing of it is left")
    d.sandboxes.remove(sb)


def zombie_children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return []
    out = []
    for k in kids:
        try:
            with open("/proc/%s/stat" % k) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    out.append(int(k))
        except OSError:
            pass
    return out


def test_destroy_leaves_nothing(t, d):
    before = host_mounts()
    sb = d.create("gone", entrypoint=["/bin/sh", "-c", "sleep 100000 & exec sleep 100000"])
    sb.run("sleep 5000 >/dev/null 2>&1 &")
    dirs = cgroup_dirs("gone")
    t.ok(len(dirs) >= 2, "the sandbox has cgroups", dirs)
    t.eq(host_mounts(), before, "creating a sandbox adds no mount on the host")
    r = d.call("destroy", id="gone")
    t.ok(r["ok"], "destroy", r)
    t.diag("destroy took %.2f ms" % r["ms"])
    d.sandboxes.remove(sb)
    t.ok(not pid_alive(sb.pid), "PID 1 is gone")
    t.ok(wait_for(lambda: not zombie_children(d.proc.pid), 30),
         "the runtime reaped its helper and PID 1 (no zombie child)", zombie_children(d.proc.pid))
    t.eq(cgroup_dirs("gone"), [], "no cgroup is left")
    t.ok(not os.path.exists(os.path.join(d.state, "sandboxes", "gone")), "no state dir is left")
    t.eq(host_mounts(), before, "no mount is left")
    t.ok(wait_for(lambda: not d.exited("gone"), 0.2) and not d.exited("gone"),
         "destroy cancels the exit watch")
    r = d.call("destroy", id="gone")
    t.ok(r["ok"], "destroy is idempotent", r)


def test_exit_watch(t, d):
    sb = d.create("dies")
    os.kill(sb.pid, 9)
    t.ok(wait_for(lambda: d.exited("dies"), 60), "the exit of PID 1 is reported")
    t.ok(wait_for(lambda: not os.path.exists("/proc/%d" % sb.pid), 60),
         "PID 1 is reaped by the runtime (child subreaper)")
    t.ok(not d.call("alive", id="dies")["alive"], "not alive")
    r = d.call("destroy", id="dies")
    t.ok(r["ok"] and not cgroup_dirs("dies"), "destroy after death cleans up", r)
    d.sandboxes.remove(sb)


def fd_targets(pid):
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return out


def output_pipe(pid):
    """The pipe a sandbox's PID 1 writes its output to (its fd 1)."""
    try:
        return os.readlink("/proc/%d/fd/1" % pid)
    except OSError:
        return None


def test_descriptors(t, d):
    """Thousands of idle sandboxes share one open files limit: each costs the
    runtime's process one descriptor (its output pipe), the watch none. (The
    runtime's other descriptors come and go with what earlier tests' sandboxes
    are doing, so each sandbox's own are counted.)"""
    sbs = [d.create("fds-%d" % i) for i in range(4)]
    pipes = [output_pipe(sb.pid) for sb in sbs]
    held = fd_targets(d.proc.pid)
    t.ok(all(p and p.startswith("pipe:") for p in pipes) and
         [held.count(p) for p in pipes] == [1, 1, 1, 1],
         "each idle sandbox costs the runtime one descriptor: its output pipe", (pipes, held))
    t.ok(not any("/log" in x or x.startswith("pidfd") or x == "anon_inode:[pidfd]" for x in held),
         "no log file and no pidfd is held for an idle sandbox", held)
    os.kill(sbs[0].pid, 9)
    t.ok(wait_for(lambda: d.exited("fds-0"), 60), "the end of a sandbox watched by inotify is seen")
    for sb in sbs:
        d.call("destroy", id=sb.id)
        d.sandboxes.remove(sb)
    t.ok(wait_for(lambda: not set(pipes) & set(fd_targets(d.proc.pid)), 30),
         "destroying them gives the descriptors back", (pipes, fd_targets(d.proc.pid)))


def test_destroy_while_creating(t, d):
    for i in range(5):
        id = "racing-%d" % i
        c = d.send("create", id=id, image="host", entrypoint=["/bin/sleep", "100000"], token=TOKEN)
        x = d.send("destroy", id=id)
        rc, rx = d._wait(c, 45), d._wait(x, 45)
        t.ok(rx["ok"], "destroy during create succeeds (%d)" % i, rx)
        t.ok(not rc["ok"] and "destroyed while being created" in rc["error"],
             "the create reports it was destroyed (%d)" % i, rc)
        t.ok(not cgroup_dirs(id) and not os.path.exists(os.path.join(d.state, "sandboxes", id)),
             "nothing is left (%d)" % i)
        if rc.get("pid"):
            t.ok(not pid_alive(rc["pid"]), "no process is left (%d)" % i)


def test_log_bound(t, d):
    sb = d.create("chatty", entrypoint=[
        "/bin/sh", "-c", "head -c 12582912 /dev/zero | tr '\\0' x; echo; echo THE-END; "
        "exec sleep 100000"])
    t.ok(wait_for(lambda: "THE-END" in open(sb.log).read()[-100:], 60),
         "the entrypoint's output reaches the log")
    t.ok(wait_for(lambda: os.path.getsize(sb.log) <= 8 << 20, 60),
         "the log is trimmed below 8 MiB within a second or two",
         os.path.getsize(sb.log))
    size = os.path.getsize(sb.log)
    t.ok(size >= 3 << 20, "and keeps about the last 4 MiB", size)
    t.ok(open(sb.log).read().endswith("THE-END\n"), "the tail survives the trim")
    out, _, _ = sb.run("echo after")
    t.eq(out, "after", "the sandbox keeps running")


def test_bad_input(t, d):
    cases = [
        ({"id": "bad/id"}, 1, "an id with '/'"),
        ({"id": ""}, 1, "an empty id"),
        ({"id": "x" * 65}, 1, "an id over 64 characters"),
        ({"id": "ok-1", "image": "nope"}, 2, "an unknown image"),
        ({"id": "ok-1", "image": "../../etc"}, 1, "an image name with .."),
        ({"id": "ok-1", "entrypoint": []}, 1, "an empty entrypoint"),
        ({"id": "ok-1", "token": ""}, 1, "no execd token"),
        ({"id": "ok-1", "memory": 1000}, 1, "a memory limit below 4 MiB"),
        ({"id": "ok-1", "pids": 5}, 1, "a pids limit below 24"),
        ({"id": "ok-1", "hostname": "a b"}, 1, "a bad hostname"),
        ({"id": "ok-1", "env": ["NOEQUALS"]}, 1, "an env entry without '='"),
    ]
    for kw, code, what in cases:
        kw.setdefault("entrypoint", ["/bin/true"])
        kw.setdefault("token", TOKEN)
        r = d.call("create", image=kw.pop("image", "host"), **kw)
        t.ok(not r["ok"] and r["code"] == code and r["error"], "%s is refused" % what, r)
    sb = d.create("dup")
    r = d.call("create", id="dup", image="host", entrypoint=["/bin/true"], token=TOKEN)
    t.ok(not r["ok"] and r["code"] == 3, "a duplicate id is refused (EXISTS)", r)
    t.ok(sb.run("echo ok")[0] == "ok", "and the first sandbox is untouched")
    for op in ("pause", "resume", "stats"):
        r = d.call(op, id="no-such-sandbox")
        t.ok(not r["ok"] and r["code"] == 2, "%s of an unknown sandbox is NOTFOUND" % op, r)
    t.ok(d.call("destroy", id="no-such-sandbox")["ok"], "destroy of an unknown sandbox is fine")


def test_failed_create_cleans_up(t, d):
    # An image whose /opt is a file: the helper cannot make the execd mount
    # point and must report the step and leave nothing behind.
    img = tempfile.mkdtemp(prefix="osb-badimg-")
    try:
        root = os.path.join(img, "root")
        os.makedirs(os.path.join(root, "etc"))
        open(os.path.join(root, "opt"), "w").close()
        tar = os.path.join(img, "bad.tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        r = d.call("import", name="bad-opt", tar=tar)
        t.ok(r["ok"], "import an image with /opt as a file", r)
        r = d.call("create", id="broken", image="bad-opt", entrypoint=["/bin/true"], token=TOKEN)
        t.ok(not r["ok"] and "opt" in r["error"], "create fails naming the step", r)
        t.ok(not os.path.exists(os.path.join(d.state, "sandboxes", "broken")) and
             not cgroup_dirs("broken"), "a failed create leaves no state dir and no cgroup")
        r = d.call("rmimage", name="bad-opt")
        t.ok(r["ok"], "the image is not held by the failed sandbox", r)
    finally:
        shutil.rmtree(img, ignore_errors=True)


def test_restart(t):
    """A second runtime on the same state dir (a restarted server):
    re-adopts a sandbox it is told about, removes one it is not."""
    state = tempfile.mkdtemp(prefix="osb-rt-restart-")
    d1 = Driver(state)
    try:
        keep = d1.create("keep")
        lose = d1.create("lose")
        d1.sandboxes = []
        d1.proc.kill()  # the "server" dies without cleaning up
        d1.proc.wait()
        d2 = Driver(state)
        try:
            r = d2.call("cleanup", known=["keep"])
            t.ok(r["ok"], "cleanup of orphans", r)
            t.ok(not pid_alive(lose.pid) and not cgroup_dirs("lose") and
                 not os.path.exists(os.path.join(state, "sandboxes", "lose")),
                 "an unknown sandbox is removed entirely")
            t.ok(pid_alive(keep.pid) and keep.ready(), "a known sandbox keeps running")
            r = d2.call("watch", id="keep", pid=keep.pid, start_time=keep.info["start_time"])
            t.ok(r["ok"], "re-adopt: watch its PID 1 (not our child)", r)
            r = d2.call("watch", id="keep", pid=keep.pid, start_time=1)
            t.ok(not r["ok"] and r["code"] == 2, "a wrong start time is not the sandbox", r)
            t.ok(d2.call("pause", id="keep")["ok"] and d2.call("resume", id="keep")["ok"],
                 "pause/resume after the restart")
            os.kill(keep.pid, 9)
            t.ok(wait_for(lambda: d2.exited("keep"), 60), "its exit is reported after a restart")
            t.ok(d2.call("destroy", id="keep")["ok"] and not cgroup_dirs("keep"),
                 "destroy after the restart")
        finally:
            d2.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_busybox_image(t, d):
    if not execd_is_static():
        t.skip("busybox image", "execd is not static (sanitizer build)")
        return
    tmp = tempfile.mkdtemp(prefix="osb-bb-")
    try:
        tar = os.path.join(tmp, "busybox.tar")
        t0 = time.monotonic()
        subprocess.run([os.path.join(REPO, "scripts", "make-image-busybox.sh"), tar], check=True,
                       capture_output=True)
        t.diag("busybox image tar built in %.0f ms" % ((time.monotonic() - t0) * 1000))
        r = d.call("import", name="busybox", tar=tar)
        t.ok(r["ok"], "import the busybox image", r)
        t.diag("import took %.1f ms" % r["ms"])
        sb = d.create("bb", image="busybox")
        out, _, code = sb.run("cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /usr/bin | wc -l; "
                              "ls /usr/lib 2>&1 | head -1; cat /etc/hostname")
        lines = out.split("\n")
        t.ok(lines[0].startswith("/opt/opensandbox/execd") and int(lines[1]) > 100 and
             lines[-1] == "bb", "the static execd runs as PID 1 in a busybox-only root", out)
        t.ok(not os.path.exists(sb.host_path("/usr/bin/python3")),
             "nothing of the host is in a busybox sandbox")
        r = d.call("rmimage", name="busybox")
        t.ok(not r["ok"] and r["code"] == 3 and "bb" in r["error"],
             "an image in use cannot be removed", r)
        sb.destroy()
        d.sandboxes.remove(sb)
        t.ok(d.call("rmimage", name="busybox")["ok"], "removed once unused")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    t = TAP()
    why = skip_reason()
    if why:
        t.skip("native runtime", why)
        t.done()
    d = Driver()
    try:
        t.diag(d.describe)
        t.run(test_basics, t, d)
        t.run(test_env_and_entrypoint, t, d)
        t.run(test_processes_and_files, t, d)
        t.run(test_privileged_ops, t, d, timeout=60)
        t.run(test_fork_bomb, t, d, timeout=90)
        other = d.create("other")
        t.run(test_memory_hog, t, d, other, timeout=90)
        t.run(test_disk_limit, t, d)
        t.run(test_network, t, d, other)
        t.run(test_sandboxes_apart, t, d, d.create("apart-a"), d.create("apart-b"))
        t.run(test_few_filesystems, t, d, d.create("fs-a"), d.create("fs-b"))
        t.run(test_pause_resume, t, d)
        t.run(test_destroy_leaves_nothing, t, d)
        t.run(test_exit_watch, t, d)
        t.run(test_descriptors, t, d)
        t.run(test_destroy_while_creating, t, d)
        t.run(test_log_bound, t, d)
        t.run(test_bad_input, t, d)
        t.run(test_failed_create_cleans_up, t, d)
        t.run(test_busybox_image, t, d, timeout=60)
    finally:
        ids = [sb.id for sb in d.sandboxes]
        d.close()
        left = [i for i in ids if cgroup_dirs(i)]
        t.ok(not left, "closing destroys every sandbox's cgroups", left)
    t.run(test_restart, t, timeout=60)
    t.run(test_v1_only, t, timeout=90)
    t.done()


def test_v1_only(t):
    """The pure cgroup v1 paths (v1 freezer, freeze-kill-thaw, cpuacct),
    forced on a hybrid host."""
    d = Driver(env={"OSB_RT_CGROUP_V1_ONLY": "1"})
    try:
        t.diag(d.describe)
        t.ok("v2" not in d.describe and "freezer" in d.describe, "v1 layout with the freezer",
             d.describe)
        sb = d.create("v1")
        t.ok(sb.run("echo hi")[0] == "hi", "a sandbox runs")
        st = d.call("stats", id="v1")
        t.ok(st["ok"] and st["cpu_ns"] > 0 and st["pids"] >= 2, "stats from v1 files", st)
        t.run(test_pause_resume, t, d)
        t.run(test_fork_bomb, t, d)
        t.run(test_destroy_leaves_nothing, t, d)
    finally:
        d.close()


if __name__ == "__main__":
    main()
