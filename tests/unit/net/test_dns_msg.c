/* src/net/dnsmsg: query validation, error replies, response checks, and
 * address extraction through CNAME chains. Messages are built by hand. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/dnsmsg.h"
#include "tap.h"

struct msg {
    uint8_t b[4096];
    size_t n;
};

static void u8(struct msg *m, unsigned v)
{
    m->b[m->n++] = (uint8_t)v;
}
static void u16(struct msg *m, unsigned v)
{
    u8(m, v >> 8);
    u8(m, v & 0xff);
}
static void u32(struct msg *m, uint32_t v)
{
    u16(m, v >> 16);
    u16(m, v & 0xffff);
}

/* A dotted name in wire form (no compression). */
static void name(struct msg *m, const char *s)
{
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t l = dot ? (size_t)(dot - s) : strlen(s);
        u8(m, (unsigned)l);
        memcpy(m->b + m->n, s, l);
        m->n += l;
        s += l + (dot ? 1 : 0);
    }
    u8(m, 0);
}

static void header(struct msg *m, unsigned id, unsigned flags, unsigned qd, unsigned an,
                   unsigned ns, unsigned ar)
{
    m->n = 0;
    u16(m, id);
    u16(m, flags);
    u16(m, qd);
    u16(m, an);
    u16(m, ns);
    u16(m, ar);
}

static void query(struct msg *m, unsigned id, const char *qname, unsigned qtype)
{
    header(m, id, 0x0100, 1, 0, 0, 0);
    name(m, qname);
    u16(m, qtype);
    u16(m, 1);
}

/* RR with owner as a compression pointer (ptr != 0) or a plain name. */
static void rr_head(struct msg *m, const char *owner, unsigned ptr, unsigned type, uint32_t ttl)
{
    if (ptr)
        u16(m, 0xc000 | ptr);
    else
        name(m, owner);
    u16(m, type);
    u16(m, 1);
    u32(m, ttl);
}

static void rr_a(struct msg *m, const char *owner, unsigned ptr, const char *ip, uint32_t ttl)
{
    rr_head(m, owner, ptr, 1, ttl);
    u16(m, 4);
    inet_pton(AF_INET, ip, m->b + m->n);
    m->n += 4;
}

static void rr_aaaa(struct msg *m, const char *owner, unsigned ptr, const char *ip, uint32_t ttl)
{
    rr_head(m, owner, ptr, 28, ttl);
    u16(m, 16);
    inet_pton(AF_INET6, ip, m->b + m->n);
    m->n += 16;
}

static void rr_cname(struct msg *m, const char *owner, unsigned ptr, const char *target)
{
    rr_head(m, owner, ptr, 5, 60);
    size_t at = m->n;
    u16(m, 0);
    name(m, target);
    m->b[at] = (uint8_t)((m->n - at - 2) >> 8);
    m->b[at + 1] = (uint8_t)(m->n - at - 2);
}

static void test_parse_query(void)
{
    struct msg m;
    struct osb_dns_query q;
    query(&m, 0x1234, "Allowed.TEST", 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), 0, "valid query");
    IS_INT(q.id, 0x1234, "id");
    IS_STR(q.name, "Allowed.TEST", "name, case kept");
    IS_INT(q.qtype, 1, "qtype");
    IS_INT(q.qclass, 1, "qclass");
    IS_INT(q.qend, m.n, "qend = end of question");

    query(&m, 1, "", 2);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), 0, "root query");
    IS_STR(q.name, "", "root is empty text");

    /* a label with a dot and a space inside is escaped, not split */
    header(&m, 1, 0x0100, 1, 0, 0, 0);
    u8(&m, 3);
    memcpy(m.b + m.n, "a.b", 3);
    m.n += 3;
    u8(&m, 3);
    memcpy(m.b + m.n, "c d", 3);
    m.n += 3;
    u8(&m, 0);
    u16(&m, 1);
    u16(&m, 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), 0, "odd bytes parse");
    IS_STR(q.name, "a\\046b.c\\032d", "odd bytes escaped as \\DDD");

    /* EDNS OPT in the additional section is fine */
    query(&m, 7, "x.test", 28);
    m.b[11] = 1;
    u8(&m, 0);
    u16(&m, 41);
    u16(&m, 1232);
    u32(&m, 0);
    u16(&m, 0);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), 0, "query with OPT record");
}

