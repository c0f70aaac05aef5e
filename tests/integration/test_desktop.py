#!/usr/bin/python3
"""execd's computer-use API (/desktop/*) against a real X server (Xvfb), with
xdotool, xterm, openbox and a raw-protocol event recorder (xevents.py) as
independent observers."""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osbtest import *  # noqa: F401,F403

t = TAP()
HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 1280, 800
TOOLS = ("Xvfb", "xdotool", "xsetroot", "xterm", "openbox")
procs = []


# ---------------------------------------------------------------- helpers

def png_decode(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG; checks CRCs."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(typ + body) == crc, "CRC of %r" % typ
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert (depth, ctype) == (8, 2), "8-bit RGB"
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * 3, [], bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def pixel(rows, x, y):
    return tuple(rows[y][x * 3:x * 3 + 3])


def free_display():
    for n in range(91, 400):
        if not os.path.exists("/tmp/.X11-unix/X%d" % n) and not os.path.exists("/tmp/.X%d-lock" % n):
            return n
    raise RuntimeError("no free X display number")


def x_ready(num):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("/tmp/.X11-unix/X%d" % num)
        return True
    except OSError:
        return False
    finally:
        s.close()


def spawn(argv, **kw):
    kw.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=XENV, **kw)
    procs.append(p)
    return p


def tool(*argv):
    return subprocess.run(list(argv), env=XENV, capture_output=True, text=True, timeout=10)


def mouse_location():
    out = tool("xdotool", "getmouselocation").stdout.split()
    return dict(kv.split(":") for kv in out if ":" in kv)


