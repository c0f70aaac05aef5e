#include "image/ref.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 255 /* Docker's limit on domain/path */

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]+ ((\.|_|__|-+)[a-z0-9]+)* */
static bool path_component_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    while (i < n) {
        if (is_lower_alnum(s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_lower_alnum(s[j]))
            j++;
        size_t len = j - i;
        bool ok = (len == 1 && (s[i] == '.' || s[i] == '_')) ||
                  (len == 2 && s[i] == '_' && s[i + 1] == '_');
        if (!ok) {
            ok = true;
            for (size_t k = i; k < j; k++)
                ok = ok && s[k] == '-';
        }
        if (!ok)
            return false;
        i = j;
    }
    return true;
}

/* host components [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])? joined by '.',
 * then an optional :port. */
static bool domain_ok(const char *s)
{
    const char *colon = strchr(s, ':');
    size_t hlen = colon ? (size_t)(colon - s) : strlen(s);
    if (colon) {
        const char *p = colon + 1;
        if (!*p || strlen(p) > 5)
            return false;
        for (; *p; p++)
            if (*p < '0' || *p > '9')
                return false;
    }
    size_t start = 0;
    for (size_t i = 0; i <= hlen; i++) {
        if (i < hlen && s[i] != '.')
            continue;
        size_t len = i - start;
        if (len == 0 || !is_alnum(s[start]) || !is_alnum(s[i - 1]))
            return false;
        for (size_t k = start; k < i; k++)
            if (!is_alnum(s[k]) && s[k] != '-')
                return false;
        start = i + 1;
    }
    return true;
}

static bool tag_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > 128 || !(is_alnum(t[0]) || t[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alnum(t[i]) && !strchr("_.-", t[i]))
            return false;
    return true;
}

bool osb_digest_ok(const char *d)
{
    if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
        return false;
    for (const char *p = d + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* Docker's splitDockerDomain: the first component is a registry when it
 * has '.' or ':', is "localhost", or has upper case. */
static bool is_domain(const char *s, size_t n)
{
    if (n == 9 && strncmp(s, "localhost", 9) == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.' || s[i] == ':' || (s[i] >= 'A' && s[i] <= 'Z'))
            return true;
    return false;
}

static int split_name(const char *name, struct osb_ref *out, const char *s, struct osb_err *err)
{
    const char *slash = strchr(name, '/');
    const char *path = name;
    if (slash && is_domain(name, (size_t)(slash - name))) {
        size_t dl = (size_t)(slash - name);
        if (dl >= sizeof out->domain)
            return osb_err_set(err, OSB_E_INVALID, "image reference `%s`: registry too long", s);
        memcpy(out->domain, name, dl);
        out->domain[dl] = '\0';
        path = slash + 1;
        if (!domain_ok(out->domain))
            return osb_err_set(err, OSB_E_INVALID, "image reference `%s`: invalid registry `%s`", s,
                               out->domain);
    } else {
        snprintf(out->domain, sizeof out->domain, "docker.io");
    }
    if (strcmp(out->domain, "index.docker.io") == 0)
        snprintf(out->domain, sizeof out->domain, "docker.io");
    bool library = strcmp(out->domain, "docker.io") == 0 && !strchr(path, '/');
    int n = snprintf(out->path, sizeof out->path, "%s%s", library ? "library/" : "", path);
    if (n < 0 || (size_t)n >= sizeof out->path)
        return osb_err_set(err, OSB_E_INVALID, "image reference `%s`: name too long", s);
    for (const char *c = path;;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (!path_component_ok(c, len))
            return osb_err_set(err, OSB_E_INVALID,
                               "image reference `%s`: invalid repository name component `%.*s` "
                               "(lower-case letters, digits and single separators . _ __ -)",
                               s, (int)len, c);
        if (!e)
            break;
        c = e + 1;
    }
    return 0;
}

int osb_ref_parse(const char *s, struct osb_ref *out, struct osb_err *err)
{
    char buf[600];
    memset(out, 0, sizeof *out);
    if (!s || !*s)
        return osb_err_set(err, OSB_E_INVALID, "image reference is empty");
    if (strlen(s) >= sizeof buf - 1)
        return osb_err_set(err, OSB_E_INVALID, "image reference `%.64s…` is too long", s);
    snprintf(buf, sizeof buf, "%s", s);
    char *at = strchr(buf, '@');
    if (at) {
        *at = '\0';
        if (!osb_digest_ok(at + 1))
            return osb_err_set(err, OSB_E_INVALID,
                               "image reference `%s`: digest must be sha256: and 64 lower-case "
                               "hex digits",
                               s);
        snprintf(out->digest, sizeof out->digest, "%s", at + 1);
    }
    char *last_slash = strrchr(buf, '/');
    char *colon = strrchr(last_slash ? last_slash : buf, ':');
    if (colon) {
        *colon = '\0';
        if (!tag_ok(colon + 1))
            return osb_err_set(err, OSB_E_INVALID,
                               "image reference `%s`: invalid tag `%s` (letters, digits, _ . -, "
                               "at most 128, not starting with . or -)",
                               s, colon + 1);
        snprintf(out->tag, sizeof out->tag, "%s", colon + 1);
    }
    if (!buf[0])
        return osb_err_set(err, OSB_E_INVALID, "image reference `%s` has no name", s);
    if (strlen(buf) > NAME_MAX_LEN)
        return osb_err_set(err, OSB_E_INVALID, "image reference `%s`: name longer than %d", s,
                           NAME_MAX_LEN);
    if (split_name(buf, out, s, err) < 0)
        return -1;
    if (!out->tag[0] && !out->digest[0])
        snprintf(out->tag, sizeof out->tag, "latest");
    return 0;
}

void osb_ref_string(const struct osb_ref *r, char *out, size_t n)
{
    snprintf(out, n, "%s/%s%s%s%s%s", r->domain, r->path, r->tag[0] ? ":" : "", r->tag,
             r->digest[0] ? "@" : "", r->digest);
}
