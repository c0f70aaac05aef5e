"""Lifecycle server bad input (issue #3 "Bad input"): invalid JSON, wrong types, missing
required fields, out-of-range timeout, bad quantities, unknown image, unknown sandbox,
malformed metadata filter. Each gets the documented status with a {code,message} that
names the field, and nothing is half-created. Ends with a storm of random bad requests."""
import json
import os
import random
import socket
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BAD = "SANDBOX::INVALID_PARAMETER"
GOOD = {"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600,
        "resourceLimits": {"cpu": "1", "memory": "512Mi"}}


def with_(**kw):
    b = json.loads(json.dumps(GOOD))
    for k, v in kw.items():
        if v is Ellipsis:
            b.pop(k, None)
        else:
            b[k] = v
    return b


# (name, body, status, code, a word the message must contain)
CASES = [
    ("missing image", with_(image=...), 400, BAD, "image.uri"),
    ("image null", with_(image=None), 400, BAD, "image.uri"),
    ("image a string", with_(image="host"), 400, BAD, "image"),
    ("image.uri missing", with_(image={}), 400, BAD, "image.uri"),
    ("image.uri blank", with_(image={"uri": "  "}), 400, BAD, "image.uri"),
    ("image.uri a number", with_(image={"uri": 5}), 400, BAD, "image.uri"),
    ("unknown image", with_(image={"uri": "ghost:latest"}), 400, "SANDBOX::IMAGE_NOT_FOUND",
     "ghost:latest"),
    ("missing entrypoint", with_(entrypoint=...), 400, "SANDBOX::INVALID_ENTRYPOINT",
     "entrypoint"),
    ("entrypoint empty", with_(entrypoint=[]), 400, "SANDBOX::INVALID_ENTRYPOINT", "entrypoint"),
    ("entrypoint a string", with_(entrypoint="tail -f /dev/null"), 400,
     "SANDBOX::INVALID_ENTRYPOINT", "entrypoint"),
    ("entrypoint with a number", with_(entrypoint=["sleep", 5]), 400,
     "SANDBOX::INVALID_ENTRYPOINT", "entrypoint[1]"),
    ("entrypoint[0] empty", with_(entrypoint=[""]), 400, "SANDBOX::INVALID_ENTRYPOINT",
     "entrypoint[0]"),
    ("cpu lots", with_(resourceLimits={"cpu": "lots"}), 400, BAD, "resourceLimits.cpu"),
    ("cpu 0", with_(resourceLimits={"cpu": "0"}), 400, BAD, "resourceLimits.cpu"),
    ("cpu negative", with_(resourceLimits={"cpu": "-1"}), 400, BAD, "resourceLimits.cpu"),
    ("cpu a number", with_(resourceLimits={"cpu": 1}), 400, BAD, "resourceLimits.cpu"),
    ("memory bad unit", with_(resourceLimits={"memory": "2GB"}), 400, BAD,
     "resourceLimits.memory"),
    ("memory words", with_(resourceLimits={"memory": "a lot"}), 400, BAD,
     "resourceLimits.memory"),
    ("memory tiny", with_(resourceLimits={"memory": "100m"}), 400, BAD, "resourceLimits.memory"),
    ("memory 1Ki", with_(resourceLimits={"memory": "1Ki"}), 400, BAD, "resourceLimits.memory"),
    ("gpu", with_(resourceLimits={"gpu": "1"}), 400, BAD, "resourceLimits.gpu"),
    ("pids bad", with_(resourceLimits={"pids": "many"}), 400, BAD, "resourceLimits.pids"),
    ("resourceLimits a list", with_(resourceLimits=["1"]), 400, BAD, "resourceLimits"),
    ("timeout 59", with_(timeout=59), 400, BAD, "timeout"),
    ("timeout 0", with_(timeout=0), 400, BAD, "timeout"),
    ("timeout negative", with_(timeout=-5), 400, BAD, "timeout"),
    ("timeout a string", with_(timeout="600"), 400, BAD, "timeout"),
    ("timeout a float", with_(timeout=600.5), 400, BAD, "timeout"),
    ("timeout huge", with_(timeout=10 ** 15), 400, BAD, "timeout"),
    ("timeout a bool", with_(timeout=True), 400, BAD, "timeout"),
    ("env a list", with_(env=["A=1"]), 400, BAD, "env"),
    ("env value a number", with_(env={"A": 1}), 400, BAD, "env.A"),
    ("env name with =", with_(env={"A=B": "1"}), 400, BAD, "env"),
    ("env empty name", with_(env={"": "1"}), 400, BAD, "env"),
    ("metadata a list", with_(metadata=["a"]), 400, "SANDBOX::INVALID_METADATA_LABEL",
     "metadata"),
    ("metadata value a number", with_(metadata={"a": 1}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "metadata.a"),
    ("metadata reserved prefix", with_(metadata={"opensandbox.io/id": "x"}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "opensandbox.io/"),
    ("metadata bad key", with_(metadata={"bad key": "x"}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "bad key"),
    ("metadata bad prefix", with_(metadata={"Upper.Case/k": "x"}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "Upper.Case/k"),
    ("metadata two slashes", with_(metadata={"a/b/c": "x"}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "a/b/c"),
    ("metadata long value", with_(metadata={"k": "v" * 64}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "k"),
    ("metadata value with space", with_(metadata={"k": "a b"}), 400,
     "SANDBOX::INVALID_METADATA_LABEL", "k"),
    ("platform bad os", with_(platform={"os": "plan9", "arch": "amd64"}), 400, BAD,
     "platform.os"),
    ("platform windows", with_(platform={"os": "windows", "arch": "amd64"}), 400, BAD,
     "platform.os"),
    ("platform bad arch", with_(platform={"os": "linux", "arch": "mips"}), 400, BAD,
     "platform.arch"),
    ("platform missing arch", with_(platform={"os": "linux"}), 400, BAD, "platform.arch"),
    ("platform a string", with_(platform="linux/amd64"), 400, BAD, "platform"),
    ("secureAccess true", with_(secureAccess=True), 400, BAD, "secureAccess"),
    ("secureAccess a string", with_(secureAccess="yes"), 400, BAD, "secureAccess"),
    ("snapshotId unknown", with_(image=..., snapshotId="snap-1"), 400, "SNAPSHOT::NOT_FOUND",
     "snap-1"),
    ("snapshotId not a string", with_(image=..., snapshotId=7), 400, BAD, "snapshotId"),
    ("image and snapshotId", with_(snapshotId="snap-1"), 400, BAD, "snapshotId"),
    ("host volume, none allowed", with_(volumes=[{"name": "v", "mountPath": "/data",
                                                  "host": {"path": "/tmp"}}]),
     400, "VOLUME::HOST_PATH_NOT_ALLOWED", "volumes[0].host.path"),
    ("volume without a backend", with_(volumes=[{"name": "v", "mountPath": "/data"}]),
     400, BAD, "volumes[0]"),
    ("ossfs volume", with_(volumes=[{"name": "v", "mountPath": "/data", "ossfs": {
        "bucket": "bkt", "endpoint": "e", "accessKeyId": "i", "accessKeySecret": "s"}}]),
     400, "VOLUME::UNSUPPORTED_BACKEND", "ossfs"),
    ("volumes not a list", with_(volumes={"name": "v"}), 400, BAD, "volumes"),
    ("networkPolicy not an object", with_(networkPolicy="deny"), 400, BAD, "networkPolicy"),
    ("networkPolicy bad defaultAction", with_(networkPolicy={"defaultAction": "maybe"}), 400,
     BAD, "networkPolicy"),
    ("networkPolicy empty target",
     with_(networkPolicy={"egress": [{"action": "allow", "target": ""}]}), 400, BAD,
     "egress[0].target"),
    ("networkPolicy bad action",
     with_(networkPolicy={"egress": [{"action": "maybe", "target": "a.com"}]}), 400, BAD,
     "networkPolicy"),
    ("networkPolicy egress not a list", with_(networkPolicy={"egress": {}}), 400, BAD,
     "networkPolicy"),
    ("credentialProxy without networkPolicy", with_(credentialProxy={"enabled": True}), 400, BAD,
     "networkPolicy"),
    ("credentialProxy.enabled a string", with_(credentialProxy={"enabled": "yes"}), 400, BAD,
     "credentialProxy.enabled"),
    ("extensions poolRef of no pool", with_(extensions={"poolRef": "pool-a"}), 400,
     "SANDBOX::POOL_NOT_FOUND", "pool-a"),
    ("extensions poolRef not a name", with_(extensions={"poolRef": "Pool A"}), 400, BAD,
     "extensions.poolRef"),
    ("extensions value a number", with_(extensions={"x": 1}), 400, BAD, "extensions.x"),
    ("renew extension out of range", with_(extensions={"access.renew.extend.seconds": "10"}),
     400, BAD, "access.renew.extend.seconds"),
]

ACCEPTED = [
    ("SDK defaults (JS)", with_(env={}, metadata={}, extensions={}, secureAccess=False)),
    ("Python SDK manual cleanup", with_(timeout=None, secureAccess=False)),
    ("unknown fields ignored", with_(resourceRequests={"cpu": "1"}, somethingNew=[1, 2])),
    ("credentialProxy disabled, empty volumes", with_(credentialProxy={"enabled": False},
                                                      volumes=[])),
    ("quantities", with_(resourceLimits={"cpu": "500m", "memory": "1.5Gi",
                                         "ephemeral-storage": "256Mi", "pids": "128"})),
    ("plain-byte memory, decimal cpu", with_(resourceLimits={"cpu": "2.5", "memory": "1G"})),
    ("no resourceLimits", with_(resourceLimits=...)),
    ("renew extension", with_(extensions={"access.renew.extend.seconds": "600"})),
    ("image.auth ignored", with_(image={"uri": "host", "auth": {"username": "u",
                                                                "password": "p"}})),
]


def nothing_created(s, name):
    t.eq(s.list_all(), [], "%s: nothing created" % name)
    sdir = os.path.join(s.state_dir, "sandboxes")
    t.eq(os.listdir(sdir) if os.path.isdir(sdir) else [], [], "%s: no state dirs" % name)
    t.eq(sandbox_processes(s.state_dir), {}, "%s: no sandbox processes" % name)


def test_create_cases(s):
    for name, body, status, code, word in CASES:
        r = s.post("/v1/sandboxes", json=body)
        if t.is_error(r, status, code, "%s -> %d %s" % (name, status, code)):
            msg = r.json()["message"]
            t.ok(word in msg, "%s: message names %r" % (name, word), msg)
    nothing_created(s, "rejected creates")


def test_body_shapes(s):
    for name, body in (("invalid JSON", b'{"image": '), ("empty body", b""),
                       ("a JSON array", b"[]"), ("a JSON string", b'"x"'), ("null", b"null"),
                       ("trailing garbage", b'{"image":{"uri":"host"}} x'),
                       ("duplicate keys", b'{"timeout": 60, "timeout": 61}'),
                       ("deep nesting", b"[" * 5000 + b"]" * 5000),
                       ("invalid UTF-8", b'{"image":{"uri":"\xff\xfe"}}'),
                       ("NUL escape", b'{"image":{"uri":"ho\\u0000st"},"entrypoint":["x"]}')):
        r = s.post("/v1/sandboxes", body=body, headers={"Content-Type": "application/json"})
        t.is_error(r, 400, BAD, "%s -> 400" % name)
    r = s.post("/v1/sandboxes", body=b"x" * (17 << 20),
               headers={"Content-Type": "application/json"})
    t.eq(r.status, 413, "17 MiB body -> 413")
    nothing_created(s, "bad bodies")


def test_accepted(s):
    for name, body in ACCEPTED:
        r = s.post("/v1/sandboxes", json=body)
        t.eq(r.status, 202, "accepted: %s" % name)
        if r.status == 202:
            s.delete("/v1/sandboxes/" + r.json()["id"])
    nothing_created(s, "accepted then deleted")


def test_unknown_sandbox(s):
    sid = str(uuid.uuid4())
    for m, p, body in (("GET", "/v1/sandboxes/%s", None), ("DELETE", "/v1/sandboxes/%s", None),
                       ("PATCH", "/v1/sandboxes/%s/metadata", {"a": "b"}),
                       ("POST", "/v1/sandboxes/%s/pause", None),
                       ("POST", "/v1/sandboxes/%s/resume", None),
                       ("POST", "/v1/sandboxes/%s/renew-expiration",
                        {"expiresAt": "2099-01-01T00:00:00Z"}),
                       ("GET", "/v1/sandboxes/%s/endpoints/44772", None),
                       ("GET", "/v1/sandboxes/%s/diagnostics/logs?scope=all", None),
                       ("GET", "/v1/sandboxes/%s/diagnostics/events?scope=all", None),
                       ("GET", "/v1/sandboxes/%s/proxy/44772/ping", None),
                       ("GET", "/sandboxes/%s", None)):
        r = s.req(m, p % sid, json=body)
        if t.is_error(r, 404, "SANDBOX::NOT_FOUND", "%s %s unknown -> 404" % (m, p)):
            t.eq(r.json()["message"], "Sandbox %s not found." % sid, "%s %s: message" % (m, p))
    r = s.get("/v1/sandboxes/%2e%2e")
    t.is_error(r, 404, "SANDBOX::NOT_FOUND", "odd id -> 404")


def test_list_params(s):
    for params, code in (({"page": "abc"}, BAD), ({"pageSize": "1e3"}, BAD),
                         ({"pageSize": 10 ** 30}, BAD), ({"page": ""}, BAD),
                         ({"metadata": "novalue"}, "INVALID_METADATA_FORMAT"),
                         ({"metadata": "a=1&b"}, "INVALID_METADATA_FORMAT"),
                         ({"metadata": "&"}, "INVALID_METADATA_FORMAT"),
                         ({"metadata": "a%ZZ=1"}, "INVALID_METADATA_FORMAT")):
        r = s.get(qs("/v1/sandboxes", params))
        t.is_error(r, 400, code, "list %r -> 400 %s" % (params, code))
    r = s.get("/v1/sandboxes?state=%ZZ")
    t.eq(r.status, 400, "undecodable query -> 400")


def storm_body(rng):
    pick = rng.random()
    if pick < 0.3:
        b = with_()
        k = rng.choice(list(b) + ["metadata", "env", "platform", "volumes", "networkPolicy"])
        b[k] = rng.choice([None, 0, -1, 1.5, "", "x" * 300, [], {}, [None], {"": None},
                           {"cpu": "lots"}, True, ["\u2603"]])
        if b.get("image") in (None, 0, -1, 1.5, "", [], {}, True) or k == "entrypoint":
            pass
        return json.dumps(b).encode()
    if pick < 0.6:
        raw = bytearray(json.dumps(with_()).encode())
        for _ in range(rng.randint(1, 5)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))


def test_storm(s):
    """Random bad requests from 8 threads: every answer is a JSON 4xx or 501 (a feature
    not implemented yet), or a 202 when a mutation happens to be valid, the server stays up, nothing is half-created."""
    bad = []
    created = []
    lock = threading.Lock()

    def worker(seed):
        rng = random.Random(seed)
        for i in range(60):
            body = storm_body(rng)
            m, p = rng.choice([("POST", "/v1/sandboxes"), ("POST", "/sandboxes"),
                               ("PATCH", "/v1/sandboxes/%s/metadata" % uuid.uuid4()),
                               ("POST", "/v1/sandboxes/%s/renew-expiration" % uuid.uuid4()),
                               ("GET", "/v1/sandboxes?metadata=%s" % rng.choice(
                                   ["a", "%25", "a=b&&", "=", "a=%zz"]))])
            try:
                r = s.req(m, p, body=body, headers={"Content-Type": "application/json"})
            except OSError as e:
                with lock:
                    bad.append((m, p, body[:80], repr(e)))
                continue
            if r.status == 202 and m == "POST":
                with lock:
                    created.append(r.json()["id"])
                continue
            ok = 400 <= r.status < 500 or r.status == 501 or (m == "GET" and r.status == 200)
            if ok and r.status != 200:
                try:
                    j = r.json()
                    ok = isinstance(j.get("code"), str) and isinstance(j.get("message"), str)
                except ValueError:
                    ok = r.status == 413
            if not ok:
                with lock:
                    bad.append((m, p, body[:80], r.status, r.body[:200]))

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    t.eq(bad, [], "every storm request answered with a JSON 4xx/501")
    t.diag("storm: 480 requests, %d happened to be valid creates" % len(created))
    for sid in created:
        s.delete("/v1/sandboxes/" + sid)
    t.eq(s.get("/health").status, 200, "server alive after the storm")
    nothing_created(s, "after the storm")
    # Malformed HTTP on raw sockets.
    for raw in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                b"POST /v1/sandboxes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                b"GET /v1/sandboxes HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n"):
        out = s.raw(raw, timeout=2)
        t.ok(out.startswith(b"HTTP/1.1 4"), "malformed HTTP %r -> 4xx" % raw[:30], out[:100])
    t.eq(s.get("/health").status, 200, "server alive after malformed HTTP")


def main():
    with Server(api_key="storm-key", min_timeout=60) as s:
        t.run(test_create_cases, s)
        t.run(test_body_shapes, s)
        t.run(test_accepted, s)
        t.run(test_unknown_sandbox, s)
        t.run(test_list_params, s)
        t.run(test_storm, s, timeout=200)


t.run(main, timeout=400)
t.done()
