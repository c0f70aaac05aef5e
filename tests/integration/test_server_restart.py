"""Lifecycle server state and restarts (issue #3 "State and restarts"): SIGKILL the server
at any moment and start it again: every running sandbox is still listed, reachable
through the proxy (same token) and expires on time; paused ones stay paused; half-created
ones are cleaned up or marked Failed; nothing leaks (processes, cgroups, state dirs)."""
import os
import re
import signal
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()


def states(s):
    return {i["id"]: i["status"]["state"] for i in s.list_all()}


# The TTL sandbox outlives the steps before the restart even on a loaded
# machine; the server is down DOWN s so the two expiry rules differ by that.
TTL, DOWN = 30, 10


def test_restart_keeps_everything(s):
    run = s.new(timeout=None, metadata={"kind": "run"})
    ttl = s.new(timeout=TTL, metadata={"kind": "ttl"})
    paused = s.new(timeout=600, metadata={"kind": "paused"})
    dead = s.new(timeout=None, metadata={"kind": "dead"})
    x = s.execd(run["id"])
    token = s.endpoint(run["id"])["headers"]["X-EXECD-ACCESS-TOKEN"]
    ev = x.sse("/command", json={"command": "echo kept > /tmp/marker; sleep 1000 &"}).events
    t.ok(exit_code(ev) == 0, "state written inside the sandbox before the restart", ev)
    s.post("/v1/sandboxes/%s/pause" % paused["id"])
    os.kill(s.pid_of(dead["id"]), signal.SIGKILL)
    t.ok(wait_for(lambda: states(s)[dead["id"]] == "Failed", timeout=5), "dead sandbox Failed")
    before = s.list_all()
    server_pid = s.proc.pid
    s.kill(signal.SIGKILL)
    time.sleep(DOWN)  # the server stays down a while: a TTL timer restarted at the
    restarted = time.time()  # restart would fire DOWN s later than the table says
    s.start()
    t.ok(s.proc.pid != server_pid, "server restarted after SIGKILL")
    after = s.list_all()
    t.eq(after, before, "every record survives a SIGKILL unchanged")
    t.eq(states(s), {run["id"]: "Running", ttl["id"]: "Running", paused["id"]: "Paused",
                     dead["id"]: "Failed"}, "states after restart")
    t.eq(s.endpoint(run["id"])["headers"]["X-EXECD-ACCESS-TOKEN"], token, "same execd token")
    x = s.execd(run["id"])
    t.eq(x.get("/ping").status, 200, "running sandbox reachable through the proxy")
    ev = x.sse("/command", json={"command": "cat /tmp/marker"}).events
    t.eq(stdout_lines(ev), ["kept"], "its files are intact")
    t.is_error(s.execd(paused["id"]).get("/ping"), 409, "SANDBOX::NOT_RUNNING",
               "paused sandbox still paused")
    t.eq(s.post("/v1/sandboxes/%s/resume" % paused["id"]).status, 202, "resume after restart")
    t.eq(s.execd(paused["id"]).get("/ping").status, 200, "resumed sandbox answers")
    # TTL from the table: ttl expires TTL s after its creation, not TTL s
    # after the restart.
    gone = wait_for(lambda: s.get_sbx(ttl["id"]).status == 404, timeout=TTL + 60, interval=0.05)
    t.ok(gone, "TTL sandbox expires after the restart")
    exp = time.mktime(time.strptime(ttl["expiresAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    t.ok(time.time() >= exp, "not before its expiresAt")
    t.ok(time.time() < restarted + TTL, "at the expiresAt of its record, not TTL s after the "
         "restart (%.1f s after expiresAt)" % (time.time() - exp))
    # The re-adopted sandbox is watched: its PID 1 dying is noticed.
    os.kill(s.pid_of(run["id"]), signal.SIGKILL)
    t.ok(wait_for(lambda: states(s)[run["id"]] == "Failed", timeout=5),
         "re-adopted sandbox's PID 1 exit -> Failed")
    for sid in (run["id"], paused["id"], dead["id"]):
        t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete after restart")
    t.eq(s.list_all(), [], "nothing left")
    t.eq(sandbox_processes(s.state_dir), {}, "no sandbox processes left")


def test_expired_while_down(s):
    sb = s.new(timeout=2)
    keep = s.new(timeout=600)
    s.kill(signal.SIGKILL)
    time.sleep(2.5)
    s.start()
    t.ok(wait_for(lambda: s.get_sbx(sb["id"]).status == 404, timeout=2),
         "a sandbox that expired while the server was down is deleted at start")
    t.eq(s.get_sbx(keep["id"]).status, 200, "the others stay")
    s.delete_all()
    t.eq(sandbox_processes(s.state_dir), {}, "expired sandbox's processes are gone")


def test_kill_during_creates(s):
    """SIGKILL while creates are in flight; after restart nothing is Pending and nothing
    leaks: records are Running (answered) or Failed (half-created), orphans cleaned."""
    for delay in (0.0, 0.004, 0.012, 0.03):
        results = []

        def create():
            try:
                results.append(s.create(timeout=600).status)
            except OSError as e:
                results.append(repr(e))

        threads = [threading.Thread(target=create) for _ in range(8)]
        for th in threads:
            th.start()
        time.sleep(delay)
        s.kill(signal.SIGKILL)
        for th in threads:
            th.join(30)
        s.start()
        st = states(s)
        t.ok(all(v in ("Running", "Failed") for v in st.values()),
             "kill after %.0f ms: records Running or Failed, none Pending" % (delay * 1000), st)
        for item in s.list_all():
            if item["status"]["state"] == "Failed":
                t.ok(item["status"].get("reason") == "PROVISIONING_INTERRUPTED",
                     "half-created -> PROVISIONING_INTERRUPTED", item["status"])
                break
        for sid, state in st.items():
            if state == "Running" and s.execd(sid).get("/ping").status != 200:
                t.ok(False, "Running sandbox %s answers after the restart" % sid)
        procs = sandbox_processes(s.state_dir)
        stray = [p for p, cg in procs.items() if not any(i in cg for i in st)]
        t.eq(stray, [], "kill after %.0f ms: no processes of unknown sandboxes" % (delay * 1000))
        sdir = os.path.join(s.state_dir, "sandboxes")
        extra = set(os.listdir(sdir)) - set(st) if os.path.isdir(sdir) else set()
        t.eq(extra, set(), "no state dirs of unknown sandboxes")
        s.delete_all()
        t.eq(s.list_all(), [], "everything deletable")
    t.eq(sandbox_processes(s.state_dir), {}, "no sandbox processes left")
    t.eq(sandbox_cgroups(s.state_dir), [], "no sandbox cgroups left")


def test_kill_during_delete(s):
    ids = [s.new(timeout=600)["id"] for _ in range(6)]

    def delete(sid):
        try:
            s.delete("/v1/sandboxes/" + sid)
        except OSError:
            pass

    threads = [threading.Thread(target=delete, args=(i,)) for i in ids]
    for th in threads:
        th.start()
    time.sleep(0.003)
    s.kill(signal.SIGKILL)
    for th in threads:
        th.join(30)
    s.start()
    st = states(s)
    t.ok(set(st) <= set(ids), "only our sandboxes listed", st)
    t.ok(all(v in ("Running", "Failed") for v in st.values()), "survivors Running or Failed", st)
    s.delete_all()
    t.eq(sandbox_processes(s.state_dir), {}, "no processes left after the interrupted deletes")


def test_graceful_restart(s):
    sb = s.new(timeout=None)
    s.kill(signal.SIGTERM)
    t.eq(s.proc.returncode, 0, "SIGTERM: clean exit 0")
    s.start()
    t.eq(s.execd(sb["id"]).get("/ping").status, 200, "sandbox survives a graceful restart")
    s.delete_all()


def test_state_dir_lock(s):
    other = Server(state_dir=s.state_dir)
    try:
        other.start()
        t.ok(False, "a second server on the same state dir must refuse to start")
    except RuntimeError as e:
        t.ok("in use" in str(e), "second server on the same state dir refused", str(e)[-300:])
    finally:
        if other.proc and other.proc.poll() is None:
            other.kill()
        import shutil
        shutil.rmtree(other.tmp, ignore_errors=True)  # its config; the state dir is s's


def test_refuses_without_key():
    s2 = Server(env={"OPENSANDBOX_INSECURE_SERVER": "NO"})
    try:
        s2.start()
        t.ok(False, "server without an API key must not start")
    except RuntimeError as e:
        t.ok("OPENSANDBOX_INSECURE_SERVER=YES" in str(e) and "api_key" in str(e),
             "no API key: refuses with a clear message", str(e)[-400:])
    finally:
        s2.stop()


def main():
    with Server(min_timeout=1) as s:
        t.run(test_restart_keeps_everything, s, timeout=60)
        t.run(test_expired_while_down, s, timeout=30)
        t.run(test_kill_during_creates, s, timeout=120)
        t.run(test_kill_during_delete, s, timeout=60)
        t.run(test_graceful_restart, s, timeout=30)
        t.run(test_state_dir_lock, s, timeout=30)
    t.run(test_refuses_without_key, timeout=30)


t.run(main, timeout=500)
t.done()
