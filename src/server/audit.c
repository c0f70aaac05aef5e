#include "server/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "server/timefmt.h"

#define HASH_TAG ",\"hash\":\""
#define TAG_LEN (sizeof HASH_TAG - 1)
#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"
#define MAX_FILE ((size_t)1 << 30)

struct osb_audit {
    int fd;
    uint64_t seq;
    char prev[65];
};

static void sha_hex(const char *a, size_t an, const char *b, size_t bn, char out[65])
{
    unsigned char md[32];
    unsigned int ml = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 || EVP_DigestUpdate(c, a, an) != 1 ||
        EVP_DigestUpdate(c, b, bn) != 1 || EVP_DigestFinal_ex(c, md, &ml) != 1)
        abort(); /* out of memory: as osb_xmalloc */
    EVP_MD_CTX_free(c);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* One line (no newline): its own hash checked, its seq and prev read. */
static const char *check_line(const char *line, size_t len, uint64_t *seq, char prev[65],
                              char hash[65])
{
    if (len < TAG_LEN + 66 || line[len - 1] != '}' || line[len - 2] != '"')
        return "no hash at its end";
    const char *h = line + len - 66;
    if (memcmp(h - TAG_LEN, HASH_TAG, TAG_LEN) != 0)
        return "no hash at its end";
    char want[65];
    sha_hex(line, (size_t)(h - TAG_LEN - line), "}", 1, want);
    if (memcmp(want, h, 64) != 0)
        return "its hash does not match its content (edited)";
    memcpy(hash, h, 64);
    hash[64] = 0;
    json_t *j = json_loadb(line, len, 0, NULL);
    json_t *s = json_object_get(j, "seq"), *p = json_object_get(j, "prev");
    const char *why = NULL;
    if (!json_is_integer(s) || json_integer_value(s) < 1 || !json_is_string(p) ||
        json_string_length(p) != 64)
        why = "not a record (seq, prev)";
    else {
        *seq = (uint64_t)json_integer_value(s);
        memcpy(prev, json_string_value(p), 65);
    }
    json_decref(j);
    return why;
}

static int slurp(const char *path, char **buf, size_t *len, struct osb_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    *buf = NULL;
    *len = 0;
    if (fd < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open %s", path);
    if (fstat(fd, &st) < 0 || (size_t)st.st_size > MAX_FILE) {
        close(fd);
        return osb_err_set(err, OSB_E_TOOBIG, "%s: not readable or over 1 GiB", path);
    }
    *buf = osb_xmalloc((size_t)st.st_size + 1);
    ssize_t r;
    while (*len < (size_t)st.st_size && (r = read(fd, *buf + *len, (size_t)st.st_size - *len)) > 0)
        *len += (size_t)r;
    (*buf)[*len] = 0;
    close(fd);
    return 0;
}

/* A trail's first file after a rotation (SIGHUP) starts where the file
 * before it ended: when buf's first record links to an earlier one (seq
 * past 1, prev not zeros), the chain is taken to stand there. */
static void continued(const char *buf, size_t len, uint64_t *seq, char last[65])
{
    const char *nl = memchr(buf, '\n', len);
    uint64_t s;
    char prev[65], hash[65];
    if (nl && !check_line(buf, (size_t)(nl - buf), &s, prev, hash) && s > 1 &&
        strcmp(prev, ZEROS) != 0) {
        *seq = s - 1;
        memcpy(last, prev, 65);
    }
}

/* Walks the chain of buf on from *seq and last (0 and zeros: buf starts
 * the trail, or continues one, see continued()): 0 (n records, the last
 * hash and seq), or -1 naming the first broken record. */
static int walk(const char *buf, size_t len, size_t *n, uint64_t *seq, char last[65],
                struct osb_err *err)
{
    size_t off = 0, line = 0;
    *n = 0;
    if (*seq == 0)
        continued(buf, len, seq, last);
    while (off < len) {
        const char *nl = memchr(buf + off, '\n', len - off);
        line++;
        if (!nl)
            return osb_err_set(err, OSB_E_INTEGRITY,
                               "record %llu (line %zu): truncated (no end of line)",
                               (unsigned long long)*seq + 1, line);
        uint64_t s;
        char prev[65], hash[65];
        const char *why = check_line(buf + off, (size_t)(nl - buf - off), &s, prev, hash);
        if (!why && s != *seq + 1)
            why = "out of sequence (a record was removed or moved)";
        if (!why && strcmp(prev, last) != 0)
            why = "does not follow the record before it (prev)";
        if (why)
            return osb_err_set(err, OSB_E_INTEGRITY, "record %llu (line %zu): %s",
                               (unsigned long long)*seq + 1, line, why);
        *seq = s;
        memcpy(last, hash, 65);
        (*n)++;
        off = (size_t)(nl - buf) + 1;
    }
    return 0;
}

int osb_audit_verify_files(const char *const *paths, size_t npaths, struct osb_audit_checked *out,
                           struct osb_err *err)
{
    char last[65] = ZEROS;
    uint64_t seq = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < npaths; i++) {
        char *buf;
        size_t len, n;
        out->bad_file = i;
        if (access(paths[i], F_OK) < 0) /* a trail deleted whole is not an empty one */
            return osb_err_sys(err, "record %llu: %s", (unsigned long long)seq + 1, paths[i]);
        if (slurp(paths[i], &buf, &len, err) < 0)
            return -1;
        int r = walk(buf ? buf : "", len, &n, &seq, last, err);
        free(buf);
        if (r < 0)
            return -1;
        if (!out->n && n) /* the first record given: where it stands */
            out->from = seq - n;
        out->n += n;
    }
    return 0;
}

