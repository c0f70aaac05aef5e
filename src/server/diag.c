/* Diagnostics (protocol.md section 2 and 1.11), implemented rather than
 * 501: `logs` is the tail of the sandbox's bounded log (execd's and the
 * entrypoint's output, written by the runtime), `events` the lifecycle
 * events from the store. With `scope` the answer is a
 * DiagnosticContentResponse; without it, the legacy text/plain forms
 * (marked `Deprecation: true`), plus `inspect` and `summary`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/xalloc.h"
#include "server/network.h"
#include "server/server.h"
#include "server/timefmt.h"

/* Inline diagnostic content: the runtime bounds each log (1 MiB by
 * default), and one answer carries at most this much of it. */
#define DIAG_MAX_BYTES (1024 * 1024)
#define TEXT "text/plain; charset=utf-8"

struct content {
    struct osb_buf text;
    bool truncated;
    bool full;        /* an append to text failed: answered as an error, not sent cut */
    json_t *warnings; /* array of strings */
};

static void content_init(struct content *c)
{
    osb_buf_init(&c->text, SIZE_MAX);
    c->truncated = c->full = false;
    c->warnings = json_array();
}

static void content_free(struct content *c)
{
    osb_buf_free(&c->text);
    json_decref(c->warnings);
}

/* ------------------------------------------------------------ sources */

/* The last `max` bytes of the log, then the last `lines` lines (0 = all). */
static void read_log(const struct osb_sbx *s, size_t max, long lines, struct content *c)
{
    if (!s->has_handle || !s->handle.log_path[0]) {
        json_array_append_new(c->warnings, json_string("The sandbox has no log yet."));
        return;
    }
    _cleanup_close_ int fd = open(s->handle.log_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        json_array_append_new(c->warnings, json_string("The sandbox's log is not available."));
        return;
    }
    off_t from = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    c->truncated = from > 0;
    char *buf = osb_xmalloc((size_t)(st.st_size - from) + 1);
    ssize_t n = pread(fd, buf, (size_t)(st.st_size - from), from);
    if (n < 0)
        n = 0;
    const char *start = buf;
    if (lines > 0) {
        const char *p = buf + n;
        if (p > buf && p[-1] == '\n')
            p--;
        long seen = 0;
        while (p > buf && seen < lines)
            if (*--p == '\n' && ++seen == lines)
                p++;
        if (p > buf) {
            c->truncated = true;
            start = p;
        }
    }
    if (osb_buf_add(&c->text, start, (size_t)(buf + n - start)) < 0)
        c->full = true;
    free(buf);
}

static void read_events(struct osb_server *srv, const struct osb_sbx *s, long limit,
                        struct content *c)
{
    struct osb_store_event *ev = NULL;
    size_t n = 0;
    struct osb_err err = {0};
    /* One more than asked: whether older events were left out. */
    if (osb_store_events(srv->store, s->id, (size_t)limit + 1, &ev, &n, &err) < 0) {
        json_array_append_new(c->warnings, json_string(err.msg));
        return;
    }
    size_t first = n > (size_t)limit ? n - (size_t)limit : 0;
    for (size_t i = first; i < n; i++) {
        char ts[OSB_TIMEFMT_LEN];
        osb_timefmt_us(ev[i].ts_us, ts);
        if (osb_buf_addf(&c->text, "%s %s%s%s\n", ts, ev[i].type, ev[i].message ? ": " : "",
                         ev[i].message ? ev[i].message : "") < 0)
            c->full = true;
    }
    c->truncated = first > 0;
    osb_store_events_free(ev, n);
}

/* JSON strings must be UTF-8: replace invalid bytes with U+FFFD. NULL if
 * the result does not fit (the buffer is unbounded: a size_t wrap-around). */
