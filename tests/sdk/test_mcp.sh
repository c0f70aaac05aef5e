#!/bin/bash
# opensandbox-mcp driven by the official MCP TypeScript SDK client
# (@modelcontextprotocol/sdk, pinned in tests/mcp/package.json and its lock
# file) over stdio and streamable HTTP, against a real opensandbox-server.
# The server is started as tests/sdk/test_sdk.sh starts it: a free loopback
# port, a temporary state dir and API key, a subnet and userns range of its
# own, pull_policy never and a DNS upstream on this machine (a closed local
# port), so nothing leaves the machine. Then tests/mcp/mcp.test.mjs runs with
# node's test runner (TAP: "ok N - ..." / "not ok N - ..." per test), and at
# the end no sandbox, process, cgroup or mount may be left behind.
#
# Environment: MCP_KEEP=1 keeps the state dir and logs; OSB_SDK_SERVER (another
# server binary), OSB_MCP_BIN (another opensandbox-mcp, e.g. build/san/bin/opensandbox-mcp);
# MCP_TEST_NAMES (a --test-name-pattern regexp).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
MCPDIR=$ROOT/tests/mcp
BUILD=${BUILD:-build}
SERVER=${OSB_SDK_SERVER:-$ROOT/$BUILD/bin/opensandbox-server}
MCP_BIN=${OSB_MCP_BIN:-$ROOT/$BUILD/bin/opensandbox-mcp}

fail() { echo "not ok - mcp: $1"; shift; for l in "$@"; do echo "# $l"; done; exit 1; }

[ -x "$SERVER" ] || fail "$BUILD/bin/opensandbox-server does not exist (run make first)"
[ -x "$MCP_BIN" ] || fail "$BUILD/bin/opensandbox-mcp does not exist (run make first)"
command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs nodejs and npm)"

