#!/usr/bin/python3
"""osb, the command line, against a real server with an API key: every
command group (sandbox, command, exec, file, code, egress, diagnostics,
snapshot, pool, batch, image, config, completion), the exit codes (0, the
remote command's own, 1 for a server error with its code in the message, 2
for bad usage, 3 when the server cannot be reached, 130 on Ctrl-C), -o json
(parsed: the server's documents with the API's field names), -o yaml
(parsed when PyYAML is there), tables that fit a terminal, colors only on a
terminal, the progress bar of large transfers, the config file
(~/.opensandbox/config.toml under a temporary HOME) and the precedence
flags > environment > file > defaults, and the man page.

The interactive shell has its own suite: test_osb_shell.py."""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
E = None  # the Env of the running server (main)
OSB = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "osb")
MAN = os.path.join(REPO, "docs", "osb.1")
KEY = "osb-test-key-0123456789"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ERR_LINE = r"^osb: [^\n]+: [^\n]+ \(([A-Z_]+::[A-Z_]+|[A-Z_]+), HTTP (\d{3})\)$"
try:
    import yaml
except ImportError:
    yaml = None


class Env:
    """The environment osb runs in: a temporary HOME (so no config test
    touches the real ~), the server's domain and key in OPEN_SANDBOX_*."""

    def __init__(self, server):
        self.home = tempfile.mkdtemp(prefix="osb-home-")
        self.domain = "127.0.0.1:%d" % server.port
        self.base = {k: v for k, v in os.environ.items()
                     if not k.startswith("OPEN_SANDBOX_") and k not in ("NO_COLOR", "COLUMNS")}
        self.base.update(HOME=self.home, OPEN_SANDBOX_DOMAIN=self.domain,
                         OPEN_SANDBOX_API_KEY=KEY, LC_ALL="C.UTF-8")

    def env(self, **kw):
        e = dict(self.base)
        for k, v in kw.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e


def osb(*args, env=None, input=None, timeout=60, binary=False):
    """Runs osb; returns the CompletedProcess (stdout/stderr as text)."""
    return subprocess.run([OSB] + [str(a) for a in args], env=env or E.env(),
                          input=input, capture_output=True, timeout=timeout,
                          text=not binary)


def ok_run(r, name):
    return t.ok(r.returncode == 0, name, "exit %s\nstdout: %s\nstderr: %s" %
                (r.returncode, r.stdout[-800:], r.stderr[-800:]))


def js(r):
    return json.loads(r.stdout)


def err_line(r, code, status, what):
    """One line on stderr: osb: <what failed>: <message> (<code>, HTTP <status>)."""
    line = r.stderr.strip()
    m = re.match(ERR_LINE, line)
    return t.ok(m is not None and m.group(1) == code and m.group(2) == str(status) and
                line.startswith("osb: %s: " % what) and "\n" not in line,
                "error line names %r, %s and HTTP %d" % (what, code, status),
                "stderr: %r" % r.stderr)


def new_sandbox(*extra):
    r = osb("-o", "json", "sandbox", "create", "-i", "host", "-t", "10m", *extra)
    if r.returncode != 0:
        raise RuntimeError("sandbox create: %s" % r.stderr)
    return js(r)["id"]


