#!/usr/bin/python3
"""execd /session: one persistent bash per session (functions, aliases,
unexported variables, shell options and cwd survive between runs), run
streaming, timeouts, exit, deletion and bad input (protocol.md 3.2-3.4, 6.2)."""
import os
import re
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F401

t = TAP()
TMP = tempfile.mkdtemp(prefix="osb-sess-test-")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def as_resp(r):
    return r.resp or Resp(r.status, "", list(r.headers.items()), bytes(r.raw))


def new_session(x, body=None):
    r = x.post("/session", json=body if body is not None else {})
    t.eq(r.status, 200, "POST /session -> 200")
    return r.json()["session_id"]


def srun(x, sid, command, **kw):
    body = {"command": command}
    body.update(kw)
    return x.sse("/session/%s/run" % sid, json=body)


@t.test
def test_create():
    with Execd() as x:
        r = x.post("/session", json={})
        t.eq(r.status, 200, "create -> 200")
        t.ok(r.headers.get("content-type", "").startswith("application/json"), "JSON")
        sid = r.json().get("session_id")
        t.ok(isinstance(sid, str) and UUID_RE.match(sid), "session_id is a UUID with dashes", sid)
        r = x.post("/session", body=b"", headers={"Content-Type": "application/json"})
        t.eq(r.status, 200, "empty body with JSON content type = {}")
        r = x.post("/session")
        t.eq(r.status, 200, "no body at all")
        d = os.path.join(TMP, "created", "deep")
        sid = new_session(x, {"cwd": d})
        t.ok(os.path.isdir(d), "cwd is created if missing")
        t.eq(stdout_lines(srun(x, sid, "pwd").events), [d], "session starts in its cwd")
        t.is_error(x.post("/session", body=b"{bad", headers={"Content-Type": "application/json"}),
                   400, "INVALID_REQUEST_BODY", name="malformed JSON -> 400")
        t.is_error(x.post("/session", json={"cwd": 5}), 400, "INVALID_REQUEST_BODY",
                   name="cwd not a string -> 400")
        f = os.path.join(TMP, "plainfile")
        open(f, "w").close()
        t.is_error(x.post("/session", json={"cwd": f + "/sub"}), 500, "RUNTIME_ERROR",
                   name="cwd that cannot be created -> 500")


@t.test
def test_run_stream():
    with Execd() as x:
        sid = new_session(x)
        r = srun(x, sid, "echo out; echo err >&2; printf 'a\\n\\nb\\r\\nlast'")
        t.eq(r.status, 200, "run -> 200")
        t.ok(r.headers.get("content-type", "").startswith("text/event-stream"), "SSE")
        t.eq(check_events(r.events), [], "events well formed")
        ev = [e for e in r.events if e["type"] != "ping"]
        t.eq(ev[0], {"type": "init", "text": sid, "timestamp": ev[0]["timestamp"]},
             "init carries the session id")
        t.eq(stdout_lines(ev), ["out", "err", "a", "\n", "b", "last"],
             "stdout+stderr merged into stdout events, one per line")
        t.eq(stderr_lines(ev), [], "no stderr events")
        t.eq(ev[-1]["type"], "execution_complete", "execution_complete last")
        t.eq(exit_code(ev), 0, "exit code 0")
        r = srun(x, sid, "false")
        t.eq([e["error"] for e in events_of(r.events, "error")],
             [{"ename": "CommandExecError", "evalue": "1",
               "traceback": ["command exited with code 1"]}], "non-zero exit -> error event")
        t.eq(events_of(r.events, "execution_complete"), [], "no complete after error")
        r = srun(x, sid, "(exit 42)")
        t.eq(exit_code(r.events), 42, "exit code 42")
        r = srun(x, sid, "cat; read v || echo no-stdin")
        t.eq(stdout_lines(r.events), ["no-stdin"], "stdin is /dev/null")
        r = srun(x, sid, "echo 'it''s' \"$((6*7))\" $'tab\\there'; cat <<'EOF'\nhere $doc\nEOF")
        t.eq(stdout_lines(r.events), ["its 42 tab\there", "here $doc"],
             "quoting, $'..', heredoc")
        pidfile = os.path.join(TMP, "sess-bg.pid")
        r = srun(x, sid, "sleep 100 & echo $! > %s; echo bg" % pidfile)
        t.eq(stdout_lines(r.events), ["bg"], "background job output")
        bg = int(open(pidfile).read())
        t.ok(os.path.exists("/proc/%d" % bg) and
             open("/proc/%d/stat" % bg).read().rsplit(") ", 1)[1][0] not in "ZX",
             "a background job does not hold the run: the run ended while it still runs")
        r = srun(x, sid, "echo next")
        t.eq(stdout_lines(r.events), ["next"], "next run after a background job")


