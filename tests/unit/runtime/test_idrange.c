/* The uid/gid range pool of user-namespaced sandboxes (native/idrange.h). */
#include <string.h>

#include "runtime/native/idrange.h"
#include "tap.h"

static void test_parse(void)
{
    uint32_t a = 0, n = 0;
    struct osb_err err = {0};
    OK(osb_idr_parse("100000:6553600", &a, &n, &err) == 0, "parse: the documented example");
    IS_INT(a, 100000, "parse: start");
    IS_INT(n, 6553600, "parse: count");
    static const char *const bad[] = {"",         "100000",           "100000:",  ":65536",
                                      "0:65536",  "100000:65535",     "1:0",      "-1:65536",
                                      "1:65536x", "4294901760:65536", "1 :65536", "1:+65536"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct osb_err e = {0};
        char what[80];
        snprintf(what, sizeof what, "parse: `%s` refused", bad[i]);
        OK(osb_idr_parse(bad[i], &a, &n, &e) < 0 && e.code == OSB_E_INVALID, what);
    }
    struct osb_err e = {0};
    OK(osb_idr_parse("0:65536", &a, &n, &e) < 0 && strstr(e.msg, "root"),
       "parse: the message says why start 0 is refused");
    OK(osb_idr_parse("65535:65536", &a, &n, &e) < 0 && strstr(e.msg, "at least 65536"),
       "parse: a start below 65536 is refused (the host's own users)");
    OK(osb_idr_parse("65536:65536", &a, &n, &e) == 0 && a == 65536,
       "parse: 65536 is the lowest start");
    OK(osb_idr_parse("4294901759:65536", &a, &n, &e) == 0,
       "parse: a range ending just below 2^32 - 1 is accepted");
    OK(osb_idr_parse("4294901760:65536", &a, &n, &e) < 0 && strstr(e.msg, "4294967295"),
       "parse: one past it is refused (overflow into the invalid id)");
}

static void test_alloc(void)
{
    struct osb_idr r;
    struct osb_err err = {0};
    osb_idr_init(&r, 100000, 3 * OSB_IDR_SLOT);
    uint32_t a, b, c, again;
    OK(osb_idr_alloc(&r, "a", &a, &err) == 0 && a == 100000, "alloc: the first slot first");
    OK(osb_idr_alloc(&r, "b", &b, &err) == 0 && b == 100000 + OSB_IDR_SLOT, "alloc: the next");
    OK(osb_idr_alloc(&r, "a", &again, &err) == 0 && again == a, "alloc: idempotent per id");
    OK(osb_idr_alloc(&r, "c", &c, &err) == 0 && c == 100000 + 2 * OSB_IDR_SLOT, "alloc: the last");
    struct osb_err full = {0};
    OK(osb_idr_alloc(&r, "d", &again, &full) < 0 && full.code == OSB_E_EXHAUSTED,
       "alloc: a full pool refuses");
    IS_INT(osb_idr_used(&r), 3, "alloc: three in use");
    osb_idr_release(&r, "b");
    OK(osb_idr_alloc(&r, "d", &again, &err) == 0 && again == b, "release: the slot is reused");
    osb_idr_release(&r, "nobody");
    osb_idr_release(&r, "");
    IS_INT(osb_idr_used(&r), 3, "release: of an unknown id changes nothing");
    osb_idr_free(&r);
}

/* What open does with the records it finds (a restart). */
static void test_mark(void)
{
    struct osb_idr r;
    struct osb_err err = {0};
    osb_idr_init(&r, 100000, 4 * OSB_IDR_SLOT);
    OK(osb_idr_mark(&r, "x", 100000 + 2 * OSB_IDR_SLOT, &err) == 0, "mark: a recorded slot");
    OK(osb_idr_mark(&r, "x", 100000 + 2 * OSB_IDR_SLOT, &err) == 0, "mark: twice for one id");
    struct osb_err e1 = {0}, e2 = {0}, e3 = {0}, e4 = {0};
    OK(osb_idr_mark(&r, "y", 100000 + 2 * OSB_IDR_SLOT, &e1) < 0 && e1.code == OSB_E_EXISTS,
       "mark: a slot another sandbox holds is refused");
    OK(osb_idr_mark(&r, "y", 100001, &e2) < 0 && e2.code == OSB_E_INVALID,
       "mark: a misaligned start is refused");
    OK(osb_idr_mark(&r, "y", 100000 + 4 * OSB_IDR_SLOT, &e3) < 0, "mark: past the pool refused");
    OK(osb_idr_mark(&r, "y", 99999, &e4) < 0, "mark: below the pool refused");
    uint32_t a, b, c;
    OK(osb_idr_alloc(&r, "n1", &a, &err) == 0 && a == 100000, "after a restart: slot 0");
    OK(osb_idr_alloc(&r, "n2", &b, &err) == 0 && b == 100000 + OSB_IDR_SLOT, "then slot 1");
    OK(osb_idr_alloc(&r, "n3", &c, &err) == 0 && c == 100000 + 3 * OSB_IDR_SLOT,
       "a live sandbox's recorded slot is never handed out");
    osb_idr_free(&r);
}

int main(void)
{
    test_parse();
    test_alloc();
    test_mark();
    return tap_done();
}
