#!/bin/bash
# The official OpenSandbox JS SDK (@alibaba-group/opensandbox, pinned in
# package.json) against our opensandbox-server: starts the real server on a
# free loopback port with a temporary state dir and API key, runs every
# tests/sdk/*.test.mjs with node's test runner (TAP lines "ok - ..." /
# "not ok - ..."), then checks that the tests left no sandbox, mount or
# process behind, stops the server and removes the state dir.
#
# Environment: SDK_TEST_FILES (space-separated subset of *.test.mjs),
# OSB_SDK_IMAGE (default "host"; "busybox" is imported from
# scripts/make-image-busybox.sh first), OSB_SDK_RUNTIME (the server's
# [runtime] type: "native", the default, or "gvisor"; test_sdk_gvisor.sh),
# OSB_SDK_SERVER (another server binary), SDK_KEEP=1 keeps the state dir and log.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SDK=$ROOT/tests/sdk
BUILD=${BUILD:-build}
SERVER=${OSB_SDK_SERVER:-$ROOT/$BUILD/bin/opensandbox-server}

fail() { echo "not ok - sdk: $1"; shift; for l in "$@"; do echo "# $l"; done; exit 1; }

runtime=${OSB_SDK_RUNTIME:-native}
case $runtime in
native) ;;
gvisor) command -v runsc >/dev/null || fail "OSB_SDK_RUNTIME=gvisor but runsc is not installed (apt-get install runsc)" ;;
*) fail "OSB_SDK_RUNTIME=$runtime: want native or gvisor" ;;
esac
[ -x "$SERVER" ] || fail "$BUILD/bin/opensandbox-server does not exist (run make first)"
command -v node >/dev/null || fail "node is not installed (scripts/install-deps.sh installs nodejs and npm)"

# ---- the pinned SDK
label=sdk
KEEP=${SDK_KEEP:-0}
. "$SDK/lib/server.sh"
npm_install "$SDK" @alibaba-group/opensandbox
sdk_version=$(node -p 'require("./tests/sdk/node_modules/@alibaba-group/opensandbox/package.json").version')
[ "$sdk_version" = "0.1.11" ] || fail "installed SDK is $sdk_version, want 0.1.11"

# ---- a private server (tests/sdk/lib/server.sh)
server_init "$runtime"
# host volumes (volumes.test.mjs): the only directory they may mount
hostvol=$tmp/hostvol
mkdir -p "$hostvol"
printf '\n[storage]\nallowed_host_paths = ["%s"]\n' "$hostvol" >>"$tmp/sandbox.toml"
if [ "${OSB_SDK_IMAGE:-host}" = busybox ]; then
    "$ROOT/scripts/make-image-busybox.sh" "$tmp/busybox.tar" &&
        "$SERVER" --config "$tmp/sandbox.toml" image import busybox "$tmp/busybox.tar" >"$tmp/import.log" 2>&1 ||
        fail "could not import the busybox image" "$(tail -5 "$tmp/import.log")"
fi

server_start

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
    OSB_SDK_HOST_VOLUME=$hostvol OSB_SDK_VOLUMES_DIR=$state/volumes \
    OSB_SDK_RUN=$(basename "$tmp" | tr -cd 'a-zA-Z0-9') \
    timeout -k 5 150 node --test --test-timeout=60000 --test-reporter="$SDK/lib/tap-reporter.mjs" "${files[@]}"
rc=$?
[ $rc = 124 ] && echo "not ok - sdk: the node tests did not finish within 150 s"

# ---- nothing left behind
server_finish $rc