static char *utf8_clean(const char *s, size_t n, size_t *out_len)
{
    struct osb_buf b;
    osb_buf_init(&b, SIZE_MAX);
    int rc = 0;
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80         ? 1
                     : (ch >> 5) == 6  ? 2
                     : (ch >> 4) == 14 ? 3
                     : (ch >> 3) == 30 ? 4
                                       : 0;
        bool ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)s[i + k] >> 6) == 2;
        if (ok && len > 1) {
            unsigned cp = ch & (0x7f >> len);
            for (size_t k = 1; k < len; k++)
                cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3f);
            static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
        }
        if (ok && ch != 0) {
            rc |= osb_buf_add(&b, s + i, len);
            i += len;
        } else {
            rc |= osb_buf_adds(&b, ch == 0 ? "\\u0000" : "\xef\xbf\xbd");
            i++;
        }
    }
    if (rc < 0) {
        osb_buf_free(&b);
        return NULL;
    }
    return osb_buf_steal(&b, out_len);
}

/* ---------------------------------------------------------- responses */

static const char *const scopes[] = {"container", "lifecycle", "runtime",
                                     "network",   "process",   "all"};

static bool scope_known(const char *s)
{
    for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
        if (strcmp(s, scopes[i]) == 0)
            return true;
    return false;
}

static bool respond_full(struct osb_http_req *req, const struct content *c)
{
    if (c->full)
        osb_apierr_reply(req, "DIAGNOSTICS::TOO_LARGE",
                         "the diagnostic text does not fit in memory");
    return c->full;
}

static void respond_content(struct osb_http_req *req, const struct osb_sbx *s, const char *kind,
                            const char *scope, struct content *c)
{
    if (respond_full(req, c))
        return;
    size_t len;
    char *text = utf8_clean(c->text.data ? c->text.data : "", c->text.len, &len);
    if (!text) {
        c->full = true;
        respond_full(req, c);
        return;
    }
    json_t *j =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s%,s:b,s:I}", "sandboxId", s->id, "kind", kind, "scope",
                  scope, "delivery", "inline", "contentType", TEXT, "content", text, len,
                  "truncated", c->truncated, "contentLength", (json_int_t)c->text.len);
    free(text);
    if (json_array_size(c->warnings))
        json_object_set(j, "warnings", c->warnings);
    osb_http_respond_json(req, 200, j);
}

static void respond_text(struct osb_http_req *req, struct content *c)
{
    osb_http_add_header(req, "Deprecation", "true");
    for (size_t i = 0; i < json_array_size(c->warnings); i++)
        if (osb_buf_addf(&c->text, "# %s\n", json_string_value(json_array_get(c->warnings, i))) < 0)
            c->full = true;
    if (respond_full(req, c))
        return;
    osb_http_respond(req, 200, TEXT, c->text.data ? c->text.data : "", c->text.len);
}

/* The scope, NULL when absent (legacy form); *bad after answering 400. */
static const char *get_scope(struct osb_http_req *req, bool *bad)
{
    const char *scope = osb_http_req_query(req, "scope");
    *bad = false;
    if (scope && !scope_known(scope)) {
        osb_apierr_reply(req, "DIAGNOSTICS::INVALID_SCOPE",
                         "query parameter 'scope' must be one of container, lifecycle, "
                         "runtime, network, process, all (got '%s')",
                         scope);
        *bad = true;
    }
    return scope;
}

static void h_logs(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    bool bad;
    long tail;
    if (!s)
        return;
    const char *scope = get_scope(req, &bad);
    if (bad || osb_api_query_int(req, "tail", 1, 10000, scope ? 0 : 100, &tail) < 0)
        return;
    struct content c;
    content_init(&c);
    if (scope && strcmp(scope, "lifecycle") == 0)
        read_events(srv, s, OSB_STORE_MAX_EVENTS, &c);
    else if (scope && strcmp(scope, "network") == 0)
        c.full = osb_network_diag(srv, s, &c.text) < 0;
    else
        read_log(s, DIAG_MAX_BYTES, tail, &c);
    if (scope)
        respond_content(req, s, "logs", scope, &c);
    else
        respond_text(req, &c);
    content_free(&c);
}

