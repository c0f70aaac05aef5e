/* libFuzzer target: a sandbox's first bytes through src/vault/tlshello.c
 * (the vault proxy reads them before deciding to intercept). Invariants: a
 * name is returned only with OSB_HELLO_SNI, and it is a lower-case DNS name
 * of 1..253 characters; every prefix of an input that gave an answer other
 * than MORE gives MORE or the same answer class (never a crash). The source
 * is included directly: the fuzz build links only src/common and src/http. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/vault/tlshello.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[256];
    memset(name, 'X', sizeof name);
    enum osb_hello h = osb_tls_hello_sni(data, size, name);
    if (h == OSB_HELLO_SNI) {
        size_t n = strnlen(name, sizeof name);
        if (n == 0 || n > 253)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                  name[i] == '-' || name[i] == '.' || name[i] == '_'))
                abort();
    }
    if (size > 1)
        (void)osb_tls_hello_sni(data, size / 2, name);
    return 0;
}
