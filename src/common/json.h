/* JSON helpers on jansson: parse untrusted bodies with precise messages,
 * typed field getters that name the field on error (null = absent), and
 * compact Go-compatible output. */
#ifndef OSB_JSON_H
#define OSB_JSON_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Parse a request body. An empty body (only whitespace) yields NULL with
 * success when allow_empty, else an error. */
OSB_MUST_CHECK int osb_json_parse(const char *data, size_t len, bool allow_empty, json_t **out,
                                  struct osb_err *err);
/* Like osb_json_parse but the result must be an object (empty -> {} when allow_empty). */
OSB_MUST_CHECK int osb_json_parse_object(const char *data, size_t len, bool allow_empty,
                                         json_t **out, struct osb_err *err);

/* The value of key when present and not null, else NULL (obj may be NULL);
 * borrowed. The getters below are built on it. */
json_t *osb_json_field(json_t *obj, const char *key);
/* Field getters: 1 if present, 0 if absent or null (and !required), -1 on a
 * wrong type or a missing required field (err names the field). */
OSB_MUST_CHECK int osb_json_str(json_t *obj, const char *key, bool required, const char **out,
                                struct osb_err *err);
/* Like osb_json_str for ids, names and paths: a control byte anywhere in
 * the value (an embedded NUL included) is an error naming the field. */
OSB_MUST_CHECK int osb_json_name(json_t *obj, const char *key, bool required, const char **out,
                                 struct osb_err *err);
OSB_MUST_CHECK int osb_json_int(json_t *obj, const char *key, bool required, int64_t *out,
                                struct osb_err *err);
OSB_MUST_CHECK int osb_json_bool(json_t *obj, const char *key, bool required, bool *out,
                                 struct osb_err *err);
/* A nested object or array (borrowed: it lives as long as obj). */
OSB_MUST_CHECK int osb_json_obj(json_t *obj, const char *key, bool required, json_t **out,
                                struct osb_err *err);
OSB_MUST_CHECK int osb_json_array(json_t *obj, const char *key, bool required, json_t **out,
                                  struct osb_err *err);
/* An object whose values are all strings. */
OSB_MUST_CHECK int osb_json_strmap(json_t *obj, const char *key, json_t **out, struct osb_err *err);

/* Compact, key order preserved, `<` `>` `&` escaped as \u003c.. like Go.
 * Caller frees. */
char *osb_json_dump(const json_t *j, size_t *len);
/* A NULL-terminated string list as a JSON array; NULL gives JSON null. */
json_t *osb_json_strv(char *const *v);
#endif
