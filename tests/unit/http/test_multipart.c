/* The streaming multipart parser: framing, headers, limits, truncation, and
 * the same result however the body is split across feeds. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/limits.h"
#include "http/multipart.h"
#include "tap.h"

#define CT "multipart/form-data; boundary=XyZ"

/* Events flattened into text: "<name|filename|ctype>" data... "</>". */
struct rec {
    struct osb_buf log;
    int data_calls;
    int fail_at; /* abort on the n-th callback (1-based), 0 = never */
    int calls;
};

static int rec_cb(struct rec *r)
{
    return ++r->calls == r->fail_at ? -1 : 0;
}

static int on_begin(void *ud, const struct osb_multipart_part *p)
{
    struct rec *r = ud;
    MUST(osb_buf_addf(&r->log, "<%s|%s|%s>", p->name, p->filename ? p->filename : "-",
                      p->content_type ? p->content_type : "-"));
    return rec_cb(r);
}

static int on_data(void *ud, const char *d, size_t n)
{
    struct rec *r = ud;
    if (n == 0)
        MUST(osb_buf_adds(&r->log, "{EMPTY-CALLBACK}"));
    MUST(osb_buf_add(&r->log, d, n));
    r->data_calls++;
    return rec_cb(r);
}

static int on_end(void *ud)
{
    struct rec *r = ud;
    MUST(osb_buf_adds(&r->log, "</>"));
    return rec_cb(r);
}

static const struct osb_multipart_cbs cbs = {on_begin, on_data, on_end};

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof *r);
    osb_buf_init(&r->log, 1 << 30);
    MUST(osb_buf_adds(&r->log, ""));
}

/* Parses body fed in pieces cut at the offsets in cuts[] (ascending).
 * Returns 0/-1 of the first failing call; r gets the events, err the error. */
static int parse_cuts(const char *ct, const char *body, size_t len, const size_t *cuts,
                      size_t ncuts, struct rec *r, struct osb_err *err)
{
    rec_init(r);
    struct osb_multipart *mp = osb_multipart_new(ct, &cbs, r, err);
    if (!mp)
        return -2;
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i <= ncuts && rc == 0; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        rc = osb_multipart_feed(mp, body + at, to - at, err);
        at = to;
    }
    if (rc == 0)
        rc = osb_multipart_finish(mp, err);
    osb_multipart_free(mp);
    return rc;
}

static int parse1(const char *ct, const char *body, size_t len, struct rec *r, struct osb_err *err)
{
    return parse_cuts(ct, body, len, NULL, 0, r, err);
}

/* Parses whole, then split at every offset into 2 and (for short bodies)
 * 3 pieces, and byte by byte; all must agree with want_log (or all fail
 * when want_log is NULL, with want_msg in the message). */
