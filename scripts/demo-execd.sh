#!/bin/bash
# Quick-start demo: start execd on loopback, run a command (an SSE stream),
# upload a file and read it back, then stop execd.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/execd ] || make
./scripts/install-deps.sh demo # curl
PORT=${PORT:-44772}
build/bin/execd --listen 127.0.0.1 --port "$PORT" 2>/tmp/execd-demo.log &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/ping" && break; sleep 0.05; done
url="http://127.0.0.1:$PORT"

echo "== POST /command: echo hello from \$(uname -s); exit 3"
curl -sN "$url/command" -H 'Content-Type: application/json' \
    -d '{"command":"echo hello from $(uname -s); echo oops >&2; exit 3"}'

echo "== POST /files/upload /tmp/osb-demo/hello.txt"
tmp=$(mktemp)
echo "a file written through execd" >"$tmp"
curl -sf "$url/files/upload" \
    -F 'metadata={"path":"/tmp/osb-demo/hello.txt","mode":644};filename=metadata;type=application/json' \
    -F "file=@$tmp;filename=hello.txt" -o /dev/null -w 'status %{http_code}\n'
rm -f "$tmp"

echo "== GET /files/info and /files/download"
curl -sf "$url/files/info?path=/tmp/osb-demo/hello.txt"; echo
curl -sf "$url/files/download?path=/tmp/osb-demo/hello.txt"
rm -rf /tmp/osb-demo
