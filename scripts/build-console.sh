#!/bin/sh
# build-console.sh OUT: the web console's assets in OUT (index.html, app.js,
# app.css from console/src; vendor.js and vendor.css from the npm packages
# pinned in console/package-lock.json: xterm.js and its fit add-on). The
# Makefile embeds them into opensandbox-server. `npm ci` runs in
# OUT/npm and only when the lock file changed since the last run.
set -eu
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/npm"
sum=$(sha256sum "$root/console/package-lock.json" | cut -d' ' -f1)
stamp=$out/npm/node_modules/.osb-lock-sha256
if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    command -v npm >/dev/null || {
        echo "build-console: npm is missing (scripts/install-deps.sh installs it)" >&2
        exit 1
    }
    cp "$root/console/package.json" "$root/console/package-lock.json" "$out/npm/"
    (cd "$out/npm" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 || {
        echo "build-console: npm ci failed (is the npm registry reachable?)" >&2
        exit 1
    }
    echo "$sum" >"$stamp"
fi
nm=$out/npm/node_modules/@xterm
# One file; the source map comments go (no maps are served).
for f in "$nm/xterm/lib/xterm.js" "$nm/addon-fit/lib/addon-fit.js"; do
    sed '/^\/\/# sourceMappingURL=/d' "$f"
    echo
done >"$out/vendor.js"
cp "$nm/xterm/css/xterm.css" "$out/vendor.css"
cp "$root/console/src/index.html" "$root/console/src/app.js" "$root/console/src/app.css" "$out/"
