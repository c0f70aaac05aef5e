/* nftables through libnftnl: messages are appended to a growing buffer and
 * sent between NFNL_MSG_BATCH_BEGIN/END so every change is atomic. */
#include "net/nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>
#include <pthread.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_conntrack_tuple_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"

/* nftables datatype ids (nft's include/datatype.h), for `nft list` display. */
enum { TYPE_IPADDR = 7, TYPE_IP6ADDR = 8, TYPE_INET_SERVICE = 13, TYPE_IFNAME = 41 };
#define TYPE_CONCAT(a, b) (((a) << 6) | (b)) /* nft's TYPE_BITS */
#define IFNAME_LEN 16
#define KEY_MAX 32 /* ifname . IPv6 address */
#ifndef NFT_MSG_DESTROYSETELEM
#define NFT_MSG_DESTROYSETELEM 30 /* Linux 6.3; the installed headers are older */
#endif
#define MSG_MAX 8192     /* headroom reserved before building one message */
#define ELEMS_PER_MSG 64 /* elements of at most ~100 bytes each */

struct osb_nft_batch {
    char *table;
    char *buf;
    size_t len, cap;
    unsigned count;
    uint32_t seq;
};

struct osb_nft_batch *osb_nft_batch_new(const char *table)
{
    struct osb_nft_batch *b = osb_xcalloc(1, sizeof(*b));
    b->table = osb_xstrdup(table);
    b->cap = 4 * MSG_MAX;
    b->buf = osb_xmalloc(b->cap);
    /* Leave room for the batch-begin message in front. */
    b->len = MNL_ALIGN(sizeof(struct nlmsghdr) + sizeof(struct nfgenmsg));
    b->seq = (uint32_t)time(NULL) << 8;
    return b;
}

void osb_nft_batch_free(struct osb_nft_batch *b)
{
    if (!b)
        return;
    free(b->table);
    free(b->buf);
    free(b);
}

unsigned osb_nft_batch_count(const struct osb_nft_batch *b)
{
    return b->count;
}

const void *osb_nft_batch_data(const struct osb_nft_batch *b, size_t *len)
{
    size_t off = MNL_ALIGN(sizeof(struct nlmsghdr) + sizeof(struct nfgenmsg));
    *len = b->len - off;
    return b->buf + off;
}

static struct nlmsghdr *msg(struct osb_nft_batch *b, uint16_t type, uint16_t flags)
{
    if (b->cap - b->len < MSG_MAX) {
        b->cap *= 2;
        b->buf = osb_xrealloc(b->buf, b->cap);
    }
    return nftnl_nlmsg_build_hdr(b->buf + b->len, type, NFPROTO_INET, flags | NLM_F_ACK, ++b->seq);
}

static void done(struct osb_nft_batch *b, struct nlmsghdr *nlh)
{
    b->len += MNL_ALIGN(nlh->nlmsg_len);
    b->count++;
}

/* --- objects --------------------------------------------------------- */

static void put_table(struct osb_nft_batch *b, uint16_t type, uint16_t flags)
{
    struct nftnl_table *t = nftnl_table_alloc();
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, b->table);
    nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
    struct nlmsghdr *nlh = msg(b, type, flags);
    nftnl_table_nlmsg_build_payload(nlh, t);
    done(b, nlh);
    nftnl_table_free(t);
}

/* hook < 0: a regular chain. */
static void put_chain(struct osb_nft_batch *b, uint16_t type, const char *name, int hook,
                      const char *ctype, int prio)
{
    struct nftnl_chain *c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, b->table);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
    nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
    if (hook >= 0) {
        nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, (uint32_t)hook);
        nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, ctype);
        nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    }
    struct nlmsghdr *nlh = msg(b, type, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0);
    nftnl_chain_nlmsg_build_payload(nlh, c);
    done(b, nlh);
    nftnl_chain_free(c);
}

static struct nftnl_set *set_obj(struct osb_nft_batch *b, const char *name)
{
    struct nftnl_set *s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, b->table);
    nftnl_set_set_str(s, NFTNL_SET_NAME, name);
    nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
    return s;
}

/* A set keyed by the concatenation of fields (field lengths in bytes,
 * each padded to 4 by the kernel's registers). An interval set with more
 * than one field is a concatenated range set (the kernel's pipapo), which
 * needs the field lengths and the CONCAT flag. */
struct set_def {
    const char *name;
    uint32_t key_type;
    uint8_t fields[3];
    uint32_t flags;
};

