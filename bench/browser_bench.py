"""Browsers and desktops (issue 16; goals in brackets, printed, not asserted).

Over --n rounds, each on fresh sandboxes of the `host` image (resource limits
2 CPUs, 2 GiB), all reached from outside through the server proxy:

  create -> CDP page loaded
      POST /v1/sandboxes with headless Chromium as the entrypoint (the flags of
      images/chromium/config.json, /usr/lib/chromium/chromium itself: Debian's
      /usr/bin wrapper reads /etc/chromium.d, which the host image's private
      /etc lacks), then GET /v1/sandboxes/{id} until Running (printed: the
      sandbox's share), then GET /proxy/9222/json/version every 5 ms until 200 (its
      webSocketDebuggerUrl rewritten by the server to the proxy route), then
      CDP over that WebSocket (osbtest.WS): Target.createTarget about:blank,
      Target.attachToTarget (flatten), Page.enable, Page.navigate to a data:
      URL, Page.loadEventFired, Runtime.evaluate of document.title. Printed:
      time to /json/version 200 and to the page's title read back.
  bare Chromium (the floor)
      the same Chromium started on the host, outside any sandbox, until its
      /json/version answers on loopback and the same page is loaded.
  create -> first screenshot (Xvfb)
      entrypoint `Xvfb :0 -screen 0 1280x800x24 -noreset -nolisten tcp`, env
      DISPLAY=:0; GET /endpoints/44772 (the execd token), then execd's GET
      /desktop/screenshot through /proxy/44772 every 5 ms until 200 image/png.
  create -> first screenshot / noVNC (desktop)
      entrypoint images/desktop/entrypoint.sh (bash -c with its text: Xvfb,
      openbox, xterm, Chromium, x11vnc, websockify), env DISPLAY=:0: the first
      200 image/png screenshot, and GET /proxy/6080/vnc.html 200 (the whole
      desktop up).
  screenshot round trip
      --shots (50) full-screen 1280x800 screenshots, one after the other on one
      kept-alive connection through the proxy, of the desktop with Chromium
      showing a page of text (navigated over CDP), and of the bare Xvfb (black):
      p50/p90/max and the PNG's size [p50 <= 100 ms].
  idle memory
      once the sandbox is up (the page loaded; noVNC answering), the sandbox
      cgroup's charge is read every 250 ms until it moved less than 1% over 2 s
      (at most --settle-max s): memory.current (v2) or memory.usage_in_bytes
      (v1), page cache included; its anon part (memory.stat anon / rss): the
      steadiest figure; and the sum of PSS (smaps_rollup) of its processes,
      which moves with the rest of the machine (Chromium's file pages that
      other browsers keep in the page cache get mapped by fault-around and
      count here: 254 MiB on a quiet host, 394 MiB beside other Chromiums).

--perf FILE records `perf record -a -g` over the desktop's screenshot round
trips of the last round and prints the top symbols; --png FILE keeps the
desktop's last screenshot (to see what was measured).

Usage: browser_bench.py [--n 3] [--shots 50] [--settle-max 30] [--perf FILE] [--png FILE] [--json]
Server: tests/integration/serverlib.py (pull_policy "never", DNS upstream a
closed local port, a free subnet); every sandbox and the server are removed
on exit, failure included."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from serverlib import Client, Server, cg_base_name  # noqa: E402
from secure_bench import sandbox_cgroup, cgroup_procs, pss_kib, with_descendants  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
HEADLESS = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=9222", "--user-data-dir=/tmp/chromium",
            # nothing leaves the machine: no name but 127.0.0.1 resolves
            "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "about:blank"]
XVFB = ["/usr/bin/Xvfb", ":0", "-screen", "0", "1280x800x24", "-noreset", "-nolisten", "tcp"]
DESKTOP_SH = os.path.join(ROOT, "images", "desktop", "entrypoint.sh")
LIMITS = {"cpu": "2", "memory": "2Gi"}
PAGE = "data:text/html," + urllib.parse.quote(
    "<!doctype html><title>bench</title><h1>browser bench</h1>" +
    "".join("<p>%d: The quick brown fox jumps over the lazy dog; pack my box with five dozen "
            "liquor jugs.</p>" % i for i in range(40)))
POLL = 0.005


def ms(t):
    return t * 1e3


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


class CDP:
    """A CDP client on one WebSocket (flattened sessions)."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send_text(json.dumps(msg))
        end = time.monotonic() + timeout
        while True:
            m = self.recv(end)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("CDP %s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def recv(self, end):
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("CDP: no answer")
        op, data = self.ws.recv(timeout=left)
        if op == 8:
            raise RuntimeError("CDP: WebSocket closed")
        return json.loads(data)

    def wait_event(self, method, session, timeout=30):
        end = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method and m.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self.recv(end))

    def close(self):
        self.ws.close(wait=0.5)


