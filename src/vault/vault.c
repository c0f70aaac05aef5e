#include "vault/vault.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"
#include "net/policy.h"

struct cred {
    char *name, *value;
    int64_t rev;
};

/* A header a binding adds: its name, the credential it takes, and the
 * rendered value ("Bearer <value>", ...), made when the vault is built. */
struct hdr {
    char *name, *cred, *value;
};

enum atype { A_BEARER, A_BASIC, A_APIKEY, A_CUSTOM };
static const char *const atype_name[] = {"bearer", "basic", "apiKey", "customHeaders"};

struct strv {
    char **v;
    size_t n;
};

struct osb_vault_binding {
    char *name;
    struct strv schemes, hosts, methods, paths;
    int ports[OSB_VAULT_MAX_LIST];
    size_t nports;
    enum atype type;
    struct hdr h[OSB_VAULT_MAX_HEADERS];
    size_t nh;
};

struct osb_vault {
    atomic_int refs;
    int64_t rev;
    struct cred c[OSB_VAULT_MAX_ITEMS];
    size_t nc;
    struct osb_vault_binding *b[OSB_VAULT_MAX_ITEMS];
    size_t nb;
    const char **secrets; /* into c[].value and h[].value */
    size_t ns;
};

#define BAD(...) osb_err_set(err, OSB_E_INVALID, __VA_ARGS__)

/* ------------------------------------------------------------ freeing */

static void wipe(char *s)
{
    if (s)
        explicit_bzero(s, strlen(s));
    free(s);
}

static void strv_free(struct strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static void binding_free(struct osb_vault_binding *b)
{
    if (!b)
        return;
    free(b->name);
    strv_free(&b->schemes);
    strv_free(&b->hosts);
    strv_free(&b->methods);
    strv_free(&b->paths);
    for (size_t i = 0; i < b->nh; i++) {
        free(b->h[i].name);
        free(b->h[i].cred);
        wipe(b->h[i].value);
    }
    free(b);
}

static void vault_free(struct osb_vault *v)
{
    for (size_t i = 0; i < v->nc; i++) {
        free(v->c[i].name);
        wipe(v->c[i].value);
    }
    for (size_t i = 0; i < v->nb; i++)
        binding_free(v->b[i]);
    free(v->secrets);
    free(v);
}

void osb_vault_ref(struct osb_vault *v)
{
    atomic_fetch_add(&v->refs, 1);
}

void osb_vault_unref(struct osb_vault *v)
{
    if (v && atomic_fetch_sub(&v->refs, 1) == 1)
        vault_free(v);
}

int64_t osb_vault_revision(const struct osb_vault *v)
{
    return v->rev;
}

/* ------------------------------------------------------------ JSON input */

/* Unknown members are refused, as upstream's decoder does. */
static int only_keys(json_t *o, const char *const *keys, const char *where, struct osb_err *err)
{
    const char *k;
    json_t *val;
    json_object_foreach(o, k, val)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (!keys[i])
            return BAD("%s: unknown field '%s'", where, k);
    }
    return 0;
}

/* A string member, trimmed when trim; absent or null gives "". */
static int str_of(json_t *o, const char *key, bool trim, size_t max, char **out, const char *where,
                  struct osb_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        *out = osb_xstrdup("");
        return 0;
    }
    if (!json_is_string(v))
        return BAD("%s.%s must be a string", where, key);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n > max || strlen(s) != n)
        return BAD("%s.%s is too long or holds a NUL", where, key);
    while (trim && n && strchr(" \t\r\n", *s))
        s++, n--;
    while (trim && n && strchr(" \t\r\n", s[n - 1]))
        n--;
    for (size_t i = 0; trim && i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return BAD("%s.%s holds a control character", where, key);
    *out = osb_xstrndup(s, n);
    return 0;
}

/* A value becomes a header value on the wire: CR, LF or another control
 * character in it would let the vault's writer split the request. */
static bool value_ok(const char *s)
{
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
            return false;
    return true;
}

/* An array member (absent or null: empty), at most max long. */
static int array_of(json_t *o, const char *key, size_t max, json_t **out, const char *where,
                    struct osb_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return BAD("%s.%s must be an array", where, key);
    if (json_array_size(v) > max)
        return BAD("%s.%s has more than %zu entries", where, key, max);
    *out = v;
    return 0;
}

static int strv_of(json_t *o, const char *key, struct strv *out, const char *where,
                   struct osb_err *err)
{
    json_t *a, *e;
    size_t i;
    if (array_of(o, key, OSB_VAULT_MAX_LIST, &a, where, err) < 0)
        return -1;
    out->v = osb_xcalloc(json_array_size(a) + 1, sizeof *out->v);
    json_array_foreach(a, i, e)
    {
        if (!json_is_string(e) || json_string_length(e) > 512 ||
            strlen(json_string_value(e)) != json_string_length(e))
            return BAD("%s.%s[%zu] must be a string", where, key, i);
        out->v[out->n++] = osb_xstrdup(json_string_value(e));
    }
    return 0;
}

/* ------------------------------------------------------------ normalizing */

static void trim_inplace(char *s)
{
    size_t n = strlen(s), a = 0;
    while (a < n && strchr(" \t\r\n", s[a]))
        a++;
    while (n > a && strchr(" \t\r\n", s[n - 1]))
        n--;
    memmove(s, s + a, n - a);
    s[n - a] = 0;
}

