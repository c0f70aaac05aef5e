#!/bin/sh
# The entrypoint of the chromium and playwright images: trusts the credential
# vault's CA, then runs its arguments in its place (exec: in the chromium
# image they are Chromium's binary, its flags and config.json's Cmd; in the
# playwright image, the Cmd).
#
# Chromium on Linux does not read /etc/ssl/certs or SSL_CERT_FILE: it trusts
# the NSS database of its user, $HOME/.pki/nssdb. A sandbox created with
# credentialProxy gets the vault's CA at /etc/opensandbox/vault-ca.pem;
# when that file exists it is added to that database (created if need be)
# as "opensandbox-vault", trusted to issue server certificates, so pages
# through the vault load. Without the file nothing changes. A failure is
# reported on stderr and Chromium starts all the same.
#
# The chromium image runs /usr/lib/chromium/chromium: not Debian's
# /usr/bin/chromium wrapper, which reads flags from /etc/chromium.d.
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
exec "$@"
