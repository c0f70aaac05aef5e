#!/usr/bin/python3
"""execd code interpreter: /code, /code/context, /code/contexts (protocol.md 3.2, 3.3, 3.5).

Needs /usr/bin/python3, node and bash on the host (contexts run real interpreters).
"""
import os
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: F401,F403
from osbtest import descendants

t = TAP()
NODE = shutil.which("node") or shutil.which("nodejs")
ENV = {"EXECD_PYTHON_BIN": "/usr/bin/python3"}  # not a pyenv shim from PATH
if NODE:
    ENV["EXECD_NODE_BIN"] = NODE


def create(x, lang, cwd=None):
    body = {"language": lang}
    if cwd is not None:
        body["cwd"] = cwd
    return x.post("/code/context", json=body)


def ctx_id(x, lang):
    r = create(x, lang)
    assert r.status == 200, (r.status, r.body)
    return r.json()["id"]


def run(x, code, cid=None, lang=None, timeout=60):
    context = {}
    if cid:
        context["id"] = cid
    if lang:
        context["language"] = lang
    body = {"code": code}
    if context:
        body["context"] = context
    return x.sse("/code", json=body, timeout=timeout)


def out(events, typ="stdout"):
    return "".join(e.get("text", "") for e in events_of(events, typ))


def result(events):
    rs = events_of(events, "result")
    return rs[-1]["results"].get("text") if rs else None


def types(events):
    return [e["type"] for e in events if e["type"] != "ping"]


def test_create(x):
    for lang in ("python", "javascript", "bash"):
        t0 = time.monotonic()
        r = create(x, lang)
        ms = (time.monotonic() - t0) * 1000
        t.eq(r.status, 200, "create %s context -> 200" % lang)
        j = r.json()
        t.ok(re.fullmatch(r"[0-9a-f]{32}", j.get("id", "")) is not None, "%s id is 32 hex" % lang, j)
        t.eq(j.get("language"), lang, "%s language echoed" % lang)
        t.ok("cwd" not in j, "no cwd when none was sent", j)
        t.diag("create %s context: %.0f ms" % (lang, ms))
    for lang in ("python", "javascript"):
        t0 = time.monotonic()
        r = create(x, lang)
        ms = (time.monotonic() - t0) * 1000
        t.diag("second %s context (warm spare): %.0f ms" % (lang, ms))
        t.eq(r.status, 200, "second %s context (bench/ measures the spare's speed-up)" % lang)
    r = create(x, "python", cwd="/tmp")
    t.eq(r.json().get("cwd"), "/tmp", "cwd echoed when sent")
    ev = run(x, "import os\nos.getcwd()", r.json()["id"]).events
    t.eq(result(ev), "'/tmp'", "python context runs in its cwd")
    r = x.post("/code/context", body=b"", headers={"Content-Type": "application/json"})
    t.eq((r.status, r.json().get("language")), (200, "python"), "empty body -> python context")


def test_persistence(x):
    cases = [
        ("python", ["x = 20", "def f(a):\n    return a * 2", "f(x) + 2"], "42"),
        ("javascript", ["let x = 20", "const f = (a) => a * 2", "f(x) + 2"], "42"),
        ("bash", ["x=20; declare -A m=([k]=v)", "f() { echo $(($1 * 2)); }", "echo ${m[k]}$(f $x)"],
         None),
    ]
    for lang, codes, want in cases:
        cid = ctx_id(x, lang)
        evs = [run(x, c, cid).events for c in codes]
        last = evs[-1]
        t.ok(all(events_of(e, "execution_complete") for e in evs), "%s runs complete" % lang,
             evs)
        if want is not None:
            t.eq(result(last), want, "%s variables and functions persist" % lang)
        else:
            t.eq(out(last), "v40\n", "bash variables, arrays and functions persist")
        t.eq(events_of(last, "init")[0].get("text"), cid, "%s init carries the context id" % lang)
        t.eq(events_of(last, "execution_count")[0].get("execution_count"), len(codes),
             "%s execution_count counts runs" % lang)
        t.ok(not check_events(last), "%s events well-formed" % lang, check_events(last))


