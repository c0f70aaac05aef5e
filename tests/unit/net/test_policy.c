/* src/net/policy: protocol.md section 4 semantics of the egress policy. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "net/policy.h"
#include "tap.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v) {
        printf("# bad test JSON %s: %s\n", s, e.text);
        fflush(stdout);
        abort();
    }
    return v;
}

/* Parse a policy from JSON text; aborts the test on failure. */
static struct osb_policy P(const char *s) {
    struct osb_policy p;
    struct osb_err e = {0};
    json_t *v = J(s);
    if (osb_policy_parse(v, &p, &e) < 0) {
        printf("# parse %s: %s\n", s, e.msg);
        abort();
    }
    json_decref(v);
    return p;
}

static char *
dump(const struct osb_policy *p)
{
    json_t *j = osb_policy_json(p);
    char *s = osb_json_dump(j, NULL);
    json_decref(j);
    return s;
}

#define IS_JSON(p, want, what) \
    do { \
        char *_s = dump(p); \
        IS_STR(_s, want, what); \
        free(_s); \
    } while (0)

/* Parsing must fail with the exact message and code. */
static void parse_fails(const char *s, enum osb_errc code, const char *msg)
{
    struct osb_policy p = {.nrules = 99};
    struct osb_err e = {0};
    json_t *v = J(s);
    int rc = osb_policy_parse(v, &p, &e);
    json_decref(v);
    char what[256];
    snprintf(what, sizeof what, "parse fails: %.200s", s);
    OK(rc < 0, what);
    IS_INT(e.code, code, "error code");
    IS_STR(e.msg, msg, "error message");
    IS_INT(p.nrules, 99, "out untouched on failure");
}

static void test_parse_defaults(void)
{
    struct osb_policy p;
    struct osb_err e = {0};
    OK(osb_policy_parse(NULL, &p, &e) == 0, "NULL body parses");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"deny\"}", "NULL body -> deny-all");
    IS_STR(osb_policy_mode_str(osb_policy_mode(&p)), "deny_all", "mode deny_all");
    osb_policy_free(&p);
    p = P("null");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"deny\"}", "null -> deny-all");
    osb_policy_free(&p);
    p = P("{}");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"deny\"}", "{} -> deny-all");
    osb_policy_free(&p);
    p = P("{\"egress\":null,\"defaultAction\":null}");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"deny\"}", "nulls -> deny-all");
    osb_policy_free(&p);
    p = P("{\"defaultAction\":\" ALLOW \"}");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"allow\"}",
            "defaultAction lower-cased, trimmed");
    IS_STR(osb_policy_mode_str(osb_policy_mode(&p)), "allow_all", "mode allow_all");
    osb_policy_free(&p);
    p = P("{\"defaultAction\":\"\",\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"}]}");
    IS_JSON(&p,
            "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"}],\"defaultAction\":\"deny\"}",
            "empty defaultAction -> deny");
    IS_STR(osb_policy_mode_str(osb_policy_mode(&p)), "enforcing", "mode enforcing with rules");
    osb_policy_free(&p);
    p = P("{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\",\"target\":\"x\"}],"
          "\"unknown\":1}");
    IS_STR(osb_policy_mode_str(osb_policy_mode(&p)), "enforcing", "allow + rules is enforcing");
    osb_policy_free(&p);
}

