#!/bin/bash
# make-busybox-rootfs.sh DIR: a minimal root filesystem made of Debian's
# busybox-static and nothing else (no libc, no bash, no NSS), used to prove
# that the static execd runs as PID 1 in any image. Merged-/usr layout like
# Debian: /bin, /sbin and /usr/sbin point at /usr/bin, which holds busybox and
# one symlink per applet. Copies $EXECD_BIN (default build/bin/execd) to
# DIR/opt/opensandbox/execd. Takes a few milliseconds: no process per link.
set -euo pipefail
dir=${1:?usage: make-busybox-rootfs.sh DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
execd=${EXECD_BIN:-$here/build/bin/execd}
bb=$(readlink -f "$(command -v busybox || echo /bin/busybox)")
if ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
    echo "make-busybox-rootfs: $bb is not static (install busybox-static)" >&2
    exit 1
fi

mkdir -p "$dir"/usr/bin "$dir"/etc "$dir"/tmp "$dir"/dev "$dir"/proc "$dir"/sys \
         "$dir"/root "$dir"/opt/opensandbox "$dir"/var/tmp
chmod 1777 "$dir"/tmp "$dir"/var/tmp
for l in bin sbin; do [ -e "$dir/$l" ] || ln -s usr/bin "$dir/$l"; done
[ -e "$dir/usr/sbin" ] || ln -s bin "$dir/usr/sbin"
cp "$bb" "$dir/usr/bin/busybox"
# --install -s DIR links every applet into DIR, pointing at the running
# binary's path (/usr/bin/busybox on Debian), which is also its path inside
# the new root.
"$bb" --install -s "$dir/usr/bin"

cat >"$dir/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
P
cat >"$dir/etc/group" <<'G'
root:x:0:
daemon:x:1:
users:x:100:
nogroup:x:65534:
G
echo busybox-root >"$dir/etc/hostname"
printf '127.0.0.1 localhost\n' >"$dir/etc/hosts"

# Device nodes when we may create them; callers can bind-mount /dev instead.
if [ "$(id -u)" = 0 ]; then
    mk() { [ -e "$dir/dev/$1" ] || mknod -m "$2" "$dir/dev/$1" c "$3" "$4" 2>/dev/null || true; }
    mk null 666 1 3; mk zero 666 1 5; mk full 666 1 7
    mk random 666 1 8; mk urandom 666 1 9; mk tty 666 5 0
fi

if [ -f "$execd" ]; then
    cp "$execd" "$dir/opt/opensandbox/execd"
    chmod 755 "$dir/opt/opensandbox/execd"
else
    echo "make-busybox-rootfs: $execd not found; execd not copied" >&2
fi