def test_results(x):
    py = ctx_id(x, "python")
    cases = [
        ("{'a': [1, 2]}", "{'a': [1, 2]}"),
        ("'s'", "'s'"),
        ("x = 5", None),
        ("None", None),
        ("print('p')", None),
        ("3;", None),
        ("import asyncio\nawait asyncio.sleep(0.01)\n7", "7"),
    ]
    for code, want in cases:
        ev = run(x, code, py).events
        t.eq(result(ev), want, "python %r -> result %r" % (code, want))
    ev = run(x, "1 + 1", py).events
    t.eq(types(ev), ["init", "execution_count", "result", "execution_complete"],
         "python success event order")
    t.ok(isinstance(events_of(ev, "execution_complete")[0].get("execution_time", 0), int),
         "execution_time is an int when present")
    if not NODE:
        t.skip("javascript results", "node not installed")
        return
    js = ctx_id(x, "javascript")
    for code, want in [("({a: [1, 2]})", "{ a: [ 1, 2 ] }"), ("'s'", "'s'"), ("var y = 1", None),
                       ("undefined", None), ("null", "null"),
                       ("const z = await new Promise(r => setTimeout(() => r(6), 10)); z * 7",
                        "42"), ("z", "6")]:
        ev = run(x, code, js).events
        t.eq(result(ev), want, "javascript %r -> result %r" % (code, want))
    ev = run(x, "echo hi", ctx_id(x, "bash")).events
    t.eq(result(ev), None, "bash has no results")


def test_streams(x):
    py = ctx_id(x, "python")
    ev = run(x, "import sys\nprint('hi')\nprint('oops', file=sys.stderr)\nprint('a', end='')",
             py).events
    t.eq(out(ev), "hi\na", "python stdout raw chunks, newlines kept")
    t.eq(out(ev, "stderr"), "oops\n", "python stderr event")
    ev = run(x, "print('one')", py).events
    t.eq(stdout_lines(ev), ["one\n"], "print() is one chunk with its newline")
    ev = run(x, "print('h\\u00e9llo \\u2713 <&>')", py).events
    t.eq(out(ev), "h\u00e9llo \u2713 <&>\n", "UTF-8 and HTML characters survive")
    ev = run(x, "import os\nos.write(1, b'\\xff\\xc3')\nos.write(1, b'\\xa9!')", py).events
    t.eq(out(ev), "\ufffd\u00e9!", "invalid UTF-8 -> U+FFFD, split sequence joined")
    ev = run(x, "print('x' * 1000000)", py).events
    t.eq(len(out(ev)), 1000001, "1 MB of output arrives whole")
    code = "import time\nfor i in range(4):\n    print(i, end=' ', flush=True)\n    time.sleep(0.3)\n"
    for lang, c in [("python", code),
                    ("javascript", "for (let i = 0; i < 4; i++) { process.stdout.write(i + ' ');"
                                   " const t = Date.now(); while (Date.now() - t < 300); }"),
                    ("bash", "for i in 0 1 2 3; do printf '%s ' $i; sleep 0.3; done")]:
        if lang == "javascript" and not NODE:
            continue
        st = x.sse_stream("/code", json={"code": c, "context": {"id": ctx_id(x, lang)}})
        arrivals = [(tm, e) for tm, e in st]
        st.close()
        outs = [tm for tm, e in arrivals if e["type"] == "stdout"]
        done = [tm for tm, e in arrivals if e["type"] == "execution_complete"]
        t.eq("".join(e.get("text", "") for _, e in arrivals if e["type"] == "stdout"), "0 1 2 3 ",
             "%s streamed text" % lang)
        t.ok(len(outs) >= 3 and done and outs[-1] - outs[0] > 0.6 and done[0] - outs[0] > 0.6,
             "%s output arrives live, not at the end" % lang,
             [(round(tm - st.t0, 3), e["type"]) for tm, e in arrivals])