static void test_parse_rules(void)
{
    struct osb_policy p = P("{\"egress\":["
                            "{\"action\":\"ALLOW\",\"target\":\"  PyPI.org \"},"
                            "{\"action\":\"\",\"target\":\"a.com\"},"
                            "{\"target\":\"b.com\"},"
                            "{\"action\":null,\"target\":\"*.Wild.COM.\"},"
                            "{\"action\":\"Deny\",\"target\":\"10.1.2.3\"},"
                            "{\"action\":\"allow\",\"target\":\"10.1.2.3/8\"},"
                            "{\"action\":\"allow\",\"target\":\"2001:DB8::/32\"},"
                            "{\"action\":\"allow\",\"target\":\"::1\"}]}");
    IS_INT(p.nrules, 8, "8 rules");
    IS_JSON(&p,
            "{\"egress\":[{\"action\":\"allow\",\"target\":\"PyPI.org\"},"
            "{\"action\":\"deny\",\"target\":\"a.com\"},{\"action\":\"deny\",\"target\":\"b.com\"},"
            "{\"action\":\"deny\",\"target\":\"*.Wild.COM.\"},"
            "{\"action\":\"deny\",\"target\":\"10.1.2.3\"},"
            "{\"action\":\"allow\",\"target\":\"10.1.2.3/8\"},"
            "{\"action\":\"allow\",\"target\":\"2001:DB8::/32\"},"
            "{\"action\":\"allow\",\"target\":\"::1\"}],\"defaultAction\":\"deny\"}",
            "rules: actions normalized, targets trimmed and kept as given");
    IS_INT(p.rules[0].kind, OSB_POLICY_DOMAIN, "domain kind");
    IS_STR(p.rules[0].name, "pypi.org", "domain name lower-cased");
    IS_INT(p.rules[3].kind, OSB_POLICY_WILDCARD, "wildcard kind");
    IS_STR(p.rules[3].name, "wild.com", "wildcard suffix, trailing dot dropped");
    IS_INT(p.rules[4].kind, OSB_POLICY_IP, "IP kind");
    IS_INT(p.rules[4].prefix, 32, "IP is a /32");
    IS_INT(p.rules[5].kind, OSB_POLICY_CIDR, "CIDR kind");
    uint8_t want[4] = {10, 0, 0, 0};
    OK(memcmp(p.rules[5].addr, want, 4) == 0, "CIDR host bits masked");
    IS_INT(p.rules[6].family, AF_INET6, "IPv6 CIDR family");
    IS_INT(p.rules[7].prefix, 128, "IPv6 address is a /128");
    osb_policy_free(&p);
}

static void test_parse_errors(void)
{
    parse_fails("[]", OSB_E_INVALID, "networkPolicy must be an object");
    parse_fails("\"\"", OSB_E_INVALID, "networkPolicy must be an object");
    parse_fails("{\"defaultAction\":\"block\"}", OSB_E_INVALID,
                "defaultAction must be allow or deny");
    parse_fails("{\"defaultAction\":1}", OSB_E_INVALID, "defaultAction must be a string");
    parse_fails("{\"egress\":{}}", OSB_E_INVALID, "egress must be an array");
    parse_fails("{\"egress\":[1]}", OSB_E_INVALID, "egress[0] must be an object");
    parse_fails(
        "{\"egress\":[{\"action\":\"allow\",\"target\":\"a\"},{\"action\":\"allow\",\"target\":\"b\"},"
        "{\"action\":\"allow\",\"target\":\"  \"}]}",
        OSB_E_INVALID, "egress[2].target must not be empty");
    parse_fails("{\"egress\":[{\"action\":\"allow\"}]}", OSB_E_INVALID,
                "egress[0].target must not be empty");
    parse_fails("{\"egress\":[{\"action\":\"reject\",\"target\":\"a.com\"}]}", OSB_E_INVALID,
                "egress[0].action must be allow or deny");
    parse_fails("{\"egress\":[{\"action\":true,\"target\":\"a.com\"}]}", OSB_E_INVALID,
                "egress[0].action must be a string");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":5}]}", OSB_E_INVALID,
                "egress[0].target must be a string");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.0/33\"}]}", OSB_E_INVALID,
                "egress[0].target \"10.0.0.0/33\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"::/129\"}]}", OSB_E_INVALID,
                "egress[0].target \"::/129\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"10.0.0.0/\"}]}", OSB_E_INVALID,
                "egress[0].target \"10.0.0.0/\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com/8\"}]}", OSB_E_INVALID,
                "egress[0].target \"a.com/8\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"*\"}]}", OSB_E_INVALID,
                "egress[0].target \"*\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"*.\"}]}", OSB_E_INVALID,
                "egress[0].target \"*.\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.*.com\"}]}", OSB_E_INVALID,
                "egress[0].target \"a.*.com\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"a b.com\"}]}", OSB_E_INVALID,
                "egress[0].target \"a b.com\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"a..com\"}]}", OSB_E_INVALID,
                "egress[0].target \"a..com\" is not an IP, CIDR or domain name");
    parse_fails("{\"egress\":[{\"action\":\"allow\",\"target\":\"a\\u0000b\"}]}", OSB_E_INVALID,
                "egress[0].target must not contain NUL");
}

static char *rules_json(size_t n, const char *fmt)
{
    size_t cap = n * 64 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"egress\":[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, fmt, i ? "," : "", i);
    snprintf(s + len, cap - len, "]}");
    return s;
}

