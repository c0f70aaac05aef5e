/* rtnetlink / ctnetlink over libmnl. Requests are built into caller buffers
 * by pure functions; talking is one sendto plus one ACK read. */
#include "net/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int osb_nl_open(struct osb_nl *nl, int bus, struct osb_err *err)
{
    nl->sock = mnl_socket_open2(bus, SOCK_CLOEXEC);
    if (!nl->sock)
        return osb_err_sys(err, "netlink socket");
    if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
        osb_err_sys(err, "netlink bind");
        mnl_socket_close(nl->sock);
        nl->sock = NULL;
        return -1;
    }
    int one = 1;
    /* ACKs without the echoed request: smaller reads. */
    mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
    nl->portid = mnl_socket_get_portid(nl->sock);
    nl->seq = (uint32_t)time(NULL);
    return 0;
}

void osb_nl_close(struct osb_nl *nl)
{
    if (nl->sock)
        mnl_socket_close(nl->sock);
    nl->sock = NULL;
}

static int recv_until(struct osb_nl *nl, uint32_t seq, mnl_cb_t cb, void *arg, struct osb_err *err)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    for (;;) {
        ssize_t n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return osb_err_sys(err, "netlink recv");
        }
        int r = mnl_cb_run(buf, (size_t)n, seq, nl->portid, cb, arg);
        if (r == MNL_CB_ERROR)
            return osb_err_sys(err, "netlink");
        if (r == MNL_CB_STOP)
            return 0;
    }
}

bool osb_nl_dump_interrupted(const struct osb_err *err)
{
    return err && err->sys_errno == EINTR;
}

int osb_nl_talk(struct osb_nl *nl, struct nlmsghdr *nlh, struct osb_err *err)
{
    if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
        return osb_err_sys(err, "netlink send");
    return recv_until(nl, nlh->nlmsg_seq, NULL, NULL, err);
}

static struct nlmsghdr *link_hdr(void *buf, uint32_t seq, int type, int flags,
                                 struct ifinfomsg **ifm)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = (uint16_t)type;
    nlh->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
    nlh->nlmsg_seq = seq;
    *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(**ifm));
    (*ifm)->ifi_family = AF_UNSPEC;
    return nlh;
}

struct nlmsghdr *osb_nl_build_veth(void *buf, uint32_t seq, const char *name, const char *peer_name,
                                   int peer_nsfd)
{
    struct ifinfomsg *ifm;
    struct nlmsghdr *nlh = link_hdr(buf, seq, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifm);
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    struct nlattr *info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
    struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
    struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
    /* The peer attributes are a full ifinfomsg followed by IFLA_*. */
    struct ifinfomsg *pifm = (struct ifinfomsg *)((char *)nlh + nlh->nlmsg_len);
    memset(pifm, 0, sizeof(*pifm));
    nlh->nlmsg_len += MNL_ALIGN(sizeof(*pifm));
    mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_name);
    mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_nsfd);
    mnl_attr_nest_end(nlh, peer);
    mnl_attr_nest_end(nlh, data);
    mnl_attr_nest_end(nlh, info);
    return nlh;
}

struct nlmsghdr *osb_nl_build_link_up(void *buf, uint32_t seq, int ifindex, const char *name)
{
    struct ifinfomsg *ifm;
    struct nlmsghdr *nlh = link_hdr(buf, seq, RTM_NEWLINK, 0, &ifm);
    ifm->ifi_index = ifindex;
    ifm->ifi_flags = IFF_UP;
    ifm->ifi_change = IFF_UP;
    if (!ifindex)
        mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    return nlh;
}

struct nlmsghdr *osb_nl_build_dellink(void *buf, uint32_t seq, const char *name)
{
    struct ifinfomsg *ifm;
    struct nlmsghdr *nlh = link_hdr(buf, seq, RTM_DELLINK, 0, &ifm);
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    return nlh;
}

struct nlmsghdr *osb_nl_build_addr4(void *buf, uint32_t seq, int ifindex, struct in_addr addr,
                                    unsigned prefix)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWADDR;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    nlh->nlmsg_seq = seq;
    struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = (uint8_t)prefix;
    ifa->ifa_scope = RT_SCOPE_UNIVERSE;
    ifa->ifa_index = (uint32_t)ifindex;
    mnl_attr_put(nlh, IFA_LOCAL, sizeof(addr), &addr);
    mnl_attr_put(nlh, IFA_ADDRESS, sizeof(addr), &addr);
    return nlh;
}

