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
# host volumes (volumes.test.mjs): the only directory they may mount
hostvol=$tmp/hostvol
mkdir -p "$hostvol"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=sdk-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
# A 10.X.0.0/16 free on the host, held with an flock on fd 9 for as long as
# this script (or the server, which inherits fd 9) lives: the lock files of
# serverlib.free_subnet, so concurrent test runs never share a subnet.
subnet=
mkdir -p /tmp/osb-test-subnets
for x in $(cd tests/integration && /usr/bin/python3 -c 'import serverlib; print(*serverlib.subnet_candidates())'); do
    exec 9>"/tmp/osb-test-subnets/10.$x.lock"
    if flock -n 9; then subnet=10.$x.0.0/16; break; fi
    exec 9>&-
done
[ -n "$subnet" ] || fail "no free 10.X.0.0/16 subnet for the server"
# A [native] userns_range of its own (100 ranges in [2^24, 2^31)): servers
# claim theirs host-wide, and other tests' servers run beside this one; on
# an overlap the server does not start and another is picked (below).
pick_range() { echo "$(((1 << 24) + $(od -An -N4 -tu4 /dev/urandom) % 32000 * 65536)):6553600"; }
cat >"$tmp/sandbox.toml" <<EOF
[server]
host = "127.0.0.1"
port = $port
api_key = "$key"

[runtime]
type = "$runtime"

[native]
state_dir = "$state"
userns_range = "$(pick_range)"

# The SDK tests never reach a registry (none is outside this machine).
[image]
pull_policy = "never"

[storage]
allowed_host_paths = ["$hostvol"]

# Sandboxes get NAT networks; their DNS never leaves this machine: the
# forwarder's upstream is a closed local port (egress.test.mjs relies on it).
[network]
mode = "nat"
subnet = "$subnet"
pool_size = 2
dns_upstreams = ["127.0.0.1:9"]

[egress]
mode = "dns+nft"
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
# Sandboxes outlive their server by design (a restart re-adopts them), so
# every exit path deletes them through the API before stopping it.
delete_all() {
    local ids
    ids=$(curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" "$base/v1/sandboxes?pageSize=200" | /usr/bin/python3 -c \
        'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))' 2>/dev/null)
    for id in $ids; do
        curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" -X DELETE -o /dev/null "$base/v1/sandboxes/$id"
    done
    echo "$ids"
}
# Processes, sandbox cgroups and host mounts of this run's server still
# there after it stopped: listed as "# " lines, then removed (they are this
# run's own sandboxes). Fails when there were any. The empty per-state-dir
# base cgroups stay by design (the runtime keeps them for a restart); with the
# state dir about to go, they are removed here without complaint.
reap_leaks() {
    local cgdirs subs procs mounts d p m
    cgdirs=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$cg_base" 2>/dev/null)
    subs=$(for d in $cgdirs; do find "$d" -mindepth 1 -type d; done)
    procs=$(for d in $cgdirs; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -un)
    mounts=$(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo)
    # gVisor's runsc processes run outside those cgroups; they name the state
    # dir (so does the grep itself, gone by the time of the -e test).
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
    if [ "${SDK_KEEP:-0}" = 1 ]; then echo "# kept $tmp"; else remove_tmp; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

base=http://127.0.0.1:$port
# The runtime names its cgroups "opensandbox-<FNV-1a of the state dir>":
# where to look for processes the server left behind.
cg_base=$(/usr/bin/python3 -c '
import sys
h = 2166136261
for c in sys.argv[1].encode(): h = ((h ^ c) * 16777619) & 0xffffffff
print("opensandbox-%08x" % h)' "$state")
if [ "${OSB_SDK_IMAGE:-host}" = busybox ]; then
    "$ROOT/scripts/make-image-busybox.sh" "$tmp/busybox.tar" &&
        "$SERVER" --config "$tmp/sandbox.toml" image import busybox "$tmp/busybox.tar" >"$tmp/import.log" 2>&1 ||
        fail "could not import the busybox image" "$(tail -5 "$tmp/import.log")"
fi

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

# ---- nothing left behind: every sandbox deleted, then no process, cgroup or
# mount of this server's once it has stopped
left=$(delete_all)
if [ -z "$left" ]; then
    echo "ok - sdk: the tests left no sandbox behind"
else
    echo "not ok - sdk: sandboxes left behind after the tests (now deleted): $left"; rc=1
fi
stop_server
if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$tmp/server.log"; then
    echo "not ok - sdk: the server reported sanitizer errors"; rc=1
    grep -E -m 10 'Sanitizer|runtime error:|^    #[0-9]' "$tmp/server.log" | head -30 | sed 's/^/#   /'
fi
if reap_leaks; then
    echo "ok - sdk: no process, cgroup or mount left once the sandboxes were deleted and the server stopped"
else
    echo "not ok - sdk: leaks after all sandboxes were deleted and the server stopped (see above)"; rc=1
fi
if [ $rc != 0 ]; then
    echo "# server log (last 30 lines):"
    tail -30 "$tmp/server.log" | sed 's/^/#   /'
fi
exit $rc
