#include "vault/tlshello.h"

#include <stdint.h>
#include <string.h>

/* A cursor over a byte range; every read checks the bounds. */
struct cur {
    const unsigned char *p;
    size_t n;
};

static int take(struct cur *c, size_t k, struct cur *out)
{
    if (c->n < k)
        return -1;
    if (out)
        *out = (struct cur){c->p, k};
    c->p += k;
    c->n -= k;
    return 0;
}

static int u8(struct cur *c, size_t *v)
{
    if (c->n < 1)
        return -1;
    *v = c->p[0];
    return take(c, 1, NULL);
}

static int u16(struct cur *c, size_t *v)
{
    if (c->n < 2)
        return -1;
    *v = (size_t)c->p[0] << 8 | c->p[1];
    return take(c, 2, NULL);
}

/* A length-prefixed vector (1 or 2 length bytes). */
static int vec(struct cur *c, int lenbytes, struct cur *out)
{
    size_t k;
    if ((lenbytes == 1 ? u8(c, &k) : u16(c, &k)) < 0)
        return -1;
    return take(c, k, out);
}

static int dns_name(struct cur v, char name[256])
{
    if (v.n == 0 || v.n > 253)
        return -1;
    for (size_t i = 0; i < v.n; i++) {
        unsigned char ch = v.p[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (unsigned char)(ch - 'A' + 'a');
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
              ch == '_'))
            return -1;
        name[i] = (char)ch;
    }
    name[v.n] = 0;
    if (name[v.n - 1] == '.')
        name[v.n - 1] = 0;
    return name[0] ? 0 : -1;
}

/* The server_name extension: a list of (type, name); host_name is type 0. */
static enum osb_hello sni_ext(struct cur e, char name[256])
{
    struct cur list, nm;
    if (vec(&e, 2, &list) < 0 || e.n)
        return OSB_HELLO_BAD;
    while (list.n) {
        size_t type;
        if (u8(&list, &type) < 0 || vec(&list, 2, &nm) < 0)
            return OSB_HELLO_BAD;
        if (type == 0)
            return dns_name(nm, name) == 0 ? OSB_HELLO_SNI : OSB_HELLO_BAD;
    }
    return OSB_HELLO_NO_SNI;
}

/* body: a whole ClientHello handshake body. */
static enum osb_hello hello_body(struct cur b, char name[256])
{
    struct cur exts, e;
    if (take(&b, 2 + 32, NULL) < 0 || vec(&b, 1, NULL) < 0 || vec(&b, 2, NULL) < 0 ||
        vec(&b, 1, NULL) < 0)
        return OSB_HELLO_BAD;
    if (b.n == 0)
        return OSB_HELLO_NO_SNI; /* no extensions at all */
    if (vec(&b, 2, &exts) < 0)
        return OSB_HELLO_BAD;
    while (exts.n) {
        size_t type;
        if (u16(&exts, &type) < 0 || vec(&exts, 2, &e) < 0)
            return OSB_HELLO_BAD;
        if (type == 0)
            return sni_ext(e, name);
    }
    return OSB_HELLO_NO_SNI;
}

enum osb_hello osb_tls_hello_sni(const unsigned char *buf, size_t len, char name[256])
{
    /* Reassemble the handshake message from the records' fragments; it is
     * parsed once whole. */
    unsigned char msg[OSB_HELLO_MAX];
    size_t have = 0, need = 0;
    struct cur c = {buf, len};
    while (c.n) {
        if (c.n < 5)
            return c.p[0] == 0x16 ? OSB_HELLO_MORE : OSB_HELLO_BAD;
        if (c.p[0] != 0x16 || c.p[1] != 3)
            return OSB_HELLO_BAD;
        size_t rl = (size_t)c.p[3] << 8 | c.p[4];
        if (rl == 0 || rl > 16384 + 256)
            return OSB_HELLO_BAD;
        take(&c, 5, NULL);
        size_t k = rl < c.n ? rl : c.n;
        if (have + k > sizeof msg)
            return OSB_HELLO_BAD;
        memcpy(msg + have, c.p, k);
        have += k;
        take(&c, k, NULL);
        if (!need && have >= 4) {
            if (msg[0] != 1) /* client_hello */
                return OSB_HELLO_BAD;
            need = 4 + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
            if (need > sizeof msg)
                return OSB_HELLO_BAD;
        }
        if (need && have >= need)
            return hello_body((struct cur){msg + 4, need - 4}, name);
        if (k < rl)
            return OSB_HELLO_MORE;
    }
    return OSB_HELLO_MORE;
}