def cdp_connect(s, sid, timeout=60):
    """Poll /json/version through the proxy until 200; (time of the 200, CDP)."""
    route = "/v1/sandboxes/%s/proxy/9222" % sid
    end = time.monotonic() + timeout
    while True:
        try:
            r = s.get(route + "/json/version", timeout=5)
            if r.status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > end:
            raise RuntimeError("Chromium's /json/version did not answer 200 through the proxy")
        time.sleep(POLL)
    t_version = time.perf_counter()
    ws_url = r.json()["webSocketDebuggerUrl"]
    u = urllib.parse.urlsplit(ws_url)
    # (rewritten to the route without /v1: docs/server.md, both are served)
    if "/sandboxes/%s/proxy/9222/devtools/browser/" % sid not in u.path or \
            u.netloc != "127.0.0.1:%d" % s.port:
        raise RuntimeError("webSocketDebuggerUrl not rewritten to the proxy: " + ws_url)
    return t_version, CDP(s.ws_connect(u.path))


def cdp_load(cdp, url):
    """A new page showing url, loaded; its document.title."""
    target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    return page_goto(cdp, target, url)


def page_goto(cdp, target, url):
    sess = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    cdp.call("Page.enable", session=sess)
    cdp.call("Page.navigate", {"url": url}, session=sess)
    cdp.wait_event("Page.loadEventFired", sess)
    return cdp.call("Runtime.evaluate", {"expression": "document.title", "returnByValue": True},
                    session=sess)["result"].get("value")


def wait_screenshot(x, timeout=60):
    end, last = time.monotonic() + timeout, "no answer"
    while True:
        try:
            r = x.get("/desktop/screenshot", timeout=10)
            if r.status == 200 and r.headers.get("content-type", "").startswith("image/png"):
                return r
            last = "%d %s" % (r.status, r.text[:300])
        except OSError as e:
            last = repr(e)
        if time.monotonic() > end:
            raise RuntimeError("no screenshot: " + last)
        time.sleep(POLL)


def until_200(s, path, timeout=90):
    end = time.monotonic() + timeout
    while True:
        try:
            if s.get(path, timeout=5).status == 200:
                return time.perf_counter()
        except OSError:
            pass
        if time.monotonic() > end:
            raise RuntimeError("%s never answered 200" % path)
        time.sleep(POLL)


# ------------------------------------------------------------------- memory
def cgroup_of(s, sid):
    """(memory file, cgroup dir) of the sandbox's own cgroup."""
    pid = s.pid_of(sid)
    if not pid:
        raise RuntimeError("no pid for sandbox " + sid)
    marks = (sid, cg_base_name(s.state_dir) + "/")
    for p in sorted(with_descendants([pid])):
        f, d = sandbox_cgroup(p, marks)
        if d:
            return f, d
    raise RuntimeError("sandbox %s has no cgroup of its own" % sid)


def read_int(path):
    with open(path) as f:
        return int(f.read())


def anon_bytes(cg_dir, mem_file):
    stat = {}
    try:
        with open(os.path.join(cg_dir, "memory.stat")) as f:
            for line in f:
                k, v = line.split()
                stat[k] = int(v)
    except OSError:
        return None
    if mem_file.endswith("memory.current"):
        return stat.get("anon")
    return stat.get("total_rss", stat.get("rss"))