def in_pty(args, cols=80, rows=24, env=None, timeout=60):
    """Runs osb with stdout and stderr on a pseudo terminal of the given
    size; returns (exit status, everything it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(OSB, [OSB] + list(args), env or E.env())
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    out = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                d = os.read(fd, 65536)
            except OSError:  # EIO: the child is gone and the pty drained
                break
            if not d:
                break
            out += d
    _, st = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(st), out.decode("utf-8", "replace")


# ------------------------------------------------------------ usage

def test_usage():
    r = osb("--version")
    ok_run(r, "--version exits 0")
    t.ok(re.match(r"^osb \S+", r.stdout) and r.stdout.count("\n") == 1, "--version: one line",
         r.stdout)
    r = osb("--help")
    ok_run(r, "--help exits 0")
    for word in ("sandbox", "command", "exec", "shell", "code", "file", "snapshot", "pool",
                 "batch", "image", "egress", "diagnostics", "config", "completion"):
        t.ok(re.search(r"^  %s\b" % word, r.stdout, re.M), "--help lists %s" % word)
    t.ok("exit codes:" in r.stdout and all(re.search(r"^  %s +\S" % c, r.stdout, re.M)
                                            for c in ("0", "1", "2", "3", "130")),
         "--help documents the exit codes", r.stdout)
    for args, what in ((["sandbox", "--help"], "group help"),
                       (["sandbox", "create", "--help"], "command help"),
                       (["command", "session", "--help"], "subgroup help"),
                       (["shell", "--help"], "shell help"), (["exec", "--help"], "exec help"),
                       (["batch", "--help"], "batch help"),
                       (["completion", "--help"], "completion help")):
        r = osb(*args)
        t.ok(r.returncode == 0 and "usage: osb" in r.stdout, "%s exits 0" % what, r.stdout)
    cases = [([], "no arguments"), (["nosuch"], "an unknown group"),
             (["sandbox", "nosuch"], "an unknown command"),
             (["sandbox", "list", "--nosuch"], "an unknown option"),
             (["-o", "xml", "sandbox", "list"], "an unknown output format"),
             (["sandbox", "get"], "a missing argument"),
             (["sandbox", "get", "a", "b"], "an extra argument"),
             (["sandbox", "create", "-i", "host", "-t", "5x"], "a bad duration"),
             (["sandbox", "create", "-i", "host", "-e", "NOEQUALS"], "a KEY=VALUE without ="),
             (["sandbox", "renew", "x"], "a missing required option"),
             (["sandbox", "endpoint", "x", "-p", "70000"], "a port out of range"),
             (["sandbox", "list", "--page", "0"], "page 0"),
             (["--protocol", "gopher", "sandbox", "list"], "a bad protocol"),
             (["batch", "-n", "0", "-i", "host"], "batch of 0"),
             (["file", "chmod", "x", "/p", "--mode", "9z"], "a bad mode"),
             (["completion", "fish"], "an unknown shell"),
             (["egress", "patch", "x", "--rule", "maybe=a.com"], "a bad egress rule")]
    for args, what in cases:
        r = osb(*args)
        t.ok(r.returncode == 2 and r.stderr.startswith("osb: ") if args else r.returncode == 2,
             "%s: exit 2 with a message" % what, "exit %s stderr %r" % (r.returncode, r.stderr))


# ------------------------------------------------------------ errors and exit codes

def test_errors():
    r = osb("sandbox", "get", "no-such-sandbox")
    t.eq(r.returncode, 1, "an unknown sandbox: exit 1")
    err_line(r, "SANDBOX::NOT_FOUND", 404, "sandbox get")
    t.eq(r.stdout, "", "nothing on stdout")
    r = osb("-o", "json", "sandbox", "kill", "no-such-1", "no-such-2")
    t.eq(r.returncode, 1, "kill of unknown sandboxes: exit 1")
    t.eq(r.stderr.count("SANDBOX::NOT_FOUND"), 2, "one error line per id")
    r = osb("sandbox", "list", env=E.env(OPEN_SANDBOX_API_KEY="wrong-key"))
    t.eq(r.returncode, 1, "a wrong API key: exit 1")
    t.ok("HTTP 401" in r.stderr and "INVALID_API_KEY" in r.stderr, "the 401 and its code are named",
         r.stderr)
    r = osb("sandbox", "list", env=E.env(OPEN_SANDBOX_API_KEY=None))
    t.eq(r.returncode, 1, "no API key: exit 1")
    port = free_port()  # closed
    r = osb("--domain", "127.0.0.1:%d" % port, "sandbox", "list")
    t.eq(r.returncode, 3, "a closed port: exit 3")
    t.ok(r.stderr.startswith("osb: sandbox list: ") and "127.0.0.1:%d" % port in r.stderr,
         "the connection error names the address", r.stderr)
    r = osb("sandbox", "list", env=E.env(OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % port))
    t.eq(r.returncode, 3, "a closed port from the environment: exit 3")


# ------------------------------------------------------------ sandboxes

def test_sandbox():
    r = osb("-o", "json", "sandbox", "create", "-i", "host", "-t", "15m", "-e", "GREETING=hi",
            "-m", "team=osb", "-m", "run=r1", "--resource", "cpu=1", "--resource",
            "memory=512Mi")
    ok_run(r, "create")
    doc = js(r)
    sid = doc.get("id", "")
    t.ok(re.match(UUID, sid), "create -o json: the server's CreateSandboxResponse", doc)
    t.eq(doc.get("status", {}).get("state"), "Running", "create waited until it runs")
    t.eq(doc.get("metadata"), {"team": "osb", "run": "r1"}, "metadata as given")
    r = osb("sandbox", "get", sid, "-o", "json")
    g = js(r)
    t.ok(set(("id", "image", "status", "metadata", "expiresAt", "createdAt")) <= set(g),
         "get -o json keeps the API's field names", sorted(g))
    t.eq(g["image"], {"uri": "host"}, "get: image.uri")
    if yaml:
        r = osb("sandbox", "get", sid, "-o", "yaml")
        t.eq(yaml.safe_load(r.stdout), g, "-o yaml is the same document")
        r = osb("sandbox", "list", "-o", "yaml", "-m", "team=osb")
        t.eq(yaml.safe_load(r.stdout)["items"][0]["id"], sid, "list -o yaml parses")
    else:
        t.skip("-o yaml parses", "no PyYAML")
    r = osb("-o", "raw", "sandbox", "get", sid)
    t.ok(r.stdout.count("\n") == 1 and json.loads(r.stdout) == g, "-o raw: compact JSON, one line")
    r = osb("command", "run", sid, "--", "sh", "-c", "echo $GREETING")
    t.eq(r.stdout, "hi\n", "create -e reaches commands")
    r = osb("sandbox", "list", "-o", "json", "-m", "team=osb", "-s", "running")
    lst = js(r)
    t.eq([i["id"] for i in lst["items"]], [sid], "list filters by metadata and state")
    t.ok("pagination" in lst, "list -o json: items and pagination")
    r = osb("sandbox", "list", "-m", "team=osb")
    lines = r.stdout.splitlines()
    t.ok(lines and lines[0].split()[:3] == ["ID", "STATE", "IMAGE"] and sid in r.stdout and
         "Running" in r.stdout and "team=osb" in r.stdout, "list: a table", r.stdout)
    t.ok("\033[" not in r.stdout, "no colors when stdout is not a terminal")
    r = osb("sandbox", "list", "--page-size", "1", "-o", "json")
    t.eq(js(r)["pagination"]["pageSize"], 1, "--page-size")
    r = osb("sandbox", "get", sid)
    t.ok(re.search(r"^status\.state\s+Running$", r.stdout, re.M), "get: KEY VALUE table",
         r.stdout)
    r = osb("sandbox", "health", sid)
    t.ok(r.returncode == 0 and "healthy" in r.stdout, "health", r.stdout + r.stderr)
    r = osb("-o", "json", "sandbox", "health", sid)
    t.eq(js(r), {"sandbox_id": sid, "healthy": True}, "health -o json")
    r = osb("-o", "json", "sandbox", "metrics", sid)
    m = js(r)
    t.ok(all(k in m for k in ("cpu_count", "mem_total_mib", "timestamp")), "metrics -o json", m)
    before = g["expiresAt"]
    r = osb("-o", "json", "sandbox", "renew", sid, "-t", "2h")
    t.ok(r.returncode == 0 and js(r).get("expiresAt", "") > before, "renew moves expiresAt",
         r.stdout + r.stderr)
    r = osb("-o", "json", "sandbox", "endpoint", sid, "-p", "8080")
    t.ok("endpoint" in js(r), "endpoint -o json: the server's Endpoint", r.stdout)
    r = osb("sandbox", "pause", sid)
    ok_run(r, "pause")
    r = osb("-o", "json", "sandbox", "get", sid)
    t.eq(js(r)["status"]["state"], "Paused", "paused")
    r = osb("sandbox", "pause", sid)
    t.ok(r.returncode == 1 and "HTTP 409" in r.stderr, "pause twice: the server's 409", r.stderr)
    r = osb("-o", "json", "sandbox", "resume", sid)
    t.ok(r.returncode == 0 and js(r).get("status") == "ok", "resume -o json: status ok",
         r.stdout + r.stderr)
    r = osb("exec", sid, "echo", "back")
    t.eq(r.stdout, "back\n", "resume waited until execd answers")
    watch_metrics(sid)
    other, third = new_sandbox(), new_sandbox()
    r = osb("-o", "json", "sandbox", "kill", sid, other)
    t.eq(js(r), [{"sandbox_id": sid, "status": "terminated"},
                 {"sandbox_id": other, "status": "terminated"}], "kill several ids")
    r = osb("sandbox", "kill", "no-such-3", third)
    t.ok(r.returncode == 1 and "no-such-3" in r.stderr and third in r.stdout,
         "kill: an unknown id fails, the others go", r.stdout + r.stderr)
    r = osb("sandbox", "get", sid)
    t.eq(r.returncode, 1, "killed: get fails")


def watch_metrics(sid):
    """metrics --watch prints one line a sample until Ctrl-C, then exits 0."""
    p = subprocess.Popen([OSB, "sandbox", "metrics", sid, "--watch"], env=E.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    t.ok(re.match(r"^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] cpu=[\d.]+% cores=\d+ mem=[\d.]+/[\d.]+MiB$",
                  line.strip()), "metrics --watch: a sample a line", line)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    t.eq(rc, 0, "metrics --watch ends on Ctrl-C with 0")
    p = subprocess.Popen([OSB, "-o", "json", "sandbox", "metrics", sid, "--watch"], env=E.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sample = json.loads(p.stdout.readline())
    t.ok("cpu_used_pct" in sample, "metrics --watch -o json: JSON lines")
    p.send_signal(signal.SIGINT)
    p.wait(20)


def test_defaults_and_timeout():
    r = osb("-o", "json", "sandbox", "create", "-i", "host", "-t", "none")
    ok_run(r, "create -t none")
    sid = js(r)["id"]
    g = js(osb("-o", "json", "sandbox", "get", sid))
    t.ok(not g.get("expiresAt"), "-t none: no expiry", g.get("expiresAt"))
    r = osb("-o", "json", "sandbox", "create", "-i", "host", "-t", "1h30m")
    sid2 = js(r)["id"]
    g2 = js(osb("-o", "json", "sandbox", "get", sid2))
    t.ok(g2.get("expiresAt"), "-t 1h30m: an expiry")
    r = osb("-o", "json", "sandbox", "create", "-i", "host", "--skip-health-check",
            "--entrypoint", "sleep", "--entrypoint", "600")
    ok_run(r, "create --entrypoint ... --skip-health-check")
    g3 = js(osb("-o", "json", "sandbox", "get", js(r)["id"]))
    t.eq(g3.get("entrypoint"), ["sleep", "600"], "--entrypoint builds the argv")
    osb("sandbox", "kill", sid, sid2, js(r)["id"])


# ------------------------------------------------------------ commands

def test_command(sid):
    r = osb("command", "run", sid, "--", "sh", "-c",
            "echo out1; echo; echo err1 >&2; printf tail; exit 7")
    t.eq(r.returncode, 7, "command run: the remote exit code")
    t.eq(r.stdout, "out1\n\ntail\n", "stdout on stdout, each line once, empty lines kept")
    t.eq(r.stderr, "err1\n", "stderr on stderr")
    r = osb("command", "run", sid, "-w", "/etc", "-e", "A=1", "-e", "B=two words", "--",
            "sh", "-c", 'echo "$PWD $A $B"')
    t.eq(r.stdout, "/etc 1 two words\n", "-w and -e")
    r = osb("command", "run", sid, "--", "printf", "%s|", "a b", "it's", "$HOME")
    t.eq(r.stdout, "a b|it's|$HOME|\n", "several words are quoted for the shell")
    r = osb("exec", sid, "echo hi | tr a-z A-Z")
    t.eq(r.stdout, "HI\n", "exec: one word is shell text")
    for flag in ("--use-server-proxy", "--no-use-server-proxy"):
        r = osb(flag, "exec", sid, "echo", "via")
        t.eq((r.returncode, r.stdout), (0, "via\n"), "exec %s" % flag)
    r = osb("exec", sid, "ls", "-d", "/tmp")
    t.eq((r.returncode, r.stdout), (0, "/tmp\n"), "exec: options after the command's first word "
         "are the command's")
    r = osb("exec", sid, "--", "sh", "-c", "exit 300 % 256")
    t.eq(r.returncode, 44, "exec: exit code")
    r = osb("command", "run", sid, "-t", "1s", "--", "sleep", "30", timeout=30)
    t.ok(r.returncode == 137 and "--timeout" in r.stderr,
         "command run -t: a command past its timeout is killed (exit 137, said why)",
         "exit %s %r" % (r.returncode, r.stderr))
    r = osb("exec", sid, "kill -TERM $$")
    t.ok(r.returncode == 143 and "signal: terminated" in r.stderr,
         "a command a signal ends: 128 + the signal, as a shell says", "exit %s %r" %
         (r.returncode, r.stderr))
    r = osb("-o", "json", "command", "run", sid, "-d", "--", "sh", "-c",
            "echo bg-start; sleep 0.3; echo bg-end")
    ok_run(r, "command run -d")
    eid = js(r).get("execution_id", "")
    t.ok(eid and js(r).get("mode") == "background", "-d: the execution id", r.stdout)
    done = wait_for(lambda: js(osb("-o", "json", "command", "status", sid, eid))
                    .get("running") is False, 30)
    st = js(osb("-o", "json", "command", "status", sid, eid))
    t.ok(done and st.get("exit_code") == 0, "command status -o json: the server's document", st)
    r = osb("command", "logs", sid, eid)
    t.eq(r.stdout, "bg-start\nbg-end\n", "command logs: the output")
    t.ok("next cursor: 16" in r.stderr, "logs: the next cursor on stderr", r.stderr)
    r = osb("-o", "json", "command", "logs", sid, eid, "--cursor", "9")
    t.eq(js(r), {"content": "bg-end\n", "cursor": 16}, "logs --cursor -o json")
    r = osb("-o", "json", "command", "run", sid, "-d", "--", "sleep", "300")
    eid = js(r)["execution_id"]
    r = osb("command", "interrupt", sid, eid)
    ok_run(r, "interrupt")
    t.ok(wait_for(lambda: js(osb("-o", "json", "command", "status", sid, eid))
                  .get("running") is False, 30), "interrupt ends the command")
    r = osb("command", "status", sid, "no-such-execution")
    t.ok(r.returncode == 1 and r.stderr.startswith("osb: command status: "),
         "status of an unknown execution: exit 1", r.stderr)


def test_sessions(sid):
    r = osb("-o", "json", "command", "session", "create", sid, "-w", "/tmp")
    ok_run(r, "session create")
    ses = js(r)["session_id"]
    osb("command", "session", "run", sid, ses, "--", "cd /etc; export X=kept")
    r = osb("command", "session", "run", sid, ses, "--", "echo $X $PWD")
    t.eq(r.stdout, "kept /etc\n", "a session keeps state between runs")
    r = osb("command", "session", "run", sid, ses, "--", "exit 4")
    t.eq(r.returncode, 4, "session run: the exit code")
    r = osb("command", "session", "delete", sid, ses)
    ok_run(r, "session delete")
    r = osb("command", "session", "run", sid, ses, "--", "true")
    t.eq(r.returncode, 1, "a deleted session: exit 1")


def test_shell_command(sid):
    """shell -c/-w without a terminal (the interactive shell: test_osb_shell.py)."""
    r = osb("shell", sid, "-w", "/etc", "-c", "echo in-$PWD-$((1+1)); exit 5",
            input="")
    t.ok(r.returncode == 5 and "in-/etc-2" in r.stdout, "shell -c -w: the command's output "
         "and exit status", "%s %r %r" % (r.returncode, r.stdout, r.stderr))
    r = osb("shell", "no-such", "-c", "true", input="")
    t.eq(r.returncode, 1, "shell into an unknown sandbox: exit 1")


def test_ctrl_c(sid):
    """SIGINT to a foreground command run interrupts the remote command too."""
    p = subprocess.Popen([OSB, "command", "run", sid, "--", "sh", "-c",
                          "echo started; exec sleep 300"],
                         env=E.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t.eq(p.stdout.readline(), "started\n", "the command runs")
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    t.eq(rc, 130, "Ctrl-C: exit 130")
    gone = wait_for(lambda: "sleep 300" not in osb("exec", sid, "ps -eo args").stdout, 30)
    t.ok(gone, "the remote sleep was interrupted")


# ------------------------------------------------------------ files

def test_files(sid, tmp):
    r = osb("file", "write", sid, "/tmp/f/a.txt", "-c", "hello world")
    ok_run(r, "write -c (parents created)")
    t.eq(osb("file", "cat", sid, "/tmp/f/a.txt").stdout, "hello world", "cat")
    r = osb("file", "write", sid, "/tmp/f/b.txt", "--mode", "600", input="from stdin\n")
    ok_run(r, "write from stdin")
    info = js(osb("-o", "json", "file", "info", sid, "/tmp/f/a.txt", "/tmp/f/b.txt"))
    t.eq(sorted(info), ["/tmp/f/a.txt", "/tmp/f/b.txt"], "info -o json: the server's map")
    t.eq((info["/tmp/f/b.txt"]["size"], info["/tmp/f/b.txt"]["mode"]), (11, 600),
         "write --mode 600")
    r = osb("file", "info", sid, "/tmp/f/a.txt")
    t.ok(r.stdout.startswith("PATH") and "/tmp/f/a.txt" in r.stdout, "info: a table")
    r = osb("-o", "json", "file", "replace", sid, "/tmp/f/a.txt", "--old", "world",
            "--new", "there")
    t.eq(js(r), {"path": "/tmp/f/a.txt", "replaced": 1}, "replace -o json")
    t.eq(osb("file", "cat", sid, "/tmp/f/a.txt").stdout, "hello there", "replaced")
    r = osb("file", "mv", sid, "/tmp/f/a.txt", "/tmp/f/c.txt")
    ok_run(r, "mv")
    r = osb("file", "chmod", sid, "/tmp/f/c.txt", "--mode", "0751")
    ok_run(r, "chmod")
    found = js(osb("-o", "json", "file", "search", sid, "/tmp/f", "-p", "*.txt"))
    t.eq(sorted((f["path"], f["mode"]) for f in found),
         [("/tmp/f/b.txt", 600), ("/tmp/f/c.txt", 751)], "search -o json after mv and chmod")
    r = osb("-o", "json", "file", "mkdir", sid, "/tmp/f/d1/d2", "/tmp/f/d3")
    t.eq(js(r), [{"path": "/tmp/f/d1/d2", "status": "created"},
                 {"path": "/tmp/f/d3", "status": "created"}], "mkdir several")
    r = osb("file", "rmdir", sid, "/tmp/f/d1", "/tmp/f/d3")
    t.ok(r.returncode == 0 and "removed" in r.stdout, "rmdir", r.stdout + r.stderr)
    r = osb("file", "rm", sid, "/tmp/f/b.txt")
    t.ok(r.returncode == 0 and "deleted" in r.stdout, "rm", r.stdout + r.stderr)
    r = osb("file", "cat", sid, "/tmp/f/b.txt")
    t.eq(r.returncode, 1, "cat of a removed file: exit 1")
    err_line(r, "FILE_NOT_FOUND", 404, "file cat")
    # a binary file of 9 MiB both ways, byte for byte
    src = os.path.join(tmp, "big.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(9 << 20))
    os.chmod(src, 0o640)
    r = osb("file", "upload", sid, src, "/tmp/f/big.bin")
    ok_run(r, "upload 9 MiB")
    t.eq(js(osb("-o", "json", "file", "info", sid, "/tmp/f/big.bin"))["/tmp/f/big.bin"]["mode"],
         640, "upload keeps the local file's mode")
    dst = os.path.join(tmp, "big.out")
    r = osb("file", "download", sid, "/tmp/f/big.bin", dst)
    ok_run(r, "download 9 MiB")
    with open(src, "rb") as a, open(dst, "rb") as b:
        t.ok(a.read() == b.read(), "the download is the upload, byte for byte")
    t.eq([n for n in os.listdir(tmp) if ".osb-part" in n], [], "no partial file left")
    r = osb("file", "download", sid, "/tmp/f/big.bin", "-", binary=True)
    t.eq(len(r.stdout), 9 << 20, "download to - (stdout)")
    r = osb("file", "download", sid, "/tmp/f/nope", os.path.join(tmp, "nope"))
    t.ok(r.returncode == 1 and not os.path.exists(os.path.join(tmp, "nope")) and
         not [n for n in os.listdir(tmp) if ".osb-part" in n],
         "a failed download leaves no file", r.stderr)
    r = osb("file", "upload", sid, os.path.join(tmp, "missing"), "/tmp/x")
    t.eq(r.returncode, 2, "upload of a missing local file: exit 2")
    # on a terminal, a progress bar on stderr
    status, out = in_pty(["file", "upload", sid, src, "/tmp/f/big2.bin"])
    t.ok(status == 0 and "100%" in out and "\r" in out, "a progress bar on a terminal",
         repr(out[-300:]))
    status, out = in_pty(["file", "download", sid, "/tmp/f/big2.bin", dst + "2"])
    t.ok(status == 0 and "100%" in out and "MiB/s" in out, "downloads have one too",
         repr(out[-300:]))
    status, out = in_pty(["file", "upload", sid, path_small(tmp), "/tmp/f/small"])
    t.ok(status == 0 and "%" not in out, "no progress bar for a small file", repr(out))
    r = osb("file", "upload", sid, src, "/tmp/f/big3.bin")
    t.ok("%" not in r.stderr, "no progress bar when stderr is not a terminal", r.stderr)


def path_small(tmp):
    path = os.path.join(tmp, "small.txt")
    with open(path, "w") as f:
        f.write("small\n")
    return path


# ------------------------------------------------------------ code

def test_code(sid, tmp):
    r = osb("code", "run", sid, "--language", "python", "x = 41")
    ok_run(r, "code run")
    r = osb("code", "run", sid, "-l", "python", "print(x + 1)")
    t.eq(r.stdout, "42\n", "the context lives on between runs (per sandbox and language)")
    path = os.path.join(tmp, "c.py")
    with open(path, "w") as f:
        f.write("y = x * 2\nprint('file', y)\n")
    r = osb("code", "run", sid, "-l", "python", "-f", path)
    t.eq(r.stdout, "file 82\n", "code from -f FILE")
    r = osb("code", "run", sid, "-l", "python", input="print('stdin', y)\n")
    t.eq(r.stdout, "stdin 82\n", "code from stdin")
    r = osb("code", "run", sid, "-l", "python", "y + 1")
    t.eq(r.stdout, "83\n", "an expression's value is printed")
    r = osb("code", "run", sid, "-l", "python", "1/0")
    t.eq(r.returncode, 1, "an exception: exit 1")
    t.ok("ZeroDivisionError" in r.stderr and r.stderr.count("ZeroDivisionError: division") == 1,
         "the traceback on stderr, once", r.stderr)
    r = osb("code", "run", sid, "-l", "bash", "echo bash-$((2+3))")
    t.eq(r.stdout, "bash-5\n", "another language")
    r = osb("-o", "json", "code", "context", "create", sid, "-l", "python")
    ctx = js(r).get("id")
    t.ok(ctx, "context create", r.stdout + r.stderr)
    osb("code", "run", sid, "--context", ctx, "z = 'own'")
    r = osb("code", "run", sid, "--context", ctx, "print(z, 'x' in globals())")
    t.eq(r.stdout, "own False\n", "a created context is separate from the default one")
    ids = [c["id"] for c in js(osb("-o", "json", "code", "context", "list", sid, "-l",
                                   "python"))]
    t.ok(ctx in ids, "context list", ids)
    ok_run(osb("code", "context", "delete", sid, ctx), "context delete")
    r = osb("code", "run", sid, "print(1)")
    t.eq(r.returncode, 2, "code run without --language: exit 2")
    t.eq(osb("command", "run", sid).returncode, 2, "command run without a command: exit 2")


# ------------------------------------------------------------ egress, diagnostics

def test_egress(tmp):
    pol = os.path.join(tmp, "policy.json")
    with open(pol, "w") as f:
        json.dump({"defaultAction": "deny",
                   "egress": [{"action": "allow", "target": "example.com"}]}, f)
    sid = new_sandbox("--network-policy-file", pol)
    g = js(osb("-o", "json", "egress", "get", sid))
    t.eq(g.get("policy", {}).get("egress"), [{"action": "allow", "target": "example.com"}],
         "egress get -o json: the sandbox's policy")
    r = osb("-o", "json", "egress", "patch", sid, "--rule", "deny=example.com",
            "--rule", "allow=pypi.org")
    t.eq(js(r).get("patched_rules"), [{"action": "deny", "target": "example.com"},
                                      {"action": "allow", "target": "pypi.org"}],
         "egress patch -o json")
    rules = js(osb("-o", "json", "egress", "get", sid))["policy"]["egress"]
    t.ok({"action": "deny", "target": "example.com"} in rules and
         {"action": "allow", "target": "pypi.org"} in rules, "the patch is applied", rules)
    r = osb("egress", "get", sid)
    t.ok(r.stdout.startswith("KEY") and "policy.defaultAction" in r.stdout, "egress get: a table",
         r.stdout)
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("{nope")
    r = osb("sandbox", "create", "-i", "host", "--network-policy-file", bad)
    t.ok(r.returncode == 2 and "not JSON" in r.stderr, "a policy file that is not JSON: exit 2 "
         "before anything is sent", r.stderr)
    r = osb("sandbox", "create", "-i", "host", "--network-policy-file", bad + ".missing")
    t.eq(r.returncode, 2, "a missing policy file: exit 2")
    plain = new_sandbox()
    r = osb("egress", "get", plain)
    t.eq(r.returncode, 1, "egress of a sandbox without a policy: exit 1")
    err_line(r, "EGRESS::NOT_ENABLED", 500, "egress get")
    osb("sandbox", "kill", sid, plain)


def test_vault(tmp):
    pol = os.path.join(tmp, "vault-policy.json")
    with open(pol, "w") as f:
        json.dump({"defaultAction": "deny",
                   "egress": [{"action": "allow", "target": "api.example.com"}]}, f)
    r = osb("sandbox", "create", "-i", "host", "--credential-proxy")
    t.eq(r.returncode, 2, "--credential-proxy without --network-policy-file: exit 2")
    sid = new_sandbox("--network-policy-file", pol, "--credential-proxy")
    secret = "sk-osb-" + os.urandom(8).hex()
    body = os.path.join(tmp, "vault.json")
    with open(body, "w") as f:
        json.dump({"credentials": [{"name": "tok", "source": {"type": "inline",
                                                               "value": secret}}],
                   "bindings": [{"name": "api", "match": {"hosts": ["api.example.com"]},
                                 "auth": {"type": "bearer", "credential": "tok"}}]}, f)
    r = osb("-o", "json", "credential-vault", "create", sid, "--file", body)
    t.eq(js(r).get("revision"), 1, "credential-vault create --file: revision 1")
    t.ok(secret not in r.stdout, "  the answer holds no value")
    r = osb("-o", "json", "credential-vault", "create", sid, "--file", body)
    t.eq(r.returncode, 1, "create again: exit 1")
    err_line(r, "EGRESS::VAULT_CONFLICT", 409, "credential-vault create")
    t.eq([c["name"] for c in js(osb("-o", "json", "credential-vault", "credential", "list",
                                    sid)).get("credentials", [])], ["tok"],
         "credential-vault credential list")
    t.eq(js(osb("-o", "json", "vault", "binding", "get", sid, "api")).get("auth"),
         {"type": "bearer"}, "vault (the alias) binding get")
    r = osb("-o", "json", "credential-vault", "patch", sid, "--file", "-",
            input=json.dumps({"expectedRevision": 1, "credentials": {"replace": [
                {"name": "tok", "source": {"type": "inline", "value": secret + "2"}}]}}))
    t.eq(js(r).get("revision"), 2, "credential-vault patch --file - (stdin): revision 2")
    r = osb("credential-vault", "create", sid)
    t.eq(r.returncode, 2, "create without --file: exit 2")
    t.eq(osb("credential-vault", "delete", sid).returncode, 0, "credential-vault delete")
    r = osb("credential-vault", "get", sid)
    t.eq(r.returncode, 1, "get after delete: exit 1")
    err_line(r, "EGRESS::VAULT_NOT_FOUND", 404, "credential-vault get")
    osb("sandbox", "kill", sid)


def test_diagnostics(sid):
    r = osb("diagnostics", "events", sid)
    t.ok(r.returncode == 0 and "Running" in r.stdout, "diagnostics events: the text", r.stdout)
    r = osb("-o", "json", "diagnostics", "events", sid, "-s", "lifecycle")
    d = js(r)
    t.ok(d.get("kind") == "events" and d.get("scope") == "lifecycle" and "content" in d,
         "diagnostics events -o json: the API's document", d)
    r = osb("diagnostics", "logs", sid, "--scope", "all")
    t.ok(r.returncode == 0 and "execd" in r.stdout, "diagnostics logs", r.stdout[-500:])
    r = osb("diagnostics", "logs", "no-such")
    t.eq(r.returncode, 1, "diagnostics of an unknown sandbox: exit 1")


# ------------------------------------------------------------ snapshots, pools, batch, images

def test_snapshots(sid):
    osb("file", "write", sid, "/root/kept.txt", "-c", "from the snapshot")
    r = osb("-o", "json", "snapshot", "create", sid, "--name", "s1", "--wait")
    ok_run(r, "snapshot create --wait")
    snap = js(r)
    t.eq((snap.get("status", {}).get("state"), snap.get("name")), ("Ready", "s1"),
         "snapshot create -o json: the Ready snapshot")
    lst = js(osb("-o", "json", "snapshot", "list", "--sandbox", sid))
    t.eq([s["id"] for s in lst["items"]], [snap["id"]], "snapshot list --sandbox")
    r = osb("snapshot", "list")
    t.ok(r.stdout.startswith("ID") and snap["id"] in r.stdout and "Ready" in r.stdout,
         "snapshot list: a table", r.stdout)
    t.eq(js(osb("-o", "json", "snapshot", "get", snap["id"]))["id"], snap["id"], "snapshot get")
    r = osb("-o", "json", "sandbox", "create", "--from-snapshot", snap["id"], "-t", "10m")
    ok_run(r, "sandbox create --from-snapshot")
    restored = js(r)["id"]
    t.eq(osb("file", "cat", restored, "/root/kept.txt").stdout, "from the snapshot",
         "the restored sandbox has the snapshot's files")
    r = osb("sandbox", "create", "--from-snapshot", snap["id"], "-i", "host")
    t.eq(r.returncode, 2, "--from-snapshot with --image: exit 2")
    osb("sandbox", "kill", restored)
    r = osb("-o", "json", "snapshot", "rm", snap["id"])
    t.eq(js(r), [{"snapshot_id": snap["id"], "status": "deleted"}], "snapshot rm")
    r = osb("snapshot", "get", snap["id"])
    t.eq(r.returncode, 1, "a removed snapshot: exit 1")
    t.ok("SNAPSHOT::" in r.stderr or "NOT_FOUND" in r.stderr, "its code is named", r.stderr)


def test_pools():
    r = osb("-o", "json", "pool", "create", "warm", "-i", "host", "--buffer-min", "1",
            "--buffer-max", "1", "--pool-min", "0", "--pool-max", "3")
    ok_run(r, "pool create")
    p = js(r)
    t.eq((p.get("name"), p.get("capacitySpec", {}).get("bufferMax")), ("warm", 1),
         "pool create -o json: the PoolInfo")
    r = osb("pool", "list")
    t.ok(r.stdout.startswith("NAME") and "warm" in r.stdout, "pool list: a table", r.stdout)
    r = osb("-o", "json", "pool", "resize", "warm", "--buffer-max", "2", "--pool-max", "4")
    cs = js(r).get("capacitySpec", {})
    t.eq((cs.get("bufferMin"), cs.get("bufferMax"), cs.get("poolMin"), cs.get("poolMax")),
         (1, 2, 0, 4), "pool resize keeps the values it is not given")
    t.eq(js(osb("-o", "json", "pool", "get", "warm"))["capacitySpec"]["poolMax"], 4, "pool get")
    r = osb("-o", "json", "sandbox", "create", "--pool", "warm", "-t", "10m", "-m", "from=pool")
    ok_run(r, "sandbox create --pool (a claim)")
    claimed = js(r)["id"]
    t.eq(osb("exec", claimed, "echo", "claimed").stdout, "claimed\n", "the claimed sandbox runs")
    r = osb("-o", "json", "batch", "-n", "2", "--pool", "warm")
    ok_run(r, "batch --pool")
    b = js(r)
    t.eq((b.get("succeeded"), b.get("failed"), len(b.get("items", []))), (2, 0, 2),
         "batch --pool -o json: the server's answer")
    ids = [i["id"] for i in b["items"]]
    osb("sandbox", "kill", claimed, *ids)
    r = osb("-o", "json", "pool", "rm", "warm")
    t.eq(js(r), [{"name": "warm", "status": "deleted"}], "pool rm")
    r = osb("pool", "get", "warm")
    t.eq(r.returncode, 1, "a removed pool: exit 1")
    r = osb("sandbox", "create", "--pool", "nosuch")
    t.eq(r.returncode, 1, "a claim from an unknown pool: exit 1")


def test_batch():
    r = osb("batch", "-n", "3", "-i", "host", "-t", "10m", "-m", "batch=b1", "-e", "N=7")
    ok_run(r, "batch -n 3 -i host")
    lines = r.stdout.splitlines()
    t.ok(lines[0].split()[:2] == ["ID", "STATE"] and len(lines) == 4 and
         all("Running" in l for l in lines[1:]), "batch: a row per sandbox", r.stdout)
    lst = js(osb("-o", "json", "sandbox", "list", "-m", "batch=b1"))["items"]
    t.eq(len(lst), 3, "three sandboxes with the template's metadata")
    t.eq(osb("exec", lst[0]["id"], "echo $N").stdout, "7\n", "the template's env")
    osb("sandbox", "kill", *[i["id"] for i in lst])


def test_images():
    """The image store's routes (a pull from a registry: test_images_api.py)."""
    r = osb("-o", "json", "image", "list")
    ok_run(r, "image list")
    t.ok(isinstance(js(r), (dict, list)), "image list -o json")
    r = osb("image", "rm", "no-such-image:1")
    t.eq(r.returncode, 1, "image rm of an unknown image: exit 1")
    r = osb("image", "pull", "127.0.0.1:%d/none/none:1" % free_port())
    t.ok(r.returncode in (1, 3), "image pull from a closed registry fails", r.stderr)


