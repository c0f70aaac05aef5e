/* src/server/audit.c on a real file: records appended and chained, the
 * chain continued by a reopened trail, verify on the file and on tampered
 * copies (a byte changed, a record removed, a cut tail), listing with its
 * filters, and a trail that does not verify still accepting records after
 * its last line (the break stays visible). audit_execd.c: the body and SSE
 * scans, whole, split at every byte, on garbage and past their caps;
 * audit_run.c: which proxied paths are runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/audit.h"
#include "server/audit_execd.h"
#include "server/audit_run.h"
#include "tap.h"

static char dir[] = "/tmp/osb-audit-XXXXXX";

static void put(struct osb_audit *a, const char *action, const char *sbx)
{
    struct osb_audit_rec r = {"sha256:0123456789ab", action, sbx, "rid", 202, NULL};
    osb_audit_append(a, &r);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int verify_says(const char *path, const char *want)
{
    size_t n = 0;
    struct osb_err err = {0};
    int r = osb_audit_verify(path, &n, &err);
    if (r == 0 || !strstr(err.msg, want)) {
        printf("# %s\n", err.msg);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------- execd scans */

/* The text the body scan reads from body fed in pieces of step bytes (0:
 * split once at every offset, all must agree), NUL-terminated; NULL when
 * none. */
static const char *body_text(const char *field, const char *body, size_t len, size_t step,
                             struct osb_audit_body *b)
{
    static char out[OSB_AUDIT_MAX_TEXT + 1];
    size_t n;
    if (step == 0) {
        static char first[OSB_AUDIT_MAX_TEXT + 1];
        const char *want = NULL;
        for (size_t cut = 0; cut <= len; cut++) {
            osb_audit_body_init(b, field);
            osb_audit_body_feed(b, body, cut);
            osb_audit_body_feed(b, body + cut, len - cut);
            const char *t = osb_audit_body_text(b, &n);
            if (cut == 0 && t) {
                memcpy(first, t, n);
                first[n] = 0;
                want = first;
            }
            if ((t == NULL) != (want == NULL) || (t && (strlen(want) != n || memcmp(t, want, n))))
                return "(a split changed the text)";
        }
        return want;
    }
    osb_audit_body_init(b, field);
    for (size_t i = 0; i < len; i += step)
        osb_audit_body_feed(b, body + i, len - i < step ? len - i : step);
    const char *t = osb_audit_body_text(b, &n);
    if (!t)
        return NULL;
    memcpy(out, t, n);
    out[n] = 0;
    return out;
}

