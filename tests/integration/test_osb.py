#!/usr/bin/python3
"""osb against a real server: every command group through the real binary,
its exit codes (0, the remote code, 1 server error, 2 usage, 3 no
connection), -o json that parses and keeps the API's field names, errors
that name the server's code, and the config file (init, show, set,
precedence flags > environment > file). HOME is a temporary directory."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
OSB = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "osb")
HOME = tempfile.mkdtemp(prefix="osb-home-")


def osb(*args, env=None, stdin=None, s=None, timeout=120):
    e = {k: v for k, v in os.environ.items() if not k.startswith("OPEN_SANDBOX_")}
    e.update(HOME=HOME, NO_COLOR="1")
    if s:
        e.update(OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port, OPEN_SANDBOX_API_KEY=s.api_key)
    e.update(env or {})
    return subprocess.run([OSB] + list(args), env=e, capture_output=True, text=True,
                          input=stdin, timeout=timeout)


def js(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def test_basics(t, s):
    r = osb("--version")
    t.ok(r.returncode == 0 and r.stdout.startswith("osb "), "--version", r.stdout)
    r = osb("--help")
    t.ok(r.returncode == 0 and "exit codes" in r.stdout, "--help documents the exit codes")
    t.eq(osb("sandbox", "frobnicate", s=s).returncode, 2, "unknown command: exit 2")
    t.eq(osb("sandbox", "list", "--bogus", s=s).returncode, 2, "unknown option: exit 2")
    t.eq(osb("-o", "xml", "sandbox", "list", s=s).returncode, 2, "unknown output format: exit 2")
    r = osb("--domain", "127.0.0.1:9", "sandbox", "list", s=s)
    t.ok(r.returncode == 3 and "cannot connect" in r.stderr, "closed port: exit 3", r.stderr)
    r = osb("sandbox", "list", s=s, env={"OPEN_SANDBOX_API_KEY": "wrong"})
    t.ok(r.returncode == 1 and "INVALID_API_KEY" in r.stderr and "HTTP 401" in r.stderr,
         "wrong API key: exit 1 with the server's code", r.stderr)
    r = osb("sandbox", "get", "no-such-id", s=s)
    t.ok(r.returncode == 1 and "NOT_FOUND" in r.stderr and r.stderr.startswith("osb: "),
         "unknown sandbox: one line naming the server's code", r.stderr)


def test_sandbox(t, s):
    r = osb("sandbox", "create", "-i", "host", "-t", "10m", "-e", "A=1", "-m", "team=qa",
            "-o", "json", s=s)
    doc = js(r)
    t.ok(r.returncode == 0 and doc and doc["status"]["state"] == "Running",
         "sandbox create -o json: the API's document", r.stdout + r.stderr)
    sid = doc["id"] if doc else None
    if not sid:
        return None
    r = osb("sandbox", "list", "-m", "team=qa", "-o", "json", s=s)
    t.ok([x["id"] for x in js(r)["items"]] == [sid], "list filters on metadata", r.stdout)
    r = osb("sandbox", "list", s=s)
    t.ok(r.returncode == 0 and r.stdout.startswith("ID") and sid in r.stdout,
         "list as a table", r.stdout)
    r = osb("sandbox", "get", sid, "-o", "yaml", s=s)
    t.ok(r.returncode == 0 and sid in r.stdout and "\n  state: Running\n" in r.stdout and
         "\n- tail\n" in r.stdout, "get -o yaml", r.stdout)
    r = osb("sandbox", "endpoint", sid, "-p", "8080", "-o", "json", s=s)
    t.ok(r.returncode == 0 and js(r)["endpoint"].endswith("/proxy/8080"), "endpoint", r.stdout)
    t.eq(osb("sandbox", "endpoint", sid, "-p", "0", s=s).returncode, 2, "endpoint port 0: exit 2")
    r = osb("sandbox", "health", sid, s=s)
    t.ok(r.returncode == 0 and "healthy" in r.stdout, "health", r.stdout)
    r = osb("sandbox", "renew", sid, "-t", "1h", "-o", "json", s=s)
    t.ok(r.returncode == 0 and "expiresAt" in js(r), "renew", r.stdout + r.stderr)
    r = osb("sandbox", "metrics", sid, "-o", "json", s=s)
    t.ok(r.returncode == 0 and js(r)["cpu_count"] > 0, "metrics", r.stdout)
    t.eq(osb("sandbox", "pause", sid, s=s).returncode, 0, "pause")
    t.eq(js(osb("sandbox", "get", sid, "-o", "json", s=s))["status"]["state"], "Paused",
         "paused")
    r = osb("sandbox", "pause", sid, s=s)
    t.ok(r.returncode == 1 and "HTTP 409" in r.stderr, "pause twice: the server's 409", r.stderr)
    t.eq(osb("sandbox", "resume", sid, s=s).returncode, 0, "resume (waits for execd)")
    return sid


def test_command(t, s, sid):
    r = osb("command", "run", sid, "--", "sh", "-c", "echo out; echo err >&2; exit 7", s=s)
    t.ok(r.returncode == 7 and r.stdout == "out\n" and r.stderr == "err\n",
         "command run: live stdout/stderr, the remote exit code", repr((r.returncode, r.stdout,
                                                                         r.stderr)))
    r = osb("exec", sid, "echo $((6*7)) | tr 4 X", s=s)
    t.ok(r.returncode == 0 and r.stdout == "X2\n", "exec with one word: shell text", r.stdout)
    r = osb("exec", sid, "-w", "/etc", "-e", "GREETING=hi there", "--", "sh", "-c",
            "echo $GREETING; pwd", s=s)
    t.ok(r.stdout == "hi there\n/etc\n", "exec -w -e", r.stdout + r.stderr)
    r = osb("command", "run", sid, "-d", "-o", "json", "--", "sh", "-c", "echo bg; sleep 0.1",
            s=s)
    ex = (js(r) or {}).get("execution_id")
    t.ok(r.returncode == 0 and ex, "background command: its execution id", r.stdout)
    if ex:
        def logs():
            return js(osb("command", "logs", sid, ex, "-o", "json", s=s)) or {}
        wait_for(lambda: logs().get("content") == "bg\n", timeout=30)
        t.eq(logs().get("content"), "bg\n", "command logs")
        st = js(osb("command", "status", sid, ex, "-o", "json", s=s)) or {}
        wait_for(lambda: not (js(osb("command", "status", sid, ex, "-o", "json", s=s)) or
                              {"running": True})["running"], timeout=30)
        st = js(osb("command", "status", sid, ex, "-o", "json", s=s)) or {}
        t.ok(st.get("running") is False and st.get("exit_code") == 0, "command status", st)
    r = osb("command", "session", "create", sid, "-o", "json", s=s)
    ses = (js(r) or {}).get("session_id")
    t.ok(bool(ses), "session create", r.stdout + r.stderr)
    if ses:
        osb("command", "session", "run", sid, ses, "--", "cd /tmp && export K=v", s=s)
        r = osb("command", "session", "run", sid, ses, "--", "echo $PWD $K", s=s)
        t.eq(r.stdout, "/tmp v\n", "a session keeps its state")
        t.eq(osb("command", "session", "delete", sid, ses, s=s).returncode, 0, "session delete")
    r = osb("code", "run", sid, "-l", "python", "y = 5", s=s)
    r = osb("code", "run", sid, "-l", "python", s=s, stdin="print(y * 3)\n")
    t.ok(r.returncode == 0 and r.stdout.strip() == "15", "code run: the language's context "
         "keeps state; code from stdin", r.stdout + r.stderr)
    r = osb("code", "run", sid, "-l", "python", "1/0", s=s)
    t.ok(r.returncode == 1 and "ZeroDivisionError" in r.stderr, "code run: an exception", r.stderr)
    t.eq(osb("command", "run", sid, s=s).returncode, 2, "command run without a command: exit 2")


def test_files(t, s, sid):
    d = tempfile.mkdtemp(prefix="osb-files-")
    big = os.path.join(d, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(3 << 20))
    os.chmod(big, 0o640)
    r = osb("file", "upload", sid, big, "/tmp/up/big.bin", s=s)
    t.ok(r.returncode == 0, "upload a 3 MiB file", r.stderr)
    back = os.path.join(d, "back.bin")
    r = osb("file", "download", sid, "/tmp/up/big.bin", back, s=s)
    t.ok(r.returncode == 0 and open(back, "rb").read() == open(big, "rb").read(),
         "download: the same bytes", r.stderr)
    r = osb("file", "info", sid, "/tmp/up/big.bin", "-o", "json", s=s)
    info = (js(r) or {}).get("/tmp/up/big.bin", {})
    t.ok(info.get("size") == 3 << 20 and info.get("mode") == 640, "info: size and the local "
         "file's mode kept", r.stdout)
    r = osb("file", "write", sid, "/tmp/w.txt", s=s, stdin="from stdin\n")
    t.ok(r.returncode == 0, "write from stdin", r.stderr)
    t.eq(osb("file", "cat", sid, "/tmp/w.txt", s=s).stdout, "from stdin\n", "cat")
    osb("file", "write", sid, "/tmp/w2.txt", "-c", "a-b-a", "--mode", "600", s=s)
    r = osb("file", "replace", sid, "/tmp/w2.txt", "--old", "a", "--new", "X", "-o", "json", s=s)
    t.eq((js(r) or {}).get("replaced"), 2, "replace counts")
    t.eq(osb("file", "cat", sid, "/tmp/w2.txt", s=s).stdout, "X-b-X", "replaced")
    t.eq(osb("file", "mkdir", sid, "/tmp/m/n", "--mode", "700", s=s).returncode, 0, "mkdir")
    t.eq(osb("file", "mv", sid, "/tmp/w2.txt", "/tmp/m/n/w3.txt", s=s).returncode, 0, "mv")
    r = osb("file", "search", sid, "/tmp/m", "-p", "*.txt", "-o", "json", s=s)
    t.eq([x["path"] for x in js(r) or []], ["/tmp/m/n/w3.txt"], "search")
    t.eq(osb("file", "chmod", sid, "/tmp/m/n/w3.txt", "--mode", "0444", s=s).returncode, 0,
         "chmod")
    t.eq(js(osb("file", "info", sid, "/tmp/m/n/w3.txt", "-o", "json", s=s))["/tmp/m/n/w3.txt"]
         ["mode"], 444, "chmod applied")
    t.eq(osb("file", "rm", sid, "/tmp/m/n/w3.txt", s=s).returncode, 0, "rm")
    t.eq(osb("file", "rmdir", sid, "/tmp/m", s=s).returncode, 0, "rmdir")
    r = osb("file", "cat", sid, "/tmp/m/n/w3.txt", s=s)
    t.ok(r.returncode == 1 and "FILE_NOT_FOUND" in r.stderr, "cat of a removed file: exit 1 "
         "with execd's code", r.stderr)
    r = osb("file", "download", sid, "/nope", os.path.join(d, "x"), s=s)
    t.ok(r.returncode == 1 and not os.listdir(d).count("x") and
         not [f for f in os.listdir(d) if "osb-part" in f],
         "a failed download leaves no file behind", os.listdir(d))
    t.eq(osb("file", "chmod", sid, "/tmp/w.txt", "--mode", "999", s=s).returncode, 2,
         "a bad mode: exit 2")
    shutil.rmtree(d)


def test_egress(t, s):
    d = tempfile.mkdtemp(prefix="osb-np-")
    np = os.path.join(d, "policy.json")
    with open(np, "w") as f:
        json.dump({"defaultAction": "deny", "egress": [{"action": "allow", "target": "a.test"}]},
                  f)
    r = osb("sandbox", "create", "-i", "host", "--network-policy-file", np, "-o", "json", s=s)
    sid = (js(r) or {}).get("id")
    t.ok(r.returncode == 0 and sid, "create with --network-policy-file", r.stderr)
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write("{nope")
    r = osb("sandbox", "create", "-i", "host", "--network-policy-file", bad, s=s)
    t.ok(r.returncode == 2 and "not JSON" in r.stderr, "a policy file that is not JSON: exit 2 "
         "before anything is sent", r.stderr)
    shutil.rmtree(d)
    if not sid:
        return
    r = osb("egress", "get", sid, "-o", "json", s=s)
    rules = (js(r) or {}).get("policy", {}).get("egress", [])
    t.ok(r.returncode == 0 and {"action": "allow", "target": "a.test"} in rules, "egress get",
         r.stdout + r.stderr)
    r = osb("egress", "patch", sid, "--rule", "allow=b.test", "--rule", "deny=a.test", s=s)
    t.eq(r.returncode, 0, "egress patch")
    rules = js(osb("egress", "get", sid, "-o", "json", s=s))["policy"]["egress"]
    t.ok({"action": "allow", "target": "b.test"} in rules and
         {"action": "deny", "target": "a.test"} in rules, "patched", rules)
    t.eq(osb("egress", "patch", sid, "--rule", "maybe=x", s=s).returncode, 2,
         "egress patch with a bad rule: exit 2")
    osb("sandbox", "kill", sid, s=s)


def test_more(t, s, sid):
    r = osb("diagnostics", "logs", sid, s=s)
    t.ok(r.returncode == 0, "diagnostics logs", r.stderr)
    r = osb("diagnostics", "events", sid, "-o", "json", s=s)
    t.ok(r.returncode == 0 and (js(r) or {}).get("kind") == "events", "diagnostics events",
         r.stdout + r.stderr)
    r = osb("snapshot", "create", sid, "--name", "snap1", "--wait", "-o", "json", s=s)
    snap = js(r) or {}
    t.ok(r.returncode == 0 and snap.get("status", {}).get("state") == "Ready",
         "snapshot create --wait", r.stdout + r.stderr)
    if snap.get("id"):
        r = osb("snapshot", "list", "-o", "json", s=s)
        t.ok(snap["id"] in [x["id"] for x in (js(r) or {}).get("items", [])], "snapshot list")
        r = osb("sandbox", "create", "--from-snapshot", snap["id"], "-o", "json", s=s)
        new = (js(r) or {}).get("id")
        t.ok(r.returncode == 0 and new, "sandbox create --from-snapshot", r.stderr)
        if new:
            t.eq(osb("file", "cat", new, "/tmp/w.txt", s=s).stdout, "from stdin\n",
                 "the snapshot's files are there")
            t.eq(osb("sandbox", "kill", new, s=s).returncode, 0, "kill the restored sandbox")
        t.eq(osb("snapshot", "rm", snap["id"], s=s).returncode, 0, "snapshot rm")
    r = osb("pool", "create", "p1", "-i", "host", "--buffer-min", "1", "--buffer-max", "1",
            "--pool-min", "0", "--pool-max", "2", "-o", "json", s=s)
    t.ok(r.returncode == 0 and (js(r) or {}).get("name") == "p1", "pool create", r.stderr)
    r = osb("pool", "resize", "p1", "--buffer-max", "2", "-o", "json", s=s)
    t.eq((js(r) or {}).get("capacitySpec", {}).get("bufferMax"), 2, "pool resize keeps the rest")
    t.ok("p1" in osb("pool", "list", s=s).stdout, "pool list")
    t.eq(osb("pool", "rm", "p1", s=s).returncode, 0, "pool rm")
    r = osb("batch", "--count", "2", "-i", "host", "-o", "json", s=s)
    items = (js(r) or {}).get("items", [])
    t.ok(r.returncode == 0 and len(items) == 2 and all("id" in x for x in items), "batch of 2",
         r.stdout + r.stderr)
    if items:
        r = osb("sandbox", "kill", *[x["id"] for x in items], s=s)
        t.ok(r.returncode == 0, "kill several at once", r.stderr)
    r = osb("sandbox", "kill", "nope-1", sid, s=s)
    t.ok(r.returncode == 1 and "nope-1" in r.stderr, "kill: one unknown id fails, the "
         "others go", r.stderr)
    t.ok(osb("sandbox", "get", sid, s=s).returncode == 1, "the known one was killed")


def test_config(t, s):
    cfg = os.path.join(HOME, ".opensandbox", "config.toml")
    r = osb("config", "init")
    t.ok(r.returncode == 0 and os.path.exists(cfg), "config init", r.stderr)
    t.eq(osb("config", "init").returncode, 2, "config init again: refused without --force")
    t.eq(oct(os.stat(cfg).st_mode & 0o777), "0o600", "the config file is private")
    t.eq(osb("config", "set", "connection.domain", "127.0.0.1:%d" % s.port).returncode, 0,
         "config set domain")
    t.eq(osb("config", "set", "connection.api_key", s.api_key).returncode, 0, "config set key")
    t.eq(osb("config", "set", "no.such", "x").returncode, 2, "config set of an unknown key")
    t.eq(osb("config", "set", "connection.use_server_proxy", "perhaps").returncode, 2,
         "config set with a bad boolean")
    t.ok("# request_timeout = 30" in open(cfg).read(), "config set keeps the comments")
    r = osb("sandbox", "list")
    t.ok(r.returncode == 0, "the config file alone connects", r.stderr)
    r = osb("sandbox", "list", env={"OPEN_SANDBOX_API_KEY": "env-wrong"})
    t.ok(r.returncode == 1 and "INVALID_API_KEY" in r.stderr, "the environment beats the file")
    r = osb("--api-key", s.api_key, "sandbox", "list", env={"OPEN_SANDBOX_API_KEY": "env-wrong"})
    t.ok(r.returncode == 0, "a flag beats the environment", r.stderr)
    r = osb("config", "show", "-o", "json")
    d = js(r) or {}
    t.ok(d.get("domain") == "127.0.0.1:%d" % s.port and "*" in d.get("api_key", "") and
         s.api_key not in r.stdout, "config show masks the key", r.stdout)
    with open(cfg, "a") as f:
        f.write("[broken\n")
    r = osb("sandbox", "list")
    t.ok(r.returncode == 2 and "config file" in r.stderr, "a broken config file is named",
         r.stderr)
    os.unlink(cfg)
    r = osb("completion", "bash")
    t.ok(r.returncode == 0 and "complete -o default -F _osb osb" in r.stdout, "completion bash")
    r = subprocess.run(["bash", "-n"], input=r.stdout, capture_output=True, text=True)
    t.ok(r.returncode == 0, "the bash completion parses", r.stderr)


def main():
    with Server(api_key="osb-cli-key") as s:
        t.run(test_basics, t, s, name="basics", timeout=120)
        sid = t.run(test_sandbox, t, s, name="sandbox", timeout=200)
        if sid:
            t.run(test_command, t, s, sid, name="command", timeout=200)
            t.run(test_files, t, s, sid, name="files", timeout=200)
            t.run(test_more, t, s, sid, name="more", timeout=300)
        t.run(test_egress, t, s, name="egress", timeout=120)
        t.run(test_config, t, s, name="config", timeout=120)
    shutil.rmtree(HOME, ignore_errors=True)


t.run(main, name="osb", timeout=1200)
t.done()