static void test_limits(void)
{
    char *s = rules_json(OSB_POLICY_MAX_RULES, "%s{\"action\":\"allow\",\"target\":\"h%zu.com\"}");
    struct osb_policy p = P(s);
    IS_INT(p.nrules, OSB_POLICY_MAX_RULES, "4096 rules accepted");
    free(s);
    s = rules_json(OSB_POLICY_MAX_RULES + 1, "%s{\"action\":\"allow\",\"target\":\"h%zu.com\"}");
    parse_fails(s, OSB_E_TOOBIG, "egress has 4097 rules; at most 4096 are allowed");
    free(s);
    /* a patch that adds one new target to a full policy is refused */
    json_t *arr = J("[{\"action\":\"allow\",\"target\":\"new.com\"}]");
    struct osb_policy_rule *r;
    size_t n;
    struct osb_err e = {0};
    OK(osb_policy_parse_rules(arr, &r, &n, &e) == 0, "parse patch");
    OK(osb_policy_patch(&p, r, n, &e) < 0, "patch past 4096 fails");
    IS_INT(e.code, OSB_E_TOOBIG, "patch error is TOOBIG");
    IS_INT(p.nrules, OSB_POLICY_MAX_RULES, "policy unchanged");
    IS_STR(p.rules[0].target, "h0.com", "first rule unchanged");
    osb_policy_rules_free(r, n);
    json_decref(arr);
    /* replacing an existing target keeps the count: allowed */
    arr = J("[{\"action\":\"deny\",\"target\":\"H7.com\"}]");
    OK(osb_policy_parse_rules(arr, &r, &n, &e) == 0, "parse patch 2");
    OK(osb_policy_patch(&p, r, n, &e) == 0, "patch replacing a target in a full policy");
    IS_INT(p.nrules, OSB_POLICY_MAX_RULES, "still 4096");
    IS_STR(p.rules[0].target, "H7.com", "replacement first");
    IS_INT(osb_policy_match_name(&p, "h7.com"), OSB_POLICY_DENY, "replacement wins");
    osb_policy_rules_free(r, n);
    json_decref(arr);
    osb_policy_free(&p);
}

#define ALLOWED(p, n) (osb_policy_match_name((p), (n)) == OSB_POLICY_ALLOW)

static void test_match_name(void)
{
    struct osb_policy p = P("{\"defaultAction\":\"deny\",\"egress\":["
                            "{\"action\":\"allow\",\"target\":\"*.example.com\"},"
                            "{\"action\":\"deny\",\"target\":\"bad.example.com\"},"
                            "{\"action\":\"allow\",\"target\":\"PyPI.org.\"},"
                            "{\"action\":\"deny\",\"target\":\"*.files.pypi.org\"},"
                            "{\"action\":\"allow\",\"target\":\"10.0.0.0/8\"}]}");
    OK(ALLOWED(&p, "a.example.com"), "wildcard matches a subdomain");
    OK(ALLOWED(&p, "a.b.c.example.com"), "wildcard matches at any depth");
    OK(!ALLOWED(&p, "example.com"), "wildcard does not match the apex");
    OK(!ALLOWED(&p, "badexample.com"), "wildcard needs a label boundary");
    OK(ALLOWED(&p, "bad.example.com"), "first match wins: earlier wildcard beats later exact");
    OK(ALLOWED(&p, "pypi.org"), "exact match, rule with trailing dot");
    OK(ALLOWED(&p, "PYPI.ORG."), "case-insensitive, query trailing dot");
    OK(!ALLOWED(&p, "www.pypi.org"), "exact does not match subdomains");
    OK(!ALLOWED(&p, "x.files.pypi.org"), "wildcard deny");
    OK(!ALLOWED(&p, "10.1.2.3"), "IP rules do not match names");
    OK(!ALLOWED(&p, ""), "empty name -> default");
    OK(!ALLOWED(&p, "."), "root -> default");
    OK(!ALLOWED(&p, "other.net"), "no match -> default deny");
    char longname[2000];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    OK(!ALLOWED(&p, longname), "very long name -> default");
    osb_policy_free(&p);

    p = P("{\"defaultAction\":\"allow\",\"egress\":["
          "{\"action\":\"deny\",\"target\":\"bad.example.com\"},"
          "{\"action\":\"allow\",\"target\":\"*.example.com\"}]}");
    OK(!ALLOWED(&p, "bad.example.com"), "first match wins: earlier exact beats later wildcard");
    OK(ALLOWED(&p, "x.bad.example.com"), "exact deny does not cover subdomains");
    OK(ALLOWED(&p, "anything.org"), "default allow");
    osb_policy_free(&p);
    OK(ALLOWED(NULL, "anything"), "NULL policy allows everything");
}

