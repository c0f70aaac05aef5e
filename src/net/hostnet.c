/* Host address-space census over rtnetlink (hostnet.h). */
#include "net/hostnet.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "net/nl.h"

static bool overlaps(struct in_addr a, unsigned alen, struct in_addr b, unsigned blen)
{
    uint32_t m = osb_nl_mask4(alen < blen ? alen : blen);
    return (a.s_addr & m) == (b.s_addr & m);
}

/* name is prefix followed by a slot number. */
static bool is_slot_of(const char *name, const char *prefix)
{
    size_t n = prefix ? strlen(prefix) : 0;
    if (!n || strncmp(name, prefix, n) != 0 || !name[n])
        return false;
    for (const char *p = name + n; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

/* Slots of any server are "osb" + 4 hex digits + a number. */
static void owner_of(const char *ifname, char *out, size_t n)
{
    out[0] = 0;
    if (!ifname || strncmp(ifname, "osb", 3) != 0 || strlen(ifname) < 8)
        return;
    for (int i = 3; i < 7; i++)
        if (!isxdigit((unsigned char)ifname[i]))
            return;
    char prefix[8];
    memcpy(prefix, ifname, 7);
    prefix[7] = 0;
    if (is_slot_of(ifname, prefix))
        snprintf(out, n, "another opensandbox-server (state dir hash %s)", prefix + 3);
}

void osb_hostnet_add(struct osb_hostnet *h, struct in_addr addr, unsigned len, const char *what,
                     const char *ifname)
{
    h->v = osb_xrealloc(h->v, (h->n + 1) * sizeof *h->v);
    struct osb_hostnet_use *u = &h->v[h->n++];
    memset(u, 0, sizeof *u);
    u->net.s_addr = addr.s_addr & osb_nl_mask4(len);
    u->len = len;
    snprintf(u->what, sizeof u->what, "%s", what);
    owner_of(ifname, u->owner, sizeof u->owner);
}

void osb_hostnet_free(struct osb_hostnet *h)
{
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

const struct osb_hostnet_use *osb_hostnet_overlap(const struct osb_hostnet *h, struct in_addr net,
                                                  unsigned len)
{
    for (size_t i = 0; i < h->n; i++)
        if (overlaps(h->v[i].net, h->v[i].len, net, len))
            return &h->v[i];
    return NULL;
}

int osb_hostnet_free16(const struct osb_hostnet *h, char out[20])
{
    /* From the default 10.88 on, wrapping: 10.0 and 10.1 are what VPNs and
     * cloud networks reached through a default route use most. */
    for (unsigned i = 0; i < 256; i++) {
        unsigned x = (88 + i) % 256;
        struct in_addr a = {.s_addr = htonl(0x0a000000u | (x << 16))};
        if (!osb_hostnet_overlap(h, a, 16)) {
            snprintf(out, 20, "10.%u.0.0/16", x);
            return 0;
        }
    }
    return -1;
}

/* ------------------------------------------------------------ the scan */

#define MAX_HOST_LINKS 4096

struct scan {
    const char *own;
    struct osb_hostnet *out;
    struct {
        int index;
        char name[16];
    } * links;
    size_t n_links;
};

static void on_link(const char *name, int ifindex, void *arg)
{
    struct scan *s = arg;
    if (s->n_links >= MAX_HOST_LINKS)
        return;
    s->links = osb_xrealloc(s->links, (s->n_links + 1) * sizeof *s->links);
    s->links[s->n_links].index = ifindex;
    snprintf(s->links[s->n_links].name, 16, "%s", name);
    s->n_links++;
}

static const char *link_name(const struct scan *s, int ifindex)
{
    for (size_t i = 0; i < s->n_links; i++)
        if (s->links[i].index == ifindex)
            return s->links[i].name;
    return NULL;
}

static void on_addr(const struct osb_nl_addr4 *a, void *arg)
{
    struct scan *s = arg;
    const char *ifname = link_name(s, a->ifindex);
    if (ifname && is_slot_of(ifname, s->own))
        return;
    char ip[INET_ADDRSTRLEN], what[160];
    inet_ntop(AF_INET, &a->addr, ip, sizeof ip);
    snprintf(what, sizeof what, "address %s/%u on %s", ip, a->prefix, ifname ? ifname : "?");
    osb_hostnet_add(s->out, a->addr, a->prefix, what, ifname);
}

static void table_name(uint32_t t, char *out, size_t n)
{
    if (t == RT_TABLE_MAIN || t == RT_TABLE_LOCAL || t == RT_TABLE_DEFAULT)
        snprintf(out, n, "%s",
                 t == RT_TABLE_MAIN    ? "main"
                 : t == RT_TABLE_LOCAL ? "local"
                                       : "default");
    else
        snprintf(out, n, "%u", t);
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case RTN_LOCAL: return "local";
    case RTN_BROADCAST: return "broadcast";
    case RTN_BLACKHOLE: return "blackhole";
    case RTN_UNREACHABLE: return "unreachable";
    case RTN_PROHIBIT: return "prohibit";
    case RTN_THROW: return "throw";
    default: return NULL;
    }
}

static void on_route(const struct osb_nl_route4 *r, void *arg)
{
    struct scan *s = arg;
    const char *ifname = r->oif ? link_name(s, r->oif) : NULL;
    if (r->dst_len == 0 || (ifname && is_slot_of(ifname, s->own)))
        return;
    char ip[INET_ADDRSTRLEN], table[16], what[160], dev[40] = "";
    inet_ntop(AF_INET, &r->dst, ip, sizeof ip);
    table_name(r->table, table, sizeof table);
    if (ifname)
        snprintf(dev, sizeof dev, " dev %s", ifname);
    const char *type = type_name(r->type);
    snprintf(what, sizeof what, "route %s/%u%s (%s%stable %s)", ip, r->dst_len, dev,
             type ? type : "", type ? ", " : "", table);
    osb_hostnet_add(s->out, r->dst, r->dst_len, what, ifname);
}

static int scan_once(const char *own_prefix, struct osb_hostnet *out, struct osb_err *err)
{
    struct osb_nl nl = {0};
    struct scan s = {.own = own_prefix, .out = out};
    memset(out, 0, sizeof *out);
    if (osb_nl_open(&nl, NETLINK_ROUTE, err) < 0)
        return -1;
    int r = osb_nl_links(&nl, "", on_link, &s, err);
    if (r == 0)
        r = osb_nl_addrs4(&nl, on_addr, &s, err);
    if (r == 0)
        r = osb_nl_routes4(&nl, on_route, &s, err);
    osb_nl_close(&nl);
    free(s.links);
    if (r < 0) {
        osb_hostnet_free(out);
        return osb_err_wrap(err, "read the host's addresses and routes");
    }
    return 0;
}

int osb_hostnet_scan(const char *own_prefix, struct osb_hostnet *out, struct osb_err *err)
{
    struct osb_err local;
    struct osb_err *e = err ? err : &local;
    for (int tries = 1;; tries++) {
        osb_err_clear(e);
        int r = scan_once(own_prefix, out, e);
        if (r == 0 || !osb_nl_dump_interrupted(e) || tries == OSB_NL_DUMP_TRIES)
            return r;
    }
}

int osb_hostnet_check(const char *subnet, const char *own_prefix, struct osb_err *err)
{
    struct in_addr net;
    unsigned len;
    if (osb_nl_parse_cidr4(subnet, &net, &len, err) < 0)
        return -1;
    struct osb_hostnet h;
    if (osb_hostnet_scan(own_prefix, &h, err) < 0)
        return -1;
    const struct osb_hostnet_use *u = osb_hostnet_overlap(&h, net, len);
    if (!u) {
        osb_hostnet_free(&h);
        return 0;
    }
    char free16[20], hint[80] = "no 10.X.0.0/16 is free on this host: pick an unused private range";
    if (osb_hostnet_free16(&h, free16) == 0)
        snprintf(hint, sizeof hint, "set [network] subnet = \"%s\" (free on this host)", free16);
    osb_err_set(err, OSB_E_EXISTS, "[network] subnet %s overlaps the host's %s%s%s; %s", subnet,
                u->what, u->owner[0] ? ", which belongs to " : "", u->owner, hint);
    osb_hostnet_free(&h);
    return -1;
}