@t.test
def test_persistence():
    with Execd() as x:
        sid = new_session(x)
        d = os.path.join(TMP, "persist")
        os.makedirs(d, exist_ok=True)
        r = srun(x, sid, "greet() { echo \"hi $1\"; }; alias ll='echo aliased'; "
                        "secret=unexported; export EXP=exported; set -o pipefail; "
                        "shopt -s extglob; cd %s" % d)
        t.eq(exit_code(r.events), 0, "setup run")
        r = srun(x, sid, "greet bob; ll; echo \"$secret $EXP\"; "
                        "bash -c 'echo \"child:${secret:-none}:$EXP\"'; "
                        "set -o | grep -w pipefail; shopt extglob; pwd")
        lines = stdout_lines(r.events)
        t.eq(lines[:4], ["hi bob", "aliased", "unexported exported", "child:none:exported"],
             "functions, aliases, unexported and exported variables survive")
        t.ok(len(lines) >= 7 and lines[4].split() == ["pipefail", "on"] and
             lines[5].split() == ["extglob", "on"], "set -o and shopt options survive", lines)
        t.eq(lines[-1:], [d], "cwd survives")
        r = srun(x, sid, "pwd", cwd=TMP)
        t.eq(stdout_lines(r.events), [TMP], "per-run cwd")
        r = srun(x, sid, "pwd")
        t.eq(stdout_lines(r.events), [TMP], "the run's cwd stays (like upstream)")
        r = srun(x, sid, "cd() { echo hijacked; }; eval() { echo hijacked; }; "
                        "printf() { echo hijacked; }; alias cd='echo hijacked'")
        r = srun(x, sid, "builtin echo fine", cwd=d)
        t.eq(stdout_lines(r.events), ["fine"], "user functions/aliases named cd/eval/printf "
                                                "do not break the protocol")
        r = srun(x, sid, "echo x >&3")
        t.ok(exit_code(r.events) != 0, "fd 3 (control) is closed for user commands")
        big = "x=" + "y" * 200000 + "; echo ${#x}"
        r = srun(x, sid, big)
        t.eq(stdout_lines(r.events), ["200000"], "a 200 KB command")


@t.test(timeout=40)
def test_timeout():
    with Execd() as x:
        sid = new_session(x)
        srun(x, sid, "keep=me")
        r = srun(x, sid, "echo started; sleep 30", timeout=500)
        t.eq(r.status, 200, "stream status stays 200")
        t.ok(b'{"code":"RUNTIME_ERROR","message":"error running in session. timeout after 500ms"}'
             b"\n\n" in r.raw, "timeout JSON written into the stream", r.raw[-300:])
        t.eq([e for e in r.events if e.get("type") in ("error", "execution_complete")], [],
             "no terminal event after a timeout")
        t.ok("started" in stdout_lines(r.events), "output before the timeout streamed")
        r = srun(x, sid, "echo $keep")
        t.eq(stdout_lines(r.events), ["me"], "the shell survives a killed child: state kept")
        pidfile = os.path.join(TMP, "sess-gc.pid")
        r = srun(x, sid, "(sleep 60; echo late) & echo $! > %s; wait" % pidfile, timeout=400)
        pid = int(open(pidfile).read())
        t.ok(wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                      open("/proc/%d/stat" % pid).read().split(") ")[1][0] in "ZX", 3),
             "the run's processes are killed")
        r = srun(x, sid, "while :; do :; done", timeout=300)
        t.ok(b"timeout after 300ms" in r.raw, "a builtin loop is stopped too: timeout JSON")
        r = srun(x, sid, "echo alive; echo ${keep:-lost}")
        t.eq(stdout_lines(r.events), ["alive", "lost"],
             "a stuck shell is restarted (state lost, documented)")


@t.test
def test_exit():
    with Execd() as x:
        sid = new_session(x)
        r = srun(x, sid, "echo bye; exit 5")
        t.eq(stdout_lines(r.events), ["bye"], "output before exit")
        t.eq([e["error"] for e in events_of(r.events, "error")],
             [{"ename": "CommandExecError", "evalue": "5",
               "traceback": ["command exited with code 5"]}], "exit 5 reported")
        r = srun(x, sid, "echo reborn")
        t.eq(stdout_lines(r.events), ["reborn"], "the session gets a new shell")
        r = srun(x, sid, "exit")
        t.eq(exit_code(r.events), 0, "plain exit -> 0")