# ------------------------------------------------------------ config

def test_config():
    cfg = os.path.join(E.home, ".opensandbox", "config.toml")
    r = osb("config", "show", "-o", "json")
    show = js(r)
    t.eq((show["domain"], show["config_path"], show["config_file_exists"]),
         (E.domain, cfg, False), "config show: the environment, the default path under HOME")
    t.ok(show["api_key"] != KEY and show["api_key"].startswith(KEY[:2]) and
         show["api_key"].endswith(KEY[-2:]) and "*" in show["api_key"],
         "config show masks the API key", show["api_key"])
    r = osb("config", "init")
    ok_run(r, "config init")
    t.ok(os.path.exists(cfg), "init writes ~/.opensandbox/config.toml")
    t.eq(stat.S_IMODE(os.stat(cfg).st_mode), 0o600, "the file is private (0600)")
    text = open(cfg).read()
    t.ok(all(s in text for s in ("[connection]", "[output]", "[defaults]", "# api_key",
                                 "request_timeout", "use_server_proxy")),
         "init: upstream's commented template", text)
    r = osb("config", "init")
    t.eq(r.returncode, 2, "init again: exit 2 (the file exists)")
    t.eq(open(cfg).read(), text, "init again leaves the file")
    ok_run(osb("config", "init", "--force"), "init --force")
    # the file alone (no environment) connects
    r = osb("config", "set", "connection.domain", E.domain)
    ok_run(r, "config set connection.domain")
    r = osb("config", "set", "connection.api_key", KEY)
    ok_run(r, "config set connection.api_key")
    t.ok(KEY not in r.stdout + r.stderr, "config set does not echo the API key", r.stderr)
    ok_run(osb("config", "set", "connection.request_timeout", "45"), "set an integer")
    ok_run(osb("config", "set", "connection.use_server_proxy", "false"), "set a boolean")
    text = open(cfg).read()
    t.ok('domain = "%s"' % E.domain in text and "request_timeout = 45" in text and
         "use_server_proxy = false" in text and "# OpenSandbox CLI configuration" in text,
         "set writes typed TOML values in place, comments kept", text)
    no_env = E.env(OPEN_SANDBOX_DOMAIN=None, OPEN_SANDBOX_API_KEY=None)
    r = osb("-o", "json", "sandbox", "list", env=no_env)
    ok_run(r, "the config file alone reaches the server")
    show = js(osb("-o", "json", "config", "show", env=no_env))
    t.eq((show["domain"], show["request_timeout"], show["config_file_exists"]),
         (E.domain, 45, True), "config show: the file's values")
    # precedence: flags > environment > file
    closed = "127.0.0.1:%d" % free_port()
    ok_run(osb("config", "set", "connection.domain", closed), "set a closed port in the file")
    r = osb("sandbox", "list", env=E.env(OPEN_SANDBOX_API_KEY=None))
    ok_run(r, "the environment's domain wins over the file's")
    r = osb("sandbox", "list", env=no_env)
    t.eq(r.returncode, 3, "the file's (closed) domain is used without the environment")
    r = osb("--domain", E.domain, "sandbox", "list", env=no_env)
    ok_run(r, "--domain wins over the file")
    r = osb("--domain", closed, "sandbox", "list")
    t.eq(r.returncode, 3, "--domain wins over the environment")
    r = osb("sandbox", "list", "--api-key", "wrong", env=E.env())
    t.eq(r.returncode, 1, "--api-key wins over the environment")
    show = js(osb("-o", "json", "--request-timeout", "7", "config", "show"))
    t.eq(show["request_timeout"], 7, "--request-timeout wins over the file")
    show = js(osb("-o", "json", "config", "show",
                  env=E.env(OPEN_SANDBOX_REQUEST_TIMEOUT="9")))
    t.eq(show["request_timeout"], 9, "OPEN_SANDBOX_REQUEST_TIMEOUT wins over the file")
    show = js(osb("-o", "json", "--use-server-proxy", "config", "show",
                  env=E.env(OPEN_SANDBOX_USE_SERVER_PROXY="false")))
    t.eq(show["use_server_proxy"], True, "--use-server-proxy wins over the environment")
    show = js(osb("-o", "json", "config", "show", env=E.env(OPEN_SANDBOX_USE_SERVER_PROXY="1")))
    t.eq(show["use_server_proxy"], True, "OPEN_SANDBOX_USE_SERVER_PROXY wins over the file")
    ok_run(osb("config", "set", "connection.domain", E.domain), "set the domain back")
    # [defaults]: image and timeout for sandbox create
    ok_run(osb("config", "set", "defaults.image", "host"), "set defaults.image")
    ok_run(osb("config", "set", "defaults.timeout", "none"), "set defaults.timeout none")
    r = osb("-o", "json", "sandbox", "create")
    ok_run(r, "sandbox create with defaults.image")
    sid = js(r)["id"]
    g = js(osb("-o", "json", "sandbox", "get", sid))
    t.ok(g["image"]["uri"] == "host" and not g.get("expiresAt"),
         "defaults.image and defaults.timeout = none apply", g)
    r = osb("-o", "json", "sandbox", "create", "-t", "5m")
    g = js(osb("-o", "json", "sandbox", "get", js(r)["id"]))
    t.ok(g.get("expiresAt"), "-t wins over defaults.timeout")
    osb("sandbox", "kill", sid, g["id"])
    # --config: another file; a missing one named explicitly is an error
    other = os.path.join(E.home, "other.toml")
    with open(other, "w") as f:
        f.write('[connection]\ndomain = "%s"\n' % closed)
    r = osb("--config", other, "sandbox", "list", env=no_env)
    t.eq(r.returncode, 3, "--config FILE is read instead")
    r = osb("--config", os.path.join(E.home, "missing.toml"), "sandbox", "list")
    t.eq(r.returncode, 2, "--config naming a missing file: exit 2")
    r = osb("config", "set", "connection.nosuch", "1")
    t.eq(r.returncode, 2, "config set of an unknown key: exit 2")
    r = osb("config", "set", "connection.use_server_proxy", "perhaps")
    t.eq(r.returncode, 2, "config set of a bad boolean: exit 2")
    t.eq(osb("config", "set", "connection.protocol", "gopher").returncode, 2,
         "config set of a bad protocol: exit 2")
    t.eq(osb("config", "set", "defaults.timeout", "5x").returncode, 2,
         "config set of a bad duration: exit 2")
    t.eq(osb("config", "set", "connection.request_timeout", "0").returncode, 2,
         "config set of a zero timeout: exit 2")
    with open(cfg, "a") as f:
        f.write("this is not toml\n")
    r = osb("sandbox", "list")
    t.ok(r.returncode == 2 and cfg in r.stderr, "a broken config file: exit 2, named", r.stderr)
    os.unlink(cfg)
    r = osb("config", "set", "connection.domain", "x:1")
    t.eq(r.returncode, 2, "config set without a file: exit 2 (run init first)")