def test_errors(x):
    py = ctx_id(x, "python")
    ev = run(x, "def f():\n    return 1/0\nf()", py).events
    t.eq(types(ev), ["init", "execution_count", "status", "error"], "python error event order")
    t.eq(events_of(ev, "status")[0].get("text"), "error", "status text is error")
    err = events_of(ev, "error")[0]["error"]
    t.eq((err["ename"], err["evalue"]), ("ZeroDivisionError", "division by zero"),
         "python ename/evalue")
    tb = err["traceback"]
    t.ok(isinstance(tb, list) and all(isinstance(s, str) for s in tb) and
         any("line 2, in f" in s for s in tb) and tb[-1].startswith("ZeroDivisionError"),
         "python traceback lines name the cell frames", tb)
    t.ok(not any("<string>" in s for s in tb), "driver frames hidden", tb)
    ev = run(x, "x = ", py).events
    err = events_of(ev, "error")[0]["error"]
    t.eq(err["ename"], "SyntaxError", "python syntax error")
    ev = run(x, "raise SystemExit(3)", py).events
    t.eq(events_of(ev, "error")[0]["error"]["ename"], "SystemExit", "SystemExit is an error, "
         "the context lives")
    t.eq(result(run(x, "21 * 2", py).events), "42", "context still works after errors")
    if NODE:
        js = ctx_id(x, "javascript")
        ev = run(x, "nope + 1", js).events
        err = events_of(ev, "error")[0]["error"]
        t.eq((err["ename"], err["evalue"]), ("ReferenceError", "nope is not defined"),
             "javascript ename/evalue")
        t.ok(err["traceback"] and "ReferenceError" in err["traceback"][0], "javascript stack",
             err)
        ev = run(x, "throw 5", js).events
        t.eq(events_of(ev, "error")[0]["error"]["evalue"], "5", "javascript throw non-Error")
        ev = run(x, "let q = ;", js).events
        t.eq(events_of(ev, "error")[0]["error"]["ename"], "SyntaxError", "javascript syntax error")
    sh = ctx_id(x, "bash")
    ev = run(x, "echo out; ls /nonexistent-dir", sh).events
    err = events_of(ev, "error")[0]["error"]
    t.eq((err["ename"], exit_code(ev)), ("CommandExecError", 2),
         "bash non-zero status -> CommandExecError with the code")
    t.eq(out(ev), "out\n", "bash stdout before the error")
    t.ok("nonexistent-dir" in out(ev, "stderr"), "bash stderr")


def test_interrupt(x):
    cases = [("python", "while True: pass", "KeyboardInterrupt"),
             ("javascript", "while (true) {}", "KeyboardInterrupt"),
             ("bash", "while :; do :; done", "CommandExecError"),
             ("python", "import time\ntime.sleep(60)", "KeyboardInterrupt"),
             ("javascript", "await new Promise(() => {})", "KeyboardInterrupt"),
             ("bash", "sleep 60", "CommandExecError")]
    for lang, code, ename in cases:
        if lang == "javascript" and not NODE:
            continue
        cid = ctx_id(x, lang)
        run(x, {"python": "keep = 7", "javascript": "var keep = 7", "bash": "keep=7"}[lang], cid)
        res = {}

        def bg():
            res["ev"] = run(x, code, cid, timeout=30).events

        th = threading.Thread(target=bg)
        th.start()
        time.sleep(0.5)
        r = x.delete(qs("/code", {"id": cid}))
        t.is_empty_ok(r, "%s interrupt -> 200 empty" % lang)
        th.join(15)
        ev = res.get("ev", [])
        errs = events_of(ev, "error")
        t.ok(not th.is_alive() and errs and errs[0]["error"]["ename"] == ename,
             "%s %r stops with %s" % (lang, code.split("\n")[-1], ename), ev)
        if lang == "bash":
            t.eq(errs[0]["error"]["evalue"] if errs else None, "130", "bash interrupt status 130")
        ev = run(x, {"python": "keep", "javascript": "keep", "bash": "echo $keep"}[lang], cid).events
        got = out(ev).strip() if lang == "bash" else result(ev)
        t.eq(got, "7", "%s context survives the interrupt with its state" % lang)
    cid = ctx_id(x, "python")
    t.is_empty_ok(x.delete(qs("/code", {"id": cid})), "interrupting an idle context is a no-op")
    t.eq(result(run(x, "1", cid).events), "1", "idle interrupt leaves the context usable")


