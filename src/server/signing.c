#include "server/signing.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "common/keyfile.h"
#include "common/xalloc.h"

#define KEY_LEN 32
#define SIG_HEX 32

struct osb_signer {
    unsigned char key[KEY_LEN];
};

int osb_signer_open(const char *key_path, struct osb_signer **out, struct osb_err *err)
{
    struct osb_signer *s = osb_xcalloc(1, sizeof *s);
    if (osb_keyfile_load(key_path, s->key, KEY_LEN, err) < 0) {
        osb_signer_free(s);
        *out = NULL;
        return -1;
    }
    *out = s;
    return 0;
}

void osb_signer_free(struct osb_signer *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s->key, sizeof s->key);
    free(s);
}

static void base36(int64_t v, char out[16])
{
    char tmp[16];
    size_t n = 0;
    uint64_t u = v < 0 ? 0 : (uint64_t)v;
    do {
        tmp[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[u % 36];
        u /= 36;
    } while (u && n < sizeof tmp - 1);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

static void sign(const struct osb_signer *s, const char *id, long port, const char *exp36,
                 char hex[SIG_HEX + 1])
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "osb-endpoint-v1\n%s\n%ld\n%s\n", id, port, exp36);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    HMAC(EVP_sha256(), s->key, KEY_LEN, (const unsigned char *)msg,
         n > 0 && (size_t)n < sizeof msg ? (size_t)n : 0, md, &ml);
    for (size_t i = 0; i < SIG_HEX / 2; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

void osb_signer_ticket(const struct osb_signer *s, const char *id, long port, int64_t expires,
                       char out[OSB_TICKET_MAX])
{
    char exp36[16], hex[SIG_HEX + 1];
    base36(expires, exp36);
    sign(s, id, port, exp36, hex);
    snprintf(out, OSB_TICKET_MAX, "%s-%s", exp36, hex);
}

/* base36 digits (lowercase, no leading zero) to seconds; -1 if malformed. */
static int64_t parse36(const char *s, size_t n)
{
    if (n == 0 || n > 12 || (n > 1 && s[0] == '0'))
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = strchr("0123456789abcdefghijklmnopqrstuvwxyz", s[i]);
        if (!d || !s[i])
            return -1;
        v = v * 36 + (d - "0123456789abcdefghijklmnopqrstuvwxyz");
    }
    return v;
}

bool osb_signer_check(const struct osb_signer *s, const char *id, long port, const char *ticket,
                      int64_t now)
{
    if (!s || !ticket || strlen(id) > 200)
        return false;
    const char *dash = strchr(ticket, '-');
    if (!dash || strlen(dash + 1) != SIG_HEX)
        return false;
    int64_t exp = parse36(ticket, (size_t)(dash - ticket));
    if (exp < 0 || exp < now)
        return false;
    char exp36[16], hex[SIG_HEX + 1];
    base36(exp, exp36);
    sign(s, id, port, exp36, hex);
    return CRYPTO_memcmp(hex, dash + 1, SIG_HEX) == 0;
}