# ---- the pinned SDK: npm ci when node_modules is missing or older than the lock file
lock_sum=$(sha256sum "$MCPDIR/package-lock.json" | cut -d' ' -f1)
stamp=$MCPDIR/node_modules/.osb-lock-sha256
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    if (cd "$MCPDIR" && npm ci --no-audit --no-fund --loglevel=error >/tmp/osb-mcp-npm.log 2>&1); then
        echo "$lock_sum" >"$stamp"
    elif [ -f "$MCPDIR/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
        echo "# npm ci failed (offline?); using the SDK already in node_modules"
    else
        fail "npm ci failed and the MCP SDK is not installed" "$(tail -5 /tmp/osb-mcp-npm.log)"
    fi
fi
want=$(node -p 'require("./tests/mcp/package.json").dependencies["@modelcontextprotocol/sdk"]')
have=$(node -p 'require("./tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json").version')
[ "$have" = "$want" ] || fail "installed @modelcontextprotocol/sdk is $have, want $want"

# ---- a private server (as tests/sdk/test_sdk.sh)
tmp=$(mktemp -d /tmp/osb-mcp.XXXXXX)
state=$tmp/state
mkdir -p "$state"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=mcp-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
# A 10.X.0.0/16 free on the host, held with an flock on fd 9 while this
# script (or the server, which inherits fd 9) lives: serverlib's lock files.
subnet=
mkdir -p /tmp/osb-test-subnets
for x in $(cd tests/integration && /usr/bin/python3 -c 'import serverlib; print(*serverlib.subnet_candidates())'); do
    exec 9>"/tmp/osb-test-subnets/10.$x.lock"
    if flock -n 9; then subnet=10.$x.0.0/16; break; fi
    exec 9>&-
done
[ -n "$subnet" ] || fail "no free 10.X.0.0/16 subnet for the server"
pick_range() { echo "$(((1 << 24) + $(od -An -N4 -tu4 /dev/urandom) % 32000 * 65536)):6553600"; }
cat >"$tmp/sandbox.toml" <<EOT
[server]
host = "127.0.0.1"
port = $port
api_key = "$key"

[runtime]
type = "native"

[native]
state_dir = "$state"
userns_range = "$(pick_range)"

# Nothing reaches a registry (none is outside this machine).
[image]
pull_policy = "never"

# NAT networks whose DNS never leaves this machine: the forwarder's upstream
# is a closed local port.
[network]
mode = "nat"
subnet = "$subnet"
pool_size = 2
dns_upstreams = ["127.0.0.1:9"]

[egress]
mode = "dns+nft"
EOT

server_pid=
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
}
remove_tmp() {
    local m
    for m in $(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null
    done
    rm -rf --one-file-system "$tmp"
}
delete_all() {
    local ids
    ids=$(curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" "$base/v1/sandboxes?pageSize=200" | /usr/bin/python3 -c \
        'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))' 2>/dev/null)
    for id in $ids; do
        curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" -X DELETE -o /dev/null "$base/v1/sandboxes/$id"
    done
    echo "$ids"
}
# Processes, sandbox cgroups and mounts of this run's server left once it
# stopped: listed as "# " lines, then removed; fails when there were any.
reap_leaks() {
    local cgdirs subs procs mounts d p m
    cgdirs=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$cg_base" 2>/dev/null)
    subs=$(for d in $cgdirs; do find "$d" -mindepth 1 -type d; done)
    procs=$(for d in $cgdirs; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -un)
    mounts=$(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo)
    procs=$(for p in $procs $(grep -lF "$state/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
        [ -e "/proc/$p" ] && echo "$p"; done | sort -un)
    for d in $subs; do echo "#   leaked cgroup $d"; done
    for m in $mounts; do echo "#   leaked mount $m"; done
    for p in $procs; do echo "#   leaked process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
    for p in $procs; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$procs" ] && sleep 0.2
    for d in $cgdirs; do find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; done
    [ -z "$subs$procs$mounts" ]
}
cleanup() {
    [ -n "$server_pid" ] && delete_all >/dev/null
    stop_server
    reap_leaks
    if [ "${MCP_KEEP:-0}" = 1 ]; then echo "# kept $tmp"; else remove_tmp; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

base=http://127.0.0.1:$port
cg_base=$(/usr/bin/python3 -c '
import sys
h = 2166136261
for c in sys.argv[1].encode(): h = ((h ^ c) * 16777619) & 0xffffffff
print("opensandbox-%08x" % h)' "$state")

for _ in $(seq 10); do
    env -u OPENSANDBOX_SERVER_API_KEY -u OPENSANDBOX_INSECURE_SERVER \
        "$SERVER" --config "$tmp/sandbox.toml" >"$tmp/server.log" 2>&1 &
    server_pid=$!
    up=0
    for _ in $(seq 200); do
        if curl -sf -o /dev/null "$base/health"; then up=1; break; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    [ $up = 1 ] || ! grep -q "its own userns_range" "$tmp/server.log" && break
    wait "$server_pid" 2>/dev/null
    server_pid=
    sed -i "s/^userns_range = .*/userns_range = \"$(pick_range)\"/" "$tmp/sandbox.toml"
done
if [ $up = 0 ]; then
    mapfile -t log < <(tail -20 "$tmp/server.log")
    fail "opensandbox-server did not answer GET /health within 10 s" "${log[@]}"
fi

# ---- the tests: TAP from node's own reporter
names=()
[ -n "${MCP_TEST_NAMES:-}" ] && names=(--test-name-pattern="$MCP_TEST_NAMES")
(cd "$MCPDIR" && MCP_BIN=$MCP_BIN OPEN_SANDBOX_DOMAIN=127.0.0.1:$port OPEN_SANDBOX_API_KEY=$key \
    MCP_TMP=$tmp timeout -k 5 400 node --test --test-reporter=tap "${names[@]}" mcp.test.mjs)
rc=$?
[ $rc = 124 ] && echo "not ok - mcp: the node tests did not finish within 400 s"

# ---- nothing left behind
left=$(delete_all)
if [ -z "$left" ]; then
    echo "ok - mcp: the tests left no sandbox behind"
else
    echo "not ok - mcp: sandboxes left behind after the tests (now deleted): $left"; rc=1
fi
stop_server
if reap_leaks; then
    echo "ok - mcp: no process, cgroup or mount left once the server stopped"
else
    echo "not ok - mcp: leaks after all sandboxes were deleted and the server stopped (see above)"; rc=1
fi
if [ $rc != 0 ]; then
    echo "# server log (last 30 lines):"
    tail -30 "$tmp/server.log" | sed 's/^/#   /'
fi
exit $rc
