/* src/net/cidr.c: prefix cover, and the deny/allow set entries of a
 * policy's IP/CIDR rules (carving, nesting, /0, the piece cap). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net/cidr.h"
#include "tap.h"

static struct osb_cidr v4(const char *a, unsigned prefix)
{
    struct osb_cidr c = {.family = AF_INET, .prefix = prefix};
    inet_pton(AF_INET, a, c.addr);
    return c;
}

/* "10.0.0.0/9 10.128.0.0/9" */
static const char *show(const struct osb_cidrs *l)
{
    static char out[4096];
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < l->n && n < sizeof out; i++) {
        char a[INET6_ADDRSTRLEN];
        inet_ntop(l->v[i].family, l->v[i].addr, a, sizeof a);
        n += (size_t)snprintf(out + n, sizeof out - n, "%s%s/%u", i ? " " : "", a, l->v[i].prefix);
    }
    return out;
}

static void sets(const char *json, struct osb_cidrs *deny, struct osb_cidrs *allow)
{
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    struct osb_policy p;
    struct osb_err e = {0};
    if (!j || osb_policy_parse(j, &p, &e) < 0) {
        OK(0, "policy parses");
        osb_policy_init(&p, OSB_POLICY_DENY);
    }
    json_decref(j);
    *deny = (struct osb_cidrs){0};
    *allow = (struct osb_cidrs){0};
    osb_cidr_policy_sets(&p, deny, allow);
    osb_policy_free(&p);
}

static void test_covers(void)
{
    struct osb_cidr w = v4("10.0.0.0", 8), c = v4("10.1.2.0", 24), o = v4("11.0.0.0", 24);
    OK(osb_cidr_covers(&w, &c), "10/8 covers 10.1.2/24");
    OK(!osb_cidr_covers(&c, &w), "a /24 does not cover its /8");
    OK(!osb_cidr_covers(&w, &o), "10/8 does not cover 11.0.0/24");
    OK(osb_cidr_covers(&c, &c), "a prefix covers itself");
    struct osb_cidr odd = v4("10.1.2.128", 25), odd2 = v4("10.1.2.0", 25);
    OK(osb_cidr_covers(&c, &odd) && !osb_cidr_covers(&odd2, &odd), "partial-byte prefixes");
    struct osb_cidr six = {.family = AF_INET6, .prefix = 8};
    OK(!osb_cidr_covers(&six, &c), "families never cover each other");
}

static void test_sets(void)
{
    struct osb_cidrs d, a;
    sets("{\"egress\":[{\"action\":\"allow\",\"target\":\"10.1.0.0/16\"},"
         "{\"action\":\"deny\",\"target\":\"10.0.0.0/14\"}]}",
         &d, &a);
    IS_STR(show(&d), "10.0.0.0/16 10.2.0.0/15", "deny range with the earlier allow carved out");
    IS_STR(show(&a), "10.1.0.0/16", "the allow hole stays allowed");
    osb_cidrs_free(&d);
    osb_cidrs_free(&a);

    sets("{\"egress\":[{\"action\":\"deny\",\"target\":\"10.0.0.0/8\"},"
         "{\"action\":\"allow\",\"target\":\"10.1.0.0/16\"},"
         "{\"action\":\"deny\",\"target\":\"10.2.0.0/16\"},"
         "{\"action\":\"allow\",\"target\":\"192.168.1.7\"},"
         "{\"action\":\"allow\",\"target\":\"allowed.test\"}]}",
         &d, &a);
    IS_STR(show(&d), "10.0.0.0/8", "a later deny inside an earlier one is dropped (nested)");
    IS_STR(show(&a), "192.168.1.7/32", "an allow under an earlier deny is left out; names too");
    osb_cidrs_free(&d);
    osb_cidrs_free(&a);

    sets("{\"egress\":[{\"action\":\"deny\",\"target\":\"0.0.0.0/0\"}]}", &d, &a);
    IS_STR(show(&d), "0.0.0.0/1 128.0.0.0/1", "a /0 becomes two /1 halves (nft takes no /0)");
    IS_INT(a.n, 0, "no allow entries");
    osb_cidrs_free(&d);
    osb_cidrs_free(&a);
}

/* 100 allow holes in a /8 stay below the cap; carving must keep them all. */
static void test_many_holes(void)
{
    char json[16384];
    size_t n = (size_t)snprintf(json, sizeof json, "{\"egress\":[");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "{\"action\":\"allow\",\"target\":\"10.%d.%d.1\"},", i, i);
    snprintf(json + n, sizeof json - n, "{\"action\":\"deny\",\"target\":\"10.0.0.0/8\"}]}");
    struct osb_cidrs d, a;
    sets(json, &d, &a);
    IS_INT(a.n, 100, "every hole is an allow entry");
    bool clean = d.n > 0 && d.n <= OSB_CIDR_MAX_PIECES;
    for (size_t i = 0; i < a.n && clean; i++)
        for (size_t j = 0; j < d.n && clean; j++)
            clean = !osb_cidr_covers(&d.v[j], &a.v[i]);
    OK(clean, "no deny piece covers a hole");
    osb_cidrs_free(&d);
    osb_cidrs_free(&a);
}

int main(void)
{
    test_covers();
    test_sets();
    test_many_holes();
    return tap_done();
}
