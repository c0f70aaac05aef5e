#!/bin/bash
# build-image.sh NAME [--config FILE] [--out FILE.tar | --push REF [--username U --password-stdin]]
#                [--from-host|--debootstrap] [--no-cache]
#
# Builds the image images/NAME (its packages, config.json, entrypoint.sh and
# files/) from Debian's packages as a one-layer OCI image layout tar and
# imports it as NAME into the image store of the server whose config is FILE
# (default: $SANDBOX_CONFIG_PATH, else the server's own default), then prints
# the name to use in image.uri. --out writes the tar to FILE.tar instead.
# --push REF also pushes the imported image to a registry (`opensandbox-server
# image push NAME REF`, with the store's [image] registry settings; --username
# and --password-stdin are passed on) and prints REF.
#
#   --from-host    the files of the packages as installed on this host (and
#                  of their installed dependencies): seconds; refuses when a
#                  package is not installed, naming it
#   --debootstrap  debootstrap --variant=minbase of the host's suite from the
#                  configured apt mirror, then apt-get install in a chroot:
#                  minutes, needs debootstrap and the mirror
# Default: --from-host when every package is installed here, else --debootstrap.
#
# The tar is cached in ${XDG_CACHE_HOME:-/var/cache}/opensandbox/images/
# as NAME-<sha256 of the inputs>.tar (inputs: the image's directory but its
# README.md, this script, the mode and the package versions), so a second
# build is instant.
# Environment: OSB_SERVER_BIN (default build/bin/opensandbox-server, else
# opensandbox-server on PATH), OSB_IMAGE_CACHE (the cache dir; the build's
# scratch dir is made there too), OSB_IMAGES_DIR (default images/).
# Exit status: 0 built; 1 failed; 2 bad usage (an unknown NAME lists the names).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
self="$here/scripts/build-image.sh"
images=${OSB_IMAGES_DIR:-$here/images}

die() {
    echo "build-image: $*" >&2
    exit 1
}
names() { (cd "$images" && for d in */; do [ -f "$d/packages" ] && printf ' %s' "${d%/}"; done); }
usage() {
    echo "usage: build-image.sh NAME [--config FILE] [--out FILE.tar | --push REF [--username U --password-stdin]]" >&2
    echo "                      [--from-host|--debootstrap] [--no-cache]" >&2
    echo "images:$(names)" >&2
    exit 2
}

name="" config=${SANDBOX_CONFIG_PATH:-} out="" push="" mode="" use_cache=1 push_auth=()
while [ $# -gt 0 ]; do
    case "$1" in
    --config) config=${2:?--config needs a FILE}; shift 2 ;;
    --config=*) config=${1#*=}; shift ;;
    --out) out=${2:?--out needs a FILE.tar}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --push) push=${2:?--push needs a REF}; shift 2 ;;
    --push=*) push=${1#*=}; shift ;;
    --username) push_auth+=(--username "${2:?--username needs a name}"); shift 2 ;;
    --password-stdin) push_auth+=(--password-stdin); shift ;;
    --from-host) mode=from-host; shift ;;
    --debootstrap) mode=debootstrap; shift ;;
    --no-cache) use_cache=0; shift ;;
    -h | --help) usage ;;
    -*) echo "build-image: unknown option $1" >&2; usage ;;
    *) [ -z "$name" ] || usage; name=$1; shift ;;
    esac
done
[ -n "$name" ] || usage
if [ -n "$push" ] && [ -n "$out" ]; then
    echo "build-image: --out and --push do not go together" >&2
    usage
