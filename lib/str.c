/* Growable strings and JSON helpers that report out-of-memory instead of
 * aborting: a chain of appends sets sb->oom and is checked once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool grow(struct osbcl_sb *sb, size_t more)
{
    if (sb->oom)
        return false;
    if (sb->len + more + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 128;
    while (cap < sb->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            sb->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(sb->p, cap);
    if (!p) {
        sb->oom = true;
        return false;
    }
    sb->p = p;
    sb->cap = cap;
    return true;
}

void osbcl_sb_add(struct osbcl_sb *sb, const void *data, size_t len)
{
    if (!grow(sb, len))
        return;
    if (len)
        memcpy(sb->p + sb->len, data, len);
    sb->len += len;
    sb->p[sb->len] = 0;
}

void osbcl_sb_adds(struct osbcl_sb *sb, const char *s)
{
    osbcl_sb_add(sb, s, strlen(s));
}

void osbcl_sb_addf(struct osbcl_sb *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !grow(sb, (size_t)n)) {
        sb->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->p + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* RFC 3986 unreserved characters pass; everything else (including '/') is
 * encoded, so a value can never change the path or query around it. */
void osbcl_sb_esc(struct osbcl_sb *sb, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            osbcl_sb_add(sb, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            osbcl_sb_add(sb, e, 3);
        }
    }
}

char *osbcl_sb_done(struct osbcl_sb *sb, struct osbc_error *err)
{
    if (!sb->oom && !sb->p)
        grow(sb, 0);
    if (sb->oom) {
        osbcl_sb_free(sb);
        osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        return NULL;
    }
    char *p = sb->p;
    sb->p = NULL;
    sb->len = sb->cap = 0;
    return p;
}

void osbcl_sb_free(struct osbcl_sb *sb)
{
    free(sb->p);
    sb->p = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
}

char *osbcl_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *osbcl_json_dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
}

int osbcl_json_kv(json_t *obj, const char *key, const struct osbc_kv *kv, size_t n)
{
    json_t *o = json_object();
    if (!o)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!kv[i].key || !kv[i].value)
            continue;
        if (json_object_set_new(o, kv[i].key, json_string(kv[i].value)) < 0) {
            json_decref(o);
            return -1;
        }
    }
    return json_object_set_new(obj, key, o);
}

json_t *osbcl_json_parse(const char *text, size_t len, const char *what, struct osbc_error *err)
{
    json_error_t je;
    json_t *j = json_loadb(text ? text : "", text ? len : 0, JSON_DECODE_ANY, &je);
    if (!j)
        osbcl_fail(err, OSBC_E_PROTOCOL, "%s: the answer is not JSON: %s", what, je.text);
    return j;
}