static void set_case(char *s, bool upper)
{
    for (; *s; s++)
        if (upper && *s >= 'a' && *s <= 'z')
            *s = (char)(*s - 'a' + 'A');
        else if (!upper && *s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

static void dedupe(struct strv *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t j = 0;
        while (j < k && strcmp(s->v[j], s->v[i]) != 0)
            j++;
        if (j < k)
            free(s->v[i]);
        else
            s->v[k++] = s->v[i];
    }
    s->n = k;
}

static void defaults(struct strv *s, const char *const *dflt)
{
    if (s->n)
        return;
    size_t n = 0;
    while (dflt[n])
        n++;
    s->v = osb_xrealloc(s->v, (n + 1) * sizeof *s->v);
    for (s->n = 0; s->n < n; s->n++)
        s->v[s->n] = osb_xstrdup(dflt[s->n]);
}

static bool is_ip(const char *s)
{
    unsigned char b[16];
    return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* ^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$ for every label, and a dot. */
static bool fqdn(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n > 253 || !strchr(h, '.'))
        return false;
    const char *l = h;
    while (*l) {
        size_t k = strcspn(l, ".");
        if (k == 0 || k > 63 || l[0] == '-' || l[k - 1] == '-')
            return false;
        for (size_t i = 0; i < k; i++)
            if (!((l[i] >= 'a' && l[i] <= 'z') || (l[i] >= '0' && l[i] <= '9') || l[i] == '-'))
                return false;
        l += k;
        if (*l == '.' && !*++l)
            return false;
    }
    return true;
}

static int norm_host(char *h, const char *where, struct osb_err *err)
{
    trim_inplace(h);
    set_case(h, false);
    size_t n = strlen(h);
    if (n && h[n - 1] == '.')
        h[--n] = 0;
    if (!n)
        return BAD("%s: host cannot be blank", where);
    if (strchr(h, '/'))
        return BAD("%s: host \"%s\" must not include scheme or path", where, h);
    bool wild = strncmp(h, "*.", 2) == 0;
    const char *name = wild ? h + 2 : h;
    if (strchr(name, '*'))
        return BAD("%s: invalid wildcard host \"%s\"", where, h);
    if (is_ip(name))
        return BAD("%s: credential binding host \"%s\" must be an FQDN, not an IP address", where,
                   h);
    if (!fqdn(name))
        return BAD("%s: credential binding host \"%s\" must be an FQDN", where, h);
    return 0;
}

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$%&'*+-.^_`|~", c);
}

/* Go's CanonicalHeaderKey: "x-api-key" -> "X-Api-Key". */
static void canonical(char *s)
{
    for (size_t i = 0; s[i]; i++) {
        bool up = i == 0 || s[i - 1] == '-';
        char c = s[i];
        if (up && c >= 'a' && c <= 'z')
            s[i] = (char)(c - 'a' + 'A');
        else if (!up && c >= 'A' && c <= 'Z')
            s[i] = (char)(c - 'A' + 'a');
    }
}

static int header_name(char *s, const char *where, struct osb_err *err)
{
    static const char *const reserved[] = {"host",
                                           "content-length",
                                           "content-type",
                                           "transfer-encoding",
                                           "connection",
                                           "upgrade",
                                           "te",
                                           "trailer",
                                           "proxy-authorization",
                                           "proxy-authenticate",
                                           "forwarded",
                                           "x-forwarded-for",
                                           "x-forwarded-host",
                                           "x-forwarded-proto",
                                           "keep-alive",
                                           "expect",
                                           NULL};
    if (!*s)
        return BAD("%s: invalid credential header name \"\"", where);
    for (const char *p = s; *p; p++)
        if (!token_char(*p))
            return BAD("%s: invalid credential header name \"%s\"", where, s);
    canonical(s);
    for (size_t i = 0; reserved[i]; i++)
        if (strcasecmp(reserved[i], s) == 0)
            return BAD("%s: reserved credential header name \"%s\"", where, s);
    return 0;
}

/* ------------------------------------------------------------ items */

/* A Credential: {name, source: {type?: "inline", value}}. */
static int parse_cred(json_t *j, int64_t rev, struct cred *out, const char *where,
                      struct osb_err *err)
{
    static const char *const keys[] = {"name", "source", NULL};
    static const char *const skeys[] = {"type", "value", NULL};
    memset(out, 0, sizeof *out);
    char *type = NULL;
    char sw[96];
    snprintf(sw, sizeof sw, "%s.source", where);
    json_t *src = json_is_object(j) ? json_object_get(j, "source") : NULL;
    int r = -1;
    if (!json_is_object(j))
        BAD("%s must be an object", where);
    else if (only_keys(j, keys, where, err) < 0 ||
             str_of(j, "name", true, OSB_VAULT_MAX_NAME, &out->name, where, err) < 0)
        ;
    else if (!*out->name)
        BAD("%s: credential name cannot be blank", where);
    else if (!json_is_object(src))
        BAD("%s.source must be an object", where);
    else if (only_keys(src, skeys, sw, err) < 0 ||
             str_of(src, "type", true, 32, &type, sw, err) < 0 ||
             str_of(src, "value", false, OSB_VAULT_MAX_VALUE, &out->value, sw, err) < 0)
        ;
    else if (*type && strcmp(type, "inline") != 0)
        BAD("%s: unsupported credential source type \"%s\"", where, type);
    else if (!*out->value)
        BAD("%s: credential \"%s\" inline value cannot be empty", where, out->name);
    else if (!value_ok(out->value))
        BAD("%s.value: credential \"%s\" holds a control character (it is sent as a header "
            "value)",
            sw, out->name);
    else
        r = 0;
    free(type);
    out->rev = rev;
    if (r < 0) {
        free(out->name);
        wipe(out->value);
        memset(out, 0, sizeof *out);
    }
    return r;
}

/* Ports 1..65535 as upstream parses them, then only the two the proxy
 * intercepts (upstream's transparent intercept ports): a binding for any
 * other port could never be used. Duplicates dropped. */
static int parse_ports(json_t *m, struct osb_vault_binding *b, const char *where,
                       struct osb_err *err)
{
    json_t *ports, *p;
    size_t i;
    if (array_of(m, "ports", OSB_VAULT_MAX_LIST, &ports, where, err) < 0)
        return -1;
    json_array_foreach(ports, i, p)
    {
        json_int_t n = json_is_integer(p) ? json_integer_value(p) : -1;
        if (n <= 0 || n > 65535)
            return BAD("%s.ports[%zu]: invalid port", where, i);
        if (n != 80 && n != 443)
            return BAD("%s.ports[%zu]: port %d is not a configured transparent intercept port "
                       "(only 80 and 443 are allowed)",
                       where, i, (int)n);
        size_t k = 0;
        while (k < b->nports && b->ports[k] != (int)n)
            k++;
        if (k == b->nports)
            b->ports[b->nports++] = (int)n;
    }
    if (!b->nports)
        b->ports[b->nports++] = 443;
    return 0;
}

