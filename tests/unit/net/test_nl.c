/* Message builders of src/net/nl.c and src/net/nft.c, checked without
 * privileges by parsing what they produce. */
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdlib.h>

#include "net/nft.h"
#include "net/nl.h"
#include "tap.h"

static struct in_addr ip4(const char *s)
{
    struct in_addr a;
    inet_pton(AF_INET, s, &a);
    return a;
}

static const struct nlattr *attr(const struct nlattr *nest, uint16_t type)
{
    const struct nlattr *a;
    mnl_attr_for_each_nested(a, nest) if (mnl_attr_get_type(a) == type) return a;
    return NULL;
}

static const struct nlattr *top(const struct nlmsghdr *nlh, size_t hdr, uint16_t type)
{
    const struct nlattr *a;
    mnl_attr_for_each(a, nlh, hdr) if (mnl_attr_get_type(a) == type) return a;
    return NULL;
}

static void test_cidr(void)
{
    struct in_addr a;
    unsigned len;
    struct osb_err e = {0};
    OK(osb_nl_parse_cidr4("10.88.0.0/16", &a, &len, &e) == 0 && len == 16 &&
           a.s_addr == ip4("10.88.0.0").s_addr,
       "cidr 10.88.0.0/16");
    OK(osb_nl_parse_cidr4("1.2.3.4", &a, &len, &e) == 0 && len == 32, "bare address is /32");
    OK(osb_nl_parse_cidr4("10.88.0.1/16", &a, &len, &e) < 0 && e.code == OSB_E_INVALID,
       "host bits refused");
    IS_STR(e.msg, "\"10.88.0.1/16\" has host bits set", "host bits message");
    OK(osb_nl_parse_cidr4("10.0.0.0/33", &a, &len, &e) < 0, "prefix 33 refused");
    OK(osb_nl_parse_cidr4("10.0.0.0/", &a, &len, &e) < 0, "empty prefix refused");
    OK(osb_nl_parse_cidr4("10.0.0.0/-1", &a, &len, &e) < 0, "negative prefix refused");
    OK(osb_nl_parse_cidr4("fd00::/8", &a, &len, &e) < 0, "IPv6 refused");
    OK(osb_nl_parse_cidr4("", &a, &len, &e) < 0, "empty refused");
}

static void test_veth(void)
{
    char buf[OSB_NL_BUFSZ];
    struct nlmsghdr *nlh = osb_nl_build_veth(buf, 7, "osbabcd3", "eth0", 42);
    IS_INT(nlh->nlmsg_type, RTM_NEWLINK, "veth: RTM_NEWLINK");
    OK(nlh->nlmsg_flags & NLM_F_EXCL && nlh->nlmsg_flags & NLM_F_ACK, "veth: EXCL|ACK");
    const struct nlattr *n = top(nlh, sizeof(struct ifinfomsg), IFLA_IFNAME);
    IS_STR(n ? mnl_attr_get_str(n) : NULL, "osbabcd3", "veth: host name");
    const struct nlattr *li = top(nlh, sizeof(struct ifinfomsg), IFLA_LINKINFO);
    const struct nlattr *kind = li ? attr(li, IFLA_INFO_KIND) : NULL;
    IS_STR(kind ? mnl_attr_get_str(kind) : NULL, "veth", "veth: kind");
    const struct nlattr *data = li ? attr(li, IFLA_INFO_DATA) : NULL;
    const struct nlattr *peer = data ? attr(data, VETH_INFO_PEER) : NULL;
    OK(peer != NULL, "veth: peer nest");
    if (!peer)
        return;
    /* The peer nest starts with an ifinfomsg, then attributes. */
    const char *p = (const char *)mnl_attr_get_payload(peer) + MNL_ALIGN(sizeof(struct ifinfomsg));
    const char *end = (const char *)peer + peer->nla_len;
    const char *pname = NULL;
    uint32_t fd = 0;
    while (p < end) {
        const struct nlattr *a = (const struct nlattr *)p;
        if (mnl_attr_get_type(a) == IFLA_IFNAME)
            pname = mnl_attr_get_str(a);
        if (mnl_attr_get_type(a) == IFLA_NET_NS_FD)
            fd = mnl_attr_get_u32(a);
        p += MNL_ALIGN(a->nla_len);
    }
    IS_STR(pname, "eth0", "veth: peer name");
    IS_INT(fd, 42, "veth: peer netns fd");
}

