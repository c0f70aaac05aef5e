#!/bin/bash
# opensandbox-mcp driven by the official MCP TypeScript SDK client
# (@modelcontextprotocol/sdk, pinned in tests/mcp/package.json and its lock
# file) over stdio and streamable HTTP, against a real opensandbox-server.
# The server comes from tests/sdk/lib/server.sh (as for test_sdk.sh): a free loopback
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

# ---- the pinned SDK
label=mcp
KEEP=${MCP_KEEP:-0}
. "$ROOT/tests/sdk/lib/server.sh"
npm_install "$MCPDIR" @modelcontextprotocol/sdk
want=$(node -p 'require("./tests/mcp/package.json").dependencies["@modelcontextprotocol/sdk"]')
have=$(node -p 'require("./tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json").version')
[ "$have" = "$want" ] || fail "installed @modelcontextprotocol/sdk is $have, want $want"

# ---- a private server (tests/sdk/lib/server.sh)
server_init native
server_start

# ---- the tests: TAP from node's own reporter
names=()
[ -n "${MCP_TEST_NAMES:-}" ] && names=(--test-name-pattern="$MCP_TEST_NAMES")
(cd "$MCPDIR" && MCP_BIN=$MCP_BIN OPEN_SANDBOX_DOMAIN=127.0.0.1:$port OPEN_SANDBOX_API_KEY=$key \
    MCP_TMP=$tmp timeout -k 5 400 node --test --test-reporter=tap "${names[@]}" mcp.test.mjs)
rc=$?
[ $rc = 124 ] && echo "not ok - mcp: the node tests did not finish within 400 s"

# ---- nothing left behind
server_finish $rc