static void put_set(struct osb_nft_batch *b, const struct set_def *d)
{
    struct nftnl_set *s = set_obj(b, d->name);
    unsigned n = d->fields[2] ? 3 : d->fields[1] ? 2 : 1;
    uint32_t flags = d->flags;
    nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, d->key_type);
    nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, (uint32_t)(d->fields[0] + d->fields[1] + d->fields[2]));
    if (n == 2 && (flags & NFT_SET_INTERVAL)) {
        flags |= NFT_SET_CONCAT;
        nftnl_set_set_data(s, NFTNL_SET_DESC_CONCAT, d->fields, n);
    }
    nftnl_set_set_u32(s, NFTNL_SET_FLAGS, flags);
    nftnl_set_set_u32(s, NFTNL_SET_ID,
                      b->seq + 1); /* required by the kernel; unique in the batch */
    if (n == 1) {
        /* Tells `nft list` how to print keys (nft's byteorder enum: 1 host,
         * 2 big endian); without it interface names print as "". */
        struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(64);
        nftnl_udata_put_u32(ud, NFTNL_UDATA_SET_KEYBYTEORDER, d->key_type == TYPE_IFNAME ? 1 : 2);
        nftnl_set_set_data(s, NFTNL_SET_USERDATA, nftnl_udata_buf_data(ud),
                           nftnl_udata_buf_len(ud));
        nftnl_udata_buf_free(ud);
    }
    struct nlmsghdr *nlh = msg(b, NFT_MSG_NEWSET, NLM_F_CREATE);
    nftnl_set_nlmsg_build_payload(nlh, s);
    done(b, nlh);
    nftnl_set_free(s);
}

/* Elements go through a set object; type NEWSETELEM or DESTROYSETELEM (a
 * delete that ignores absent elements); at most ELEMS_PER_MSG elements,
 * so the message fits the room msg() reserved. */
static void put_elems(struct osb_nft_batch *b, struct nftnl_set *s, uint16_t type)
{
    struct nlmsghdr *nlh = msg(b, type, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0);
    nftnl_set_elems_nlmsg_build_payload(nlh, s);
    done(b, nlh);
    nftnl_set_free(s);
}

static struct nftnl_set_elem *elem(struct nftnl_set *s, const void *key, size_t len)
{
    struct nftnl_set_elem *e = nftnl_set_elem_alloc();
    nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, (uint32_t)len);
    nftnl_set_elem_add(s, e);
    return e;
}

/* --- rules ------------------------------------------------------------ */

static struct nftnl_rule *rule(struct osb_nft_batch *b, const char *chain)
{
    struct nftnl_rule *r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, b->table);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
    nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
    return r;
}

static void put_rule(struct osb_nft_batch *b, struct nftnl_rule *r)
{
    struct nlmsghdr *nlh = msg(b, NFT_MSG_NEWRULE, NLM_F_APPEND | NLM_F_CREATE);
    nftnl_rule_nlmsg_build_payload(nlh, r);
    done(b, nlh);
    nftnl_rule_free(r);
}

static struct nftnl_expr *ex(struct nftnl_rule *r, const char *name)
{
    struct nftnl_expr *e = nftnl_expr_alloc(name);
    nftnl_rule_add_expr(r, e);
    return e;
}

/* Loads into the 32-bit register reg (NFT_REG32_00 + n); concatenated keys
 * are consecutive registers, each field padded to 4 bytes. */
static void e_meta_to(struct nftnl_rule *r, uint32_t key, uint32_t reg)
{
    struct nftnl_expr *e = ex(r, "meta");
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
    nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, reg);
}

static void e_meta(struct nftnl_rule *r, uint32_t key)
{
    e_meta_to(r, key, NFT_REG_1);
}

static void e_cmp(struct nftnl_rule *r, uint32_t op, const void *data, size_t len)
{
    struct nftnl_expr *e = ex(r, "cmp");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
    nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, (uint32_t)len);
}

static void e_payload_to(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len,
                         uint32_t reg)
{
    struct nftnl_expr *e = ex(r, "payload");
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, reg);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
    nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
}

static void e_payload(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len)
{
    e_payload_to(r, base, off, len, NFT_REG_1);
}

static void e_mask(struct nftnl_rule *r, const void *mask, size_t len)
{
    static const char zero[16];
    struct nftnl_expr *e = ex(r, "bitwise");
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
    nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, (uint32_t)len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, (uint32_t)len);
    nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, (uint32_t)len);
}

