/* Download helpers: Range parsing as the reference execd, Content-
 * Disposition encoding, HTTP dates, and the line-mode filter. */
#include <stdlib.h>
#include <string.h>

#include "execd/fs_lines.h"
#include "execd/fs_range.h"
#include "tap.h"

static void range_ok(const char *h, int64_t size, int64_t start, int64_t len)
{
    int64_t s = -1, l = -1;
    enum osb_fs_range r = osb_fs_range_parse(h, size, &s, &l);
    char what[160];
    snprintf(what, sizeof what, "'%s' of %lld -> %lld+%lld", h, (long long)size, (long long)start,
             (long long)len);
    if (r != OSB_FS_RANGE_OK || s != start || l != len)
        printf("# got kind %d start %lld len %lld\n", r, (long long)s, (long long)l);
    OK(r == OSB_FS_RANGE_OK && s == start && l == len, what);
}

static void range_kind(const char *h, int64_t size, enum osb_fs_range want)
{
    int64_t s, l;
    char what[160];
    snprintf(what, sizeof what, "'%s' of %lld -> kind %d", h, (long long)size, want);
    IS_INT(osb_fs_range_parse(h, size, &s, &l), want, what);
}

static void ranges(void)
{
    range_ok("bytes=0-9", 100, 0, 10);
    range_ok("bytes=10-", 100, 10, 90);
    range_ok("bytes=-10", 100, 90, 10);
    range_ok("bytes=-1000", 100, 0, 100);
    range_ok("bytes=90-1000", 100, 90, 10);
    range_ok("bytes= 5 - 6 ", 100, 5, 2);
    range_ok("bytes=0-0", 1, 0, 1);
    range_ok("bytes=0-1,5-6", 100, 0, 2);     /* first range only */
    range_ok("bytes=200-300,5-6", 100, 5, 2); /* past-EOF ranges are dropped */
    range_ok("bytes=,1-2", 100, 1, 2);
    range_kind("bytes=", 100, OSB_FS_RANGE_NONE);
    range_kind("bytes= , ", 100, OSB_FS_RANGE_NONE);
    range_kind("bytes=100-", 100, OSB_FS_RANGE_NO_OVERLAP);
    range_kind("bytes=500-600", 100, OSB_FS_RANGE_NO_OVERLAP);
    range_kind("bytes=0-", 0, OSB_FS_RANGE_NO_OVERLAP);
    range_kind("bytes=-0", 100, OSB_FS_RANGE_NO_OVERLAP);
    range_kind("bits=0-1", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=5", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=a-b", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=9-5", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=--5", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=-", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=1-2,x", 100, OSB_FS_RANGE_INVALID);
    range_kind("bytes=99999999999999999999-", 100, OSB_FS_RANGE_INVALID);
    range_kind("", 100, OSB_FS_RANGE_INVALID);
}

static void disposition(void)
{
    char *s = osb_fs_content_disposition("a.txt");
    IS_STR(s, "attachment; filename=\"a.txt\"", "ASCII name");
    free(s);
    s = osb_fs_content_disposition("r\xc3\xa9sum\xc3\xa9 1.pdf");
    IS_STR(s,
           "attachment; filename=\"r%C3%A9sum%C3%A9%201.pdf\"; "
           "filename*=UTF-8''r%C3%A9sum%C3%A9%201.pdf",
           "non-ASCII name: RFC 5987 with Go PathEscape");
    free(s);
    s = osb_fs_content_disposition("a\"b\r\nX-Evil: 1");
    OK(!strchr(s, '\r') && !strchr(s, '\n') && !strstr(s, "a\"b"),
       "quotes and CR/LF cannot escape the header");
    free(s);
    s = osb_fs_content_disposition("\xe4\xb8\xad$&+:=@,;?.txt");
    IS_STR(s,
           "attachment; filename=\"%E4%B8%AD$&+:=@%2C%3B%3F.txt\"; "
           "filename*=UTF-8''%E4%B8%AD$&+:=@%2C%3B%3F.txt",
           "PathEscape keeps $&+:=@ and escapes ,;?");
    free(s);
}

static void dates(void)
{
    time_t t = 0;
    OK(osb_fs_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &t) == 0 && t == 784111777,
       "IMF-fixdate");
    OK(osb_fs_http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &t) == 0 && t == 784111777,
       "RFC 850 date");
    OK(osb_fs_http_date_parse("Sun Nov  6 08:49:37 1994", &t) == 0 && t == 784111777,
       "asctime date");
    OK(osb_fs_http_date_parse("yesterday", &t) < 0, "garbage date rejected");
    OK(osb_fs_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT trailing", &t) < 0,
       "trailing garbage rejected");
}

/* Feed `in` in pieces of `step` bytes through the line filter. */
static char *lines(const char *in, int64_t offset, int64_t limit, size_t step)
{
    struct osb_fs_lines l;
    struct osb_buf out;
    osb_buf_init(&out, 1 << 20);
    osb_fs_lines_init(&l, offset, limit);
    size_t n = strlen(in), i = 0;
    bool done = false;
    while (i < n && !done) {
        size_t k = n - i < step ? n - i : step;
        done = osb_fs_lines_feed(&l, in + i, k, &out);
        i += k;
    }
    if (!done)
        osb_fs_lines_finish(&l, &out);
    MUST(osb_buf_add(&out, "", 1));
    return osb_buf_steal(&out, NULL);
}

static void line_case(const char *in, int64_t off, int64_t lim, const char *want, const char *what)
{
    for (size_t step = 1; step <= 8; step *= 2) {
        char *got = lines(in, off, lim, step);
        char name[200];
        snprintf(name, sizeof name, "%s (chunks of %zu)", what, step);
        IS_STR(got, want, name);
        free(got);
    }
    char *got = lines(in, off, lim, 1 << 20);
    IS_STR(got, want, what);
    free(got);
}

static void line_mode(void)
{
    const int64_t ALL = INT64_MAX;
    line_case("a\nb\nc\n", 1, ALL, "a\nb\nc", "all lines, no trailing newline");
    line_case("a\nb\nc", 1, ALL, "a\nb\nc", "last line without terminator");
    line_case("a\r\nb\r\nc\r\n", 1, ALL, "a\nb\nc", "CRLF stripped");
    line_case("a\rb\nc", 1, ALL, "a\rb\nc", "lone CR kept inside a line");
    line_case("a\nb\r", 1, ALL, "a\nb", "trailing CR at EOF dropped");
    line_case("1\n2\n3\n4\n5\n", 2, 2, "2\n3", "offset 2 limit 2");
    line_case("1\n2\n3\n", 3, 10, "3", "limit past the end");
    line_case("1\n2\n3\n", 5, 1, "", "offset past the end");
    line_case("a\n\nb\n", 1, ALL, "a\n\nb", "empty line kept");
    line_case("\n\n", 1, ALL, "\n", "two empty lines");
    line_case("a\n\nb", 2, 1, "", "selecting an empty line");
    line_case("", 1, ALL, "", "empty file");
    line_case("x\r\r\ny", 1, ALL, "x\r\ny", "CR before CRLF kept");
}

int main(void)
{
    ranges();
    disposition();
    dates();
    line_mode();
    return tap_done();
}
