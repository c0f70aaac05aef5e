#!/usr/bin/python3
"""The gvisor backend (docs/internals/gvisor.md): a server with
[runtime] type = "gvisor" runs a sandbox from an imported busybox image
under runsc; execd answers through the proxy, commands see gVisor's kernel,
and delete leaves no runsc container, process or directory behind. Limits
land in the sandbox's cgroups (runsc creates and removes them) and hold;
stats come from them; execd's and the entrypoint's output reach the
bounded log, also after a server restart, which re-adopts running sandboxes
and cleans those the store does not know. [gvisor] runsc and platform are
checked at start-up. Skips only when runsc is missing."""
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
import serverlib  # noqa: E402

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


def gvisor_server(extra=""):
    s = Server(extra=extra)
    # the backend choice goes into the [runtime] table serverlib writes
    with open(s.config) as f:
        text = f.read()
    text = text.replace("[runtime]\n", '[runtime]\ntype = "gvisor"\n', 1)
    with open(s.config, "w") as f:
        f.write(text)
    return s


def import_busybox(s):
    tar = os.path.join(s.tmp, "busybox.tar")
    subprocess.run([os.path.join(REPO, "scripts", "make-image-busybox.sh"), tar], check=True)
    p = subprocess.run([SERVER_BIN, "--config", s.config,
                        "image", "import", "busybox", tar], capture_output=True, text=True)
    t.eq(p.returncode, 0, "busybox image imported", p.stderr)


def gv_cgroups(s, sid):
    """The cgroup directories runsc made for sandbox sid, in every hierarchy: under the
    gvisor backend's own parent (the hash of <state>/gvisor, apart from native's)."""
    base = cg_base_name(os.path.join(s.state_dir, "gvisor"))
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if root.count("/") > 8:
            dirs[:] = []
            continue
        if os.path.basename(root) == base:
            found += [os.path.join(root, d) for d in dirs if d == sid]
            dirs[:] = []
    return found


def gv_parents(s):
    """Every directory of the gvisor backend's parent name, in any hierarchy."""
    base = cg_base_name(os.path.join(s.state_dir, "gvisor"))
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        if root.count("/") > 8:
            dirs[:] = []
            continue
        found += [os.path.join(root, d) for d in dirs if d == base]
    return found


def cg_file(s, sid, name):
    """The content of the first of sid's cgroup directories that has file name."""
    for d in gv_cgroups(s, sid):
        if os.path.exists(os.path.join(d, name)):
            with open(os.path.join(d, name)) as f:
                return f.read().strip()
    return None


def running(s, sid):
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] in ("Running", "Failed"),
             timeout=120)
    return s.get_sbx(sid).json()["status"]


def ended(s, sid):
    wait_for(lambda: s.get_sbx(sid).json()["status"]["state"] in ("Failed", "Terminated"),
             timeout=120)
    return s.get_sbx(sid).json()["status"]


def log_text(s, sid):
    return s.get("/v1/sandboxes/%s/diagnostics/logs" % sid).text


def usage(s, sid):
    """memory, cpu, pids from diagnostics/inspect (the backend's osb_rt_stats)."""
    text = s.get("/v1/sandboxes/%s/diagnostics/inspect" % sid).text
    out = {}
    for key in ("memory", "cpu", "pids"):
        m = re.search(r"^  %s: (\d+)" % key, text, re.M)
        out[key] = int(m.group(1)) if m else None
    return out


def main():
    if not shutil.which("runsc"):
        t.skip("gvisor backend", "runsc is not installed (apt-get install runsc)")
        return
    s = gvisor_server()
    import_busybox(s)
    with s:
        t.ok("runsc 0.0~" in s.log_text() and "platform ptrace" in s.log_text(),
             "start-up names runsc's version and the platform",
             [l for l in s.log_text().splitlines() if "gvisor" in l][:3])
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
        t.eq(gv_cgroups(s, sid), [], "runsc removed its cgroups")
        test_limits(s)
        test_fork_bomb(s)
        test_memory_hog(s)
        test_restart(s)
        test_end_report(s)
    t.eq(gv_parents(s), [], "a server that stops removes the empty gvisor parent cgroups")
    test_config_checks()
    test_debug_logs()


