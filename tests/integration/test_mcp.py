#!/usr/bin/python3
"""opensandbox-mcp driven by the official MCP TypeScript SDK client
(tests/mcp: @modelcontextprotocol/sdk pinned in package.json, installed with
npm ci when missing) over stdio and streamable HTTP, against a real
opensandbox-server on loopback. The node tests print TAP; their top-level
lines count as this suite's."""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverlib import *  # noqa: E402,F403

t = TAP()
MCPDIR = os.path.join(REPO, "tests", "mcp")
BIN = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin", "opensandbox-mcp")


def npm_ready():
    lock = open(os.path.join(MCPDIR, "package-lock.json"), "rb").read()
    want = hashlib.sha256(lock).hexdigest()
    stamp = os.path.join(MCPDIR, "node_modules", ".osb-lock-sha256")
    if os.path.exists(stamp) and open(stamp).read().strip() == want:
        return True
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=MCPDIR,
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        open(stamp, "w").write(want)
        return True
    if os.path.exists(os.path.join(MCPDIR, "node_modules", "@modelcontextprotocol", "sdk")):
        t.diag("npm ci failed (offline?); using the SDK already in node_modules")
        return True
    t.ok(False, "npm ci in tests/mcp", r.stderr[-800:])
    return False


def main():
    if not npm_ready():
        return
    with Server(api_key="mcp-key") as s:
        env = dict(os.environ, MCP_BIN=BIN, OPEN_SANDBOX_DOMAIN="127.0.0.1:%d" % s.port,
                   OPEN_SANDBOX_API_KEY="mcp-key", MCP_HTTP_PORT=str(free_port()))
        r = subprocess.run(["node", "--test", "--test-reporter=tap", "mcp.test.mjs"],
                           cwd=MCPDIR, env=env, capture_output=True, text=True, timeout=900)
        out = r.stdout
        print(out, flush=True)
        if r.returncode != 0 and "\nnot ok" not in "\n" + out:
            t.ok(False, "node --test exited %d" % r.returncode, r.stderr[-1500:])


t.run(main, name="mcp", timeout=1000)
t.done()