static void test_addr_route_ct(void)
{
    char buf[OSB_NL_BUFSZ];
    struct nlmsghdr *nlh = osb_nl_build_addr4(buf, 1, 5, ip4("10.88.0.2"), 30);
    struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
    OK(nlh->nlmsg_type == RTM_NEWADDR && ifa->ifa_family == AF_INET && ifa->ifa_prefixlen == 30 &&
           ifa->ifa_index == 5,
       "addr: header");
    const struct nlattr *l = top(nlh, sizeof(*ifa), IFA_LOCAL);
    OK(l && *(uint32_t *)mnl_attr_get_payload(l) == ip4("10.88.0.2").s_addr, "addr: IFA_LOCAL");

    nlh = osb_nl_build_default4(buf, 2, ip4("10.88.0.1"), 9);
    struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
    OK(nlh->nlmsg_type == RTM_NEWROUTE && rtm->rtm_dst_len == 0 && rtm->rtm_table == RT_TABLE_MAIN,
       "route: default in main");
    const struct nlattr *gw = top(nlh, sizeof(*rtm), RTA_GATEWAY);
    const struct nlattr *oif = top(nlh, sizeof(*rtm), RTA_OIF);
    OK(gw && *(uint32_t *)mnl_attr_get_payload(gw) == ip4("10.88.0.1").s_addr, "route: gateway");
    OK(oif && mnl_attr_get_u32(oif) == 9, "route: oif");

    nlh = osb_nl_build_link_up(buf, 3, 0, "lo");
    struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
    OK(ifm->ifi_flags == IFF_UP && ifm->ifi_change == IFF_UP && top(nlh, sizeof(*ifm), IFLA_IFNAME),
       "link up by name");

    nlh = osb_nl_build_ct_flush_src4(buf, 4, ip4("10.88.0.6"));
    IS_INT(nlh->nlmsg_type, (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE, "ct: type");
    const struct nlattr *t = top(nlh, sizeof(struct nfgenmsg), CTA_TUPLE_ORIG);
    const struct nlattr *ipn = t ? attr(t, CTA_TUPLE_IP) : NULL;
    const struct nlattr *src = ipn ? attr(ipn, CTA_IP_V4_SRC) : NULL;
    OK(src && *(uint32_t *)mnl_attr_get_payload(src) == ip4("10.88.0.6").s_addr, "ct: source");
    const struct nlattr *f = top(nlh, sizeof(struct nfgenmsg), CTA_FILTER);
    const struct nlattr *fl = f ? attr(f, CTA_FILTER_ORIG_FLAGS) : NULL;
    OK(fl && mnl_attr_get_u32(fl) == 1, "ct: filter on the original source only");
}

/* One element as the kernel gets it: key, key end (ranges), flags. */
struct el {
    uint8_t key[32], end[32];
    size_t klen, elen;
    uint64_t timeout;
};

/* Walks message `nth` of b (a NEWSETELEM or DESTROYSETELEM) by hand:
 * message type, set name and up to 4 elements. */
static int elems(struct osb_nft_batch *b, unsigned nth, unsigned *type, char set[64],
                 struct el out[4])
{
    size_t len;
    const struct nlmsghdr *nlh = osb_nft_batch_data(b, &len);
    for (unsigned i = 0; i < nth; i++)
        nlh = (const void *)((const char *)nlh + MNL_ALIGN(nlh->nlmsg_len));
    *type = nlh->nlmsg_type & 0xff;
    const struct nlattr *name = top(nlh, sizeof(struct nfgenmsg), NFTA_SET_ELEM_LIST_SET);
    const struct nlattr *list = top(nlh, sizeof(struct nfgenmsg), NFTA_SET_ELEM_LIST_ELEMENTS);
    if (!name || !list)
        return -1;
    snprintf(set, 64, "%s", mnl_attr_get_str(name));
    int n = 0;
    const struct nlattr *el;
    mnl_attr_for_each_nested(el, list)
    {
        if (n == 4)
            break;
        const struct nlattr *key = attr(el, NFTA_SET_ELEM_KEY);
        const struct nlattr *val = key ? attr(key, NFTA_DATA_VALUE) : NULL;
        const struct nlattr *end = attr(el, NFTA_SET_ELEM_KEY_END);
        const struct nlattr *eval = end ? attr(end, NFTA_DATA_VALUE) : NULL;
        const struct nlattr *to = attr(el, NFTA_SET_ELEM_TIMEOUT);
        if (!val)
            return -1;
        struct el *o = &out[n++];
        memset(o, 0, sizeof *o);
        o->klen = mnl_attr_get_payload_len(val);
        memcpy(o->key, mnl_attr_get_payload(val), o->klen);
        if (eval) {
            o->elen = mnl_attr_get_payload_len(eval);
            memcpy(o->end, mnl_attr_get_payload(eval), o->elen);
        }
        o->timeout = to ? be64toh(mnl_attr_get_u64(to)) : 0;
    }
    return n;
}

static struct osb_nft_addr v4(const char *ip, unsigned prefix, bool deny)
{
    struct osb_nft_addr a = {.deny = deny, .family = AF_INET, .prefix = prefix};
    inet_pton(AF_INET, ip, a.addr);
    return a;
}

static const struct osb_nft_slot slot3 = {3, "osbabcd3", {0}, {0}};

static void test_nft_allow(void)
{
    struct osb_err e = {0};
    struct osb_nft_slot s = slot3;
    s.sandbox = ip4("10.88.0.14");
    struct osb_nft_batch *b = osb_nft_batch_new("osb_test");
    struct osb_nft_addr a = v4("10.0.1.0", 23, false);
    OK(osb_nft_add_addr(b, &s, &a, 0, &e) < 0 && e.code == OSB_E_INVALID,
       "allow: host bits beyond the prefix refused");
    a.prefix = 0;
    OK(osb_nft_add_addr(b, &s, &a, 0, &e) < 0, "allow: prefix 0 refused");
    a.prefix = 33;
    OK(osb_nft_add_addr(b, &s, &a, 0, &e) < 0, "allow: prefix 33 refused");
    a.prefix = 24;
    a.family = AF_UNIX;
    OK(osb_nft_add_addr(b, &s, &a, 0, &e) < 0, "allow: bad family refused");
    IS_INT(osb_nft_batch_count(b), 0, "allow: nothing queued on bad input");

    char set[64];
    unsigned type;
    struct el k[4];
    a = v4("10.0.1.0", 24, false);
    OK(osb_nft_add_addr(b, &s, &a, 60000, &e) == 0, "allow 10.0.1.0/24");
    int n = elems(b, 0, &type, set, k);
    IS_INT(n, 1, "cidr: one element (a concatenated range)");
    IS_STR(set, "c4", "cidr goes to the shared interval set");
    OK(n == 1 && k[0].klen == 8 && !memcmp(k[0].key, (uint8_t[]){10, 88, 0, 14, 10, 0, 1, 0}, 8),
       "cidr: key is sandbox . first address");
    OK(n == 1 && k[0].elen == 8 && !memcmp(k[0].end, (uint8_t[]){10, 88, 0, 14, 10, 0, 1, 255}, 8),
       "cidr: key end is sandbox . last address (inclusive)");
    IS_INT(n == 1 ? k[0].timeout : 0, 60000, "cidr: timeout carried");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    a = v4("255.255.255.0", 24, true);
    MUST(osb_nft_add_addr(b, &s, &a, 5000, &e));
    n = elems(b, 0, &type, set, k);
    OK(n == 1 && !strcmp(set, "dc4") && !memcmp(k[0].end + 4, (uint8_t[]){255, 255, 255, 255}, 4),
       "deny cidr at the top of the space: inclusive end 255.255.255.255");
    IS_INT(n == 1 ? k[0].timeout : 1, 0, "deny entries never time out");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    a = v4("10.202.0.2", 32, false);
    MUST(osb_nft_add_addr(b, &s, &a, 5000, &e));
    n = elems(b, 0, &type, set, k);
    OK(n == 1 && !strcmp(set, "a4") && k[0].elen == 0, "single address goes to the hash set");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    struct osb_nft_addr a6 = {.family = AF_INET6, .prefix = 63};
    inet_pton(AF_INET6, "fd00:0:0:fe::", a6.addr);
    OK(osb_nft_add_addr(b, &s, &a6, 0, &e) == 0, "allow fd00:0:0:fe::/63");
    uint8_t want[16];
    inet_pton(AF_INET6, "fd00:0:0:ff:ffff:ffff:ffff:ffff", want);
    n = elems(b, 0, &type, set, k);
    OK(n == 1 && !strcmp(set, "c6") && k[0].klen == 32 && !strcmp((char *)k[0].key, "osbabcd3") &&
           !memcmp(k[0].end + 16, want, 16),
       "IPv6 /63: keyed by interface, inclusive end across bytes");
    osb_nft_batch_free(b);
}

static void test_nft_forget(void)
{
    struct osb_nft_slot s = slot3;
    s.sandbox = ip4("10.88.0.14");
    struct osb_nft_addr v[70];
    for (int i = 0; i < 66; i++) { /* more than one message's worth */
        char ip[32];
        snprintf(ip, sizeof ip, "10.9.0.%d", i);
        v[i] = v4(ip, 32, false);
    }
    v[66] = v4("10.1.0.0", 16, true);
    struct osb_nft_batch *b = osb_nft_batch_new("osb_test");
    osb_nft_forget(b, &s, v, 67);
    IS_INT(osb_nft_batch_count(b), 3, "forget: 66 singles in two messages, the range in one");
    char set[64];
    unsigned type;
    struct el k[4];
    int n = elems(b, 0, &type, set, k);
    OK(n == 4 && type == 30 && !strcmp(set, "a4"), "forget: destroy messages on a4");
    n = elems(b, 2, &type, set, k);
    OK(n == 1 && !strcmp(set, "dc4") && k[0].elen == 8, "forget: the range by key and key end");
    osb_nft_batch_free(b);
}

static void test_nft_layout(void)
{
    struct osb_nft_cidr4 allow = {ip4("169.254.169.254"), 32};
    struct osb_nft_table_cfg cfg = {.table = "osb_test",
                                    .ifprefix = "osbabcd",
                                    .subnet = ip4("10.88.0.0"),
                                    .subnet_len = 16,
                                    .allow_host = &allow,
                                    .n_allow_host = 1};
    struct osb_nft_batch *b = osb_nft_batch_new("osb_test");
    osb_nft_reset_table(b, &cfg);
    unsigned table_msgs = osb_nft_batch_count(b);
    OK(table_msgs > 20, "table: sets, chains and rules queued");
    size_t len;
    const struct nlmsghdr *nlh = osb_nft_batch_data(b, &len);
    IS_INT(nlh->nlmsg_type & 0xff, NFT_MSG_NEWTABLE,
           "table: starts with add (so delete never fails)");
    nlh = (const void *)((const char *)nlh + MNL_ALIGN(nlh->nlmsg_len));
    IS_INT(nlh->nlmsg_type & 0xff, NFT_MSG_DELTABLE, "table: then delete");
    osb_nft_batch_free(b);

    /* A slot is elements only: the same few messages for any slot. */
    b = osb_nft_batch_new("osb_test");
    struct osb_nft_slot s = {2, "osbabcd2", ip4("10.88.0.9"), ip4("10.88.0.10")};
    osb_nft_add_slot(b, &s, true);
    IS_INT(osb_nft_batch_count(b), 3, "add slot: @slots, @dns_host, @restricted");
    char set[64];
    unsigned type;
    struct el k[4];
    OK(elems(b, 0, &type, set, k) == 1 && !strcmp(set, "slots") && k[0].klen == 20 &&
           !strcmp((char *)k[0].key, "osbabcd2") &&
           !memcmp(k[0].key + 16, (uint8_t[]){10, 88, 0, 10}, 4),
       "slots: interface . sandbox address");
    OK(elems(b, 1, &type, set, k) == 1 && !strcmp(set, "dns_host") &&
           !memcmp(k[0].key, (uint8_t[]){10, 88, 0, 10, 10, 88, 0, 9}, 8),
       "dns_host: sandbox . host address");
    osb_nft_batch_free(b);
    b = osb_nft_batch_new("osb_test");
    osb_nft_del_slot(b, &s);
    IS_INT(osb_nft_batch_count(b), 3, "del slot: three destroy messages");
    OK(elems(b, 2, &type, set, k) == 1 && type == 30 && !strcmp(set, "restricted"),
       "del slot: restricted flag destroyed (absent is fine)");
    osb_nft_batch_free(b);
}

int main(void)
{
    test_cidr();
    test_veth();
    test_addr_route_ct();
    test_nft_allow();
    test_nft_forget();
    test_nft_layout();
    return tap_done();
}
