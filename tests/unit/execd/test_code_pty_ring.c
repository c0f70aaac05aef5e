/* The PTY replay ring (pty.h): absolute offsets, wrap-around, clamping. */
#include <stdlib.h>
#include <string.h>

#include "execd/pty.h"
#include "tap.h"

static char *since(struct osb_pty_ring *r, uint64_t from, uint64_t *start, size_t *n)
{
    char *out;
    *n = osb_pty_ring_since(r, from, start, &out);
    if (out) {
        out = realloc(out, *n + 1);
        out[*n] = '\0';
    }
    return out;
}

static void test_linear(void)
{
    struct osb_pty_ring r;
    osb_pty_ring_init(&r, 16);
    uint64_t st;
    size_t n;
    char *s = since(&r, 0, &st, &n);
    OK(s == NULL && n == 0, "empty ring: nothing to replay");
    osb_pty_ring_add(&r, "hello ", 6);
    osb_pty_ring_add(&r, "world", 5);
    IS_INT(r.total, 11, "total counts every byte");
    s = since(&r, 0, &st, &n);
    IS_STR(s, "hello world", "since 0 replays everything");
    IS_INT(st, 0, "start offset 0");
    free(s);
    s = since(&r, 6, &st, &n);
    IS_STR(s, "world", "since 6 replays the tail");
    IS_INT(st, 6, "start offset 6");
    free(s);
    s = since(&r, 11, &st, &n);
    OK(s == NULL && n == 0, "since == total: nothing");
    s = since(&r, 1000, &st, &n);
    OK(s == NULL && n == 0, "since past the end: nothing");
    osb_pty_ring_free(&r);
}

static void test_wrap(void)
{
    struct osb_pty_ring r;
    osb_pty_ring_init(&r, 8);
    uint64_t st;
    size_t n;
    osb_pty_ring_add(&r, "abcdef", 6);
    osb_pty_ring_add(&r, "ghij", 4); /* 10 bytes: keeps "cdefghij" */
    char *s = since(&r, 0, &st, &n);
    IS_STR(s, "cdefghij", "wrapped: the last cap bytes");
    IS_INT(st, 2, "since before the buffer is clamped to the oldest byte");
    free(s);
    osb_pty_ring_add(&r, "klm", 3);
    s = since(&r, 9, &st, &n);
    IS_STR(s, "jklm", "read across the wrap point");
    IS_INT(st, 9, "start 9");
    free(s);
    osb_pty_ring_add(&r, "0123456789ABCDEF", 16); /* bigger than the ring */
    IS_INT(r.total, 29, "total after a huge write");
    s = since(&r, 0, &st, &n);
    IS_STR(s, "89ABCDEF", "a write bigger than the ring keeps its tail");
    IS_INT(st, 21, "start 21");
    free(s);
    for (int i = 0; i < 100; i++)
        osb_pty_ring_add(&r, "x", 1);
    osb_pty_ring_add(&r, "yz", 2);
    s = since(&r, 0, &st, &n);
    IS_STR(s, "xxxxxxyz", "many small writes");
    IS_INT(st, 123, "start after many writes");
    free(s);
    osb_pty_ring_free(&r);
}

int main(void)
{
    test_linear();
    test_wrap();
    return tap_done();
}
