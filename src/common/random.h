/* Random ids and tokens from the kernel (getrandom, /dev/urandom as the
 * fallback), and comparing secrets. Without randomness ids would collide
 * and tokens be guessable, so these abort rather than fail. */
#ifndef OSB_RANDOM_H
#define OSB_RANDOM_H
#include <stdbool.h>
#include <stddef.h>

void osb_random_bytes(void *buf, size_t n);
/* 2*nbytes lowercase hex chars + NUL into out; nbytes <= 64. */
void osb_random_hex(char *out, size_t nbytes);
/* A random (version 4) UUID with dashes; out needs 37 bytes. */
void osb_random_uuid4(char out[37]);
/* Whether two secrets are equal, in time that depends only on their
 * lengths (API keys, access tokens). */
bool osb_secret_eq(const char *got, const char *want);
#endif