struct nlmsghdr *osb_nl_build_default4(void *buf, uint32_t seq, struct in_addr gw, int ifindex)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    nlh->nlmsg_seq = seq;
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = AF_INET;
    rtm->rtm_dst_len = 0;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_STATIC;
    rtm->rtm_scope = RT_SCOPE_UNIVERSE;
    rtm->rtm_type = RTN_UNICAST;
    mnl_attr_put(nlh, RTA_GATEWAY, sizeof(gw), &gw);
    mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
    return nlh;
}

struct nlmsghdr *osb_nl_build_ct_flush_src4(void *buf, uint32_t seq, struct in_addr src)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = seq;
    struct nfgenmsg *nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
    nfg->nfgen_family = AF_INET;
    /* version 1: the family is honoured by the flush (0 means "all"). */
    nfg->version = 1;
    nfg->res_id = 0;
    struct nlattr *tuple = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
    struct nlattr *ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
    mnl_attr_put(nlh, CTA_IP_V4_SRC, sizeof(src), &src);
    mnl_attr_nest_end(nlh, ip);
    mnl_attr_nest_end(nlh, tuple);
    struct nlattr *filter = mnl_attr_nest_start(nlh, CTA_FILTER);
    /* CTA_FILTER_FLAG(CTA_IP_SRC): match on the original source only. */
    mnl_attr_put_u32(nlh, CTA_FILTER_ORIG_FLAGS, 1u);
    mnl_attr_nest_end(nlh, filter);
    return nlh;
}

struct link_ctx {
    const char *prefix;
    const char *exact;
    int ifindex;
    osb_nl_link_fn fn;
    void *arg;
};

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
    struct link_ctx *c = data;
    struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
    struct nlattr *a;
    mnl_attr_for_each(a, nlh, sizeof(*ifm))
    {
        if (mnl_attr_get_type(a) != IFLA_IFNAME || mnl_attr_validate(a, MNL_TYPE_STRING) < 0)
            continue;
        const char *name = mnl_attr_get_str(a);
        if (c->exact && strcmp(name, c->exact) == 0)
            c->ifindex = ifm->ifi_index;
        if (c->prefix && strncmp(name, c->prefix, strlen(c->prefix)) == 0)
            c->fn(name, ifm->ifi_index, c->arg);
    }
    return MNL_CB_OK;
}

int osb_nl_ifindex(struct osb_nl *nl, const char *name, int *out, struct osb_err *err)
{
    char buf[OSB_NL_BUFSZ];
    struct ifinfomsg *ifm;
    struct nlmsghdr *nlh = link_hdr(buf, ++nl->seq, RTM_GETLINK, 0, &ifm);
    nlh->nlmsg_flags &= (uint16_t)~NLM_F_ACK;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    struct link_ctx c = {.exact = name};
    if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
        return osb_err_sys(err, "netlink send");
    /* A single RTM_NEWLINK answer carries no NLMSG_DONE: read once. */
    char rbuf[MNL_SOCKET_BUFFER_SIZE];
    ssize_t n = mnl_socket_recvfrom(nl->sock, rbuf, sizeof(rbuf));
    if (n < 0)
        return osb_err_sys(err, "netlink recv");
    if (mnl_cb_run(rbuf, (size_t)n, nlh->nlmsg_seq, nl->portid, link_cb, &c) == MNL_CB_ERROR)
        return osb_err_sys(err, "link %s", name);
    if (!c.ifindex)
        return osb_err_set(err, OSB_E_NOTFOUND, "link %s not found", name);
    *out = c.ifindex;
    return 0;
}

/* A dump request of `type` with its family header of hdr_len bytes, whose
 * first byte is the address family; *hdr is that header, to fill further. */
static struct nlmsghdr *dump_hdr(struct osb_nl *nl, void *buf, int type, uint8_t family,
                                 size_t hdr_len, void **hdr)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = (uint16_t)type;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = ++nl->seq;
    *hdr = mnl_nlmsg_put_extra_header(nlh, hdr_len);
    *(uint8_t *)*hdr = family;
    return nlh;
}

static int dump(struct osb_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data,
                struct osb_err *err)
{
    if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
        return osb_err_sys(err, "netlink send");
    return recv_until(nl, nlh->nlmsg_seq, cb, data, err);
}

int osb_nl_links(struct osb_nl *nl, const char *prefix, osb_nl_link_fn fn, void *arg,
                 struct osb_err *err)
{
    char buf[OSB_NL_BUFSZ];
    void *ifm;
    struct nlmsghdr *nlh =
        dump_hdr(nl, buf, RTM_GETLINK, AF_UNSPEC, sizeof(struct ifinfomsg), &ifm);
    struct link_ctx c = {.prefix = prefix, .fn = fn, .arg = arg};
    return dump(nl, nlh, link_cb, &c, err);
}

