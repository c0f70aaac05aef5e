/* DNS wire messages (RFC 1035) as far as the egress forwarder needs them:
 * validate a client's query, build error replies that echo the question,
 * check an upstream response against its query, and pull the addresses of
 * the queried name out of an answer (following CNAME chains). Pure: no I/O.
 * Every function bounds-checks against the given length, so arbitrary bytes
 * are safe input (fuzz/fuzz_dns.c). */
#ifndef OSB_NET_DNSMSG_H
#define OSB_NET_DNSMSG_H
#include <stddef.h>
#include <stdint.h>
#include "common/err.h"

#define OSB_DNS_HEADER_LEN 12
/* A message over TCP has a 16-bit length prefix. */
#define OSB_DNS_MAX_MSG 65535
/* Text form of a name: 255 wire bytes, each odd byte escaped as \DDD. */
#define OSB_DNS_NAME_TEXT 1024

enum {
    OSB_DNS_TYPE_A = 1,
    OSB_DNS_TYPE_CNAME = 5,
    OSB_DNS_TYPE_AAAA = 28,
    OSB_DNS_CLASS_IN = 1,
};

enum {
    OSB_DNS_RCODE_NOERROR = 0,
    OSB_DNS_RCODE_FORMERR = 1,
    OSB_DNS_RCODE_SERVFAIL = 2,
    OSB_DNS_RCODE_NXDOMAIN = 3,
    OSB_DNS_RCODE_NOTIMP = 4,
    OSB_DNS_RCODE_REFUSED = 5,
};

struct osb_dns_query {
    uint16_t id;
    uint16_t flags;
    /* Labels joined by '.', no trailing dot ("" for the root). Bytes other
     * than printable ASCII, '.' and '\' inside a label appear as \DDD, so
     * a label "a.b" never reads as two labels. Case is kept. */
    char name[OSB_DNS_NAME_TEXT];
    uint16_t qtype;
    uint16_t qclass;
    size_t qend; /* offset just past the question: bytes [12, qend) */
};

/* Validate a query from a client. Returns 0 with q filled; -1 when the
 * packet must be dropped without an answer (shorter than a header, or a
 * response: answering those could loop); or an rcode to answer with
 * (FORMERR: not exactly one well-formed question or a malformed rest;
 * NOTIMP: an opcode other than QUERY). On an rcode, q->qend is 0 unless the
 * question itself parsed (then it can be echoed). */
OSB_MUST_CHECK int osb_dns_parse_query(const uint8_t *msg, size_t len, struct osb_dns_query *q);

/* Build an answer-less reply to `query` with the given rcode into out
 * (cap >= OSB_DNS_HEADER_LEN + question length): same id, QR set, opcode,
 * RD and CD copied, RA set, the question echoed when q && q->qend. Returns
 * the length, or 0 when cap is too small or query is shorter than a header. */
size_t osb_dns_reply_error(const uint8_t *query, size_t qlen, const struct osb_dns_query *q,
                           int rcode, uint8_t *out, size_t cap);

/* Check that msg is a well-formed response to q: same id, QR set, the same
 * single question (name case-insensitive, type, class), and every record
 * in bounds. Returns 0 or -1. */
OSB_MUST_CHECK int osb_dns_check_response(const uint8_t *msg, size_t len,
                                          const struct osb_dns_query *q);

/* The rcode of a message of at least a header's length. */
OSB_MUST_CHECK int osb_dns_rcode(const uint8_t *msg, size_t len);

/* Call fn for each A/AAAA record (class IN) of the answer section owned by
 * the question name or by a name reached from it through CNAME records of
 * the answer section, in any order. family is AF_INET/AF_INET6, addr 4 or
 * 16 bytes. Returns how many addresses were reported, or -1 when the
 * message is malformed (fn may have been called before). */
typedef void (*osb_dns_addr_fn)(void *ud, int family, const uint8_t *addr, uint32_t ttl);
OSB_MUST_CHECK int osb_dns_answer_addrs(const uint8_t *msg, size_t len, osb_dns_addr_fn fn,
                                        void *ud);

/* Read the (possibly compressed) name at *off into text form (see
 * osb_dns_query.name); *off moves past it. Returns 0 or -1. Exposed for
 * tests. */
OSB_MUST_CHECK int osb_dns_read_name(const uint8_t *msg, size_t len, size_t *off, char *out,
                                     size_t cap);

#endif