def test_debug_logs():
    """[gvisor] debug = true: runsc's, the Sentry's and the gofer's debug logs land in
    the sandbox's own directory under the state dir and go with the sandbox."""
    t.current = "debug"
    s = gvisor_server(extra="[gvisor]\ndebug = true\n")
    import_busybox(s)
    with s:
        sid = s.new(image={"uri": "busybox"}, entrypoint=["sleep", "100000"])["id"]
        t.eq(running(s, sid)["state"], "Running", "runs with runsc --debug")
        d = os.path.join(s.state_dir, "gvisor", "sandboxes", sid, "debug")
        names = sorted(os.listdir(d)) if os.path.isdir(d) else []
        for kind in ("create", "boot", "gofer"):
            t.ok(any(n.endswith("." + kind + ".txt") for n in names),
                 "a debug log of runsc's %s process in <state>/gvisor/sandboxes/<id>/debug" % kind,
                 names)
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete -> 204")
        t.ok(wait_for(lambda: not os.path.exists(d), timeout=60),
             "the debug logs go with the sandbox")


LIMITS = {"cpu": "500m", "memory": "64Mi", "pids": "100", "disk": "16Mi"}


def test_limits(s):
    """The limits are in the sandbox's cgroups (runsc made them from config.json), stats
    read them back, the disk limit holds, and the output reaches the bounded log."""
    t.current = "limits"
    r = s.create(image={"uri": "busybox"}, resourceLimits=LIMITS,
                 entrypoint=["sh", "-c", "echo entry-out; echo entry-err >&2; "
                             "echo stdin=$(readlink /proc/self/fd/0); sleep 100000"])
    t.eq(r.status, 202, "create with limits -> 202", r.body[:300])
    sid = r.json()["id"]
    t.eq(running(s, sid)["state"], "Running", "runs")
    t.ok(gv_cgroups(s, sid), "runsc made cgroups for it under the gvisor parent")
    mem = cg_file(s, sid, "memory.limit_in_bytes") or cg_file(s, sid, "memory.max")
    t.eq(mem, str((64 + 32) << 20), "memory limit = 64Mi + the Sentry's own 32Mi")
    swap = cg_file(s, sid, "memory.memsw.limit_in_bytes")
    if swap is not None:
        t.eq(swap, str((64 + 32) << 20), "v1: memory+swap = memory (no swap)")
    else:
        t.eq(cg_file(s, sid, "memory.swap.max"), "0", "v2: no swap")
    quota = cg_file(s, sid, "cpu.cfs_quota_us")
    if quota is not None:
        t.eq((quota, cg_file(s, sid, "cpu.cfs_period_us")), ("50000", "100000"),
             "v1: CPU quota 500m = 50000/100000 us")
    else:
        t.eq(cg_file(s, sid, "cpu.max"), "50000 100000", "v2: CPU quota 500m")
    t.eq(cg_file(s, sid, "pids.max"), str(100 * 16 + 256),
         "host pids.max = pids x 16 + 256: a backstop above the Sentry's RLIMIT_NPROC")
    t.eq(sh(s.execd(sid), "ulimit -u"), "100", "inside, pids is RLIMIT_NPROC")
    m = s.execd(sid).req("GET", "/metrics")
    mj = m.json() if m.status == 200 else {}
    t.eq((m.status, mj.get("cpu_count"), mj.get("mem_total_mib")), (200, 0.5, 64),
         "execd's /metrics shows the 500m and 64Mi limits (execd --cpus, --memory: no "
         "cgroupfs in the Sentry, whose meminfo holds its own headroom too)")
    u = usage(s, sid)
    t.ok(u["memory"] and u["memory"] > 0 and u["memory"] <= 64 << 20,
         "stats: memory in use, under the limit", u)
    t.ok(u["pids"] and 0 < u["pids"] <= 100 * 16 + 256, "stats: pids counted (host tasks)", u)
    x = s.execd(sid)
    t.ok(sh(x, "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done") == "done",
         "a busy loop runs")
    t.ok(wait_for(lambda: usage(s, sid)["cpu"] > u["cpu"], timeout=60),
         "stats: CPU time grows with work", (u, usage(s, sid)))
    out = sh(x, "dd if=/dev/zero of=/big bs=1M count=64 2>&1; ls -l /big")
    # at the limit less what the root's files hold there (/etc/hosts, hostname, resolv.conf)
    size = re.search(r"\broot +(\d+) ", out)
    t.ok("No space left" in out and size and (16 << 20) - (64 << 10) <= int(size.group(1)) <= 16 << 20,
         "disk: a 64 MiB write stops at the 16Mi tmpfs", out)
    t.ok(wait_for(lambda: "entry-out" in log_text(s, sid) and "entry-err" in log_text(s, sid),
                  timeout=60),
         "the entrypoint's stdout and stderr are in the log", log_text(s, sid)[-500:])
    t.ok("execd info: listening" in log_text(s, sid), "so is execd's own output")
    t.ok("stdin=/dev/null" in log_text(s, sid),
         "the entrypoint's stdin is /dev/null, not the report FIFO", log_text(s, sid)[-300:])
    log = os.path.join(s.state_dir, "gvisor", "sandboxes", sid, "log")
    fifo = os.path.join(s.state_dir, "gvisor", "sandboxes", sid, "logpipe")
    t.ok(os.path.isfile(log) and os.path.exists(fifo) and
         os.stat(fifo).st_mode & 0o170000 == 0o010000,
         "the log is a file the server writes, fed through a FIFO")
    # The bound (OSB_RT_LOG_MAX_BYTES 8 MiB, cut to 4 MiB): 12 MiB of entrypoint
    # output -- written from a command to PID 1's stdout, which is the FIFO.
    sh(x, "head -c 12582912 /dev/zero | tr '\\0' x > /proc/1/fd/1; echo tail-marker > /proc/1/fd/1")
    t.ok(wait_for(lambda: "tail-marker" in log_text(s, sid), timeout=120),
         "output written after 12 MiB still arrives")
    size = os.path.getsize(log)
    t.ok(size <= 8 << 20, "the log stays within 8 MiB", size)
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete")
    t.ok(wait_for(lambda: not gv_cgroups(s, sid), timeout=60), "its cgroups are gone",
         gv_cgroups(s, sid))
    t.current = None


