#!/usr/bin/python3
"""execd go code contexts: the Go driver, replay of kept cells, errors, interrupt.

Needs the go toolchain on the host (`go` in PATH, or EXECD_GO_BIN). Builds can take
seconds on a loaded machine: every wait here is for a condition, with a generous
deadline.
"""
import os
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: F401,F403
from osbtest import descendants

t = TAP()
GO = os.environ.get("EXECD_GO_BIN") or shutil.which("go")
# A private TMPDIR: the driver cache and the work dirs of this run live there.
TMP = tempfile.mkdtemp(prefix="osb-test-go-")
ENV = {"TMPDIR": TMP, "EXECD_GO_BIN": GO, "GOCACHE": None, "GOFLAGS": "-mod=vendor"}


def create(x):
    return x.post("/code/context", json={"language": "go"}, timeout=300)


def ctx_id(x):
    r = create(x)
    assert r.status == 200, (r.status, r.body)
    return r.json()["id"]


def run(x, cid, code):
    return x.sse("/code", json={"code": code, "context": {"id": cid}}, timeout=300).events


def out(events, typ="stdout"):
    return "".join(e.get("text", "") for e in events_of(events, typ))


def error(events):
    errs = events_of(events, "error")
    return errs[0]["error"] if errs else None


def ok(events):
    return bool(events_of(events, "execution_complete")) and not events_of(events, "error")


def workdir(x, cid):
    """The context's work dir: its program is built there (os.Args[0])."""
    ev = run(x, cid, 'import "os"\nimport "path/filepath"\nfmt.Println(filepath.Dir(os.Args[0]))')
    return out(ev).strip()


def test_create(x):
    r = create(x)
    t.eq(r.status, 200, "create go context -> 200 (first one builds the driver)")
    t.eq(r.json().get("language"), "go", "language echoed")
    t.ok(any(n.startswith("osb-go-") and os.path.exists(os.path.join(TMP, n, "driver"))
             for n in os.listdir(TMP)), "the driver is built once into the cache", os.listdir(TMP))
    r = create(x)
    t.eq(r.status, 200, "a second go context (cached driver) -> 200")
    r = x.get("/code/contexts/" + r.json()["id"])
    t.eq((r.status, r.json().get("language")), (200, "go"), "GET the go context")


def test_state(x):
    cid = ctx_id(x)
    cells = ['import "fmt"', "x := 21", "fmt.Println(x * 2)"]
    evs = [run(x, cid, c) for c in cells]
    t.ok(all(ok(e) for e in evs), "a cell with only an import, a variable, then its use", evs)
    t.eq(out(evs[-1]), "42\n", "a variable defined in one cell is used in the next")
    t.eq(events_of(evs[-1], "result"), [], "go has no result event")
    t.eq(events_of(evs[-1], "execution_count")[0]["execution_count"], 3, "execution_count")
    run(x, cid, "func double(a int) int { return a * 2 }")
    run(x, cid, "type T struct{ v int }\n\nfunc (t T) Triple() int { return t.v * 3 }")
    run(x, cid, 'import "strings"')
    ev = run(x, cid, 'fmt.Println(double(x), T{x}.Triple(), strings.ToUpper("go"))')
    t.eq(out(ev), "42 63 GO\n", "func, type with method, and an import from earlier cells")
    run(x, cid, "func double(a int) int { return a * 200 }")
    t.eq(out(run(x, cid, "fmt.Println(double(1))")), "200\n", "a redefined func replaces the old")
    ev = run(x, cid, 'package main\n\nimport "fmt"\n\nfunc main() {\n\tsum := 3 + 4\n'
                     '\tfmt.Println("3 + 4 =", sum)\n}')
    t.eq(out(ev), "3 + 4 =\x207\n", "a whole program with func main runs")
    t.ok(not check_events(ev), "events well-formed", check_events(ev))


def test_only_new_output(x):
    cid = ctx_id(x)
    t.eq(out(run(x, cid, 'import "fmt"\nfmt.Println("a")')), "a\n", "first cell prints a")
    ev = run(x, cid, 'fmt.Println("b")')
    t.eq(out(ev), "b\n", "second cell shows only b (a is replayed, not shown)")
    run(x, cid, 'import "time"\nfmt.Println(time.Now().UnixNano())')
    ev = run(x, cid, 'import "os"\nfmt.Fprintln(os.Stderr, "c")')
    t.eq((out(ev), out(ev, "stderr")), ("", "c\n"),
         "output of an earlier cell that differs on replay is still hidden")
    run(x, cid, "var counter int\nfunc init() { fmt.Println(\"init\") }")
    ev = run(x, cid, "counter++\nfmt.Println(counter)")
    t.eq(out(ev), "1\n", "replayed statements run again (side effects of earlier cells)")
    t.eq(out(run(x, cid, "counter++\nfmt.Println(counter)")), "2\n",
         "each kept cell runs once per run")


