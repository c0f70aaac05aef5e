"""The desktop calls of the clients (issue 16) against a real sandbox with a
display: a host-image sandbox whose entrypoint is Xvfb, execd's computer-use
API behind it (test_desktop.py tests that API itself). `osb desktop` cursor,
move, screenshot (a scaled PNG of the right size), type, windows, a missing
display's error; the MCP tools desktop_screenshot (an image content block)
and desktop_click."""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
BIN = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin")


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24]) if head[:8] == b"\x89PNG\r\n\x1a\n" else None


def main():
    if not shutil.which("Xvfb"):
        t.ok(False, "Xvfb is needed (scripts/install-deps.sh test installs xvfb)")
        return
    with Server(api_key="desk") as s:
        env = dict(os.environ, OPEN_SANDBOX_API_KEY="desk", OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port)

        def osb(*args):
            return subprocess.run([os.path.join(BIN, "osb")] + list(args), env=env,
                                  capture_output=True, text=True, timeout=60)
        sid = s.new(env={"DISPLAY": ":7"}, entrypoint=[
            "/usr/bin/Xvfb", ":7", "-screen", "0", "1280x800x24", "-noreset", "-nolisten", "tcp"])["id"]
        t.ok(until(lambda: osb("desktop", "cursor", sid).returncode == 0, 60),
             "osb desktop cursor answers once Xvfb is up")
        r = osb("desktop", "move", sid, "100", "200", "-o", "json")
        t.ok(r.returncode == 0 and json.loads(r.stdout) == {"x": 100, "y": 200},
             "osb desktop move: the pointer after", r.stdout + r.stderr)
        r = osb("desktop", "cursor", sid, "-o", "json")
        t.ok(r.returncode == 0 and json.loads(r.stdout) == {"x": 100, "y": 200}, "  cursor agrees",
             r.stdout)
        shot = os.path.join(s.tmp, "shot.png")
        r = osb("desktop", "screenshot", sid, shot, "--scale", "0.5")
        t.eq(png_size(shot) if r.returncode == 0 else r.stderr, (640, 400),
             "osb desktop screenshot --scale 0.5: a 640x400 PNG")
        r = osb("desktop", "screenshot", sid, shot, "--region", "10,20,300,100")
        t.eq(png_size(shot) if r.returncode == 0 else r.stderr, (300, 100), "  --region 10,20,300,100")
        t.eq(osb("desktop", "screenshot", sid, shot, "--scale", "2").returncode, 2,
             "  --scale 2 is a usage error")
        t.eq(osb("desktop", "type", sid, "héllo €").returncode, 0, "osb desktop type")
        t.eq(osb("desktop", "key", sid, "ctrl", "c").returncode, 0, "osb desktop key ctrl c")
        r = osb("desktop", "windows", sid, "-o", "json")
        t.ok(r.returncode == 0 and "items" in json.loads(r.stdout), "osb desktop windows", r.stdout)
        t.eq(osb("desktop", "click", sid, "x", "1").returncode, 2, "a non-integer X: usage error")
        plain = s.new()["id"]
        r = osb("desktop", "cursor", plain)
        t.ok(r.returncode == 1 and "DESKTOP::NO_DISPLAY" in r.stderr,
             "a sandbox without a display: DESKTOP::NO_DISPLAY", r.stderr)

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        calls = [{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                     "name": "desktop_screenshot", "arguments": {"sandbox_id": sid, "scale": 0.25}}},
                 {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                     "name": "desktop_click", "arguments": {"sandbox_id": sid, "x": 5, "y": 6}}},
                 {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                     "name": "desktop_screenshot", "arguments": {"sandbox_id": plain}}}]
        r = subprocess.run([os.path.join(BIN, "opensandbox-mcp")],
                           input="\n".join(json.dumps(x) for x in [init] + calls) + "\n",
                           env=env, capture_output=True, text=True, timeout=120)
        res = {json.loads(line)["id"]: json.loads(line).get("result") for line in r.stdout.splitlines()}
        shot_res = res.get(2) or {}
        img = (shot_res.get("content") or [{}])[0]
        import base64
        data = base64.b64decode(img.get("data", "")) if img.get("type") == "image" else b""
        t.ok(not shot_res.get("isError") and img.get("mimeType") == "image/png" and
             data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (320, 200),
             "MCP desktop_screenshot: an image/png content block of 320x200", str(shot_res)[:300])
        click = res.get(3) or {}
        t.ok(not click.get("isError") and click.get("structuredContent") == {"x": 5, "y": 6},
             "MCP desktop_click: the pointer after", click)
        bad = res.get(4) or {}
        t.ok(bad.get("isError") and "DESKTOP::NO_DISPLAY" in bad["content"][0]["text"],
             "MCP: no display is a tool error naming DESKTOP::NO_DISPLAY", bad)


t.run(main, timeout=400)
t.done()