def idle_memory(s, sid, settle_max):
    """Wait until the cgroup's charge moved < 1% over 2 s, then read it."""
    mem_file, cg_dir = cgroup_of(s, sid)
    samples = []  # (time, bytes)
    end = time.monotonic() + settle_max
    while True:
        now = time.monotonic()
        samples.append((now, read_int(mem_file)))
        window = [b for t, b in samples if t >= now - 2.0]
        settled = samples[0][0] <= now - 2.0 and max(window) - min(window) < 0.01 * max(window)
        if settled or now > end:
            break
        time.sleep(0.25)
    procs = cgroup_procs(cg_dir)
    pss = sum(pss_kib(p).get("Pss", 0) for p in procs) / 1024
    return {"cgroup_mib": samples[-1][1] / 2**20, "anon_mib": (anon_bytes(cg_dir, mem_file) or 0) / 2**20,
            "pss_mib": pss, "processes": len(procs), "settled": settled,
            "settle_s": samples[-1][0] - samples[0][0], "cgroup_file": mem_file}


# ------------------------------------------------------------------- rounds
def round_browser(s, res, settle_max):
    t0 = time.perf_counter()
    sid = s.new(entrypoint=HEADLESS, resourceLimits=LIMITS)["id"]
    try:
        # Running first (the sandbox's share; polled, costs a few ms), then Chromium's.
        end = time.monotonic() + 60
        while s.get("/v1/sandboxes/" + sid).json()["status"]["state"] != "Running":
            if time.monotonic() > end:
                raise RuntimeError("sandbox %s never Running" % sid)
            time.sleep(POLL)
        res["cdp_running"].append(time.perf_counter() - t0)
        t_version, cdp = cdp_connect(s, sid)
        try:
            title = cdp_load(cdp, PAGE)
            t_loaded = time.perf_counter()
            if title != "bench":
                raise RuntimeError("the page's title came back as %r" % title)
            res["cdp_version"].append(t_version - t0)
            res["cdp_loaded"].append(t_loaded - t0)
            res["mem_browser"].append(idle_memory(s, sid, settle_max))
        finally:
            cdp.close()
    finally:
        s.delete("/v1/sandboxes/" + sid)


def round_bare(res):
    """The floor: the same Chromium started on the host (no sandbox, no proxy),
    until its /json/version answers on loopback and a page is loaded."""
    import shutil
    import signal
    import tempfile
    from osbtest import free_port, _ws_handshake
    port = free_port()
    udd = tempfile.mkdtemp(prefix="osb-bench-chromium-")
    argv = [a.replace("9222", str(port)) if a.startswith("--remote-debugging-port") else
            ("--user-data-dir=" + udd if a.startswith("--user-data-dir") else a) for a in HEADLESS]
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        c = Client("127.0.0.1", port)
        end = time.monotonic() + 60
        while True:
            try:
                r = c.get("/json/version", timeout=5)
                if r.status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError("bare Chromium's /json/version did not answer")
            time.sleep(POLL)
        res["bare_version"].append(time.perf_counter() - t0)
        path = urllib.parse.urlsplit(r.json()["webSocketDebuggerUrl"]).path
        _, ws = _ws_handshake("127.0.0.1", port, path, {}, 10)
        cdp = CDP(ws)
        try:
            if cdp_load(cdp, PAGE) != "bench":
                raise RuntimeError("bare Chromium: the page's title is wrong")
            res["bare_loaded"].append(time.perf_counter() - t0)
        finally:
            cdp.close()
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
        shutil.rmtree(udd, ignore_errors=True)


def shots(x, n, keep=None):
    x.keepalive = True
    rtt, size = [], []
    r = None
    for _ in range(n):
        t0 = time.perf_counter()
        r = x.get("/desktop/screenshot", timeout=30)
        rtt.append(time.perf_counter() - t0)
        if r.status != 200 or r.body[:8] != b"\x89PNG\r\n\x1a\n":
            raise RuntimeError("screenshot -> %d %r" % (r.status, r.body[:200]))
        if r.body[16:24] != (1280).to_bytes(4, "big") + (800).to_bytes(4, "big"):
            raise RuntimeError("the screenshot is not 1280x800")
        size.append(len(r.body))
    x.close()
    if keep and r is not None:
        with open(keep, "wb") as f:
            f.write(r.body)
    x.keepalive = False
    return rtt, size


