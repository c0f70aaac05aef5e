/* libFuzzer target for the streaming multipart parser. Besides "no crash,
 * no leak", it checks a differential property: the body fed whole and fed
 * in pseudo-random chunks must give the same events and the same result.
 * Input: byte 0 = flags (bit 0: the first line is the Content-Type,
 * bits 1-7: chunking seed), then the body. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "http/multipart.h"
#include "must.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_begin(void *ud, const struct osb_multipart_part *p)
{
    MUST(osb_buf_addf(ud, "<%s|%s|%s>", p->name, p->filename ? p->filename : "-",
                      p->content_type ? p->content_type : "-"));
    return 0;
}

static int on_data(void *ud, const char *d, size_t n)
{
    if (n == 0)
        abort(); /* empty data callbacks are a contract violation */
    MUST(osb_buf_add(ud, d, n));
    return 0;
}

static int on_end(void *ud)
{
    MUST(osb_buf_adds(ud, "</>"));
    return 0;
}

static const struct osb_multipart_cbs cbs = {on_begin, on_data, on_end};

/* Parses body in chunks (seed 0 = whole); returns the result, fills log. */
static int run(const char *ct, const char *body, size_t len, unsigned seed, struct osb_buf *log,
               struct osb_err *err)
{
    osb_buf_init(log, 1 << 26);
    MUST(osb_buf_adds(log, ""));
    struct osb_multipart *mp = osb_multipart_new(ct, &cbs, log, err);
    if (!mp)
        return -2;
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t n = seed ? 1 + (seed = seed * 1103515245 + 12345) % 37 : len;
        if (n > len - at)
            n = len - at;
        rc = osb_multipart_feed(mp, body + at, n, err);
        at += n;
    }
    if (rc == 0)
        rc = osb_multipart_finish(mp, err);
    osb_multipart_free(mp);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char ct[512] = "multipart/form-data; boundary=XyZ";
    if (flags & 1) {
        const char *nl = memchr(body, '\n', len < 400 ? len : 400);
        if (!nl)
            return 0;
        snprintf(ct, sizeof ct, "%.*s", (int)(nl - body), body);
        len -= (size_t)(nl + 1 - body);
        body = nl + 1;
    }
    struct osb_buf a, b;
    struct osb_err ea = {0}, eb = {0};
    int ra = run(ct, body, len, 0, &a, &ea);
    int rb = run(ct, body, len, (flags >> 1) | 1u, &b, &eb);
    if (ra != rb || a.len != b.len || memcmp(a.data, b.data, a.len) != 0 ||
        strcmp(ea.msg, eb.msg) != 0) {
        fprintf(stderr, "whole: %d %s\nsplit: %d %s\n", ra, ea.msg, rb, eb.msg);
        abort();
    }
    osb_buf_free(&a);
    osb_buf_free(&b);
    return 0;
}
