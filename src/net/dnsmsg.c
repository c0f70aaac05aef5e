/* DNS wire messages: see dnsmsg.h. */
#include "net/dnsmsg.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/xalloc.h"

#define FLAG_QR 0x8000u
#define FLAG_RD 0x0100u
#define FLAG_RA 0x0080u
#define FLAG_CD 0x0010u
#define OPCODE(f) (((f) >> 11) & 0xfu)
/* A name has at most 127 labels; more jumps than that is a loop. */
#define MAX_JUMPS 128
/* Records examined in one answer and names in one CNAME chain. */
#define MAX_RRS 512
#define MAX_CHAIN 16

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Append one label byte to the text form, escaping odd bytes. */
static int put_label_byte(char *out, size_t cap, size_t *n, uint8_t c)
{
    bool plain = c > 0x20 && c < 0x7f && c != '.' && c != '\\';
    size_t need = plain ? 1 : 4;
    if (*n + need >= cap)
        return -1;
    if (plain)
        out[(*n)++] = (char)c;
    else
        *n += (size_t)snprintf(out + *n, cap - *n, "\\%03u", c);
    return 0;
}

/* Compression pointers must point strictly backwards and past the header;
 * with the jump and wire-length caps (255 bytes) no input can loop. */
int osb_dns_read_name(const uint8_t *msg, size_t len, size_t *off, char *out, size_t cap)
{
    size_t p = *off, n = 0, wire = 0, end = 0;
    int jumps = 0;
    if (cap == 0)
        return -1;
    for (;;) {
        if (p >= len)
            return -1;
        uint8_t l = msg[p];
        if ((l & 0xc0) == 0xc0) {
            if (p + 1 >= len || ++jumps > MAX_JUMPS)
                return -1;
            size_t to = (size_t)(l & 0x3f) << 8 | msg[p + 1];
            if (!end)
                end = p + 2;
            if (to >= p || to < OSB_DNS_HEADER_LEN)
                return -1; /* forward (could loop) or into the header (not a name) */
            p = to;
            continue;
        }
        if (l & 0xc0)
            return -1; /* 0x40/0x80: extended label types, obsolete */
        wire += 1u + l;
        if (wire > 255 || p + 1 + l > len)
            return -1;
        if (l == 0)
            break;
        if (n) {
            if (n + 1 >= cap)
                return -1;
            out[n++] = '.';
        }
        for (size_t i = 0; i < l; i++)
            if (put_label_byte(out, cap, &n, msg[p + 1 + i]) < 0)
                return -1;
        p += 1u + l;
    }
    out[n] = 0;
    *off = end ? end : p + 1;
    return 0;
}

/* Skip one resource record at *off (after its name has been read). */
static int skip_rr_body(const uint8_t *msg, size_t len, size_t *off, uint16_t *type, uint16_t *cls,
                        uint32_t *ttl, size_t *rdata, uint16_t *rdlen)
{
    size_t p = *off;
    if (p + 10 > len)
        return -1;
    *type = get16(msg + p);
    *cls = get16(msg + p + 2);
    *ttl = get32(msg + p + 4);
    *rdlen = get16(msg + p + 8);
    *rdata = p + 10;
    if (*rdata + *rdlen > len)
        return -1;
    *off = *rdata + *rdlen;
    return 0;
}

/* Walk the records after the question(s); all must be in bounds. */
static int walk_records(const uint8_t *msg, size_t len, size_t off, unsigned count)
{
    char name[OSB_DNS_NAME_TEXT];
    for (unsigned i = 0; i < count; i++) {
        uint16_t type, cls, rdlen;
        uint32_t ttl;
        size_t rdata;
        if (osb_dns_read_name(msg, len, &off, name, sizeof name) < 0 ||
            skip_rr_body(msg, len, &off, &type, &cls, &ttl, &rdata, &rdlen) < 0)
            return -1;
    }
    return 0;
}

static unsigned rr_count(const uint8_t *msg)
{
    return (unsigned)get16(msg + 6) + get16(msg + 8) + get16(msg + 10);
}

/* Read the question at offset 12 into q (name, type, class, qend). */
/* The question is the message's first name: a compression pointer there
 * can only point at itself or ahead, and an error reply, which echoes the
 * question alone, would carry a pointer to bytes it does not have. */
static bool has_pointer(const uint8_t *msg, size_t off, size_t end)
{
    while (off < end && msg[off] != 0) {
        if (msg[off] & 0xc0)
            return true;
        off += 1u + msg[off];
    }
    return false;
}

static int read_question(const uint8_t *msg, size_t len, struct osb_dns_query *q)
{
    size_t off = OSB_DNS_HEADER_LEN;
    if (osb_dns_read_name(msg, len, &off, q->name, sizeof q->name) < 0 || off + 4 > len ||
        has_pointer(msg, OSB_DNS_HEADER_LEN, off))
        return -1;
    q->qtype = get16(msg + off);
    q->qclass = get16(msg + off + 2);
    q->qend = off + 4;
    return 0;
}

int osb_dns_parse_query(const uint8_t *msg, size_t len, struct osb_dns_query *q)
{
    memset(q, 0, sizeof *q);
    if (len < OSB_DNS_HEADER_LEN || len > OSB_DNS_MAX_MSG)
        return -1;
    q->id = get16(msg);
    q->flags = get16(msg + 2);
    if (q->flags & FLAG_QR)
        return -1;
    bool one = get16(msg + 4) == 1;
    if (one && read_question(msg, len, q) < 0) {
        q->qend = 0;
        return OSB_DNS_RCODE_FORMERR;
    }
    if (OPCODE(q->flags) != 0)
        return OSB_DNS_RCODE_NOTIMP;
    if (!one || walk_records(msg, len, q->qend, rr_count(msg)) < 0)
        return OSB_DNS_RCODE_FORMERR;
    return 0;
}