static void check_all_splits(const char *what, const char *ct, const char *body, size_t len,
                             const char *want_log, const char *want_msg)
{
    struct rec r;
    struct osb_err err = {0};
    char label[200];
    int rc = parse1(ct, body, len, &r, &err);
    if (want_log) {
        snprintf(label, sizeof label, "%s: parses", what);
        IS_INT(rc, 0, label);
        if (rc)
            printf("# error: %s\n", err.msg);
        snprintf(label, sizeof label, "%s: events", what);
        IS_STR(r.log.data, want_log, label);
    } else {
        snprintf(label, sizeof label, "%s: fails", what);
        OK(rc == -1, label);
        snprintf(label, sizeof label, "%s: message", what);
        OK(strstr(err.msg, want_msg) != NULL, label);
        if (!strstr(err.msg, want_msg))
            printf("# got \"%s\", want substring \"%s\"\n", err.msg, want_msg);
    }
    osb_buf_free(&r.log);
    const char *ref = want_log;
    int bad = 0;
    size_t cuts[2];
    for (size_t i = 0; i <= len && bad < 3; i++) {
        for (size_t j = i; j <= len && bad < 3; j += (len > 400 ? len : 1)) {
            cuts[0] = i;
            cuts[1] = j;
            rc = parse_cuts(ct, body, len, cuts, 2, &r, &err);
            bool good = ref ? rc == 0 && strcmp(r.log.data, ref) == 0
                            : rc == -1 && strstr(err.msg, want_msg);
            if (!good) {
                printf("# split at %zu,%zu: rc %d log \"%s\" err \"%s\"\n", i, j, rc, r.log.data,
                       err.msg);
                bad++;
            }
            osb_buf_free(&r.log);
        }
    }
    snprintf(label, sizeof label, "%s: same result split at every offset", what);
    OK(bad == 0, label);
    size_t *all = malloc((len + 1) * sizeof *all);
    for (size_t i = 0; i < len; i++)
        all[i] = i + 1;
    rc = parse_cuts(ct, body, len, all, len ? len - 1 : 0, &r, &err);
    free(all);
    snprintf(label, sizeof label, "%s: same result fed byte by byte", what);
    OK(ref ? rc == 0 && strcmp(r.log.data, ref) == 0 : rc == -1 && strstr(err.msg, want_msg),
       label);
    osb_buf_free(&r.log);
}

#define SPLITS(what, body, log) check_all_splits(what, CT, body, sizeof(body) - 1, log, NULL)
#define SPLITS_FAIL(what, body, msg) check_all_splits(what, CT, body, sizeof(body) - 1, NULL, msg)

static const char BASIC[] =
    "preamble to ignore\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
    "Content-Type: application/json\r\n"
    "\r\n"
    "{\"path\":\"/tmp/a\"}\r\n"
    "--XyZ\r\n"
    "content-disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n"
    "\r\n"
    "line1\r\nline2\r\n--XyZnot\r\n-\r\n--Xy\r\n\r\n"
    "\r\n"
    "--XyZ--\r\n"
    "epilogue --XyZ garbage";

