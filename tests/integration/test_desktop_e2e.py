"""The desktop end to end (issue 16): a sandbox from the `host` image runs
images/desktop/entrypoint.sh as its entrypoint (Xvfb at SCREEN_RESOLUTION,
openbox, xterm, Chromium, x11vnc on 5900, websockify/noVNC on 6080), and
from outside, through the official JS SDK's endpoints with useServerProxy off
and on (tests/console/desktop.test.mjs):

- computer use: execd's /desktop/* at the SDK's endpoint of port 44772 (its
  URL and headers): an xterm with known colours running `cat > FILE` is
  focused, screenshots before and after POST /desktop/keyboard show the
  typed letters' ink cell by cell (no OCR), and the file holds the text;
- noVNC: the endpoint of port 6080 (and its signed URL) opened in Debian's
  Chromium (playwright-core, headless), vnc.html connected over the proxy's
  WebSocket: the page shows a magenta window where X has it, a click through
  noVNC moves the pointer there and focuses it, keys typed into the page
  reach the program in it.

The sandbox has only its loopback ([network] mode = "none"; pull_policy
never), the test-side Chromium resolves only loopback: nothing leaves the
machine. Page screenshots are kept in
$BUILD/test-artifacts/desktop/."""
import os
import shutil
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
CONSOLE_TESTS = os.path.join(REPO, "tests", "console")
SDK_DIR = os.path.join(REPO, "tests", "sdk")
ENTRYPOINT = os.path.join(REPO, "images", "desktop", "entrypoint.sh")
SHOTS = os.path.join(REPO, os.environ.get("BUILD", "build"), "test-artifacts", "desktop")
KEY = "desktop-e2e-key"
RES = "1024x768"
# In the sandbox (the entrypoint's tools), and on the test side.
NEEDED = ["/usr/bin/Xvfb", "/usr/bin/openbox", "/usr/bin/xterm", "/usr/bin/x11vnc",
          "/usr/bin/websockify", "/usr/share/novnc/vnc.html", "/usr/bin/xdpyinfo",
          "/usr/bin/xprop", "/usr/lib/chromium/chromium", "/usr/bin/chromium"]


def sh(x, cmd, timeout=30):
    ev = x.sse("/command", json={"command": cmd}, timeout=timeout).events
    return exit_code(ev), "\n".join(stdout_lines(ev) + stderr_lines(ev)).strip()


def start(s):
    """The desktop sandbox, once noVNC answers through the proxy; its id."""
    with open(ENTRYPOINT) as f:
        script = f.read()
    # The host image has no /work: the script goes in as bash -c's text.
    sid = s.new(entrypoint=["/bin/bash", "-c", script, "entrypoint"],
                env={"DISPLAY": ":0", "SCREEN_RESOLUTION": RES},
                resourceLimits={"cpu": "2", "memory": "2Gi"})["id"]
    x = s.execd(sid)
    page = []

    def novnc():
        r = s.req("GET", f"/v1/sandboxes/{sid}/proxy/6080/vnc.html", timeout=10)
        if r.status == 200:
            page.append(r.body)
        return r.status == 200
    until(novnc, 120, 0.5)
    t.ok(page and b"noVNC" in page[0], "the entrypoint brings noVNC up on 6080 (vnc.html through the proxy)",
         sh(x, "tail -n 5 /tmp/desktop/*.log")[1][-2000:])
    code, out = sh(x, "ps -eo comm")
    t.ok(all(p in out for p in ("Xvfb", "openbox", "xterm", "chromium", "x11vnc", "websockify")),
         "Xvfb, openbox, xterm, Chromium, x11vnc and websockify run", out)
    r = x.get("/desktop/screenshot?scale=0.25")
    size = struct.unpack(">II", r.body[16:24]) if r.status == 200 else None  # the PNG's IHDR
    t.ok(size == (256, 192), f"execd sees the {RES} screen (DISPLAY=:0 from the sandbox's env)",
         f"{r.status} {size} {r.body[:200]!r}")
    return sid


def run_node(s, sid, signed):
    env = dict(OSB_DOMAIN=f"127.0.0.1:{s.port}", OSB_API_KEY=KEY, OSB_SANDBOX=sid,
               OSB_SDK_DIR=SDK_DIR, OSB_SIGNED_6080=signed, OSB_SHOTS=SHOTS,
               OSB_CHROMIUM="/usr/bin/chromium")
    r, checks = run_node_checks("desktop.test.mjs", env=env)
    seen = []
    for j in checks:
        seen.append(j["check"])
        t.ok(j["ok"], j["check"], j.get("diag"))
        if j["ok"] and "ERR_NETWORK_CHANGED" in (j.get("diag") or ""):
            t.diag(j["check"] + ": " + j["diag"])
    return r, seen


def main():
    missing = [p for p in NEEDED if not os.path.exists(p)]
    if not shutil.which("node"):
        missing.append("node")
    if missing:
        t.skip("desktop end to end", "missing %s (scripts/install-deps.sh test)" % " ".join(missing))
        return
    for d, mod in ((CONSOLE_TESTS, "playwright-core"), (SDK_DIR, "@alibaba-group/opensandbox")):
        err = npm_ci(d, mod)
        if err:
            t.ok(False, "npm ci of " + mod, err)
            return
    shutil.rmtree(SHOTS, ignore_errors=True)
    # Sandboxes with only their loopback: the desktop's own Chromium (and
    # anything else in it) cannot reach out; the proxy needs no network.
    with Server(api_key=KEY, extra='[network]\nmode = "none"\n') as s:
        sid = start(s)
        r = s.req("GET", qs(f"/v1/sandboxes/{sid}/endpoints/6080", {"expires": str(int(time.time()) + 900)}))
        ep = r.json().get("endpoint", "") if r.status == 200 else ""
        t.ok(f"/sandboxes/{sid}/signed/6080/" in ep, "a signed URL for port 6080", r.text)
        r, seen = run_node(s, sid, "http://" + ep)
        # Per useServerProxy setting: 6 computer-use and 4 noVNC checks; the
        # signed URL's 4 noVNC checks once.
        t.ok(r.returncode == 0 and len(seen) == 24, "desktop.test.mjs ran to its end",
             f"rc={r.returncode} checks={len(seen)} stderr={r.stderr[-1500:]}")
        t.ok(all(os.path.exists(os.path.join(SHOTS, f"novnc-{n}.png")) for n in range(3)),
             "a screenshot of each noVNC page is kept", SHOTS)


t.run(main, timeout=570)
t.done()
