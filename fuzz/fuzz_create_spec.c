/* libFuzzer target: CreateSandboxRequest bodies through the server's one
 * parser (src/server/spec.c), the JSON reader in front of it, and the
 * record it stores. The server's sources are included directly: the fuzz
 * build links only src/common and src/http. */
#include <stdint.h>
#include <stdlib.h>

#include "../src/server/apierr.c"
#include "../src/net/policy.c"
#include "../src/server/spec.c"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = NULL;
    struct osb_err err = {0};
    if (osb_json_parse_object((const char *)data, size, true, &body, &err) < 0)
        return 0;
    struct osb_spec_limits lim = {.min_timeout_s = 60, .max_timeout_s = 86400};
    struct osb_create_spec spec = {0};
    struct osb_apierr e = {0};
    if (osb_spec_parse_create(body, &lim, &spec, &e) == 0) {
        json_t *rec = osb_spec_record(&spec);
        char *s = osb_json_dump(rec, NULL);
        free(s);
        json_decref(rec);
        osb_spec_free(&spec);
    }
    json_decref(body);
    return 0;
}
