"""Admission control ([server] max_sandboxes, max_concurrent_creates,
admission_wait_seconds; docs/server.md "Admission"): a create at capacity waits
in one FIFO queue and is admitted when room frees; after the wait it gets 429
SANDBOX::CAPACITY with Retry-After and nothing of it is left (list, store,
network links, state dirs, cgroups); a client leaving the queue leaves nothing
and frees its place. Every wait is for a condition: the server logs each
queued create ("create queued: N waiting")."""
import http.server
import json
import os
import re
import signal
import socketserver
import sqlite3
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BODY = {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600}


def queued_lines(s):
    return len(re.findall(r"create queued: ", s.log_text()))


def left_lines(s):
    return len(re.findall(r"queued create left the queue", s.log_text()))


def store_rows(s):
    db = sqlite3.connect(os.path.join(s.state_dir, "opensandbox.db"))
    try:
        return db.execute("SELECT COUNT(*) FROM sandboxes").fetchone()[0]
    finally:
        db.close()


def state_dirs(s):
    d = os.path.join(s.state_dir, "sandboxes")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def link_prefix(s):
    m = re.search(r"host links (\S+)<n>", s.log_text())
    return m.group(1) if m else None


def host_links(s):
    p = link_prefix(s)
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = [l.split(":")[1].strip().split("@")[0] for l in out.splitlines()]
    return sorted(n for n in names if p and n.startswith(p))


def footprint(s):
    return {"list": sorted(x["id"] for x in s.list_all()), "store": store_rows(s),
            "dirs": state_dirs(s), "cgroups": len(sandbox_cgroups(s.state_dir))}


class Bg:
    """One create on a thread (its own connection), answer in .resp."""

    def __init__(self, s, body=None, tag=None):
        self.resp, self.s = None, s
        b = dict(body or BODY)
        if tag:
            b["metadata"] = {"tag": tag}
        self.th = threading.Thread(target=self._run, args=(b,), daemon=True)
        self.th.start()

    def _run(self, b):
        self.resp = self.s.post("/v1/sandboxes", json=b, timeout=120)

    def wait(self, timeout=60):
        self.th.join(timeout)
        return self.resp


def test_waits_then_admitted(s):
    a, b = s.new(), s.new()
    n = queued_lines(s)
    c = Bg(s)
    t.ok(wait_for(lambda: queued_lines(s) > n, 10), "the 3rd create is queued")
    t.ok(c.resp is None, "and not answered yet")
    t.eq(s.delete("/v1/sandboxes/" + a["id"]).status, 204, "delete one")
    r = c.wait()
    t.eq(r.status, 202, "the queued create is admitted when room frees", r)
    ids = sorted(x["id"] for x in s.list_all())
    t.eq(ids, sorted([b["id"], r.json()["id"]]), "two sandboxes: the old one and the new one")
    s.delete_all()


def test_times_out(s):
    s.new(), s.new()
    before = footprint(s)
    # two sandboxes' links and the two networks kept ready (pool_size = 2)
    t.ok(wait_for(lambda: len(host_links(s)) == 4, 10), "4 host links", host_links(s))
    links = host_links(s)
    r = s.create()
    t.is_error(r, 429, "SANDBOX::CAPACITY", "after admission_wait_seconds: 429")
    ra = r.headers.get("retry-after", "")
    t.ok(ra.isdigit() and int(ra) >= 1, "Retry-After is a number of seconds", r.headers)
    t.eq(footprint(s), before, "nothing left: list, store, state dirs, cgroups")
    t.ok(wait_for(lambda: host_links(s) == links, 10), "nothing left: network links",
         (links, host_links(s)))
    s.delete_all()


def test_client_leaves_queue(s):
    a, b = s.new(), s.new()
    before = footprint(s)
    n, m = queued_lines(s), left_lines(s)
    conn = RawConn("127.0.0.1", s.port)
    conn.send_request("POST", "/v1/sandboxes", {"Content-Type": "application/json"},
                      json.dumps(BODY).encode())
    t.ok(wait_for(lambda: queued_lines(s) > n, 10), "the create is queued")
    conn.close()
    t.ok(wait_for(lambda: left_lines(s) > m, 10), "closing the connection takes it off the queue")
    t.eq(footprint(s), before, "nothing left of it")
    t.eq(s.delete("/v1/sandboxes/" + a["id"]).status, 204, "delete one")
    n = queued_lines(s)
    r = s.create()
    t.eq(r.status, 202, "the freed room goes to the next create", r)
    t.eq(queued_lines(s), n, "which did not queue behind the departed one")
    t.eq(len(s.list_all()), 2, "two sandboxes")
    s.delete_all()


