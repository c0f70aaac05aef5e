"""Warm pools (docs/pools.md) against the real server: the /v1/pools routes and
their 400/404/409s, a pool filling to bufferMin, claims through POST /v1/sandboxes
with extensions.poolRef (env seen by the entrypoint and by later commands,
metadata, timeout, entrypoint; members hidden until claimed), concurrent claims
(20 against a pool of 20, 50 against a pool of 20), a restart with a pool in place
(the same members back, none lost, none leaked), a template roll-over, a deleted
pool releasing its idle members, and the network policy of a claim (nat).
Host image; network none except the nat case."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
NONET = '[network]\nmode = "none"\n'


def parse_iso(v):
    import datetime
    return datetime.datetime.strptime(v.replace("Z", "+0000"),
                                      "%Y-%m-%dT%H:%M:%S.%f%z" if "." in v else
                                      "%Y-%m-%dT%H:%M:%S%z").timestamp()


def cap(bmin, bmax, pmin, pmax):
    return {"bufferMin": bmin, "bufferMax": bmax, "poolMin": pmin, "poolMax": pmax}


def ours(**kw):
    tpl = {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"]}
    tpl.update(kw)
    return tpl


def pool(s, name):
    return s.get("/v1/pools/" + name).json()


def available(s, name):
    return pool(s, name)["status"]["available"]


def wait_available(s, name, n, timeout=60):
    return wait_for(lambda: available(s, name) >= n, timeout=timeout, interval=0.05)


def claim(s, name, **fields):
    fields.setdefault("extensions", {"poolRef": name})
    return s.create(**fields)


def run(s, sid, cmd):
    ev = s.execd(sid).sse("/command", json={"command": cmd}).events
    return stdout_lines(ev)


def nice_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[16])
    except (OSError, IndexError, ValueError):
        return None


def members_dirs(s):
    d = os.path.join(s.state_dir, "sandboxes")
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def listed_ids(s):
    return {i["id"] for i in s.list_all()}


def at_rest(s, name):
    """No member starting and the buffer full (or the refill failing): a
    member still starting when the pool goes would finish after the test's
    last check, and a server stopped then leaves it half-made."""
    p = pool(s, name)
    st, want = p["status"], p["capacitySpec"]["bufferMin"]
    return st.get("starting", 0) == 0 and (st["available"] >= want or st.get("lastError"))


def delete_pool_and_wait(s, name):
    t.ok(wait_for(lambda: at_rest(s, name), timeout=60, interval=0.05),
         "pool %s at rest before its delete" % name, pool(s, name)["status"])
    r = s.delete("/v1/pools/" + name)
    t.eq(r.status, 204, "DELETE pool %s -> 204" % name)
    keep = listed_ids(s)
    t.ok(wait_for(lambda: members_dirs(s) <= keep, timeout=60),
         "pool %s: its members' runtime state is gone" % name, members_dirs(s) - keep)


# ------------------------------------------------------------------ routes

def test_routes(s):
    bad = [
        ({}, "name"),
        ({"name": "Bad_Name", "template": ours(), "capacitySpec": cap(0, 1, 0, 1)}, "name"),
        ({"name": "p", "template": ours()}, "capacitySpec"),
        ({"name": "p", "template": ours(), "capacitySpec": cap(2, 1, 0, 3)}, "bufferMin"),
        ({"name": "p", "template": ours(), "capacitySpec": cap(0, 1, 3, 2)}, "poolMin"),
        ({"name": "p", "template": ours(), "capacitySpec": dict(cap(0, 1, 0, 1), x=1)},
         "capacitySpec.x"),
        ({"name": "p", "template": ours(), "capacitySpec": cap(0, -1, 0, 1)}, "bufferMax"),
        ({"name": "p", "capacitySpec": cap(0, 1, 0, 1)}, "template"),
        ({"name": "p", "template": ours(entrypoint="sh"), "capacitySpec": cap(0, 1, 0, 1)},
         "entrypoint"),
        ({"name": "p", "template": ours(timeout=60), "capacitySpec": cap(0, 1, 0, 1)},
         "template.timeout"),
        ({"name": "p", "template": {"spec": {"containers": [{"image": "host"}],
                                             "volumes": []}},
          "capacitySpec": cap(0, 1, 0, 1)}, "template.spec.volumes"),
        ({"name": "p", "template": {"spec": {"containers": [{"image": "host",
                                                             "ports": []}]}},
          "capacitySpec": cap(0, 1, 0, 1)}, "template.spec.containers[0].ports"),
        ({"name": "p", "template": {"spec": {"containers": [{"image": "host"}, {"image": "x"}]}},
          "capacitySpec": cap(0, 1, 0, 1)}, "exactly one container"),
        ({"name": "p", "template": {"spec": {"containers": [
            {"image": "host", "resources": {"requests": {"cpu": "1"}}}]}},
          "capacitySpec": cap(0, 1, 0, 1)}, "resources.requests"),
        ({"name": "p", "template": ours(), "capacitySpec": cap(0, 1, 0, 1), "extra": 1},
         "extra"),
    ]
    for body, field in bad:
        r = s.post("/v1/pools", json=body)
        t.is_error(r, 400, name="POST %s -> 400" % field)
        t.ok(field in r.json().get("message", ""), "400 names %s" % field, r.body[:300])
    t.eq(s.get("/v1/pools").json(), {"items": []}, "no pool created by bad input")
    r = s.post("/v1/pools", json={"name": "p", "template": ours(), "capacitySpec": cap(0, 1, 0, 2)})
    t.eq(r.status, 201, "POST /v1/pools -> 201", r.body[:300])
    j = r.json()
    t.eq((j["name"], j["capacitySpec"], j["status"]["revision"]),
         ("p", cap(0, 1, 0, 2), "1"), "PoolInfo: name, capacitySpec, revision")
    t.ok(iso_ok(j.get("createdAt")), "PoolInfo: createdAt", j)
    t.is_error(s.post("/v1/pools", json={"name": "p", "template": ours(),
                                         "capacitySpec": cap(0, 1, 0, 2)}),
               409, "POOL::ALREADY_EXISTS", "duplicate name -> 409")
    t.is_error(s.get("/v1/pools/nope"), 404, "POOL::NOT_FOUND", "GET unknown -> 404")
    t.is_error(s.req("PUT", "/v1/pools/nope", json={"capacitySpec": cap(0, 1, 0, 1)}), 404,
               "POOL::NOT_FOUND", "PUT unknown -> 404")
    t.is_error(s.delete("/v1/pools/nope"), 404, "POOL::NOT_FOUND", "DELETE unknown -> 404")
    t.is_error(s.req("PUT", "/v1/pools/p", json={"capacitySpec": cap(3, 1, 0, 1)}), 400, name="PUT bad")
    t.eq(pool(s, "p")["capacitySpec"], cap(0, 1, 0, 2), "a bad PUT changes nothing")
    r = s.req("PUT", "/pools/p", json={"capacitySpec": cap(0, 2, 0, 3)})
    t.eq((r.status, r.json().get("capacitySpec")), (200, cap(0, 2, 0, 3)), "PUT at / -> 200")
    t.eq([p["name"] for p in s.get("/v1/pools").json()["items"]], ["p"], "GET /v1/pools lists it")
    t.eq(s.get("/warmpools/p").status, 200, "also at /warmpools (upstream's newer path)")
    t.is_error(claim(s, "nope"), 400, "SANDBOX::POOL_NOT_FOUND", "claim from no pool -> 400")
    t.is_error(claim(s, "p", image={"uri": "busybox"}), 400, "SANDBOX::INVALID_PARAMETER",
               "claim with another image -> 400")
    delete_pool_and_wait(s, "p")
    t.eq(s.get("/v1/pools").json(), {"items": []}, "deleted")


# ----------------------------------------------------------------- claims

def test_claim_applies_request(s):
    r = s.post("/v1/pools", json={"name": "c", "template": ours(env={"TPL": "t1"},
                                                                  metadata={"tier": "pool"}),
                                  "capacitySpec": cap(2, 2, 0, 4)})
    t.eq(r.status, 201, "pool created")
    t.ok(wait_available(s, "c", 2), "pool fills to bufferMin", pool(s, "c"))
    t.eq(listed_ids(s), set(), "idle members are not listed")
    t.eq(pool(s, "c")["status"]["total"], 2, "status.total counts them")
    before = time.time()
    r = claim(s, "c", env={"FOO": "bar"}, metadata={"k": "v"}, timeout=300,
              entrypoint=["sh", "-c", "echo $FOO $TPL > /tmp/x; sleep 1000"])
    t.eq(r.status, 202, "claim -> 202", r.body[:300])
    sid = r.json()["id"]
    g = s.get_sbx(sid).json()
    t.eq(g["status"]["state"], "Running", "claimed sandbox Running")
    t.eq(g["metadata"], {"tier": "pool", "k": "v"}, "metadata: the template's under the request's")
    t.eq(g["entrypoint"], ["sh", "-c", "echo $FOO $TPL > /tmp/x; sleep 1000"], "entrypoint")
    created, expires = parse_iso(g["createdAt"]), parse_iso(g["expiresAt"])
    t.ok(created >= before - 1, "createdAt is the claim's time", (created, before))
    t.eq(round(expires - created), 300, "expiresAt = createdAt + the request's timeout")
    t.ok(wait_for(lambda: run(s, sid, "cat /tmp/x") == ["bar t1"], timeout=10),
         "the entrypoint ran with the request's env over the template's")
    t.eq(run(s, sid, "echo $FOO"), ["bar"], "later commands see the request's env")
    t.eq(run(s, sid, "echo ${OSB_EXECD_DEFER_ENTRYPOINT:-unset}"), ["unset"],
         "no pool-internal variable visible")
    t.eq(listed_ids(s), {sid}, "the claimed sandbox is listed, the members are not")
    t.ok(wait_available(s, "c", 2), "the pool refills", pool(s, "c"))
    mine = {p for p, cg in sandbox_processes(s.state_dir).items() if sid in cg}
    members = {p for p, cg in sandbox_processes(s.state_dir).items() if sid not in cg}
    t.ok(mine and all(nice_of(p) == 0 for p in mine),
         "the claimed sandbox runs at the normal priority", {p: nice_of(p) for p in mine})
    t.ok(members and all(nice_of(p) == 19 for p in members),
         "idle members wait at nice 19 (claims and creates come first)",
         {p: nice_of(p) for p in members})
    t.eq(pool(s, "c")["status"]["allocated"], 1, "status.allocated counts the claimed one")
    # The SDKs' keep-alive default: the member's own command goes on.
    r = claim(s, "c", env={"K": "1"})
    t.eq(r.status, 202, "keep-alive claim -> 202")
    t.eq(run(s, r.json()["id"], "echo $K $TPL"), ["1 t1"], "keep-alive claim: env")
    # An entrypoint that exits ends the sandbox, as a fresh one's does.
    r = claim(s, "c", entrypoint=["sh", "-c", "exit 3"])
    t.eq(r.status, 202, "claim with a short entrypoint -> 202")
    sid3 = r.json()["id"]
    t.ok(wait_for(lambda: s.get_sbx(sid3).json()["status"].get("message") ==
                  "entrypoint exited with code 3", timeout=10),
         "its end ends the sandbox, as a fresh one's", s.get_sbx(sid3).json())
    s.delete_all()
    delete_pool_and_wait(s, "c")


def test_pod_template(s):
    tpl = {"metadata": {"labels": {"app": "x"}},
           "spec": {"containers": [{"name": "main", "image": "host", "command": ["sleep"],
                                    "args": ["1000"], "env": [{"name": "A", "value": "b"}],
                                    "resources": {"limits": {"cpu": "500m",
                                                             "memory": "256Mi"}}}]}}
    r = s.post("/v1/pools", json={"name": "k", "template": tpl, "capacitySpec": cap(1, 1, 0, 2)})
    t.eq(r.status, 201, "PodTemplateSpec pool created", r.body[:300])
    t.ok(wait_available(s, "k", 1), "fills")
    r = claim(s, "k")
    t.eq(r.status, 202, "claim -> 202")
    sid = r.json()["id"]
    t.eq(run(s, sid, "echo $A"), ["b"], "env from the pod template")
    t.ok(any("sleep 1000" in l for l in run(s, sid, "ps -eo args")),
         "command + args run", run(s, sid, "ps -eo args"))
    t.eq(s.get_sbx(sid).json()["metadata"], {"app": "x"}, "labels become metadata")
    s.delete_all()
    delete_pool_and_wait(s, "k")


def concurrent_claims(s, name, n):
    out = [None] * n

    def one(i):
        out[i] = claim(s, name, http_timeout=90)
    th = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    return out


def test_concurrent(s):
    r = s.post("/v1/pools", json={"name": "z", "template": ours(),
                                  "capacitySpec": cap(20, 20, 0, 20)})
    t.eq(r.status, 201, "pool of 20")
    t.ok(wait_available(s, "z", 20, timeout=120), "pool fills to 20", pool(s, "z"))
    res = concurrent_claims(s, "z", 20)
    ok = [x for x in res if x.status == 202]
    t.eq(len(ok), 20, "20 concurrent claims -> 20 x 202", [x.body[:200] for x in res if
                                                            x.status != 202][:3])
    ids = {x.json()["id"] for x in ok}
    t.eq(len(ids), 20, "20 distinct sandboxes")
    t.eq(sum(s.execd(i).get("/ping").status == 200 for i in ids), 20, "every one answers execd")
    s.delete_all()
    t.ok(wait_available(s, "z", 20, timeout=120), "pool refills to 20")
    res = concurrent_claims(s, "z", 50)
    ok = [x for x in res if x.status == 202]
    t.eq(len(ok), 50, "50 concurrent claims against 20 -> 50 x 202 (queued while refilling)",
         [(x.status, x.body[:200]) for x in res if x.status != 202][:3])
    ids = {x.json()["id"] for x in ok}
    t.eq(len(ids), 50, "50 distinct sandboxes")
    t.eq(sum(s.execd(i).get("/ping").status == 200 for i in ids), 50, "every one answers execd")
    s.delete_all()
    delete_pool_and_wait(s, "z")


def test_batch_from_pool(s):
    """POST /v1/sandboxes/batch {count, poolRef}: every item a claim."""
    r = s.post("/v1/pools", json={"name": "bp", "template": ours(),
                                  "capacitySpec": cap(3, 3, 0, 3)})
    t.eq(r.status, 201, "pool bp of 3")
    t.ok(wait_available(s, "bp", 3, timeout=60), "pool bp fills to 3", pool(s, "bp"))
    r = s.post("/v1/sandboxes/batch", json={"count": 5, "poolRef": "bp"}, timeout=90)
    t.eq(r.status, 200, "batch of 5 from a pool of 3 -> 200", r.body[:300])
    items = r.json().get("items", []) if r.status == 200 else []
    ids = {i.get("id") for i in items if i.get("id")}
    t.eq((r.json().get("succeeded"), len(ids)) if r.status == 200 else None, (5, 5),
         "5 claims, 5 distinct sandboxes (2 waited for the refill)")
    t.ok(ids <= listed_ids(s), "the claimed sandboxes are listed")
    t.eq(sum(s.execd(i).get("/ping").status == 200 for i in ids), 5, "every one answers execd")
    r = s.post("/v1/sandboxes/batch", json={"count": 2, "poolRef": "nope"})
    t.ok(r.status == 200 and r.json().get("failed") == 2 and all(
        i.get("error", {}).get("code") == "SANDBOX::POOL_NOT_FOUND" for i in r.json()["items"]),
        "batch from an unknown pool: every item POOL_NOT_FOUND", r.body[:300])
    s.delete_all()
    delete_pool_and_wait(s, "bp")


def test_exhausted():
    with Server(extra=NONET, server="admission_wait_seconds = 1") as s:
        r = s.post("/v1/pools", json={"name": "e", "template": ours(),
                                      "capacitySpec": cap(0, 0, 0, 0)})
        t.eq(r.status, 201, "a pool that never fills")
        r = claim(s, "e")
        t.is_error(r, 429, "SANDBOX::POOL_EXHAUSTED", "claim waits admission_wait_seconds -> 429")
        t.eq(r.headers.get("retry-after"), "1", "with Retry-After")
        t.eq(listed_ids(s), set(), "nothing left behind")
        delete_pool_and_wait(s, "e")
        # A template whose image is not there: the refill fails and says why.
        r = s.post("/v1/pools", json={"name": "b", "template": ours(image={"uri": "no-such:1"}),
                                      "capacitySpec": cap(1, 1, 0, 1)})
        t.eq(r.status, 201, "a pool whose image is missing is accepted (it may be imported)")
        t.ok(wait_for(lambda: "no-such" in pool(s, "b")["status"].get("lastError", ""),
                      timeout=10), "status.lastError says why it does not fill", pool(s, "b"))
        t.eq(pool(s, "b")["status"]["available"], 0, "nothing available")
        delete_pool_and_wait(s, "b")


def test_disconnect_in_queue(s):
    import json
    import socket
    r = s.post("/v1/pools", json={"name": "q", "template": ours(),
                                  "capacitySpec": cap(0, 0, 0, 0)})
    t.eq(r.status, 201, "a pool that never fills")
    body = json.dumps({"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
                       "extensions": {"poolRef": "q"}}).encode()
    c = socket.create_connection(("127.0.0.1", s.port))
    c.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    t.ok(wait_for(lambda: pool(s, "q")["status"]["waiting"] == 1, timeout=10),
         "the claim waits in the pool's queue", pool(s, "q"))
    c.close()
    t.ok(wait_for(lambda: pool(s, "q")["status"]["waiting"] == 0, timeout=10),
         "a client that disconnects leaves the queue", pool(s, "q"))
    t.eq(listed_ids(s), set(), "nothing left behind")
    delete_pool_and_wait(s, "q")


def test_dead_member(s):
    r = s.post("/v1/pools", json={"name": "d", "template": ours(),
                                  "capacitySpec": cap(2, 2, 0, 2)})
    t.eq(r.status, 201, "pool")
    t.ok(wait_available(s, "d", 2), "fills")
    # Kill every process of one member: its execd no longer answers.
    procs = sandbox_processes(s.state_dir)
    victim = sorted(members_dirs(s))[0]
    pids = [p for p, cg in procs.items() if victim in cg]
    t.ok(pids, "found the member's processes", procs)
    for p in pids:
        try:
            os.kill(p, 9)
        except OSError:
            pass
    got = set()
    for _ in range(2):
        r = claim(s, "d")
        t.eq(r.status, 202, "claim -> 202 despite a dead member", r.body[:200])
        got.add(r.json()["id"])
        t.eq(s.execd(r.json()["id"]).get("/ping").status, 200, "the claimed one answers")
    t.ok(victim not in got, "the dead member was never handed out", (victim, got))
    s.delete_all()
    delete_pool_and_wait(s, "d")


# ----------------------------------------------------------------- restart

def test_restart(s):
    r = s.post("/v1/pools", json={"name": "r", "template": ours(env={"TPL": "r"}),
                                  "capacitySpec": cap(3, 3, 0, 3)})
    t.eq(r.status, 201, "pool")
    t.ok(wait_available(s, "r", 3), "fills to 3")
    before = members_dirs(s)
    cgs = len(sandbox_cgroups(s.state_dir))
    t.eq(len(before), 3, "3 members' runtime state dirs")
    s.kill()
    s.start()
    t.eq(available(s, "r"), 3, "after a SIGKILL restart: 3 available at once")
    t.eq(members_dirs(s), before, "the same members, none lost, none added")
    t.eq(len(sandbox_cgroups(s.state_dir)), cgs, "no cgroup leaked")
    r = claim(s, "r", env={"X": "y"})
    t.eq(r.status, 202, "claim after restart")
    t.ok(r.json()["id"] in before, "it is one of the re-adopted members")
    t.eq(run(s, r.json()["id"], "echo $X $TPL"), ["y r"], "its execd takes the claim")
    t.ok(wait_available(s, "r", 3), "refill resumes")
    s.delete_all()
    delete_pool_and_wait(s, "r")


def test_rollover(s):
    r = s.post("/v1/pools", json={"name": "o", "template": ours(env={"V": "1"}),
                                  "capacitySpec": cap(4, 4, 0, 4)})
    t.eq(r.status, 201, "pool")
    t.ok(wait_available(s, "o", 4), "fills to 4")
    old = members_dirs(s)
    r = s.req("PUT", "/v1/pools/o", json={"template": ours(env={"V": "2"}),
                                   "capacitySpec": cap(4, 4, 0, 4)})
    t.eq((r.status, r.json()["status"]["revision"]), (200, "2"), "PUT template -> revision 2")
    # poolMax = 4: at most a quarter (1) replaced at a time: 3 members or more
    # stay up (old idle ones, new ones starting or idle), never more than 4.
    seen = []

    def rolled():
        cur = members_dirs(s)
        seen.append(len(cur))
        return not (cur & old) and available(s, "o") == 4
    t.ok(wait_for(rolled, timeout=120, interval=0.02), "every old member replaced",
         pool(s, "o"))
    t.ok(min(seen) >= 3 and max(seen) <= 4, "roll-over bounded (3..4 members throughout)",
         seen[:60])
    r = claim(s, "o")
    t.eq(run(s, r.json()["id"], "echo $V"), ["2"], "a claim gets the new template")
    r = s.req("PUT", "/v1/pools/o", json={"capacitySpec": cap(4, 4, 0, 4)})
    t.eq(r.json()["status"]["revision"], "2", "PUT without template: same revision")
    s.delete_all()
    delete_pool_and_wait(s, "o")


def test_delete_releases(s):
    r = s.post("/v1/pools", json={"name": "x", "template": ours(),
                                  "capacitySpec": cap(2, 2, 0, 3)})
    t.eq(r.status, 201, "pool")
    t.ok(wait_available(s, "x", 2), "fills")
    r = claim(s, "x")
    sid = r.json()["id"]
    delete_pool_and_wait(s, "x")
    t.eq(members_dirs(s), {sid}, "only the claimed sandbox remains")
    t.eq(s.execd(sid).get("/ping").status, 200, "and it still answers")
    t.is_error(claim(s, "x"), 400, "SANDBOX::POOL_NOT_FOUND", "claims from it -> 400")
    s.delete_all()


# ---------------------------------------------------------------- network

class Egress(Client):
    """The /policy API at the endpoint the server returns for port 18080."""

    def __init__(self, s, sid):
        self.ep = s.get("/v1/sandboxes/%s/endpoints/18080" % sid).json()
        hostport, _, path = self.ep["endpoint"].partition("/")
        host, _, port = hostport.rpartition(":")
        Client.__init__(self, host, int(port))
        self.prefix = "/" + path
        self.token = self.ep.get("headers", {}).get("OPENSANDBOX-EGRESS-AUTH")

    def _auth_headers(self):
        return {"OPENSANDBOX-EGRESS-AUTH": self.token} if self.token else {}

    def req(self, method, path, **kw):
        return Client.req(self, method, self.prefix + path, **kw)


def test_network_policy():
    with Server() as s:  # nat
        r = s.post("/v1/pools", json={"name": "n", "template": ours(),
                                      "capacitySpec": cap(1, 1, 0, 1)})
        t.eq(r.status, 201, "pool on a nat server")
        t.ok(wait_available(s, "n", 1), "fills", pool(s, "n"))
        pol = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "example.com"}]}
        r = claim(s, "n", networkPolicy=pol)
        t.eq(r.status, 202, "claim with a networkPolicy", r.body[:300])
        sid = r.json()["id"]
        r = Egress(s, sid).get("/policy")
        got = r.json().get("policy", {}) if r.status == 200 else r.body[:300]
        t.eq(got, pol, "the claim's policy is in force on the member's slot")
        s.delete_all()
        delete_pool_and_wait(s, "n")


def main():
    with Server(extra=NONET) as s:
        t.run(test_routes, s, timeout=120)
        t.run(test_claim_applies_request, s, timeout=120)
        t.run(test_pod_template, s, timeout=60)
        t.run(test_disconnect_in_queue, s, timeout=60)
        t.run(test_dead_member, s, timeout=90)
        t.run(test_concurrent, s, timeout=400)
        t.run(test_batch_from_pool, s, timeout=120)
        t.run(test_restart, s, timeout=120)
        t.run(test_rollover, s, timeout=180)
        t.run(test_delete_releases, s, timeout=60)
    t.run(test_exhausted, timeout=60)
    t.run(test_network_policy, timeout=90)


t.run(main, timeout=1200)
t.done()
