/* Egress policy model: see policy.h and protocol.md section 4. */
#include "net/policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"

/* A DNS name is at most 253 characters in text form. */
#define NAME_MAX_TEXT 253

void osb_policy_init(struct osb_policy *p, enum osb_policy_action default_action)
{
    p->default_action = default_action;
    p->nrules = 0;
    p->rules = NULL;
}

static void rule_clear(struct osb_policy_rule *r)
{
    free(r->target);
    free(r->name);
    r->target = r->name = NULL;
}

static void rule_copy(struct osb_policy_rule *dst, const struct osb_policy_rule *src)
{
    *dst = *src;
    dst->target = osb_xstrdup(src->target);
    dst->name = src->name ? osb_xstrdup(src->name) : NULL;
}

void osb_policy_rules_free(struct osb_policy_rule *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rule_clear(&rules[i]);
    free(rules);
}

void osb_policy_free(struct osb_policy *p)
{
    if (!p)
        return;
    osb_policy_rules_free(p->rules, p->nrules);
    p->rules = NULL;
    p->nrules = 0;
}

void osb_policy_copy(struct osb_policy *dst, const struct osb_policy *src)
{
    dst->default_action = src->default_action;
    dst->nrules = src->nrules;
    dst->rules = src->nrules ? osb_xcalloc(src->nrules, sizeof *dst->rules) : NULL;
    for (size_t i = 0; i < src->nrules; i++)
        rule_copy(&dst->rules[i], &src->rules[i]);
}

/* ---------- targets ---------- */

/* Leading and trailing white space is dropped, as upstream does. */
static char *trim_dup(const char *s, size_t len)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    return osb_xstrndup(s, len);
}

static void mask_host_bits(uint8_t *a, unsigned bytes, unsigned prefix)
{
    for (unsigned i = 0; i < bytes; i++) {
        unsigned keep = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
        a[i] &= (uint8_t)(0xff00u >> keep);
    }
}

/* 1: t is an address or prefix (r filled); 0: not one; -1: has a '/' but
 * is no valid prefix. */
static int parse_ip_target(const char *t, struct osb_policy_rule *r)
{
    const char *slash = strchr(t, '/');
    char host[INET6_ADDRSTRLEN + 1];
    size_t hl = slash ? (size_t)(slash - t) : strlen(t);
    if (hl >= sizeof host)
        return slash ? -1 : 0;
    memcpy(host, t, hl);
    host[hl] = 0;
    memset(r->addr, 0, sizeof r->addr);
    if (inet_pton(AF_INET, host, r->addr) == 1)
        r->family = AF_INET;
    else if (inet_pton(AF_INET6, host, r->addr) == 1)
        r->family = AF_INET6;
    else
        return slash ? -1 : 0;
    unsigned max = r->family == AF_INET ? 32 : 128;
    r->kind = OSB_POLICY_IP;
    r->prefix = max;
    if (!slash)
        return 1;
    const char *d = slash + 1;
    unsigned v = 0;
    if (!*d || strlen(d) > 3)
        return -1;
    for (; *d; d++) {
        if (!isdigit((unsigned char)*d))
            return -1;
        v = v * 10 + (unsigned)(*d - '0');
    }
    if (v > max)
        return -1;
    r->kind = OSB_POLICY_CIDR;
    r->prefix = v;
    mask_host_bits(r->addr, max / 8, v);
    return 1;
}

/* Labels of printable characters; '*' only as the whole first label of a
 * wildcard, '\' never (it escapes odd bytes in query names, see dnsmsg). */
static bool valid_domain(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > NAME_MAX_TEXT || n[0] == '.' || strstr(n, ".."))
        return false;
    for (const char *c = n; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u <= 0x20 || u >= 0x7f || u == '*' || u == '/' || u == '\\')
            return false;
    }
    return true;
}