fi
if [ ${#push_auth[@]} -gt 0 ] && [ -z "$push" ]; then
    echo "build-image: --username and --password-stdin go with --push" >&2
    usage
fi
case "$name" in */* | .*) name_ok=0 ;; *) name_ok=1 ;; esac
if [ "$name_ok" = 0 ] || [ ! -f "$images/$name/packages" ]; then
    echo "build-image: unknown image '$name'" >&2
    usage
fi
dir="$images/$name"
mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]\+/\n/g' "$dir/packages" | grep -v '^$')
[ ${#pkgs[@]} -gt 0 ] || die "$dir/packages lists no package"

if [ -z "$mode" ]; then
    mode=from-host
    for p in "${pkgs[@]}"; do
        if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
            mode=debootstrap
            break
        fi
    done
fi

server=${OSB_SERVER_BIN:-}
if [ -z "$server" ]; then
    if [ -x "$here/build/bin/opensandbox-server" ]; then
        server="$here/build/bin/opensandbox-server"
    else
        server=$(command -v opensandbox-server || true)
    fi
fi
srv() {
    [ -n "$server" ] || die "opensandbox-server not found (make, or set OSB_SERVER_BIN)"
    if [ -n "$config" ]; then "$server" --config "$config" "$@"; else "$server" "$@"; fi
}

# ---------------------------------------------------------------- the suite
# The host's Debian suite and the first apt mirror serving it
# (/etc/apt/sources.list and sources.list.d, one-line and deb822 formats).
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
mirror() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++;
            if ($2 ~ /^\[/) i++; if ($(i + 1) == s) { print $i; exit } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v s="$suite" 'BEGIN { RS = ""; FS = "\n" } {
            u = ""; ok = 0; en = 1
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[ \t]*/, "", u); sub(/[ \t].*/, "", u) }
                if ($i ~ /^Suites:/) { n = split($i, a, /[ \t]+/); for (j = 2; j <= n; j++) if (a[j] == s) ok = 1 }
                if ($i ~ /^Types:/ && $i !~ /[ \t]deb([ \t]|$)/) ok = 0
                if ($i ~ /^Enabled:[ \t]*no/) en = 0
            }
            if (ok && en && u != "") { print u; exit } }' "$f"
    done
}

# ---------------------------------------------------------------- cache key
if [ "$mode" = from-host ]; then
    versions=$(python3 "$here/scripts/build-image-host.py" closure "${pkgs[@]}") ||
        die "--from-host: the packages above are not installed on this host"
else
    # What apt on this host would install: the candidates of the listed packages.
    versions=$(apt-cache policy "${pkgs[@]}" 2>/dev/null | awk '/^[^ ]/ { p = $1 } /Candidate:/ { print p, $2 }')
    versions="$suite $(mirror | head -n1)
$versions"
fi
key=$({
    echo "mode $mode"
    echo "$versions"
    sha256sum "$self" "$here/scripts/build-image-host.py"
    # -L: a link to another image's file (playwright's entrypoint.sh) counts as its content.
    (cd "$dir" && find -L . -type f ! -name README.md | LC_ALL=C sort | xargs -d '\n' sha256sum)
} | sha256sum | cut -c1-64)
cache=${OSB_IMAGE_CACHE:-${XDG_CACHE_HOME:-/var/cache}/opensandbox/images}
tarball="$cache/$name-$key.tar"
mkdir -p "$cache"

# ---------------------------------------------------------------- rootfs
work=""
cleanup() {
    if [ -n "$work" ]; then
        umount "$work/root/proc" 2>/dev/null || true
        rm -rf "$work"
    fi
}
trap cleanup EXIT

minimal_etc() { # the files a root filesystem needs that no package lists
    local r=$1
    mkdir -p "$r"/{etc,tmp,var/tmp,root,home,dev,proc,sys,run,usr/local/bin}
    chmod 1777 "$r/tmp" "$r/var/tmp"
    chmod 700 "$r/root"
    if [ ! -e "$r/etc/passwd" ]; then
        if [ -f /usr/share/base-passwd/passwd.master ]; then
            cp /usr/share/base-passwd/passwd.master "$r/etc/passwd"
            cp /usr/share/base-passwd/group.master "$r/etc/group"
        else
            printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$r/etc/passwd"
            printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
        fi
        sed 's/:.*//; s/$/:*:19000:0:99999:7:::/' "$r/etc/passwd" >"$r/etc/shadow"
        chmod 640 "$r/etc/shadow"
    fi
    [ -e "$r/etc/nsswitch.conf" ] || cp /usr/share/base-files/nsswitch.conf "$r/etc/" 2>/dev/null ||
        printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >"$r/etc/nsswitch.conf"
    [ -e "$r/etc/hosts" ] || printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
    echo "$name" >"$r/etc/hostname"
    : >"$r/etc/resolv.conf"
    [ -e "$r/etc/os-release" ] || [ -L "$r/etc/os-release" ] || cp -P /etc/os-release "$r/etc/" 2>/dev/null || true
}

