/* The runtime -> helper spec codec (runtime/init/spec.h): its field table
 * covers every member of the structs, every field round-trips, and each
 * kind of malformed input is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "runtime/init/spec.h"
#include "tap.h"

/* ------------------------------------------------------------ coverage */

/* The members the table names, laid end to end, must fill the struct but
 * for alignment padding: a member added to the struct and not to the table
 * leaves a hole (or a tail) at least as big as itself. */
static void check_coverage(const struct osb_isf_table *t)
{
    size_t n = t->n, order[64], cur = 0;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && t->f[order[j]].off < t->f[order[j - 1]].off; j--) {
            size_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const struct osb_isf *f = &t->f[order[i]];
        if (f->off < cur || f->off - cur >= f->size) {
            printf("# %s: a hole of %zu bytes before \"%s\"\n", t->name, f->off - cur, f->name);
            ok = false;
        }
        cur = f->off + f->size;
    }
    if (t->size - cur >= sizeof(void *)) {
        printf("# %s: %zu bytes after the last field are in no table entry\n", t->name,
               t->size - cur);
        ok = false;
    }
    char what[128];
    snprintf(what, sizeof what, "the %s table covers every member of its struct", t->name);
    OK(ok, what);
    for (size_t i = 0; i < n; i++)
        if (t->f[i].type == OSB_ISF_LIST)
            check_coverage(t->f[i].sub);
}

/* ------------------------------------------------------------ round trip */

#define AT(base, off, T) ((T *)((char *)(base) + (off)))

/* Every field of rec gets a value that names it (seed makes the values of
 * two records differ); lists get two elements. Strings leak into a pool
 * the test frees at the end. */
static char *pool[4096];
static size_t npool;
static char *keep(char *s)
{
    pool[npool++] = s;
    return s;
}

static void fill(const struct osb_isf_table *t, void *rec, int seed)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct osb_isf *f = &t->f[i];
        char v[96];
        snprintf(v, sizeof v, "%s.%s.%d", t->name, f->name, seed);
        switch (f->type) {
        case OSB_ISF_STR:
        case OSB_ISF_OSTR: *AT(rec, f->off, char *) = keep(strdup(v)); break;
        case OSB_ISF_BOOL: *AT(rec, f->off, bool) = (seed + (int)i) % 2; break;
        case OSB_ISF_I64: *AT(rec, f->off, int64_t) = 1000 * seed + (int64_t)i; break;
        case OSB_ISF_ROLE:
            *AT(rec, f->off, enum osb_cg_role) = (enum osb_cg_role)((seed + i) % OSB_CG_NROLES);
            break;
        case OSB_ISF_STRV: {
            char **sv = (char **)keep((char *)calloc(4, sizeof *sv));
            sv[0] = keep(strdup(v));
            sv[1] = keep(strdup("with , and : and \n"));
            *AT(rec, f->off, char **) = sv;
            break;
        }
        case OSB_ISF_LIST: {
            char *arr = keep(calloc(2, f->sub->size));
            for (int k = 0; k < 2; k++)
                fill(f->sub, arr + k * f->sub->size, seed * 10 + k);
            *AT(rec, f->off, char *) = arr;
            *AT(rec, f->count_off, size_t) = 2;
            break;
        }
        case OSB_ISF_COUNT: break; /* set with its list */
        }
    }
}

static int same(const struct osb_isf_table *t, const void *a, const void *b, const char **which)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct osb_isf *f = &t->f[i];
        const void *pa = (const char *)a + f->off, *pb = (const char *)b + f->off;
        *which = f->name;
        switch (f->type) {
        case OSB_ISF_STR:
        case OSB_ISF_OSTR: {
            const char *x = *(char *const *)pa, *y = *(char *const *)pb;
            if (!x != !y || (x && strcmp(x, y) != 0))
                return 0;
            break;
        }
        case OSB_ISF_STRV: {
            char *const *x = *(char **const *)pa, *const *y = *(char **const *)pb;
            size_t k = 0;
            for (; x && x[k]; k++)
                if (!y[k] || strcmp(x[k], y[k]) != 0)
                    return 0;
            if (y[k])
                return 0;
            break;
        }
        case OSB_ISF_LIST: {
            size_t n = *(const size_t *)((const char *)a + f->count_off);
            if (n != *(const size_t *)((const char *)b + f->count_off))
                return 0;
            for (size_t k = 0; k < n; k++)
                if (!same(f->sub, *(char *const *)pa + k * f->sub->size,
                          *(char *const *)pb + k * f->sub->size, which))
                    return 0;
            break;
        }
        default:
            if (memcmp(pa, pb, f->size) != 0)
                return 0;
        }
    }
    return 1;
}

static void test_roundtrip(int seed)
{
    struct osb_init_spec in = {0}, out;
    fill(&osb_init_spec_table, &in, seed);
    size_t len;
    char *enc = osb_init_spec_encode(&in, &len);
    struct osb_err err = {0};
    OK(enc && osb_init_spec_decode(enc, len, &out, &err) == 0, "a spec with every field set "
                                                               "decodes");
    if (err.msg[0])
        printf("# %s\n", err.msg);
    const char *which = "";
    int ok = same(&osb_init_spec_table, &in, &out, &which);
    OK(ok, seed == 1 ? "every field round-trips" : "every field round-trips (other values)");
    if (!ok)
        printf("# field \"%s\" differs\n", which);
    osb_init_spec_free(&out);
    free(enc);
}

