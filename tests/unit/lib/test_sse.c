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

    /* Other spellings the SDKs take: no blank line between events, several
     * spaces after "data:", bare CR LF blank lines, a non-object line. */
    const char *in2 = "{\"type\":\"a\"}\n{\"type\":\"b\"}\r\n\r\n\r\n"
                      "data:   {\"type\":\"c\"}\n\n[1,2]\n\"str\"\ndata:\n\n";
    for (size_t step = 1; step <= 5; step += 4) {
        struct seen s2 = {0};
        feed_split(in2, step, &s2, &rc);
        IS_INT(rc, 0, "other spellings");
        IS_STR(s2.all.p, "{\"type\":\"a\"}|{\"type\":\"b\"}|{\"type\":\"c\"}|",
               "one event per JSON object line");
        osbcl_sb_free(&s2.all);
    }
    struct seen s3 = {.stop_at = 4};
    feed_split(in, 2, &s3, &rc);
    IS_INT(rc, 1, "a stop at the last event, the one without its blank line");
    osbcl_sb_free(&s3.all);

    struct osbcl_sse sse = {0};
    char *big = malloc(OSBCL_SSE_MAX_EVENT + 2);
    memset(big, 'x', OSBCL_SSE_MAX_EVENT + 1);
    big[0] = '{';
    struct seen t = {0};
    IS_INT(osbcl_sse_feed(&sse, big, OSBCL_SSE_MAX_EVENT + 1, on_ev, &t), OSBC_E_PROTOCOL,
           "a line over the cap is a protocol error");
    osbcl_sse_free(&sse);
    /* The cap holds for a line that grows over many feeds too ... */
    memset(&sse, 0, sizeof sse);
    int r = 0;
    for (size_t i = 0; i < OSBCL_SSE_MAX_EVENT + 1 && !r; i += 65536)
        r = osbcl_sse_feed(
            &sse, big + i,
            OSBCL_SSE_MAX_EVENT + 1 - i < 65536 ? OSBCL_SSE_MAX_EVENT + 1 - i : 65536, on_ev, &t);
    IS_INT(r, OSBC_E_PROTOCOL, "a line over the cap, fed in pieces");
    osbcl_sse_free(&sse);
    /* ... and a line of exactly the cap is an event. */
    memset(&sse, 0, sizeof sse);
    big[OSBCL_SSE_MAX_EVENT] = '\n';
    IS_INT(osbcl_sse_feed(&sse, big, OSBCL_SSE_MAX_EVENT + 1, on_ev, &t), 0, "a line at the cap");
    IS_INT(t.n, 1, "is delivered");
    osbcl_sb_free(&t.all);
    osbcl_sse_free(&sse);
    free(big);
    return tap_done();
}
