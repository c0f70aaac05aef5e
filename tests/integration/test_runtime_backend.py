"""The runtime backend a sandbox runs on (issue #10): each record carries the name of its
backend and the stored name of its image; a restarted server re-adopts a sandbox through the
backend its record names, refuses one naming a backend it does not have with a clear error
(marked Failed, its processes left alone, not taken for an orphan), and upgrades a store
written before these columns existed."""
import os
import signal
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()


def db(s):
    return sqlite3.connect(os.path.join(s.state_dir, "opensandbox.db"), timeout=30)


def column(s, sid, col):
    with db(s) as c:
        row = c.execute("SELECT %s FROM sandboxes WHERE id = ?" % col, (sid,)).fetchone()
    return row[0] if row else None


def set_runtime(s, sid, name):
    c = db(s)
    with c:
        c.execute("UPDATE sandboxes SET runtime = ? WHERE id = ?", (name, sid))
    c.close()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def test_record_names_backend(s):
    sb = s.new(timeout=None)
    t.eq(column(s, sb["id"], "runtime"), "native", "the record names its backend")
    t.eq(column(s, sb["id"], "image"), "host", "and the stored name of its image")
    s.delete_all()


def test_unknown_backend_on_restart(s):
    odd = s.new(timeout=None)
    ok = s.new(timeout=None)
    pid = s.pid_of(odd["id"])
    t.ok(pid and alive(pid), "the sandbox runs", pid)
    s.kill(signal.SIGKILL)
    set_runtime(s, odd["id"], "nosuch")
    s.start()
    g = s.get_sbx(odd["id"])
    st = g.json()["status"]
    t.ok(st["state"] == "Failed" and st["reason"] == "RUNTIME_UNKNOWN" and
         "no runtime backend `nosuch`" in st["message"] and "native" in st["message"],
         "a record naming an unknown backend is Failed with a clear message", st)
    t.ok(alive(pid), "its processes are left alone (no backend here may touch them)")
    t.eq(s.get_sbx(ok["id"]).json()["status"]["state"], "Running", "the others are re-adopted")
    t.eq(s.execd(ok["id"]).get("/ping").status, 200, "and reachable")
    # Back under a server that has the backend: the record is known, so the
    # sandbox is no orphan, and a delete takes it down through the backend.
    s.kill(signal.SIGKILL)
    set_runtime(s, odd["id"], "native")
    s.start()
    t.ok(alive(pid), "not taken for an orphan by a server that has the backend")
    t.eq(s.delete("/v1/sandboxes/%s" % odd["id"]).status, 204, "delete")
    t.ok(wait_for(lambda: not alive(pid), timeout=30), "its processes are gone")
    s.delete_all()


def test_old_store_upgraded(s):
    sb = s.new(timeout=None)
    s.kill(signal.SIGKILL)
    c = db(s)
    with c:
        c.execute("ALTER TABLE sandboxes DROP COLUMN runtime")
        c.execute("ALTER TABLE sandboxes DROP COLUMN image")
    c.close()
    s.start()
    t.eq(s.get_sbx(sb["id"]).json()["status"]["state"], "Running",
         "a store without the new columns is upgraded; its sandbox re-adopted")
    t.eq(column(s, sb["id"], "runtime"), None, "(the old row has no backend name: native)")
    t.eq(s.execd(sb["id"]).get("/ping").status, 200, "and reachable")
    t.eq(s.delete("/v1/sandboxes/%s" % sb["id"]).status, 204, "and deleted through native")


def main():
    with Server(min_timeout=1) as s:
        t.run(test_record_names_backend, s, timeout=60)
        t.run(test_unknown_backend_on_restart, s, timeout=120)
        t.run(test_old_store_upgraded, s, timeout=60)


t.run(main, timeout=400)
t.done()