def watch_pids(d, seen, stop):
    """Polls d's pids.current and pids.events until stop is set or d is gone."""
    while not stop.is_set():
        try:
            with open(os.path.join(d, "pids.current")) as f:
                seen["peak"] = max(seen.get("peak", 0), int(f.read()))
            with open(os.path.join(d, "pids.events")) as f:
                m = re.search(r"max (\d+)", f.read())
            seen["max_events"] = max(seen.get("max_events", 0), int(m.group(1)) if m else 0)
        except (OSError, ValueError):
            return
        time.sleep(0.002)


def test_fork_bomb(s):
    """pids: the Sentry's RLIMIT_NPROC stops a fork bomb inside (fork fails, the sandbox
    runs on); the host's pids.max, a backstop above it, is never reached. Processes of
    many uids (each within its own RLIMIT_NPROC) do reach it: the Sentry aborts and the
    end names the limit (docs/internals/gvisor.md)."""
    t.current = "fork bomb"
    # Memory to spare: on ptrace every process costs the Sentry host memory too
    # (about 100 sleeping processes reach 64Mi and end the sandbox as OOM_KILLED).
    r = s.create(image={"uri": "busybox"}, resourceLimits=dict(LIMITS, memory="1Gi"),
                 entrypoint=["sh", "-c", "sleep 100000"])
    sid = r.json()["id"]
    t.eq(running(s, sid)["state"], "Running", "runs")
    x = s.execd(sid)
    pmax = int(cg_file(s, sid, "pids.max"))
    pdir = [d for d in gv_cgroups(s, sid) if os.path.exists(os.path.join(d, "pids.max"))][0]
    seen, stop = {}, threading.Event()
    th = threading.Thread(target=watch_pids, args=(pdir, seen, stop))
    th.start()
    out = sh(x, "for i in $(seq 1000); do sleep 1000 >/dev/null 2>&1 & done 2>&1 | tail -1; "
             "echo spawned")
    t.ok(out.endswith("spawned") and "fork" in out, "the bomb's forks fail inside", out)
    t.eq(sh(x, "pkill -f 'sleep 1000$'; echo alive"), "alive", "the sandbox answers after the bomb")
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "and runs on")
    t.eq(seen.get("max_events", 0), 0, "the host's pids.max was never hit", (seen, pmax))
    # Commands may run as any uid, each with its own RLIMIT_NPROC: the backstop.
    many = "for i in $(seq 100); do sleep 1000 >/dev/null 2>&1 & done; echo ok"
    for uid in range(1000, 1100):
        try:
            x.sse("/command", json={"command": many, "uid": uid, "gid": uid}, timeout=120)
        except (OSError, EOFError):
            break  # the sandbox ends under the command
        if s.get_sbx(sid).json()["status"]["state"] != "Running":
            break
    st = ended(s, sid)
    stop.set()
    th.join()
    t.ok(0 < seen.get("peak", 0) <= pmax, "never more host tasks than pids.max", (seen, pmax))
    t.ok(st["state"] == "Failed" and st["reason"] == "PIDS_LIMIT" and
         "pids limit" in st["message"], "past the backstop the sandbox ends: PIDS_LIMIT", st)
    t.ok("reached its host pids limit" in log_text(s, sid), "its log says why",
         log_text(s, sid)[-300:])
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete")
    t.ok(wait_for(lambda: not gv_cgroups(s, sid) and not leaked_processes(sid), timeout=60),
         "nothing of it is left")
    t.current = None


