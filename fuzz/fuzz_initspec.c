/* libFuzzer target: the helper's spec decoder (src/runtime/native/
 * initspec.c), strict on any input; what it accepts re-encodes to bytes
 * that decode to the same spec. The codec is included directly: the fuzz
 * build links only src/common and src/http. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/runtime/native/initspec.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct osb_init_spec a, b;
    struct osb_err err = {0};
    if (osb_init_spec_decode((const char *)data, size, &a, &err) < 0)
        return 0;
    size_t len;
    char *enc = osb_init_spec_encode(&a, &len);
    if (!enc || osb_init_spec_decode(enc, len, &b, &err) < 0)
        abort();
    size_t len2;
    char *enc2 = osb_init_spec_encode(&b, &len2);
    if (!enc2 || len2 != len || memcmp(enc, enc2, len) != 0)
        abort();
    free(enc);
    free(enc2);
    osb_init_spec_free(&a);
    osb_init_spec_free(&b);
    return 0;
}