/* Plain lookup (match / no match), or a verdict map when vmap. */
static void e_lookup(struct nftnl_rule *r, const char *set, bool inv, bool vmap)
{
    struct nftnl_expr *e = ex(r, "lookup");
    nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
    nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
    if (vmap)
        nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_DREG, NFT_REG_VERDICT);
    if (inv)
        nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
}

static void e_verdict(struct nftnl_rule *r, int verdict, const char *chain)
{
    struct nftnl_expr *e = ex(r, "immediate");
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
    if (chain)
        nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
}

static void m_u8(struct nftnl_rule *r, uint32_t key, uint8_t v)
{
    e_meta(r, key);
    e_cmp(r, NFT_CMP_EQ, &v, 1);
}

static void m_ifprefix(struct nftnl_rule *r, uint32_t key, const char *prefix, uint32_t op)
{
    e_meta(r, key);
    e_cmp(r, op, prefix, strlen(prefix));
}

/* ip saddr (off 12) / daddr (off 16) against addr/len. */
static void m_ip4(struct nftnl_rule *r, uint32_t off, struct in_addr a, unsigned len, uint32_t op)
{
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4);
    e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, 4);
    if (len < 32) {
        uint32_t mask = len ? htonl(~0u << (32 - len)) : 0;
        e_mask(r, &mask, 4);
    }
    e_cmp(r, op, &a, 4);
}

static void m_dport(struct nftnl_rule *r, uint8_t l4, uint16_t port)
{
    m_u8(r, NFT_META_L4PROTO, l4);
    uint16_t p = htons(port);
    e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
    e_cmp(r, NFT_CMP_EQ, &p, 2);
}

static void m_ct_reply(struct nftnl_rule *r)
{
    struct nftnl_expr *e = ex(r, "ct");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_DIRECTION);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
    uint8_t dir = IP_CT_DIR_REPLY;
    e_cmp(r, NFT_CMP_EQ, &dir, 1);
}

/* ct status & dnat: the packet's connection was redirected. */
static void m_ct_dnat(struct nftnl_rule *r)
{
    struct nftnl_expr *e = ex(r, "ct");
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATUS);
    nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
    uint32_t bit = IPS_DST_NAT, zero = 0;
    e_mask(r, &bit, 4);
    e_cmp(r, NFT_CMP_NEQ, &zero, 4);
}

static void v_reject(struct nftnl_rule *r, uint32_t type, uint8_t code)
{
    struct nftnl_expr *e = ex(r, "reject");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
    nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
}

/* Finishes r with a verdict and queues it. */
static void put_verdict(struct osb_nft_batch *b, struct nftnl_rule *r, int verdict,
                        const char *target)
{
    e_verdict(r, verdict, target);
    put_rule(b, r);
}

/* --- table ------------------------------------------------------------- */

/* The egress sets by [deny][v6][range]. */
static const char *const egress_set[2][2][2] = {{{"a4", "c4"}, {"a6", "c6"}},
                                                {{"d4", "dc4"}, {"d6", "dc6"}}};

void osb_nft_delete_table(struct osb_nft_batch *b)
{
    put_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE);
    put_table(b, NFT_MSG_DELTABLE, 0);
}

static void put_egress_sets(struct osb_nft_batch *b)
{
    for (int deny = 0; deny < 2; deny++) {
        uint32_t t = deny ? 0 : NFT_SET_TIMEOUT;
        for (int v6 = 0; v6 < 2; v6++) {
            /* v4 keyed by the sandbox's address, v6 (which has no v4
             * source) by its host interface. */
            struct set_def d = {.key_type = v6 ? TYPE_CONCAT(TYPE_IFNAME, TYPE_IP6ADDR)
                                               : TYPE_CONCAT(TYPE_IPADDR, TYPE_IPADDR),
                                .fields = {v6 ? IFNAME_LEN : 4, v6 ? 16 : 4}};
            d.name = egress_set[deny][v6][0];
            d.flags = t;
            put_set(b, &d);
            d.name = egress_set[deny][v6][1];
            d.flags = t | NFT_SET_INTERVAL;
            put_set(b, &d);
        }
    }
}