def test_memory_hog(s):
    """memory: the host kills the sandbox at its memory limit (all of the application's
    memory is the Sentry's); the hog's last report is below the limit."""
    t.current = "memory hog"
    hog = ('awk \'BEGIN { s = "0123456789abcdef"; for (i = 0; i < 40; i++) '
           '{ s = s s; print "have", length(s); fflush() } }\'; sleep 100000')
    r = s.create(image={"uri": "busybox"}, resourceLimits=LIMITS,
                 entrypoint=["sh", "-c", hog])
    sid = r.json()["id"]
    st = ended(s, sid)
    t.ok(st["state"] == "Failed" and st["reason"] == "OOM_KILLED" and
         "memory limit" in st["message"], "the sandbox ends at the memory limit: OOM_KILLED", st)
    have = [int(n) for n in re.findall(r"^have (\d+)$", log_text(s, sid), re.M)]
    t.ok(have and max(have) < 64 << 20 and max(have) >= 1 << 20,
         "the hog got some memory but never 64 MiB", have[-3:])
    t.ok("reached its memory limit" in log_text(s, sid), "its log says why",
         log_text(s, sid)[-300:])
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete")
    t.current = None


def db(s):
    return sqlite3.connect(os.path.join(s.state_dir, "opensandbox.db"), timeout=30)


def test_restart(s):
    """kill -9 and start on the same state dir: running sandboxes are re-adopted (execd,
    the log drain, pause/resume/delete), and one the store does not know is cleaned."""
    t.current = "restart"
    r = s.create(image={"uri": "busybox"}, entrypoint=[
        "sh", "-c", "echo before; while [ ! -e /tmp/go ]; do sleep 0.05; done; "
        "echo after-restart; sleep 100000"])
    sid = r.json()["id"]
    t.eq(running(s, sid)["state"], "Running", "runs")
    r = s.create(image={"uri": "busybox"}, entrypoint=["sleep", "100000"])
    orphan = r.json()["id"]
    t.eq(running(s, orphan)["state"], "Running", "a second one runs")
    t.ok(wait_for(lambda: "before" in log_text(s, sid), timeout=60), "output before")
    s.kill(signal.SIGKILL)
    c = db(s)
    with c:
        c.execute("DELETE FROM sandboxes WHERE id = ?", (orphan,))
    c.close()
    t.ok(leaked_processes(orphan) and gv_cgroups(s, orphan), "the unknown one still runs")
    s.start()
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "re-adopted: Running")
    x = s.execd(sid)
    t.eq(x.get("/ping").status, 200, "execd answers through the proxy")
    sh(x, "touch /tmp/go")
    t.ok(wait_for(lambda: "after-restart" in log_text(s, sid), timeout=60),
         "output written after the restart reaches the log (drained again)",
         log_text(s, sid)[-300:])
    t.ok(usage(s, sid)["pids"], "stats after the restart", usage(s, sid))
    t.is_empty_ok(s.post("/v1/sandboxes/%s/pause" % sid), "pause -> 202", status=202)
    t.eq(runsc_state(s.state_dir, sid), "paused", "runsc says paused")
    t.is_empty_ok(s.post("/v1/sandboxes/%s/resume" % sid), "resume -> 202", status=202)
    t.eq(sh(x, "echo alive"), "alive", "commands run after resume")
    t.ok(wait_for(lambda: not leaked_processes(orphan), timeout=60),
         "the unknown sandbox's processes are gone", leaked_processes(orphan))
    t.eq(runsc_list(s.state_dir), [sid], "runsc knows only the adopted one")
    t.eq(gv_cgroups(s, orphan), [], "the unknown one's cgroups are gone")
    t.ok(not os.path.exists(os.path.join(s.state_dir, "gvisor", "sandboxes", orphan)),
         "and its directory")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete after the restart")
    t.ok(wait_for(lambda: not runsc_list(s.state_dir) and not leaked_processes(sid) and
                  not gv_cgroups(s, sid), timeout=60),
         "nothing of it is left")
    t.current = None


