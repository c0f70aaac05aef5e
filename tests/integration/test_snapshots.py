#!/usr/bin/python3
"""Snapshots (protocol.md 1.3, 1.4, 1.5, 1.7; issue #4): create (202 + Location, Creating ->
Ready), get, list with filters and pagination, delete (refused while in use), create a
sandbox from snapshotId (default entrypoint, files and deletions captured, later writes
not), the source sandbox keeps running, bad input, restarts, and `image export` of a
snapshot. For the `host` image and for an image pulled from a local registry."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
from registrylib import *  # noqa: E402,F403

t = TAP()
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
LIMITS = {"cpu": "1", "memory": "512Mi"}
DEFAULT_EP = ["tail", "-f", "/dev/null"]
with open(EXECD_BIN, "rb") as _f:
    DYNAMIC_EXECD = b"ld-linux" in _f.read(8192)
# OSB_TEST_RUNTIME=gvisor: a sandbox's processes are gVisor's, seen only inside.
GVISOR = os.environ.get("OSB_TEST_RUNTIME") == "gvisor"


# ---------------------------------------------------------------- helpers

def sh(s, sid, cmd, timeout=60):
    ev = s.execd(sid).sse("/command", json={"command": cmd}, timeout=timeout).events
    return exit_code(ev), "\n".join(stdout_lines(ev)).strip()


def snap(s, sid, body=Ellipsis, raw=None, headers=None):
    path = "/v1/sandboxes/%s/snapshots" % sid
    if raw is not None:
        return s.req("POST", path, body=raw, headers=dict({"Content-Type": "application/json"},
                                                         **(headers or {})))
    if body is Ellipsis:
        return s.req("POST", path, body=b"")
    return s.post(path, json=body)


def get_snap(s, snap_id):
    return s.get("/v1/snapshots/" + snap_id)


def wait_ready(s, snap_id, timeout=60):
    """Polls until the snapshot leaves Creating; returns the last Snapshot JSON."""
    last = [None]

    def done():
        r = get_snap(s, snap_id)
        last[0] = r.json() if r.status == 200 else {"status": {"state": "HTTP %d" % r.status}}
        return last[0]["status"]["state"] != "Creating"
    wait_for(done, timeout=timeout, interval=0.05)
    return last[0]


def take(s, sid, name=None, what="snapshot"):
    """Snapshot sid and wait for Ready; returns the snapshot id (None on failure)."""
    r = snap(s, sid, {"name": name} if name else {})
    if not t.ok(r.status == 202, "%s: POST -> 202" % what, "%d %s" % (r.status, r.body[:300])):
        return None
    j = wait_ready(s, r.json()["id"])
    if not t.eq((j or {}).get("status", {}).get("state"), "Ready", "%s: Ready" % what):
        t.diag(repr(j))
        return None
    return r.json()["id"]


def restore(s, snap_id, **fields):
    body = {"snapshotId": snap_id, "resourceLimits": LIMITS, "timeout": 600}
    body.update(fields)
    return s.post("/v1/sandboxes", json=body, timeout=120)


def list_snaps(s, **params):
    return s.get(qs("/v1/snapshots", params))


def cli(s, *args, timeout=120):
    return subprocess.run([SERVER_BIN, "--config", s.config] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def host_pid(s, cmdline):
    """Host pid of the sandbox process whose command line is exactly cmdline."""
    for pid in sandbox_processes(s.state_dir):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read().split(b"\0")[:-1] == [c.encode() for c in cmdline]:
                    return pid
        except OSError:
            pass
    return None


def inner_pid(s, sid, cmdline):
    """The pid, inside the sandbox, of the process whose command line is exactly cmdline."""
    _, out = sh(s, sid, "for p in /proc/[0-9]*; do [ \"$(tr '\\0' ' ' < $p/cmdline)\" = '%s ' ] "
                        "&& echo ${p#/proc/}; done" % " ".join(cmdline))
    return int(out) if out.isdigit() else None


def inner_state(s, sid, pid):
    _, out = sh(s, sid, "cat /proc/%d/stat" % pid)
    return out.rsplit(")", 1)[1].split()[0] if ")" in out else None


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


# ---------------------------------------------------------------- create / restore (host)

def test_create_and_restore_host(s):
    marker = "sleep-%d" % os.getpid()
    sb = s.new(entrypoint=["sh", "-c", "sleep 100%d & exec tail -f /dev/null" % os.getpid()])
    sid = sb["id"]
    sleep_cmd = ["sleep", "100%d" % os.getpid()]
    if GVISOR:  # its processes are seen only inside the sandbox
        find, state = (lambda: inner_pid(s, sid, sleep_cmd)), (lambda p: inner_state(s, sid, p))
    else:
        find, state = (lambda: host_pid(s, sleep_cmd)), proc_state
    wait_for(lambda: find(), timeout=5)
    pid = find()
    t.ok(pid, "source sandbox: background sleep running (%s)" % marker)
    code, victim = sh(s, sid, "for f in /etc/profile /etc/shells /etc/debian_version "
                              "/etc/bash.bashrc; do [ -f $f ] && echo $f && break; done")
    t.ok(victim, "a file of the host image to delete", victim)
    code, _ = sh(s, sid, "set -e; mkdir -p /srv/snap/dir; echo before > /srv/snap/f; "
                         "echo x > /srv/snap/dir/x; echo tmp > /tmp/snapfile; rm -f %s" % victim)
    t.eq(code, 0, "files written and one deleted in the source sandbox")

    t0 = time.time()
    r = snap(s, sid, {"name": "n1"})
    t.eq(r.status, 202, "POST /sandboxes/{id}/snapshots {name} -> 202")
    j = r.json()
    t.ok(UUID_RE.match(j.get("id", "")), "snapshot id is a UUID4", j)
    t.eq(r.headers.get("location"), "/v1/snapshots/" + j.get("id", ""), "Location header")
    st = j.get("status", {})
    t.eq((j.get("sandboxId"), j.get("name"), st.get("state"), st.get("reason"),
          st.get("message")),
         (sid, "n1", "Creating", "snapshot_accepted", "Snapshot creation accepted."),
         "Snapshot body: sandboxId, name, status Creating/snapshot_accepted")
    t.ok(iso_ok(j.get("createdAt")) and iso_ok(st.get("lastTransitionAt")),
         "createdAt and lastTransitionAt are RFC 3339", j)
    t.ok(no_nulls(j), "no null values")
    snap_id = j["id"]
    final = wait_ready(s, snap_id)
    t.eq((final["status"]["state"], final["status"].get("reason")), ("Ready", "snapshot_ready"),
         "snapshot becomes Ready (snapshot_ready)")
    t.diag("snapshot of a small host sandbox: Ready after %.0f ms" % ((time.time() - t0) * 1000))
    g = get_snap(s, snap_id).json()
    t.eq((g["id"], g["sandboxId"], g.get("name"), g["createdAt"]),
         (snap_id, sid, "n1", j["createdAt"]), "GET /snapshots/{id}")
    t.eq(s.get("/snapshots/" + snap_id).status, 200, "GET at the / prefix")

    # the source keeps running, thawed, with the same processes
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "source sandbox still Running")
    t.ok(pid and state(pid) in ("S", "R") and find() == pid,
         "the sleep started before the snapshot is still there, not stopped",
         (pid, state(pid) if pid else None))
    t.eq(sh(s, sid, "cat /srv/snap/f; echo after > /srv/snap/after"), (0, "before"),
         "source sandbox answers and is writable after the snapshot")

    r = restore(s, snap_id)
    t.eq(r.status, 202, "create from snapshotId -> 202", r.body[:300])
    if r.status != 202:
        return snap_id
    rj = r.json()
    t.eq((rj["status"]["state"], rj["entrypoint"]), ("Running", DEFAULT_EP),
         "restored sandbox Running with the default entrypoint")
    g = s.get_sbx(rj["id"]).json()
    t.eq((g.get("snapshotId"), g["entrypoint"]), (snap_id, DEFAULT_EP),
         "GET shows snapshotId and the entrypoint")
    nid = rj["id"]
    t.eq(sh(s, nid, "cat /srv/snap/f /srv/snap/dir/x /tmp/snapfile"), (0, "before\nx\ntmp"),
         "files written before the snapshot are there")
    t.eq(sh(s, nid, "test -e %s; echo $?" % victim), (0, "1"),
         "the file deleted before the snapshot stays deleted (whiteout)")
    t.eq(sh(s, nid, "test -e /srv/snap/after; echo $?"), (0, "1"),
         "a file written after the snapshot is not there")
    t.eq(sh(s, nid, "echo mine > /srv/snap/f; cat /srv/snap/f"), (0, "mine"),
         "the restored sandbox is writable")
    t.eq(sh(s, sid, "cat /srv/snap/f"), (0, "before"), "... without touching the source")
    r2 = restore(s, snap_id, entrypoint=["sh", "-c", "echo custom > /tmp/ep; exec sleep 1000"])
    t.eq(r2.status, 202, "create from snapshotId with an explicit entrypoint")
    if r2.status == 202:
        got = []
        wait_for(lambda: got.append(sh(s, r2.json()["id"], "cat /tmp/ep")) or
                 got[-1] == (0, "custom"), timeout=10, interval=0.1)
        t.eq(got[-1] if got else None, (0, "custom"), "the explicit entrypoint runs")
    s.delete_all()
    return snap_id


def test_empty_body(s):
    sb = s.new()
    r = snap(s, sb["id"])  # no body at all: JS sends {}, the body is optional
    t.eq(r.status, 202, "POST snapshots without a body -> 202", r.body[:300])
    if r.status == 202:
        t.ok("name" not in r.json(), "no name key when none given", r.json())
        t.eq(wait_ready(s, r.json()["id"])["status"]["state"], "Ready", "... becomes Ready")
    r = snap(s, sb["id"], {})
    t.eq(r.status, 202, "POST snapshots {} -> 202")
    if r.status == 202:
        wait_ready(s, r.json()["id"])
    s.delete_all()


# ---------------------------------------------------------------- registry image

def test_registry_image(s, reg):
    reg.push_image("test/snapbase", "1", [busybox_layer(), tar_layer([
        ("file", "etc/motd", b"motd\n"), ("file", "data/a", b"a\n"), ("file", "keep", b"k\n")])])
    ref = "%s/test/snapbase:1" % reg.addr
    r = s.create(image={"uri": ref}, http_timeout=120)
    if not t.eq(r.status, 202, "sandbox from a registry image", r.body[:300]):
        return
    sid = r.json()["id"]
    code, _ = sh(s, sid, "set -e; rm /etc/motd; rm -rf /data; mkdir /data; echo n > /data/n; "
                         "echo v > /root/written; chmod 4755 /root/written")
    t.eq(code, 0, "changes in the source sandbox")
    snap_id = take(s, sid, "reg", "registry-image snapshot")
    if not snap_id:
        return
    sh(s, sid, "echo late > /root/after")
    r = restore(s, snap_id)
    if t.eq(r.status, 202, "restore a registry-image snapshot", r.body[:300]):
        nid = r.json()["id"]
        t.eq(sh(s, nid, "cat /root/written /keep; ls -A /data; test -e /etc/motd; echo $?; "
                        "test -e /root/after; echo $?"),
             (0, "v\nk\nn\n1\n1"), "restored: written file, base file, opaque /data, deleted "
                                   "motd, no later write")
        t.eq(sh(s, nid, "stat -c %a /root/written"), (0, "4755"), "mode (setuid) kept")
        t.eq(s.get_sbx(nid).json().get("snapshotId"), snap_id, "GET shows snapshotId")

    # export as an OCI image: base layers + the snapshot's layer
    out = os.path.join(s.tmp, "snap-export.tar")
    r = cli(s, "image", "export", snap_id, out)
    t.ok(r.returncode == 0 and os.path.isfile(out), "image export <snapshotId>", r.stderr)
    if r.returncode == 0:
        try:
            files = oci_archive_files(out)
        except Exception as e:
            t.ok(False, "snapshot export is a valid OCI layout", repr(e))
            files = None
        if files is not None:
            want = {"root/written": ("file", b"v\n", 0o4755), "data/n": ("file", b"n\n", 0o644),
                    "keep": ("file", b"k\n", 0o644)}
            t.eq({k: files.get(k) for k in want}, want, "export holds the snapshot's files")
            t.eq(([k for k in files if k.startswith("data/")], "etc/motd" in files,
                  "root/after" in files), (["data/n"], False, False),
                 "export: whiteouts and opaque dirs applied, no later write")
            t.ok(files.get("usr/bin/busybox", ("",))[0] == "file", "export has the base layers")
    s.delete_all()


# ---------------------------------------------------------------- errors

def test_errors(s):
    sb = s.new()
    sid = sb["id"]
    t.is_empty_ok(s.post("/v1/sandboxes/%s/pause" % sid), status=202)
    t.is_error(snap(s, sid, {}), 409, "SNAPSHOT::INVALID_SOURCE_STATE", "snapshot of a paused "
               "sandbox -> 409")
    s.post("/v1/sandboxes/%s/resume" % sid)
    t.is_error(snap(s, str(uuid.uuid4()), {}), 404, None, "snapshot of an unknown sandbox -> 404")
    for what, kw in (("name \"\"", {"body": {"name": ""}}), ("name 5", {"body": {"name": 5}}),
                     ("name list", {"body": {"name": ["a"]}}),
                     ("array body", {"raw": b"[1]"}), ("string body", {"raw": b'"x"'}),
                     ("invalid JSON", {"raw": b"{nope"})):
        t.is_error(snap(s, sid, **kw), 400, None, "snapshot with %s -> 400" % what)
    items = list_snaps(s, sandboxId=sid).json()["items"]
    t.eq(items, [], "no snapshot recorded by the refused requests")

    t.is_error(get_snap(s, str(uuid.uuid4())), 404, "SNAPSHOT::NOT_FOUND", "GET unknown -> 404")
    t.is_error(s.delete("/v1/snapshots/" + str(uuid.uuid4())), 404, "SNAPSHOT::NOT_FOUND",
               "DELETE unknown -> 404")
    n = len(s.list_all())
    t.is_error(restore(s, str(uuid.uuid4())), 400, "SNAPSHOT::NOT_FOUND",
               "create from an unknown snapshotId -> 400 (create lists no 404)")
    snap_id = take(s, sid, "e1", "snapshot for the error cases")
    if snap_id:
        r = restore(s, snap_id, image={"uri": "host"}, entrypoint=DEFAULT_EP)
        t.is_error(r, 400, None, "snapshotId and image together -> 400")
    t.eq(len(s.list_all()), n, "no sandbox created by the refused creates")
    s.delete_all()


# ---------------------------------------------------------------- list

def test_list(s):
    a, b = s.new()["id"], s.new()["id"]
    ids_a = [take(s, a, "a1", "list a1"), take(s, a, None, "list a2")]
    id_b = take(s, b, "b1", "list b1")
    if None in ids_a or id_b is None:
        return
    r = list_snaps(s)
    t.eq(r.status, 200, "GET /v1/snapshots -> 200")
    j = r.json()
    t.eq(sorted(j.keys()), ["items", "pagination"], "list: items + pagination")
    t.eq(sorted(j["pagination"].keys()), ["hasNextPage", "page", "pageSize", "totalItems",
                                          "totalPages"], "pagination keys")
    t.ok({ids_a[0], ids_a[1], id_b} <= {i["id"] for i in j["items"]}, "all three listed")
    created = [i["createdAt"] for i in j["items"]]
    t.eq(created, sorted(created, reverse=True), "createdAt descending")
    r = list_snaps(s, sandboxId=a).json()
    t.eq([i["id"] for i in r["items"]], ids_a[::-1], "sandboxId filter, newest first")
    t.eq(r["pagination"], {"page": 1, "pageSize": 20, "totalItems": 2, "totalPages": 1,
                           "hasNextPage": False}, "filtered pagination (default pageSize 20)")
    t.eq(list_snaps(s, sandboxId=str(uuid.uuid4())).json(),
         {"items": [], "pagination": {"page": 1, "pageSize": 20, "totalItems": 0,
                                      "totalPages": 0, "hasNextPage": False}},
         "unknown sandboxId -> empty list")
    for states, want in ((["ready"], 2), (["READY"], 2), (["Creating"], 0),
                         (["Failed", "Ready"], 2), (["Deleting"], 0)):
        got = list_snaps(s, sandboxId=a, state=states).json()["items"]
        t.eq(len(got), want, "state=%s (case-insensitive, repeatable)" % "&state=".join(states))
    p1 = list_snaps(s, sandboxId=a, pageSize=1).json()
    t.eq(([i["id"] for i in p1["items"]], p1["pagination"]),
         ([ids_a[1]], {"page": 1, "pageSize": 1, "totalItems": 2, "totalPages": 2,
                       "hasNextPage": True}), "pageSize=1 page 1")
    p2 = list_snaps(s, sandboxId=a, pageSize=1, page=2).json()
    t.eq(([i["id"] for i in p2["items"]], p2["pagination"]["hasNextPage"]),
         ([ids_a[0]], False), "page 2")
    t.eq(list_snaps(s, sandboxId=a, pageSize=1, page=3).json()["items"], [],
         "a page past the end is empty")
    t.eq(list_snaps(s, pageSize=200).status, 200, "pageSize=200 ok")
    for bad in ({"pageSize": 0}, {"pageSize": 201}, {"pageSize": -1}, {"pageSize": "x"},
                {"page": 0}, {"page": "x"}):
        t.is_error(list_snaps(s, **bad), 400, None, "list with %r -> 400" % bad)
    t.eq(s.get(qs("/snapshots", {"sandboxId": b})).json()["items"][0]["id"], id_b,
         "list at the / prefix")
    # snapshots outlive their source sandbox
    t.eq(s.delete("/v1/sandboxes/" + b).status, 204, "delete the source sandbox")
    t.eq(get_snap(s, id_b).json()["status"]["state"], "Ready", "snapshot outlives its source")
    r = restore(s, id_b)
    t.eq(r.status, 202, "restore after the source was deleted", r.body[:300])
    s.delete_all()


# ---------------------------------------------------------------- delete

def test_delete(s):
    sid = s.new()["id"]
    sh(s, sid, "echo d > /srv-del")
    snap_id = take(s, sid, "del", "snapshot to delete")
    if not snap_id:
        return
    r = restore(s, snap_id)
    t.eq(r.status, 202, "restore")
    t.is_error(s.delete("/v1/snapshots/" + snap_id), 409, "SNAPSHOT::IN_USE",
               "DELETE while a sandbox created from it is alive -> 409")
    t.eq(get_snap(s, snap_id).json()["status"]["state"], "Ready", "still Ready after the 409")
    if r.status == 202:
        t.eq(sh(s, r.json()["id"], "cat /srv-del"), (0, "d"), "the user still works")
        s.delete("/v1/sandboxes/" + r.json()["id"])
    r = s.delete("/v1/snapshots/" + snap_id)
    t.is_empty_ok(r, "DELETE -> 204 empty", status=204)
    t.is_error(get_snap(s, snap_id), 404, "SNAPSHOT::NOT_FOUND", "GET after delete -> 404")
    t.is_error(s.delete("/v1/snapshots/" + snap_id), 404, "SNAPSHOT::NOT_FOUND",
               "DELETE twice -> 404")
    t.is_error(restore(s, snap_id), 400, "SNAPSHOT::NOT_FOUND", "restore a deleted snapshot")
    t.ok(snap_id not in [i["id"] for i in list_snaps(s, pageSize=200).json()["items"]],
         "deleted snapshot not listed")
    t.eq(s.get_sbx(sid).json()["status"]["state"], "Running", "the source is unaffected")
    s.delete_all()


# ---------------------------------------------------------------- restart

def test_restart(s):
    sid = s.new()["id"]
    sh(s, sid, "echo survives > /srv-restart")
    snap_id = take(s, sid, "rs", "snapshot before restarts")
    if not snap_id:
        return
    s.delete_all()
    for how, sig in (("graceful", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
        s.kill(sig)
        s.start()
        g = get_snap(s, snap_id)
        t.eq((g.status, g.json().get("status", {}).get("state"), g.json().get("name")),
             (200, "Ready", "rs"), "%s restart: snapshot still Ready" % how)
        t.ok(snap_id in [i["id"] for i in list_snaps(s).json()["items"]],
             "%s restart: still listed" % how)
        r = restore(s, snap_id)
        t.eq(r.status, 202, "%s restart: restore works" % how, r.body[:300])
        if r.status == 202:
            t.eq(sh(s, r.json()["id"], "cat /srv-restart"), (0, "survives"),
                 "%s restart: restored file" % how)
        s.delete_all()
    t.is_empty_ok(s.delete("/v1/snapshots/" + snap_id), "delete after restarts", status=204)


def main():
    with Registry() as reg:
        extra = "[image]\ninsecure_registries = %s\n" % json.dumps([reg.addr])
        with Server(extra=extra, tmp_dir=scratch_base()) as s:
            t.run(test_create_and_restore_host, s, timeout=120)
            t.run(test_empty_body, s, timeout=60)
            if DYNAMIC_EXECD:
                t.skip("registry-image snapshot", "execd is dynamically linked (sanitizer "
                                                  "build): it cannot run in a busybox image")
            else:
                t.run(test_registry_image, s, reg, timeout=120)
            t.run(test_errors, s, timeout=60)
            t.run(test_list, s, timeout=120)
            t.run(test_delete, s, timeout=60)
            t.run(test_restart, s, timeout=120)


t.run(main, timeout=580)
t.done()