/* Schemes lower-cased (https|http), hosts normalized, methods upper-cased,
 * paths starting with "/"; each list deduplicated, as upstream. */
static int norm_lists(struct osb_vault_binding *b, const char *where, struct osb_err *err)
{
    char w[160];
    size_t i;
    for (i = 0; i < b->schemes.n; i++) {
        trim_inplace(b->schemes.v[i]);
        set_case(b->schemes.v[i], false);
        if (strcmp(b->schemes.v[i], "https") && strcmp(b->schemes.v[i], "http"))
            return BAD("%s.schemes[%zu]: unsupported scheme \"%s\"", where, i, b->schemes.v[i]);
    }
    for (i = 0; i < b->hosts.n; i++) {
        snprintf(w, sizeof w, "%s.hosts[%zu]", where, i);
        if (norm_host(b->hosts.v[i], w, err) < 0)
            return -1;
    }
    for (i = 0; i < b->methods.n; i++) {
        trim_inplace(b->methods.v[i]);
        set_case(b->methods.v[i], true);
        if (!*b->methods.v[i])
            return BAD("%s.methods[%zu]: method cannot be blank", where, i);
    }
    for (i = 0; i < b->paths.n; i++) {
        trim_inplace(b->paths.v[i]);
        if (b->paths.v[i][0] != '/')
            return BAD("%s.paths[%zu]: path pattern must start with /", where, i);
    }
    dedupe(&b->schemes);
    dedupe(&b->hosts);
    dedupe(&b->methods);
    dedupe(&b->paths);
    return 0;
}

/* A CredentialMatch with upstream's defaults: schemes [https], ports [443],
 * methods [GET, POST, PUT, PATCH, DELETE], paths [every path]; hosts required. */
static int parse_match(json_t *m, struct osb_vault_binding *b, const char *where,
                       struct osb_err *err)
{
    static const char *const keys[] = {"schemes", "ports", "hosts", "methods", "paths", NULL};
    static const char *const d_schemes[] = {"https", NULL}, *const d_paths[] = {"/*", NULL};
    static const char *const d_methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", NULL};
    if (!json_is_object(m))
        return BAD("%s must be an object", where);
    if (only_keys(m, keys, where, err) < 0 || strv_of(m, "schemes", &b->schemes, where, err) < 0 ||
        strv_of(m, "hosts", &b->hosts, where, err) < 0 ||
        strv_of(m, "methods", &b->methods, where, err) < 0 ||
        strv_of(m, "paths", &b->paths, where, err) < 0 || parse_ports(m, b, where, err) < 0)
        return -1;
    if (!b->hosts.n)
        return BAD("%s.hosts cannot be empty", where);
    defaults(&b->schemes, d_schemes);
    defaults(&b->methods, d_methods);
    defaults(&b->paths, d_paths);
    return norm_lists(b, where, err);
}

static int add_hdr(struct osb_vault_binding *b, const char *name, json_t *o, const char *key,
                   const char *where, struct osb_err *err)
{
    struct hdr *h = &b->h[b->nh];
    if (b->nh == OSB_VAULT_MAX_HEADERS)
        return BAD("%s: more than %d headers", where, OSB_VAULT_MAX_HEADERS);
    if (str_of(o, key, true, OSB_VAULT_MAX_NAME, &h->cred, where, err) < 0)
        return -1;
    h->name = osb_xstrdup(name);
    b->nh++;
    if (!*h->cred)
        return BAD("%s: %s auth requires credential", where, atype_name[b->type]);
    return 0;
}

/* {type, credential} | {type: apiKey, name, credential} | {type:
 * customHeaders, headers: [{name, credential}]}. */
static int parse_auth(json_t *a, struct osb_vault_binding *b, const char *where,
                      struct osb_err *err)
{
    static const char *const keys[] = {"type", "credential", "name", "headers", NULL};
    char *type = NULL, *name = NULL;
    int r = -1;
    if (!json_is_object(a))
        return BAD("%s must be an object", where);
    if (only_keys(a, keys, where, err) < 0 || str_of(a, "type", true, 32, &type, where, err) < 0)
        goto out;
    size_t t = 0;
    while (t < 4 && strcmp(atype_name[t], type) != 0)
        t++;
    if (t == 4) {
        BAD("%s: unsupported auth type \"%s\"", where, type);
        goto out;
    }
    b->type = (enum atype)t;
    if (b->type == A_BEARER || b->type == A_BASIC) {
        r = add_hdr(b, "Authorization", a, "credential", where, err);
    } else if (b->type == A_APIKEY) {
        if (str_of(a, "name", true, OSB_VAULT_MAX_NAME, &name, where, err) == 0 &&
            header_name(name, where, err) == 0)
            r = add_hdr(b, name, a, "credential", where, err);
    } else {
        json_t *hs, *h;
        size_t i;
        if (array_of(a, "headers", OSB_VAULT_MAX_HEADERS, &hs, where, err) < 0)
            goto out;
        if (!json_array_size(hs)) {
            BAD("%s: customHeaders auth requires headers", where);
            goto out;
        }
        static const char *const hkeys[] = {"name", "credential", NULL};
        json_array_foreach(hs, i, h)
        {
            char hw[128];
            snprintf(hw, sizeof hw, "%s.headers[%zu]", where, i);
            free(name);
            name = NULL;
            if (!json_is_object(h)) {
                BAD("%s must be an object", hw);
                goto out;
            }
            if (only_keys(h, hkeys, hw, err) < 0 ||
                str_of(h, "name", true, OSB_VAULT_MAX_NAME, &name, hw, err) < 0 ||
                header_name(name, hw, err) < 0)
                goto out;
            for (size_t k = 0; k < b->nh; k++)
                if (strcasecmp(b->h[k].name, name) == 0) {
                    BAD("%s: duplicate custom header name \"%s\"", hw, name);
                    goto out;
                }
            if (add_hdr(b, name, h, "credential", hw, err) < 0)
                goto out;
        }
        r = 0;
    }
out:
    free(type);
    free(name);
    return r;
}

