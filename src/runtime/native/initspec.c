/* The runtime -> helper spec codec (init/spec.h): one field table drives
 * the encoder, the decoder and the free, so a field cannot be written and
 * not read. Linked into the runtime and into osb-sandbox-init. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/xalloc.h"
#include "runtime/init/spec.h"

#define M(T, f) offsetof(struct T, f), sizeof(((struct T *)0)->f)
#define F(T, name, type, f) \
    { \
        name, type, M(T, f), 0, NULL \
    }
#define L(T, name, f, count, sub) \
    { \
        name, OSB_ISF_LIST, M(T, f), offsetof(struct T, count), sub \
    }
#define TABLE(T, name, fields) \
    { \
        name, sizeof(struct T), fields, sizeof fields / sizeof fields[0] \
    }

static const struct osb_isf bind_fields[] = {
    F(osb_init_bind, "src", OSB_ISF_STR, src),
    F(osb_init_bind, "dst", OSB_ISF_STR, dst),
};
static const struct osb_isf_table bind_table = TABLE(osb_init_bind, "binds", bind_fields);

static const struct osb_isf cgroup_fields[] = {
    F(osb_init_cgroup, "role", OSB_ISF_ROLE, role),
    F(osb_init_cgroup, "dir", OSB_ISF_STR, dir),
    F(osb_init_cgroup, "home", OSB_ISF_STR, home),
};
static const struct osb_isf_table cgroup_table = TABLE(osb_init_cgroup, "cgroups", cgroup_fields);

static const struct osb_isf volume_fields[] = {
    F(osb_init_volume, "name", OSB_ISF_STR, name),
    F(osb_init_volume, "root", OSB_ISF_STR, src_root),
    F(osb_init_volume, "rel", OSB_ISF_STR, src_rel),
    F(osb_init_volume, "sub", OSB_ISF_STR, sub_path),
    F(osb_init_volume, "dst", OSB_ISF_STR, dst),
    F(osb_init_volume, "ro", OSB_ISF_BOOL, read_only),
};
static const struct osb_isf_table volume_table = TABLE(osb_init_volume, "volumes", volume_fields);

static const struct osb_isf spec_fields[] = {
    F(osb_init_spec, "id", OSB_ISF_STR, id),
    F(osb_init_spec, "dir", OSB_ISF_STR, dir),
    F(osb_init_spec, "image", OSB_ISF_STR, image),
    F(osb_init_spec, "lower", OSB_ISF_STR, lower),
    F(osb_init_spec, "execd", OSB_ISF_STR, execd),
    F(osb_init_spec, "hostname", OSB_ISF_STR, hostname),
    F(osb_init_spec, "token", OSB_ISF_STR, token),
    F(osb_init_spec, "workdir", OSB_ISF_OSTR, workdir),
    F(osb_init_spec, "user", OSB_ISF_OSTR, user),
    F(osb_init_spec, "netns", OSB_ISF_OSTR, netns),
    F(osb_init_spec, "dns", OSB_ISF_OSTR, dns),
    F(osb_init_spec, "entrypoint", OSB_ISF_STRV, entrypoint),
    F(osb_init_spec, "keep_running", OSB_ISF_BOOL, keep_running),
    F(osb_init_spec, "background", OSB_ISF_BOOL, background),
    F(osb_init_spec, "env", OSB_ISF_STRV, env),
    L(osb_init_spec, "binds", binds, n_binds, &bind_table),
    F(osb_init_spec, "n_binds", OSB_ISF_COUNT, n_binds),
    L(osb_init_spec, "cgroups", cgroups, n_cgroups, &cgroup_table),
    F(osb_init_spec, "n_cgroups", OSB_ISF_COUNT, n_cgroups),
    F(osb_init_spec, "memory", OSB_ISF_I64, memory_bytes),
    F(osb_init_spec, "cpu", OSB_ISF_I64, cpu_millicores),
    F(osb_init_spec, "pids", OSB_ISF_I64, pids_max),
    F(osb_init_spec, "disk", OSB_ISF_I64, disk_bytes),
    L(osb_init_spec, "volumes", volumes, n_volumes, &volume_table),
    F(osb_init_spec, "n_volumes", OSB_ISF_COUNT, n_volumes),
    F(osb_init_spec, "userns", OSB_ISF_I64, userns_first),
};
const struct osb_isf_table osb_init_spec_table = TABLE(osb_init_spec, "init spec", spec_fields);

#define AT(base, off, T) ((T *)((char *)(base) + (off)))
#define CAT(base, off, T) ((T const *)((const char *)(base) + (off)))

/* ------------------------------------------------------------ encode */