size_t osb_dns_reply_error(const uint8_t *query, size_t qlen, const struct osb_dns_query *q,
                           int rcode, uint8_t *out, size_t cap)
{
    size_t qbytes =
        q && q->qend > OSB_DNS_HEADER_LEN && q->qend <= qlen ? q->qend - OSB_DNS_HEADER_LEN : 0;
    if (qlen < OSB_DNS_HEADER_LEN || cap < OSB_DNS_HEADER_LEN + qbytes)
        return 0;
    uint16_t f = get16(query + 2);
    uint16_t flags = (uint16_t)(FLAG_QR | (f & (0xfu << 11)) | (f & (FLAG_RD | FLAG_CD)) | FLAG_RA |
                                (rcode & 0xf));
    memset(out, 0, OSB_DNS_HEADER_LEN);
    memcpy(out, query, 2);
    put16(out + 2, flags);
    put16(out + 4, qbytes ? 1 : 0);
    memcpy(out + OSB_DNS_HEADER_LEN, query + OSB_DNS_HEADER_LEN, qbytes);
    return OSB_DNS_HEADER_LEN + qbytes;
}

int osb_dns_rcode(const uint8_t *msg, size_t len)
{
    return len >= OSB_DNS_HEADER_LEN ? msg[3] & 0xf : -1;
}

int osb_dns_check_response(const uint8_t *msg, size_t len, const struct osb_dns_query *q)
{
    struct osb_dns_query r;
    if (len < OSB_DNS_HEADER_LEN || get16(msg) != q->id || !(get16(msg + 2) & FLAG_QR) ||
        get16(msg + 4) != 1 || read_question(msg, len, &r) < 0)
        return -1;
    if (strcasecmp(r.name, q->name) != 0 || r.qtype != q->qtype || r.qclass != q->qclass)
        return -1;
    return walk_records(msg, len, r.qend, rr_count(msg));
}

struct rr {
    char owner[OSB_DNS_NAME_TEXT];
    uint16_t type, cls, rdlen;
    uint32_t ttl;
    size_t rdata;
};

static bool in_chain(char (*chain)[OSB_DNS_NAME_TEXT], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(chain[i], name) == 0)
            return true;
    return false;
}

/* Grow the chain from the question name through CNAMEs, in whatever order
 * the records come. */
static size_t follow_cnames(const uint8_t *msg, size_t len, const struct rr *rrs, size_t nrr,
                            char (*chain)[OSB_DNS_NAME_TEXT])
{
    size_t n = 1;
    for (bool grew = true; grew && n < MAX_CHAIN;) {
        grew = false;
        for (size_t i = 0; i < nrr && n < MAX_CHAIN; i++) {
            if (rrs[i].type != OSB_DNS_TYPE_CNAME || !in_chain(chain, n, rrs[i].owner))
                continue;
            size_t off = rrs[i].rdata;
            char target[OSB_DNS_NAME_TEXT];
            if (osb_dns_read_name(msg, len, &off, target, sizeof target) < 0 ||
                off != rrs[i].rdata + rrs[i].rdlen || in_chain(chain, n, target))
                continue;
            memcpy(chain[n++], target, sizeof target);
            grew = true;
        }
    }
    return n;
}

static int read_answers(const uint8_t *msg, size_t len, size_t off, unsigned an, struct rr *rrs)
{
    for (unsigned i = 0; i < an; i++) {
        struct rr *r = &rrs[i];
        if (osb_dns_read_name(msg, len, &off, r->owner, sizeof r->owner) < 0 ||
            skip_rr_body(msg, len, &off, &r->type, &r->cls, &r->ttl, &r->rdata, &r->rdlen) < 0)
            return -1;
    }
    return 0;
}

int osb_dns_answer_addrs(const uint8_t *msg, size_t len, osb_dns_addr_fn fn, void *ud)
{
    struct osb_dns_query q;
    if (len < OSB_DNS_HEADER_LEN || get16(msg + 4) != 1 || read_question(msg, len, &q) < 0)
        return -1;
    unsigned an = get16(msg + 6);
    if (an > MAX_RRS)
        an = MAX_RRS;
    _cleanup_free_ struct rr *rrs = osb_xcalloc(an + 1, sizeof *rrs);
    _cleanup_free_ char(*chain)[OSB_DNS_NAME_TEXT] = osb_xcalloc(MAX_CHAIN, sizeof *chain);
    if (read_answers(msg, len, q.qend, an, rrs) < 0)
        return -1;
    memcpy(chain[0], q.name, sizeof q.name);
    size_t n = follow_cnames(msg, len, rrs, an, chain);
    int found = 0;
    for (unsigned i = 0; i < an; i++) {
        const struct rr *r = &rrs[i];
        if (r->cls != OSB_DNS_CLASS_IN || !in_chain(chain, n, r->owner))
            continue;
        if (r->type == OSB_DNS_TYPE_A && r->rdlen == 4)
            fn(ud, AF_INET, msg + r->rdata, r->ttl);
        else if (r->type == OSB_DNS_TYPE_AAAA && r->rdlen == 16)
            fn(ud, AF_INET6, msg + r->rdata, r->ttl);
        else
            continue;
        found++;
    }
    return found;
}