# ------------------------------------------------------------ terminal output

def test_terminal(sid):
    meta = [x for i in range(3) for x in ("-m", "k%d=%s" % (i, "v" * 30))]
    wide = js(osb("-o", "json", "sandbox", "create", "-i", "host", "-t", "10m", *meta))["id"]
    status, out = in_pty(["sandbox", "list"], cols=70)
    lines = [re.sub(r"\033\[[0-9;]*m", "", l) for l in out.replace("\r", "").splitlines()]
    t.ok(status == 0 and len(lines) >= 3 and all(len(l) <= 70 for l in lines),
         "a table fits a 70-column terminal", "\n".join(lines))
    t.ok("\033[" in out, "colors on a terminal", repr(out[:200]))
    t.ok("…" in out, "cut cells end with an ellipsis")
    status, out = in_pty(["--no-color", "sandbox", "list"], cols=70)
    t.ok(status == 0 and "\033[" not in out, "--no-color", repr(out[:200]))
    status, out = in_pty(["sandbox", "list"], cols=70, env=E.env(NO_COLOR="1"))
    t.ok(status == 0 and "\033[" not in out, "NO_COLOR", repr(out[:200]))
    cfg = os.path.join(E.home, "nocolor.toml")
    with open(cfg, "w") as f:
        f.write("[output]\ncolor = false\n")
    status, out = in_pty(["--config", cfg, "sandbox", "list"], cols=70)
    t.ok(status == 0 and "\033[" not in out, "[output] color = false", repr(out[:200]))
    r = osb("sandbox", "list")
    t.ok(any(len(l) > 70 for l in r.stdout.splitlines()) and "…" not in r.stdout,
         "not a terminal: whole cells (for grep and cut)")
    r = osb("sandbox", "list", env=E.env(COLUMNS="60"))
    t.ok(all(len(l) <= 60 for l in r.stdout.splitlines()), "an exported COLUMNS is the width",
         r.stdout)
    osb("sandbox", "kill", wide)