static int parse_binding(json_t *j, struct osb_vault_binding **out, const char *where,
                         struct osb_err *err)
{
    static const char *const keys[] = {"name", "match", "auth", NULL};
    struct osb_vault_binding *b = osb_xcalloc(1, sizeof *b);
    char wm[96], wa[96];
    *out = NULL;
    int r = -1;
    snprintf(wm, sizeof wm, "%s.match", where);
    snprintf(wa, sizeof wa, "%s.auth", where);
    if (!json_is_object(j))
        BAD("%s must be an object", where);
    else if (only_keys(j, keys, where, err) < 0 ||
             str_of(j, "name", true, OSB_VAULT_MAX_NAME, &b->name, where, err) < 0)
        ;
    else if (!*b->name)
        BAD("%s: binding name cannot be blank", where);
    else if (parse_match(json_object_get(j, "match"), b, wm, err) < 0 ||
             parse_auth(json_object_get(j, "auth"), b, wa, err) < 0)
        ;
    else
        r = 0;
    if (r < 0)
        binding_free(b);
    else
        *out = b;
    return r;
}

/* ------------------------------------------------------------ a candidate */

static struct osb_vault *vault_new(int64_t rev)
{
    struct osb_vault *v = osb_xcalloc(1, sizeof *v);
    atomic_init(&v->refs, 1);
    v->rev = rev;
    return v;
}

static ssize_t find_cred(const struct osb_vault *v, const char *name)
{
    for (size_t i = 0; i < v->nc; i++)
        if (strcmp(v->c[i].name, name) == 0)
            return (ssize_t)i;
    return -1;
}

static ssize_t find_binding(const struct osb_vault *v, const char *name)
{
    for (size_t i = 0; i < v->nb; i++)
        if (strcmp(v->b[i]->name, name) == 0)
            return (ssize_t)i;
    return -1;
}

static void drop_cred(struct osb_vault *v, size_t i)
{
    free(v->c[i].name);
    wipe(v->c[i].value);
    v->c[i] = v->c[--v->nc];
}

static void drop_binding(struct osb_vault *v, size_t i)
{
    binding_free(v->b[i]);
    v->b[i] = v->b[--v->nb];
}

/* "*.a.b" covers x.a.b and y.x.a.b, never a.b. */
static bool host_matches(const char *host, const char *pat, int *prec)
{
    if (strncmp(pat, "*.", 2) != 0) {
        *prec = 2;
        return strcmp(host, pat) == 0;
    }
    size_t lh = strlen(host), ls = strlen(pat + 1);
    *prec = 1;
    return lh > ls && strcmp(host + lh - ls, pat + 1) == 0;
}

/* An allow rule naming the host itself (or a wildcard covering it), and the
 * policy as a whole allowing it (upstream's explicitAllowCoversHost). */
static bool allowed_by(const struct osb_policy *p, const char *host)
{
    if (!p)
        return false;
    bool wild = strncmp(host, "*.", 2) == 0, named = false;
    for (size_t i = 0; i < p->nrules && !named; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if (r->action != OSB_POLICY_ALLOW ||
            (r->kind != OSB_POLICY_DOMAIN && r->kind != OSB_POLICY_WILDCARD))
            continue;
        int prec;
        char pat[300];
        snprintf(pat, sizeof pat, "%s%s", r->kind == OSB_POLICY_WILDCARD ? "*." : "", r->name);
        named = strcmp(pat, host) == 0 || (r->kind == OSB_POLICY_WILDCARD &&
                                           host_matches(wild ? host + 2 : host, pat, &prec));
    }
    char probe[300];
    snprintf(probe, sizeof probe, "%s%s", wild ? "probe." : "", wild ? host + 2 : host);
    return named && osb_policy_match_name(p, probe) == OSB_POLICY_ALLOW;
}

static bool overlap_str(const struct strv *a, const struct strv *b)
{
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k < b->n; k++)
            if (strcmp(a->v[i], b->v[k]) == 0)
                return true;
    return false;
}

static bool path_overlap(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    bool wa = la && a[la - 1] == '*', wb = lb && b[lb - 1] == '*';
    return strcmp(a, b) == 0 || (wa && strncmp(b, a, la - 1) == 0) ||
           (wb && strncmp(a, b, lb - 1) == 0);
}

static bool hosts_overlap(const struct strv *a, const struct strv *b)
{
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k < b->n; k++) {
            const char *x = a->v[i], *y = b->v[k];
            bool wx = x[0] == '*', wy = y[0] == '*';
            if (wx != wy)
                continue;
            size_t lx = strlen(x), ly = strlen(y);
            if (!wx ? strcmp(x, y) == 0
                    : (strcmp(x, y) == 0 ||
                       (lx > ly && x[lx - ly + 1] == '.' && strcmp(x + lx - ly + 2, y + 2) == 0) ||
                       (ly > lx && y[ly - lx + 1] == '.' && strcmp(y + ly - lx + 2, x + 2) == 0)))
                return true;
        }
    return false;
}

/* Upstream's bindingsAmbiguous: both could match one request at the same
 * host precedence. */