def test_busy_and_disconnect(x):
    cid = ctx_id(x, "python")
    st = x.sse_stream("/code", json={"code": "import time\ntime.sleep(1.5)\n'late'",
                                     "context": {"id": cid}})
    it = iter(st)
    next(it)  # init: the run is going
    r = x.post("/code", json={"code": "1", "context": {"id": cid}})
    t.is_error(r, 500, "RUNTIME_ERROR", "second run on a busy context -> 500")
    t.ok("busy" in r.json().get("message", ""), "message says busy", r.body)
    ev = [e for _, e in it]
    st.close()
    t.eq(result(ev), "'late'", "first run finishes normally")
    st = x.sse_stream("/code", json={"code": "import time\ntime.sleep(30)", "context": {"id": cid}})
    next(iter(st))
    st.close()  # client goes away mid-run: the code is interrupted
    ok = wait_for(lambda: result(run(x, "'free'", cid).events) == "'free'", timeout=10,
                  interval=0.2)
    t.ok(ok, "context is free again after the client disconnects")


def test_default_context(x):
    ev1 = run(x, "dflt = 11", lang="python").events
    ev2 = run(x, "dflt", lang="python").events
    t.eq(result(ev2), "11", "runs without an id share the language's default context")
    t.eq(events_of(ev1, "init")[0]["text"], events_of(ev2, "init")[0]["text"],
         "same default context id")
    ids = [c["id"] for c in x.get("/code/contexts").json()]
    t.ok(events_of(ev1, "init")[0]["text"] in ids, "the default context is listed")
    ev = run(x, "echo $((6*7))", lang="bash").events
    t.eq(out(ev), "42\n", "bash default context")


def test_command_language(x):
    ev = x.sse("/code", json={"code": "echo a; echo b >&2; echo c"}).events
    t.eq(stdout_lines(ev), ["a", "c"], "no language -> command: stdout lines")
    t.eq(stderr_lines(ev), ["b"], "command stderr lines")
    t.ok(re.fullmatch(r"[0-9a-f]{32}", events_of(ev, "init")[0].get("text", "")),
         "command init id", ev)
    t.eq(exit_code(ev), 0, "command success -> execution_complete")
    ev = x.sse("/code", json={"code": "exit 3", "context": {"language": "command"}}).events
    t.eq(exit_code(ev), 3, "command exit 3 -> error evalue 3")
    t.eq(events_of(ev, "error")[0]["error"]["ename"], "CommandExecError", "CommandExecError")


