/* src/server/audit.c on a real file: records appended and chained, the
 * chain continued by a reopened trail, verify on the file and on tampered
 * copies (a byte changed, a record removed, a cut tail), listing with its
 * filters, and a trail that does not verify still accepting records after
 * its last line (the break stays visible). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/audit.h"
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

int main(void)
{
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
    unlink(path);
    unlink(bad);
    rmdir(dir);
    return tap_done();
}
