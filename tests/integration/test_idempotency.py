"""Idempotent creates (docs/server.md "Idempotent creates"): a create with an
Idempotency-Key header (or extensions.requestId) answers with the same sandbox
when retried, never a second one, also while the first is in flight and after a
restart; the same key with another body is a 409; a bad key is a 400; an error
is replayed as it was; a deleted sandbox's create is replayed as it was
answered (its id then gives 404), and nothing new is made."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
H = "Idempotency-Key"


def create(s, key=None, **fields):
    return s.create(headers={H: key} if key else None, **fields)


def count(s):
    return len(s.list_all())


def test_same_key(s):
    r1 = create(s, "k-same", metadata={"a": "1"})
    t.eq(r1.status, 202, "first create", r1)
    r2 = create(s, "k-same", metadata={"a": "1"})
    t.eq(r2.status, 202, "retry", r2)
    t.eq(r2.json()["id"], r1.json()["id"], "the same sandbox")
    t.eq(r2.headers.get("idempotent-replayed"), "true", "marked as a replay")
    t.eq(count(s), 1, "one sandbox")
    r3 = create(s, "k-same", metadata={"a": "2"})
    t.is_error(r3, 409, "SANDBOX::IDEMPOTENCY_KEY_REUSED", "another body -> 409")
    t.eq(count(s), 1, "still one sandbox")
    r4 = create(s, "k-other", metadata={"a": "1"})
    t.ok(r4.status == 202 and r4.json()["id"] != r1.json()["id"], "another key: another sandbox")
    s.delete_all()


def test_concurrent(s):
    out = []

    def one():
        out.append(create(s, "k-conc", http_timeout=120))

    ths = [threading.Thread(target=one) for _ in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(120)
    t.eq([r.status for r in out], [202] * 6, "6 concurrent creates, one key: all 202",
         [r.body[:200] for r in out])
    t.eq(len({r.json()["id"] for r in out if r.status == 202}), 1, "one id")
    t.eq(count(s), 1, "one sandbox")
    s.delete_all()


def test_request_id(s):
    r1 = s.create(extensions={"requestId": "k-body"})
    t.eq(r1.status, 202, "key in extensions.requestId", r1)
    r2 = s.create(extensions={"requestId": "k-body"})
    t.eq(r2.json().get("id"), r1.json()["id"], "retry: the same sandbox")
    r3 = create(s, "k-body")
    t.eq(r3.json().get("id"), r1.json()["id"],
         "the same key as a header, same body otherwise: the same sandbox")
    r4 = s.create(headers={H: "k-x"}, extensions={"requestId": "k-y"})
    t.is_error(r4, 400, "SANDBOX::INVALID_PARAMETER", "header and requestId differ -> 400")
    t.eq(count(s), 1, "one sandbox")
    s.delete_all()


def test_bad_keys(s):
    for key, name in [("k" * 256, "256 characters"), ("caf\u00e9", "not ASCII"),
                      ("a\tb", "a tab")]:
        # the header for what an HTTP client sends as is, the body field for the rest
        r = create(s, key) if key.isascii() and "\t" not in key else \
            s.create(extensions={"requestId": key})
        t.is_error(r, 400, "SANDBOX::INVALID_PARAMETER", "key of %s -> 400" % name)
    t.eq(create(s, "k" * 255).status, 202, "255 characters are fine")
    t.eq(count(s), 1, "only the good one made a sandbox")
    s.delete_all()


def test_error_replayed(s):
    r1 = create(s, "k-err", image={"uri": "no-such-image:1"})
    t.is_error(r1, 400, "SANDBOX::IMAGE_NOT_FOUND", "a failing create")
    r2 = create(s, "k-err", image={"uri": "no-such-image:1"})
    t.is_error(r2, 400, "SANDBOX::IMAGE_NOT_FOUND", "its retry: the same error")
    t.eq(r2.headers.get("idempotent-replayed"), "true", "replayed")
    t.eq(r2.json()["message"], r1.json()["message"], "the same message")


def test_deleted(s):
    r1 = create(s, "k-del")
    sid = r1.json()["id"]
    t.eq(s.delete("/v1/sandboxes/" + sid).status, 204, "delete it")
    r2 = create(s, "k-del")
    t.eq((r2.status, r2.json().get("id")), (202, sid), "the original answer again")
    t.eq(count(s), 0, "no new sandbox")
    t.eq(s.get_sbx(sid).status, 404, "its id is gone")


def test_restart(s):
    r1 = create(s, "k-restart", metadata={"r": "1"})
    t.eq(r1.status, 202, "create", r1)
    s.restart()
    r2 = create(s, "k-restart", metadata={"r": "1"})
    t.eq((r2.status, r2.json().get("id")), (202, r1.json()["id"]),
         "after a restart: the same sandbox")
    t.eq(count(s), 1, "one sandbox")
    t.is_error(create(s, "k-restart", metadata={"r": "2"}), 409,
               "SANDBOX::IDEMPOTENCY_KEY_REUSED", "another body after the restart -> 409")
    s.delete_all()


def main():
    with Server(extra='[network]\nmode = "none"') as s:
        t.run(test_same_key, s, timeout=60)
        t.run(test_concurrent, s, timeout=180)
        t.run(test_request_id, s, timeout=60)
        t.run(test_bad_keys, s, timeout=60)
        t.run(test_error_replayed, s, timeout=60)
        t.run(test_deleted, s, timeout=60)
        t.run(test_restart, s, timeout=60)


t.run(main, timeout=600)
t.done()
