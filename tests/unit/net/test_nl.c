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

/* Walks the single NEWSETELEM message of b by hand (libnftnl 1.2.4's own
 * parser refuses interval-end elements): set name, element keys and flags. */
static int elems(struct osb_nft_batch *b, char set[64], uint8_t keys[4][16], uint32_t flags[4])
{
    size_t len;
    const struct nlmsghdr *nlh = osb_nft_batch_data(b, &len);
    if ((nlh->nlmsg_type & 0xff) != NFT_MSG_NEWSETELEM)
        return -1;
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
        const struct nlattr *fl = attr(el, NFTA_SET_ELEM_FLAGS);
        if (!val)
            return -1;
        memset(keys[n], 0, 16);
        memcpy(keys[n], mnl_attr_get_payload(val), mnl_attr_get_payload_len(val));
        flags[n++] = fl ? ntohl(mnl_attr_get_u32(fl)) : 0;
    }
    return n;
}

static void test_nft_allow(void)
{
    struct osb_err e = {0};
    struct osb_nft_batch *b = osb_nft_batch_new("osb_test");
    struct in_addr a = ip4("10.0.1.0");
    OK(osb_nft_allow(b, 3, AF_INET, &a, 23, 0, &e) < 0 && e.code == OSB_E_INVALID,
       "allow: host bits beyond the prefix refused");
    OK(osb_nft_allow(b, 3, AF_INET, &a, 0, 0, &e) < 0, "allow: prefix 0 refused");
    OK(osb_nft_allow(b, 3, AF_INET, &a, 33, 0, &e) < 0, "allow: prefix 33 refused");
    OK(osb_nft_allow(b, 3, AF_UNIX, &a, 24, 0, &e) < 0, "allow: bad family refused");
    IS_INT(osb_nft_batch_count(b), 0, "allow: nothing queued on bad input");

    char set[64];
    uint8_t k[4][16];
    uint32_t fl[4];
    OK(osb_nft_allow(b, 3, AF_INET, &a, 24, 60000, &e) == 0, "allow 10.0.1.0/24");
    int n = elems(b, set, k, fl);
    IS_INT(n, 2, "cidr: start and end elements");
    IS_STR(set, "c4_3", "cidr goes to the interval set");
    OK(n == 2 && !memcmp(k[1], (uint8_t[]){10, 0, 2, 0}, 4) && fl[1] == NFT_SET_ELEM_INTERVAL_END,
       "cidr: end is 10.0.2.0, flagged interval end");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    a = ip4("255.255.255.0");
    MUST(osb_nft_allow(b, 3, AF_INET, &a, 24, 0, &e));
    IS_INT(elems(b, set, k, fl), 1, "cidr at the top of the space: no end element");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    a = ip4("10.202.0.2");
    MUST(osb_nft_allow(b, 7, AF_INET, &a, 32, 5000, &e));
    OK(elems(b, set, k, fl) == 1 && !strcmp(set, "a4_7"), "single address goes to the hash set");
    osb_nft_batch_free(b);

    b = osb_nft_batch_new("osb_test");
    struct in6_addr a6;
    inet_pton(AF_INET6, "fd00:0:0:fe::", &a6);
    OK(osb_nft_allow(b, 1, AF_INET6, &a6, 63, 0, &e) == 0, "allow fd00:0:0:fe::/63");
    uint8_t want[16];
    inet_pton(AF_INET6, "fd00:0:0:100::", want);
    OK(elems(b, set, k, fl) == 2 && !strcmp(set, "c6_1") && !memcmp(k[1], want, 16),
       "IPv6 /63: end carries across bytes");
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
    struct osb_nft_slot s = {2, "osbabcd2", ip4("10.88.0.9"), ip4("10.88.0.10")};
    osb_nft_add_slot(b, &s, true);
    osb_nft_del_slot(b, &s);
    OK(osb_nft_batch_count(b) > table_msgs + 10, "slot objects queued");
    osb_nft_batch_free(b);
}

int main(void)
{
    test_cidr();
    test_veth();
    test_addr_route_ct();
    test_nft_allow();
    test_nft_layout();
    return tap_done();
}