static void test_optional_absent(void)
{
    struct osb_init_spec in = {0}, out;
    fill(&osb_init_spec_table, &in, 7);
    in.workdir = in.user = in.netns = in.dns = NULL;
    in.env = NULL;
    size_t len;
    char *enc = osb_init_spec_encode(&in, &len);
    struct osb_err err = {0};
    OK(osb_init_spec_decode(enc, len, &out, &err) == 0 && !out.workdir && !out.user && !out.netns &&
           !out.dns && out.env && !out.env[0],
       "absent optional strings stay NULL; a NULL env decodes empty");
    osb_init_spec_free(&out);
    free(enc);
}

/* ------------------------------------------------------------ malformed */

static void must(int rc)
{
    if (rc < 0) {
        printf("Bail out! buffer full\n");
        exit(1);
    }
}

/* A valid minimal spec as (name, value) pairs, with one pair replaced by
 * repl (NULL value: left out), then extra appended verbatim. */
static const char *base[][2] = {
    {"id", "x"},           {"dir", "/d"},
    {"image", "host"},     {"lower", "/l"},
    {"execd", "/e"},       {"hostname", "x"},
    {"token", "t"},        {"entrypoint", "7:/bin/sh,"},
    {"keep_running", "0"}, {"background", "0"},
    {"env", ""},           {"binds", ""},
    {"n_binds", "0"},      {"cgroups", "33:4:role,2:v2,3:dir,1:/,4:home,1:/,,"},
    {"n_cgroups", "1"},    {"memory", "0"},
    {"cpu", "0"},          {"pids", "64"},
    {"disk", "1048576"},   {"volumes", ""},
    {"n_volumes", "0"},    {"userns", "0"},
};

static char *build(const char *name, const char *value, const char *extra, size_t *len)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 20);
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        const char *val = base[i][1];
        if (name && strcmp(base[i][0], name) == 0) {
            if (!value)
                continue;
            val = value;
        }
        must(osb_buf_addf(&b, "%zu:%s,%zu:", strlen(base[i][0]), base[i][0], strlen(val)));
        must(osb_buf_adds(&b, val));
        must(osb_buf_adds(&b, ","));
    }
    if (extra)
        must(osb_buf_adds(&b, extra));
    return osb_buf_steal(&b, len);
}

static void refused(const char *name, const char *value, const char *extra, const char *want,
                    const char *what)
{
    size_t len;
    char *enc = build(name, value, extra, &len);
    struct osb_init_spec out;
    struct osb_err err = {0};
    int r = osb_init_spec_decode(enc, len, &out, &err);
    OK(r < 0 && strstr(err.msg, want), what);
    if (r == 0)
        osb_init_spec_free(&out);
    else if (!strstr(err.msg, want))
        printf("# got: %s\n", err.msg);
    free(enc);
}

static void test_malformed(void)
{
    size_t len;
    char *enc = build(NULL, NULL, NULL, &len);
    struct osb_init_spec out;
    struct osb_err err = {0};
    OK(osb_init_spec_decode(enc, len, &out, &err) == 0 && out.n_cgroups == 1 &&
           out.cgroups[0].role == OSB_CG_V2 && out.pids_max == 64,
       "the minimal spec decodes");
    osb_init_spec_free(&out);
    free(enc);
    refused(NULL, NULL, "5:bogus,1:x,", "unknown field \"bogus\"", "an unknown field");
    refused(NULL, NULL, "2:id,1:y,", "\"id\": appears twice", "a duplicate field");
    refused("token", NULL, NULL, "\"token\": is missing", "a missing required field");
    refused("n_cgroups", NULL, NULL, "\"n_cgroups\": is missing", "a missing count");
    refused("keep_running", "2", NULL, "\"keep_running\": must be 0 or 1", "a bad bool");
    refused("background", "x", NULL, "\"background\": must be 0 or 1", "a bad bool (background)");
    refused("memory", "-1", NULL, "\"memory\": must be a non-negative integer",
            "a negative integer");
    refused("pids", "12x", NULL, "\"pids\"", "an integer with junk");
    refused("pids", "012", NULL, "\"pids\"", "an integer with a leading zero");
    refused("pids", "99999999999999999999", NULL, "\"pids\"", "an integer that overflows");
    refused("entrypoint", "", NULL, "\"entrypoint\" is empty", "an empty entrypoint");
    refused("entrypoint", "7:/bin/sh", NULL, "\"entrypoint\": not a list", "a bad string list");
    refused("n_cgroups", "2", NULL, "\"n_cgroups\": does not match", "a count that lies");
    refused("cgroups", "34:4:role,3:v9x,3:dir,1:/,4:home,1:/,,", NULL, "unknown cgroup role",
            "an unknown cgroup role");
    refused("cgroups", "22:4:role,2:v2,3:dir,1:/,,", NULL, "\"home\": is missing",
            "a list element missing a field");
    refused(NULL, NULL, "x", "malformed or truncated", "trailing bytes");
    refused(NULL, NULL, "2:id", "malformed or truncated", "a truncated field");
    refused(NULL, NULL, "99999999999:", "malformed or truncated", "a huge length");
}

static void test_nul_in_string(void)
{
    const char raw[] = "2:id,3:a\0b,";
    struct osb_init_spec out;
    struct osb_err err = {0};
    int r = osb_init_spec_decode(raw, sizeof raw - 1, &out, &err);
    OK(r < 0 && strstr(err.msg, "NUL"), "a string holding a NUL byte is refused");
}

int main(void)
{
    check_coverage(&osb_init_spec_table);
    test_roundtrip(1);
    test_roundtrip(2);
    test_optional_absent();
    test_malformed();
    test_nul_in_string();
    for (size_t i = 0; i < npool; i++)
        free(pool[i]);
    return tap_done();
}
