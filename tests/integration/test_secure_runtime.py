#!/usr/bin/python3
"""Choosing the runtime (docs/configuration.md "[secure_runtime]",
docs/server.md "Create request"): [secure_runtime] type sets the server's
default backend, allowed lists what a create may pick with
extensions.runtime, GET and list show each sandbox's runtime, a refused
choice is a 400 that leaves nothing, a restart re-adopts each sandbox
through its own backend, and kata / firecracker / a missing runsc stop
the server at start-up with a clear message. Real server, real runsc,
real sandboxes. Skips only when runsc is missing."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOST_KERNEL = os.uname().release
BOTH = '[secure_runtime]\nallowed = ["native", "gvisor"]\n'
t = TAP()


def sh(s, sid, cmd):
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=60).events
    return "\n".join(stdout_lines(ev)).strip()


def runsc_list(state):
    p = subprocess.run(["runsc", "--root", os.path.join(state, "gvisor", "runsc"), "list",
                        "--quiet"], capture_output=True, text=True, timeout=60)
    return p.stdout.split()


def runsc_state(state, sid):
    p = subprocess.run(["runsc", "--root", os.path.join(state, "gvisor", "runsc"), "state", sid],
                       capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)["status"]
    except ValueError:
        return p.stderr


def dirs(s):
    """The per-sandbox state directories of both backends."""
    out = []
    for sub in ("sandboxes", os.path.join("gvisor", "sandboxes")):
        d = os.path.join(s.state_dir, sub)
        out += sorted(os.listdir(d)) if os.path.isdir(d) else []
    return out


def import_busybox(s, tar):
    p = subprocess.run([SERVER_BIN, "--config", s.config, "image", "import", "busybox", tar],
                       capture_output=True, text=True)
    t.eq(p.returncode, 0, "busybox image imported", p.stderr)


def running(s, sid, what):
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] in ("Running", "Failed"),
             timeout=120)
    st = s.get_sbx(sid).json()["status"]
    return t.eq(st["state"], "Running", what + ": Running", st)


def create(s, runtime=None, **fields):
    body = dict(image={"uri": "busybox"}, entrypoint=["sleep", "100000"])
    if runtime is not None:
        body["extensions"] = {"runtime": runtime}
    body.update(fields)
    return s.create(**body)


def check_kernel(s, sid, runtime, what):
    if runtime == "gvisor":
        t.eq(sh(s, sid, "uname -r"), "4.4.0", what + ": uname -r is gVisor's 4.4.0")
        t.ok("gVisor" in sh(s, sid, "dmesg"), what + ": dmesg shows gVisor")
    else:
        t.eq(sh(s, sid, "uname -r"), HOST_KERNEL, what + ": uname -r is the host's kernel")


def refused(s, runtime, want_in_msg, what):
    before = (sorted(i["id"] for i in s.list_all()), dirs(s), runsc_list(s.state_dir))
    r = create(s, runtime)
    t.is_error(r, 400, "SANDBOX::RUNTIME_NOT_ALLOWED", what + " -> 400 RUNTIME_NOT_ALLOWED")
    msg = r.json().get("message", "") if r.status == 400 else ""
    t.ok(all(w in msg for w in want_in_msg), what + ": the message names what is allowed", msg)
    after = (sorted(i["id"] for i in s.list_all()), dirs(s), runsc_list(s.state_dir))
    t.eq(after, before, what + ": nothing created (no record, directory or runsc container)")


def both_backends(tar):
    s = Server(extra=BOTH)
    import_busybox(s, tar)
    with s:
        t.ok("extensions.runtime" in s.log_text() and "gvisor" in s.log_text(),
             "start-up log names the runtime a create may choose")
        r = create(s)
        t.eq(r.status, 202, "create without extensions.runtime -> 202", r.body[:300])
        nat = r.json()["id"]
        t.eq(r.json().get("runtime"), "native", "create response: runtime native (the default)")
        r = create(s, "gvisor")
        t.eq(r.status, 202, "create with extensions.runtime gvisor -> 202", r.body[:300])
        gv = r.json()["id"]
        t.eq(r.json().get("runtime"), "gvisor", "create response: runtime gvisor")
        r = create(s, "native")
        t.eq(r.status, 202, "extensions.runtime naming the default -> 202", r.body[:300])
        nat2 = r.json()["id"]
        ok = running(s, nat, "native") & running(s, gv, "gvisor") & running(s, nat2, "native 2")
        if not ok:
            return
        check_kernel(s, nat, "native", "native sandbox")
        check_kernel(s, gv, "gvisor", "gvisor sandbox")
        check_kernel(s, nat2, "native", "explicit native sandbox")
        g = s.get_sbx(gv).json()
        t.eq((g.get("runtime"), g["metadata"]), ("gvisor", {}),
             "GET: runtime gvisor, top level, metadata untouched")
        t.eq(s.get_sbx(nat).json().get("runtime"), "native", "GET: runtime native")
        t.ok("\n  runtime: gvisor\n" in s.get("/v1/sandboxes/%s/diagnostics/inspect" % gv).text,
             "diagnostics/inspect names the runtime")
        items = {i["id"]: i.get("runtime") for i in s.list_all()}
        t.eq(items, {nat: "native", gv: "gvisor", nat2: "native"}, "list items show each runtime")
        t.eq(runsc_list(s.state_dir), [gv], "only the gvisor sandbox is a runsc container")

        refused(s, "kata", ["kata", "native, gvisor"], "extensions.runtime kata")
        refused(s, "runc", ["runc", "native, gvisor"], "extensions.runtime runc (unknown)")
        refused(s, "", ["extensions.runtime"], "extensions.runtime empty")

        # kill -9 and restart: each sandbox comes back on its own backend
        s.restart()
        for sid, rt in ((nat, "native"), (gv, "gvisor")):
            g = s.get_sbx(sid).json()
            t.eq((g["status"]["state"], g.get("runtime")), ("Running", rt),
                 "after kill -9 + restart: %s sandbox Running on %s" % (rt, rt))
            check_kernel(s, sid, rt, "after restart, %s" % rt)

        # pause and resume go through each sandbox's own backend
        for sid, rt in ((nat, "native"), (gv, "gvisor")):
            t.is_empty_ok(s.post("/v1/sandboxes/%s/pause" % sid), "%s: pause -> 202" % rt,
                          status=202)
            t.eq(s.get_sbx(sid).json()["status"]["state"], "Paused", "%s: Paused" % rt)
            if rt == "gvisor":
                t.eq(runsc_state(s.state_dir, sid), "paused", "gvisor: runsc says paused")
            t.is_empty_ok(s.post("/v1/sandboxes/%s/resume" % sid), "%s: resume -> 202" % rt,
                          status=202)
            t.eq(sh(s, sid, "echo alive"), "alive", "%s: commands run after resume" % rt)
        restore_onto(s, nat)
        for sid in (nat, gv, nat2):
            t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete %s" % sid[:8])
        t.ok(wait_for(lambda: not runsc_list(s.state_dir), timeout=60),
             "no runsc container left after the deletes")
        t.ok(wait_for(lambda: not dirs(s), timeout=60),
             "no sandbox directory of either backend left", dirs(s))


def restore_onto(s, nat):
    """A snapshot of the native sandbox restored with extensions.runtime."""
    r = s.post("/v1/sandboxes/%s/snapshots" % nat, json={})
    if not t.eq(r.status, 202, "snapshot of the native sandbox -> 202", r.body[:300]):
        return
    snap = r.json()["id"]
    wait_for(lambda: s.get("/v1/snapshots/" + snap).json()["status"]["state"] != "Creating",
             timeout=120)
    if not t.eq(s.get("/v1/snapshots/" + snap).json()["status"]["state"], "Ready",
                "snapshot Ready"):
        return
    for rt in ("native", "gvisor"):
        r = s.post("/v1/sandboxes", json={"snapshotId": snap, "timeout": 600,
                                          "entrypoint": ["sleep", "100000"],
                                          "extensions": {"runtime": rt}}, timeout=120)
        if not t.eq(r.status, 202, "restore with extensions.runtime %s -> 202" % rt,
                    r.body[:300]):
            continue
        sid = r.json()["id"]
        t.eq(r.json().get("runtime"), rt, "restored sandbox runs on %s" % rt)
        if running(s, sid, "restored on " + rt):
            check_kernel(s, sid, rt, "restored on " + rt)
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the restored %s sandbox" % rt)
    before = dirs(s)
    r = s.post("/v1/sandboxes", json={"snapshotId": snap, "timeout": 600,
                                      "extensions": {"runtime": "kata"}})
    t.is_error(r, 400, "SANDBOX::RUNTIME_NOT_ALLOWED", "restore with a refused runtime -> 400")
    t.eq(dirs(s), before, "a refused restore creates nothing")
    t.eq(s.delete("/v1/snapshots/" + snap).status, 204, "snapshot deleted")


def gvisor_default(tar):
    s = Server(extra='[secure_runtime]\ntype = "gvisor"\ndocker_runtime = "runsc"\n'
                     'k8s_runtime_class = "gvisor"\n')
    import_busybox(s, tar)
    with s:
        log = s.log_text()
        t.ok('docker_runtime = "runsc" is ignored' in log, "docker_runtime: logged as ignored")
        t.ok('k8s_runtime_class = "gvisor" is ignored' in log,
             "k8s_runtime_class: logged as ignored")
        r = create(s)
        t.eq(r.status, 202, "type gvisor: create without extensions -> 202", r.body[:300])
        sid = r.json()["id"]
        t.eq(s.get_sbx(sid).json().get("runtime"), "gvisor", "type gvisor: the default is gvisor")
        if running(s, sid, "default gvisor"):
            check_kernel(s, sid, "gvisor", "default gvisor")
        refused(s, "native", ["native", "allows: gvisor"], "type gvisor: native not allowed")
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete the gvisor sandbox")
        t.ok(wait_for(lambda: not runsc_list(s.state_dir) and not dirs(s), timeout=60),
             "nothing left of it", dirs(s))


def start_fails(extra, want, what, env=None, line_of=None):
    """A server that must refuse to start with a message holding every
    string of want ("{line}": the line of line_of in the config file)."""
    s = Server(extra=extra, env=env)
    if line_of:
        with open(s.config) as f:
            line = f.read().splitlines().index(line_of) + 1
        want = [w.replace("{line}", str(line)) for w in want]
    try:
        s.start()
        t.ok(False, what + ": the server refused to start")
    except RuntimeError as e:
        msg = str(e)
        t.ok(s.proc.returncode not in (0, None), what + ": the server exits non-zero", msg[-500:])
        t.ok(all(w in msg for w in want), what + ": the message says why", msg[-800:])
    finally:
        s.stop()


def startup_errors():
    for name in ("kata", "firecracker"):
        start_fails('[secure_runtime]\ntype = "%s"\n' % name,
                    [":{line}: [secure_runtime] type: secure runtime '%s' does not exist in this "
                     "server yet; the runtimes are: native, gvisor" % name],
                    "type %s" % name, line_of='type = "%s"' % name)
    start_fails('[secure_runtime]\nallowed = ["native", "podman"]\n',
                ["[secure_runtime] allowed: element 1: unknown runtime 'podman' "
                 "(there is: native, gvisor)"], "an unknown name in allowed")
    empty = tempfile.mkdtemp(prefix="osb-nopath-")
    try:
        start_fails(BOTH, ["runtime `gvisor` (in [secure_runtime] allowed)", "runsc"],
                    "allowed gvisor without runsc on PATH", env={"PATH": empty})
    finally:
        os.rmdir(empty)


def main():
    if not shutil.which("runsc"):
        t.skip("secure runtimes", "runsc is not installed (apt-get install runsc)")
        return
    work = tempfile.mkdtemp(prefix="osb-secrt-")
    tar = os.path.join(work, "busybox.tar")
    subprocess.run([os.path.join(REPO, "scripts", "make-image-busybox.sh"), tar], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        startup_errors()
        both_backends(tar)
        gvisor_default(tar)
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
t.done()
