#!/bin/bash
# The desktop image's entrypoint: Xvfb, openbox, xterm, Chromium, x11vnc and
# noVNC (websockify on port 6080: /vnc.html, WebSocket /websockify), started
# in that order, each once the one before it is ready. The screen size comes
# from SCREEN_RESOLUTION=WIDTHxHEIGHT (default 1280x800); VNC_PASSWORD sets a
# VNC password (default: none, the server proxy's auth guards the port). The
# credential vault's CA, when the sandbox has one, is added to Chromium's NSS
# database first. Logs go to /tmp/desktop/*.log. Stays in the foreground
# while websockify runs.
set -u
res=${SCREEN_RESOLUTION:-1280x800}
if [[ ! $res =~ ^[0-9]+x[0-9]+$ ]]; then
    echo "entrypoint: SCREEN_RESOLUTION=$res is not WIDTHxHEIGHT; using 1280x800" >&2
    res=1280x800
fi
export DISPLAY=${DISPLAY:-:0}
n=${DISPLAY#:}
n=${n%%.*}
logs=/tmp/desktop
mkdir -p "$logs"

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
    local what=$1 secs=$2 i
    shift 2
    for ((i = 0; i < secs * 10; i++)); do
        if "$@" >/dev/null 2>&1; then
            echo "entrypoint: $what ready" >&2
            return 0
        fi
        sleep 0.1
    done
    echo "entrypoint: $what not ready after ${secs}s; see $logs" >&2
    return 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wm_running() { [[ $(xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null) == *"window id"* ]]; }

Xvfb "$DISPLAY" -screen 0 "${res}x24" -noreset -nolisten tcp >"$logs/xvfb.log" 2>&1 &
wait_for Xvfb 20 xdpyinfo -display "$DISPLAY"

openbox >"$logs/openbox.log" 2>&1 &
# openbox is up once it has claimed the window manager selection.
wait_for openbox 10 wm_running

xterm -geometry 100x30+10+10 >"$logs/xterm.log" 2>&1 &

# Chromium trusts its user's NSS database, not /etc/ssl/certs: a sandbox
# with credentialProxy gets the vault's CA at /etc/opensandbox/vault-ca.pem,
# added there (as "opensandbox-vault") so pages through the vault load.
ca=/etc/opensandbox/vault-ca.pem
if [ -s "$ca" ]; then
    db="${HOME:-/root}/.pki/nssdb"
    if ! { mkdir -p "$db" &&
        { [ -f "$db/cert9.db" ] || certutil -d "sql:$db" -N --empty-password; } &&
        { certutil -d "sql:$db" -D -n opensandbox-vault >/dev/null 2>&1 || :; } &&
        certutil -d "sql:$db" -A -t C,, -n opensandbox-vault -i "$ca"; } >"$logs/certutil.log" 2>&1; then
        echo "entrypoint: could not add $ca to $db; see $logs/certutil.log" >&2
    fi
fi

/usr/lib/chromium/chromium --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --no-default-browser-check --user-data-dir=/tmp/chromium-desktop \
    --window-position=0,0 --window-size="${res/x/,}" \
    --remote-debugging-address=127.0.0.1 --remote-debugging-port=9222 about:blank \
    >"$logs/chromium.log" 2>&1 &
wait_for Chromium 30 port_open 9222

# VNC_PASSWORD, when set, is asked by x11vnc (and noVNC); it goes through a
# file x11vnc removes once read, never through a command line.
vnc_auth=(-nopw)
if [ -n "${VNC_PASSWORD:-}" ]; then
    (umask 077 && printf '%s\n' "$VNC_PASSWORD" >"$logs/vncpasswd")
    vnc_auth=(-passwdfile "rm:$logs/vncpasswd")
fi
x11vnc -display "$DISPLAY" -forever -shared "${vnc_auth[@]}" -localhost -rfbport 5900 -quiet \
    >"$logs/x11vnc.log" 2>&1 &
wait_for x11vnc 15 port_open 5900

websockify --web /usr/share/novnc 6080 127.0.0.1:5900 >"$logs/websockify.log" 2>&1 &
ws=$!
wait_for noVNC 15 port_open 6080
echo "entrypoint: desktop ${res} on $DISPLAY; noVNC on :6080/vnc.html" >&2
wait "$ws"
