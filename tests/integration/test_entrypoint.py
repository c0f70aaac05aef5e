"""The entrypoint is the sandbox's main process (as a container's): when it exits or
cannot be executed, the sandbox ends -- Terminated (ENTRYPOINT_EXITED, exit 0) or Failed
(ENTRYPOINT_FAILED: exit code, signal or the exec's errno) -- its processes, cgroups,
state (but the log) and network slot are freed at once, diagnostics keep the log and the
event, and the record stays until DELETE. Also: PID 1 (execd) killed, the server down
while the entrypoint ends (the next start reads execd's report, or marks the sandbox
lost), the endpoint and proxy answers of an ended sandbox, and the one log line of every
failed create (id, phase, reason). Real sandboxes through the real server."""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
ENDED = ("Terminated", "Failed")
# Generous: a loaded machine may take seconds where an idle one takes milliseconds.
WAIT = 30


def state_of(s, sid):
    return s.get_sbx(sid).json()["status"]


def wait_ended(s, sid):
    wait_for(lambda: state_of(s, sid)["state"] in ENDED, timeout=WAIT)
    return state_of(s, sid)


def inspect(s, sid):
    return s.get("/v1/sandboxes/%s/diagnostics/inspect" % sid).text


def pid1_of(s, sid):
    m = re.search(r"pid: (\d+)", inspect(s, sid))
    return int(m.group(1)) if m else None


def check_freed(s, sid, what):
    """Nothing of the sandbox runs or stays but its record and its log."""
    t.ok(wait_for(lambda: not [p for p, cg in sandbox_processes(s.state_dir).items()
                               if sid in cg], timeout=WAIT), what + ": no process left")
    t.ok(not [c for c in sandbox_cgroups(s.state_dir) if sid in c], what + ": no cgroup left")
    t.ok(not leaked_mounts(sid), what + ": no mount left")
    t.eq(sorted(os.listdir(os.path.join(s.state_dir, "sandboxes", sid))), ["log"],
         what + ": only the log stays in the state dir")
    t.ok('"slot"' not in inspect(s, sid), what + ": the network slot is released")


def check_diag_and_delete(s, sid, what, log_has):
    logs = s.get("/v1/sandboxes/%s/diagnostics/logs?scope=container" % sid)
    text = logs.json().get("content", "") if logs.status == 200 else ""
    t.ok(all(x in text for x in log_has), what + ": diagnostics logs still readable",
         text[-1500:])
    ev = s.get("/v1/sandboxes/%s/diagnostics/events?scope=lifecycle" % sid).json()
    st = state_of(s, sid)
    t.ok(st["message"] in ev.get("content", ""), what + ": the end is a lifecycle event", ev)
    t.ok(any(i["id"] == sid and i["status"]["state"] == st["state"] for i in s.list_all()),
         what + ": listed with its state")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, what + ": DELETE -> 204")
    t.eq(s.get_sbx(sid).status, 404, what + ": gone after DELETE")
    t.ok(not os.path.exists(os.path.join(s.state_dir, "sandboxes", sid)),
         what + ": its log goes with it")


def ends(s, what, entrypoint, state, reason, message, log_has=()):
    r = s.create(entrypoint=entrypoint)
    t.eq(r.status, 202, what + ": create -> 202", r.body[:300])
    if r.status != 202:
        return
    sid = r.json()["id"]
    t.ok(r.json()["status"]["state"] in ("Running",) + ENDED,
         what + ": the answer is Running or already ended", r.json())
    st = wait_ended(s, sid)
    t.eq((st["state"], st["reason"]), (state, reason), what + ": " + state, st)
    t.ok(re.search(message, st["message"]), what + ": message", st)
    check_freed(s, sid, what)
    check_diag_and_delete(s, sid, what, log_has)


def test_cannot_execute(s):
    ends(s, "no such program", ["/no/such/program"], "Failed", "ENTRYPOINT_FAILED",
         r"^entrypoint /no/such/program could not be executed: No such file or directory$",
         ["/no/such/program"])
    ends(s, "not executable", ["/etc/hostname"], "Failed", "ENTRYPOINT_FAILED",
         r"^entrypoint /etc/hostname could not be executed: Permission denied$")


def test_exit_codes(s):
    ends(s, "exit 3", ["sh", "-c", "echo to-stdout-$((1+2)); echo to-stderr >&2; exit 3"],
         "Failed", "ENTRYPOINT_FAILED", r"^entrypoint exited with code 3$",
         ["to-stdout-3", "to-stderr"])
    ends(s, "true", ["true"], "Terminated", "ENTRYPOINT_EXITED",
         r"^entrypoint exited with code 0$")
    ends(s, "killed by a signal", ["sh", "-c", "echo about-to-die; kill -TERM $$; sleep 100"],
         "Failed", "ENTRYPOINT_FAILED", r"^entrypoint was killed by signal 15 \(SIGTERM\)$",
         ["about-to-die"])


def test_default_stays_running(s):
    sb = s.new()
    x = s.execd(sb["id"])
    t.eq(x.get("/ping").status, 200, "default entrypoint: execd answers")
    t.eq(state_of(s, sb["id"])["state"], "Running", "default entrypoint: Running")
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "default entrypoint: deleted")


