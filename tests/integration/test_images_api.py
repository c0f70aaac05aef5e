#!/usr/bin/python3
"""The image store over HTTP (POST /v1/images/pull, GET /v1/images,
DELETE /v1/images/{name}) and `osb image pull|list|rm` on top of it, against
a registry on loopback: a pull lands in the store, a sandbox starts from it,
an image in use cannot be removed, bad bodies and unknown images get
precise errors, and a server with pull_policy "never" refuses pulls."""
import json
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403
from registrylib import *  # noqa: E402,F403

t = TAP()
OSB = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "osb")


def osb(s, *args):
    env = dict(os.environ, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
               OPEN_SANDBOX_API_KEY=s.api_key, HOME=s.tmp)
    return subprocess.run([OSB] + list(args), env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_pull_list_rm(t, s, reg):
    ref = "%s/test/bb:1" % reg.addr
    r = osb(s, "image", "pull", ref, "-o", "json")
    rec = json.loads(r.stdout) if r.returncode == 0 else {}
    t.ok(r.returncode == 0 and rec.get("digest", "").startswith("sha256:") and rec.get("size", 0) > 0,
         "osb image pull: the record of the pulled image", r.stdout + r.stderr)
    name = rec.get("name", ref)
    r = osb(s, "image", "list", "-o", "json")
    names = [x["name"] for x in json.loads(r.stdout)["items"]] if r.returncode == 0 else []
    t.ok("host" in names and name in names, "image list shows it (and the built-in host)", names)
    r = s.create(image={"uri": ref})
    t.eq(r.status, 202, "a sandbox starts from the pulled image")
    sid = r.json().get("id") if r.status == 202 else None
    r = osb(s, "image", "rm", ref)
    t.ok(r.returncode == 1 and "IMAGE::IN_USE" in r.stderr and "HTTP 409" in r.stderr,
         "rm of an image in use: 409 IMAGE::IN_USE", r.stderr)
    if sid:
        s.req("DELETE", "/v1/sandboxes/" + sid)
    r = osb(s, "image", "rm", ref)
    t.ok(r.returncode == 0, "rm once unused", r.stderr)
    r = s.req("DELETE", "/v1/images/" + urllib.parse.quote(name, safe=""))
    t.is_error(r, 404, "IMAGE::NOT_FOUND", "rm again: 404")
    r = osb(s, "image", "list", "-o", "json")
    t.ok(name not in [x["name"] for x in json.loads(r.stdout)["items"]], "gone from the list")
    r = s.req("DELETE", "/v1/images/host")
    t.is_error(r, 409, "IMAGE::IN_USE", "the built-in image stays")


def test_bad_input(t, s, reg):
    for body, why in ((b"{", "not JSON"), (b"[]", "not an object"), (b"{}", "no image"),
                      (b'{"image": 5}', "image not a string"), (b'{"image": ""}', "empty image"),
                      (b'{"image": "a", "extra": 1}', "unknown field"),
                      (b'{"image": "a", "auth": {"username": "u"}}', "auth without password")):
        r = s.req("POST", "/v1/images/pull", body=body,
                  headers={"Content-Type": "application/json"})
        t.ok(r.status == 400 and r.json().get("code") in ("IMAGE::INVALID_PARAMETER",
                                                          "SANDBOX::INVALID_PARAMETER"),
             "pull with %s: 400" % why, (r.status, r.text[:200]))
    r = s.req("POST", "/v1/images/pull", json={"image": "%s/test/absent:1" % reg.addr})
    t.ok(r.status == 400 and r.json().get("code") == "SANDBOX::IMAGE_NOT_FOUND",
         "pull of an absent image: 400 SANDBOX::IMAGE_NOT_FOUND", r.text[:300])
    r = s.post("/v1/images/pull", json={"image": "x"}, headers={"OPEN-SANDBOX-API-KEY": ""})
    t.eq(r.status, 401, "no API key: 401")


def test_never(t):
    with Server(api_key="img-never", extra='[image]\npull_policy = "never"\n') as s:
        r = osb(s, "image", "pull", "127.0.0.1:9/x:1")
        t.ok(r.returncode == 1 and "IMAGE::PULL_DISABLED" in r.stderr and "never" in r.stderr,
             "pull_policy never: pulls refused, saying why", r.stderr)


def main():
    with Registry() as reg:
        reg.push_image("test/bb", "1", [busybox_layer()])
        extra = "[image]\ninsecure_registries = %s\n" % json.dumps([reg.addr])
        with Server(api_key="img-key", extra=extra) as s:
            t.run(test_pull_list_rm, t, s, reg, name="pull/list/rm", timeout=300)
            t.run(test_bad_input, t, s, reg, name="bad input", timeout=120)
    t.run(test_never, t, name="never", timeout=120)


t.run(main, name="images api", timeout=700)
t.done()