static void test_body(void)
{
    static struct osb_audit_body b;
    const char *cmd = "{\"envs\":{\"SECRET\":\"hunter2\",\"command\":\"no\"},\"cwd\":\"/\","
                      "\"command\":\"echo \\\"hi\\\"\\n\\u00e9\\ud83d\\ude00 {[,:]}\","
                      "\"background\":true,\"timeout\":5}";
    const char *want = "echo \"hi\"\n\xc3\xa9\xf0\x9f\x98\x80 {[,:]}";
    IS_STR(body_text("command", cmd, strlen(cmd), 1 << 20, &b), want,
           "body: the command decoded (escapes, \\u, a surrogate pair), not envs' key");
    OK(b.background && !b.truncated, "  background: true read");
    IS_STR(body_text("command", cmd, strlen(cmd), 1, &b), want, "  the same fed a byte at a time");
    IS_STR(body_text("command", cmd, strlen(cmd), 0, &b), want, "  the same split at every byte");
    OK(!strstr(b.text, "hunter2"), "  nothing of envs kept");
    const char *code = "{\"context\":{\"language\":\"python\"},\"code\":\"print(1)\"}";
    IS_STR(body_text("code", code, strlen(code), 0, &b), "print(1)", "body: a code cell's code");
    OK(!b.background, "  no background");
    const char *bg[] = {"{\"command\":\"x\",\"background\":false}",
                        "{\"command\":\"x\",\"background\":\"true\"}",
                        "{\"command\":\"x\",\"o\":{\"background\":true}}"};
    for (size_t i = 0; i < 3; i++) {
        body_text("command", bg[i], strlen(bg[i]), 1, &b);
        OK(!b.background, "body: background only for a top-level true");
    }
    const char *none[] = {"",
                          "not json",
                          "[\"command\",\"x\"]",
                          "{\"command\":5}",
                          "{\"envs\":{\"command\":\"nested\"}}",
                          "{\"command\":\"a\\qb\"}",
                          "{\"command\":\"\\u12g4\"}",
                          "{\"commandx\":\"y\"}"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        OK(body_text("command", none[i], strlen(none[i]), 0, &b) == NULL,
           "body: no text from garbage, a non-string, a nested or bad field");
    const char *dup = "{\"command\":\"first\",\"command\":\"second\"}";
    IS_STR(body_text("command", dup, strlen(dup), 1, &b), "second",
           "body: a repeated key: the last");
}

static void test_body_cap(void)
{
    static struct osb_audit_body b;
    static char big[3 * OSB_AUDIT_MAX_TEXT + 64];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"command\":\"");
    for (size_t i = 0; i < 2 * OSB_AUDIT_MAX_TEXT; i++)
        big[n++] = 'a';
    n += (size_t)snprintf(big + n, sizeof big - n, "\",\"background\":true}");
    const char *t = body_text("command", big, n, 7, &b);
    OK(t && strlen(t) == OSB_AUDIT_MAX_TEXT && b.truncated && b.background,
       "body: 8 KiB of text: cut at 4 KiB, marked, the rest of the body still read");
    n = (size_t)snprintf(big, sizeof big, "{\"command\":\"");
    for (size_t i = 0; i < 2000; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "\xe2\x82\xac"); /* 3-byte euro sign */
    big[n++] = '"';
    big[n++] = '}';
    t = body_text("command", big, n, 1, &b);
    OK(t && strlen(t) == OSB_AUDIT_MAX_TEXT / 3 * 3 && b.truncated,
       "body: multi-byte text cut on a character (raw UTF-8)");
    n = (size_t)snprintf(big, sizeof big, "{\"command\":\"");
    for (size_t i = 0; i < 2000; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "\\u20ac");
    n += (size_t)snprintf(big + n, sizeof big - n, "\"}");
    t = body_text("command", big, n, 5, &b);
    OK(t && strlen(t) == OSB_AUDIT_MAX_TEXT / 3 * 3 && b.truncated,
       "body: multi-byte text cut on a character (\\u escapes)");
    OK(sizeof b < OSB_AUDIT_MAX_TEXT + 256, "body: the scan is a fixed few KiB");
}

/* The SSE scan over stream fed in pieces of step bytes. */
static void sse_of(const char *stream, size_t step, bool finish, struct osb_audit_sse *s)
{
    size_t len = strlen(stream);
    osb_audit_sse_init(s);
    for (size_t i = 0; i < len; i += step)
        osb_audit_sse_feed(s, stream + i, len - i < step ? len - i : step);
    if (finish)
        osb_audit_sse_finish(s);
}

static void test_sse(void)
{
    static struct osb_audit_sse s;
    const char *fail =
        "{\"type\":\"init\",\"text\":\"c1\",\"timestamp\":1}\n\n"
        "{\"type\":\"stdout\",\"text\":\"{\\\"type\\\":\\\"error\\\"\","
        "\"timestamp\":2}\n\n"
        "{\"type\":\"error\",\"timestamp\":3,\"error\":{\"ename\":"
        "\"CommandExecError\",\"evalue\":\"3\",\"traceback\":[\"exit status 3\"]}}\n\n"
        "{\"type\":\"execution_complete\",\"timestamp\":4}\n\n";
    bool all = true;
    for (size_t step = 1; step <= strlen(fail); step++) {
        sse_of(fail, step, true, &s);
        all = all && s.end == OSB_AUDIT_ERROR && s.has_exit && s.exit_code == 3;
    }
    OK(all, "sse: a CommandExecError's evalue is the exit code, at any split; output not read");
    sse_of("{\"type\":\"init\"}\n\n{\"type\":\"execution_complete\",\"timestamp\":4}\n\n", 3, true,
           &s);
    OK(s.end == OSB_AUDIT_COMPLETE && s.has_exit && s.exit_code == 0,
       "sse: execution_complete is exit code 0");
    sse_of("data: {\"type\":\"error\",\"error\":{\"ename\":\"NameError\",\"evalue\":\"name 'x'\"}}"
           "\r\n\r\n",
           1, true, &s);
    OK(s.end == OSB_AUDIT_ERROR && !s.has_exit && strcmp(s.error, "NameError") == 0,
       "sse: a code cell's exception by name (a data: prefix, CRLF)");
    sse_of("{\"code\":\"RUNTIME_ERROR\",\"message\":\"timeout\"}", 4, true, &s);
    OK(s.end == OSB_AUDIT_ERROR && strcmp(s.error, "RUNTIME_ERROR") == 0,
       "sse: a {code,message} event, its last line without a newline");
    sse_of("{\"type\":\"init\"}\n\n{\"type\":\"stdout\",\"text\":\"x\"}\n\n", 5, true, &s);
    OK(s.end == OSB_AUDIT_OPEN && !s.has_exit, "sse: a stream cut before its end: open");
    sse_of("{\"type\":\"execution_comp", 1, false, &s);
    OK(s.end == OSB_AUDIT_OPEN, "sse: half an event is no event");
    sse_of("\x01\xff garbage\n\n\n{]}\n", 2, true, &s);
    OK(s.end == OSB_AUDIT_OPEN, "sse: garbage: nothing");
}