static void put_global_sets(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    static const struct set_def defs[] = {
        {"allow_host", TYPE_IPADDR, {4, 0}, NFT_SET_INTERVAL},
        {"slots", TYPE_CONCAT(TYPE_IFNAME, TYPE_IPADDR), {IFNAME_LEN, 4}, 0},
        {"dns_host", TYPE_CONCAT(TYPE_IPADDR, TYPE_IPADDR), {4, 4}, 0},
        {"restricted", TYPE_IPADDR, {4, 0}, 0},
        /* sandbox . destination . port (padded to 4): the vault proxy's flows */
        {"intercept",
         TYPE_CONCAT(TYPE_CONCAT(TYPE_IPADDR, TYPE_IPADDR), TYPE_INET_SERVICE),
         {4, 4, 4},
         NFT_SET_TIMEOUT},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
        put_set(b, &defs[i]);
    put_egress_sets(b);
    if (!cfg->n_allow_host)
        return;
    struct nftnl_set *s = set_obj(b, "allow_host");
    for (size_t i = 0; i < cfg->n_allow_host; i++) {
        uint32_t start = ntohl(cfg->allow_host[i].addr.s_addr);
        unsigned len = cfg->allow_host[i].len;
        uint64_t end = (uint64_t)start + (len ? (1ull << (32 - len)) : (1ull << 32));
        uint32_t k = htonl(start);
        elem(s, &k, 4);
        if (end <= UINT32_MAX) { /* a range reaching 255.255.255.255 has no end */
            k = htonl((uint32_t)end);
            nftnl_set_elem_set_u32(elem(s, &k, 4), NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
        }
    }
    put_elems(b, s, NFT_MSG_NEWSETELEM);
}

/* iifname . ip saddr, the anti-spoofing key of @slots. */
static void k_if_saddr(struct nftnl_rule *r)
{
    e_meta_to(r, NFT_META_IIFNAME, NFT_REG32_00);
    e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_04);
}

/* The egress key: ip saddr . ip daddr (v4) or iifname . ip6 daddr (v6). */
static void k_egress(struct nftnl_rule *r, bool v6)
{
    m_u8(r, NFT_META_NFPROTO, v6 ? NFPROTO_IPV6 : NFPROTO_IPV4);
    if (v6) {
        e_meta_to(r, NFT_META_IIFNAME, NFT_REG32_00);
        e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 24, 16, NFT_REG32_04);
    } else {
        e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_00);
        e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG32_01);
    }
}

/* One rule per egress set of kind deny: key in set -> accept (allow sets)
 * or jump refuse (deny sets). */
static void put_egress_lookups(struct osb_nft_batch *b, int deny)
{
    for (int v6 = 0; v6 < 2; v6++) {
        for (int range = 0; range < 2; range++) {
            struct nftnl_rule *r = rule(b, "from_slot");
            k_egress(r, v6);
            e_lookup(r, egress_set[deny][v6][range], false, false);
            put_verdict(b, r, deny ? NFT_JUMP : NF_ACCEPT, deny ? "refuse" : NULL);
        }
    }
}

/* TCP gets a reset (fast failure for the client), everything else an ICMP
 * administratively-prohibited. */
static void put_refuse(struct osb_nft_batch *b)
{
    put_chain(b, NFT_MSG_NEWCHAIN, "refuse", -1, NULL, 0);
    struct nftnl_rule *r = rule(b, "refuse");
    m_u8(r, NFT_META_L4PROTO, IPPROTO_TCP);
    v_reject(r, NFT_REJECT_TCP_RST, 0);
    put_rule(b, r);
    r = rule(b, "refuse");
    v_reject(r, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
    put_rule(b, r);
}

static void put_antispoof(struct osb_nft_batch *b, const char *chain)
{
    struct nftnl_rule *r = rule(b, chain);
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4);
    k_if_saddr(r);
    e_lookup(r, "slots", true, false);
    put_verdict(b, r, NF_DROP, NULL);
}

static void put_forward(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    static const struct in_addr ll = {.s_addr = 0xfea9}; /* 169.254.0.0 (network order) */
    put_chain(b, NFT_MSG_NEWCHAIN, "from_slot", -1, NULL, 0);
    put_chain(b, NFT_MSG_NEWCHAIN, "forward", NF_INET_FORWARD, "filter", 0);
    struct nftnl_rule *r = rule(b, "forward");
    m_ifprefix(r, NFT_META_IIFNAME, cfg->ifprefix, NFT_CMP_EQ);
    put_verdict(b, r, NFT_JUMP, "from_slot");

    r = rule(b, "from_slot"); /* sandboxes have no IPv6 route: drop it early */
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV6);
    put_verdict(b, r, NF_DROP, NULL);
    r = rule(b, "from_slot"); /* sandbox to sandbox */
    m_ifprefix(r, NFT_META_OIFNAME, cfg->ifprefix, NFT_CMP_EQ);
    v_reject(r, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
    put_rule(b, r);
    r = rule(b, "from_slot"); /* link-local / cloud metadata */
    m_ip4(r, 16, ll, 16, NFT_CMP_EQ);
    e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4);
    e_lookup(r, "allow_host", true, false);
    v_reject(r, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
    put_rule(b, r);
    r = rule(b, "from_slot"); /* answers on connections made to the sandbox */
    m_ct_reply(r);
    put_verdict(b, r, NF_ACCEPT, NULL);
    put_antispoof(b, "from_slot");
    put_egress_lookups(b, 1); /* deny sets first, restricted or not */
    r = rule(b, "from_slot");
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4);
    e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 12, 4);
    e_lookup(r, "restricted", true, false);
    put_verdict(b, r, NF_ACCEPT, NULL);
    put_egress_lookups(b, 0);
    put_verdict(b, rule(b, "from_slot"), NFT_JUMP, "refuse");
}