int osb_audit_verify(const char *path, size_t *n, struct osb_err *err)
{
    struct osb_audit_checked c;
    int r = osb_audit_verify_files(&path, 1, &c, err);
    *n = c.n;
    return r;
}

/* The chain's end in buf, to go on from: the last line's seq and hash when
 * it checks, else what walk reached. */
static void chain_end(const char *buf, size_t len, struct osb_audit *a, size_t n)
{
    size_t end = len;
    while (end && buf[end - 1] == '\n')
        end--;
    size_t start = end;
    while (start && buf[start - 1] != '\n')
        start--;
    char prev[65], hash[65];
    uint64_t s;
    if (end > start && !check_line(buf + start, end - start, &s, prev, hash)) {
        a->seq = s;
        memcpy(a->prev, hash, 65);
    } else {
        a->seq = n;
        memcpy(a->prev, ZEROS, 65);
    }
}

int osb_audit_open(const char *path, struct osb_audit **out, struct osb_err *err)
{
    struct osb_audit *a = osb_xcalloc(1, sizeof *a);
    char *buf;
    size_t len, n;
    *out = NULL;
    a->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (a->fd < 0 || slurp(path, &buf, &len, err) < 0) {
        if (a->fd < 0)
            osb_err_sys(err, "audit trail %s", path);
        osb_audit_close(a);
        return -1;
    }
    struct osb_err werr = {0};
    memcpy(a->prev, ZEROS, 65);
    if (walk(buf ? buf : "", len, &n, &a->seq, a->prev, &werr) < 0) {
        /* Noticed, not repaired: verify keeps naming the break. */
        osb_err_log("audit trail %s does not verify: %s; new records follow its last line", path,
                    werr.msg);
        chain_end(buf, len, a, n);
        if (len && buf[len - 1] != '\n' && write(a->fd, "\n", 1) != 1)
            osb_err_log("audit trail %s: %s", path, strerror(errno));
    }
    free(buf);
    *out = a;
    return 0;
}

int osb_audit_reopen(struct osb_audit *a, const char *path, struct osb_err *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return osb_err_sys(err, "audit trail %s", path);
    close(a->fd);
    a->fd = fd;
    return 0;
}

void osb_audit_close(struct osb_audit *a)
{
    if (!a)
        return;
    if (a->fd >= 0)
        close(a->fd);
    free(a);
}

void osb_audit_append(struct osb_audit *a, const struct osb_audit_rec *r)
{
    char now[OSB_TIMEFMT_LEN], hash[65];
    osb_timefmt_us(osb_now_us(), now);
    json_t *j =
        json_pack("{s:I,s:s,s:s,s:s,s:s?,s:s,s:i,s:o,s:s}", "seq", (json_int_t)(a->seq + 1), "time",
                  now, "actor", r->actor, "action", r->action, "sandboxId", r->sandbox_id,
                  "requestId", r->request_id ? r->request_id : "", "status", r->status, "detail",
                  r->detail ? json_incref(r->detail) : json_object(), "prev", a->prev);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!body) {
        osb_err_log("audit trail: a record could not be made (%s)", r->action);
        return;
    }
    size_t bl = strlen(body) - 1; /* without its final '}' */
    sha_hex(body, bl, "}", 1, hash);
    char *line = osb_xasprintf("%.*s" HASH_TAG "%s\"}\n", (int)bl, body, hash);
    size_t ll = strlen(line);
    if (write(a->fd, line, ll) != (ssize_t)ll)
        osb_err_log("audit trail: write: %s", strerror(errno));
    else {
        a->seq++;
        memcpy(a->prev, hash, 65);
    }
    free(line);
    free(body);
}

static bool wanted(json_t *rec, const char *sandbox, int64_t since)
{
    const char *sb = json_string_value(json_object_get(rec, "sandboxId"));
    const char *when = json_string_value(json_object_get(rec, "time"));
    int64_t t = 0;
    if (sandbox && (!sb || strcmp(sb, sandbox) != 0))
        return false;
    return since < 0 || (when && osb_timefmt_parse(when, &t) == 0 && t >= since);
}

json_t *osb_audit_list(const char *path, const char *sandbox, const char *since, size_t limit,
                       struct osb_err *err)
{
    int64_t from = -1;
    if (since && osb_timefmt_parse(since, &from) < 0) {
        osb_err_set(err, OSB_E_INVALID, "since: not an RFC 3339 time");
        return NULL;
    }
    char *buf;
    size_t len;
    if (slurp(path, &buf, &len, err) < 0)
        return NULL;
    json_t *out = json_array();
    for (char *p = buf, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
        json_t *rec = json_loadb(p, (size_t)(nl - p), 0, NULL);
        if (rec && wanted(rec, sandbox, from))
            json_array_append(out, rec);
        json_decref(rec);
        while (json_array_size(out) > limit)
            json_array_remove(out, 0);
    }
    free(buf);
    return out;
}