static void h_events(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    bool bad;
    long limit;
    if (!s)
        return;
    const char *scope = get_scope(req, &bad);
    if (bad || osb_api_query_int(req, "limit", 1, OSB_STORE_MAX_EVENTS,
                                 scope ? OSB_STORE_MAX_EVENTS : 50, &limit) < 0)
        return;
    struct content c;
    content_init(&c);
    read_events(srv, s, limit, &c);
    if (scope)
        respond_content(req, s, "events", scope, &c);
    else
        respond_text(req, &c);
    content_free(&c);
}

/* What its cgroups say now (osb_rt_stats), for a sandbox that runs. */
static int usage(struct osb_server *srv, const struct osb_sbx *s, struct osb_buf *b)
{
    struct osb_rt_stats st;
    struct osb_err err = {0};
    int rc = osb_backend_stats(srv, s, &st, &err);
    if (rc > 0)
        return 0;
    if (rc < 0)
        return osb_buf_addf(b, "  usage: unavailable (%s)\n", err.msg);
    return osb_buf_addf(b, "  memory: %llu bytes\n  cpu: %llu ns\n  pids: %llu\n",
                        (unsigned long long)st.memory_bytes, (unsigned long long)st.cpu_usage_ns,
                        (unsigned long long)st.pids);
}

static void inspect(struct osb_server *srv, const struct osb_sbx *s, struct content *c)
{
    struct osb_buf *b = &c->text;
    char created[OSB_TIMEFMT_LEN], trans[OSB_TIMEFMT_LEN], exp[OSB_TIMEFMT_LEN] = "never";
    osb_timefmt_us(s->created_us, created);
    osb_timefmt_us(s->transition_us, trans);
    if (s->expires_us)
        osb_timefmt_us(s->expires_us, exp);
    char *spec = json_dumps(s->spec, JSON_COMPACT);
    char *md = json_dumps(s->metadata, JSON_COMPACT);
    int rc = osb_buf_addf(b,
                          "Sandbox %s\n  state: %s (%s) %s\n  since: %s\n  created: %s\n"
                          "  expires: %s\n  runtime: %s\n  spec: %s\n  metadata: %s\n",
                          s->id, osb_state_name(s->state), s->reason ? s->reason : "-",
                          s->message ? s->message : "", trans, created, exp, s->runtime,
                          spec ? spec : "{}", md ? md : "{}");
    if (s->has_handle)
        rc |= osb_buf_addf(b, "  pid: %d\n  execd socket: %s\n  log: %s\n", (int)s->handle.pid,
                           s->handle.sock_path, s->handle.log_path);
    rc |= usage(srv, s, b);
    if (rc < 0)
        c->full = true;
    free(spec);
    free(md);
}

static void h_inspect(struct osb_http_req *req, void *ud)
{
    struct osb_sbx *s = osb_api_find(ud, req);
    if (!s)
        return;
    struct content c;
    content_init(&c);
    inspect(ud, s, &c);
    respond_text(req, &c);
    content_free(&c);
}

static void h_summary(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    long tail, nev;
    if (!s || osb_api_query_int(req, "tail", 1, 10000, 50, &tail) < 0 ||
        osb_api_query_int(req, "event_limit", 1, OSB_STORE_MAX_EVENTS, 20, &nev) < 0)
        return;
    struct content c;
    content_init(&c);
    inspect(srv, s, &c);
    if (osb_buf_adds(&c.text, "\nEvents:\n") < 0)
        c.full = true;
    read_events(srv, s, nev, &c);
    if (osb_buf_adds(&c.text, "\nLogs:\n") < 0)
        c.full = true;
    read_log(s, DIAG_MAX_BYTES, tail, &c);
    respond_text(req, &c);
    content_free(&c);
}

const struct osb_http_route osb_api_diag_routes[] = {
    {"GET", "/sandboxes/:id/diagnostics/logs", h_logs, 0, NULL},
    {"GET", "/sandboxes/:id/diagnostics/events", h_events, 0, NULL},
    {"GET", "/sandboxes/:id/diagnostics/inspect", h_inspect, 0, NULL},
    {"GET", "/sandboxes/:id/diagnostics/summary", h_summary, 0, NULL},
};
const size_t osb_api_diag_nroutes = sizeof osb_api_diag_routes / sizeof osb_api_diag_routes[0];