static void test_bad_queries(void)
{
    struct msg m;
    struct osb_dns_query q;
    query(&m, 1, "a.test", 1);
    IS_INT(osb_dns_parse_query(m.b, 11, &q), -1, "shorter than a header: drop");
    m.b[2] |= 0x80;
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), -1, "a response: drop");
    query(&m, 1, "a.test", 1);
    IS_INT(osb_dns_parse_query(m.b, m.n - 1, &q), OSB_DNS_RCODE_FORMERR, "truncated question");
    IS_INT(q.qend, 0, "no question to echo");
    query(&m, 1, "a.test", 1);
    m.b[5] = 2;
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "two questions");
    m.b[5] = 0;
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "no question");
    query(&m, 1, "a.test", 1);
    m.b[2] = 0x28; /* opcode 5 (UPDATE) */
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_NOTIMP, "opcode UPDATE: NOTIMP");
    OK(q.qend == m.n, "question kept for the echo");
    query(&m, 1, "a.test", 1);
    m.b[11] = 1; /* claims an additional record that is not there */
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "missing record");

    /* compression loop: pointer to itself */
    header(&m, 1, 0x0100, 1, 0, 0, 0);
    u16(&m, 0xc000 | 12);
    u16(&m, 1);
    u16(&m, 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "self pointer");
    /* forward pointer */
    header(&m, 1, 0x0100, 1, 0, 0, 0);
    u16(&m, 0xc000 | 20);
    u16(&m, 1);
    u16(&m, 1);
    u8(&m, 0);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "forward pointer");
    /* a question whose name ends in a pointer to a later, valid name (the
     * echo of an error reply would lose what it points at; found by fuzzing) */
    header(&m, 1, 0x0100, 1, 0, 0, 1);
    u8(&m, 1);
    u8(&m, 'x');
    u16(&m, 0xc000 | 21);
    u16(&m, 1);
    u16(&m, 1);
    name(&m, "a.test");
    u16(&m, 1);
    u16(&m, 1);
    u8(&m, 0);
    u8(&m, 0);
    u8(&m, 0);
    u8(&m, 0);
    u16(&m, 0);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR,
           "a compression pointer in the question");
    IS_INT(q.qend, 0, "  no question to echo");
    /* label type 0x40 */
    header(&m, 1, 0x0100, 1, 0, 0, 0);
    u8(&m, 0x41);
    u8(&m, 'a');
    u8(&m, 0);
    u16(&m, 1);
    u16(&m, 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "extended label type");
    /* a name longer than 255 wire bytes */
    header(&m, 1, 0x0100, 1, 0, 0, 0);
    for (int i = 0; i < 5; i++) {
        u8(&m, 63);
        memset(m.b + m.n, 'a', 63);
        m.n += 63;
    }
    u8(&m, 0);
    u16(&m, 1);
    u16(&m, 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), OSB_DNS_RCODE_FORMERR, "name > 255 bytes");
    /* 253 text characters is fine */
    char longname[260] = "";
    for (size_t i = 0, l = 0; i < 4; i++, l = strlen(longname))
        snprintf(longname + l, sizeof longname - l, "%s",
                 i ? ".aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   : "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    query(&m, 1, longname, 1);
    IS_INT(osb_dns_parse_query(m.b, m.n, &q), 0, "253-character name");
    IS_INT(strlen(q.name), 253, "text length");
}

static void test_reply_error(void)
{
    struct msg m;
    struct osb_dns_query q;
    query(&m, 0xbeef, "denied.test", 1);
    m.b[3] = 0x10; /* CD */
    MUST(osb_dns_parse_query(m.b, m.n, &q));
    uint8_t out[600];
    size_t n = osb_dns_reply_error(m.b, m.n, &q, OSB_DNS_RCODE_NXDOMAIN, out, sizeof out);
    IS_INT(n, m.n, "reply = header + question");
    IS_INT(out[0] << 8 | out[1], 0xbeef, "same id");
    IS_INT(out[2], 0x81, "QR and RD");
    IS_INT(out[3], 0x93, "RA, CD, NXDOMAIN");
    IS_INT(out[5], 1, "one question");
    IS_INT(out[7] + out[9] + out[11], 0, "no records");
    OK(memcmp(out + 12, m.b + 12, m.n - 12) == 0, "question echoed");
    IS_INT(osb_dns_rcode(out, n), 3, "rcode reads back");
    IS_INT(osb_dns_reply_error(m.b, m.n, &q, 3, out, 20), 0, "too small a buffer");
    n = osb_dns_reply_error(m.b, m.n, NULL, OSB_DNS_RCODE_FORMERR, out, sizeof out);
    IS_INT(n, 12, "no question: header only");
    IS_INT(out[5], 0, "qdcount 0");
}