static void put_input(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    put_chain(b, NFT_MSG_NEWCHAIN, "to_host", -1, NULL, 0);
    put_chain(b, NFT_MSG_NEWCHAIN, "input", NF_INET_LOCAL_IN, "filter", 0);
    struct nftnl_rule *r = rule(b, "input");
    m_ifprefix(r, NFT_META_IIFNAME, cfg->ifprefix, NFT_CMP_EQ);
    put_verdict(b, r, NFT_JUMP, "to_host");
    if (cfg->proxy_port) { /* the proxy listens on every address: nobody else reaches it */
        r = rule(b, "input");
        m_dport(r, IPPROTO_TCP, cfg->proxy_port);
        e_meta(r, NFT_META_IIFNAME);
        e_cmp(r, NFT_CMP_NEQ, "lo", 3);
        put_verdict(b, r, NF_DROP, NULL);
    }

    r = rule(b, "to_host");
    e_meta(r, NFT_META_NFPROTO);
    e_cmp(r, NFT_CMP_NEQ, &(uint8_t){NFPROTO_IPV4}, 1);
    put_verdict(b, r, NF_DROP, NULL);
    put_antispoof(b, "to_host");
    r = rule(b, "to_host");
    m_ct_reply(r);
    put_verdict(b, r, NF_ACCEPT, NULL);
    if (cfg->proxy_port) { /* the vault proxy, only through the redirect */
        r = rule(b, "to_host");
        m_dport(r, IPPROTO_TCP, cfg->proxy_port);
        m_ct_dnat(r);
        put_verdict(b, r, NF_ACCEPT, NULL);
    }
    for (int k = 0; k < 2; k++) { /* DNS to the slot's own host address */
        r = rule(b, "to_host");
        m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4); /* (for `nft list`: ip saddr, not @nh) */
        m_dport(r, k ? IPPROTO_TCP : IPPROTO_UDP, 53);
        e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_00);
        e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG32_01);
        e_lookup(r, "dns_host", false, false);
        put_verdict(b, r, NF_ACCEPT, NULL);
    }
    r = rule(b, "to_host");
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4);
    e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4);
    e_lookup(r, "allow_host", false, false);
    put_verdict(b, r, NF_ACCEPT, NULL);
    put_verdict(b, rule(b, "to_host"), NFT_JUMP, "refuse");
}

static void put_nat(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    put_chain(b, NFT_MSG_NEWCHAIN, "postrouting", NF_INET_POST_ROUTING, "nat", 100);
    struct nftnl_rule *r = rule(b, "postrouting");
    m_ip4(r, 12, cfg->subnet, cfg->subnet_len, NFT_CMP_EQ);
    m_ifprefix(r, NFT_META_OIFNAME, cfg->ifprefix, NFT_CMP_NEQ);
    ex(r, "masq");
    put_rule(b, r);
}

/* Flows in @intercept go to the vault proxy on the slot's host address;
 * the proxy reads the original destination from conntrack. */
static void put_intercept(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    if (!cfg->proxy_port)
        return;
    put_chain(b, NFT_MSG_NEWCHAIN, "prerouting", NF_INET_PRE_ROUTING, "nat", -100);
    struct nftnl_rule *r = rule(b, "prerouting");
    m_ifprefix(r, NFT_META_IIFNAME, cfg->ifprefix, NFT_CMP_EQ);
    m_u8(r, NFT_META_NFPROTO, NFPROTO_IPV4);
    m_u8(r, NFT_META_L4PROTO, IPPROTO_TCP);
    e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NFT_REG32_00);
    e_payload_to(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG32_01);
    e_payload_to(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG32_02);
    e_lookup(r, "intercept", false, false);
    struct nftnl_expr *e = ex(r, "immediate");
    uint16_t port = htons(cfg->proxy_port);
    nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
    nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &port, 2);
    e = ex(r, "redir");
    nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
    put_rule(b, r);
}