def round_xvfb(s, res, n_shots):
    t0 = time.perf_counter()
    sid = s.new(entrypoint=XVFB, env={"DISPLAY": ":0"}, resourceLimits=LIMITS)["id"]
    try:
        x = s.execd(sid)
        wait_screenshot(x)
        res["xvfb_first"].append(time.perf_counter() - t0)
        rtt, size = shots(x, n_shots)
        res["rtt_xvfb"] += rtt
        res["png_xvfb"] += size
    finally:
        s.delete("/v1/sandboxes/" + sid)


def round_desktop(s, res, n_shots, settle_max, perf, png=None):
    with open(DESKTOP_SH) as f:
        script = f.read()
    t0 = time.perf_counter()
    sid = s.new(entrypoint=["/bin/bash", "-c", script, "entrypoint.sh"], env={"DISPLAY": ":0"},
                resourceLimits=LIMITS)["id"]
    try:
        x = s.execd(sid)
        wait_screenshot(x)
        res["desk_first"].append(time.perf_counter() - t0)
        res["desk_novnc"].append(until_200(s, "/v1/sandboxes/%s/proxy/6080/vnc.html" % sid) - t0)
        res["mem_desktop"].append(idle_memory(s, sid, settle_max))
        # Something on the screen: the desktop's Chromium shows a page of text.
        _, cdp = cdp_connect(s, sid)
        try:
            pages = [p for p in json.loads(s.get("/v1/sandboxes/%s/proxy/9222/json/list" % sid).body)
                     if p.get("type") == "page"]
            if not pages or page_goto(cdp, pages[0]["id"], PAGE) != "bench":
                raise RuntimeError("the desktop's Chromium did not show the page")
        finally:
            cdp.close()
        shots(x, 3)  # the first after a repaint may wait on damage; not timed
        rec = None
        if perf:
            rec = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", perf],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # perf's start-up, outside the timed loop
        try:
            rtt, size = shots(x, n_shots, png)
        finally:
            if rec:
                rec.send_signal(2)
                rec.wait()
        res["rtt_desk"] += rtt
        res["png_desk"] += size
    finally:
        s.delete("/v1/sandboxes/" + sid)


def perf_top(path, n=15):
    """The top of the profile over all CPUs, then over the processes on the
    screenshot's path only (execd, Xvfb, the server: comm names cut at 15)."""
    import re
    for what, extra in (("all processes", []),
                        ("execd, Xvfb and the server", ["--comms", "execd,Xvfb,opensandbox-ser"])):
        rep = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "comm,dso,symbol",
                              "--stdio", "-g", "none", "--percent-limit", "0.3"] + extra,
                             capture_output=True, text=True).stdout
        rows = [re.sub(r"\s+", " ", ln).strip().rstrip(" -") for ln in rep.splitlines()
                if ln.strip() and not ln.startswith("#")]
        print("perf top, %s (self, all CPUs, over the desktop's screenshot round trips; "
              "comm dso symbol):" % what)
        for ln in rows[:n]:
            print("  " + ln)


