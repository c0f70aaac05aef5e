"""The audit trail (issue 15): every state-changing API request (not GET, HEAD or
OPTIONS; past the key) appends a hash-chained JSON line to <state>/audit.log;
`opensandbox-server audit verify FILE` checks the chain and names the first
broken record; GET /v1/audit lists records (sandboxId, since, limit). Checked:
the records of a sandbox's life and of a command run through the server's proxy,
no API key in the file, a 401 not recorded, filters and their errors, verify on
the file and on tampered copies (a field edited, a line removed, two lines
swapped, the last line cut), and the chain going on across a restart. Runs
through the proxy to execd: a command with its text and exit code, a code cell,
a background command, a session run, a text cut at 4 KiB, a run the client
left, and no env value of the request in the file. Rotation: the file moved,
SIGHUP, new records in a new file; verify of old+new, of new alone (a note),
and of the two in the wrong order."""
import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
KEY = "audit-key-" + os.urandom(8).hex()


def verify(*paths):
    r = subprocess.run([SERVER_BIN, "audit", "verify"] + list(paths), capture_output=True,
                       text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def lines(path):
    with open(path) as f:
        return f.read().splitlines(True)


def tampered(s, path, name, change):
    copy = os.path.join(s.tmp, "tampered-" + name)
    ls = lines(path)
    with open(copy, "w") as f:
        f.write("".join(change(ls)))
    return verify(copy)


def test_trail(s):
    path = os.path.join(s.state_dir, "audit.log")
    sid = s.new()["id"]
    until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
    s.post("/v1/sandboxes/%s/pause" % sid)
    s.post("/v1/sandboxes/%s/resume" % sid)
    s.req("PATCH", "/v1/sandboxes/%s/metadata" % sid, json={"team": "a"})
    rc = exit_code(s.execd(sid).sse("/command", json={"command": "echo audited"}).events)
    t.eq(rc, 0, "a command through the server's proxy")
    s.req("POST", "/v1/sandboxes/%s/pause" % sid, headers={"OPEN-SANDBOX-API-KEY": "wrong"})
    s.delete("/v1/sandboxes/" + sid)
    items = until(lambda: [i for i in s.get("/v1/audit").json()["items"]
                           if i["action"] == "DELETE /sandboxes/:id"] and
                  s.get("/v1/audit").json()["items"], 30)
    acts = [i["action"] for i in items]
    want = ["POST /sandboxes", "POST /sandboxes/:id/pause", "POST /sandboxes/:id/resume",
            "PATCH /sandboxes/:id/metadata", "DELETE /sandboxes/:id"]
    t.eq([a for a in acts if a in want], want, "GET /v1/audit: the sandbox's life, in order",
         acts)
    cmd = [i for i in items if i["action"].startswith("POST /sandboxes/:id/proxy/")]
    t.ok(cmd and cmd[0]["detail"].get("path") == "command" and cmd[0]["sandboxId"] == sid,
         "the command: its sandbox, port and execd path", cmd)
    t.eq([i["seq"] for i in items], list(range(1, len(items) + 1)), "  seq 1, 2, 3, ...")
    by = {i["action"]: i for i in items}
    p = by["POST /sandboxes/:id/pause"]
    t.ok(p["sandboxId"] == sid and p["status"] == 202 and p["actor"].startswith("sha256:") and
         p["requestId"] and p["time"].endswith("Z"),
         "a record: sandboxId, status, actor (the key's id), requestId, time", p)
    t.eq(sum(1 for i in items if i["action"] == "POST /sandboxes/:id/pause"), 1,
         "a request with a wrong key (401) is not recorded")
    t.ok(KEY not in open(path).read(), "no API key in the file")
    t.eq(oct(os.stat(path).st_mode & 0o777), "0o600", "the file is 0600")

    r = s.get("/v1/audit?sandboxId=" + sid).json()["items"]
    t.ok(r and all(i["sandboxId"] == sid for i in r), "?sandboxId= filters")
    t.eq(len(s.get("/v1/audit?limit=2").json()["items"]), 2, "?limit=2: the last two")
    last = items[-1]
    r = s.get("/v1/audit?since=" + last["time"]).json()["items"]
    t.ok(r and r[-1]["seq"] == last["seq"] and all(i["time"] >= last["time"] for i in r),
         "?since= keeps the records from that time on")
    t.is_error(s.get("/v1/audit?since=yesterday"), 400, "AUDIT::INVALID_PARAMETER",
               "?since= not a time -> 400")
    t.is_error(s.get("/v1/audit?limit=0"), 400, None, "?limit=0 -> 400")

    rc, out = verify(path)
    t.ok(rc == 0 and out == "ok: %d records" % len(lines(path)), "audit verify: ok", out)
    n = len(lines(path))

    def edit(ls):
        ls = list(ls)
        ls[1] = ls[1].replace('"status":202', '"status":200', 1)
        return ls
    rc, out = tampered(s, path, "edit", edit)
    t.ok(rc == 1 and "record 2 (line 2)" in out and "edited" in out,
         "a field edited: verify names record 2", out)
    rc, out = tampered(s, path, "drop", lambda ls: ls[:2] + ls[3:])
    t.ok(rc == 1 and "record 3 (line 3)" in out, "a line removed: verify names where", out)
    rc, out = tampered(s, path, "swap", lambda ls: ls[:1] + [ls[2], ls[1]] + ls[3:])
    t.ok(rc == 1 and "record 2 (line 2)" in out, "two lines swapped: named", out)
    rc, out = tampered(s, path, "cut", lambda ls: ls[:-1] + [ls[-1][:20]])
    t.ok(rc == 1 and "truncated" in out and "record %d" % n in out,
         "the last line cut: truncated", out)
    rc, out = tampered(s, path, "head", lambda ls: ls[1:])
    t.ok(rc == 1 and "begins at seq 2" in out and "record 1 (line 1)" in out,
         "the first line removed: verify names the missing start", out)
    copy = os.path.join(s.tmp, "tampered-head")
    rc, out = verify("--continued", copy)
    t.ok(rc == 0 and "continues from seq 1" in out,
         "  with --continued it is checked from there, and says so", out)
    rc, out = tampered(s, path, "head2", lambda ls: [ls[0].replace('"seq":1,', '"seq":2,')] +
                       ls[1:])
    t.ok(rc == 1 and "record 1 (line 1)" in out, "a first record edited: named", out)
    return n


def test_restart(s, n):
    path = os.path.join(s.state_dir, "audit.log")
    s.restart()
    sid = s.new()["id"]
    until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
    s.delete("/v1/sandboxes/" + sid)
    until(lambda: len(lines(path)) >= n + 2, 30)
    rc, out = verify(path)
    t.ok(rc == 0 and out == "ok: %d records" % len(lines(path)) and len(lines(path)) >= n + 2,
         "after a restart the chain goes on (verify ok)", out)


RUN = "POST /sandboxes/:id/proxy/:port/*rest"


def runs(s, sid, n):
    """The last records of runs through the proxy in sandbox sid, once there are n."""
    def get():
        items = [i for i in s.get("/v1/audit?sandboxId=%s&limit=1000" % sid).json()["items"]
                 if i["action"] == RUN]
        return items if len(items) >= n else None
    return until(get, 30) or []


def test_runs(s):
    path = os.path.join(s.state_dir, "audit.log")
    secret = "env-secret-" + os.urandom(8).hex()
    sid = s.new()["id"]
    until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
    x = s.execd(sid)
    r = x.sse("/command", json={"command": "echo hi; exit 3", "envs": {"TOKEN": secret}})
    t.eq(exit_code(r.events), 3, "a command exits 3 through the proxy")
    d = runs(s, sid, 1)[-1]["detail"]
    t.ok(d.get("text") == "echo hi; exit 3" and d.get("exitCode") == 3 and
         d.get("port") == "44772" and d.get("path") == "command" and "textTruncated" not in d,
         "its record: the text as typed and exit code 3", d)
    x.sse("/command", json={"command": "sleep 0.2", "background": True})
    d = runs(s, sid, 2)[-1]["detail"]
    t.ok(d.get("text") == "sleep 0.2" and d.get("background") is True and "exitCode" not in d,
         "a background command: its text, no exit code", d)
    long = "echo " + "y" * 5000
    r = x.sse("/command", json={"command": long})
    t.eq(exit_code(r.events), 0, "a 5 KB command runs")
    d = runs(s, sid, 3)[-1]["detail"]
    t.ok(d.get("text") == long[:4096] and d.get("textTruncated") is True and
         d.get("exitCode") == 0, "  its text cut at 4 KiB, marked", len(d.get("text", "")))
    sess = x.post("/session", json={}).json()["session_id"]
    x.sse("/session/%s/run" % sess, json={"command": "false"})
    d = runs(s, sid, 5)[-1]["detail"]
    t.ok(d.get("text") == "false" and d.get("exitCode") == 1 and
         d.get("path") == "session/%s/run" % sess, "a session run: its text and exit code", d)
    st = x.sse_stream("/command", json={"command": "sleep 30; echo left"})
    next(iter(st))  # the init event: the command runs
    st.close()
    d = until(lambda: [i for i in runs(s, sid, 6) if i["detail"].get("text") ==
                       "sleep 30; echo left"], 30)
    d = d[-1]["detail"] if d else {}
    t.ok(d.get("ended") == "disconnected" and "exitCode" not in d,
         "a run the client left: its text, ended: disconnected, no exit code", d)
    if os.path.exists("/usr/bin/python3"):
        r = x.sse("/code", json={"code": "print(6 * 7)", "context": {"language": "python"}},
                  timeout=120)
        d = until(lambda: [i for i in runs(s, sid, 7) if i["detail"].get("path") == "code"], 30)
        d = d[-1]["detail"] if d else {}
        t.ok(d.get("text") == "print(6 * 7)" and ("exitCode" in d or "error" in d),
             "a code cell: its code and how it ended", (d, r.events[-1:]))
    else:
        t.skip("a code cell", "no /usr/bin/python3")
    text = open(path).read()
    t.ok(secret not in text, "no env value of a run in the file")
    s.delete("/v1/sandboxes/" + sid)
    # A record is appended when its request is freed, just after the answer.
    until(lambda: [i for i in s.get("/v1/audit?sandboxId=" + sid).json()["items"]
                   if i["action"] == "DELETE /sandboxes/:id"], 30)


def test_rotation(s):
    path = os.path.join(s.state_dir, "audit.log")
    old = path + ".1"
    os.rename(path, old)
    s.proc.send_signal(signal.SIGHUP)
    t.ok(until(lambda: os.path.exists(path), 30), "SIGHUP: a new audit file at the path")
    n_old = len(lines(old))  # records before the reopen rightly went on in the old file
    sid = s.new()["id"]
    until(lambda: s.get("/v1/sandboxes/" + sid).json()["status"]["state"] == "Running")
    s.delete("/v1/sandboxes/" + sid)
    until(lambda: len(lines(path)) >= 2, 30)
    t.ok(len(lines(old)) == n_old and len(lines(path)) >= 2,
         "new records go to the new file, none to the old", (n_old, len(lines(path))))
    rc, out = verify(old, path)
    t.ok(rc == 0 and out.startswith("ok: %d records in 2 files" % (n_old + len(lines(path)))),
         "verify old new: one chain", out)
    rc, out = verify(path)
    t.ok(rc == 1 and "begins at seq %d" % (n_old + 1) in out,
         "verify new alone: refused, its start is not the chain's", out)
    rc, out = verify("--continued", path)
    t.ok(rc == 0 and "continues from seq %d" % n_old in out,
         "verify --continued new: ok, continues from the old file's last seq", out)
    rc, out = verify(path, old)
    t.ok(rc == 1 and out.startswith(old + ": broken at record"),
         "verify new old (wrong order): broken in the second", out)
    # a second rotation, then a restart before any request: the server's own
    # record opened the new file, so the chain goes on there
    mid = path + ".0"
    os.rename(path, mid)
    s.proc.send_signal(signal.SIGHUP)
    t.ok(until(lambda: os.path.exists(path) and len(lines(path)) >= 1, 30),
         "SIGHUP again: a new file")
    first = json.loads(lines(path)[0])
    t.ok(first["actor"] == "server" and first["action"] == "REOPEN audit trail",
         "  its first record is the server's own reopen", first)
    s.restart()
    sid = s.new()["id"]
    s.delete("/v1/sandboxes/" + sid)
    until(lambda: len(lines(path)) >= 3, 30)
    rc, out = verify(old, mid, path)
    t.ok(rc == 0 and "in 3 files" in out, "  after a restart the chain goes on in it", out)


def main():
    with Server(api_key=KEY) as s:
        n = t.run(test_trail, s, timeout=300)
        if n:
            t.run(test_restart, s, n, timeout=300)
        t.run(test_runs, s, timeout=600)
        t.run(test_rotation, s, timeout=300)
    rc, out = subprocess.run([SERVER_BIN, "audit", "verify", "/nonexistent/audit.log"],
                             capture_output=True, text=True).returncode, ""
    t.eq(rc, 1, "verify of a file that does not exist fails (a trail deleted whole)")


if __name__ == "__main__":
    t.run(main, timeout=900)
    t.done()