def test_fifo(s):
    keep = [s.new()["id"], s.new()["id"]]
    waiting = []
    for i in range(3):
        n = queued_lines(s)
        waiting.append(Bg(s, tag="w%d" % i))
        t.ok(wait_for(lambda: queued_lines(s) > n, 10), "create w%d queued" % i)
    for i in range(3):
        t.eq(s.delete("/v1/sandboxes/" + keep.pop(0)).status, 204, "delete %d" % i)
        t.ok(wait_for(lambda: sum(w.resp is not None for w in waiting) == i + 1, 30),
             "one more answered after delete %d" % i)
        answered = [j for j, w in enumerate(waiting) if w.resp is not None]
        t.eq(answered, list(range(i + 1)), "the earliest waiting is admitted first")
        r = waiting[i].resp
        t.eq(r.status, 202, "w%d admitted" % i, r)
        keep.append(r.json()["id"])
    s.delete_all()


def test_room_when_one_ends(s):
    a = s.new()
    s.new()
    n = queued_lines(s)
    c = Bg(s)
    t.ok(wait_for(lambda: queued_lines(s) > n, 10), "the 3rd create is queued")
    os.kill(s.pid_of(a["id"]), signal.SIGKILL)  # its PID 1 dies: the sandbox ends
    r = c.wait()
    t.eq(r.status, 202, "admitted once the first one ended", r)
    t.eq(s.get_sbx(a["id"]).json()["status"]["state"], "Failed",
         "an ended sandbox holds no room (it is kept until deleted)")
    s.delete_all()


def test_one_create_at_a_time(s):
    ws = [Bg(s) for _ in range(5)]
    rs = [w.wait() for w in ws]
    t.eq([r.status for r in rs], [202] * 5, "5 concurrent creates with max_concurrent_creates = 1",
         [r.body[:200] for r in rs if r.status != 202])
    t.eq(len(s.list_all()), 5, "5 sandboxes")
    s.delete_all()


class StallingRegistry:
    """A registry that holds every request until release(), then answers 404:
    a pull that takes as long as the test wants."""

    def __init__(self):
        self.asked, self.go = threading.Event(), threading.Event()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.asked.set()
                outer.go.wait(60)
                body = b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"no such image"}]}'
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, *a):
                pass

        self.srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.addr = "127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.go.set()
        self.srv.shutdown()
        self.srv.server_close()


def test_pull_gives_its_slot(s, reg):
    before = footprint(s)
    a = Bg(s, dict(BODY, image={"uri": reg.addr + "/stalled/img:1"}))
    t.ok(reg.asked.wait(30), "create A is pulling (the registry was asked)")
    r = s.create()
    t.eq(r.status, 202, "with max_concurrent_creates = 1, create B runs while A pulls", r)
    t.ok(a.resp is None, "A still waits for its pull")
    s.delete("/v1/sandboxes/" + r.json()["id"])
    reg.go.set()
    ra = a.wait()
    t.ok(ra is not None and 400 <= ra.status < 600 and ra.status != 429,
         "A gets the pull's error once the registry answers", ra)
    t.eq(footprint(s), before, "nothing left of either")


def main():
    with Server(server="max_sandboxes = 2\nadmission_wait_seconds = 2") as s:
        t.run(test_waits_then_admitted, s, timeout=60)
        t.run(test_times_out, s, timeout=60)
        t.run(test_client_leaves_queue, s, timeout=60)
    with Server(server="max_sandboxes = 2\nadmission_wait_seconds = 60",
                extra='[network]\nmode = "none"') as s:
        t.run(test_fifo, s, timeout=120)
        t.run(test_room_when_one_ends, s, timeout=120)
    with Server(server="max_concurrent_creates = 1\nadmission_wait_seconds = 60",
                extra='[network]\nmode = "none"') as s:
        t.run(test_one_create_at_a_time, s, timeout=120)
    reg = StallingRegistry()
    try:
        with Server(server="max_concurrent_creates = 1\nadmission_wait_seconds = 60",
                    extra='[network]\nmode = "none"\n[image]\npull_policy = "missing"\n'
                          'insecure_registries = ["%s"]' % reg.addr) as s:
            t.run(test_pull_gives_its_slot, s, reg, timeout=120)
    finally:
        reg.close()


t.run(main, timeout=500)
t.done()
