# A private opensandbox-server for the node suites (tests/sdk/test_sdk.sh,
# test_sdk_gvisor.sh, test_mcp.sh), sourced by them. The server gets a free
# loopback port, a temporary state dir and API key, a 10.X.0.0/16 subnet and
# a userns range of its own, pull_policy never and a DNS upstream on this
# machine (a closed local port), so nothing leaves the machine. Sandboxes
# outlive their server by design (a restart re-adopts them), so every exit
# path deletes them through the API before stopping it, then checks that no
# process, cgroup or mount of this server's is left.
#
# The caller sets ROOT and SERVER, defines `fail MSG [LINE...]` (prints "not
# ok" and exits) and sets `label` (the TAP prefix, e.g. "sdk").

# npm_install DIR PKG: `npm ci` in DIR when node_modules is missing or older
# than the lock file; offline, a PKG already installed is used.
npm_install() {
    local dir=$1 pkg=$2 sum stamp log=/tmp/osb-$label-npm.log
    sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    stamp=$dir/node_modules/.osb-lock-sha256
    [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ] && return 0
    if (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$log" 2>&1); then
        echo "$sum" >"$stamp"
    elif [ -f "$dir/node_modules/$pkg/package.json" ]; then
        echo "# npm ci failed (offline?); using the $pkg already in node_modules"
    else
        fail "npm ci failed and $pkg is not installed" "$(tail -5 "$log")"
    fi
}

# A [native] userns_range of its own (100 ranges in [2^24, 2^31)): servers
# claim theirs host-wide and other tests' servers run beside this one; on an
# overlap the server does not start and server_start picks another.
pick_range() { echo "$(((1 << 24) + $(od -An -N4 -tu4 /dev/urandom) % 32000 * 65536)):6553600"; }

# server_init RUNTIME [EXTRA_TOML]: sets tmp, state, port, key, subnet, base,
# cg_base and writes $tmp/sandbox.toml (EXTRA_TOML appended), installs the
# EXIT trap.
server_init() {
    local runtime=$1 extra=${2:-} x
    tmp=$(mktemp -d "/tmp/osb-$label.XXXXXX")
    state=$tmp/state
    mkdir -p "$state"
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    key=$label-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    base=http://127.0.0.1:$port
    # A free 10.X.0.0/16 held with an flock on fd 9 for as long as this script
    # (or the server, which inherits fd 9) lives: serverlib.free_subnet's lock
    # files, so concurrent test runs never share a subnet.
    subnet=
    mkdir -p /tmp/osb-test-subnets
    for x in $(cd "$ROOT/tests/integration" && /usr/bin/python3 -c 'import serverlib; print(*serverlib.subnet_candidates())'); do
        exec 9>"/tmp/osb-test-subnets/10.$x.lock"
        if flock -n 9; then subnet=10.$x.0.0/16; break; fi
        exec 9>&-
    done
    [ -n "$subnet" ] || fail "no free 10.X.0.0/16 subnet for the server"
    # The runtime names its cgroups "opensandbox-<FNV-1a of the state dir>":
    # where to look for processes the server left behind.
    cg_base=$(/usr/bin/python3 -c '
import sys
h = 2166136261
for c in sys.argv[1].encode(): h = ((h ^ c) * 16777619) & 0xffffffff
print("opensandbox-%08x" % h)' "$state")
    cat >"$tmp/sandbox.toml" <<EOT
[server]
host = "127.0.0.1"
port = $port
api_key = "$key"

[runtime]
type = "$runtime"

[native]
state_dir = "$state"
userns_range = "$(pick_range)"

# Nothing reaches a registry (none is outside this machine).
[image]
pull_policy = "never"

# NAT networks whose DNS never leaves this machine: the forwarder's upstream
# is a closed local port (egress tests rely on it).
[network]
mode = "nat"
subnet = "$subnet"
pool_size = 2
dns_upstreams = ["127.0.0.1:9"]

[egress]
mode = "dns+nft"
$extra
EOT
    server_pid=
    trap server_cleanup EXIT
    trap 'exit 130' INT TERM
}

# server_start: runs the server until GET /health answers (another userns
# range when its own overlaps another server's).
server_start() {
    local up=0 log
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
}

server_stop() {
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

# Deletes every sandbox of the server; prints their ids.
delete_all() {
    local ids id
    ids=$(curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" "$base/v1/sandboxes?pageSize=200" | /usr/bin/python3 -c \
        'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["items"]))' 2>/dev/null)
    for id in $ids; do
        curl -s --max-time 10 -H "OPEN-SANDBOX-API-KEY: $key" -X DELETE -o /dev/null "$base/v1/sandboxes/$id"
    done
    echo "$ids"
}

# Processes, sandbox cgroups and host mounts of this run's server still there
# after it stopped: listed as "# " lines, then removed (they are this run's
# own). Fails when there were any. The empty per-state-dir base cgroups stay
# by design (kept for a restart); with the state dir about to go, they are
# removed here without complaint.
reap_leaks() {
    local cgdirs subs procs mounts d p
    cgdirs=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "$cg_base" 2>/dev/null)
    subs=$(for d in $cgdirs; do find "$d" -mindepth 1 -type d; done)
    procs=$(for d in $cgdirs; do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -un)
    mounts=$(awk -v p="$tmp/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo)
    # gVisor's runsc processes run outside those cgroups; they name the state
    # dir (so does the grep itself, gone by the time of the -e test).
    procs=$(for p in $procs $(grep -lF "$state/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
        [ -e "/proc/$p" ] && echo "$p"; done | sort -un)
    for d in $subs; do echo "#   leaked cgroup $d"; done
    for d in $mounts; do echo "#   leaked mount $d"; done
    for p in $procs; do echo "#   leaked process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
    for p in $procs; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$procs" ] && sleep 0.2
    for d in $cgdirs; do find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; done
    [ -z "$subs$procs$mounts" ]
}

# The EXIT trap: whatever happened, no sandbox, server or state dir stays
# (KEEP=1 keeps the state dir and logs).
server_cleanup() {
    [ -n "$server_pid" ] && delete_all >/dev/null
    server_stop
    reap_leaks
    if [ "${KEEP:-0}" = 1 ]; then echo "# kept $tmp"; else remove_tmp; fi
}

# server_finish RC: the closing checks after the tests (no sandbox left, no
# sanitizer report, no leak once stopped); prints the log tail on failure and
# returns the combined status.
server_finish() {
    local rc=$1 left
    left=$(delete_all)
    if [ -z "$left" ]; then
        echo "ok - $label: the tests left no sandbox behind"
    else
        echo "not ok - $label: sandboxes left behind after the tests (now deleted): $left"; rc=1
    fi
    server_stop
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$tmp/server.log"; then
        echo "not ok - $label: the server reported sanitizer errors"; rc=1
        grep -E -m 10 'Sanitizer|runtime error:|^    #[0-9]' "$tmp/server.log" | head -30 | sed 's/^/#   /'
    fi
    if reap_leaks; then
        echo "ok - $label: no process, cgroup or mount left once the sandboxes were deleted and the server stopped"
    else
        echo "not ok - $label: leaks after all sandboxes were deleted and the server stopped (see above)"; rc=1
    fi
    if [ $rc != 0 ]; then
        echo "# server log (last 30 lines):"
        tail -30 "$tmp/server.log" | sed 's/^/#   /'
    fi
    return $rc
}
