#!/bin/sh
# Installs dependencies with apt-get: `build` (default) what `make` needs to
# compile and link the programs (npm too: the web console's assets come from
# npm packages pinned in console/package-lock.json); `demo` what scripts/demo-*.sh need on
# top (curl, python3, Node.js); `test` what `make test`, `make check` and
# `make bench` need on top (the fuzz compiler, the format and analyzer
# tools, the images, registry and network tools the integration tests drive,
# the language runtimes of the code-context tests, Node.js for tests/sdk,
# Debian's Chromium for the console's browser test).
# Idempotent: does nothing (and needs no network) when everything is present.
# The SDK itself comes from npm (tests/sdk/test_sdk.sh runs `npm ci`).
set -eu

BUILD_PKGS="build-essential make pkg-config
libuv1-dev libhttp-parser-dev libjansson-dev libnghttp2-dev
libcurl4-openssl-dev libsqlite3-dev libssl-dev libseccomp-dev libcap-dev
libnftnl-dev libmnl-dev libarchive-dev zlib1g-dev libzstd-dev"
TEST_PKGS="clang libclang-rt-14-dev clang-format clang-tools
python3 python3-yaml busybox-static util-linux procps file curl
docker-registry apache2-utils zstd iperf3 nftables iproute2 conntrack e2fsprogs
default-jdk-headless golang-go node-typescript runsc chromium
chromium-driver fonts-noto-cjk fonts-noto-color-emoji libnss3-tools
xvfb xdotool openbox x11-apps x11-xserver-utils x11-utils xterm x11vnc novnc websockify
python3-numpy python3-pandas python3-scipy python3-matplotlib golang"

# Node.js (any source: Debian's nodejs+npm or a preinstalled one) runs the SDK.
NODE_PKGS=""
command -v npm >/dev/null 2>&1 || NODE_PKGS="nodejs npm"

case "${1:-build}" in
build) PKGS="$BUILD_PKGS $NODE_PKGS" ;;
demo) PKGS="$BUILD_PKGS python3 curl $NODE_PKGS" ;;
test) PKGS="$BUILD_PKGS $TEST_PKGS $NODE_PKGS" ;;
*)
    echo "usage: $0 [build|demo|test]" >&2
    exit 2
    ;;
esac

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing:$missing (run as root)" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
