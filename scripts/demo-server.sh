#!/bin/bash
# Quick-start demo (the README's main job): starts opensandbox-server locally
# in INSECURE mode (no API key) with a temporary state dir, then drives it
# with the official OpenSandbox JS SDK (tests/sdk/demo.mjs): create a sandbox
# from the `host` image, run a command, write and read a file, run Python in
# a code context, delete the sandbox. Stops the server at the end.
# Needs root (namespaces, mounts, cgroups). PORT=N picks the port.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/opensandbox-server ] || make
./scripts/install-deps.sh demo # node and npm for the SDK, python3, curl
if [ ! -f tests/sdk/node_modules/@alibaba-group/opensandbox/package.json ]; then
    echo "== installing the official JS SDK (npm ci in tests/sdk)"
    (cd tests/sdk && npm ci --no-audit --no-fund --loglevel=error)
fi
PORT=${PORT:-$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}

tmp=$(mktemp -d /tmp/osb-demo.XXXXXX)
# The sandboxes' subnet: one free on this host, as init-config picks it
# (another server, docker0 or a VPN may already use the default 10.88.0.0/16).
build/bin/opensandbox-server init-config "$tmp/init.toml" >/dev/null
subnet=$(sed -n 's/^subnet = "\(.*\)"$/\1/p' "$tmp/init.toml")
cat >"$tmp/sandbox.toml" <<EOF
[server]
host = "127.0.0.1"
port = $PORT

[runtime]
type = "native"

[native]
state_dir = "$tmp/state"

[network]
subnet = "$subnet"
EOF

pid=
finish() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        echo "== server stopped"
    fi
    # Never let rm cross into a mount the server left behind.
    for m in $(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf --one-file-system "$tmp"
}
trap finish EXIT

echo "== starting opensandbox-server on 127.0.0.1:$PORT in INSECURE mode"
echo "   OPENSANDBOX_INSECURE_SERVER=YES: no API key is required, so anything that can reach"
echo "   127.0.0.1:$PORT can create sandboxes. Fine for this demo; set [server] api_key otherwise."
env -u OPENSANDBOX_SERVER_API_KEY OPENSANDBOX_INSECURE_SERVER=YES \
    build/bin/opensandbox-server --config "$tmp/sandbox.toml" 2>"$tmp/server.log" &
pid=$!
for _ in $(seq 200); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && break
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/server.log" >&2; exit 1; }
    sleep 0.05
done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" || { echo "server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }

OPEN_SANDBOX_DOMAIN=127.0.0.1:$PORT OPENSANDBOX_DISABLE_METRICS=1 node tests/sdk/demo.mjs || {
    echo "== demo failed; server log:" >&2
    tail -20 "$tmp/server.log" >&2
    exit 1
}