static bool ambiguous(const struct osb_vault_binding *a, const struct osb_vault_binding *b)
{
    bool ports = false, paths = false;
    for (size_t i = 0; i < a->nports; i++)
        for (size_t k = 0; k < b->nports; k++)
            ports |= a->ports[i] == b->ports[k];
    for (size_t i = 0; i < a->paths.n; i++)
        for (size_t k = 0; k < b->paths.n; k++)
            paths |= path_overlap(a->paths.v[i], b->paths.v[k]);
    return ports && paths && overlap_str(&a->schemes, &b->schemes) &&
           overlap_str(&a->methods, &b->methods) && hosts_overlap(&a->hosts, &b->hosts);
}

static int validate_binding(const struct osb_vault *v, const struct osb_vault_binding *b,
                            const struct osb_policy *p, struct osb_err *err)
{
    for (size_t i = 0; i < b->nh; i++)
        if (find_cred(v, b->h[i].cred) < 0)
            return BAD("binding \"%s\" references unknown credential \"%s\"", b->name,
                       b->h[i].cred);
    for (size_t i = 0; i < b->hosts.n; i++)
        if (!allowed_by(p, b->hosts.v[i]))
            return BAD("binding \"%s\" host \"%s\" is not covered by an explicit allow egress rule",
                       b->name, b->hosts.v[i]);
    return 0;
}

static int validate(const struct osb_vault *v, const struct osb_policy *p, struct osb_err *err)
{
    if (v->nb && (!p || !p->nrules))
        return BAD("credential bindings require explicit networkPolicy.egress allow rules");
    for (size_t i = 0; i < v->nb; i++)
        if (validate_binding(v, v->b[i], p, err) < 0)
            return -1;
    for (size_t i = 0; i < v->nb; i++)
        for (size_t k = i + 1; k < v->nb; k++)
            if (ambiguous(v->b[i], v->b[k]))
                return BAD("bindings \"%s\" and \"%s\" can match the same request", v->b[i]->name,
                           v->b[k]->name);
    return 0;
}

int osb_vault_check_policy(const struct osb_vault *v, const struct osb_policy *policy,
                           struct osb_err *err)
{
    return validate(v, policy, err);
}

/* ------------------------------------------------------------ building */

static int cmp_cred(const void *a, const void *b)
{
    return strcmp(((const struct cred *)a)->name, ((const struct cred *)b)->name);
}

static int cmp_binding(const void *a, const void *b)
{
    return strcmp((*(struct osb_vault_binding *const *)a)->name,
                  (*(struct osb_vault_binding *const *)b)->name);
}

/* Sorted by name (as upstream lists them), header values rendered, the
 * secrets listed. v is valid (every reference resolves). */
static void finish(struct osb_vault *v)
{
    qsort(v->c, v->nc, sizeof *v->c, cmp_cred);
    qsort(v->b, v->nb, sizeof *v->b, cmp_binding);
    size_t max = v->nc, k = 0;
    for (size_t i = 0; i < v->nb; i++)
        max += v->b[i]->nh;
    v->secrets = osb_xcalloc(max + 1, sizeof *v->secrets);
    for (size_t i = 0; i < v->nc; i++)
        v->secrets[k++] = v->c[i].value;
    for (size_t i = 0; i < v->nb; i++) {
        struct osb_vault_binding *b = v->b[i];
        for (size_t h = 0; h < b->nh; h++) {
            const char *val = v->c[find_cred(v, b->h[h].cred)].value;
            wipe(b->h[h].value);
            b->h[h].value = b->type == A_BEARER  ? osb_xasprintf("Bearer %s", val)
                            : b->type == A_BASIC ? osb_xasprintf("Basic %s", val)
                                                 : osb_xstrdup(val);
            if (b->type == A_BEARER || b->type == A_BASIC)
                v->secrets[k++] = b->h[h].value;
        }
    }
    v->ns = k;
}

/* How an item list is applied: POST's list (names unique), PATCH's add
 * (the name must be new), PATCH's replace (the name must exist). */
enum put_mode { PUT_CREATE, PUT_ADD, PUT_REPLACE };

/* Whether an item named name may go in, found at index at (-1: absent);
 * indexes from fresh on were put by this same list. Upstream's messages;
 * all 400. */
static int may_put(enum put_mode m, ssize_t at, size_t fresh, const char *what, const char *w,
                   const char *name, struct osb_err *err)
{
    if (m == PUT_REPLACE)
        return at < 0 ? BAD("%s: %s \"%s\" does not exist", w, what, name) : 0;
    if (at < 0)
        return 0;
    if (m == PUT_CREATE)
        return BAD("%s: duplicate %s name \"%s\"", w, what, name);
    if ((size_t)at >= fresh)
        return BAD("%s: duplicate %s add name \"%s\"", w, what, name);
    return BAD("%s: %s \"%s\" already exists", w, what, name);
}

static int add_creds(struct osb_vault *v, json_t *arr, int64_t rev, enum put_mode m,
                     const char *where, struct osb_err *err)
{
    json_t *e;
    size_t i, fresh = v->nc;
    json_array_foreach(arr, i, e)
    {
        char w[64];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        struct cred c;
        if (parse_cred(e, rev, &c, w, err) < 0)
            return -1;
        ssize_t at = find_cred(v, c.name);
        int r = may_put(m, at, fresh, "credential", w, c.name, err);
        if (r == 0 && at >= 0)
            drop_cred(v, (size_t)at); /* replace: the last moves into the hole */
        if (r == 0 && v->nc == OSB_VAULT_MAX_ITEMS)
            r = BAD("%s: more than %d credentials", where, OSB_VAULT_MAX_ITEMS);
        if (r < 0) {
            free(c.name);
            wipe(c.value);
            return -1;
        }
        v->c[v->nc++] = c;
    }
    return 0;
}