# ------------------------------------------------------------ completion, man page

def test_completion():
    r = osb("completion", "bash")
    ok_run(r, "completion bash")
    with tempfile.NamedTemporaryFile("w", suffix=".bash", delete=False) as f:
        f.write(r.stdout)
    chk = subprocess.run(["bash", "-c", "source %s && complete -p osb" % f.name],
                         capture_output=True, text=True)
    t.ok(chk.returncode == 0 and "_osb" in chk.stdout, "bash: the script loads and registers",
         chk.stderr)
    # complete in bash itself: a command, a group, a sandbox id
    probe = ("source %s; COMP_WORDS=(osb sandbox k); COMP_CWORD=2; _osb; echo ${COMPREPLY[@]};"
             "COMP_WORDS=(osb fi); COMP_CWORD=1; _osb; echo ${COMPREPLY[@]};"
             "COMP_WORDS=(osb exec ''); COMP_CWORD=2; _osb; echo ${COMPREPLY[@]}" % f.name)
    chk = subprocess.run(["bash", "-c", probe], capture_output=True, text=True,
                         env=dict(E.env(), PATH=os.path.dirname(OSB) + ":" + os.environ["PATH"]))
    lines = chk.stdout.splitlines()
    t.eq(lines[:2], ["kill", "file"], "bash completes commands and groups")
    t.ok(len(lines) == 3 and lines[2] and all(re.match(UUID, w) for w in lines[2].split()),
         "bash completes sandbox ids", chk.stdout)
    os.unlink(f.name)
    r = osb("completion", "zsh")
    t.ok(r.returncode == 0 and r.stdout.startswith("#compdef osb"), "completion zsh")
    if not shutil.which("zsh"):
        t.skip("zsh completes commands, groups and sandbox ids", "no zsh")
        return
    with tempfile.NamedTemporaryFile("w", suffix=".zsh", delete=False) as f:
        f.write(r.stdout)
    # compsys itself needs a terminal: its compadd and _files stand in here
    probe = ("compdef() { :; }; source %s; compadd() { [[ $1 == -a ]] && print -r -- ${(P)2}; };"
             "_files() { print FILES; };"
             "words=(osb sandbox k); CURRENT=3; PREFIX=k; _osb;"
             "words=(osb sh); CURRENT=2; PREFIX=sh; _osb;"
             "words=(osb shell ''); CURRENT=3; PREFIX=''; _osb;"
             "words=(osb config set ''); CURRENT=4; PREFIX=''; _osb" % f.name)
    chk = subprocess.run(["zsh", "-f", "-c", probe], capture_output=True, text=True,
                         env=dict(E.env(), PATH=os.path.dirname(OSB) + ":" + os.environ["PATH"]))
    lines = chk.stdout.splitlines()
    t.ok(len(lines) == 4 and lines[0].split()[:4] == ["create", "list", "get", "kill"] and
         lines[1].split()[0] == "sandbox" and "shell" in lines[1].split() and
         re.match(UUID, lines[2]) and lines[3] == "FILES",
         "zsh completes commands, groups and sandbox ids", chk.stdout + chk.stderr)
    os.unlink(f.name)