void osb_nft_reset_table(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg)
{
    osb_nft_delete_table(b);
    put_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE);
    put_global_sets(b, cfg);
    put_refuse(b);
    put_forward(b, cfg);
    put_input(b, cfg);
    put_nat(b, cfg);
    put_intercept(b, cfg);
}

/* --- slots ------------------------------------------------------------- */

/* ifname padded to IFNAMSIZ (as meta iifname loads it) followed by len
 * bytes of addr; returns the key length. */
static size_t key_if(uint8_t out[KEY_MAX], const char *ifname, const void *addr, size_t len)
{
    memset(out, 0, KEY_MAX);
    size_t n = strnlen(ifname, IFNAME_LEN - 1);
    memcpy(out, ifname, n);
    memcpy(out + IFNAME_LEN, addr, len);
    return IFNAME_LEN + len;
}

static size_t key_ip(uint8_t out[KEY_MAX], struct in_addr a, const void *addr)
{
    memset(out, 0, KEY_MAX);
    memcpy(out, &a, 4);
    memcpy(out + 4, addr, 4);
    return 8;
}

static void put_one(struct osb_nft_batch *b, const char *set, const void *key, size_t len,
                    uint16_t type)
{
    struct nftnl_set *s = set_obj(b, set);
    elem(s, key, len);
    put_elems(b, s, type);
}

static void slot_elems(struct osb_nft_batch *b, const struct osb_nft_slot *s, uint16_t type)
{
    uint8_t k[KEY_MAX];
    put_one(b, "slots", k, key_if(k, s->ifname, &s->sandbox, 4), type);
    put_one(b, "dns_host", k, key_ip(k, s->sandbox, &s->host), type);
}

void osb_nft_add_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool restricted)
{
    slot_elems(b, s, NFT_MSG_NEWSETELEM);
    if (restricted)
        osb_nft_set_restricted(b, s, true);
}

void osb_nft_del_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s)
{
    slot_elems(b, s, NFT_MSG_DESTROYSETELEM);
    osb_nft_set_restricted(b, s, false);
}

void osb_nft_set_restricted(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool on)
{
    put_one(b, "restricted", &s->sandbox, 4, on ? NFT_MSG_NEWSETELEM : NFT_MSG_DESTROYSETELEM);
}

static size_t addr_len(int family)
{
    return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

int osb_nft_addr_check(const struct osb_nft_addr *a, struct osb_err *err)
{
    if (a->port && (a->family != AF_INET || a->prefix != 32 || a->deny))
        return osb_err_set(err, OSB_E_INVALID, "an intercepted flow is one IPv4 address");
    size_t alen = addr_len(a->family);
    if (!alen)
        return osb_err_set(err, OSB_E_INVALID, "address family %d is not IPv4 or IPv6", a->family);
    if (a->prefix == 0 || a->prefix > alen * 8)
        return osb_err_set(err, OSB_E_INVALID, "prefix length %u out of range 1..%zu", a->prefix,
                           alen * 8);
    for (size_t i = 0; i < alen; i++) {
        unsigned bits = a->prefix > i * 8 ? a->prefix - (unsigned)i * 8 : 0;
        uint8_t m = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if (a->addr[i] & ~m)
            return osb_err_set(err, OSB_E_INVALID, "address has bits set beyond /%u", a->prefix);
    }
    return 0;
}

static const char *addr_set(const struct osb_nft_addr *a)
{
    if (a->port)
        return "intercept";
    bool v6 = a->family == AF_INET6;
    return egress_set[a->deny][v6][a->prefix < (v6 ? 128u : 32u)];
}

/* Appends a's element to set object s: the slot's key with a's first
 * address and, for a range, its last (a concatenated range is inclusive,
 * given as key and key end). */
static void put_addr_elem(struct nftnl_set *s, const struct osb_nft_slot *slot,
                          const struct osb_nft_addr *a, uint64_t timeout_ms)
{
    bool v6 = a->family == AF_INET6;
    size_t alen = v6 ? 16 : 4;
    bool range = a->prefix < alen * 8;
    uint8_t k[KEY_MAX], last[16];
    size_t klen = v6 ? key_if(k, slot->ifname, a->addr, 16) : key_ip(k, slot->sandbox, a->addr);
    if (a->port) { /* . port, padded to 4 */
        uint16_t p = htons(a->port);
        memcpy(k + 8, &p, 2);
        klen = 12;
    }
    struct nftnl_set_elem *e = elem(s, k, klen);
    if (timeout_ms)
        nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
    if (range) {
        memcpy(last, a->addr, alen);
        for (size_t i = 0; i < alen; i++) {
            unsigned bits = a->prefix > i * 8 ? a->prefix - (unsigned)i * 8 : 0;
            last[i] |= bits >= 8 ? 0 : (uint8_t)(0xff >> bits);
        }
        klen = v6 ? key_if(k, slot->ifname, last, 16) : key_ip(k, slot->sandbox, last);
        nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY_END, k, (uint32_t)klen);
    }
}

