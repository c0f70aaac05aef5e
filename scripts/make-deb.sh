#!/bin/sh
# make-deb.sh STAGE OUTDIR: turns STAGE, the tree `make install
# DESTDIR=STAGE PREFIX=/usr` made, into OUTDIR/opensandbox_<version>_<arch>.deb
# with dpkg-deb (no debhelper): adds the systemd unit, the service's config
# /etc/opensandbox/config.toml (a conffile), compressed man pages, the
# maintainer scripts of packaging/debian/ and a control file whose Depends
# come from dpkg-shlibdeps. `make deb` runs it; docs/server.md describes the
# package.
set -eu
stage=$(cd "$1" && pwd) out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
arch=$(dpkg --print-architecture)
pkg=opensandbox

install -D -m 0644 "$top/packaging/opensandbox-server.service" \
    "$stage/lib/systemd/system/opensandbox-server.service"

# The service's config: init-config's, with the state dir systemd makes
# (StateDirectory=), the programs where the package puts them and the
# default subnet (init-config picks one free on the machine it runs on: this
# is the build machine; the server names a free one if it overlaps).
cfg=$stage/etc/opensandbox/config.toml
mkdir -p "$(dirname "$cfg")"
"$stage/usr/bin/opensandbox-server" init-config "$cfg" >/dev/null 2>&1
sed -i -e 's|^state_dir = .*|state_dir = "/var/lib/opensandbox"|' \
    -e 's|^# execd_path = .*|# execd_path = "/usr/bin/execd"|' \
    -e 's|^# init_path = .*|# init_path = "/usr/bin/osb-sandbox-init"|' \
    -e 's|^subnet = .*|subnet = "10.88.0.0/16"|' \
    -e 's|^# api_key = .*|# The service reads its key from /etc/opensandbox/server.env.\n&|' \
    -e 's|^# volumes_dir = .*|# volumes_dir = "/var/lib/opensandbox/volumes"|' "$cfg"
for want in 'state_dir = "/var/lib/opensandbox"' 'subnet = "10.88.0.0/16"' \
    '# execd_path = "/usr/bin/execd"' '# init_path = "/usr/bin/osb-sandbox-init"'; do
    grep -qxF "$want" "$cfg" || {
        echo "make-deb: init-config's output changed: no line '$want'" >&2
        exit 1
    }
done
chmod 0644 "$cfg"

# Debian keeps man pages compressed, without a time stamp (reproducible).
find "$stage/usr/share/man" -type f ! -name '*.gz' -exec gzip -9nf {} +

mkdir -p "$stage/DEBIAN"
for s in postinst prerm postrm; do
    install -m 0755 "$top/packaging/debian/$s" "$stage/DEBIAN/$s"
done
echo /etc/opensandbox/config.toml >"$stage/DEBIAN/conffiles"
# libopensandbox.so.0 is a shared library: refresh ld.so's cache.
echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"

# Depends: the libraries the programs link, as dpkg-shlibdeps finds them
# (it wants a debian/control beside it; a scratch one serves).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" >"$scratch/debian/control"
elves=$(find "$stage/usr/bin" "$stage/usr/lib" -type f -perm -0100)
# shellcheck disable=SC2086 # one path a word
deps=$(cd "$scratch" && dpkg-shlibdeps -O -l"$stage/usr/lib" $elves 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || {
    echo "make-deb: dpkg-shlibdeps found no dependencies" >&2
    exit 1
}

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: OpenSandbox in C <opensandbox@localhost>
Installed-Size: $size
Depends: $deps
Suggests: runsc
Section: admin
Priority: optional
Description: self-hosted sandbox server, wire-compatible with OpenSandbox
 opensandbox-server hands AI agents fresh, disposable, isolated Linux
 environments over an HTTP API, on its own namespace runtime (no Docker) or
 on gVisor. The official OpenSandbox SDKs, command line and MCP server work
 against it unchanged. Also: execd (the daemon inside every sandbox), the
 osb command line, the opensandbox-mcp server and libopensandbox.
 .
 The opensandbox-server service starts on installation, listening on
 127.0.0.1:8080; its API key is in /etc/opensandbox/server.env.
EOF

deb=$out/${pkg}_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
