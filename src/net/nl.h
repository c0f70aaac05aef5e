/* Thin rtnetlink and ctnetlink helpers over libmnl. The message builders are
 * pure (they only fill a caller buffer) so unit tests can check them without
 * privileges; osb_nl_talk sends one request and waits for its ACK.
 *
 * A struct osb_nl is bound to the network namespace of the thread that opened
 * it and keeps working there after the thread moves elsewhere (setns). */
#ifndef OSB_NET_NL_H
#define OSB_NET_NL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "common/err.h"

struct mnl_socket;
struct nlmsghdr;

struct osb_nl {
    struct mnl_socket *sock;
    uint32_t portid;
    uint32_t seq;
};

/* Buffer big enough for any request built here. */
#define OSB_NL_BUFSZ 1024

/* bus: NETLINK_ROUTE or NETLINK_NETFILTER. */
OSB_MUST_CHECK int osb_nl_open(struct osb_nl *nl, int bus, struct osb_err *err);
void osb_nl_close(struct osb_nl *nl);
/* Send nlh (built with NLM_F_ACK) and wait for its ACK; a NLMSG_ERROR becomes
 * OSB_E_SYS with that errno (err->sys_errno). */
OSB_MUST_CHECK int osb_nl_talk(struct osb_nl *nl, struct nlmsghdr *nlh, struct osb_err *err);

/* RTM_NEWLINK: veth `name` in the current netns whose peer is created
 * directly inside the netns `peer_nsfd` under the name `peer_name`. */
struct nlmsghdr *osb_nl_build_veth(void *buf, uint32_t seq, const char *name, const char *peer_name,
                                   int peer_nsfd);
/* RTM_NEWLINK setting IFF_UP on ifindex (or on `name` when ifindex is 0). */
struct nlmsghdr *osb_nl_build_link_up(void *buf, uint32_t seq, int ifindex, const char *name);
/* RTM_DELLINK by name. */
struct nlmsghdr *osb_nl_build_dellink(void *buf, uint32_t seq, const char *name);
/* RTM_NEWADDR: IPv4 address/prefix on ifindex (IFA_LOCAL + IFA_ADDRESS). */
struct nlmsghdr *osb_nl_build_addr4(void *buf, uint32_t seq, int ifindex, struct in_addr addr,
                                    unsigned prefix);
/* RTM_NEWROUTE: IPv4 default route via gw out of ifindex, main table. */
struct nlmsghdr *osb_nl_build_default4(void *buf, uint32_t seq, struct in_addr gw, int ifindex);
/* IPCTNL_MSG_CT_DELETE that flushes every IPv4 conntrack entry whose
 * original source address is src (a filtered flush, kernel >= 5.8). */
struct nlmsghdr *osb_nl_build_ct_flush_src4(void *buf, uint32_t seq, struct in_addr src);

/* ifindex of `name` in nl's namespace (RTM_GETLINK). */
OSB_MUST_CHECK int osb_nl_ifindex(struct osb_nl *nl, const char *name, int *out,
                                  struct osb_err *err);
/* A dump that raced a change of links, addresses or routes ends with
 * NLM_F_DUMP_INTR, which libmnl reports as EINTR: what the callbacks saw is
 * inconsistent, so the caller starts again from scratch, up to
 * OSB_NL_DUMP_TRIES times (a host whose links change without pause fails). */
#define OSB_NL_DUMP_TRIES 16
bool osb_nl_dump_interrupted(const struct osb_err *err);
/* Calls fn for every link whose name starts with prefix (RTM_GETLINK dump). */
typedef void (*osb_nl_link_fn)(const char *name, int ifindex, void *arg);
OSB_MUST_CHECK int osb_nl_links(struct osb_nl *nl, const char *prefix, osb_nl_link_fn fn, void *arg,
                                struct osb_err *err);

/* IPv4 addresses (RTM_GETADDR dump) and routes of every routing table
 * (RTM_GETROUTE dump), as seen in nl's namespace. */
struct osb_nl_addr4 {
    int ifindex;
    struct in_addr addr;
    unsigned prefix;
};
struct osb_nl_route4 {
    int oif;            /* 0: none (blackhole, multipath, ...) */
    struct in_addr dst; /* network order; 0.0.0.0 for a default route */
    unsigned dst_len;
    uint32_t table; /* RT_TABLE_MAIN 254, RT_TABLE_LOCAL 255, ... */
    unsigned type;  /* RTN_UNICAST, RTN_BLACKHOLE, RTN_LOCAL, ... */
};
typedef void (*osb_nl_addr4_fn)(const struct osb_nl_addr4 *a, void *arg);
typedef void (*osb_nl_route4_fn)(const struct osb_nl_route4 *r, void *arg);
OSB_MUST_CHECK int osb_nl_addrs4(struct osb_nl *nl, osb_nl_addr4_fn fn, void *arg,
                                 struct osb_err *err);
OSB_MUST_CHECK int osb_nl_routes4(struct osb_nl *nl, osb_nl_route4_fn fn, void *arg,
                                  struct osb_err *err);

/* The netmask of a /len (network byte order); len 0..32. */
uint32_t osb_nl_mask4(unsigned len);
/* "a.b.c.d/len" -> addr, len; strict (host bits must be zero). */
OSB_MUST_CHECK int osb_nl_parse_cidr4(const char *s, struct in_addr *addr, unsigned *len,
                                      struct osb_err *err);
#endif