static int put_net(struct osb_buf *b, const char *data, size_t len)
{
    if (osb_buf_addf(b, "%zu:", len) < 0 || osb_buf_add(b, data, len) < 0 ||
        osb_buf_add(b, ",", 1) < 0)
        return -1;
    return 0;
}

static int put_str_net(struct osb_buf *b, const char *s)
{
    return put_net(b, s, strlen(s));
}

static int encode_record(struct osb_buf *b, const struct osb_isf_table *t, const void *rec);

/* The value of one field into v (reset first). */
static int encode_value(struct osb_buf *v, const struct osb_isf *f, const void *rec)
{
    char num[32];
    switch (f->type) {
    case OSB_ISF_STR:
    case OSB_ISF_OSTR: return osb_buf_adds(v, *CAT(rec, f->off, char *));
    case OSB_ISF_BOOL: return osb_buf_adds(v, *CAT(rec, f->off, bool) ? "1" : "0");
    case OSB_ISF_I64:
        snprintf(num, sizeof num, "%lld", (long long)*CAT(rec, f->off, int64_t));
        return osb_buf_adds(v, num);
    case OSB_ISF_COUNT:
        snprintf(num, sizeof num, "%zu", *CAT(rec, f->off, size_t));
        return osb_buf_adds(v, num);
    case OSB_ISF_ROLE:
        return osb_buf_adds(v, osb_cg_role_name(*CAT(rec, f->off, enum osb_cg_role)));
    case OSB_ISF_STRV: {
        char **sv = *CAT(rec, f->off, char **);
        for (size_t i = 0; sv && sv[i]; i++)
            if (put_str_net(v, sv[i]) < 0)
                return -1;
        return 0;
    }
    case OSB_ISF_LIST: {
        const char *arr = *CAT(rec, f->off, char *);
        size_t n = *CAT(rec, f->count_off, size_t);
        for (size_t i = 0; i < n; i++) {
            struct osb_buf one;
            osb_buf_init(&one, OSB_INIT_SPEC_MAX);
            int r = encode_record(&one, f->sub, arr + i * f->sub->size);
            if (r == 0)
                r = put_net(v, one.data ? one.data : "", one.len);
            osb_buf_free(&one);
            if (r < 0)
                return -1;
        }
        return 0;
    }
    }
    return -1;
}

static int encode_record(struct osb_buf *b, const struct osb_isf_table *t, const void *rec)
{
    struct osb_buf v;
    osb_buf_init(&v, OSB_INIT_SPEC_MAX);
    int r = 0;
    for (size_t i = 0; i < t->n && r == 0; i++) {
        const struct osb_isf *f = &t->f[i];
        if (f->type == OSB_ISF_OSTR && !*CAT(rec, f->off, char *))
            continue;
        osb_buf_reset(&v);
        r = encode_value(&v, f, rec);
        if (r == 0)
            r = put_str_net(b, f->name);
        if (r == 0)
            r = put_net(b, v.data ? v.data : "", v.len);
    }
    osb_buf_free(&v);
    return r;
}

char *osb_init_spec_encode(const struct osb_init_spec *s, size_t *len)
{
    struct osb_buf b;
    osb_buf_init(&b, OSB_INIT_SPEC_MAX);
    if (encode_record(&b, &osb_init_spec_table, s) < 0) {
        osb_buf_free(&b);
        return NULL;
    }
    if (!b.data && osb_buf_add(&b, "", 0) < 0) {
        osb_buf_free(&b);
        return NULL;
    }
    return osb_buf_steal(&b, len);
}

/* ------------------------------------------------------------ decode */

struct cursor {
    const char *p;
    size_t n;
};