static void test_sse_long(void)
{
    static struct osb_audit_sse s;
    static char stream[64 * 1024];
    size_t n = (size_t)snprintf(stream, sizeof stream, "{\"type\":\"stdout\",\"text\":\"");
    while (n < 40 * 1024)
        stream[n++] = 'x';
    n += (size_t)snprintf(stream + n, sizeof stream - n,
                          "\"}\n\n{\"type\":\"error\",\"timestamp\":3,\"error\":{\"ename\":"
                          "\"CommandExecError\",\"evalue\":\"-1\",\"traceback\":[\"");
    while (n < 60 * 1024)
        stream[n++] = 't';
    snprintf(stream + n, sizeof stream - n, "\"]}}\n\n");
    sse_of(stream, 1000, true, &s);
    OK(s.has_exit && s.exit_code == -1, "sse: a 40 KiB output line skipped, a long traceback cut");
    OK(sizeof s < OSB_AUDIT_MAX_LINE + 256, "sse: the scan is a fixed 1 KiB");
}

static void test_run_paths(void)
{
    const char *runs[] = {"command", "code", "pty", "session/s1/run"};
    const char * not [] = {"command/",        "commands",        "code/context", "session//run",
                           "session/a/b/run", "session/s1/run/", "files/upload", "",
                           "pty/p1"};
    bool ok = true;
    for (size_t i = 0; i < 4; i++) {
        struct osb_audit_run *r = osb_audit_run_new("POST", runs[i]);
        ok = ok && r;
        osb_audit_run_free(r);
    }
    OK(ok, "runs: POST command, code, pty, session/{id}/run");
    ok = !osb_audit_run_new("GET", "command") && !osb_audit_run_new("DELETE", "command");
    for (size_t i = 0; i < sizeof not / sizeof not [0]; i++)
        ok = ok && !osb_audit_run_new("POST", not [i]);
    OK(ok, "runs: not another method or path (execd routes paths exactly)");
}

/* A rotation: the old file moved away, the trail reopened at its path;
 * verify of both in order, of the new one alone (a note), and in the
 * wrong order; a restart on the new file goes on. */
