#include "common/json.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/ctl.h"
#include "common/limits.h"
#include "common/xalloc.h"

static bool blank(const char *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)d[i]))
            return false;
    return true;
}

static int depth_ok(const json_t *j, int depth)
{
    if (depth > OSB_MAX_JSON_DEPTH)
        return 0;
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) if (!depth_ok(v, depth + 1)) return 0;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) if (!depth_ok(v, depth + 1)) return 0;
    }
    return 1;
}

int osb_json_parse(const char *data, size_t len, bool allow_empty, json_t **out,
                   struct osb_err *err)
{
    *out = NULL;
    if (!data || blank(data, len)) {
        if (allow_empty)
            return 0;
        return osb_err_set(err, OSB_E_INVALID,
                           "request body is empty; a JSON document is required");
    }
    json_error_t je;
    json_t *j = json_loadb(data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return osb_err_set(err, OSB_E_INVALID, "invalid JSON at line %d column %d: %s", je.line,
                           je.column, je.text);
    if (!depth_ok(j, 0)) {
        json_decref(j);
        return osb_err_set(err, OSB_E_INVALID, "JSON nested deeper than %d levels",
                           OSB_MAX_JSON_DEPTH);
    }
    *out = j;
    return 0;
}

int osb_json_parse_object(const char *data, size_t len, bool allow_empty, json_t **out,
                          struct osb_err *err)
{
    if (osb_json_parse(data, len, allow_empty, out, err) < 0)
        return -1;
    if (!*out) {
        *out = json_object();
        return 0;
    }
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return osb_err_set(err, OSB_E_INVALID, "request body must be a JSON object");
    }
    return 0;
}

json_t *osb_json_field(json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

static int absent(const char *key, bool required, struct osb_err *err)
{
    if (required)
        return osb_err_set(err, OSB_E_INVALID, "field '%s' is required", key);
    return 0;
}

int osb_json_str(json_t *obj, const char *key, bool required, const char **out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return absent(key, required, err);
    if (!json_is_string(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be a string", key);
    *out = json_string_value(v);
    return 1;
}

int osb_json_name(json_t *obj, const char *key, bool required, const char **out,
                  struct osb_err *err)
{
    int rc = osb_json_str(obj, key, required, out, err);
    if (rc <= 0)
        return rc;
    char what[96];
    snprintf(what, sizeof what, "field '%s'", key);
    return osb_ctl_check(what, *out, json_string_length(osb_json_field(obj, key)), err) < 0 ? -1
                                                                                            : 1;
}

int osb_json_int(json_t *obj, const char *key, bool required, int64_t *out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return absent(key, required, err);
    if (json_is_real(v)) {
        double d = json_real_value(v);
        /* Range first: casting an out-of-range double is undefined. */
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
            return osb_err_set(err, OSB_E_INVALID, "field '%s' must be an integer", key);
        *out = (int64_t)d;
        return 1;
    }
    if (!json_is_integer(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be an integer", key);
    *out = json_integer_value(v);
    return 1;
}

int osb_json_bool(json_t *obj, const char *key, bool required, bool *out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return absent(key, required, err);
    if (!json_is_boolean(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be a boolean", key);
    *out = json_is_true(v);
    return 1;
}

int osb_json_obj(json_t *obj, const char *key, bool required, json_t **out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return absent(key, required, err);
    if (!json_is_object(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be an object", key);
    *out = v;
    return 1;
}

int osb_json_array(json_t *obj, const char *key, bool required, json_t **out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return absent(key, required, err);
    if (!json_is_array(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be an array", key);
    *out = v;
    return 1;
}

int osb_json_strmap(json_t *obj, const char *key, json_t **out, struct osb_err *err)
{
    json_t *v = osb_json_field(obj, key);
    if (!v)
        return 0;
    if (!json_is_object(v))
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be an object of strings", key);
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        if (!json_is_string(x))
            return osb_err_set(err, OSB_E_INVALID, "field '%s.%s' must be a string", key, k);
    }
    *out = v;
    return 1;
}

char *osb_json_dump(const json_t *j, size_t *len)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (!s)
        s = osb_xstrdup("null");
    size_t extra = 0, n = 0;
    for (; s[n]; n++)
        if (s[n] == '<' || s[n] == '>' || s[n] == '&')
            extra += 5;
    if (!extra) {
        if (len)
            *len = n;
        return s;
    }
    /* `<`, `>`, `&` only occur inside strings in JSON text, so a blind
     * rewrite yields the same document, escaped as Go does. */
    char *o = osb_xmalloc(n + extra + 1), *p = o;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<' || s[i] == '>' || s[i] == '&') {
            p += snprintf(p, 7, "\\u%04x", (unsigned)s[i]);
        } else {
            *p++ = s[i];
        }
    }
    *p = '\0';
    free(s);
    if (len)
        *len = (size_t)(p - o);
    return o;
}

json_t *osb_json_strv(char *const *v)
{
    if (!v)
        return json_null();
    json_t *a = json_array();
    for (; *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}
