/* The ClientHello reader the vault proxy decides with: real hellos made by
 * OpenSSL (with and without SNI, one record or split across several), every
 * prefix of one, and bytes that are not a hello. */
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "vault/tlshello.h"

/* What an OpenSSL client sends first, with sni (NULL: none). */
static size_t client_hello(const char *sni, unsigned char *out, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *s = SSL_new(ctx);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(s, rb, wb);
    if (sni)
        SSL_set_tlsext_host_name(s, sni);
    SSL_connect(s); /* wants the server's answer: stops after the hello */
    int n = BIO_read(wb, out, (int)cap);
    SSL_free(s);
    SSL_CTX_free(ctx);
    return n > 0 ? (size_t)n : 0;
}

/* The same handshake message re-cut into records of at most k bytes. */
static size_t split(const unsigned char *in, size_t n, size_t k, unsigned char *out)
{
    size_t body = n - 5, o = 0;
    for (size_t off = 0; off < body; off += k) {
        size_t c = body - off < k ? body - off : k;
        memcpy(out + o, in, 3);
        out[o + 3] = (unsigned char)(c >> 8);
        out[o + 4] = (unsigned char)c;
        memcpy(out + o + 5, in + 5 + off, c);
        o += 5 + c;
    }
    return o;
}

int main(void)
{
    unsigned char h[4096], cut[8192];
    char name[256];
    size_t n = client_hello("API.Vault.Test", h, sizeof h);
    OK(n > 100, "OpenSSL made a ClientHello");
    IS_INT(osb_tls_hello_sni(h, n, name), OSB_HELLO_SNI, "a hello with SNI");
    IS_STR(name, "api.vault.test", "the name, lower-cased");
    int more = 1;
    for (size_t k = 0; k < n; k++)
        more &= osb_tls_hello_sni(h, k, name) == OSB_HELLO_MORE;
    OK(more, "every proper prefix asks for more");
    size_t m = split(h, n, 64, cut);
    IS_INT(osb_tls_hello_sni(cut, m, name), OSB_HELLO_SNI, "split into 64-byte records");
    IS_STR(name, "api.vault.test", "the name from the reassembled message");
    IS_INT(osb_tls_hello_sni(cut, m - 10, name), OSB_HELLO_MORE, "split, cut short: more");

    n = client_hello(NULL, h, sizeof h);
    IS_INT(osb_tls_hello_sni(h, n, name), OSB_HELLO_NO_SNI, "a hello without SNI");

    static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    IS_INT(osb_tls_hello_sni((const unsigned char *)get, sizeof get - 1, name), OSB_HELLO_BAD,
           "plain HTTP is not TLS");
    unsigned char alert[] = {0x15, 3, 3, 0, 2, 2, 40};
    IS_INT(osb_tls_hello_sni(alert, sizeof alert, name), OSB_HELLO_BAD, "an alert record");
    unsigned char zero[] = {0x16, 3, 1, 0, 0};
    IS_INT(osb_tls_hello_sni(zero, sizeof zero, name), OSB_HELLO_BAD, "an empty record");

    /* A name with a byte a DNS name cannot hold is refused, not truncated. */
    n = client_hello("evil.test", h, sizeof h);
    unsigned char *p = memmem(h, n, "evil.test", 9);
    OK(p != NULL, "the name is in the hello");
    if (p) {
        p[4] = '/';
        IS_INT(osb_tls_hello_sni(h, n, name), OSB_HELLO_BAD, "a name with '/' is refused");
    }
    return tap_failed ? 1 : 0;
}
