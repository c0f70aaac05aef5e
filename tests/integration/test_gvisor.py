#!/usr/bin/python3
"""The gvisor backend (docs/internals/gvisor.md): a server with
[runtime] type = "gvisor" runs a sandbox from an imported busybox image
under runsc; execd answers through the proxy, commands see gVisor's kernel,
and delete leaves no runsc container, process or directory behind.
Skips only when runsc is missing."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
t = TAP()


def sh(x, cmd):
    ev = x.sse("/command", json={"command": cmd}).events
    return "\n".join(stdout_lines(ev))


def runsc_list(state):
    p = subprocess.run(["runsc", "--root", os.path.join(state, "gvisor", "runsc"), "list", "--quiet"],
                       capture_output=True, text=True, timeout=60)
    return p.stdout.split()


def runsc_state(state, sid):
    p = subprocess.run(["runsc", "--root", os.path.join(state, "gvisor", "runsc"), "state", sid],
                       capture_output=True, text=True, timeout=60)
    try:
        return json.loads(p.stdout)["status"]
    except ValueError:
        return p.stderr


def main():
    if not shutil.which("runsc"):
        t.skip("gvisor backend", "runsc is not installed (apt-get install runsc)")
        return
    s = Server()
    # the backend choice goes into the [runtime] table serverlib writes
    with open(s.config) as f:
        text = f.read()
    text = text.replace("[runtime]\n", '[runtime]\ntype = "gvisor"\n', 1)
    with open(s.config, "w") as f:
        f.write(text)
    tar = os.path.join(s.tmp, "busybox.tar")
    subprocess.run([os.path.join(REPO, "scripts", "make-image-busybox.sh"), tar], check=True)
    p = subprocess.run([SERVER_BIN, "--config", s.config,
                        "image", "import", "busybox", tar], capture_output=True, text=True)
    t.eq(p.returncode, 0, "busybox image imported", p.stderr)
    with s:
        r = s.create(image={"uri": "busybox"}, entrypoint=["sleep", "100000"])
        t.eq(r.status, 202, "create on gvisor -> 202", r.body[:400])
        sid = r.json()["id"]
        wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] in ("Running", "Failed"),
                      timeout=120)
        st = s.get_sbx(sid).json()["status"]
        t.eq(st["state"], "Running", "sandbox runs", st)
        x = s.execd(sid)
        t.eq(x.get("/ping").status, 200, "execd answers /ping through the proxy")
        t.eq(sh(x, "uname -r"), "4.4.0", "uname -r is gVisor's")
        t.ok("gVisor" in sh(x, "dmesg"), "dmesg shows gVisor booting")
        t.eq(runsc_list(s.state_dir), [sid], "runsc lists the sandbox")
        t.ok(leaked_processes(sid), "its runsc-sandbox and runsc-gofer processes run")
        t.eq(leaked_mounts(os.path.join(s.state_dir, "gvisor")), [], "its root is mounted in no host mount namespace")
        t.is_empty_ok(s.post("/v1/sandboxes/%s/pause" % sid), "pause -> 202", status=202)
        t.eq(runsc_state(s.state_dir, sid), "paused", "runsc says paused")
        t.is_empty_ok(s.post("/v1/sandboxes/%s/resume" % sid), "resume -> 202", status=202)
        t.eq(runsc_state(s.state_dir, sid), "running", "runsc says running again")
        t.eq(sh(x, "echo alive"), "alive", "commands run after resume")
        # A command that fails inside the sandbox is reported, not lost.
        t.eq(sh(x, "ls /nonexistent 2>&1; echo rc=$?").splitlines()[-1], "rc=1",
             "a failing command's exit code comes back")
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete -> 204")
        gone = wait_for(lambda: not runsc_list(s.state_dir), timeout=60)
        t.ok(gone, "runsc lists nothing after delete")
        t.ok(wait_for(lambda: not leaked_processes(sid), timeout=60),
             "no runsc process of the sandbox is left", leaked_processes(sid))
        t.eq(os.listdir(os.path.join(s.state_dir, "gvisor", "sandboxes")), [],
             "the sandbox's directory is gone")


main()
t.done()