int osb_nft_add_addr(struct osb_nft_batch *b, const struct osb_nft_slot *s,
                     const struct osb_nft_addr *a, uint64_t timeout_ms, struct osb_err *err)
{
    if (osb_nft_addr_check(a, err) < 0)
        return -1;
    struct nftnl_set *set = set_obj(b, addr_set(a));
    put_addr_elem(set, s, a, a->deny ? 0 : timeout_ms);
    put_elems(b, set, NFT_MSG_NEWSETELEM);
    return 0;
}

void osb_nft_forget(struct osb_nft_batch *b, const struct osb_nft_slot *s,
                    const struct osb_nft_addr *v, size_t n)
{
    /* One set object per egress set, sent when full or at the end. */
    struct nftnl_set *open[2][2][2] = {0}, *icpt = NULL;
    unsigned count[2][2][2] = {0}, nicpt = 0;
    for (size_t i = 0; i < n; i++) {
        int v6 = v[i].family == AF_INET6;
        int range = v[i].prefix < (v6 ? 128u : 32u);
        struct nftnl_set **o = v[i].port ? &icpt : &open[v[i].deny][v6][range];
        unsigned *c = v[i].port ? &nicpt : &count[v[i].deny][v6][range];
        if (!*o)
            *o = set_obj(b, addr_set(&v[i]));
        put_addr_elem(*o, s, &v[i], 0);
        if (++*c == ELEMS_PER_MSG) {
            put_elems(b, *o, NFT_MSG_DESTROYSETELEM);
            *o = NULL;
            *c = 0;
        }
    }
    for (int k = 0; k < 8; k++) {
        struct nftnl_set *o = open[k / 4][(k / 2) % 2][k % 2];
        if (o)
            put_elems(b, o, NFT_MSG_DESTROYSETELEM);
    }
    if (icpt)
        put_elems(b, icpt, NFT_MSG_DESTROYSETELEM);
}

/* --- commit ------------------------------------------------------------ */

struct ack_ctx {
    int first_errno;
    uint16_t type; /* NFT_MSG_* of the first failing message */
    uint32_t seq;
    char msg[128]; /* extended ACK text, if the kernel gave one */
};

static int err_cb(const struct nlmsghdr *nlh, void *data)
{
    struct ack_ctx *c = data;
    const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
    if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
        return MNL_CB_OK;
    if (!e->error || c->first_errno)
        return MNL_CB_OK;
    c->first_errno = -e->error;
    c->type = e->msg.nlmsg_type & 0xff;
    c->seq = e->msg.nlmsg_seq;
    if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
        return MNL_CB_OK;
    /* With NETLINK_CAP_ACK the request payload is not echoed. */
    size_t off = sizeof(*e);
    if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
        off += mnl_nlmsg_get_payload_len(&e->msg);
    const struct nlattr *a;
    mnl_attr_for_each(a, nlh, off)
    {
        if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
            mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
            snprintf(c->msg, sizeof(c->msg), "%s", mnl_attr_get_str(a));
    }
    return MNL_CB_OK;
}

/* The kernel handles a batch synchronously inside sendmsg, so every answer
 * is queued when sendto returns: read until the queue is empty. */
static int drain(struct mnl_socket *nl, struct ack_ctx *c, struct osb_err *err)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    mnl_cb_t cbs[NLMSG_MIN_TYPE] = {[NLMSG_ERROR] = err_cb};
    for (;;) {
        ssize_t n = recv(mnl_socket_get_fd(nl), buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            return osb_err_sys(err, "nftables recv");
        }
        /* seq/portid 0: accept every answer; errors are collected by err_cb. */
        mnl_cb_run2(buf, (size_t)n, 0, 0, NULL, c, cbs, NLMSG_MIN_TYPE);
    }
}