static int parse_domain_target(const char *t, struct osb_policy_rule *r)
{
    bool wild = strncmp(t, "*.", 2) == 0;
    char *n = osb_xstrdup(wild ? t + 2 : t);
    size_t len = strlen(n);
    if (len && n[len - 1] == '.')
        n[--len] = 0;
    for (char *c = n; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (!valid_domain(n)) {
        free(n);
        return -1;
    }
    r->kind = wild ? OSB_POLICY_WILDCARD : OSB_POLICY_DOMAIN;
    r->name = n;
    return 0;
}

/* Fill r from one NetworkRule object; where = "egress[3]" for messages. */
static int parse_rule(json_t *o, const char *where, struct osb_policy_rule *r, struct osb_err *err)
{
    if (!json_is_object(o))
        return osb_err_set(err, OSB_E_INVALID, "%s must be an object", where);
    json_t *a = json_object_get(o, "action"), *t = json_object_get(o, "target");
    memset(r, 0, sizeof *r);
    r->action = OSB_POLICY_DENY;
    if (a && !json_is_null(a)) {
        if (!json_is_string(a))
            return osb_err_set(err, OSB_E_INVALID, "%s.action must be a string", where);
        char *s = trim_dup(json_string_value(a), json_string_length(a));
        bool allow = strcasecmp(s, "allow") == 0, deny = !*s || strcasecmp(s, "deny") == 0;
        bool nul = strlen(json_string_value(a)) != json_string_length(a);
        free(s);
        if ((!allow && !deny) || nul)
            return osb_err_set(err, OSB_E_INVALID, "%s.action must be allow or deny", where);
        r->action = allow ? OSB_POLICY_ALLOW : OSB_POLICY_DENY;
    }
    if (t && !json_is_null(t) && !json_is_string(t))
        return osb_err_set(err, OSB_E_INVALID, "%s.target must be a string", where);
    const char *tv = t && json_is_string(t) ? json_string_value(t) : "";
    size_t tl = t && json_is_string(t) ? json_string_length(t) : 0;
    if (strlen(tv) != tl)
        return osb_err_set(err, OSB_E_INVALID, "%s.target must not contain NUL", where);
    r->target = trim_dup(tv, tl);
    if (!*r->target) {
        rule_clear(r);
        return osb_err_set(err, OSB_E_INVALID, "%s.target must not be empty", where);
    }
    int ip = parse_ip_target(r->target, r);
    if (ip == 0 && parse_domain_target(r->target, r) == 0)
        return 0;
    if (ip == 1)
        return 0;
    osb_err_set(err, OSB_E_INVALID, "%s.target \"%.64s\" is not an IP, CIDR or domain name", where,
                r->target);
    rule_clear(r);
    return -1;
}

/* Parse array elements into a fresh rule vector; prefix names the array. */
static int parse_rule_array(json_t *arr, const char *prefix, struct osb_policy_rule **out,
                            size_t *n, struct osb_err *err)
{
    size_t cnt = json_array_size(arr);
    if (cnt > OSB_POLICY_MAX_RULES)
        return osb_err_set(err, OSB_E_TOOBIG, "%s has %zu rules; at most %d are allowed", prefix,
                           cnt, OSB_POLICY_MAX_RULES);
    struct osb_policy_rule *rules = cnt ? osb_xcalloc(cnt, sizeof *rules) : NULL;
    for (size_t i = 0; i < cnt; i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%zu]", prefix, i);
        if (parse_rule(json_array_get(arr, i), where, &rules[i], err) < 0) {
            osb_policy_rules_free(rules, i);
            return -1;
        }
    }
    *out = rules;
    *n = cnt;
    return 0;
}

static int parse_default_action(json_t *d, enum osb_policy_action *out, struct osb_err *err)
{
    *out = OSB_POLICY_DENY;
    if (!d || json_is_null(d))
        return 0;
    if (!json_is_string(d))
        return osb_err_set(err, OSB_E_INVALID, "defaultAction must be a string");
    char *s = trim_dup(json_string_value(d), json_string_length(d));
    int rc = 0;
    if (strcasecmp(s, "allow") == 0)
        *out = OSB_POLICY_ALLOW;
    else if (*s && strcasecmp(s, "deny") != 0)
        rc = osb_err_set(err, OSB_E_INVALID, "defaultAction must be allow or deny");
    free(s);
    return rc;
}

