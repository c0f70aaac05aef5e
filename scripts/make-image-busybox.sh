#!/bin/bash
# make-image-busybox.sh OUT.tar: a busybox root filesystem as a tar, ready for
#   opensandbox-server image import busybox OUT.tar
# Built from Debian's busybox-static by make-busybox-rootfs.sh (no execd
# inside: the runtime bind-mounts its own). Takes milliseconds: one cp, one
# busybox --install, one tar.
set -euo pipefail
out=${1:?usage: make-image-busybox.sh OUT.tar}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/osb-bbimage.XXXXXX)
trap 'rm -rf "$dir"' EXIT
EXECD_BIN=/nonexistent "$here/make-busybox-rootfs.sh" "$dir" 2>/dev/null
rmdir "$dir/opt/opensandbox" "$dir/opt" 2>/dev/null || true
chmod 755 "$dir"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
tar -C "$dir" --numeric-owner -cf "$out" .
