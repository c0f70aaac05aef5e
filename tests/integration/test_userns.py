#!/usr/bin/python3
"""User namespaces in the native runtime ([native] user_namespaces = true):
each sandbox runs in its own user namespace mapped to its own 65536 host ids
from [native] userns_range; image layers, the host image's binds and execd
are idmapped mounts, so ownership looks normal inside. Real sandboxes via
the real server; what the host sees is read from /proc of PID 1."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
FIRST, SLOTS = 300000, 3
NATIVE = 'user_namespaces = true\nuserns_range = "%d:%d"' % (FIRST, SLOTS * 65536)


def sh(s, sid, cmd):
    ev = s.execd(sid).sse("/command", json={"command": cmd}).events
    return "\n".join(stdout_lines(ev)).strip()


def host_ids(pid):
    """(uid, gid) of pid as the host sees them (real ids)."""
    with open("/proc/%d/status" % pid) as f:
        st = dict(l.split(":", 1) for l in f if ":" in l)
    return int(st["Uid"].split()[0]), int(st["Gid"].split()[0])


def range_of(s, sid):
    with open(os.path.join(s.state_dir, "sandboxes", sid, "userns")) as f:
        return int(f.read().split()[0])


def test_inside(s):
    sid = s.new()["id"]
    t.eq(sh(s, sid, "id -u; id -g"), "0\n0", "uid and gid 0 inside")
    first = range_of(s, sid)
    t.ok(FIRST <= first < FIRST + SLOTS * 65536 and (first - FIRST) % 65536 == 0,
         "the recorded range is a slot of the pool", first)
    t.eq(sh(s, sid, "cat /proc/self/uid_map").split(), ["0", str(first), "65536"],
         "uid_map: 0 inside is the range's first uid outside")
    t.eq(sh(s, sid, "cat /proc/self/gid_map").split(), ["0", str(first), "65536"], "gid_map too")
    pid = s.pid_of(sid)
    t.eq(host_ids(pid), (first, first), "PID 1 runs as the range's first uid/gid on the host")
    t.eq(sh(s, sid, "stat -c %u:%g /usr/bin /usr/bin/env /opt/opensandbox/execd /etc/passwd"),
         "0:0\n0:0\n0:0\n0:0", "/usr/bin, a binary, execd and /etc are root-owned inside")
    t.eq(sh(s, sid, "ls -ld /usr/bin | awk '{print $3\":\"$4}'"), "root:root",
         "ls -l /usr/bin shows root")
    sh(s, sid, "echo hi > /tmp/rootfile")
    st = os.stat("/proc/%d/root/tmp/rootfile" % pid)
    t.eq((st.st_uid, st.st_gid), (first, first),
         "a file root writes inside is owned by the range's uid outside, not root")
    t.eq(sh(s, sid, "echo x > /proc/sys/kernel/hostname 2>/dev/null && echo wrote || echo refused"),
         "refused", "/proc/sys stays read-only")
    s.delete("/v1/sandboxes/" + sid)


def test_ranges(s):
    a, b = s.new()["id"], s.new()["id"]
    ra, rb = range_of(s, a), range_of(s, b)
    t.ok(ra != rb, "two live sandboxes get different ranges", (ra, rb))
    t.ok(host_ids(s.pid_of(a))[0] != host_ids(s.pid_of(b))[0], "and run as different host uids")
    s.delete("/v1/sandboxes/" + a)
    c = s.new()["id"]
    t.eq(range_of(s, c), ra, "a deleted sandbox's range is handed out again")
    s.restart()
    d = s.new()
    t.eq(d.get("status", {}).get("state"), "Running", "after a restart a create works")
    rd = range_of(s, d["id"])
    t.ok(rd not in (rb, range_of(s, c)), "after a restart no live sandbox's range is reused",
         (rd, rb, range_of(s, c)))
    r = s.create()
    t.eq(r.status >= 400, True, "a full pool refuses a create (%d slots)" % SLOTS)
    t.ok("userns_range" in r.text, "and says the pool is full", r.text[:300])
    for sid in (b, c, d["id"]):
        s.delete("/v1/sandboxes/" + sid)
    e = s.new()["id"]
    t.eq(range_of(s, e), FIRST, "after deletes the first slot is free again")
    s.delete("/v1/sandboxes/" + e)


def test_volumes_refused(s):
    r = s.create(volumes=[{"name": "v", "mountPath": "/data", "host": {"path": s.tmp}}])
    t.ok(r.status >= 400 and "user_namespaces" in r.text,
         "a volume is refused with a message naming user_namespaces (not yet idmapped)",
         (r.status, r.text[:300]))
    t.eq(s.list_all(), [], "and no sandbox is left behind")


def test_startup(s):
    t.ok("user namespaces: %d ranges" % SLOTS in s.log_text(),
         "the server says at start-up it runs sandboxes in user namespaces")


with Server(native=NATIVE, extra="[storage]\nallowed_host_paths = [\"/tmp\"]\n") as s:
    t.run(test_startup, s)
    t.run(test_inside, s)
    t.run(test_ranges, s)
    t.run(test_volumes_refused, s)
t.done()