/* One netstring off c; its bytes (not NUL-terminated) in *data, *len. */
static int take_net(struct cursor *c, const char **data, size_t *len)
{
    size_t i = 0, v = 0;
    while (i < c->n && i < 10 && c->p[i] >= '0' && c->p[i] <= '9')
        v = v * 10 + (size_t)(c->p[i++] - '0');
    if (i == 0 || i >= c->n || c->p[i] != ':' || (i > 1 && c->p[0] == '0'))
        return -1;
    i++;
    if (v > c->n - i || c->n - i - v < 1 || c->p[i + v] != ',')
        return -1;
    *data = c->p + i;
    *len = v;
    c->p += i + v + 1;
    c->n -= i + v + 1;
    return 0;
}

static int bad(struct osb_err *err, const struct osb_isf_table *t, const char *f, const char *why)
{
    return osb_err_set(err, OSB_E_INVALID, "%s: field \"%s\": %s", t->name, f, why);
}

static char *dup_str(const char *d, size_t n)
{
    return memchr(d, '\0', n) ? NULL : osb_xstrndup(d, n);
}

static int parse_i64(const char *d, size_t n, int64_t *out)
{
    if (n == 0 || n > 19 || (n > 1 && d[0] == '0'))
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        v = v * 10 + (d[i] - '0');
    }
    *out = v;
    return 0;
}

static int decode_record(const char *d, size_t n, const struct osb_isf_table *t, void *rec,
                         struct osb_err *err);

static int decode_strv(struct cursor c, char ***out)
{
    size_t cap = 4, k = 0;
    char **v = osb_xcalloc(cap, sizeof *v);
    *out = v;
    while (c.n) {
        const char *d;
        size_t n;
        if (take_net(&c, &d, &n) < 0)
            return -1;
        if (k + 1 == cap) {
            v = osb_xrealloc(v, (cap *= 2) * sizeof *v);
            *out = v;
        }
        v[k + 1] = NULL;
        if (!(v[k] = dup_str(d, n)))
            return -1;
        k++;
    }
    return 0;
}

static int decode_list(struct cursor c, const struct osb_isf *f, void *rec, struct osb_err *err)
{
    size_t cap = 4, k = 0, sz = f->sub->size;
    char *arr = osb_xcalloc(cap, sz);
    *AT(rec, f->off, char *) = arr;
    while (c.n) {
        const char *d;
        size_t n;
        if (take_net(&c, &d, &n) < 0)
            return bad(err, f->sub, "?", "not a record");
        if (k == cap) {
            arr = osb_xrealloc(arr, cap * 2 * sz);
            memset(arr + cap * sz, 0, cap * sz);
            cap *= 2;
            *AT(rec, f->off, char *) = arr;
        }
        /* Counted before decoding, so a half-decoded element is freed. */
        *AT(rec, f->count_off, size_t) = ++k;
        if (decode_record(d, n, f->sub, arr + (k - 1) * sz, err) < 0)
            return osb_err_wrap(err, "%s[%zu]", f->name, k - 1);
    }
    return 0;
}

static int decode_value(const char *d, size_t n, const struct osb_isf *f,
                        const struct osb_isf_table *t, void *rec, struct osb_err *err)
{
    int64_t v;
    int role;
    char name[32];
    switch (f->type) {
    case OSB_ISF_STR:
    case OSB_ISF_OSTR:
        if (!(*AT(rec, f->off, char *) = dup_str(d, n)))
            return bad(err, t, f->name, "holds a NUL byte");
        return 0;
    case OSB_ISF_BOOL:
        if (n != 1 || (d[0] != '0' && d[0] != '1'))
            return bad(err, t, f->name, "must be 0 or 1");
        *AT(rec, f->off, bool) = d[0] == '1';
        return 0;
    case OSB_ISF_I64:
        if (parse_i64(d, n, &v) < 0)
            return bad(err, t, f->name, "must be a non-negative integer");
        *AT(rec, f->off, int64_t) = v;
        return 0;
    case OSB_ISF_COUNT: return 0; /* read by decode_fields, checked by check_counts */
    case OSB_ISF_ROLE:
        snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), d);
        if (n >= sizeof name || (role = osb_cg_role_parse(name)) < 0)
            return bad(err, t, f->name, "unknown cgroup role");
        *AT(rec, f->off, enum osb_cg_role) = (enum osb_cg_role)role;
        return 0;
    case OSB_ISF_STRV:
        if (decode_strv((struct cursor){d, n}, AT(rec, f->off, char **)) < 0)
            return bad(err, t, f->name, "not a list of strings");
        return 0;
    case OSB_ISF_LIST: return decode_list((struct cursor){d, n}, f, rec, err);
    }
    return bad(err, t, f->name, "unknown type");
}