def proc_text(pid, name):
    try:
        with open("/proc/%d/%s" % (pid, name)) as f:
            return f.read()
    except OSError:
        return ""


def threads_of(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


PAUSE = "34"  # x86_64's pause(2), as /proc/<pid>/syscall shows a sleeper in it
EPOLL_WAITS = ("232", "281", "441")  # epoll_wait, epoll_pwait, epoll_pwait2


def sleeps_forever(pid):
    """In epoll_wait with timeout -1 (its 4th argument): no timer is armed. A
    kept-alive connection's head deadline (20 s) may hold one for a while."""
    f = proc_text(pid, "syscall").split()
    return len(f) > 4 and f[0] in EPOLL_WAITS and int(f[4], 16) & 0xffffffff == 0xffffffff


def test_idle_tail(s):
    """`tail -f /dev/null` (the SDKs' default entrypoint) is execd sleeping under
    tail's name: no wake-ups; execd starts no file threads until it needs them."""
    sb = s.new()
    pid = pid1_of(s, sb["id"])
    t.ok(wait_for(lambda: len(children_of(pid)) == 1, timeout=WAIT), "idle: one entrypoint")
    kid = children_of(pid)[0]
    # (It names itself right after its exec, before it sleeps.)
    t.ok(wait_for(lambda: proc_text(kid, "syscall").split()[:1] == [PAUSE], timeout=WAIT),
         "idle: it sleeps in pause(), with no timer to wake it", proc_text(kid, "syscall"))
    t.eq(proc_text(kid, "cmdline"), "tail\0-f\0/dev/null\0", "idle: ps shows tail -f /dev/null")
    t.eq(proc_text(kid, "comm"), "tail\n", "idle: its name is tail (pkill tail finds it)")
    t.ok(os.readlink("/proc/%d/exe" % kid).endswith("execd"), "idle: it is execd's binary")
    t.eq(threads_of(pid), 1, "idle: execd runs one thread (no file threads yet)")
    t.ok(wait_for(lambda: sleeps_forever(pid), timeout=60),
         "idle: execd waits for events with no timer (no periodic wake-up)",
         proc_text(pid, "syscall"))
    x = s.execd(sb["id"])
    t.eq(x.get("/files/info?path=/etc/hostname").status, 200, "idle: a file call answers")
    t.ok(wait_for(lambda: threads_of(pid) > 1, timeout=WAIT), "idle: the file threads started")
    os.kill(kid, signal.SIGTERM)
    st = wait_ended(s, sb["id"])
    t.eq((st["state"], st["reason"]), ("Failed", "ENTRYPOINT_FAILED"),
         "idle: SIGTERM ends it as it ends tail", st)
    t.ok("signal 15" in st["message"], "idle: killed by signal 15", st)
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "idle: DELETE -> 204")


def fd_targets(pid):
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                out.add(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:
                pass
    except OSError:
        pass
    return out


def test_no_server_descriptors(s):
    """The helper starts with an empty descriptor table and takes only its own
    (spec, result pipe, sysfs): no socket or file of the server reaches a sandbox.
    Pipes are shared on purpose (the output pipe), anon inodes name no object."""
    sb = s.new()
    pid = pid1_of(s, sb["id"])
    t.ok(wait_for(lambda: len(children_of(pid)) == 1, timeout=WAIT), "fds: the entrypoint runs")
    server = {x for x in fd_targets(s.proc.pid)
              if not x.startswith(("pipe:", "anon_inode:", "/dev/null"))}
    inside = set()
    for p in [pid] + children_of(pid):
        inside |= fd_targets(p)
    t.ok(server, "fds: the server holds sockets and files", server)
    t.eq(sorted(server & inside), [], "fds: no descriptor of the server's is in the sandbox")
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "fds: DELETE -> 204")


def test_tail_not_found(s):
    """The substitute needs a tail to substitute: an image without one fails
    as it always did."""
    ends(s, "tail by a missing path", ["/no/bin/tail", "-f", "/dev/null"], "Failed",
         "ENTRYPOINT_FAILED", r"^entrypoint /no/bin/tail could not be executed: "
         r"No such file or directory$")


def test_ended_endpoint_and_proxy(s):
    """The SDKs ask for the endpoint right after the create, then /ping through the
    proxy: both answer a JSON error naming the reason once the sandbox ended."""
    r = s.create(entrypoint=["/no/such/program"])
    sid = r.json()["id"]
    wait_ended(s, sid)
    # 400: the endpoint operation lists no 409 in the spec (docs/errors.md).
    t.is_error(s.get("/v1/sandboxes/%s/endpoints/44772" % sid), 400, "SANDBOX::NOT_RUNNING",
               "endpoint of an ended sandbox -> 400")
    r = s.get("/v1/sandboxes/%s/endpoints/44772" % sid)
    t.ok("could not be executed" in r.json().get("message", ""), "the 400 says why", r.json())
    r = s.get("/v1/sandboxes/%s/proxy/44772/ping" % sid)
    t.ok(r.status == 409 and "ENTRYPOINT_FAILED" in r.json().get("message", ""),
         "proxy to an ended sandbox -> 409 with the reason", r.body[:300])
    t.is_error(s.post("/v1/sandboxes/%s/pause" % sid), 409, None, "pause an ended sandbox -> 409")
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "then DELETE -> 204")


