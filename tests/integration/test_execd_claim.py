"""execd's deferred entrypoint (src/execd/claim.c, docs/execd.md): with
OSB_EXECD_DEFER_ENTRYPOINT=1 it serves but runs no entrypoint until
POST /_osb/claim; the claim's env reaches the entrypoint and later commands;
the entrypoint is the one of the claim (or of the command line); the claim is
token-protected, checked before anything changes, and accepted once. The
variable itself is not passed on."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: E402,F403

t = TAP()
DEFER = {"OSB_EXECD_DEFER_ENTRYPOINT": "1"}


def out(x, cmd):
    return stdout_lines(x.sse("/command", json={"command": cmd}).events)


def test_claim_starts_entrypoint():
    d = tempfile.mkdtemp()
    mark = os.path.join(d, "ran")
    with Execd(args=["--", "sh", "-c", "echo boot > %s; sleep 100" % mark], env=DEFER,
               token="tok") as x:
        t.eq(x.get("/ping").status, 200, "a deferred execd answers /ping")
        t.ok(not os.path.exists(mark), "no entrypoint runs before the claim")
        t.eq(out(x, "echo ${OSB_EXECD_DEFER_ENTRYPOINT:-unset}"), ["unset"],
             "the variable is not passed on")
        bad = [b"[]", b'{"env": []}', b'{"env": {"A=B": "x"}}', b'{"entrypoint": []}',
               b'{"entrypoint": [1]}', b'{"keepRunning": "yes"}', b"{"]
        for body in bad:
            r = x.post("/_osb/claim", body=body, headers={"Content-Type": "application/json"})
            t.eq(r.status, 400, "claim %s -> 400" % body.decode())
        t.eq(x.post("/_osb/claim", json={}, headers={"X-EXECD-ACCESS-TOKEN": "wrong"}).status,
             401, "the claim needs the token")
        t.ok(not os.path.exists(mark), "bad claims started nothing")
        r = x.post("/_osb/claim", json={"env": {"FOO": "bar"},
                                         "entrypoint": ["sh", "-c", "echo $FOO > %s; sleep 100"
                                                        % mark]})
        t.eq(r.status, 200, "claim -> 200")
        t.ok(wait_for(lambda: os.path.exists(mark) and open(mark).read() == "bar\n"),
             "the claim's entrypoint ran with the claim's env",
             open(mark).read() if os.path.exists(mark) else None)
        t.eq(out(x, "echo $FOO"), ["bar"], "later commands see the claim's env")
        t.eq(x.post("/_osb/claim", json={}).status, 409, "a second claim -> 409")


def test_claim_boot_entrypoint():
    d = tempfile.mkdtemp()
    mark = os.path.join(d, "ran")
    with Execd(args=["--", "sh", "-c", "echo $X > %s; sleep 100" % mark], env=DEFER) as x:
        t.eq(x.post("/_osb/claim", json={"env": {"X": "y"}, "keepRunning": True}).status, 200,
             "claim without entrypoint -> 200")
        t.ok(wait_for(lambda: os.path.exists(mark) and open(mark).read() == "y\n"),
             "the command line's entrypoint runs, with the claim's env")


def test_not_deferred():
    with Execd(args=["--", "sleep", "100"]) as x:
        t.eq(x.post("/_osb/claim", json={}).status, 404, "without the variable there is no claim")


t.run(test_claim_starts_entrypoint, timeout=30)
t.run(test_claim_boot_entrypoint, timeout=30)
t.run(test_not_deferred, timeout=30)
t.done()
