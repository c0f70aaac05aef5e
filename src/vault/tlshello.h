/* Reads the server name (SNI) from the first bytes a TLS client sends, so
 * the vault proxy can decide before any decryption whether a connection is
 * one it intercepts (a bound name) or one it passes through untouched. Pure
 * code on untrusted bytes: no allocation, no I/O. */
#ifndef OSB_VAULT_TLSHELLO_H
#define OSB_VAULT_TLSHELLO_H
#include <stddef.h>

enum osb_hello {
    OSB_HELLO_SNI = 1,    /* name holds the server name (lower case) */
    OSB_HELLO_NO_SNI = 0, /* a complete ClientHello without a host_name */
    OSB_HELLO_MORE = -1,  /* a valid prefix: read more bytes */
    OSB_HELLO_BAD = -2,   /* not a TLS ClientHello (or a malformed one, or one
                             whose name is not a DNS name) */
};

/* The ClientHello may span records (the handshake message is reassembled
 * up to OSB_HELLO_MAX bytes). name gets at most 253 characters + NUL. */
#define OSB_HELLO_MAX 65536
enum osb_hello osb_tls_hello_sni(const unsigned char *buf, size_t len, char name[256]);
#endif