def test_execd_killed(s):
    sb = s.new()
    pid = pid1_of(s, sb["id"])
    t.ok(pid, "inspect shows PID 1")
    os.kill(pid, signal.SIGKILL)
    st = wait_ended(s, sb["id"])
    t.eq((st["state"], st["reason"]), ("Failed", "SANDBOX_EXITED"), "execd killed -> Failed", st)
    check_freed(s, sb["id"], "execd killed")
    t.eq(s.delete("/v1/sandboxes/" + sb["id"]).status, 204, "execd killed: DELETE -> 204")


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_restart(s):
    """The server is down (SIGKILL) while the entrypoint ends: the next start reads the
    report execd wrote meanwhile; a PID 1 that died meanwhile makes the sandbox lost."""
    a = s.new(entrypoint=["sleep", "100000"])
    b = s.new()
    pa, pb = pid1_of(s, a["id"]), pid1_of(s, b["id"])
    entry = children_of(pa)
    t.eq(len(entry), 1, "restart: the entrypoint is PID 1's child", entry)
    s.kill(signal.SIGKILL)
    if entry:
        os.kill(entry[0], signal.SIGKILL)
        t.ok(wait_for(lambda: gone(entry[0]), timeout=WAIT), "restart: the entrypoint died")
    os.kill(pb, signal.SIGKILL)
    t.ok(wait_for(lambda: gone(pb), timeout=WAIT), "restart: execd of the other one died")
    s.start()
    st = wait_ended(s, a["id"])
    t.eq((st["state"], st["reason"], st["message"]),
         ("Failed", "ENTRYPOINT_FAILED", "entrypoint was killed by signal 9 (SIGKILL)"),
         "restart: the entrypoint's end is known after the restart", st)
    check_freed(s, a["id"], "restart, entrypoint ended")
    st = wait_ended(s, b["id"])
    t.eq((st["state"], st["reason"]), ("Failed", "SANDBOX_LOST"), "restart: PID 1 gone -> lost",
         st)
    t.ok("while the server was down" in st["message"], "restart: lost message", st)
    check_freed(s, b["id"], "restart, PID 1 gone")
    t.eq(s.delete("/v1/sandboxes/" + a["id"]).status, 204, "restart: DELETE the first -> 204")
    t.eq(s.delete("/v1/sandboxes/" + b["id"]).status, 204, "restart: DELETE the second -> 204")


def failed_create_lines(s, phase):
    return [l for l in s.log_text().splitlines()
            if "create failed: sandbox " in l and ", phase %s: " % phase in l]


def test_failed_create_logs(s):
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r = s.create(image={"uri": "no-such-image-for-p4:1"})
    t.ok(r.status >= 400, "unknown image (pull_policy never) -> error", r.body[:300])
    lines = failed_create_lines(s, "image")
    t.eq(len(lines), 1, "unknown image: logged once", lines)
    t.ok(lines and re.search(r"sandbox %s, phase image: .*no-such-image-for-p4" % uuid, lines[0]),
         "unknown image: the line names the id, the phase and the reason", lines)
    r = s.create(volumes=[{"name": "v", "mountPath": "/mnt/v", "host": {"path": "/etc"}}])
    t.ok(r.status == 400, "host volume outside the allowed paths -> 400", r.body[:300])
    lines = failed_create_lines(s, "volumes")
    t.eq(len(lines), 1, "bad volume: logged once", lines)
    t.ok(lines and re.search(r"sandbox %s, phase volumes: .+" % uuid, lines[0]),
         "bad volume: the line names the id, the phase and the reason", lines)
    r = s.create(entrypoint="not a list")
    t.eq(r.status, 400, "invalid request -> 400")
    t.eq(len(failed_create_lines(s, "request")), 1, "invalid request: logged once")
    r = s.create(entrypoint=["/no/such/program"])
    sid = r.json()["id"]
    wait_ended(s, sid)
    n = len([l for l in s.log_text().splitlines() if sid in l and
             ("create failed" in l or " ended: " in l)])
    t.eq(n, 1, "an entrypoint that fails is logged once")
    s.delete("/v1/sandboxes/" + sid)


def main():
    with Server(min_timeout=1) as s:
        t.run(test_cannot_execute, s, timeout=120)
        t.run(test_exit_codes, s, timeout=120)
        t.run(test_default_stays_running, s, timeout=60)
        t.run(test_idle_tail, s, timeout=120)
        t.run(test_tail_not_found, s, timeout=60)
        t.run(test_no_server_descriptors, s, timeout=60)
        t.run(test_ended_endpoint_and_proxy, s, timeout=60)
        t.run(test_execd_killed, s, timeout=60)
        t.run(test_restart, s, timeout=120)
        t.run(test_failed_create_logs, s, timeout=60)


t.run(main, timeout=600)
t.done()