def summary(v):
    return {"p50_ms": ms(statistics.median(v)), "min_ms": ms(min(v)), "max_ms": ms(max(v))} if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--shots", type=int, default=50)
    ap.add_argument("--settle-max", type=float, default=30)
    ap.add_argument("--perf", default=None)
    ap.add_argument("--png", default=None, help="write the desktop's last screenshot there")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        print("browser_bench: skipped, no %s (scripts/install-deps.sh test)" % CHROMIUM)
        return
    res = {k: [] for k in ("bare_version", "bare_loaded", "cdp_running", "cdp_version", "cdp_loaded", "mem_browser", "xvfb_first", "rtt_xvfb",
                           "png_xvfb", "desk_first", "desk_novnc", "mem_desktop", "rtt_desk", "png_desk")}
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    with Server(api_key="bench") as s:
        for r in range(a.n):
            round_bare(res)
            round_browser(s, res, a.settle_max)
            round_xvfb(s, res, a.shots)
            last = r == a.n - 1
            round_desktop(s, res, a.shots, a.settle_max, a.perf if last else None, a.png if last else None)
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[:3]
    doc = {"n": a.n, "shots": a.shots, "loadavg_before": load0, "loadavg_after": load1,
           "bare_chromium_to_version": summary(res["bare_version"]),
           "bare_chromium_to_page_loaded": summary(res["bare_loaded"]),
           "create_to_running_browser": summary(res["cdp_running"]),
           "create_to_cdp_version": summary(res["cdp_version"]),
           "create_to_cdp_page_loaded": summary(res["cdp_loaded"]),
           "create_to_first_screenshot_xvfb": summary(res["xvfb_first"]),
           "create_to_first_screenshot_desktop": summary(res["desk_first"]),
           "create_to_novnc_desktop": summary(res["desk_novnc"])}
    for k in ("desk", "xvfb"):
        v = res["rtt_" + k]
        doc["screenshot_rtt_" + k] = {"p50_ms": ms(pct(v, 0.5)), "p90_ms": ms(pct(v, 0.9)),
                                      "max_ms": ms(max(v)), "png_kib": statistics.median(res["png_" + k]) / 1024}
    for k in ("browser", "desktop"):
        m = res["mem_" + k]
        doc["idle_memory_" + k] = {f: statistics.median(x[f] for x in m)
                                   for f in ("cgroup_mib", "anon_mib", "pss_mib", "processes")}
        doc["idle_memory_" + k]["all_settled"] = all(x["settled"] for x in m)
        doc["idle_memory_" + k]["cgroup_file"] = os.path.basename(m[0]["cgroup_file"])
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        print("== browsers and desktops (issue 16): %d rounds, host image, 2 CPUs / 2 GiB, "
              "through the server proxy; load %s -> %s" % (a.n, " ".join(load0), " ".join(load1)))
        for name, k in (("bare Chromium on the host -> /json/version", "bare_chromium_to_version"),
                        ("bare Chromium on the host -> page loaded", "bare_chromium_to_page_loaded"),
                        ("create -> Running (browser sandbox)", "create_to_running_browser"),
                        ("create -> CDP /json/version 200", "create_to_cdp_version"),
                        ("create -> CDP page loaded", "create_to_cdp_page_loaded"),
                        ("create -> first screenshot (Xvfb)", "create_to_first_screenshot_xvfb"),
                        ("create -> first screenshot (desktop)", "create_to_first_screenshot_desktop"),
                        ("create -> noVNC answers (desktop)", "create_to_novnc_desktop")):
            d = doc[k]
            print("%-44s p50 %7.1f ms  min %7.1f  max %7.1f" % (name, d["p50_ms"], d["min_ms"], d["max_ms"]))
        for name, k in (("screenshot 1280x800, desktop + page", "screenshot_rtt_desk"),
                        ("screenshot 1280x800, bare Xvfb", "screenshot_rtt_xvfb")):
            d = doc[k]
            print("%-44s p50 %7.1f ms  p90 %7.1f  max %7.1f  PNG %6.1f KiB  [p50 <= 100 ms]" % (
                name, d["p50_ms"], d["p90_ms"], d["max_ms"], d["png_kib"]))
        for name, k in (("idle memory, headless browser", "idle_memory_browser"),
                        ("idle memory, desktop", "idle_memory_desktop")):
            d = doc[k]
            print("%-44s cgroup %6.1f MiB (anon %6.1f)  PSS %6.1f MiB  %d processes%s" % (
                name, d["cgroup_mib"], d["anon_mib"], d["pss_mib"], d["processes"],
                "" if d["all_settled"] else "  (not settled within --settle-max)"))
        print("# cgroup: the sandbox cgroup's %s, page cache included; anon: memory.stat's anon "
              "(v2) or rss (v1); PSS: sum over its processes (shared files count in part)"
              % doc["idle_memory_browser"]["cgroup_file"])
    if a.perf:
        perf_top(a.perf)


if __name__ == "__main__":
    main()