struct seen {
    int n;
    char addrs[16][64];
    uint32_t ttl[16];
};

static void on_addr(void *ud, int family, const uint8_t *addr, uint32_t ttl)
{
    struct seen *s = ud;
    if (s->n < 16) {
        inet_ntop(family, addr, s->addrs[s->n], sizeof s->addrs[0]);
        s->ttl[s->n++] = ttl;
    }
}

static void test_answers(void)
{
    struct msg m;
    struct osb_dns_query q;
    query(&m, 42, "cname.test", 1);
    MUST(osb_dns_parse_query(m.b, m.n, &q));
    /* answer: unrelated A first, then the A of the target, then the
     * CNAME (out of order), then an AAAA of the target via a pointer */
    header(&m, 42, 0x8180, 1, 5, 0, 0);
    name(&m, "cname.test");
    u16(&m, 1);
    u16(&m, 1);
    rr_a(&m, "other.test", 0, "10.99.0.66", 5);
    size_t tgt = m.n;
    rr_a(&m, "allowed.TEST", 0, "10.99.0.10", 300);
    rr_cname(&m, NULL, 12, "mid.test");
    rr_cname(&m, "mid.test", 0, "allowed.test");
    rr_aaaa(&m, NULL, (unsigned)tgt, "2001:db8::10", 77);
    IS_INT(osb_dns_check_response(m.b, m.n, &q), 0, "response matches the query");
    struct seen s = {0};
    IS_INT(osb_dns_answer_addrs(m.b, m.n, on_addr, &s), 2, "two addresses via the chain");
    IS_STR(s.addrs[0], "10.99.0.10", "A of the chain's end");
    IS_INT(s.ttl[0], 300, "its TTL");
    IS_STR(s.addrs[1], "2001:db8::10", "AAAA via a compressed owner");
    IS_INT(s.ttl[1], 77, "AAAA TTL");

    /* mismatches */
    struct osb_dns_query q2 = q;
    q2.id = 43;
    IS_INT(osb_dns_check_response(m.b, m.n, &q2), -1, "wrong id");
    q2 = q;
    q2.qtype = 28;
    IS_INT(osb_dns_check_response(m.b, m.n, &q2), -1, "wrong type");
    q2 = q;
    snprintf(q2.name, sizeof q2.name, "CNAME.test");
    IS_INT(osb_dns_check_response(m.b, m.n, &q2), 0, "name compared case-insensitively");
    snprintf(q2.name, sizeof q2.name, "other.test");
    IS_INT(osb_dns_check_response(m.b, m.n, &q2), -1, "wrong name");
    IS_INT(osb_dns_check_response(m.b, m.n - 1, &q), -1, "truncated record");
    m.b[2] &= 0x7f;
    IS_INT(osb_dns_check_response(m.b, m.n, &q), -1, "not a response");

    /* a CNAME loop ends; the unrelated A is never reported */
    header(&m, 1, 0x8180, 1, 3, 0, 0);
    name(&m, "a.test");
    u16(&m, 1);
    u16(&m, 1);
    rr_cname(&m, "a.test", 0, "b.test");
    rr_cname(&m, "b.test", 0, "a.test");
    rr_a(&m, "c.test", 0, "1.2.3.4", 1);
    memset(&s, 0, sizeof s);
    IS_INT(osb_dns_answer_addrs(m.b, m.n, on_addr, &s), 0, "CNAME loop: nothing");

    /* NXDOMAIN with no answers */
    header(&m, 1, 0x8183, 1, 0, 0, 0);
    name(&m, "x.test");
    u16(&m, 1);
    u16(&m, 1);
    IS_INT(osb_dns_answer_addrs(m.b, m.n, on_addr, &s), 0, "no answers");
    IS_INT(osb_dns_rcode(m.b, m.n), 3, "NXDOMAIN rcode");
    IS_INT(osb_dns_answer_addrs(m.b, 5, on_addr, &s), -1, "short message");

    /* an A record with the wrong length is ignored */
    header(&m, 1, 0x8180, 1, 1, 0, 0);
    name(&m, "x.test");
    u16(&m, 1);
    u16(&m, 1);
    rr_head(&m, NULL, 12, 1, 9);
    u16(&m, 3);
    u8(&m, 1);
    u8(&m, 2);
    u8(&m, 3);
    IS_INT(osb_dns_answer_addrs(m.b, m.n, on_addr, &s), 0, "bad A length ignored");
}

int main(void)
{
    test_parse_query();
    test_bad_queries();
    test_reply_error();
    test_answers();
    return tap_done();
}
