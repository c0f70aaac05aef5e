#!/usr/bin/python3
"""execd code contexts for java (jshell) and typescript (transpiled, run like
javascript), and the 400 for a missing interpreter in every language.

Needs jshell (a JDK), node and the typescript node module (Debian:
default-jdk-headless, node-typescript; scripts/install-deps.sh installs them).
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: F401,F403

t = TAP()
NODE = shutil.which("node") or shutil.which("nodejs")
ENV = {"EXECD_PYTHON_BIN": "/usr/bin/python3"}
if NODE:
    ENV["EXECD_NODE_BIN"] = NODE
# A JVM starts in seconds, many more on a loaded machine: generous deadlines.
SLOW = 180


def create(x, lang):
    return x.post("/code/context", json={"language": lang}, timeout=SLOW)


def ctx_id(x, lang):
    r = create(x, lang)
    assert r.status == 200, (r.status, r.body)
    return r.json()["id"]


def run(x, code, cid):
    return x.sse("/code", json={"code": code, "context": {"id": cid}}, timeout=SLOW).events


def out(events, typ="stdout"):
    return "".join(e.get("text", "") for e in events_of(events, typ))


def result(events):
    rs = events_of(events, "result")
    return rs[-1]["results"].get("text") if rs else None


def error(events):
    es = events_of(events, "error")
    return es[0]["error"] if es else None


def completes(events):
    return bool(events_of(events, "execution_complete")) and not events_of(events, "error")


LANGS = {
    "java": {
        "state": ["import java.util.*;",
                  "int base = 20;",
                  "int twice(int a) { return a * 2; }",
                  "interface Shape { int sides(); }\nclass Square implements Shape { "
                  "public int sides() { return 4; } }",
                  "List<Integer> l = new ArrayList<>(List.of(base)); l.add(twice(1)); "
                  "new Square().sides() + l.get(0) + l.get(1) + twice(7) + 2"],
        "want": "42",
        "streams": 'System.out.println("out line"); System.err.println("err line"); '
                   'System.out.print("partial");',
        "gate": 'System.out.print("a"); while (!new java.io.File("%s").exists()) '
                'Thread.sleep(10); System.out.print("b");',
        "results": [('"s"', '"s"'), ("int v = 3;", None), ("v * 2", "6"),
                    ('System.out.println("x")', None), ("new int[]{1, 2}.length", "2"),
                    ('Map.of("k", 1)', "{k=1}"), ("String n = null; n", "null")],
        "compile_error": ("int y = \"text\";", "CompilationError", "incompatible types"),
        "runtime_error": ("int div(int a) { return a / 0; }\ndiv(1)", "ArithmeticException",
                          "/ by zero"),
        "busy": 'System.out.println("go"); while (true) { }',
        "keep": ("int keep = 7;", "keep"),
        "isolate": ("int only = 1;", "only"),
    },
    "typescript": {
        "state": ["import * as path from 'path';",
                  "let base: number = 20;",
                  "function twice(a: number): number { return a * 2; }",
                  "interface Shape { sides(): number }\nclass Square implements Shape { "
                  "sides(): number { return 4; } }\nenum Color { Red, Green }",
                  "const s: Shape = new Square(); s.sides() + base + Color.Green + "
                  "path.basename('/a/b').length + twice(7) + 2"],
        "want": "42",
        "streams": "console.log('out line'); console.error('err line'); "
                   "process.stdout.write('partial');",
        "gate": "const fs = require('fs'); process.stdout.write('a'); "
                "await new Promise<void>((res) => { const h = setInterval(() => { "
                "if (fs.existsSync('%s')) { clearInterval(h); res(); } }, 10); }); "
                "process.stdout.write('b');",
        "results": [("'s'", "'s'"), ("var v: number = 3", None), ("v * 2", "6"),
                    ("({a: [1, 2]} as {a: number[]})", "{ a: [ 1, 2 ] }"),
                    ("undefined", None), ("type T = string; const tv: T = 'q'; tv", "'q'"),
                    ("await Promise.resolve<number>(5)", "5")],
        "compile_error": ("let q: = ;", "SyntaxError", "TS1110"),
        "runtime_error": ("function boom(): never { throw new TypeError('bad ' + 1); }\nboom()",
                          "TypeError", "bad 1"),
        "busy": "console.log('go'); while (true) { }",
        "keep": ("var keep: number = 7", "keep"),
        "isolate": ("var only: number = 1", "only"),
    },
}


def test_state_and_results(x, lang, c):
    cid = ctx_id(x, lang)
    evs = [run(x, code, cid) for code in c["state"]]
    t.ok(all(completes(e) for e in evs), "%s: state cells complete" % lang, evs)
    t.eq(result(evs[-1]), c["want"],
         "%s: variable, function, class/interface and import persist across runs" % lang)
    t.eq(events_of(evs[-1], "execution_count")[0].get("execution_count"), len(c["state"]),
         "%s: execution_count counts runs" % lang)
    t.ok(not check_events(evs[-1]), "%s: events well-formed" % lang, check_events(evs[-1]))
    for code, want in c["results"]:
        ev = run(x, code, cid)
        t.eq((completes(ev), result(ev)), (True, want), "%s: %r -> result %r" % (lang, code, want))


def test_streams(x, lang, c):
    cid = ctx_id(x, lang)
    ev = run(x, c["streams"], cid)
    t.eq(out(ev), "out line\npartial", "%s: stdout, newlines kept" % lang)
    t.eq(out(ev, "stderr"), "err line\n", "%s: stderr" % lang)
    t.ok(completes(ev), "%s: output cell completes" % lang, ev)
    # Live streaming without timing: the cell waits for a file the test only
    # creates once it has seen the cell's first output.
    gate = os.path.join(tempfile.mkdtemp(prefix="osb-gate-"), "go")
    st = x.sse_stream("/code", json={"code": c["gate"] % gate, "context": {"id": cid}},
                      timeout=SLOW)
    seen = []
    for _, e in st:
        seen.append(e)
        if e["type"] == "stdout" and e.get("text") == "a" and not os.path.exists(gate):
            open(gate, "w").close()
    st.close()
    t.eq(out(seen), "ab", "%s: output streams while the cell still runs" % lang, seen)
    t.ok(completes(seen), "%s: gated cell completes" % lang, seen)


def test_errors(x, lang, c):
    cid = ctx_id(x, lang)
    for kind in ("compile_error", "runtime_error"):
        code, ename, evalue = c[kind]
        ev = run(x, code, cid)
        err = error(ev)
        t.eq([e["type"] for e in ev if e["type"] != "ping"][-2:], ["status", "error"],
             "%s %s: status then error, no execution_complete" % (lang, kind))
        t.ok(err and err["ename"] == ename and evalue in (err["evalue"] + "\n".join(
            err["traceback"])), "%s %s: ename %s, value names %r" % (lang, kind, ename, evalue),
             err)
        t.ok(err and isinstance(err["traceback"], list) and len(err["traceback"]) >= 2 and
             all(isinstance(s, str) for s in err["traceback"]),
             "%s %s: traceback lines" % (lang, kind), err)
    code, ename, _ = c["runtime_error"]
    fn = "div" if lang == "java" else "boom"
    t.ok(any(fn in s for s in error(run(x, fn + "(2)", cid))["traceback"]),
         "%s: the traceback names the user's function" % lang)
    t.eq(result(run(x, "40 + 2", cid)), "42", "%s: context works after errors" % lang)


def test_interrupt(x, lang, c):
    cid = ctx_id(x, lang)
    set_keep, get_keep = c["keep"]
    t.ok(completes(run(x, set_keep, cid)), "%s: keep set" % lang)
    st = x.sse_stream("/code", json={"code": c["busy"], "context": {"id": cid}}, timeout=SLOW)
    seen = []
    for _, e in st:
        seen.append(e)
        if e["type"] == "stdout" and "go" in e.get("text", ""):
            r = x.delete(qs("/code", {"id": cid}))
            t.is_empty_ok(r, "%s: interrupt -> 200 empty" % lang)
    st.close()
    err = error(seen)
    t.eq(err and err["ename"], "KeyboardInterrupt", "%s: busy loop stops with KeyboardInterrupt"
         % lang, seen)
    t.eq(result(run(x, get_keep, cid)), "7", "%s: context survives the interrupt with its state"
         % lang)
    t.is_empty_ok(x.delete(qs("/code", {"id": cid})), "%s: interrupting an idle context" % lang)
    t.eq(result(run(x, "1 + 1", cid)), "2", "%s: idle interrupt changes nothing" % lang)


def test_contexts(x, lang, c):
    a, b = ctx_id(x, lang), ctx_id(x, lang)
    t.ok(a != b, "%s: two contexts" % lang)
    code, name = c["isolate"]
    t.ok(completes(run(x, code, a)), "%s: defined in the first" % lang)
    t.eq(result(run(x, name, a)), "1", "%s: visible in the first" % lang)
    t.ok(error(run(x, name, b)) is not None, "%s: not visible in the second" % lang)
    r = x.get("/code/contexts/" + a)
    t.eq((r.status, r.json()), (200, {"id": a, "language": lang}), "%s: GET context" % lang)
    ids = [j["id"] for j in x.get(qs("/code/contexts", {"language": lang})).json()]
    t.ok(a in ids and b in ids, "%s: both listed by language" % lang, ids)
    t.is_empty_ok(x.delete("/code/contexts/" + a), "%s: DELETE context" % lang)
    t.is_error(x.get("/code/contexts/" + a), 404, "CONTEXT_NOT_FOUND", "%s: gone" % lang)
    t.eq(result(run(x, "1 + 2", b)), "3", "%s: the other context still works" % lang)
    t.is_empty_ok(x.delete(qs("/code/contexts", {"language": lang})),
                  "%s: DELETE by language" % lang)
    t.eq(x.get(qs("/code/contexts", {"language": lang})).json(), [], "%s: none left" % lang)
    ev = x.sse("/code", json={"code": "6 * 7", "context": {"language": lang}}, timeout=SLOW).events
    t.eq(result(ev), "42", "%s: a run with only the language uses a default context" % lang)


def missing(env, lang, want, name):
    with Execd(env=env) as x:
        r = create(x, lang)
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "%s -> 400" % name)
        msg = r.json().get("message", "") if r.body else ""
        t.ok(msg.startswith(lang + ": ") and want in msg, "%s: message names %r" % (name, want),
             r.body)
        t.eq(x.get("/code/contexts").json(), [], "%s: no context kept" % name)


def test_missing():
    nopath = {"PATH": "/nonexistent", "EXECD_PYTHON_BIN": None, "EXECD_NODE_BIN": None,
              "EXECD_BASH_BIN": None, "EXECD_JAVA_BIN": None}
    missing(nopath, "java", "jshell not found in PATH (/nonexistent)", "java without jshell")
    missing(dict(nopath, EXECD_JAVA_BIN="/nonexistent/java"), "java",
            "EXECD_JAVA_BIN=/nonexistent/java is not an executable file", "EXECD_JAVA_BIN missing")
    missing(nopath, "typescript", "node or nodejs not found in PATH", "typescript without node")
    if NODE:
        missing(dict(ENV, EXECD_TYPESCRIPT_MODULE="/nonexistent/typescript.js"), "typescript",
                "EXECD_TYPESCRIPT_MODULE=/nonexistent/typescript.js", "typescript module missing")
    missing(nopath, "python", "python3 or python not found in PATH", "python missing")
    missing(nopath, "javascript", "node or nodejs not found in PATH", "node missing")
    missing(nopath, "bash", "bash not found in PATH", "bash missing")
    with Execd(env=nopath) as x:
        r = x.post("/code", json={"code": "1", "context": {"language": "java"}}, timeout=SLOW)
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "a default-context run without jshell -> 400")


def have(lang):
    if lang == "java":
        return shutil.which("jshell") is not None
    return NODE is not None


def main():
    with Execd(env=ENV) as x:
        for lang, c in LANGS.items():
            if not have(lang):
                t.skip("%s contexts" % lang, "toolchain not installed")
                continue
            for fn in (test_state_and_results, test_streams, test_errors, test_interrupt,
                       test_contexts):
                t.run(fn, x, lang, c, timeout=600)
        t.ok(x.alive(), "execd alive at the end")
    t.run(test_missing, timeout=120)


t.run(main, timeout=1800)
t.done()