def test_man():
    t.ok(os.path.exists(MAN), "docs/osb.1 exists")
    text = open(MAN).read()
    t.ok(text.startswith(".TH OSB 1") or "\n.TH OSB 1" in text, "a roff man page (.TH OSB 1)")
    for word in ("sandbox create", "command run", "shell", "exec", "snapshot", "pool", "batch",
                 "code run", "image", "egress", "diagnostics", "config", "completion",
                 "OPEN_SANDBOX_API_KEY", "config.toml"):
        t.ok(word in text.replace("\\-", "-").replace("\\fB", "").replace("\\fR", ""),
             "the man page covers %s" % word)
    t.ok(re.search(r"EXIT STATUS", text) and "130" in text, "the man page lists exit codes")
    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN], capture_output=True,
                           text=True)
        t.ok(r.returncode == 0 and not r.stderr.strip(), "groff renders it without a warning",
             r.stderr)
    elif shutil.which("mandoc"):
        r = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", MAN], capture_output=True,
                           text=True)
        t.ok(r.returncode == 0, "mandoc lints it", r.stdout + r.stderr)
    else:
        t.skip("the man page renders", "no groff or mandoc")


def main():
    global E
    with Server(api_key=KEY) as s:
        E = Env(s)
        tmp = tempfile.mkdtemp(prefix="osb-files-")
        try:
            t.run(test_usage, timeout=60)
            t.run(test_man)
            t.run(test_errors, timeout=60)
            t.run(test_sandbox, timeout=180)
            t.run(test_defaults_and_timeout, timeout=120)
            sid = new_sandbox()
            t.run(test_completion, timeout=60)
            t.run(test_command, sid, timeout=180)
            t.run(test_sessions, sid, timeout=60)
            t.run(test_ctrl_c, sid, timeout=90)
            t.run(test_shell_command, sid, timeout=60)
            t.run(test_files, sid, tmp, timeout=180)
            t.run(test_code, sid, tmp, timeout=180)
            t.run(test_diagnostics, sid, timeout=60)
            t.run(test_egress, tmp, timeout=120)
            t.run(test_vault, tmp, timeout=120)
            t.run(test_snapshots, sid, timeout=180)
            t.run(test_pools, timeout=180)
            t.run(test_batch, timeout=180)
            t.run(test_images, timeout=60)
            t.run(test_terminal, sid, timeout=120)
            t.run(test_config, timeout=180)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(E.home, ignore_errors=True)
    t.done()


main()