class Recorder:
    """xevents.py: a blue override-redirect window that reports its events."""

    def __init__(self, x, y, w, h):
        self.p = spawn([sys.executable, os.path.join(HERE, "xevents.py"), DISPLAY, str(x), str(y),
                        str(w), str(h)], stdout=subprocess.PIPE, text=True)
        self.events = []
        first = json.loads(self.p.stdout.readline())
        self.id = first["ready"]
        os.set_blocking(self.p.stdout.fileno(), False)

    def poll(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                return self.events
            e = json.loads(line)
            if "type" in e:
                self.events.append(e)

    def wait(self, pred, timeout=10):
        return wait_for(lambda: pred([e for e in self.poll() if e["type"] != "motion"]),
                        timeout=timeout)

    def clear(self):
        self.poll()
        self.events = []


def buttons(evs):
    return [(e["type"], e["detail"], e["x"], e["y"]) for e in evs if e["type"] in ("press", "release")]


def windows(x):
    r = x.get("/desktop/windows")
    return r.json()["items"] if r.status == 200 else []


def window_titled(x, title):
    return until(lambda: next((w for w in windows(x) if w["title"] == title), None), timeout=15)


def field_error(r, field, name):
    msg = r.json().get("message", "") if r.status == 400 else ""
    t.ok(r.status == 400 and r.json().get("code") == "DESKTOP::INVALID_PARAMETER"
         and "'%s'" % field in msg, name, "%d %r" % (r.status, r.body[:300]))


# ---------------------------------------------------------------- tests

def test_no_display():
    with Execd(env={"DISPLAY": ":999", "PATH": "/nonexistent"}, token="tok") as x:
        r = x.get("/desktop/screenshot")
        t.is_error(r, 409, "DESKTOP::NO_DISPLAY", "screenshot without a display -> 409")
        msg = r.json().get("message", "")
        t.ok("/tmp/.X11-unix/X999" in msg and ":999" in msg,
             "the message names DISPLAY and the socket", msg)
        t.is_error(x.post("/desktop/mouse", json={"action": "move", "x": 1, "y": 1}), 409,
                   "DESKTOP::NO_DISPLAY", "mouse without a display -> 409")
        t.is_error(x.post("/desktop/open", json={"target": "/tmp/file"}), 409,
                   "DESKTOP::NO_OPENER", "open without xdg-open, not a URL -> 409")
        x.token = None
        t.eq(x.get("/desktop/cursor").status, 401, "the access token applies")


def shot(x, query=""):
    r = x.get("/desktop/screenshot" + query)
    assert r.status == 200, "screenshot%s: %d %r" % (query, r.status, r.body[:300])
    assert r.headers.get("content-type") == "image/png", r.headers
    return png_decode(r.body)


def test_screenshot(x):
    t.eq(tool("xsetroot", "-solid", "#ff0000").returncode, 0, "xsetroot -solid red")
    w, h, rows = shot(x)
    t.eq((w, h), (W, H), "full screenshot is 1280x800")
    t.ok(all(pixel(rows, px, py) == (255, 0, 0) for px, py in ((0, 0), (640, 400), (1279, 799))),
         "the root is red", [pixel(rows, 0, 0)])
    times = []
    for _ in range(5):
        start = time.monotonic()
        x.get("/desktop/screenshot")
        times.append(time.monotonic() - start)
    times.sort()
    t.diag("1280x800 screenshot: median %.1f ms, best %.1f ms" % (times[2] * 1000, times[0] * 1000))
    t.ok(times[2] < 0.5, "a full screenshot takes well under a second (median %.0f ms)"
         % (times[2] * 1000))
    t.eq(shot(x, "?x=10&y=20&width=300&height=200")[:2], (300, 200), "a region has its size")
    t.eq(shot(x, "?x=1000&y=700")[:2], (280, 100), "a region without size reaches the edge")
    t.eq(shot(x, "?scale=0.5")[:2], (640, 400), "scale=0.5 halves")
    w, h, rows = shot(x, "?x=0&y=0&width=300&height=200&scale=0.25")
    t.eq((w, h), (75, 50), "region and scale together")
    t.eq(pixel(rows, 10, 10), (255, 0, 0), "a scaled shot keeps the colour")
    rec = Recorder(200, 150, 100, 80)
    w, h, rows = shot(x)
    t.eq(pixel(rows, 250, 190), (0, 0, 255), "a window shows its colour at its place")
    t.eq(pixel(rows, 199, 190), (255, 0, 0), "and the root beside it")
    t.eq(pixel(rows, 300, 190), (255, 0, 0), "and past its right edge")
    w, h, rows = shot(x, "?x=200&y=150&width=100&height=80")
    t.ok(all(pixel(rows, px, py) == (0, 0, 255) for px in (0, 99) for py in (0, 79)),
         "a region over the window is all its colour")
    rec.p.kill()
    # Requests queue (one X job at a time); a client that leaves while its
    # request waits costs nothing, the others are all answered.
    for _ in range(3):
        c = socket.create_connection((x.host, x.port))
        c.sendall(b"GET /desktop/screenshot HTTP/1.1\r\nHost: x\r\n\r\n")
        c.close()
    results = [None] * 8

    def one(i):
        r = x.get("/desktop/screenshot?scale=0.5" if i % 2 else "/desktop/cursor")
        results[i] = r.status

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    t.eq(results, [200] * 8, "eight concurrent requests are all answered")
    for q, field in (("?scale=0", "scale"), ("?scale=1.5", "scale"), ("?scale=abc", "scale"),
                     ("?width=0", "width"), ("?x=5000", "x"), ("?y=-1", "y"),
                     ("?x=1200&width=200", "width"), ("?height=900", "height")):
        field_error(x.get("/desktop/screenshot" + q), field, "screenshot%s -> 400 naming %s"
                    % (q, field))


def test_mouse(x):
    r = x.post("/desktop/mouse", json={"action": "move", "x": 321, "y": 123})
    t.eq((r.status, r.json()), (200, {"x": 321, "y": 123}), "move answers the new position")
    t.eq(mouse_location().get("x") + "," + mouse_location().get("y"), "321,123",
         "xdotool getmouselocation agrees")
    t.eq(x.get("/desktop/cursor").json(), {"x": 321, "y": 123}, "GET /desktop/cursor agrees")
    rec = Recorder(400, 300, 200, 150)
    r = x.post("/desktop/mouse", json={"action": "click", "x": 450, "y": 350})
    t.eq(r.json(), {"x": 450, "y": 350}, "click moves first")
    t.ok(rec.wait(lambda ev: buttons(ev) == [("press", 1, 450, 350), ("release", 1, 450, 350)]),
         "the window sees a left press and release there", rec.events)
    rec.clear()
    x.post("/desktop/mouse", json={"action": "click", "button": "right"})
    t.ok(rec.wait(lambda ev: buttons(ev) == [("press", 3, 450, 350), ("release", 3, 450, 350)]),
         "a right click without x, y clicks where the pointer is", rec.events)
    rec.clear()
    x.post("/desktop/mouse", json={"action": "double_click", "x": 460, "y": 360, "button": "middle"})
    t.ok(rec.wait(lambda ev: [b[:2] for b in buttons(ev)] == [("press", 2), ("release", 2)] * 2),
         "double_click: two middle clicks", rec.events)
    rec.clear()
    r = x.post("/desktop/mouse", json={"action": "drag", "x": 410, "y": 310, "toX": 580, "toY": 430})
    t.eq(r.json(), {"x": 580, "y": 430}, "drag ends at toX, toY")
    t.ok(rec.wait(lambda ev: buttons(ev) == [("press", 1, 410, 310), ("release", 1, 580, 430)]),
         "drag: press at the start, release at the end", rec.events)
    held = [e for e in rec.events if e["type"] == "motion" and e["state"] & 0x100]
    t.ok(len(held) >= 2 and (held[-1]["x"], held[-1]["y"]) == (580, 430),
         "drag: motion with the button held", rec.events)
    rec.clear()
    x.post("/desktop/mouse", json={"action": "scroll", "x": 500, "y": 400, "dy": 3})
    t.ok(rec.wait(lambda ev: [b[:2] for b in buttons(ev)] == [("press", 5), ("release", 5)] * 3),
         "scroll dy=3: three wheel-down clicks", rec.events)
    rec.clear()
    x.post("/desktop/mouse", json={"action": "scroll", "dy": -1, "dx": 2})
    want = [("press", 4), ("release", 4)] + [("press", 7), ("release", 7)] * 2
    t.ok(rec.wait(lambda ev: [b[:2] for b in buttons(ev)] == want),
         "scroll dy=-1 dx=2: up once, right twice", rec.events)
    rec.p.kill()


def type_into_cat(x, path, title):
    term = spawn(["xterm", "-u8", "-T", title, "-geometry", "60x5+50+500", "-e", "sh", "-c",
                  "cat > " + path])
    win = window_titled(x, title)
    t.ok(win, "xterm %r is listed" % title, windows(x))
    return term, win


def test_keyboard(x, tmp):
    out = os.path.join(tmp, "typed.txt")
    term, win = type_into_cat(x, out, "desk-cat")
    r = x.post("/desktop/windows", json={"action": "focus", "id": win["id"]})
    t.eq((r.status, r.json()), (200, {}), "focus without a window manager")
    t.ok(wait_for(lambda: tool("xdotool", "getwindowfocus").stdout.strip() == str(win["id"])),
         "xdotool getwindowfocus agrees")
    text = "hello Ünïcödé €"
    r = x.post("/desktop/keyboard", json={"action": "type", "text": text})
    t.eq((r.status, r.json()), (200, {}), "type -> 200 {}")
    t.eq(x.post("/desktop/keyboard", json={"action": "press", "keys": ["enter"]}).status, 200,
         "press enter")
    t.eq(x.post("/desktop/keyboard", json={"action": "press", "keys": ["ctrl", "d"]}).status, 200,
         "press ctrl+d")
    t.ok(wait_for(lambda: term.poll() is not None, timeout=10), "cat saw the end of input")
    with open(out, encoding="utf-8", errors="replace") as f:
        t.eq(f.read(), text + "\n", "the file holds the text, characters outside the keymap too")
    flag = os.path.join(tmp, "interrupted")
    title = "desk-sleep"
    spawn(["xterm", "-T", title, "-geometry", "40x5+50+300", "-e", "sh", "-c",
           "trap 'echo interrupted > %s' INT; sleep 100" % flag])
    win = window_titled(x, title)
    x.post("/desktop/windows", json={"action": "focus", "id": win["id"]})
    wait_for(lambda: tool("xdotool", "getwindowfocus").stdout.strip() == str(win["id"]))
    t.eq(x.post("/desktop/keyboard", json={"action": "press", "keys": ["ctrl", "c"]}).status, 200,
         "press ctrl+c")
    t.ok(wait_for(lambda: os.path.exists(flag), timeout=10), "ctrl+c interrupted the sleep")
    # More distinct characters outside the keymap than it has spare keycodes
    # (14 on Xvfb's): typed in batches, the keycodes of earlier calls reused.
    out = os.path.join(tmp, "typed2.txt")
    term, win = type_into_cat(x, out, "desk-cat2")
    x.post("/desktop/windows", json={"action": "focus", "id": win["id"]})
    wait_for(lambda: tool("xdotool", "getwindowfocus").stdout.strip() == str(win["id"]))
    text = "".join(chr(c) for c in range(0x4e00, 0x4e00 + 40)) + " Ü€ Ω\n"
    t.eq(x.post("/desktop/keyboard", json={"action": "type", "text": text}).status, 200,
         "type 40 CJK characters")
    for keys in (["A"], ["shift", "b"], ["enter"], ["ctrl", "d"]):
        t.eq(x.post("/desktop/keyboard", json={"action": "press", "keys": keys}).status, 200,
             "press %s" % "+".join(keys))
    t.ok(wait_for(lambda: term.poll() is not None, timeout=10), "cat saw the end of input")
    with open(out, encoding="utf-8", errors="replace") as f:
        t.eq(f.read(), text + "AB\n", "every one arrives, in order; \"A\" is shift+a")


def test_windows(x, tmp):
    spawn(["openbox", "--sm-disable"], stdout=subprocess.DEVNULL)
    t.ok(wait_for(lambda: "_NET_SUPPORTING_WM_CHECK(WINDOW)" in
                  tool("xprop", "-root", "_NET_SUPPORTING_WM_CHECK").stdout, timeout=15),
         "openbox is up")
    spawn(["xterm", "-T", "desk-one", "-geometry", "40x5+100+100"])
    spawn(["xterm", "-T", "desk-two", "-geometry", "40x5+600+400"])
    one, two = window_titled(x, "desk-one"), window_titled(x, "desk-two")
    t.ok(one and two, "both xterms are listed with their titles", windows(x))
    found = tool("xdotool", "search", "--name", "^desk-one$").stdout.split()
    t.ok(str(one["id"]) in found, "the id is the client window's (xdotool search agrees)", found)
    t.ok(all(k in one for k in ("x", "y", "width", "height", "focused")) and one["width"] > 100,
         "an item has its geometry", one)
    for target in (one, two, one):
        r = x.post("/desktop/windows", json={"action": "focus", "id": target["id"]})
        t.eq(r.status, 200, "focus %s" % target["title"])
        t.ok(wait_for(lambda: tool("xdotool", "getactivewindow").stdout.strip()
                      == str(target["id"]), timeout=10),
             "xdotool getactivewindow agrees (%s)" % target["title"])
    t.ok(wait_for(lambda: [w["title"] for w in windows(x) if w["focused"]] == ["desk-one"]),
         "the list marks the active window focused", windows(x))
    field_error(x.post("/desktop/windows", json={"action": "focus", "id": 0x7ffffff}), "id",
                "focus of no such window -> 400 naming id")


def test_open(x, tmp):
    rec = os.path.join(tmp, "opened.txt")
    for target in ("https://example.com/a?b=c", "/tmp/some file.pdf"):
        r = x.post("/desktop/open", json={"target": target})
        t.ok(r.status == 200 and isinstance(r.json().get("pid"), int), "open %r -> 200 {pid}"
             % target, r.body)
        want = "%s DISPLAY=%s" % (target, DISPLAY)
        t.ok(wait_for(lambda: os.path.exists(rec) and want in open(rec).read().splitlines()),
             "xdg-open got %r" % target, open(rec).read() if os.path.exists(rec) else None)


def write_xauthority(path, num, cookie):
    def field(b):
        return struct.pack(">H", len(b)) + b
    with open(path, "wb") as f:
        f.write(struct.pack(">H", 256) + field(socket.gethostname().encode()) +
                field(str(num).encode()) + field(b"MIT-MAGIC-COOKIE-1") + field(cookie))


def test_auth_and_depth16(tmp):
    """A server that wants a cookie, at 16 bits per pixel (the generic
    pixel conversion)."""
    num = free_display()
    auth = os.path.join(tmp, "Xauthority")
    write_xauthority(auth, num, os.urandom(16))
    disp = ":%d" % num
    xvfb = spawn(["Xvfb", disp, "-screen", "0", "640x480x16", "-auth", auth, "-noreset",
                  "-nolisten", "tcp"],
                 stdout=subprocess.DEVNULL)
    t.ok(wait_for(lambda: x_ready(num), timeout=20) and xvfb.poll() is None, "Xvfb -auth is up")
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    with Execd(env={"DISPLAY": disp, "HOME": home, "XAUTHORITY": None}) as x:
        r = x.get("/desktop/screenshot")
        t.is_error(r, 409, "DESKTOP::NO_DISPLAY", "without the cookie -> 409")
        t.ok("refused" in r.json().get("message", ""), "the message says it was refused", r.body)
    env = dict(XENV, DISPLAY=disp, XAUTHORITY=auth)
    with Execd(env={"DISPLAY": disp, "XAUTHORITY": auth}) as x:
        for colour, rgb in (("#ff0000", (255, 0, 0)), ("#0000ff", (0, 0, 255))):
            subprocess.run(["xsetroot", "-solid", colour], env=env, timeout=10)
            w, h, rows = shot(x)
            t.eq((w, h, pixel(rows, 320, 240)), (640, 480, rgb),
                 "with $XAUTHORITY: a 16-bit screen, %s" % colour)
    xvfb.kill()


class FakeX:
    """A unix socket at /tmp/.X11-unix/XN that answers the X setup with
    `answer` (None: never answers) and then holds the connection, or ends
    it (close)."""

    def __init__(self, answer, close=False):
        self.num = free_display()
        self.path = "/tmp/.X11-unix/X%d" % self.num
        os.makedirs("/tmp/.X11-unix", exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.answer, self.close_after, self.conns = answer, close, []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            c.recv(4096)
            if self.answer is not None:
                c.sendall(self.answer)
            if self.close_after:
                c.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()
        os.unlink(self.path)


def test_hostile_server():
    refusal = b"Go away"
    cases = [
        (struct.pack("<BBHHH", 0, len(refusal), 11, 0, 2) + refusal + b"\0", 409,
         "DESKTOP::NO_DISPLAY", "refused the connection: Go away", "a refusal -> 409 with its reason"),
        (struct.pack("<BBHHH", 1, 0, 11, 0, 0xffff) + b"x" * 100, 500, "DESKTOP::X_ERROR",
         "closed the connection", "a setup that ends short -> 500"),
        (struct.pack("<BBHHH", 1, 0, 11, 0, 8) + b"\0" * 32, 500, "DESKTOP::X_ERROR",
         "malformed X setup reply", "a setup with no screen -> 500"),
    ]
    for answer, status, code, text, name in cases:
        fake = FakeX(answer, close=True)
        try:
            with Execd(env={"DISPLAY": ":%d" % fake.num}) as x:
                r = x.get("/desktop/cursor", timeout=15)
                t.ok(r.status == status and r.json().get("code") == code
                     and text in r.json().get("message", ""), name, r.body)
        finally:
            fake.close()
    fake = FakeX(None)
    try:
        with Execd(env={"DISPLAY": ":%d" % fake.num}) as x:
            out = {}

            def slow():
                start = time.monotonic()
                out["r"], out["s"] = x.get("/desktop/cursor", timeout=20), time.monotonic() - start

            th = threading.Thread(target=slow)
            th.start()
            time.sleep(0.2)  # let the request reach the X server first
            start = time.monotonic()
            t.ok(x.ping() and time.monotonic() - start < 1, "execd answers while X hangs")
            th.join(20)
            r = out.get("r")
            t.ok(r is not None and r.status == 500 and "did not answer" in r.json()["message"]
                 and 4.5 < out["s"] < 10, "a silent X server: 500 X_ERROR after 5 s",
                 (r, out.get("s")))
    finally:
        fake.close()


def test_open_chromium(tmp):
    """Without xdg-open an http(s) URL goes to chromium's binary, detached,
    with DISPLAY set."""
    if not os.access("/usr/lib/chromium/chromium", os.X_OK):
        t.skip("open_chromium", "no /usr/lib/chromium/chromium")
        return
    url = "https://example.invalid/desk"
    with Execd(env={"DISPLAY": DISPLAY, "PATH": "/nonexistent"}) as x:
        r = x.post("/desktop/open", json={"target": url})
        pid = r.json().get("pid") if r.status == 200 else None
        t.ok(pid, "open -> 200 {pid}", r.body)
        want = [b"/usr/lib/chromium/chromium", b"--no-first-run", b"--no-default-browser-check"]
        argv, env = [], []

        def execed():
            # The child reads as execd (or empty) until its exec.
            nonlocal argv, env
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")[:-1]
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError as e:
                argv, env = [repr(e).encode()], []
                return True
            return argv[:1] == want[:1]
        wait_for(execed, timeout=20, interval=0.05)
        t.ok(argv[:3] == want and argv[-1] == url.encode(), "chromium with the URL", argv)
        t.ok(("DISPLAY=" + DISPLAY).encode() in env, "DISPLAY is set")
        t.eq(os.getsid(pid), pid, "detached: its own session")
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def test_bad_bodies(x):
    cases = [
        ("mouse", {"x": 1, "y": 1}, "action"),
        ("mouse", {"action": "wiggle"}, "action"),
        ("mouse", {"action": "click", "button": "fourth"}, "button"),
        ("mouse", {"action": "move", "x": 5000, "y": 1}, "x"),
        ("mouse", {"action": "move", "x": 5, "y": 900}, "y"),
        ("mouse", {"action": "move", "x": -1, "y": 1}, "x"),
        ("mouse", {"action": "move", "y": 1}, "x"),
        ("mouse", {"action": "move", "x": "1", "y": 1}, "x"),
        ("mouse", {"action": "drag", "x": 1, "y": 1, "toY": 5}, "toX"),
        ("mouse", {"action": "drag", "x": 1, "y": 1, "toX": 2000, "toY": 5}, "toX"),
        ("mouse", {"action": "scroll"}, "dy"),
        ("keyboard", {"text": "a"}, "action"),
        ("keyboard", {"action": "type"}, "text"),
        ("keyboard", {"action": "press", "keys": []}, "keys"),
        ("keyboard", {"action": "press"}, "keys"),
        ("keyboard", {"action": "press", "keys": ["ctrl", "nosuchkey"]}, "keys[1]"),
        ("keyboard", {"action": "press", "keys": [1]}, "keys[0]"),
        ("windows", {"action": "close", "id": 1}, "action"),
        ("windows", {"action": "focus"}, "id"),
        ("open", {}, "target"),
        ("open", {"target": "--help"}, "target"),
    ]
    for route, body, field in cases:
        field_error(x.post("/desktop/" + route, json=body), field,
                    "%s %s -> 400 naming %s" % (route, json.dumps(body), field))
    for route in ("mouse", "keyboard", "windows", "open"):
        r = x.req("POST", "/desktop/" + route, body=b"{not json")
        t.ok(r.status == 400 and r.json().get("code") == "DESKTOP::INVALID_PARAMETER"
             and "JSON" in r.json().get("message", ""), "%s: non-JSON -> 400" % route, r.body)


def main():
    missing = [p for p in TOOLS if not shutil.which(p)]
    if missing:
        t.skip("desktop", "missing %s (scripts/install-deps.sh test)" % " ".join(missing))
        return
    t.run(test_no_display)
    t.run(test_hostile_server, timeout=60)
    num = free_display()
    global DISPLAY, XENV
    DISPLAY = ":%d" % num
    XENV = dict(os.environ, DISPLAY=DISPLAY, LANG="C.UTF-8")
    XENV.pop("XAUTHORITY", None)
    xvfb = spawn(["Xvfb", DISPLAY, "-screen", "0", "%dx%dx24" % (W, H), "-noreset",
                  "-nolisten", "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t.ok(wait_for(lambda: x_ready(num) or xvfb.poll() is not None, timeout=20)
             and xvfb.poll() is None, "Xvfb %s is up" % DISPLAY)
        with tempfile.TemporaryDirectory() as tmp:
            bindir = os.path.join(tmp, "bin")
            os.mkdir(bindir)
            with open(os.path.join(bindir, "xdg-open"), "w") as f:
                f.write('#!/bin/sh\necho "$1 DISPLAY=$DISPLAY" >> %s/opened.txt\n' % tmp)
            os.chmod(os.path.join(bindir, "xdg-open"), 0o755)
            env = {"DISPLAY": DISPLAY, "PATH": bindir + ":" + os.environ.get("PATH", "")}
            with Execd(env=env) as x:
                t.run(test_screenshot, x, timeout=60)
                t.run(test_mouse, x, timeout=60)
                t.run(test_keyboard, x, tmp, timeout=60)
                t.run(test_windows, x, tmp, timeout=60)
                t.run(test_open, x, tmp, timeout=30)
                t.run(test_bad_bodies, x, timeout=30)
                t.ok(x.alive(), "execd alive at the end")
            t.run(test_open_chromium, tmp, timeout=30)
            t.run(test_auth_and_depth16, tmp, timeout=60)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
            p.wait()


DISPLAY, XENV = None, None
t.run(main, timeout=400)
t.done()
