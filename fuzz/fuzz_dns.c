/* libFuzzer target: DNS messages through src/net/dnsmsg.c, both as a
 * sandbox's query and as an upstream's answer. Invariants: an error reply
 * is itself a well-formed response to the query it answers, and its
 * question parses back to the same name. The source is included directly:
 * the fuzz build links only src/common and src/http. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../src/net/dnsmsg.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_addr(void *ud, int family, const uint8_t *addr, uint32_t ttl)
{
    (void)ttl;
    if ((family != AF_INET && family != AF_INET6) || !addr)
        abort();
    (*(int *)ud)++;
}

static void as_query(const uint8_t *data, size_t size)
{
    struct osb_dns_query q;
    int rc = osb_dns_parse_query(data, size, &q);
    if (rc < 0)
        return;
    uint8_t out[OSB_DNS_HEADER_LEN + 260 + 4];
    size_t n =
        osb_dns_reply_error(data, size, &q, rc ? rc : OSB_DNS_RCODE_NXDOMAIN, out, sizeof out);
    if (n == 0 || osb_dns_rcode(out, n) != (rc ? rc : OSB_DNS_RCODE_NXDOMAIN))
        abort();
    if (q.qend) {
        if (osb_dns_check_response(out, n, &q) != 0)
            abort();
        struct osb_dns_query back;
        size_t off = OSB_DNS_HEADER_LEN;
        if (osb_dns_read_name(out, n, &off, back.name, sizeof back.name) < 0 ||
            strcmp(back.name, q.name) != 0)
            abort();
    }
}

static void as_answer(const uint8_t *data, size_t size)
{
    int seen = 0;
    int n = osb_dns_answer_addrs(data, size, on_addr, &seen);
    if (n >= 0 && n != seen)
        abort();
    if (size >= OSB_DNS_HEADER_LEN) {
        struct osb_dns_query q = {
            .id = (uint16_t)(data[0] << 8 | data[1]), .qtype = 1, .qclass = 1};
        snprintf(q.name, sizeof q.name, "allowed.test");
        (void)osb_dns_check_response(data, size, &q);
    }
    char name[OSB_DNS_NAME_TEXT];
    for (size_t off = 0; off < size && off < 64; off++) {
        size_t o = off;
        if (osb_dns_read_name(data, size, &o, name, sizeof name) == 0 &&
            (o <= off || o > size || strlen(name) >= sizeof name))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_query(data, size);
    as_answer(data, size);
    return 0;
}