struct addr_ctx {
    osb_nl_addr4_fn fn;
    void *arg;
};

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
    struct addr_ctx *c = data;
    struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
    if (ifa->ifa_family != AF_INET)
        return MNL_CB_OK;
    struct osb_nl_addr4 a = {.ifindex = (int)ifa->ifa_index, .prefix = ifa->ifa_prefixlen};
    struct in_addr local = {0}, address = {0};
    struct nlattr *at;
    mnl_attr_for_each(at, nlh, sizeof(*ifa))
    {
        int t = mnl_attr_get_type(at);
        if ((t == IFA_LOCAL || t == IFA_ADDRESS) && mnl_attr_get_payload_len(at) == 4)
            memcpy(t == IFA_LOCAL ? &local : &address, mnl_attr_get_payload(at), 4);
    }
    /* IFA_ADDRESS is the peer on point-to-point links: the own one is LOCAL. */
    a.addr = local.s_addr ? local : address;
    if (a.addr.s_addr)
        c->fn(&a, c->arg);
    return MNL_CB_OK;
}

int osb_nl_addrs4(struct osb_nl *nl, osb_nl_addr4_fn fn, void *arg, struct osb_err *err)
{
    char buf[OSB_NL_BUFSZ];
    void *ifa;
    struct nlmsghdr *nlh = dump_hdr(nl, buf, RTM_GETADDR, AF_INET, sizeof(struct ifaddrmsg), &ifa);
    struct addr_ctx c = {fn, arg};
    return dump(nl, nlh, addr_cb, &c, err);
}

struct route_ctx {
    osb_nl_route4_fn fn;
    void *arg;
};

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
    struct route_ctx *c = data;
    struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
    if (rtm->rtm_family != AF_INET || (rtm->rtm_flags & RTM_F_CLONED))
        return MNL_CB_OK;
    struct osb_nl_route4 r = {
        .dst_len = rtm->rtm_dst_len, .table = rtm->rtm_table, .type = rtm->rtm_type};
    struct nlattr *at;
    mnl_attr_for_each(at, nlh, sizeof(*rtm))
    {
        int t = mnl_attr_get_type(at);
        size_t len = mnl_attr_get_payload_len(at);
        if (t == RTA_DST && len == sizeof(r.dst))
            memcpy(&r.dst, mnl_attr_get_payload(at), sizeof(r.dst));
        else if (t == RTA_OIF && len == sizeof(uint32_t))
            r.oif = (int)mnl_attr_get_u32(at);
        else if (t == RTA_TABLE && len == sizeof(uint32_t))
            r.table = mnl_attr_get_u32(at);
    }
    c->fn(&r, c->arg);
    return MNL_CB_OK;
}

int osb_nl_routes4(struct osb_nl *nl, osb_nl_route4_fn fn, void *arg, struct osb_err *err)
{
    char buf[OSB_NL_BUFSZ];
    void *hdr;
    struct nlmsghdr *nlh = dump_hdr(nl, buf, RTM_GETROUTE, AF_INET, sizeof(struct rtmsg), &hdr);
    ((struct rtmsg *)hdr)->rtm_table = RT_TABLE_UNSPEC; /* with a dump: every table */
    struct route_ctx c = {fn, arg};
    return dump(nl, nlh, route_cb, &c, err);
}

uint32_t osb_nl_mask4(unsigned len)
{
    return len ? htonl(~0u << (32 - len)) : 0;
}

int osb_nl_parse_cidr4(const char *s, struct in_addr *addr, unsigned *len, struct osb_err *err)
{
    char ip[INET_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t iplen = slash ? (size_t)(slash - s) : strlen(s);
    if (iplen == 0 || iplen >= sizeof(ip))
        return osb_err_set(err, OSB_E_INVALID, "bad IPv4 CIDR \"%s\"", s);
    memcpy(ip, s, iplen);
    ip[iplen] = 0;
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1)
        return osb_err_set(err, OSB_E_INVALID, "bad IPv4 address in \"%s\"", s);
    unsigned l = 32;
    if (slash) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(slash + 1, &end, 10);
        if (!slash[1] || *end || errno || v > 32 || slash[1] == '-' || slash[1] == '+')
            return osb_err_set(err, OSB_E_INVALID, "bad prefix length in \"%s\"", s);
        l = (unsigned)v;
    }
    if (a.s_addr & ~osb_nl_mask4(l))
        return osb_err_set(err, OSB_E_INVALID, "\"%s\" has host bits set", s);
    *addr = a;
    *len = l;
    return 0;
}