# --from-host: the packages' files are not copied twice: the layer is one tar
# of the host's files (the list below) followed by $work/root, which holds
# only what no package lists (the minimal /etc, the merged-/usr links, the
# image's own files); on a name in both the later entry wins.
listed() { grep -qzxF "$1" "$work/files"; }

from_host() {
    local r=$1 l
    mkdir -p "$r"
    python3 "$here/scripts/build-image-host.py" files "${pkgs[@]}" >"$work/files"
    # The host's merged-/usr links, so that /bin/x and /usr/bin/x are one file.
    for l in bin sbin lib lib32 lib64 libx32; do
        if [ -L "/$l" ] && ! listed "$l"; then ln -s "$(readlink "/$l")" "$r/$l"; fi
    done
    if ! listed usr/bin/sh && listed usr/bin/dash; then
        mkdir -p "$r/usr/bin"
        ln -s dash "$r/usr/bin/sh"
    fi
    minimal_etc "$r"
    if listed etc/os-release; then rm -f "$r/etc/os-release"; fi
    if listed etc/ssl/certs && [ -d /etc/ssl/certs ]; then
        mkdir -p "$r/etc/ssl"
        cp -a /etc/ssl/certs "$r/etc/ssl/" # made by ca-certificates' postinst
    fi
    # ld.so's cache (libc-bin's trigger writes it): the host's, whose
    # libraries are at the same paths; an entry for a library the image
    # lacks only sends ld.so on to its default directories.
    if [ -f /etc/ld.so.cache ]; then cp /etc/ld.so.cache "$r/etc/"; fi
}

