/* libFuzzer target: NetworkPolicy bodies through src/net/policy.c. A body
 * that parses must print as JSON that parses back to the same policy; it is
 * then patched with its own rules (same targets: nothing may change in
 * count), matched against every target, and emptied by DELETE. The source
 * is included directly: the fuzz build links only src/common and src/http. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/net/policy.c"
#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct osb_policy *p)
{
    json_t *j = osb_policy_json(p);
    struct osb_policy q;
    struct osb_err e = {0};
    if (osb_policy_parse(j, &q, &e) < 0 || q.nrules != p->nrules ||
        q.default_action != p->default_action)
        abort();
    json_t *j2 = osb_policy_json(&q);
    if (!json_equal(j, j2))
        abort();
    json_decref(j);
    json_decref(j2);
    osb_policy_free(&q);
}

static void check_matching(const struct osb_policy *p)
{
    for (size_t i = 0; i < p->nrules; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if (r->kind == OSB_POLICY_DOMAIN)
            (void)osb_policy_match_name(p, r->target);
        else if (r->kind == OSB_POLICY_WILDCARD) {
            char *n = osb_xasprintf("x.%s", r->name);
            (void)osb_policy_match_name(p, n);
            free(n);
        } else {
            bool m;
            (void)osb_policy_match_ip(p, r->family, r->addr, &m);
            if (!m)
                abort(); /* a rule's own network matches it (or an earlier rule) */
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = NULL;
    struct osb_err err = {0};
    if (osb_json_parse((const char *)data, size, true, &body, &err) < 0)
        return 0;
    struct osb_policy p;
    if (osb_policy_parse(body, &p, &err) == 0) {
        check_round_trip(&p);
        check_matching(&p);
        struct osb_policy q;
        osb_policy_copy(&q, &p);
        size_t before = p.nrules;
        if (osb_policy_patch(&p, q.rules, q.nrules, &err) < 0 || p.nrules > before)
            abort();
        const char **t = calloc(q.nrules + 1, sizeof *t);
        for (size_t i = 0; i < q.nrules; i++)
            t[i] = q.rules[i].target;
        osb_policy_delete(&p, t, q.nrules);
        if (p.nrules != 0)
            abort();
        free(t);
        osb_policy_free(&q);
        osb_policy_free(&p);
    } else if (!err.msg[0]) {
        abort();
    }
    if (json_is_array(body)) { /* also a PATCH body */
        struct osb_policy_rule *r;
        size_t n;
        if (osb_policy_parse_rules(body, &r, &n, &err) == 0)
            osb_policy_rules_free(r, n);
    }
    json_decref(body);
    return 0;
}
