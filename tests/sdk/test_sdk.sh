#!/bin/bash
# The official OpenSandbox JS SDK (@alibaba-group/opensandbox, pinned in
# package.json) against our opensandbox-server: starts the real server on a
# free loopback port with a temporary state dir and API key, runs every
# tests/sdk/*.test.mjs with node's test runner (TAP lines "ok - ..." /
# "not ok - ..."), then checks that the tests left no sandbox, mount or
# process behind, stops the server and removes the state dir.
#
# Environment: SDK_TEST_FILES (space-separated subset of *.test.mjs),
# OSB_SDK_IMAGE (default "host"), OSB_SDK_SERVER (another server binary),
# SDK_KEEP=1 keeps the state dir and log.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SDK=$ROOT/tests/sdk
BUILD=${BUILD:-build}
SERVER=${OSB_SDK_SERVER:-$ROOT/$BUILD/bin/opensandbox-server}

fail() { echo "not ok - sdk: $1"; shift; for l in "$@"; do echo "# $l"; done; exit 1; }

[ -x "$SERVER" ] || fail "$BUILD/bin/opensandbox-server does not exist (run make first)"
command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs nodejs and npm)"

# ---- the pinned SDK: install when node_modules is missing or older than the lock file
lock_sum=$(sha256sum "$SDK/package-lock.json" | cut -d' ' -f1)
stamp=$SDK/node_modules/.osb-lock-sha256
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    if (cd "$SDK" && npm ci --no-audit --no-fund --loglevel=error >/tmp/osb-sdk-npm.log 2>&1); then
        echo "$lock_sum" >"$stamp"
    elif [ -f "$SDK/node_modules/@alibaba-group/opensandbox/package.json" ]; then
        echo "# npm ci failed (offline?); using the SDK already in node_modules"
    else
        fail "npm ci failed and the SDK is not installed" "$(tail -5 /tmp/osb-sdk-npm.log)"
    fi
fi
sdk_version=$(node -p 'require("./tests/sdk/node_modules/@alibaba-group/opensandbox/package.json").version')
[ "$sdk_version" = "0.1.11" ] || fail "installed SDK is $sdk_version, want 0.1.11"

# ---- a private server
tmp=$(mktemp -d /tmp/osb-sdk.XXXXXX)
state=$tmp/state
mkdir -p "$state"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=sdk-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$tmp/sandbox.toml" <<EOF
[server]
host = "127.0.0.1"
port = $port
api_key = "$key"

[runtime]
type = "native"

[native]
state_dir = "$state"
EOF

server_pid=
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
}
# Never let rm cross into a mount (the host image binds host directories).
remove_tmp() {
    local m
    for m in $(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null
    done
    rm -rf --one-file-system "$tmp"
}
cleanup() {
    stop_server
    if [ "${SDK_KEEP:-0}" = 1 ]; then echo "# kept $tmp"; else remove_tmp; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

env -u OPENSANDBOX_SERVER_API_KEY -u OPENSANDBOX_INSECURE_SERVER \
    "$SERVER" --config "$tmp/sandbox.toml" >"$tmp/server.log" 2>&1 &
server_pid=$!
base=http://127.0.0.1:$port
up=0
for _ in $(seq 200); do
    if curl -sf -o /dev/null "$base/health"; then up=1; break; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
done
if [ $up = 0 ]; then
    mapfile -t log < <(tail -20 "$tmp/server.log")
    fail "opensandbox-server did not answer GET /health within 10 s" "${log[@]}"
fi

# ---- one create by hand first, so a server that cannot make sandboxes fails
# in seconds with its answer instead of every test file timing out
api() { curl -s -H "OPEN-SANDBOX-API-KEY: $key" "$@"; }
probe=$(api --max-time 20 -w '\n%{http_code}' -H 'Content-Type: application/json' -X POST "$base/v1/sandboxes" \
    -d "{\"image\":{\"uri\":\"${OSB_SDK_IMAGE:-host}\"},\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"],\"resourceLimits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"timeout\":60}")
if [ "${probe##*$'\n'}" != 202 ]; then
    answer="answered '${probe//$'\n'/ }'"
    [ "${probe##*$'\n'}" = 000 ] && answer="gave no answer within 20 s"
    mapfile -t log < <(tail -10 "$tmp/server.log")
    fail "the server cannot create a sandbox from the ${OSB_SDK_IMAGE:-host} image: POST /v1/sandboxes $answer" "${log[@]}"
fi
probe_id=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "${probe%$'\n'*}")
api -X DELETE -o /dev/null "$base/v1/sandboxes/$probe_id"

# ---- the tests
files=()
for f in ${SDK_TEST_FILES:-$(cd "$SDK" && ls *.test.mjs)}; do files+=("tests/sdk/$f"); done
OPEN_SANDBOX_DOMAIN=127.0.0.1:$port OPEN_SANDBOX_API_KEY=$key \
    OSB_SDK_RUN=$(basename "$tmp" | tr -cd 'a-zA-Z0-9') \
    timeout -k 5 150 node --test --test-reporter="$SDK/lib/tap-reporter.mjs" "${files[@]}"
rc=$?
[ $rc = 124 ] && echo "not ok - sdk: the node tests did not finish within 150 s"

# ---- nothing left behind: every sandbox deleted, then no mount or process in the state dir
left=$(api "$base/v1/sandboxes?pageSize=200" | /usr/bin/python3 -c \
    'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))' 2>/dev/null)
if [ -z "$left" ]; then
    echo "ok - sdk: the tests left no sandbox behind"
else
    echo "not ok - sdk: sandboxes left behind after the tests: $left"
    for id in $left; do api -X DELETE -o /dev/null "$base/v1/sandboxes/$id"; done
fi
stop_server
mounts=$(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo)
procs=$(for p in /proc/[0-9]*; do r=$(readlink "$p/root" 2>/dev/null); [[ "$r" == "$tmp/"* ]] && echo "${p#/proc/}"; done)
if [ -z "$mounts$procs" ]; then
    echo "ok - sdk: no mounts or processes left in the state dir after all sandboxes were deleted"
else
    echo "not ok - sdk: leaks in the state dir after all sandboxes were deleted and the server stopped"
    for m in $mounts; do echo "#   mount $m"; done
    for p in $procs; do echo "#   pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; kill -KILL "$p" 2>/dev/null; done
fi
if [ $rc != 0 ]; then
    echo "# server log (last 30 lines):"
    tail -30 "$tmp/server.log" | sed 's/^/#   /'
fi
exit $rc
