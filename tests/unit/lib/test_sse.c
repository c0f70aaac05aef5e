/* The event-stream reader: execd's "<json>\n\n", "data:" lines, CRLF,
 * split anywhere, junk lines skipped, the size cap. */
#include <stdlib.h>

#include "sse.h"
#include "tap.h"

struct seen {
    struct osbcl_sb all;
    int n, stop_at;
};

static int on_ev(void *ud, const char *json, size_t len)
{
    struct seen *s = ud;
    osbcl_sb_add(&s->all, json, len);
    osbcl_sb_adds(&s->all, "|");
    return ++s->n == s->stop_at;
}

static void feed_split(const char *in, size_t step, struct seen *s, int *rc)
{
    struct osbcl_sse sse = {0};
    size_t len = strlen(in);
    *rc = 0;
    for (size_t i = 0; i < len && !*rc; i += step)
        *rc = osbcl_sse_feed(&sse, in + i, len - i < step ? len - i : step, on_ev, s);
    if (!*rc)
        *rc = osbcl_sse_end(&sse, on_ev, s);
    osbcl_sse_free(&sse);
}

int main(void)
{
    const char *in = "{\"type\":\"init\",\"text\":\"a\"}\n\n"
                     "data: {\"type\":\"stdout\",\"text\":\"x\\ny\"}\r\n\r\n"
                     ": a comment\nevent: message\nid: 7\n\n"
                     "data:{\"type\":\"execution_complete\"}\n\n"
                     "{\"type\":\"ping\"}"; /* the last one without its blank line */
    const char *want = "{\"type\":\"init\",\"text\":\"a\"}|{\"type\":\"stdout\",\"text\":"
                       "\"x\\ny\"}|{\"type\":\"execution_complete\"}|{\"type\":\"ping\"}|";
    for (size_t step = 1; step <= 7; step++) {
        struct seen s = {0};
        int rc;
        feed_split(in, step, &s, &rc);
        char name[64];
        snprintf(name, sizeof name, "four events, fed %zu byte(s) at a time", step);
        IS_INT(rc, 0, name);
        IS_STR(s.all.p, want, name);
        osbcl_sb_free(&s.all);
    }
    struct seen s = {.stop_at = 2};
    int rc;
    feed_split(in, 3, &s, &rc);
    IS_INT(rc, 1, "a callback's stop ends the feed");
    IS_INT(s.n, 2, "no event after the stop");
    osbcl_sb_free(&s.all);

    struct osbcl_sse sse = {0};
    char *big = malloc(OSBCL_SSE_MAX_EVENT + 2);
    memset(big, 'x', OSBCL_SSE_MAX_EVENT + 1);
    big[0] = '{';
    struct seen t = {0};
    IS_INT(osbcl_sse_feed(&sse, big, OSBCL_SSE_MAX_EVENT + 1, on_ev, &t), OSBC_E_PROTOCOL,
           "a line over the cap is a protocol error");
    osbcl_sse_free(&sse);
    free(big);
    return tap_done();
}