static void test_rotation(void)
{
    char path[256], old[300];
    snprintf(path, sizeof path, "%s/rot.log", dir);
    snprintf(old, sizeof old, "%s/rot.log.1", dir);
    struct osb_audit *a;
    struct osb_err err = {0};
    MUST(osb_audit_open(path, &a, &err));
    put(a, "POST /sandboxes", NULL);
    put(a, "DELETE /sandboxes/:id", "sb-1");
    MUST(rename(path, old));
    MUST(osb_audit_reopen(a, path, &err));
    put(a, "POST /pools", NULL);
    osb_audit_close(a);
    MUST(osb_audit_open(path, &a, &err));
    put(a, "DELETE /pools/:name", NULL);
    osb_audit_close(a);
    struct osb_audit_checked c;
    const char *both[] = {old, path}, *wrong[] = {path, old}, *one[] = {path};
    OK(osb_audit_verify_files(both, 2, &c, &err) == 0 && c.n == 4 && c.from == 0,
       "rotation: old then new verify as one chain (4 records, a restart in between)");
    OK(osb_audit_verify_files(one, 1, &c, &err) == 0 && c.n == 2 && c.from == 2,
       "rotation: the new file alone: ok, continues from seq 2");
    OK(osb_audit_verify_files(wrong, 2, &c, &err) < 0 && c.bad_file == 1 &&
           (strstr(err.msg, "record 5 (line 1)") || !printf("# %s\n", err.msg)),
       "rotation: new then old: broken in the second file");
    size_t n;
    OK(osb_audit_verify(path, &n, &err) == 0 && n == 2, "rotation: verify of one file too");
    unlink(path);
    unlink(old);
}

int main(void)
{
    test_body();
    test_body_cap();
    test_sse();
    test_sse_long();
    test_run_paths();
    if (!mkdtemp(dir))
        abort();
    char path[256], bad[300];
    snprintf(path, sizeof path, "%s/audit.log", dir);
    snprintf(bad, sizeof bad, "%s/bad.log", dir);
    struct osb_audit *a;
    struct osb_err err = {0};
    MUST(osb_audit_open(path, &a, &err));
    put(a, "POST /sandboxes", NULL);
    put(a, "POST /sandboxes/:id/pause", "sb-1");
    osb_audit_close(a);
    MUST(osb_audit_open(path, &a, &err));
    put(a, "DELETE /sandboxes/:id", "sb-2");
    osb_audit_close(a);
    size_t n = 0;
    OK(osb_audit_verify(path, &n, &err) == 0 && n == 3, "three records, one chain across a reopen");
    char *text = strdup(slurp(path));
    OK(strstr(text, "\"seq\":3") && strstr(text, "\"prev\":\"0000000000000000"),
       "seq counts on; the first prev is zeros");

    char *t = strdup(text), *p = strstr(t, "sb-1");
    p[3] = '9';
    spit(bad, t);
    OK(verify_says(bad, "record 2 (line 2): its hash does not match"), "a changed byte: record 2");
    free(t);
    t = strdup(text);
    char *l2 = strchr(t, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    memmove(l2, l3, strlen(l3) + 1);
    spit(bad, t);
    OK(verify_says(bad, "record 2 (line 2): out of sequence"), "a record removed: named");
    free(t);
    t = strdup(text);
    t[strlen(t) - 10] = 0;
    spit(bad, t);
    OK(verify_says(bad, "record 3 (line 3): truncated"), "a cut tail: truncated");

    /* A broken trail takes records after its last line; verify still fails. */
    MUST(osb_audit_open(bad, &a, &err));
    put(a, "POST /pools", NULL);
    osb_audit_close(a);
    OK(verify_says(bad, "record 3 (line 3)"), "a reopened broken trail still names its break");
    OK(strstr(slurp(bad), "POST /pools") != NULL, "  and took the new record");
    free(t);

    json_t *all = osb_audit_list(path, NULL, NULL, 100, &err);
    json_t *one = osb_audit_list(path, "sb-2", NULL, 100, &err);
    json_t *last = osb_audit_list(path, NULL, NULL, 1, &err);
    OK(json_array_size(all) == 3 && json_array_size(one) == 1 && json_array_size(last) == 1 &&
           json_integer_value(json_object_get(json_array_get(last, 0), "seq")) == 3,
       "list: all, by sandbox, the last one");
    OK(osb_audit_list(path, NULL, "not a time", 10, &err) == NULL && err.code == OSB_E_INVALID,
       "list: a bad since is refused");
    json_t *later = osb_audit_list(path, NULL, "2999-01-01T00:00:00Z", 10, &err);
    OK(json_array_size(later) == 0, "list: since in the future: none");
    OK(osb_audit_verify("/nonexistent/audit.log", &n, &err) < 0, "verify: no file is a failure");
    json_decref(all);
    json_decref(one);
    json_decref(last);
    json_decref(later);
    free(text);
    test_rotation();
    unlink(path);
    unlink(bad);
    rmdir(dir);
    return tap_done();
}