static int add_bindings(struct osb_vault *v, json_t *arr, enum put_mode m, const char *where,
                        struct osb_err *err)
{
    json_t *e;
    size_t i, fresh = v->nb;
    json_array_foreach(arr, i, e)
    {
        char w[64];
        snprintf(w, sizeof w, "%s[%zu]", where, i);
        struct osb_vault_binding *b;
        if (parse_binding(e, &b, w, err) < 0)
            return -1;
        ssize_t at = find_binding(v, b->name);
        int r = may_put(m, at, fresh, "binding", w, b->name, err);
        if (r == 0 && at >= 0)
            drop_binding(v, (size_t)at);
        if (r == 0 && v->nb == OSB_VAULT_MAX_ITEMS)
            r = BAD("%s: more than %d bindings", where, OSB_VAULT_MAX_ITEMS);
        if (r < 0) {
            binding_free(b);
            return -1;
        }
        v->b[v->nb++] = b;
    }
    return 0;
}

int osb_vault_create(json_t *body, const struct osb_policy *policy, struct osb_vault **out,
                     struct osb_err *err)
{
    static const char *const keys[] = {"credentials", "bindings", NULL};
    json_t *creds, *binds;
    *out = NULL;
    if (!json_is_object(body) && !json_is_null(body)) /* null: empty, as Go decodes it */
        return BAD("the body must be a JSON object");
    if (only_keys(body, keys, "body", err) < 0 ||
        array_of(body, "credentials", OSB_VAULT_MAX_ITEMS, &creds, "body", err) < 0 ||
        array_of(body, "bindings", OSB_VAULT_MAX_ITEMS, &binds, "body", err) < 0)
        return -1;
    struct osb_vault *v = vault_new(1);
    if (add_creds(v, creds, 1, PUT_CREATE, "credentials", err) < 0 ||
        add_bindings(v, binds, PUT_CREATE, "bindings", err) < 0 || validate(v, policy, err) < 0) {
        osb_vault_unref(v);
        return -1;
    }
    finish(v);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ PATCH */

/* A name may appear in one operation of a mutation set only; record:
 * remember it (delete and replace do; a twice-added name is add's own
 * error). */
static int mention(struct strv *seen, const char *name, bool record, const char *what,
                   struct osb_err *err)
{
    for (size_t i = 0; i < seen->n; i++)
        if (strcmp(seen->v[i], name) == 0)
            return BAD("%s \"%s\" mentioned by multiple operations", what, name);
    if (!record)
        return 0;
    seen->v = osb_xrealloc(seen->v, (seen->n + 1) * sizeof *seen->v);
    seen->v[seen->n++] = osb_xstrdup(name);
    return 0;
}

static int names_of(json_t *arr, const char *what, const char *where, struct strv *seen,
                    struct strv *out, struct osb_err *err)
{
    json_t *e;
    size_t i;
    json_array_foreach(arr, i, e)
    {
        if (!json_is_string(e))
            return BAD("%s[%zu] must be a string", where, i);
        char *n = osb_xstrdup(json_string_value(e));
        trim_inplace(n);
        out->v = osb_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
        out->v[out->n++] = n;
        if (!*n)
            return BAD("%s[%zu]: %s delete name cannot be blank", where, i, what);
        if (mention(seen, n, true, what, err) < 0)
            return -1;
    }
    return 0;
}

/* The items of one parsed operation (replace, add) must not be mentioned. */
static int mention_items(json_t *arr, struct strv *seen, bool record, const char *what,
                         struct osb_err *err)
{
    json_t *e;
    size_t i;
    json_array_foreach(arr, i, e)
    {
        json_t *n = json_is_object(e) ? json_object_get(e, "name") : NULL;
        if (!json_is_string(n))
            continue; /* the item's own parse names the problem */
        char *t = osb_xstrdup(json_string_value(n));
        trim_inplace(t);
        int r = mention(seen, t, record, what, err);
        free(t);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int mutate(struct osb_vault *v, json_t *set, bool creds, int64_t rev, struct osb_err *err)
{
    static const char *const keys[] = {"add", "replace", "delete", NULL};
    const char *what = creds ? "credential" : "binding", *w = creds ? "credentials" : "bindings";
    if (!set || json_is_null(set))
        return 0;
    if (!json_is_object(set))
        return BAD("%s must be an object", w);
    json_t *add, *rep, *del;
    if (only_keys(set, keys, w, err) < 0 ||
        array_of(set, "add", OSB_VAULT_MAX_ITEMS, &add, w, err) < 0 ||
        array_of(set, "replace", OSB_VAULT_MAX_ITEMS, &rep, w, err) < 0 ||
        array_of(set, "delete", OSB_VAULT_MAX_ITEMS, &del, w, err) < 0)
        return -1;
    struct strv seen = {0}, dn = {0};
    int r = names_of(del, what, creds ? "credentials.delete" : "bindings.delete", &seen, &dn, err);
    for (size_t i = 0; r == 0 && i < dn.n; i++) {
        ssize_t at = creds ? find_cred(v, dn.v[i]) : find_binding(v, dn.v[i]);
        if (at < 0)
            r = BAD("%s \"%s\" does not exist", what, dn.v[i]);
        else if (creds)
            drop_cred(v, (size_t)at);
        else
            drop_binding(v, (size_t)at);
    }
    if (r == 0)
        r = mention_items(rep, &seen, true, what, err);
    if (r == 0)
        r = creds ? add_creds(v, rep, rev, PUT_REPLACE, "credentials.replace", err)
                  : add_bindings(v, rep, PUT_REPLACE, "bindings.replace", err);
    if (r == 0)
        r = mention_items(add, &seen, false, what, err);
    if (r == 0)
        r = creds ? add_creds(v, add, rev, PUT_ADD, "credentials.add", err)
                  : add_bindings(v, add, PUT_ADD, "bindings.add", err);
    strv_free(&seen);
    strv_free(&dn);
    return r;
}

int osb_vault_patch(const struct osb_vault *cur, json_t *body, const struct osb_policy *policy,
                    struct osb_vault **out, struct osb_err *err)
{
    static const char *const keys[] = {"expectedRevision", "credentials", "bindings", NULL};
    *out = NULL;
    if (!json_is_object(body) && !json_is_null(body)) /* null: no change, as Go decodes it */
        return BAD("the body must be a JSON object");
    if (only_keys(body, keys, "body", err) < 0)
        return -1;
    json_t *er = json_object_get(body, "expectedRevision");
    if (er && !json_is_null(er) && !json_is_integer(er))
        return BAD("expectedRevision must be an integer");
    if (er && json_is_integer(er) && json_integer_value(er) != cur->rev)
        return osb_err_set(err, OSB_E_EXISTS,
                           "expectedRevision %lld does not match current revision %lld",
                           (long long)json_integer_value(er), (long long)cur->rev);
    /* The candidate starts as a copy of cur (through its own dump). */
    char *text = osb_vault_dump(cur);
    struct osb_vault *v = NULL;
    int r = osb_vault_load(text, strlen(text), &v, err);
    osb_vault_dump_free(text);
    if (r < 0)
        return -1;
    v->rev = cur->rev + 1;
    free(v->secrets);
    v->secrets = NULL;
    if (mutate(v, json_object_get(body, "credentials"), true, v->rev, err) < 0 ||
        mutate(v, json_object_get(body, "bindings"), false, v->rev, err) < 0 ||
        validate(v, policy, err) < 0) {
        osb_vault_unref(v);
        return -1;
    }
    finish(v);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ output */

static json_t *strv_json(const struct strv *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a, json_string(s->v[i]));
    return a;
}

static json_t *match_json(const struct osb_vault_binding *b)
{
    json_t *ports = json_array();
    for (size_t i = 0; i < b->nports; i++)
        json_array_append_new(ports, json_integer(b->ports[i]));
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "schemes", strv_json(&b->schemes), "ports", ports,
                     "hosts", strv_json(&b->hosts), "methods", strv_json(&b->methods), "paths",
                     strv_json(&b->paths));
}

static json_t *binding_meta(const struct osb_vault *v, const struct osb_vault_binding *b)
{
    json_t *auth = json_pack("{s:s}", "type", atype_name[b->type]);
    if (b->type == A_APIKEY)
        json_object_set_new(auth, "name", json_string(b->h[0].name));
    return json_pack("{s:s,s:I,s:o,s:o}", "name", b->name, "revision", (json_int_t)v->rev, "match",
                     match_json(b), "auth", auth);
}

static json_t *cred_meta(const struct cred *c)
{
    return json_pack("{s:s,s:s,s:I}", "name", c->name, "sourceType", "inline", "revision",
                     (json_int_t)c->rev);
}

json_t *osb_vault_credentials_json(const struct osb_vault *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->nc; i++)
        json_array_append_new(a, cred_meta(&v->c[i]));
    return json_pack("{s:I,s:o}", "revision", (json_int_t)v->rev, "credentials", a);
}

json_t *osb_vault_bindings_json(const struct osb_vault *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->nb; i++)
        json_array_append_new(a, binding_meta(v, v->b[i]));
    return json_pack("{s:I,s:o}", "revision", (json_int_t)v->rev, "bindings", a);
}