int osb_policy_parse(json_t *v, struct osb_policy *out, struct osb_err *err)
{
    if (!v || json_is_null(v)) {
        osb_policy_init(out, OSB_POLICY_DENY);
        return 0;
    }
    if (!json_is_object(v))
        return osb_err_set(err, OSB_E_INVALID, "networkPolicy must be an object");
    enum osb_policy_action def;
    if (parse_default_action(json_object_get(v, "defaultAction"), &def, err) < 0)
        return -1;
    json_t *eg = json_object_get(v, "egress");
    if (eg && !json_is_null(eg) && !json_is_array(eg))
        return osb_err_set(err, OSB_E_INVALID, "egress must be an array");
    struct osb_policy p;
    osb_policy_init(&p, def);
    if (eg && json_is_array(eg) && parse_rule_array(eg, "egress", &p.rules, &p.nrules, err) < 0)
        return -1;
    *out = p;
    return 0;
}

int osb_policy_parse_rules(json_t *array, struct osb_policy_rule **rules, size_t *n,
                           struct osb_err *err)
{
    if (!json_is_array(array) || json_array_size(array) == 0)
        return osb_err_set(err, OSB_E_INVALID, "rules must be a non-empty array");
    return parse_rule_array(array, "rules", rules, n, err);
}

/* ---------- PATCH and DELETE ---------- */

static bool target_in(const char *t, const struct osb_policy_rule *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(t, rules[i].target) == 0)
            return true;
    return false;
}

int osb_policy_patch(struct osb_policy *p, const struct osb_policy_rule *rules, size_t n,
                     struct osb_err *err)
{
    struct osb_policy_rule *out = osb_xcalloc(n + p->nrules + 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!target_in(rules[i].target, out, k))
            rule_copy(&out[k++], &rules[i]);
    size_t npatch = k;
    for (size_t i = 0; i < p->nrules; i++)
        if (!target_in(p->rules[i].target, out, npatch))
            k++;
    if (k > OSB_POLICY_MAX_RULES) {
        osb_policy_rules_free(out, npatch);
        return osb_err_set(err, OSB_E_TOOBIG,
                           "the patched policy would have %zu rules; at most %d are allowed", k,
                           OSB_POLICY_MAX_RULES);
    }
    k = npatch;
    for (size_t i = 0; i < p->nrules; i++)
        if (!target_in(p->rules[i].target, out, npatch))
            out[k++] = p->rules[i]; /* moved, not copied */
        else
            rule_clear(&p->rules[i]);
    free(p->rules);
    p->rules = out;
    p->nrules = k;
    return 0;
}

/* Case-insensitive equality of r's target and t with t's surrounding
 * space ignored (stored targets are already trimmed). */
static bool target_eq(const char *target, const char *t)
{
    while (isspace((unsigned char)*t))
        t++;
    size_t len = strlen(t);
    while (len && isspace((unsigned char)t[len - 1]))
        len--;
    return strlen(target) == len && strncasecmp(target, t, len) == 0;
}

size_t osb_policy_delete(struct osb_policy *p, const char *const *targets, size_t n)
{
    size_t k = 0, removed = 0;
    for (size_t i = 0; i < p->nrules; i++) {
        bool hit = false;
        for (size_t j = 0; j < n && !hit; j++)
            hit = target_eq(p->rules[i].target, targets[j]);
        if (hit) {
            rule_clear(&p->rules[i]);
            removed++;
        } else {
            p->rules[k++] = p->rules[i];
        }
    }
    p->nrules = k;
    if (k == 0) {
        free(p->rules);
        p->rules = NULL;
    }
    return removed;
}