def test_end_report(s):
    """The entrypoint's end is reported like native (execd --report-to-fd 0, a FIFO as
    runsc create's stdin), also when it ends while no server runs."""
    t.current = "end report"
    cases = [(["sh", "-c", "echo bye; exit 7"], "Failed", "ENTRYPOINT_FAILED",
              "entrypoint exited with code 7"),
             (["true"], "Terminated", "ENTRYPOINT_EXITED", "entrypoint exited with code 0"),
             (["sh", "-c", "kill -TERM $$"], "Failed", "ENTRYPOINT_FAILED", "signal 15"),
             (["/no/such/program"], "Failed", "ENTRYPOINT_FAILED", "could not be executed")]
    for ep, state, reason, msg in cases:
        r = s.create(image={"uri": "busybox"}, entrypoint=ep)
        t.eq(r.status, 202, "create %s" % ep, r.body[:300])
        st = ended(s, r.json()["id"])
        t.ok(st["state"] == state and st["reason"] == reason and msg in st["message"],
             "%s -> %s %s (%s)" % (ep, state, reason, msg), st)
        s.delete("/v1/sandboxes/" + r.json()["id"])
    # The entrypoint ends while the server is down: the line waits in the FIFO.
    r = s.create(image={"uri": "busybox"}, entrypoint=[
        "sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done; exit 5"])
    sid = r.json()["id"]
    t.eq(running(s, sid)["state"], "Running", "a waiting entrypoint runs")
    d = os.path.join(s.state_dir, "gvisor", "sandboxes", sid)
    # /tmp is on the writable layer's tmpfs, which only the gofer's mount
    # namespace has (its root is the sandbox's).
    gofer = [pid for pid, cmd in leaked_processes(sid) if "runsc-gofer" in cmd]
    s.kill(signal.SIGKILL)
    open("/proc/%d/root/tmp/go" % gofer[0], "w").close()
    fd = os.open(os.path.join(d, "report"), os.O_RDONLY | os.O_NONBLOCK)
    t.ok(wait_for(lambda: select.select([fd], [], [], 0)[0], timeout=60),
         "with no server running, the report is in the FIFO")
    os.close(fd)  # without reading it
    s.start()
    st = ended(s, sid)
    t.ok(st["state"] == "Failed" and "exited with code 5" in st["message"],
         "the restarted server reads it: Failed, exited with code 5", st)
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete")
    t.ok(wait_for(lambda: not leaked_processes(sid) and not gv_cgroups(s, sid), timeout=60),
         "nothing of it is left")
    t.current = None


def start_fails(extra):
    s = gvisor_server(extra)
    try:
        p = subprocess.run([SERVER_BIN, "--config", s.config], capture_output=True, text=True,
                           env=dict(os.environ, OPENSANDBOX_INSECURE_SERVER="YES"), timeout=60)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = 0, "the server started"
    shutil.rmtree(s.tmp, ignore_errors=True)
    serverlib.release_subnet(s.subnet)
    return rc, out


def test_config_checks():
    t.current = "config"
    rc, out = start_fails('[gvisor]\nplatform = "systrap"')
    t.ok(rc != 0 and "platform `systrap`" in out and "ptrace" in out,
         "an unknown platform stops start-up, naming what this runsc knows", (rc, out[-400:]))
    rc, out = start_fails('[gvisor]\nrunsc = "/nonexistent/runsc"')
    t.ok(rc != 0 and "/nonexistent/runsc" in out and "executable" in out,
         "a missing runsc stops start-up", (rc, out[-400:]))
    rc, out = start_fails('[gvisor]\nplatfrom = "ptrace"')
    t.ok(rc != 0 and "platfrom" in out, "a misspelt key is refused", (rc, out[-400:]))
    t.current = None


main()
t.done()