static void test_basic(void)
{
    SPLITS("basic", BASIC,
           "<metadata|metadata|application/json>{\"path\":\"/tmp/a\"}</>"
           "<file|a.bin|->line1\r\nline2\r\n--XyZnot\r\n-\r\n--Xy\r\n\r\n</>");
    SPLITS("no preamble, empty part",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n--XyZ--", "<a|-|-></>");
    SPLITS("part body without CRLF before the delimiter",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n--XyZ--", "<a|-|-></>");
    SPLITS("part body starting with a non-boundary",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n--XyZ1\r\n--XyZ--",
           "<a|-|->--XyZ1</>");
    SPLITS("part body starting with --XyZ-x",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n--XyZ-x\r\n--XyZ--",
           "<a|-|->--XyZ-x</>");
    SPLITS("CRLF preamble",
           "\r\n--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--",
           "<a|-|->v</>");
    SPLITS("zero parts", "--XyZ--", "");
    SPLITS("zero parts after preamble", "junk\r\n--XyZ--\r\n", "");
    SPLITS("preamble containing near-boundaries",
           "--XyZa\r\n--Xy\r\n--XyZ-q\r\r\n--XyZ\r\nContent-Disposition: form-data; name=n\r\n\r\nv"
           "\r\n--XyZ--",
           "<n|-|->v</>");
    SPLITS("transport padding on boundary lines",
           "--XyZ \t \r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ\t\r\n"
           "Content-Disposition: form-data; name=b\r\n\r\n2\r\n--XyZ--  junk",
           "<a|-|->1</><b|-|->2</>");
    SPLITS("data full of CR, LF and dashes",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\r\r\n\r\n-\r\n--\r\n--X\r"
           "\n--XyZZ\r\r\n--XyZ-\r\n\r\n--XyZ-\n\r\n\r\n--XyZ--",
           "<a|-|->\r\r\r\n\r\n-\r\n--\r\n--X\r\n--XyZZ\r\r\n--XyZ-\r\n\r\n--XyZ-\n\r\n</>");
    SPLITS("binary data with NUL bytes",
           "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\n\0\1\2\r\0\n\377\r\n--XyZ--",
           "<a|-|->\0\1\2\r\0\n\377</>");
}

static void test_headers(void)
{
    SPLITS("quoted params with escapes",
           "--XyZ\r\nContent-Disposition: form-data; name=\"a \\\"q\\\" \\\\ b\"; "
           "filename=\"C:\\\\dir\\\\f;x.txt\"\r\n\r\nv\r\n--XyZ--",
           "<a \"q\" \\ b|C:\\dir\\f;x.txt|->v</>");
    SPLITS("backslash before a non-tspecial is literal (IE-style paths)",
           "--XyZ\r\nContent-Disposition: form-data; name=f; filename=\"C:\\Users\\a.txt\"\r\n"
           "\r\nv\r\n--XyZ--",
           "<f|C:\\Users\\a.txt|->v</>");
    SPLITS("header names and params are case-insensitive, OWS everywhere",
           "--XyZ\r\nCONTENT-disposition:   FORM-DATA ;NAME = \"n\" ;  FileName=\"f\"  \r\n"
           "content-TYPE:\ttext/plain; charset=utf-8 \r\nX-Other: 1\r\n\r\nv\r\n--XyZ--",
           "<n|f|text/plain; charset=utf-8>v</>");
    SPLITS("filename* overrides filename",
           "--XyZ\r\nContent-Disposition: form-data; name=f; filename=\"plain\"; "
           "filename*=UTF-8''%E2%82%AC%20rates.txt\r\n\r\nv\r\n--XyZ--",
           "<f|\xe2\x82\xac rates.txt|->v</>");
    SPLITS("filename* in ISO-8859-1",
           "--XyZ\r\nContent-Disposition: form-data; name=f; filename*=iso-8859-1'en'%A3x\r\n"
           "\r\nv\r\n--XyZ--",
           "<f|\xc2\xa3x|->v</>");
    SPLITS("empty name and filename, trailing semicolon",
           "--XyZ\r\nContent-Disposition: form-data; name=\"\"; filename=\"\";\r\n\r\nv\r\n--XyZ--",
           "<||->v</>");
    SPLITS("unknown parameters ignored",
           "--XyZ\r\nContent-Disposition: form-data; size=3; name=n; creation-date=\"x\"\r\n\r\nv"
           "\r\n--XyZ--",
           "<n|-|->v</>");
    SPLITS("UTF-8 in a quoted filename",
           "--XyZ\r\nContent-Disposition: form-data; name=f; filename=\"\xe6\x96\x87.txt\"\r\n\r\n"
           "v\r\n--XyZ--",
           "<f|\xe6\x96\x87.txt|->v</>");
}

#define PART_OPEN "--XyZ\r\n"
#define PART_REST "\r\n\r\nv\r\n--XyZ--"

static void test_bad_headers(void)
{
    SPLITS_FAIL("no Content-Disposition", PART_OPEN "Content-Type: text/plain" PART_REST,
                "part 1 has no Content-Disposition header");
    SPLITS_FAIL("no headers at all", PART_OPEN "\r\nv\r\n--XyZ--", "no Content-Disposition header");
    SPLITS_FAIL("not form-data", PART_OPEN "Content-Disposition: attachment; name=a" PART_REST,
                "must be form-data, got \"attachment; name=a\"");
    SPLITS_FAIL("no name", PART_OPEN "Content-Disposition: form-data; filename=a" PART_REST,
                "has no name parameter");
    SPLITS_FAIL("duplicate name",
                PART_OPEN "Content-Disposition: form-data; name=a; NAME=b" PART_REST,
                "duplicate parameter \"name\"");
    SPLITS_FAIL("duplicate Content-Disposition",
                PART_OPEN "Content-Disposition: form-data; name=a\r\n"
                          "Content-Disposition: form-data; name=a" PART_REST,
                "duplicate part Content-Disposition");
    SPLITS_FAIL("unterminated quote",
                PART_OPEN "Content-Disposition: form-data; name=\"a" PART_REST,
                "unterminated quoted parameter value");
    SPLITS_FAIL("missing semicolon", PART_OPEN "Content-Disposition: form-data name=a" PART_REST,
                "expected ';'");
    SPLITS_FAIL("param without value", PART_OPEN "Content-Disposition: form-data; name" PART_REST,
                "parameter \"name\" has no value");
    SPLITS_FAIL("empty param value", PART_OPEN "Content-Disposition: form-data; name=" PART_REST,
                "empty or malformed parameter value");
    SPLITS_FAIL("folded header",
                PART_OPEN "X-A: 1\r\n 2\r\nContent-Disposition: form-data; name=a" PART_REST,
                "folded part header lines");
    SPLITS_FAIL("header without colon", PART_OPEN "Content-Disposition form-data" PART_REST,
                "malformed part header line");
    SPLITS_FAIL("space before colon", PART_OPEN "Content-Disposition : form-data; name=a" PART_REST,
                "malformed part header line");
    SPLITS_FAIL("bare LF in headers",
                PART_OPEN "X: 1\nContent-Disposition: form-data; name=a" PART_REST,
                "bare CR or LF");
    SPLITS_FAIL("NUL in headers", PART_OPEN "Content-Disposition: form-data; name=a\0" PART_REST,
                "NUL byte in part headers");
    SPLITS_FAIL("control char in quoted value",
                PART_OPEN "Content-Disposition: form-data; name=\"a\x01\"" PART_REST,
                "control character");
    SPLITS_FAIL("bad filename* charset",
                PART_OPEN "Content-Disposition: form-data; name=a; filename*=koi8-r''x" PART_REST,
                "filename* charset must be UTF-8 or ISO-8859-1");
    SPLITS_FAIL("bad filename* escape",
                PART_OPEN "Content-Disposition: form-data; name=a; filename*=utf-8''%4" PART_REST,
                "bad percent-escape in filename*");
    SPLITS_FAIL("bad filename* escape, first digit",
                PART_OPEN "Content-Disposition: form-data; name=a; filename*=utf-8''%zz" PART_REST,
                "bad percent-escape in filename*");
    SPLITS_FAIL("NUL via filename*",
                PART_OPEN "Content-Disposition: form-data; name=a; filename*=utf-8''a%00" PART_REST,
                "bad percent-escape in filename*");
    SPLITS_FAIL("filename* without quotes",
                PART_OPEN "Content-Disposition: form-data; name=a; filename*=abc" PART_REST,
                "filename* is not charset'lang'value");
    SPLITS_FAIL("duplicate Content-Type",
                PART_OPEN "Content-Disposition: form-data; name=a\r\nContent-Type: a\r\n"
                          "content-type: b" PART_REST,
                "duplicate part Content-Type");
}

static void test_bad_framing(void)
{
    SPLITS_FAIL("boundary line ends in bare LF",
                "--XyZ\nContent-Disposition: form-data; name=a" PART_REST,
                "malformed boundary line");
    SPLITS_FAIL("boundary line with junk after padding",
                "--XyZ x\r\nContent-Disposition: form-data; name=a" PART_REST,
                "malformed boundary line");
    SPLITS_FAIL("boundary line CR without LF",
                "--XyZ\rContent-Disposition: form-data; name=a" PART_REST,
                "malformed boundary line");
    SPLITS_FAIL("delimiter then CR CR inside data",
                "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ\r\r\n--XyZ--",
                "malformed boundary line");
    SPLITS_FAIL("delimiter then LF inside data",
                "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ\n\r\n--XyZ--",
                "malformed boundary line");
    SPLITS_FAIL("second boundary line bad",
                "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ \rx",
                "malformed boundary line");
    SPLITS_FAIL("no boundary in body", "just some text", "no boundary \"--XyZ\" found");
    SPLITS_FAIL("empty body", "", "no boundary \"--XyZ\" found");
    SPLITS_FAIL("truncated in part data",
                "--XyZ\r\nContent-Disposition: form-data; name=file\r\n\r\nabc\r\n--Xy",
                "body ends inside part \"file\"");
    SPLITS_FAIL("truncated in headers", "--XyZ\r\nContent-Disposition: form-data; name=f\r\n",
                "body ends inside the headers of part 1");
    SPLITS_FAIL("truncated after a boundary line", "--XyZ\r\n",
                "body ends inside the headers of part 1");
    SPLITS_FAIL("truncated in a boundary line", "--XyZ  ", "body ends inside a boundary line");
    SPLITS_FAIL("truncated after a part",
                "--XyZ\r\nContent-Disposition: form-data; name=f\r\n\r\nv\r\n--XyZ",
                "body ends inside part \"f\"");
}

/* Every strict prefix of a valid body feeds fine and fails at finish. */
static void test_truncation(void)
{
    size_t len = sizeof BASIC - 1, bad = 0;
    size_t end = strstr(BASIC, "--XyZ--") - BASIC + 7;
    for (size_t n = 0; n < end; n++) {
        struct rec r;
        struct osb_err err = {0};
        rec_init(&r);
        struct osb_multipart *mp = osb_multipart_new(CT, &cbs, &r, &err);
        int f = osb_multipart_feed(mp, BASIC, n, &err);
        int fin = osb_multipart_finish(mp, &err);
        if (f != 0 || fin != -1 || err.code != OSB_E_INVALID) {
            printf("# prefix %zu: feed %d finish %d (%s)\n", n, f, fin, err.msg);
            bad++;
        }
        osb_multipart_free(mp);
        osb_buf_free(&r.log);
    }
    OK(bad == 0, "every prefix before the closing boundary fails at finish");
    struct rec r;
    struct osb_err err;
    OK(parse1(CT, BASIC, end, &r, &err) == 0, "body up to the closing boundary is complete");
    osb_buf_free(&r.log);
    (void)len;
}

static void test_content_type(void)
{
    static const struct {
        const char *ct, *boundary; /* NULL boundary: must fail with msg */
        const char *msg;
    } v[] = {
        {"multipart/form-data; boundary=XyZ", "XyZ", NULL},
        {"Multipart/Form-Data;BOUNDARY=\"XyZ\"", "XyZ", NULL},
        {"multipart/form-data; charset=utf-8; boundary=\"XyZ\"; x=y", "XyZ", NULL},
        {"  multipart/form-data ;  boundary = XyZ ", "XyZ", NULL},
        {"multipart/form-data; boundary=\"a b:c=d\"", "a b:c=d", NULL},
        {"multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW",
         "----WebKitFormBoundary7MA4YWxkTrZu0gW", NULL},
        {"multipart/form-data", NULL, "has no boundary parameter"},
        {"multipart/form-data; boundary=", NULL, "empty or malformed parameter value"},
        {"multipart/form-data; boundary=\"\"", NULL, "boundary must be 1 to 200 characters"},
        {"multipart/form-data; boundary=a; boundary=b", NULL, "duplicate parameter \"boundary\""},
        {"multipart/mixed; boundary=a", NULL, "must be multipart/form-data, got"},
        {"application/json", NULL, "must be multipart/form-data"},
        {"", NULL, "must be multipart/form-data"},
        {NULL, NULL, "must be multipart/form-data"},
        {"multipart/form-datax; boundary=a", NULL, "must be multipart/form-data"},
        {"multipart/form-data; boundary=\"a\tb\"", NULL, "non-printable"},
        {"multipart/form-data; boundary=\"a\\\"b\"", "a\"b", NULL},
        {"multipart/form-data boundary=a", NULL, "expected ';'"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct osb_err err = {0};
        char label[160];
        struct osb_multipart *mp = osb_multipart_new(v[i].ct, &cbs, NULL, &err);
        snprintf(label, sizeof label, "Content-Type \"%s\"", v[i].ct ? v[i].ct : "(null)");
        if (!v[i].boundary) {
            OK(!mp && err.code == OSB_E_INVALID && strstr(err.msg, v[i].msg), label);
            if (mp || !strstr(err.msg, v[i].msg))
                printf("# got \"%s\"\n", err.msg);
            osb_multipart_free(mp);
            continue;
        }
        OK(mp != NULL, label);
        if (!mp) {
            printf("# error %s\n", err.msg);
            continue;
        }
        /* Check the boundary by parsing a body that uses it. */
        char body[300];
        struct rec r;
        snprintf(body, sizeof body,
                 "--%s\r\nContent-Disposition: form-data; name=k\r\n\r\nv\r\n--%s--", v[i].boundary,
                 v[i].boundary);
        int rc = parse1(v[i].ct, body, strlen(body), &r, &err);
        OK(rc == 0 && strcmp(r.log.data, "<k|-|->v</>") == 0, "  ... boundary extracted");
        osb_buf_free(&r.log);
        osb_multipart_free(mp);
    }
    char ct[300];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%0200d", 7);
    struct osb_err err;
    struct osb_multipart *mp = osb_multipart_new(ct, &cbs, NULL, &err);
    OK(mp != NULL, "200-char boundary accepted");
    osb_multipart_free(mp);
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%0201d", 7);
    OK(!osb_multipart_new(ct, &cbs, NULL, &err), "201-char boundary rejected");
}

/* A header block of exactly `size` bytes (terminating blank line included). */
static char *head_of_size(size_t size, size_t *len)
{
    const char *pre = "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX-Pad: ";
    const char *post = "\r\n\r\nv\r\n--XyZ--";
    size_t fixed = strlen("Content-Disposition: form-data; name=a\r\nX-Pad: ") + 4;
    size_t pad = size - fixed;
    char *b = malloc(strlen(pre) + pad + strlen(post) + 1);
    memcpy(b, pre, strlen(pre));
    memset(b + strlen(pre), 'p', pad);
    memcpy(b + strlen(pre) + pad, post, strlen(post) + 1);
    *len = strlen(b);
    return b;
}

static void test_head_limit(void)
{
    size_t len;
    struct rec r;
    struct osb_err err;
    char *b = head_of_size(OSB_MAX_PART_HEAD, &len);
    OK(parse1(CT, b, len, &r, &err) == 0, "part headers of exactly OSB_MAX_PART_HEAD accepted");
    osb_buf_free(&r.log);
    size_t cut = len / 2;
    OK(parse_cuts(CT, b, len, &cut, 1, &r, &err) == 0, "  ... also when split");
    osb_buf_free(&r.log);
    free(b);
    b = head_of_size(OSB_MAX_PART_HEAD + 1, &len);
    IS_INT(parse1(CT, b, len, &r, &err), -1, "one byte more is rejected");
    IS_INT(err.code, OSB_E_TOOBIG, "  ... as OSB_E_TOOBIG");
    OK(strstr(err.msg, "headers exceed 16384 bytes") != NULL, "  ... naming the limit");
    osb_buf_free(&r.log);
    free(b);
    /* An endless header block fails once the cap is reached, while feeding. */
    struct osb_multipart *mp = osb_multipart_new(CT, &cbs, &r, &err);
    rec_init(&r);
    int rc = osb_multipart_feed(mp, "--XyZ\r\n", 7, &err);
    OK(rc == 0, "the opening boundary is taken");
    size_t fed = 0;
    while (rc == 0 && fed < 10 * OSB_MAX_PART_HEAD) {
        rc = osb_multipart_feed(mp, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 29, &err);
        fed += 29;
    }
    OK(rc == -1 && fed <= OSB_MAX_PART_HEAD + 29, "endless headers fail at the cap");
    osb_multipart_free(mp);
    osb_buf_free(&r.log);
}

static void test_sticky_and_abort(void)
{
    struct rec r;
    struct osb_err err = {0};
    rec_init(&r);
    struct osb_multipart *mp = osb_multipart_new(CT, &cbs, &r, &err);
    OK(osb_multipart_feed(mp, "--XyZ\nx", 7, &err) == -1, "bad boundary line fails");
    err.msg[0] = '\0';
    OK(osb_multipart_feed(mp, "more", 4, &err) == -1 && strstr(err.msg, "malformed boundary"),
       "error is sticky for feed");
    err.msg[0] = '\0';
    OK(osb_multipart_finish(mp, &err) == -1 && strstr(err.msg, "malformed boundary"),
       "error is sticky for finish");
    OK(osb_multipart_feed(mp, "x", 1, NULL) == -1, "NULL err is tolerated");
    osb_multipart_free(mp);
    osb_buf_free(&r.log);

    for (int at = 1; at <= 6; at++) {
        const char *body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ\r\n"
                           "Content-Disposition: form-data; name=b\r\n\r\nw\r\n--XyZ--";
        rec_init(&r);
        r.fail_at = at;
        mp = osb_multipart_new(CT, &cbs, &r, &err);
        int rc = osb_multipart_feed(mp, body, strlen(body), &err);
        char label[80];
        snprintf(label, sizeof label, "callback %d returning -1 aborts", at);
        OK(rc == -1 && err.code == OSB_E_INTERNAL && r.calls == at, label);
        osb_multipart_free(mp);
        osb_buf_free(&r.log);
    }
    /* No callbacks at all is fine, and free(NULL) is a no-op. */
    mp = osb_multipart_new(CT, NULL, NULL, &err);
    OK(osb_multipart_feed(mp, BASIC, sizeof BASIC - 1, &err) == 0 &&
           osb_multipart_finish(mp, &err) == 0 && osb_multipart_parts(mp) == 2,
       "NULL callbacks");
    osb_multipart_free(mp);
    osb_multipart_free(NULL);
}

/* Large parts come out in about one callback per fed chunk. */
static void test_few_callbacks(void)
{
    size_t big = 8 << 20, chunk = 64 << 10;
    const char *pre = "--XyZ\r\nContent-Disposition: form-data; name=f; filename=x\r\n\r\n";
    const char *post = "\r\n--XyZ--\r\n";
    size_t len = strlen(pre) + big + strlen(post);
    char *b = malloc(len);
    memcpy(b, pre, strlen(pre));
    srand(1);
    for (size_t i = 0; i < big; i++)
        b[strlen(pre) + i] = "\r\n-XyZab"[rand() % 8];
    memcpy(b + strlen(pre) + big, post, strlen(post));
    struct rec r;
    struct osb_err err;
    rec_init(&r);
    struct osb_multipart *mp = osb_multipart_new(CT, &cbs, &r, &err);
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0; at += chunk)
        rc = osb_multipart_feed(mp, b + at, len - at < chunk ? len - at : chunk, &err);
    rc = rc ? rc : osb_multipart_finish(mp, &err);
    size_t hl = strlen("<f|x|->");
    OK(rc == 0 && r.log.len == hl + big + 3 && memcmp(r.log.data + hl, b + strlen(pre), big) == 0,
       "8 MiB of delimiter-like bytes pass through intact");
    int chunks = (int)((len + chunk - 1) / chunk);
    OK(r.data_calls <= 2 * chunks, "at most ~2 data callbacks per fed chunk");
    printf("# %d data callbacks for %d chunks\n", r.data_calls, chunks);
    osb_multipart_free(mp);
    osb_buf_free(&r.log);
    free(b);
}

/* Whether data (a part body) would contain a real boundary: "\r\n--XyZ"
 * (or "--XyZ" at its start) followed by "--", SP, HT, CR or LF. */
static bool has_boundary(const char *data, size_t n)
{
    char *s = malloc(n + 5);
    memcpy(s, "\r\n", 2);
    if (n)
        memcpy(s + 2, data, n);
    memcpy(s + 2 + n, "\r\n", 3);
    bool found = false;
    for (const char *p = s; (p = strstr(p, "\r\n--XyZ")) && !found; p++) {
        char c = p[7];
        found = strchr(" \t\r\n", c) || (c == '-' && p[8] == '-');
    }
    free(s);
    return found;
}

static void random_data(struct osb_buf *d)
{
    static const char *const atoms[] = {"\r",         "\n",          "-",         "--",
                                        "X",          "XyZ",         "\r\n--XyZ", "\r\n--Xy",
                                        "\r\n--XyZz", "\r\n--XyZ-q", "a",         " "};
    do {
        osb_buf_reset(d);
        int n = rand() % 60;
        for (int i = 0; i < n; i++)
            MUST(osb_buf_adds(d, atoms[rand() % OSB_ARRAY_LEN(atoms)]));
    } while (has_boundary(d->data, d->len));
}

static void random_cuts(size_t *cuts, size_t n, size_t len)
{
    for (size_t k = 0; k < n; k++)
        cuts[k] = len ? (size_t)rand() % len : 0;
    for (size_t k = 1; k < n; k++)
        for (size_t m = k; m > 0 && cuts[m] < cuts[m - 1]; m--) {
            size_t t = cuts[m];
            cuts[m] = cuts[m - 1];
            cuts[m - 1] = t;
        }
}

/* Random parts over a delimiter-heavy alphabet, random splits: the events
 * must reproduce the parts exactly. */
static void test_random(void)
{
    int bad = 0;
    srand(7);
    for (int iter = 0; iter < 2000 && bad < 3; iter++) {
        struct osb_buf body, want, d;
        osb_buf_init(&body, 1 << 20);
        osb_buf_init(&want, 1 << 20);
        osb_buf_init(&d, 1 << 20);
        MUST(osb_buf_adds(&want, ""));
        if (rand() % 2)
            MUST(osb_buf_adds(&body, "pre\r\n--XyZx\r\n"));
        int parts = rand() % 4;
        for (int p = 0; p < parts; p++) {
            random_data(&d);
            MUST(osb_buf_addf(&body, "--XyZ\r\nContent-Disposition: form-data; name=p%d\r\n\r\n",
                              p));
            MUST(osb_buf_add(&body, d.data, d.len));
            MUST(osb_buf_adds(&body, "\r\n"));
            MUST(osb_buf_addf(&want, "<p%d|-|->", p));
            MUST(osb_buf_add(&want, d.data, d.len));
            MUST(osb_buf_adds(&want, "</>"));
        }
        MUST(osb_buf_adds(&body, "--XyZ--"));
        size_t cuts[5];
        random_cuts(cuts, 5, body.len);
        struct rec r;
        struct osb_err err = {0};
        int rc = parse_cuts(CT, body.data, body.len, cuts, 5, &r, &err);
        if (rc != 0 || strcmp(r.log.data, want.data) != 0) {
            printf("# iter %d: rc %d (%s)\n# body %s\n# got  %s\n# want %s\n", iter, rc, err.msg,
                   body.data, r.log.data, want.data);
            bad++;
        }
        osb_buf_free(&r.log);
        osb_buf_free(&body);
        osb_buf_free(&want);
        osb_buf_free(&d);
    }
    OK(bad == 0, "2000 random bodies with random splits");
}

int main(void)
{
    test_basic();
    test_headers();
    test_bad_headers();
    test_bad_framing();
    test_truncation();
    test_content_type();
    test_head_limit();
    test_sticky_and_abort();
    test_few_callbacks();
    test_random();
    return tap_done();
}