static enum osb_policy_action ip(const struct osb_policy *p, const char *a, bool *m)
{
    uint8_t b[16];
    int fam = strchr(a, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(fam, a, b) != 1)
        abort();
    return osb_policy_match_ip(p, fam, b, m);
}

static void test_match_ip(void)
{
    struct osb_policy p = P("{\"defaultAction\":\"deny\",\"egress\":["
                            "{\"action\":\"allow\",\"target\":\"allowed.com\"},"
                            "{\"action\":\"deny\",\"target\":\"10.1.2.3\"},"
                            "{\"action\":\"allow\",\"target\":\"10.0.0.0/8\"},"
                            "{\"action\":\"allow\",\"target\":\"192.168.1.128/25\"},"
                            "{\"action\":\"allow\",\"target\":\"2001:db8::/33\"},"
                            "{\"action\":\"deny\",\"target\":\"::/0\"},"
                            "{\"action\":\"allow\",\"target\":\"0.0.0.0/0\"}]}");
    bool m;
    IS_INT(ip(&p, "10.1.2.3", &m), OSB_POLICY_DENY, "first match: /32 deny before /8 allow");
    OK(m, "matched");
    IS_INT(ip(&p, "10.1.2.4", &m), OSB_POLICY_ALLOW, "inside /8");
    IS_INT(ip(&p, "192.168.1.200", &m), OSB_POLICY_ALLOW, "inside /25");
    IS_INT(ip(&p, "192.168.1.100", &m), OSB_POLICY_ALLOW, "outside /25 -> 0.0.0.0/0");
    IS_INT(ip(&p, "2001:db8:7fff::1", &m), OSB_POLICY_ALLOW, "inside IPv6 /33");
    IS_INT(ip(&p, "2001:db8:8000::1", &m), OSB_POLICY_DENY, "outside IPv6 /33 -> ::/0 deny");
    OK(m, "::/0 matched");
    osb_policy_free(&p);
    p = P(
        "{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\",\"target\":\"1.2.3.4\"}]}");
    IS_INT(ip(&p, "1.2.3.5", &m), OSB_POLICY_ALLOW, "no match -> default");
    OK(!m, "not matched");
    IS_INT(ip(&p, "::ffff:1.2.3.4", &m), OSB_POLICY_ALLOW, "families are distinct");
    osb_policy_free(&p);
    IS_INT(ip(NULL, "1.1.1.1", &m), OSB_POLICY_ALLOW, "NULL policy allows");
}

static void patch(struct osb_policy *p, const char *rules)
{
    json_t *arr = J(rules);
    struct osb_policy_rule *r;
    size_t n;
    struct osb_err e = {0};
    if (osb_policy_parse_rules(arr, &r, &n, &e) < 0 || osb_policy_patch(p, r, n, &e) < 0) {
        printf("# patch %s: %s\n", rules, e.msg);
        abort();
    }
    osb_policy_rules_free(r, n);
    json_decref(arr);
}

