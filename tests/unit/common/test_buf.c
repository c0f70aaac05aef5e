/* src/common/buf: the cap is exact, a refused append changes nothing, and
 * sizes that would wrap around are refused instead of truncated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tap.h"

static void test_exact_cap(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 8);
    OK(osb_buf_add(&b, "12345678", 8) == 0, "filling to exactly max succeeds");
    IS_INT(b.len, 8, "full length");
    OK(osb_buf_add(&b, "", 0) == 0, "an empty append to a full buffer succeeds");
    OK(osb_buf_add(&b, "9", 1) < 0, "one byte past max fails");
    OK(osb_buf_adds(&b, "9") < 0, "adds past max fails");
    OK(osb_buf_addf(&b, "%d", 9) < 0, "addf past max fails");
    IS_STR(b.data, "12345678", "refused appends leave the content");
    IS_INT(b.len, 8, "refused appends leave the length");
    osb_buf_consume(&b, 3);
    OK(osb_buf_adds(&b, "abc") == 0, "room made by consume is usable");
    IS_STR(b.data, "45678abc", "content after consume and append");
    osb_buf_free(&b);
}

static void test_partial_refused(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 10);
    OK(osb_buf_adds(&b, "hello") == 0, "first piece fits");
    OK(osb_buf_adds(&b, "world!") < 0, "a piece that fits only in part is refused whole");
    IS_STR(b.data, "hello", "nothing of the refused piece is kept");
    OK(osb_buf_addf(&b, "%s", "01234") == 0, "a piece that fits afterwards is taken");
    IS_STR(b.data, "hello01234", "content");
    osb_buf_free(&b);
}

static void test_wraparound(void)
{
    struct osb_buf b;
    osb_buf_init(&b, SIZE_MAX);
    OK(osb_buf_adds(&b, "x") == 0, "unbounded buffer takes a byte");
    OK(osb_buf_add(&b, "y", SIZE_MAX) < 0, "a length that wraps size_t is refused");
    OK(osb_buf_add(&b, "y", SIZE_MAX - 1) < 0, "a length leaving no room for the NUL is refused");
    IS_STR(b.data, "x", "buffer unchanged after refused huge appends");
    osb_buf_free(&b);
}

static void test_zero_cap_and_steal(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 0);
    OK(osb_buf_add(&b, "", 0) == 0, "max 0 takes an empty append");
    OK(osb_buf_adds(&b, "a") < 0, "max 0 refuses a byte");
    size_t n = 99;
    char *s = osb_buf_steal(&b, &n);
    OK(s != NULL, "steal of an empty buffer is never NULL");
    IS_STR(s, "", "steal of an empty buffer is the empty string");
    IS_INT(n, 0, "steal of an empty buffer: length 0");
    free(s);
    osb_buf_init(&b, 4);
    OK(osb_buf_adds(&b, "abcd") == 0, "fill");
    s = osb_buf_steal(&b, &n);
    IS_STR(s, "abcd", "steal of a full buffer keeps every byte");
    free(s);
    OK(b.data == NULL && b.len == 0, "the buffer is empty after steal");
    OK(osb_buf_adds(&b, "wxyz") == 0, "and usable again up to its max");
    OK(osb_buf_adds(&b, "!") < 0, "with the same max");
    osb_buf_free(&b);
}

int main(void)
{
    test_exact_cap();
    test_partial_refused();
    test_wraparound();
    test_zero_cap_and_steal();
    return tap_done();
}