def test_streams(x):
    cid = ctx_id(x)
    flag = os.path.join(TMP, "go-stream-flag")
    code = ('import ("fmt"; "os"; "time")\nfmt.Println("first")\nfmt.Fprintln(os.Stderr, "err")\n'
            'for { if _, err := os.Stat(%r); err == nil { break }; time.Sleep(10 * time.Millisecond) }\n'
            'fmt.Println("second")' % flag).replace("'", '"')
    seen = []
    with x.sse_stream("/code", json={"code": code, "context": {"id": cid}}, timeout=300) as st:
        for _, e in st:
            seen.append(e)
            if e["type"] == "stdout" and "first" in e.get("text", ""):
                # The program waits for this file: "first" came while it ran.
                open(flag, "w").close()
    t.eq(out(seen), "first\nsecond\n", "stdout streamed while the program runs")
    t.eq(out(seen, "stderr"), "err\n", "stderr event")
    t.ok(ok(seen), "run completes", seen)


def test_errors(x):
    cid = ctx_id(x)
    run(x, cid, 'import "fmt"\nkeep := 5')
    ev = run(x, cid, "z := 1\nfmt.Println(nope)")
    err = error(ev)
    t.eq(err and err["ename"], "CompileError", "undefined name -> CompileError", ev)
    t.ok(err and "undefined: nope" in err["evalue"] and err["evalue"].startswith("cell-2:2:"),
         "evalue is the first compiler message, at the cell's line", err)
    t.ok(err and all(s.startswith("cell-2:") for s in err["traceback"]),
         "traceback lines point into the cell", err)
    t.eq([e["type"] for e in ev], ["init", "execution_count", "status", "error"],
         "error event order")
    ev = run(x, cid, "z := 2\nfmt.Println(z, keep)")
    t.eq((out(ev), ok(ev)), ("2 5\n", True), "a failed cell leaves the state as it was")
    ev = run(x, cid, 'import "nosuch/pkg"')
    t.ok(error(ev) and error(ev)["evalue"].startswith("cell-4:1:1: package nosuch/pkg is not in"),
         "importing a missing package fails in the cell that imports it", ev)
    ev = run(x, cid, "x := ")
    t.eq(error(ev) and error(ev)["ename"], "CompileError", "syntax error -> CompileError", ev)
    t.ok(error(ev) and error(ev)["evalue"].startswith("cell-5:"), "syntax error at the cell", ev)
    ev = run(x, cid, 'func boom(n int) { panic(fmt.Sprintf("boom %d", n)) }\nfmt.Println("before")\n'
                     'boom(keep)')
    err = error(ev)
    t.eq((err and err["ename"], err and err["evalue"]), ("panic", "boom 5"),
         "panic -> error with the panic value", ev)
    t.eq(out(ev), "before\n", "output before the panic is shown")
    t.ok(err and "main.boom(...)" in err["traceback"] and "\tcell-6:1" in err["traceback"] and
         "\tcell-6:3" in err["traceback"], "panic traceback: frames at the cell's lines", err)
    ev = run(x, cid, "var s []int\n_ = s[3]")
    t.ok(error(ev) and error(ev)["evalue"].startswith("runtime error: index out of range"),
         "a runtime error is a panic too", ev)
    t.eq(out(run(x, cid, 'fmt.Println("after")')), "after\n",
         "the panicking cells were not kept (no replayed panic)")
    ev = run(x, cid, "func usesKeep() int { return keep }")
    t.ok(error(ev) and "undefined: keep" in error(ev)["evalue"],
         "a func cannot see a variable of main (statements are main's body)", ev)
    ev = run(x, cid, 'import "os"\nos.Exit(3)')
    t.eq((error(ev) or {}).get("ename"), "ExitError", "os.Exit(3) -> ExitError", ev)
    t.eq((error(ev) or {}).get("evalue"), "exit status 3", "ExitError evalue is the status")
    t.eq(out(run(x, cid, "fmt.Println(keep)")), "5\n", "context works after every error")


