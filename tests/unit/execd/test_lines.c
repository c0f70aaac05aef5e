/* Line splitter: terminators \n, \r, \r\n (also across chunk boundaries),
 * partial lines, flush, the length cap and its UTF-8-aware cut. */
#include <stdlib.h>
#include <string.h>

#include "execd/lines.h"
#include "tap.h"

/* Collected lines joined as "line|line|" for easy comparison. */
struct out {
    char s[8192];
    size_t n;
    int count;
};

static void collect(void *ud, const char *line, size_t len)
{
    struct out *o = ud;
    if (o->n + len + 2 < sizeof o->s) {
        memcpy(o->s + o->n, line, len);
        o->n += len;
        o->s[o->n++] = '|';
        o->s[o->n] = '\0';
    }
    o->count++;
}

/* Feed `chunks` (NULL-terminated) then flush; return the joined lines. */
static const char *split(size_t max, const char *const *chunks)
{
    static struct out o;
    memset(&o, 0, sizeof o);
    struct osb_lines l;
    osb_lines_init(&l, max);
    for (; *chunks; chunks++)
        osb_lines_feed(&l, *chunks, strlen(*chunks), collect, &o);
    osb_lines_flush(&l, collect, &o);
    osb_lines_free(&l);
    return o.s;
}

#define SPLIT(max, ...) split((max), (const char *const[]){__VA_ARGS__, NULL})

static void test_basic(void)
{
    IS_STR(SPLIT(100, "a\nb\n"), "a|b|", "\\n terminated lines");
    IS_STR(SPLIT(100, "a\r\nb\r\n"), "a|b|", "\\r\\n is one terminator");
    IS_STR(SPLIT(100, "a\rb\r"), "a|b|", "\\r alone terminates");
    IS_STR(SPLIT(100, "\n\n"), "||", "empty lines are reported");
    IS_STR(SPLIT(100, "a\r\rb"), "a||b|", "\\r\\r is two terminators");
    IS_STR(SPLIT(100, "a\n\rb"), "a||b|", "\\n\\r is two terminators");
    IS_STR(SPLIT(100, "tail"), "tail|", "unterminated last line flushed");
    IS_STR(SPLIT(100, ""), "", "no output, no lines");
    IS_STR(SPLIT(100, "x\n"), "x|", "no empty line after the last terminator");
}

static void test_chunks(void)
{
    IS_STR(SPLIT(100, "a\r", "\nb\n"), "a|b|", "\\r | \\n across chunks is one terminator");
    IS_STR(SPLIT(100, "a\r", "", "\nb"), "a|b|", "an empty chunk keeps the pending \\r");
    IS_STR(SPLIT(100, "a\r", "\r\n"), "a||", "\\r | \\r\\n is two terminators");
    IS_STR(SPLIT(100, "a\r", "b"), "a|b|", "\\r | b");
    IS_STR(SPLIT(100, "hel", "lo\nwor", "ld"), "hello|world|", "partial lines joined");
    IS_STR(SPLIT(100, "a\n", "\n"), "a||", "\\n | \\n: empty line");
    IS_STR(SPLIT(100, "a", "\r", "\n", "b", "\r"), "a|b|", "byte chunks");
}

static void test_max(void)
{
    IS_STR(SPLIT(4, "abcdefghij\n"), "abcd|efgh|ij|", "long line cut at max");
    IS_STR(SPLIT(4, "ab", "cdef", "gh", "\n"), "abcd|efgh|", "cut across chunks");
    IS_STR(SPLIT(4, "abcd\n"), "abcd|", "exactly max is one line");
    IS_STR(SPLIT(4, "abc\xc3\xa9"
                    "d\n"),
           "abc|\xc3\xa9"
           "d|",
           "cut before a UTF-8 sequence");
    IS_STR(SPLIT(4, "abcdefgh"), "abcd|efgh|", "unterminated long output");
}

/* Reference: whole-buffer split with a plain byte loop. */
static void reference(const char *s, size_t n, size_t max, struct out *o)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool term = i < n && (s[i] == '\n' || s[i] == '\r');
        if (i - start == max && !term && i < n) {
            collect(o, s + start, max);
            start = i;
        }
        if (i == n) {
            if (i > start)
                collect(o, s + start, i - start);
            break;
        }
        if (term) {
            collect(o, s + start, i - start);
            if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
                i++;
            start = i + 1;
        }
    }
}

static void test_random(void)
{
    srand(12345);
    const char alphabet[] = "ab\r\n";
    int bad = 0;
    for (int round = 0; round < 2000; round++) {
        char s[200];
        size_t n = (size_t)(rand() % 120);
        for (size_t i = 0; i < n; i++)
            s[i] = alphabet[rand() % 4];
        size_t max = 1 + (size_t)(rand() % 10);
        struct out want = {.n = 0}, got = {.n = 0};
        want.s[0] = got.s[0] = '\0';
        reference(s, n, max, &want);
        struct osb_lines l;
        osb_lines_init(&l, max);
        for (size_t i = 0; i < n;) {
            size_t k = 1 + (size_t)(rand() % 8);
            if (k > n - i)
                k = n - i;
            osb_lines_feed(&l, s + i, k, collect, &got);
            i += k;
        }
        osb_lines_flush(&l, collect, &got);
        osb_lines_free(&l);
        if (strcmp(want.s, got.s) != 0 || want.count != got.count) {
            if (!bad)
                printf("# max %zu\n# want %s\n# got  %s\n", max, want.s, got.s);
            bad++;
        }
    }
    IS_INT(bad, 0, "random chunking matches a whole-buffer split");
}

static void test_reset(void)
{
    struct out o = {.n = 0};
    struct osb_lines l;
    osb_lines_init(&l, 100);
    osb_lines_feed(&l, "junk\r", 5, collect, &o);
    osb_lines_feed(&l, "partial", 7, collect, &o);
    osb_lines_reset(&l);
    osb_lines_feed(&l, "\nnew\n", 5, collect, &o);
    osb_lines_free(&l);
    IS_STR(o.s, "junk||new|", "reset drops the partial line and the pending \\r");
}

int main(void)
{
    test_basic();
    test_chunks();
    test_max();
    test_random();
    test_reset();
    return tap_done();
}