json_t *osb_vault_state_json(const struct osb_vault *v)
{
    json_t *s = osb_vault_credentials_json(v), *b = osb_vault_bindings_json(v);
    json_object_set(s, "bindings", json_object_get(b, "bindings"));
    json_decref(b);
    return s;
}

json_t *osb_vault_credential_json(const struct osb_vault *v, const char *name)
{
    ssize_t i = find_cred(v, name);
    return i < 0 ? NULL : cred_meta(&v->c[i]);
}

json_t *osb_vault_binding_json(const struct osb_vault *v, const char *name)
{
    ssize_t i = find_binding(v, name);
    return i < 0 ? NULL : binding_meta(v, v->b[i]);
}

/* ------------------------------------------------------------ matching */

static bool has(const struct strv *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return true;
    return false;
}

static bool has_port(const struct osb_vault_binding *b, int port)
{
    for (size_t i = 0; i < b->nports; i++)
        if (b->ports[i] == port)
            return true;
    return false;
}

/* The best precedence at which b's hosts cover host (0: none). */
static int host_prec(const struct osb_vault_binding *b, const char *host)
{
    int best = 0, p;
    for (size_t i = 0; i < b->hosts.n; i++)
        if (host_matches(host, b->hosts.v[i], &p) && p > best)
            best = p;
    return best;
}

/* A request's host as bindings hold them: lower case, no trailing dot.
 * false when it cannot be a bound name (empty, too long). */