int osb_policy_delete_json(struct osb_policy *p, json_t *targets, size_t *removed,
                           struct osb_err *err)
{
    size_t n = json_array_size(targets);
    if (!json_is_array(targets) || n == 0)
        return osb_err_set(err, OSB_E_INVALID, "targets must be a non-empty array of strings");
    const char **v = osb_xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(targets, i);
        if (!json_is_string(s)) {
            free(v);
            return osb_err_set(err, OSB_E_INVALID, "targets[%zu] must be a string", i);
        }
        v[i] = json_string_value(s);
    }
    *removed = osb_policy_delete(p, v, n);
    free(v);
    return 0;
}

/* ---------- matching ---------- */

/* name: lower case, no trailing dot. */
static bool rule_matches_name(const struct osb_policy_rule *r, const char *name, size_t len)
{
    size_t rl = strlen(r->name);
    if (r->kind == OSB_POLICY_DOMAIN)
        return rl == len && memcmp(r->name, name, len) == 0;
    /* wildcard: at least one label before ".suffix" */
    return len > rl + 1 && name[len - rl - 1] == '.' && memcmp(name + len - rl, r->name, rl) == 0;
}

enum osb_policy_action osb_policy_match_name(const struct osb_policy *p, const char *name)
{
    if (!p)
        return OSB_POLICY_ALLOW;
    char buf[NAME_MAX_TEXT * 4 + 2];
    size_t len = strlen(name);
    if (len && name[len - 1] == '.')
        len--;
    if (len >= sizeof buf)
        return p->default_action; /* longer than any rule name: no rule can match */
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)tolower((unsigned char)name[i]);
    buf[len] = 0;
    for (size_t i = 0; i < p->nrules; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if ((r->kind == OSB_POLICY_DOMAIN || r->kind == OSB_POLICY_WILDCARD) &&
            rule_matches_name(r, buf, len))
            return r->action;
    }
    return p->default_action;
}

static bool prefix_contains(const struct osb_policy_rule *r, const uint8_t *a)
{
    unsigned full = r->prefix / 8, rest = r->prefix % 8;
    if (memcmp(r->addr, a, full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t m = (uint8_t)(0xff00u >> rest);
    return (a[full] & m) == r->addr[full];
}

enum osb_policy_action osb_policy_match_ip(const struct osb_policy *p, int family, const void *addr,
                                           bool *matched)
{
    if (matched)
        *matched = false;
    if (!p)
        return OSB_POLICY_ALLOW;
    for (size_t i = 0; i < p->nrules; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if ((r->kind == OSB_POLICY_IP || r->kind == OSB_POLICY_CIDR) && r->family == family &&
            prefix_contains(r, addr)) {
            if (matched)
                *matched = true;
            return r->action;
        }
    }
    return p->default_action;
}

/* ---------- output ---------- */

enum osb_policy_mode osb_policy_mode(const struct osb_policy *p)
{
    if (p->nrules)
        return OSB_POLICY_MODE_ENFORCING;
    return p->default_action == OSB_POLICY_ALLOW ? OSB_POLICY_MODE_ALLOW_ALL
                                                 : OSB_POLICY_MODE_DENY_ALL;
}

const char *osb_policy_mode_str(enum osb_policy_mode m)
{
    switch (m) {
    case OSB_POLICY_MODE_ALLOW_ALL: return "allow_all";
    case OSB_POLICY_MODE_DENY_ALL: return "deny_all";
    case OSB_POLICY_MODE_ENFORCING: return "enforcing";
    }
    return "enforcing";
}

const char *osb_policy_action_str(enum osb_policy_action a)
{
    return a == OSB_POLICY_ALLOW ? "allow" : "deny";
}

json_t *osb_policy_json(const struct osb_policy *p)
{
    json_t *eg = json_array();
    for (size_t i = 0; i < p->nrules; i++)
        json_array_append_new(eg, json_pack("{s:s, s:s}", "action",
                                            osb_policy_action_str(p->rules[i].action), "target",
                                            p->rules[i].target));
    return json_pack("{s:o, s:s}", "egress", eg, "defaultAction",
                     osb_policy_action_str(p->default_action));
}
