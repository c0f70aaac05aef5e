/* The argument check every tool call goes through before anything is sent:
 * the JSON Schema subset the tools' inputSchemas use. The message names the
 * argument (a.b[2].c) and what is wrong with it. */
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

static const char *kind(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
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
            snprintf(msg, cap, "\"%s%s%s\" is required", where, *where ? "." : "",
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
                char known[400] = "";
                size_t n = 0;
                const char *pk;
                json_t *pv;
                json_object_foreach(props, pk, pv)
                {
                    int w = snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", pk);
                    if (w < 0 || (size_t)w >= sizeof known - n)
                        break;
                    n += (size_t)w;
                }
                snprintf(msg, cap, "unknown argument \"%s\" (known: %s)", sub, known);
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

static bool check_type(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
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
        snprintf(msg, cap, "\"%s\" must be of type %s, not %s", *where ? where : "arguments",
                 tt ? tt : "?", kind(v));
        free(tt);
    }
    return ok;
}

static bool check_enum(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
{
    json_t *en = json_object_get(schema, "enum");
    if (!en || json_is_null(v))
        return true;
    size_t i;
    json_t *x;
    json_array_foreach(en, i, x) if (json_equal(x, v)) return true;
    char *list = json_dumps(en, JSON_COMPACT);
    snprintf(msg, cap, "\"%s\" must be one of %s", where, list ? list : "?");
    free(list);
    return false;
}

static bool check_bounds(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
{
    json_t *min = json_object_get(schema, "minimum"), *max = json_object_get(schema, "maximum");
    if (json_is_number(v) && min && json_number_value(v) < json_number_value(min)) {
        snprintf(msg, cap, "\"%s\" must be at least %g", where, json_number_value(min));
        return false;
    }
    if (json_is_number(v) && max && json_number_value(v) > json_number_value(max)) {
        snprintf(msg, cap, "\"%s\" must be at most %g", where, json_number_value(max));
        return false;
    }
    json_t *minl = json_object_get(schema, "minLength");
    if (minl && json_is_string(v) && json_string_length(v) < (size_t)json_integer_value(minl)) {
        snprintf(msg, cap, "\"%s\" must not be empty", where);
        return false;
    }
    json_t *mini = json_object_get(schema, "minItems");
    if (mini && json_is_array(v) && json_array_size(v) < (size_t)json_integer_value(mini)) {
        snprintf(msg, cap, "\"%s\" needs at least %lld item(s)", where,
                 (long long)json_integer_value(mini));
        return false;
    }
    return true;
}

static bool check(json_t *schema, json_t *v, const char *where, char *msg, size_t cap)
{
    if (!check_type(schema, v, where, msg, cap) || !check_enum(schema, v, where, msg, cap) ||
        !check_bounds(schema, v, where, msg, cap))
        return false;
    if (json_is_object(v))
        return check_object(schema, v, where, msg, cap);
    json_t *items = json_object_get(schema, "items");
    if (json_is_array(v) && items) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            char sub[256];
            snprintf(sub, sizeof sub, "%s[%zu]", where, i);
            if (!check(items, x, sub, msg, cap))
                return false;
        }
    }
    return true;
}

bool mcp_schema_check(json_t *schema, json_t *args, char *msg, size_t cap)
{
    return check(schema, args, "", msg, cap);
}
