/* src/net/hostnet.c: overlap, owner naming and the free-range choice on
 * hand-built lists, then a real scan of this host's addresses and routes
 * (netlink dumps need no privileges). */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "net/hostnet.h"
#include "tap.h"

static struct in_addr ip4(const char *s)
{
    struct in_addr a;
    inet_pton(AF_INET, s, &a);
    return a;
}

static void test_overlap(void)
{
    struct osb_hostnet h = {0};
    osb_hostnet_add(&h, ip4("10.88.0.1"), 30, "address 10.88.0.1/30 on osb1a2b0", "osb1a2b0");
    osb_hostnet_add(&h, ip4("192.168.7.9"), 24, "address 192.168.7.9/24 on eth0", "eth0");
    osb_hostnet_add(&h, ip4("10.90.0.0"), 15, "route 10.90.0.0/15", NULL);
    IS_STR(h.v[0].owner, "another opensandbox-server (state dir hash 1a2b)", "osb<hex4><n> owner");
    IS_STR(h.v[1].owner, "", "eth0: no owner named");
    OK(h.v[1].net.s_addr == ip4("192.168.7.0").s_addr, "host bits cleared");
    const struct osb_hostnet_use *u = osb_hostnet_overlap(&h, ip4("10.88.0.0"), 16);
    OK(u == &h.v[0], "a /16 around a /30 overlaps it");
    OK(osb_hostnet_overlap(&h, ip4("10.88.0.0"), 30) == &h.v[0], "the same /30 overlaps");
    OK(osb_hostnet_overlap(&h, ip4("10.88.0.4"), 30) == NULL, "the next /30 does not");
    OK(osb_hostnet_overlap(&h, ip4("10.0.0.0"), 8) == &h.v[0], "a /8 around both");
    OK(osb_hostnet_overlap(&h, ip4("10.91.0.0"), 16) == &h.v[2], "inside a wider route");
    OK(osb_hostnet_overlap(&h, ip4("10.89.0.0"), 16) == NULL, "10.89/16 is free");
    char out[20];
    OK(osb_hostnet_free16(&h, out) == 0, "a free /16 exists");
    IS_STR(out, "10.89.0.0/16", "first free from 10.88 on, skipping used ones");
    osb_hostnet_free(&h);
}

static void test_owner_names(void)
{
    struct osb_hostnet h = {0};
    struct in_addr a = ip4("10.1.0.1");
    osb_hostnet_add(&h, a, 30, "x", "osbzz120");  /* not hex */
    osb_hostnet_add(&h, a, 30, "x", "osb1a2b");   /* no slot number */
    osb_hostnet_add(&h, a, 30, "x", "osb1a2bx1"); /* not digits after */
    osb_hostnet_add(&h, a, 30, "x", "osbffff65535");
    IS_STR(h.v[0].owner, "", "non-hex hash: not ours");
    IS_STR(h.v[1].owner, "", "no slot number: not ours");
    IS_STR(h.v[2].owner, "", "letters after the hash: not ours");
    IS_STR(h.v[3].owner, "another opensandbox-server (state dir hash ffff)", "big slot number");
    osb_hostnet_free(&h);
}

static void test_all_taken(void)
{
    struct osb_hostnet h = {0};
    char out[20] = "";
    osb_hostnet_add(&h, ip4("10.0.0.0"), 8, "route 10.0.0.0/8", "tun0");
    OK(osb_hostnet_free16(&h, out) < 0, "10.0.0.0/8 routed: no free /16");
    osb_hostnet_free(&h);
    OK(osb_hostnet_free16(&h, out) == 0 && strcmp(out, "10.88.0.0/16") == 0,
       "empty list: the default range");
}

static void test_scan(void)
{
    struct osb_hostnet h;
    struct osb_err e = {0};
    OK(osb_hostnet_scan(NULL, &h, &e) == 0, "scan the host");
    bool lo = false;
    for (size_t i = 0; i < h.n; i++)
        lo |= h.v[i].net.s_addr == ip4("127.0.0.0").s_addr && h.v[i].len == 8 &&
              strstr(h.v[i].what, "address 127.0.0.1/8 on lo");
    OK(lo, "the scan sees lo's 127.0.0.1/8");
    bool no_default = true;
    for (size_t i = 0; i < h.n; i++)
        no_default &= h.v[i].len > 0;
    OK(no_default, "default routes are left out");
    osb_hostnet_free(&h);
    OK(osb_hostnet_check("127.0.0.0/16", NULL, &e) < 0 && e.code == OSB_E_EXISTS &&
           strstr(e.msg, "overlaps the host's address 127.0.0.1/8 on lo") &&
           strstr(e.msg, "set [network] subnet = \"10."),
       "check: an overlap names the address and a free range");
    OK(osb_hostnet_check("10.88.0.0/33", NULL, &e) < 0 && e.code == OSB_E_INVALID,
       "check: a bad CIDR is refused");
}

int main(void)
{
    test_overlap();
    test_owner_names();
    test_all_taken();
    test_scan();
    return tap_done();
}
