/* The event-stream reader: splits lines, strips "data:" and hands each
 * JSON object line to the callback; anything else (SSE comments, event:,
 * id:, retry: fields, blank lines) is skipped. */
#include <string.h>

#include "sse.h"

static int line_done(struct osbcl_sse *s, osbcl_sse_fn fn, void *ud)
{
    char *p = s->line.p;
    size_t n = s->line.len;
    s->line.len = 0;
    if (!p)
        return 0;
    if (n && p[n - 1] == '\r')
        n--;
    if (n >= 5 && !memcmp(p, "data:", 5)) {
        p += 5;
        n -= 5;
    }
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    /* Events are JSON objects; SSE comments and event:/id:/retry: fields are not. */
    if (!n || *p != '{')
        return 0;
    p[n] = 0;
    return fn(ud, p, n) ? 1 : 0;
}

int osbcl_sse_feed(struct osbcl_sse *s, const char *data, size_t len, osbcl_sse_fn fn, void *ud)
{
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (s->line.len + take > OSBCL_SSE_MAX_EVENT)
            return OSBC_E_PROTOCOL;
        osbcl_sb_add(&s->line, data, take);
        if (s->line.oom)
            return OSBC_E_NOMEM;
        if (!nl)
            return 0;
        data += take + 1;
        len -= take + 1;
        int rc = line_done(s, fn, ud);
        if (rc)
            return rc;
    }
    return 0;
}

int osbcl_sse_end(struct osbcl_sse *s, osbcl_sse_fn fn, void *ud)
{
    return line_done(s, fn, ud);
}

void osbcl_sse_free(struct osbcl_sse *s)
{
    osbcl_sb_free(&s->line);
}