static const struct osb_isf *field_named(const struct osb_isf_table *t, const char *d, size_t n,
                                         size_t *idx)
{
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->f[i].name) == n && memcmp(t->f[i].name, d, n) == 0) {
            *idx = i;
            return &t->f[i];
        }
    return NULL;
}

/* Lists and their counts are checked once both are read. */
static int check_counts(const struct osb_isf_table *t, const void *rec, const int64_t *counts,
                        struct osb_err *err)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct osb_isf *f = &t->f[i];
        if (f->type != OSB_ISF_LIST)
            continue;
        for (size_t j = 0; j < t->n; j++)
            if (t->f[j].off == f->count_off &&
                counts[j] != (int64_t)*CAT(rec, f->count_off, size_t))
                return bad(err, t, t->f[j].name, "does not match its list");
    }
    return 0;
}

static int decode_fields(struct cursor c, const struct osb_isf_table *t, void *rec, bool *seen,
                         int64_t *counts, struct osb_err *err)
{
    while (c.n) {
        const char *kd, *vd;
        size_t kn, vn, idx;
        if (take_net(&c, &kd, &kn) < 0 || take_net(&c, &vd, &vn) < 0)
            return osb_err_set(err, OSB_E_INVALID, "%s: malformed or truncated", t->name);
        const struct osb_isf *f = field_named(t, kd, kn, &idx);
        if (!f)
            return osb_err_set(err, OSB_E_INVALID, "%s: unknown field \"%.*s\"", t->name,
                               (int)(kn < 64 ? kn : 64), kd);
        if (seen[idx])
            return bad(err, t, f->name, "appears twice");
        seen[idx] = true;
        if (f->type == OSB_ISF_COUNT) {
            if (parse_i64(vd, vn, &counts[idx]) < 0)
                return bad(err, t, f->name, "must be a non-negative integer");
            continue;
        }
        if (decode_value(vd, vn, f, t, rec, err) < 0)
            return -1;
    }
    return 0;
}

static int decode_record(const char *d, size_t n, const struct osb_isf_table *t, void *rec,
                         struct osb_err *err)
{
    bool seen[64] = {0};
    int64_t counts[64] = {0};
    if (t->n > 64)
        return osb_err_set(err, OSB_E_INTERNAL, "%s: too many fields", t->name);
    if (decode_fields((struct cursor){d, n}, t, rec, seen, counts, err) < 0)
        return -1;
    for (size_t i = 0; i < t->n; i++)
        if (!seen[i] && t->f[i].type != OSB_ISF_OSTR)
            return bad(err, t, t->f[i].name, "is missing");
    return check_counts(t, rec, counts, err);
}

static void free_record(const struct osb_isf_table *t, void *rec);

static void free_value(const struct osb_isf *f, void *rec)
{
    if (f->type == OSB_ISF_STR || f->type == OSB_ISF_OSTR) {
        free(*AT(rec, f->off, char *));
    } else if (f->type == OSB_ISF_STRV) {
        char **v = *AT(rec, f->off, char **);
        for (size_t i = 0; v && v[i]; i++)
            free(v[i]);
        free(v);
    } else if (f->type == OSB_ISF_LIST) {
        char *arr = *AT(rec, f->off, char *);
        size_t n = *AT(rec, f->count_off, size_t);
        for (size_t i = 0; arr && i < n; i++)
            free_record(f->sub, arr + i * f->sub->size);
        free(arr);
    }
}

static void free_record(const struct osb_isf_table *t, void *rec)
{
    for (size_t i = 0; i < t->n; i++)
        free_value(&t->f[i], rec);
}

void osb_init_spec_free(struct osb_init_spec *s)
{
    free_record(&osb_init_spec_table, s);
    memset(s, 0, sizeof *s);
}

int osb_init_spec_decode(const char *data, size_t len, struct osb_init_spec *out,
                         struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    if (decode_record(data, len, &osb_init_spec_table, out, err) < 0) {
        osb_init_spec_free(out);
        return -1;
    }
    if (!out->entrypoint[0]) {
        osb_init_spec_free(out);
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"entrypoint\" is empty");
    }
    return 0;
}