def test_interrupt(x):
    cid = ctx_id(x)
    run(x, cid, 'import "fmt"\nkeep := 7')
    for code in ['fmt.Println("looping")\nfor {}',
                 'import "time"\nfmt.Println("looping")\ntime.Sleep(time.Hour)']:
        res = {}
        st = x.sse_stream("/code", json={"code": code, "context": {"id": cid}}, timeout=300)
        it = iter(st)
        for _, e in it:
            if e["type"] == "stdout":
                break
        r = x.delete(qs("/code", {"id": cid}))
        t.is_empty_ok(r, "interrupt -> 200 empty")
        res["ev"] = [e for _, e in it]
        st.close()
        err = error(res["ev"])
        t.eq(err and err["ename"], "KeyboardInterrupt",
             "%r stops with KeyboardInterrupt" % code.split("\n")[-1], res["ev"])
        ev = run(x, cid, "fmt.Println(keep)")
        t.eq(out(ev), "7\n", "the context keeps its state, the interrupted cell is not kept")
    t.is_empty_ok(x.delete(qs("/code", {"id": cid})), "interrupting an idle go context")
    t.eq(out(run(x, cid, "fmt.Println(keep + 1)")), "8\n", "still usable")


def test_isolation_and_delete(x):
    a, b = ctx_id(x), ctx_id(x)
    run(x, a, 'import "fmt"\nv := "A"')
    run(x, b, 'import "fmt"\nv := "B"')
    t.eq((out(run(x, a, "fmt.Println(v)")), out(run(x, b, "fmt.Println(v)"))), ("A\n", "B\n"),
         "two contexts keep their own state")
    wa, wb = workdir(x, a), workdir(x, b)
    t.ok(wa and wb and wa != wb and os.path.isdir(wa) and os.path.isdir(wb),
         "separate work dirs", (wa, wb))
    pid = int(out(run(x, a, "fmt.Println(os.Getppid())")).strip())
    t.ok(pid in descendants(x.proc.pid), "the driver is execd's child", pid)
    lst = x.get(qs("/code/contexts", {"language": "go"})).json()
    t.ok({"id": a, "language": "go"} in lst and {"id": b, "language": "go"} in lst,
         "listed by language", lst)
    t.is_empty_ok(x.delete("/code/contexts/" + a), "delete a go context")
    t.is_error(x.get("/code/contexts/" + a), 404, "CONTEXT_NOT_FOUND", "deleted -> 404")
    t.ok(wait_for(lambda: pid not in descendants(x.proc.pid), timeout=30),
         "its driver is killed")
    t.ok(wait_for(lambda: not os.path.exists(wa), timeout=30), "its work dir is removed", wa)
    t.eq(out(run(x, b, "fmt.Println(v)")), "B\n", "the other context is untouched")


def test_default_context(x):
    ev = x.sse("/code", json={"code": 'import "fmt"\nn := 6', "context": {"language": "go"}},
               timeout=300).events
    ev2 = x.sse("/code", json={"code": "fmt.Println(n * 7)", "context": {"language": "go"}},
                timeout=300).events
    t.eq(out(ev2), "42\n", "runs with language go and no id share the default go context")
    t.eq(events_of(ev, "init")[0]["text"], events_of(ev2, "init")[0]["text"], "same id")


def test_missing_go():
    with Execd(env={"EXECD_GO_BIN": None, "PATH": "/nonexistent", "TMPDIR": TMP}) as x:
        r = create(x)
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "no go in PATH -> 400")
        t.ok("go: go not found in PATH" in r.json().get("message", ""),
             "the message names go", r.body)
        t.eq(x.get("/code/contexts").json(), [], "no context kept")
    with Execd(env={"EXECD_GO_BIN": "/nonexistent/go", "TMPDIR": TMP}) as x:
        r = create(x)
        t.is_error(r, 400, "INTERPRETER_NOT_FOUND", "EXECD_GO_BIN to a missing file -> 400")
        t.ok("EXECD_GO_BIN=/nonexistent/go" in r.json().get("message", ""), "message names it",
             r.body)


def main():
    if not GO:
        t.skip("go contexts", "go toolchain not installed")
    else:
        with Execd(env=ENV) as x:
            for fn in (test_create, test_state, test_only_new_output, test_streams, test_errors,
                       test_interrupt, test_isolation_and_delete, test_default_context):
                t.run(fn, x, timeout=600)
            t.ok(x.alive(), "execd alive at the end")
    t.run(test_missing_go, timeout=60)


try:
    t.run(main, timeout=1800)
finally:
    shutil.rmtree(TMP, ignore_errors=True)
t.done()