def test_contexts_api(x):
    x.delete(qs("/code/contexts", {"language": "python"}))
    x.delete(qs("/code/contexts", {"language": "bash"}))
    x.delete(qs("/code/contexts", {"language": "javascript"}))
    r = x.get("/code/contexts")
    t.eq((r.status, r.json()), (200, []), "empty list is []")
    a, b = ctx_id(x, "python"), ctx_id(x, "bash")
    r = x.get("/code/contexts")
    t.eq(r.json(), [{"id": a, "language": "python"}, {"id": b, "language": "bash"}],
         "list: every context, creation order")
    t.eq(x.get(qs("/code/contexts", {"language": "bash"})).json(), [{"id": b, "language": "bash"}],
         "list filtered by language")
    t.eq(x.get(qs("/code/contexts", {"language": "go"})).json(), [], "unknown language -> []")
    t.is_error(x.get(qs("/code/contexts", {"language": "command"})), 500, "RUNTIME_ERROR")
    r = x.get("/code/contexts/" + a)
    t.eq((r.status, r.json()), (200, {"id": a, "language": "python"}), "get context")
    t.is_error(x.get("/code/contexts/" + "0" * 32), 404, "CONTEXT_NOT_FOUND")
    t.is_empty_ok(x.delete("/code/contexts/" + a), "delete context -> 200 empty")
    t.is_error(x.get("/code/contexts/" + a), 404, "CONTEXT_NOT_FOUND", "deleted context -> 404")
    t.is_error(x.delete("/code/contexts/" + a), 404, "CONTEXT_NOT_FOUND", "delete again -> 404")
    t.is_error(x.delete("/code/contexts"), 400, "MISSING_QUERY", "delete by language needs it")
    c = ctx_id(x, "bash")
    t.is_empty_ok(x.delete(qs("/code/contexts", {"language": "bash"})), "delete by language")
    t.eq(x.get("/code/contexts").json(), [], "all bash contexts gone")
    t.is_error(x.get("/code/contexts/" + c), 404, "CONTEXT_NOT_FOUND")
    # A run on a deleted context's id is an error; deleting mid-run ends the run.
    cid = ctx_id(x, "python")
    st = x.sse_stream("/code", json={"code": "import os, time\nprint(os.getpid(), flush=True)\n"
                                             "time.sleep(30)", "context": {"id": cid}})
    it = iter(st)
    pid = None
    for _, e in it:
        if e["type"] == "stdout":
            pid = int(e["text"])
            break
    x.delete("/code/contexts/" + cid)
    ev = [e for _, e in it]
    st.close()
    errs = events_of(ev, "error")
    t.ok(errs and errs[0]["error"]["ename"] == "ContextDeleted", "deleting mid-run ends the run",
         ev)
    t.ok(pid and wait_for(lambda: pid not in descendants(x.proc.pid), timeout=5),
         "deleted context's interpreter is gone")


def test_unknown_and_bad(x):
    t.is_error(x.post("/code", json={"code": "1", "context": {"id": "f" * 32, "language": "python"}}),
               500, "RUNTIME_ERROR", "run in an unknown context -> 500")
    t.is_error(x.delete(qs("/code", {"id": "f" * 32})), 500, "RUNTIME_ERROR",
               "interrupt unknown id -> 500")
    t.is_error(x.delete("/code"), 400, "MISSING_QUERY", "interrupt without id -> 400")
    t.is_error(x.post("/code", body=b"{", headers={"Content-Type": "application/json"}), 400,
               "INVALID_REQUEST_BODY", "bad JSON -> 400")
    t.is_error(x.post("/code", json={}), 400, "INVALID_REQUEST_BODY", "missing code -> 400")
    t.is_error(x.post("/code", json={"code": 5}), 400, "INVALID_REQUEST_BODY", "code not a string")
    t.is_error(x.post("/code", json={"code": ""}), 400, "INVALID_REQUEST_BODY", "empty code")
    t.is_error(x.post("/code", json={"code": "1", "context": "python"}), 400,
               "INVALID_REQUEST_BODY", "context not an object")
    t.is_error(x.post("/code", json={"code": "1", "context": {"language": "cobol"}}), 400,
               "INVALID_REQUEST_BODY", "unknown language -> 400")
    t.is_error(x.post("/code", json=[1]), 400, "INVALID_REQUEST_BODY", "body not an object")
    t.is_error(x.post("/code/context", body=b"{bad", headers={"Content-Type": "application/json"}),
               400, "INVALID_REQUEST_BODY", "create: bad JSON")
    t.is_error(create(x, "cobol"), 400, "INVALID_REQUEST_BODY", "create: unknown language")
    t.is_error(create(x, "command"), 400, "INVALID_REQUEST_BODY", "create: command has no context")
    t.is_error(x.post("/code/context", json={"language": 3}), 400, "INVALID_REQUEST_BODY",
               "create: language not a string")
    t.is_error(create(x, "python", cwd="/nonexistent/dir"), 400, "INVALID_REQUEST_BODY",
               "create: missing cwd")
    py = ctx_id(x, "python")
    t.is_error(x.post("/code", json={"code": "1", "context": {"id": py, "language": "bash"}}), 400,
               "INVALID_REQUEST_BODY", "language that contradicts the context -> 400")
    t.eq(result(run(x, "2", py).events), "2", "id without language uses the context's")
    t.ok(x.alive(), "execd still alive after bad input")