@t.test(timeout=30)
def test_busy_and_disconnect():
    with Execd() as x:
        sid = new_session(x)
        st = x.sse_stream("/session/%s/run" % sid, json={"command": "echo go; sleep 1.5"})
        it = iter(st)
        next(it)
        r = srun(x, sid, "echo second")
        t.is_error(as_resp(r), 500, "RUNTIME_ERROR", name="concurrent run -> 500")
        t.ok(r.resp is not None and "busy" in r.resp.text, "message says busy")
        rest = [e for _, e in it]
        st.close()
        t.eq(exit_code(rest), 0, "first run completes")

        st = x.sse_stream("/session/%s/run" % sid, json={"command": "sleep 30"})
        next(iter(st))
        st.close()
        t.ok(wait_for(lambda: exit_code(srun(x, sid, "echo again").events) == 0, 60),
             "client disconnect stops the run; the session is usable again")


@t.test
def test_delete():
    with Execd() as x:
        sid = new_session(x)
        t.is_empty_ok(x.delete("/session/" + sid), "DELETE /session -> 200 empty")
        r = srun(x, sid, "echo x")
        t.is_error(as_resp(r), 500, "RUNTIME_ERROR", name="run in deleted session -> 500")
        t.ok(r.resp is not None and
             r.resp.json().get("message") == "error running in session. context not found",
             "context not found message", r.resp and r.resp.body)
        t.is_error(x.delete("/session/" + sid), 404, "CONTEXT_NOT_FOUND",
                   name="DELETE again -> 404")
        t.is_error(x.delete("/session/nope"), 404, "CONTEXT_NOT_FOUND", name="DELETE unknown")

        sid = new_session(x)
        t.is_empty_ok(x.delete(qs("/command", {"id": sid})), "DELETE /command?id=<session>")
        t.is_error(as_resp(srun(x, sid, "true")), 500, "RUNTIME_ERROR",
                   name="interrupt closed the session")

        sid = new_session(x)
        st = x.sse_stream("/session/%s/run" % sid, json={"command": "sleep 30"})
        it = iter(st)
        next(it)
        t.is_empty_ok(x.delete("/session/" + sid), "DELETE during a run")
        rest = [e for _, e in it]
        st.close()
        t.eq([e["error"] for e in events_of(rest, "error")],
             [{"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: killed"]}],
             "the running stream ends with signal: killed")


@t.test(timeout=40)
def test_without_bash():
    """A busybox image has no bash: commands and sessions fall back to sh."""
    bb = shutil.which("busybox")
    if not bb:
        t.skip("no bash", "busybox not installed")
        return
    d = os.path.join(TMP, "bin-nobash")
    os.makedirs(d, exist_ok=True)
    for tool in ("sh", "cat", "sleep", "pwd", "readlink"):
        os.symlink(bb, os.path.join(d, tool))
    with Execd(env={"PATH": d}) as x:
        r = x.sse("/command", json={"command": "echo $0; exit 3"})
        t.eq((stdout_lines(r.events), exit_code(r.events)), (["sh"], 3), "/command runs sh -c")
        sid = new_session(x)
        r = srun(x, sid, "f() { echo f$1; }; v=kept; cd %s" % TMP)
        t.eq(exit_code(r.events), 0, "sh session setup")
        r = srun(x, sid, "f 1; echo $v; pwd; readlink /proc/$$/exe")
        t.eq(stdout_lines(r.events), ["f1", "kept", TMP, bb], "sh session keeps its state")
        r = srun(x, sid, "x=" + "y" * 100000 + "; echo ${#x}")
        t.eq(stdout_lines(r.events), ["100000"], "long command through a file with cat")
        r = srun(x, sid, "sleep 5", timeout=300)
        t.ok(b"timeout after 300ms" in r.raw, "sh session timeout")
        t.eq(stdout_lines(srun(x, sid, "echo $v").events), ["kept"], "and it survives")


@t.test
def test_bad_input():
    with Execd() as x:
        sid = new_session(x)
        for body, what in ((b"{bad", "malformed JSON"), (b"", "empty body"),
                           (b"{}", "missing command"), (b'{"command": ""}', "empty command"),
                           (b'{"command": 1}', "command not a string"),
                           (b'{"command": "true", "timeout": "x"}', "timeout not an int"),
                           (b'{"command": "true", "timeout": -5}', "negative timeout"),
                           (b'{"command": "true", "cwd": []}', "cwd not a string")):
            r = x.post("/session/%s/run" % sid, body=body,
                       headers={"Content-Type": "application/json"})
            t.is_error(r, 400, "INVALID_REQUEST_BODY", name="%s -> 400" % what)
        r = srun(x, sid, "pwd", cwd=os.path.join(TMP, "missing"))
        t.is_error(as_resp(r), 400, "INVALID_REQUEST_BODY", name="missing cwd -> 400")
        r = srun(x, "00000000-0000-4000-8000-000000000000", "true")
        t.is_error(as_resp(r), 500, "RUNTIME_ERROR", name="unknown session -> 500")
        t.eq(stdout_lines(srun(x, sid, "echo ok").events), ["ok"], "session fine after bad input")


try:
    t.done()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