static bool req_host(const char *in, char out[256])
{
    size_t n = strlen(in);
    if (n && in[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    out[n] = 0;
    return true;
}

bool osb_vault_host_bound(const struct osb_vault *v, const char *host, int port)
{
    char h[256];
    if (!req_host(host, h))
        return false;
    for (size_t i = 0; i < v->nb; i++)
        if (has_port(v->b[i], port) && host_prec(v->b[i], h))
            return true;
    return false;
}

/* A pattern ending in '*' covers every path that starts with what precedes
 * the '*'; any other pattern covers only itself. The query string (from
 * '?') takes no part, and an empty path is "/", as upstream. */
static bool path_matches(const char *path, const char *pat)
{
    size_t pl = strcspn(path, "?"), n = strlen(pat);
    if (pl == 0)
        path = "/", pl = 1;
    if (n && pat[n - 1] == '*')
        return pl >= n - 1 && strncmp(path, pat, n - 1) == 0;
    return pl == n && strncmp(path, pat, n) == 0;
}

static bool binding_takes(const struct osb_vault_binding *b, const char *scheme, int port,
                          const char *method, const char *path)
{
    if (!has(&b->schemes, scheme) || !has_port(b, port) || !has(&b->methods, method))
        return false;
    for (size_t k = 0; k < b->paths.n; k++)
        if (path_matches(path, b->paths.v[k]))
            return true;
    return false;
}

/* Upstream's selection: every binding whose scheme, port, method and a
 * path pattern match is ranked by its best host match (exact 2, wildcard
 * 1); the highest rank wins, and two at that rank are ambiguous. */
int osb_vault_match(const struct osb_vault *v, const char *scheme, const char *host, int port,
                    const char *method, const char *path, const struct osb_vault_binding **out)
{
    char h[256], sc[8], me[32];
    int best = 0, count = 0;
    *out = NULL;
    if (!req_host(host, h) || strlen(scheme) >= sizeof sc || strlen(method) >= sizeof me)
        return 0;
    memcpy(sc, scheme, strlen(scheme) + 1);
    memcpy(me, method, strlen(method) + 1);
    set_case(sc, false);
    set_case(me, true);
    for (size_t i = 0; i < v->nb; i++) {
        const struct osb_vault_binding *b = v->b[i];
        int p = binding_takes(b, sc, port, me, path) ? host_prec(b, h) : 0;
        if (p > best) {
            best = p;
            count = 1;
            *out = b;
        } else if (p && p == best) {
            count++;
        }
    }
    if (count > 1)
        *out = NULL;
    return count > 1 ? 2 : count;
}

const char *osb_vault_binding_name(const struct osb_vault_binding *b)
{
    return b->name;
}

int osb_vault_render(const struct osb_vault *v, const struct osb_vault_binding *b,
                     struct osb_vault_header *out, size_t max, size_t *n)
{
    (void)v;
    *n = 0;
    if (b->nh > max)
        return -1;
    for (size_t i = 0; i < b->nh; i++)
        out[i] = (struct osb_vault_header){b->h[i].name, b->h[i].value};
    *n = b->nh;
    return 0;
}

size_t osb_vault_nsecrets(const struct osb_vault *v)
{
    return v->ns;
}

const char *osb_vault_secret(const struct osb_vault *v, size_t i)
{
    return i < v->ns ? v->secrets[i] : NULL;
}

/* ------------------------------------------------------------ dump, load */

static json_t *auth_wire(const struct osb_vault_binding *b)
{
    if (b->type == A_BEARER || b->type == A_BASIC)
        return json_pack("{s:s,s:s}", "type", atype_name[b->type], "credential", b->h[0].cred);
    if (b->type == A_APIKEY)
        return json_pack("{s:s,s:s,s:s}", "type", "apiKey", "name", b->h[0].name, "credential",
                         b->h[0].cred);
    json_t *hs = json_array();
    for (size_t i = 0; i < b->nh; i++)
        json_array_append_new(
            hs, json_pack("{s:s,s:s}", "name", b->h[i].name, "credential", b->h[i].cred));
    return json_pack("{s:s,s:o}", "type", "customHeaders", "headers", hs);
}

char *osb_vault_dump(const struct osb_vault *v)
{
    json_t *cs = json_array(), *bs = json_array();
    for (size_t i = 0; i < v->nc; i++)
        json_array_append_new(cs, json_pack("{s:s,s:s,s:I}", "name", v->c[i].name, "value",
                                            v->c[i].value, "revision", (json_int_t)v->c[i].rev));
    for (size_t i = 0; i < v->nb; i++)
        json_array_append_new(bs, json_pack("{s:s,s:o,s:o}", "name", v->b[i]->name, "match",
                                            match_json(v->b[i]), "auth", auth_wire(v->b[i])));
    json_t *j = json_pack("{s:I,s:o,s:o}", "revision", (json_int_t)v->rev, "credentials", cs,
                          "bindings", bs);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j); /* jansson frees its copies without wiping: short-lived, in this process */
    if (!text)
        abort(); /* only out of memory: the daemon's policy (common/xalloc.h) */
    return text;
}

void osb_vault_dump_free(char *text)
{
    wipe(text);
}

static int load_creds(struct osb_vault *v, json_t *arr, struct osb_err *err)
{
    json_t *e;
    size_t i;
    if (!json_is_array(arr) || json_array_size(arr) > OSB_VAULT_MAX_ITEMS)
        return BAD("stored vault: credentials");
    json_array_foreach(arr, i, e)
    {
        json_t *n = json_object_get(e, "name"), *val = json_object_get(e, "value"),
               *r = json_object_get(e, "revision");
        if (!json_is_string(n) || !json_is_string(val) || !json_is_integer(r) ||
            !*json_string_value(n) || json_string_length(n) > OSB_VAULT_MAX_NAME ||
            !*json_string_value(val) || json_string_length(val) > OSB_VAULT_MAX_VALUE ||
            !value_ok(json_string_value(val)) || json_integer_value(r) < 1 ||
            find_cred(v, json_string_value(n)) >= 0)
            return BAD("stored vault: credentials[%zu]", i);
        v->c[v->nc++] = (struct cred){osb_xstrdup(json_string_value(n)),
                                      osb_xstrdup(json_string_value(val)), json_integer_value(r)};
    }
    return 0;
}

int osb_vault_load(const char *text, size_t len, struct osb_vault **out, struct osb_err *err)
{
    *out = NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    json_t *rev = json_object_get(j, "revision");
    if (!json_is_object(j) || !json_is_integer(rev) || json_integer_value(rev) < 1) {
        json_decref(j);
        return BAD("stored vault: not a vault");
    }
    struct osb_vault *v = vault_new(json_integer_value(rev));
    json_t *bs = json_object_get(j, "bindings");
    int r = load_creds(v, json_object_get(j, "credentials"), err);
    if (r == 0 && (!json_is_array(bs) || json_array_size(bs) > OSB_VAULT_MAX_ITEMS))
        r = BAD("stored vault: bindings");
    if (r == 0)
        r = add_bindings(v, bs, PUT_CREATE, "stored vault: bindings", err);
    for (size_t i = 0; r == 0 && i < v->nb; i++)
        for (size_t h = 0; r == 0 && h < v->b[i]->nh; h++)
            if (find_cred(v, v->b[i]->h[h].cred) < 0)
                r = BAD("stored vault: binding \"%s\" references a missing credential",
                        v->b[i]->name);
    json_decref(j);
    if (r < 0) {
        osb_vault_unref(v);
        return -1;
    }
    finish(v);
    *out = v;
    return 0;
}
