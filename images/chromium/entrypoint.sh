#!/bin/sh
# The chromium image's entrypoint: trusts the credential vault's CA, then
# runs Chromium with the arguments it was given (config.json's Entrypoint
# flags and Cmd), in its place (exec: Chromium is the sandbox's process).
#
# Chromium on Linux does not read /etc/ssl/certs or SSL_CERT_FILE: it trusts
# the NSS database of its user, $HOME/.pki/nssdb. A sandbox created with
# credentialProxy gets the vault's CA at /etc/opensandbox/vault-ca.pem;
# when that file exists it is added to that database (created if need be)
# as "opensandbox-vault", trusted to issue server certificates, so pages
# through the vault load. Without the file nothing changes. A failure is
# reported on stderr and Chromium starts all the same.
#
# OSB_CHROMIUM (default /usr/lib/chromium/chromium) names the binary: not
# Debian's /usr/bin/chromium wrapper, which reads flags from /etc/chromium.d.
ca=${OSB_VAULT_CA:-/etc/opensandbox/vault-ca.pem}
if [ -s "$ca" ]; then
    db="${HOME:-/root}/.pki/nssdb"
    if ! command -v certutil >/dev/null 2>&1; then
        echo "entrypoint: $ca not trusted: no certutil (libnss3-tools)" >&2
    elif ! { mkdir -p "$db" &&
        { [ -f "$db/cert9.db" ] || certutil -d "sql:$db" -N --empty-password; } &&
        { certutil -d "sql:$db" -D -n opensandbox-vault >/dev/null 2>&1 || :; } &&
        certutil -d "sql:$db" -A -t C,, -n opensandbox-vault -i "$ca"; }; then
        echo "entrypoint: could not add $ca to the NSS database $db" >&2
    fi
fi
exec "${OSB_CHROMIUM:-/usr/lib/chromium/chromium}" "$@"