struct osb_nft_conn {
    pthread_mutex_t mu;
    struct mnl_socket *nl; /* NULL until first used, and after a socket error */
    int sndbuf;
};

struct osb_nft_conn *osb_nft_conn_new(void)
{
    struct osb_nft_conn *c = osb_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void osb_nft_conn_free(struct osb_nft_conn *c)
{
    if (!c)
        return;
    if (c->nl)
        mnl_socket_close(c->nl);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* With c->mu held. */
static int conn_socket(struct osb_nft_conn *c, struct osb_err *err)
{
    if (c->nl)
        return 0;
    c->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
    if (!c->nl)
        return osb_err_sys(err, "nftables socket");
    int one = 1;
    mnl_socket_setsockopt(c->nl, NETLINK_CAP_ACK, &one, sizeof(one));
    mnl_socket_setsockopt(c->nl, NETLINK_EXT_ACK, &one, sizeof(one));
    /* Big batches answer with one ACK per message: make room for them. */
    int rcv = 4 << 20;
    setsockopt(mnl_socket_get_fd(c->nl), SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
    if (mnl_socket_bind(c->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        osb_err_sys(err, "nftables bind");
        mnl_socket_close(c->nl);
        c->nl = NULL;
        return -1;
    }
    c->sndbuf = 0;
    return 0;
}

/* Sends len bytes and collects the answers into *ack, with c->mu held. A
 * socket that failed is dropped (the next call opens another): its queue
 * may hold answers to this message. */
static int conn_send(struct osb_nft_conn *c, const void *buf, size_t len, struct ack_ctx *ack,
                     struct osb_err *err)
{
    if (conn_socket(c, err) < 0)
        return -1;
    if ((int)len + 65536 > c->sndbuf) { /* netlink refuses a message above sndbuf */
        c->sndbuf = (int)len + 65536;
        setsockopt(mnl_socket_get_fd(c->nl), SOL_SOCKET, SO_SNDBUFFORCE, &c->sndbuf,
                   sizeof(c->sndbuf));
    }
    int r = mnl_socket_sendto(c->nl, buf, len) < 0 ? osb_err_sys(err, "nftables send")
                                                   : drain(c->nl, ack, err);
    if (r < 0) {
        mnl_socket_close(c->nl);
        c->nl = NULL;
    }
    return r;
}

int osb_nft_conn_talk(struct osb_nft_conn *c, const struct nlmsghdr *nlh, struct osb_err *err)
{
    struct ack_ctx ack = {0};
    pthread_mutex_lock(&c->mu);
    int r = conn_send(c, nlh, nlh->nlmsg_len, &ack, err);
    pthread_mutex_unlock(&c->mu);
    if (r < 0)
        return -1;
    if (ack.first_errno) {
        errno = ack.first_errno;
        return osb_err_sys(err, "netfilter request (type %u)", nlh->nlmsg_type);
    }
    return 0;
}

int osb_nft_commit(struct osb_nft_conn *conn, struct osb_nft_batch *b, struct osb_err *err)
{
    size_t head = MNL_ALIGN(sizeof(struct nlmsghdr) + sizeof(struct nfgenmsg));
    if (!b->count)
        return 0;
    nftnl_batch_begin(b->buf, ++b->seq);
    if (b->cap - b->len < MSG_MAX)
        b->buf = osb_xrealloc(b->buf, b->cap *= 2);
    struct nlmsghdr *end = nftnl_batch_end(b->buf + b->len, ++b->seq);
    size_t total = b->len + MNL_ALIGN(end->nlmsg_len);
    unsigned count = b->count;
    uint32_t first_seq = b->seq - count - 1; /* seq of message 1 */
    b->len = head;                           /* emptied whatever happens */
    b->count = 0;

    struct osb_nft_conn *own = conn ? NULL : osb_nft_conn_new();
    struct osb_nft_conn *c = conn ? conn : own;
    struct ack_ctx ack = {0};
    pthread_mutex_lock(&c->mu);
    int r = conn_send(c, b->buf, total, &ack, err);
    pthread_mutex_unlock(&c->mu);
    osb_nft_conn_free(own);
    if (r < 0)
        return osb_err_wrap(err, "nftables batch of %u messages on table %s", count, b->table);
    if (ack.first_errno) {
        errno = ack.first_errno;
        return osb_err_sys(err, "nftables: message %u of %u (type %u%s%s) on table %s",
                           ack.seq - first_seq, count, ack.type, ack.msg[0] ? ", " : "", ack.msg,
                           b->table);
    }
    return 0;
}