from_debootstrap() {
    local r=$1 m
    command -v debootstrap >/dev/null || die "--debootstrap needs debootstrap (apt-get install debootstrap)"
    [ -n "$suite" ] || die "no VERSION_CODENAME in /etc/os-release"
    m=$(mirror | head -n1)
    [ -n "$m" ] || die "no apt source for suite $suite in /etc/apt/sources.list(.d)"
    echo "build-image: debootstrap --variant=minbase $suite from $m" >&2
    debootstrap --variant=minbase "$suite" "$r" "$m" >"$work/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see the end of its log:
$(tail -n 20 "$work/debootstrap.log")"
    {
        echo "deb $m $suite main"
        echo "deb $m $suite-updates main"
        # Security updates from the host's sources, when it has them.
        sec=$(grep -rhoE 'https?://[^ ]*debian-security[^ ]*' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null | head -n1 || true)
        [ -z "$sec" ] || echo "deb $sec $suite-security main"
    } >"$r/etc/apt/sources.list"
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
    chmod 755 "$r/usr/sbin/policy-rc.d"
    mount -t proc proc "$r/proc"
    if ! { chroot "$r" apt-get -q update >"$work/apt.log" 2>&1 &&
        chroot "$r" env DEBIAN_FRONTEND=noninteractive apt-get -q -y install \
            --no-install-recommends "${pkgs[@]}" >>"$work/apt.log" 2>&1; }; then
        die "apt-get install in the chroot failed; see the end of its log:
$(tail -n 20 "$work/apt.log")"
    fi
    umount "$r/proc"
    chroot "$r" apt-get clean
    rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/log/apt/* \
        "$r"/var/log/dpkg.log "$r"/usr/sbin/policy-rc.d "$r"/usr/share/doc/* \
        "$r"/usr/share/man/* "$r"/usr/share/info/*
    find "$r/var/cache/debconf" -name '*-old' -delete 2>/dev/null || true
    minimal_etc "$r"
}

image_files() { # the image's own files on top of the packages
    local r=$1
    if [ -d "$dir/files" ]; then cp -a "$dir/files/." "$r/"; fi
    if [ -f "$dir/entrypoint.sh" ]; then install -m 755 "$dir/entrypoint.sh" "$r/usr/local/bin/entrypoint.sh"; fi
    if [ -f "$dir/package-lock.json" ]; then
        # npm packages, pinned by the lock file, installed on this host into
        # the image (pure JavaScript: the host's node need not match).
        command -v npm >/dev/null || die "$name needs npm on this host for package-lock.json"
        mkdir -p "$r/opt/$name"
        cp "$dir/package.json" "$dir/package-lock.json" "$r/opt/$name/"
        (cd "$r/opt/$name" && npm ci --omit=dev --no-audit --no-fund --ignore-scripts >"$work/npm.log" 2>&1) ||
            die "npm ci failed:
$(tail -n 20 "$work/npm.log")"
        rm -rf "$r/opt/$name/.npm" "$r/root/.npm"
    fi
}

go_arch() {
    case "$(dpkg --print-architecture)" in
    amd64) echo amd64 ;; arm64) echo arm64 ;; armhf | armel) echo arm ;; i386) echo 386 ;;
    ppc64el) echo ppc64le ;; s390x) echo s390x ;; riscv64) echo riscv64 ;; *) dpkg --print-architecture ;;
    esac
}

# blob FILE: moves FILE into the layout's blobs; prints "digest size".
blob() {
    local h s
    h=$(sha256sum "$1" | cut -c1-64)
    s=$(stat -c %s "$1")
    mv "$1" "$work/oci/blobs/sha256/$h"
    echo "sha256:$h $s"
}

pack() { # rootfs -> OCI image layout tar at $1
    local r=$work/root dst=$1 diff lsize ldigest cdigest csize mdigest msize zmt comp
    mkdir -p "$work/oci/blobs/sha256"
    if command -v zstd >/dev/null; then
        comp=(zstd -q -T0 -3)
        zmt=zstd
    else
        comp=(gzip -6)
        zmt=gzip
    fi
    mkfifo "$work/fifo"
    sha256sum <"$work/fifo" | cut -c1-64 >"$work/diffid" &
    local sum=$!
    local src=(-C "$r" --sort=name .)
    if [ "$mode" = from-host ]; then
        src=(-C / --null --no-recursion -T "$work/files" --no-null --recursion -C "$r" .)
    fi
    # Exit status 1 is "file changed as we read it" (a host file being
    # updated): the copy taken is still whole.
    { tar --numeric-owner --xattrs --xattrs-include='security.capability' \
        --warning=no-file-changed -cf - "${src[@]}" || [ $? = 1 ]; } |
        tee "$work/fifo" | "${comp[@]}" >"$work/layer"
    wait "$sum"
    diff=$(cat "$work/diffid")
    read -r ldigest lsize < <(blob "$work/layer")
    local cfg
    cfg=$(cat "$dir/config.json" 2>/dev/null || echo '{}')
    printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"scripts/build-image.sh %s --%s"}]}' \
        "$(go_arch)" "$cfg" "$diff" "$name" "$mode" >"$work/config"
    read -r cdigest csize < <(blob "$work/config")
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+%s","digest":"%s","size":%s}]}' \
        "$cdigest" "$csize" "$zmt" "$ldigest" "$lsize" >"$work/manifest"
    read -r mdigest msize < <(blob "$work/manifest")
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
        "$mdigest" "$msize" "$name" >"$work/oci/index.json"
    printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
    tar -C "$work/oci" --numeric-owner --owner=0 --group=0 -cf "$dst.tmp" oci-layout index.json blobs
    mv "$dst.tmp" "$dst"
}

# ---------------------------------------------------------------- build
t0=$(date +%s.%N)
if [ "$use_cache" = 1 ] && [ -f "$tarball" ]; then
    echo "build-image: cache hit: $tarball" >&2
else
    [ "$(id -u)" = 0 ] || die "building needs root (file owners, chroot)"
    work=$(mktemp -d "$cache/.build-$name.XXXXXX")
    echo "build-image: building $name ($mode, ${#pkgs[@]} packages)" >&2
    if [ "$mode" = from-host ]; then from_host "$work/root"; else from_debootstrap "$work/root"; fi
    image_files "$work/root"
    pack "$tarball"
    rm -rf "$work"
    work=""
    echo "build-image: built $tarball ($(du -sh "$tarball" | cut -f1)) in $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s" >&2
fi

if [ -n "$out" ]; then
    cp --reflink=auto "$tarball" "$out"
    echo "build-image: wrote $out" >&2
    echo "$out"
    exit 0
fi
# Replace an older import of the same name (refused while a sandbox uses it).
if srv image list 2>/dev/null | awk -v n="$name" '$1 == n { f = 1 } END { exit !f }'; then
    srv image rm "$name" >/dev/null || die "image $name is in the store and cannot be replaced (in use?)"
fi
srv image import "$name" "$tarball" >&2 || die "image import failed"
if [ -n "$push" ]; then
    srv image push "$name" "$push" "${push_auth[@]}" >&2 || die "image push to $push failed"
    echo "$push"
    exit 0
fi
echo "$name"