static void test_patch(void)
{
    struct osb_policy p = P("{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"},"
                            "{\"action\":\"allow\",\"target\":\"b.com\"},"
                            "{\"action\":\"deny\",\"target\":\"c.com\"}]}");
    patch(&p,
          "[{\"action\":\"deny\",\"target\":\"B.COM\"},{\"action\":\"allow\",\"target\":\"d.com\"},"
          "{\"action\":\"allow\",\"target\":\"b.com\"}]");
    IS_JSON(&p,
            "{\"egress\":[{\"action\":\"deny\",\"target\":\"B.COM\"},"
            "{\"action\":\"allow\",\"target\":\"d.com\"},"
            "{\"action\":\"allow\",\"target\":\"a.com\"},"
            "{\"action\":\"deny\",\"target\":\"c.com\"}],\"defaultAction\":\"deny\"}",
            "patch: incoming first (first per target), then untouched existing in order");
    OK(!ALLOWED(&p, "b.com"), "patched rule effective");
    OK(ALLOWED(&p, "d.com"), "new rule effective");
    patch(&p, "[{\"action\":\"allow\",\"target\":\"c.com\"}]");
    IS_STR(p.rules[0].target, "c.com", "re-patched target moves to the front");
    IS_INT(p.nrules, 4, "no duplicate");
    OK(ALLOWED(&p, "c.com"), "c.com now allowed");

    struct osb_err e = {0};
    struct osb_policy_rule *r = NULL;
    size_t n = 0;
    json_t *v = J("[]");
    OK(osb_policy_parse_rules(v, &r, &n, &e) < 0, "empty patch rejected");
    IS_STR(e.msg, "rules must be a non-empty array", "empty patch message");
    json_decref(v);
    v = J("{\"action\":\"allow\"}");
    OK(osb_policy_parse_rules(v, &r, &n, &e) < 0, "object patch rejected");
    json_decref(v);
    v = J(
        "[{\"action\":\"allow\",\"target\":\"x.com\"},{\"action\":\"maybe\",\"target\":\"y.com\"}]");
    OK(osb_policy_parse_rules(v, &r, &n, &e) < 0, "bad rule in patch rejected");
    IS_STR(e.msg, "rules[1].action must be allow or deny", "patch error names the element");
    json_decref(v);
    osb_policy_free(&p);
}

static void test_delete(void)
{
    struct osb_policy p = P("{\"defaultAction\":\"allow\",\"egress\":["
                            "{\"action\":\"deny\",\"target\":\"a.com\"},"
                            "{\"action\":\"deny\",\"target\":\"*.b.com\"},"
                            "{\"action\":\"deny\",\"target\":\"10.0.0.0/8\"},"
                            "{\"action\":\"deny\",\"target\":\"c.com\"}]}");
    const char *t1[] = {"A.com", "nothere.org", " *.B.com "};
    IS_INT(osb_policy_delete(&p, t1, 3), 2, "delete removes case-insensitive matches");
    IS_JSON(&p,
            "{\"egress\":[{\"action\":\"deny\",\"target\":\"10.0.0.0/8\"},"
            "{\"action\":\"deny\",\"target\":\"c.com\"}],\"defaultAction\":\"allow\"}",
            "remaining rules in order");
    const char *t2[] = {"zzz"};
    IS_INT(osb_policy_delete(&p, t2, 1), 0, "unknown target: nothing removed");
    struct osb_err e = {0};
    size_t removed = 99;
    json_t *v = J("[\"c.com\", 5]");
    OK(osb_policy_delete_json(&p, v, &removed, &e) < 0, "non-string target rejected");
    IS_STR(e.msg, "targets[1] must be a string", "delete error names the element");
    IS_INT(p.nrules, 2, "nothing removed on a bad body");
    json_decref(v);
    v = J("[]");
    OK(osb_policy_delete_json(&p, v, &removed, &e) < 0, "empty delete rejected");
    json_decref(v);
    v = J("[\"c.com\",\"10.0.0.0/8\"]");
    OK(osb_policy_delete_json(&p, v, &removed, &e) == 0, "delete json");
    IS_INT(removed, 2, "removed 2");
    IS_STR(osb_policy_mode_str(osb_policy_mode(&p)), "allow_all", "no rules + allow -> allow_all");
    IS_JSON(&p, "{\"egress\":[],\"defaultAction\":\"allow\"}", "egress [] after deleting all");
    json_decref(v);
    osb_policy_free(&p);
}

static void test_copy(void)
{
    struct osb_policy p = P("{\"egress\":[{\"action\":\"allow\",\"target\":\"*.a.com\"}]}"), q;
    osb_policy_copy(&q, &p);
    osb_policy_free(&p);
    OK(ALLOWED(&q, "x.a.com"), "copy is independent of the original");
    IS_JSON(
        &q,
        "{\"egress\":[{\"action\":\"allow\",\"target\":\"*.a.com\"}],\"defaultAction\":\"deny\"}",
        "copy JSON");
    osb_policy_free(&q);
    osb_policy_init(&q, OSB_POLICY_ALLOW);
    osb_policy_copy(&p, &q);
    IS_INT(p.nrules, 0, "copy of empty");
    osb_policy_free(&p);
}

int main(void)
{
    test_parse_defaults();
    test_parse_rules();
    test_parse_errors();
    test_limits();
    test_match_name();
    test_match_ip();
    test_patch();
    test_delete();
    test_copy();
    return tap_done();
}
