#include "execd/fs_range.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* Go's strconv.ParseInt on a trimmed field: optional sign, decimal digits,
 * no overflow. */
static bool parse_int(const char *s, size_t n, int64_t *out)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)s[i]))
            return false;
    return true;
}

/* One "a-b" element; returns false on bad syntax. *start and *len get the
 * unclipped range (len may run past EOF). */
static bool parse_one(const char *s, size_t n, int64_t size, int64_t *start, int64_t *len)
{
    const char *dash = memchr(s, '-', n);
    if (!dash)
        return false;
    size_t a = (size_t)(dash - s), b = n - a - 1;
    int64_t i, j;
    if (blank(s, a)) {
        if (!parse_int(dash + 1, b, &j) || j < 0)
            return false;
        if (j > size)
            j = size;
        /* "-0" asks for nothing: unsatisfiable, like a start past EOF. */
        *start = j == 0 ? size : size - j;
        *len = j;
        return true;
    }
    if (!parse_int(s, a, &i) || i < 0)
        return false;
    *start = i;
    if (blank(dash + 1, b)) {
        *len = size - i;
        return true;
    }
    if (!parse_int(dash + 1, b, &j) || j < i)
        return false;
    *len = j - i + 1;
    return true;
}

enum osb_fs_range osb_fs_range_parse(const char *hdr, int64_t size, int64_t *start, int64_t *len)
{
    if (strncmp(hdr, "bytes=", 6) != 0)
        return OSB_FS_RANGE_INVALID;
    bool found = false, dropped = false;
    for (const char *s = hdr + 6;;) {
        size_t n = strcspn(s, ",");
        int64_t st, ln;
        if (!blank(s, n)) {
            if (!parse_one(s, n, size, &st, &ln))
                return OSB_FS_RANGE_INVALID;
            if (st >= size) {
                dropped = true;
            } else if (!found) {
                found = true;
                *start = st;
                *len = ln > size - st ? size - st : ln;
            }
        }
        if (!s[n])
            break;
        s += n + 1;
    }
    if (found)
        return OSB_FS_RANGE_OK;
    return dropped ? OSB_FS_RANGE_NO_OVERLAP : OSB_FS_RANGE_NONE;
}

/* Go's url.PathEscape keeps unreserved characters and $&+:=@. */
static bool path_safe(unsigned char c)
{
    return isalnum(c) || strchr("-_.~$&+:=@", c) != NULL;
}

char *osb_fs_content_disposition(const char *filename)
{
    bool plain = true;
    for (const unsigned char *p = (const unsigned char *)filename; *p; p++)
        if (*p > 126 || *p < 32 || *p == '"' || *p == '\\')
            plain = false;
    if (plain)
        return osb_xasprintf("attachment; filename=\"%s\"", filename);
    size_t n = strlen(filename);
    char *enc = osb_xmalloc(n * 3 + 1), *w = enc;
    for (const unsigned char *p = (const unsigned char *)filename; *p; p++) {
        if (path_safe(*p)) {
            *w++ = (char)*p;
        } else {
            static const char hex[] = "0123456789ABCDEF";
            *w++ = '%';
            *w++ = hex[*p >> 4];
            *w++ = hex[*p & 15];
        }
    }
    *w = '\0';
    char *out = osb_xasprintf("attachment; filename=\"%s\"; filename*=UTF-8''%s", enc, enc);
    free(enc);
    return out;
}

int osb_fs_http_date_parse(const char *s, time_t *out)
{
    static const char *const formats[] = {
        "%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
        "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
        "%a %b %e %H:%M:%S %Y",      /* asctime */
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        struct tm tm = {0};
        const char *end = strptime(s, formats[i], &tm);
        if (end && *end == '\0') {
            *out = timegm(&tm);
            return 0;
        }
    }
    return -1;
}
