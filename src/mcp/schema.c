/* The argument check every tool call goes through before anything is sent:
 * the JSON Schema subset the tools' inputSchemas use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

static bool type_ok(json_t *v, const char *t)
{
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) ||
               (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v));
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "array"))
        return json_is_array(v);
    if (!strcmp(t, "object"))
        return json_is_object(v);
    if (!strcmp(t, "null"))
        return json_is_null(v);
    return true;
}

static bool check(json_t *schema, json_t *v, const char *where, char *msg, size_t cap);

static bool check_object(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
{
    json_t *props = json_object_get(schema, "properties");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(schema, "required"), i, r)
    {
        if (!json_object_get(v, json_string_value(r))) {
            snprintf(msg, cap, "%s%s\"%s\" is required", where, *where ? ": " : "",
                     json_string_value(r));
            return false;
        }
    }
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        json_t *ps = json_object_get(props, k);
        char sub[256];
        snprintf(sub, sizeof sub, "%s%s%s", where, *where ? "." : "", k);
        if (!ps) {
            json_t *ap = json_object_get(schema, "additionalProperties");
            if (json_is_false(ap)) {
                snprintf(msg, cap, "unknown argument \"%s\"", sub);
                return false;
            }
            if (json_is_object(ap) && !check(ap, x, sub, msg, cap))
                return false;
            continue;
        }
        if (!check(ps, x, sub, msg, cap))
            return false;
    }
    return true;
}

static bool check(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
{
    json_t *t = json_object_get(schema, "type");
    bool ok = !t;
    if (json_is_string(t)) {
        ok = type_ok(v, json_string_value(t));
    } else if (json_is_array(t)) {
        size_t i;
        json_t *x;
        json_array_foreach(t, i, x) ok |= type_ok(v, json_string_value(x));
    }
    if (!ok) {
        char *tt = json_dumps(t, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(msg, cap, "\"%s\" must be of type %s", *where ? where : "arguments",
                 tt ? tt : "?");
        free(tt);
        return false;
    }
    json_t *en = json_object_get(schema, "enum");
    if (en) {
        bool in = false;
        size_t i;
        json_t *x;
        json_array_foreach(en, i, x) in |= json_equal(x, v);
        if (!in) {
            snprintf(msg, cap, "\"%s\" is not one of the allowed values", where);
            return false;
        }
    }
    json_t *min = json_object_get(schema, "minimum");
    if (min && json_is_number(v) && json_number_value(v) < json_number_value(min)) {
        snprintf(msg, cap, "\"%s\" must be at least %g", where, json_number_value(min));
        return false;
    }
    json_t *minl = json_object_get(schema, "minLength");
    if (minl && json_is_string(v) && json_string_length(v) < (size_t)json_integer_value(minl)) {
        snprintf(msg, cap, "\"%s\" must not be empty", where);
        return false;
    }
    if (json_is_object(v))
        return check_object(schema, v, where, msg, cap);
    if (json_is_array(v) && json_object_get(schema, "items")) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            char sub[256];
            snprintf(sub, sizeof sub, "%s[%zu]", where, i);
            if (!check(json_object_get(schema, "items"), x, sub, msg, cap))
                return false;
        }
    }
    return true;
}

bool mcp_schema_check(json_t *schema, json_t *args, char *msg, size_t cap)
{
    return check(schema, args, "", msg, cap);
}
