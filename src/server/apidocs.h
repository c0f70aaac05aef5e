/* The OpenAPI document this server serves (src/server/openapi/openapi.json,
 * embedded at build time by scripts/embed.sh) and the HTML page of it that
 * /docs answers: one self-contained page (inline CSS, no scripts, nothing
 * fetched from elsewhere), so it reads the same offline. */
#ifndef OSB_APIDOCS_H
#define OSB_APIDOCS_H
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"

/* The bytes of openapi.json, NUL-terminated; the length leaves the NUL out. */
extern const unsigned char osb_openapi_json[];
extern const size_t osb_openapi_json_len;

/* Renders the OpenAPI document json (len bytes) into out as one HTML page:
 * operations grouped by tag with their parameters, request body and
 * responses, then the schemas. Every text from the document is escaped.
 * -1 with err set when json does not parse or out reaches its cap. */
OSB_MUST_CHECK int osb_apidocs_render(const char *json, size_t len, struct osb_buf *out,
                                      struct osb_err *err);
#endif