def test_interpreter_exit(x):
    py = ctx_id(x, "python")
    run(x, "gone = 1", py)
    ev = run(x, "import os\nos._exit(3)", py).events
    errs = events_of(ev, "error")
    t.ok(errs and errs[0]["error"]["ename"] == "ContextExited" and
         "status 3" in errs[0]["error"]["evalue"], "interpreter exit -> ContextExited", ev)
    ev = run(x, "'gone' in globals()", py).events
    t.eq(result(ev), "False", "next run gets a fresh interpreter in the same context")
    sh = ctx_id(x, "bash")
    ev = run(x, "echo bye; exit 4", sh).events
    t.eq((out(ev), events_of(ev, "error")[0]["error"]["ename"]), ("bye\n", "ContextExited"),
         "bash exit ends the interpreter, output first")
    t.eq(out(run(x, "echo back", sh).events), "back\n", "bash context restarts")
    for stray in ("break", "continue", "return 3", "unset __osb_fd"):
        run(x, stray, sh)
    ev = run(x, "echo $((40+2))", sh).events
    t.eq((out(ev), exit_code(ev)), ("42\n", 0),
         "a stray break/continue/return/unset in a cell does not break the bash driver")


def test_missing_interpreter():
    env = {"EXECD_PYTHON_BIN": "/nonexistent/python3", "PATH": "/nonexistent",
           "EXECD_NODE_BIN": None, "EXECD_BASH_BIN": None}
    with Execd(env=env) as x:
        r = create(x, "python")
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "python override to a missing binary -> 400")
        t.eq(r.json().get("message"),
             "python: EXECD_PYTHON_BIN=/nonexistent/python3 is not an executable file",
             "message names it", r.body)
        r = create(x, "javascript")
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "no node in PATH -> 400")
        t.ok("javascript: node or nodejs not found in PATH" in r.json().get("message", ""),
             "javascript message", r.body)
        r = x.post("/code", json={"code": "1", "context": {"language": "bash"}})
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND",
                   "default context for a missing interpreter -> 400")
        t.eq(x.get("/code/contexts").json(), [], "failed contexts are not kept")
    # An interpreter that exits at startup is reported with its stderr.
    with Execd(env={"EXECD_PYTHON_BIN": "/bin/false"}) as x:
        r = create(x, "python")
        t.is_error(r, 500, "RUNTIME_ERROR", "interpreter dying at startup -> 500")
        t.ok("exited with status 1 during startup" in r.json().get("message", ""),
             "message says it died during startup", r.body)


def test_interrupt_any_id(x):
    """DELETE /code?id= takes any id, like upstream's shared Interrupt."""
    st = x.sse_stream("/command", json={"command": "sleep 30"})
    it = iter(st)
    cid = next(it)[1]["text"]
    t.is_empty_ok(x.delete(qs("/code", {"id": cid})), "DELETE /code?id=<command id> -> 200 empty")
    rest = [e for _, e in it]
    st.close()
    t.eq([e["error"]["traceback"] for e in events_of(rest, "error")], [["signal: terminated"]],
         "the command was interrupted")
    sid = x.post("/session", json={}).json()["session_id"]
    t.is_empty_ok(x.delete(qs("/code", {"id": sid})), "DELETE /code?id=<session id> closes it")
    t.is_error(x.delete("/session/" + sid), 404, "CONTEXT_NOT_FOUND", "the session is gone")


def main():
    assert os.path.exists("/usr/bin/python3"), "tests need /usr/bin/python3"
    if not NODE:
        t.diag("node not found: javascript cases are skipped")
    with Execd(env=ENV) as x:
        for fn in (test_create, test_persistence, test_results, test_streams, test_errors,
                   test_interrupt, test_busy_and_disconnect, test_default_context,
                   test_command_language, test_contexts_api, test_unknown_and_bad,
                   test_interpreter_exit, test_interrupt_any_id):
            t.run(fn, x, timeout=120)
        t.ok(x.alive(), "execd alive at the end")
    t.run(test_missing_interpreter, timeout=60)


t.run(main, timeout=500)
t.done()
