#!/usr/bin/python3
"""A tiny X client for test_desktop.py, in raw protocol (no xev on the hosts):
opens an override-redirect window and prints its input events as JSON lines.

usage: xevents.py DISPLAY X Y WIDTH HEIGHT
First line: {"ready": WINDOW_ID} once the window is exposed; then one line per
key, button or motion event: {"type": "press"|"release"|"kpress"|"krelease"|
"motion", "detail": N, "x": ROOT_X, "y": ROOT_Y, "state": MASK}."""
import json
import os
import socket
import struct
import sys

from netprobe import recvall  # the script's folder is on sys.path

EVENTS = {2: "kpress", 3: "krelease", 4: "press", 5: "release", 6: "motion"}


def setup(s):
    s.sendall(struct.pack("<BxHHHHxx", ord("l"), 11, 0, 0, 0))
    head = recvall(s, 8)
    if head[0] != 1:
        raise SystemExit("X setup failed: %r" % head)
    data = head + recvall(s, struct.unpack("<H", head[6:8])[0] * 4)
    id_base = struct.unpack("<I", data[12:16])[0]
    vlen = struct.unpack("<H", data[24:26])[0]
    nformats = data[29]
    screen = 40 + (vlen + 3) // 4 * 4 + 8 * nformats
    root = struct.unpack("<I", data[screen:screen + 4])[0]
    return id_base, root


def main():
    display, x, y, w, h = sys.argv[1], *map(int, sys.argv[2:6])
    num = display.split(":", 1)[1].split(".")[0]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/tmp/.X11-unix/X" + num)
    id_base, root = setup(s)
    wid = id_base | 1
    # CreateWindow: background-pixel, override-redirect, event-mask
    # (KeyPress KeyRelease ButtonPress ButtonRelease PointerMotion Exposure).
    mask = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x8000
    s.sendall(struct.pack("<BBHIIhhHHHHIIIII", 1, 0, 11, wid, root, x, y, w, h, 0, 1, 0,
                          0x2 | 0x200 | 0x800, 0x0000ff, 1, mask))
    s.sendall(struct.pack("<BxHI", 8, 2, wid))  # MapWindow
    out = sys.stdout
    while True:
        ev = recvall(s, 32)
        code = ev[0] & 0x7f
        if code == 0:
            out.write(json.dumps({"error": ev[1]}) + "\n")
        elif code == 1:
            recvall(s, struct.unpack("<I", ev[4:8])[0] * 4)
        elif code == 12:
            out.write(json.dumps({"ready": wid}) + "\n")
        elif code in EVENTS:
            rx, ry = struct.unpack("<hh", ev[20:24])
            state = struct.unpack("<H", ev[28:30])[0]
            out.write(json.dumps({"type": EVENTS[code], "detail": ev[1], "x": rx, "y": ry,
                                  "state": state}) + "\n")
        out.flush()


if __name__ == "__main__":
    try:
        main()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        os._exit(0)
