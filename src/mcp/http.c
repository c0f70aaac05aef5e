/* The streamable HTTP transport (MCP 2025-06-18) on one endpoint, /mcp:
 * POST carries JSON-RPC and is answered with application/json (a message
 * that needs no answer gets 202), GET is 405 (we open no server-initiated
 * stream), DELETE ends a session. initialize issues an Mcp-Session-Id that
 * every later request must carry (400 without, 404 when unknown or ended).
 * Requests from a browser page of another origin are refused (403), and so
 * is a Host that is not this machine while we listen on loopback: both
 * close the DNS-rebinding hole. One thread: a poll loop over the
 * connections; a tool call is answered before the next request is read. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <http_parser.h>

#include "common/xalloc.h"
#include "mcp/mcp.h"

#define MAX_CONNS 64
#define MAX_BODY (4 * 1024 * 1024)
#define MAX_SESSIONS 256
#define MAX_HEAD (64 * 1024)

enum hdr { H_NONE, H_SESSION, H_ORIGIN, H_VERSION, H_HOST, H_CTYPE, H_COUNT };

struct conn {
    int fd;
    http_parser p;
    char *body;
    size_t body_len, head_len;
    char url[256], hname[64];
    char h[H_COUNT][256]; /* the headers we read, by enum hdr */
    enum hdr want;        /* which header's value is being read */
    bool in_field;        /* the last piece was of a header's name */
    bool done, too_big;
};

struct session {
    char id[33];
    char version[16];
};

struct srv {
    struct mcp *m;
    bool loopback; /* listening on a loopback address: check Host too */
    struct conn *conns[MAX_CONNS];
    struct session *sessions[MAX_SESSIONS];
};

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    size_t n = strlen(c->url);
    snprintf(c->url + n, sizeof c->url - n, "%.*s", (int)len, at);
    return 0;
}

/* A header's name or value may come in several pieces (split across reads):
 * the pieces are joined; a value's first piece decides where it goes. */
static int on_field(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    c->head_len += len;
    if (!c->in_field)
        c->hname[0] = 0;
    c->in_field = true;
    size_t n = strlen(c->hname);
    snprintf(c->hname + n, sizeof c->hname - n, "%.*s", (int)len, at);
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    c->head_len += len;
    if (c->head_len > MAX_HEAD)
        return 1; /* the parser stops: 400 */
    if (c->in_field) {
        static const char *const names[H_COUNT] = {
            [H_SESSION] = "mcp-session-id",       [H_ORIGIN] = "origin",
            [H_VERSION] = "mcp-protocol-version", [H_HOST] = "host",
            [H_CTYPE] = "content-type",
        };
        c->in_field = false;
        c->want = H_NONE;
        for (int i = 1; i < H_COUNT; i++)
            if (!strcasecmp(c->hname, names[i]))
                c->want = (enum hdr)i;
        if (c->want != H_NONE)
            c->h[c->want][0] = 0;
    }
    if (c->want != H_NONE) {
        size_t n = strlen(c->h[c->want]);
        snprintf(c->h[c->want] + n, sizeof c->h[c->want] - n, "%.*s", (int)len, at);
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (c->too_big || c->body_len + len > MAX_BODY) {
        c->too_big = true;
        return 0;
    }
    c->body = osb_xrealloc(c->body, c->body_len + len + 1);
    memcpy(c->body + c->body_len, at, len);
    c->body_len += len;
    c->body[c->body_len] = 0;
    return 0;
}

static int on_done(http_parser *p)
{
    struct conn *c = p->data;
    c->done = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {.on_url = on_url,
                                              .on_header_field = on_field,
                                              .on_header_value = on_value,
                                              .on_body = on_body,
                                              .on_message_complete = on_done};

static void reset(struct conn *c)
{
    free(c->body);
    int fd = c->fd;
    memset(c, 0, sizeof *c);
    c->fd = fd;
    http_parser_init(&c->p, HTTP_REQUEST);
    c->p.data = c;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void reply(struct conn *c, int status, const char *reason, const char *extra,
                  const char *body)
{
    char head[512];
    size_t n = body ? strlen(body) : 0;
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\n%s%sContent-Length: %zu\r\nCache-Control: no-store\r\n\r\n",
                     status, reason, body ? "Content-Type: application/json\r\n" : "",
                     extra ? extra : "", n);
    send_all(c->fd, head, (size_t)h);
    if (n)
        send_all(c->fd, body, n);
}

static void reply_error(struct conn *c, int status, const char *reason, int code, const char *msg)
{
    json_t *e = mcp_rpc_error(NULL, code, msg);
    char *t = json_dumps(e, JSON_COMPACT);
    reply(c, status, reason, NULL, t);
    free(t);
    json_decref(e);
}

/* host[:port] names this machine's loopback. */
static bool local_host(const char *h)
{
    static const char *const ok[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        size_t n = strlen(ok[i]);
        if (!strncasecmp(h, ok[i], n) && (h[n] == 0 || h[n] == ':' || h[n] == '/'))
            return true;
    }
    return false;
}

/* Browsers send Origin; only pages served from this machine may talk to us. */
static bool origin_ok(const char *o)
{
    if (!*o)
        return true;
    const char *h = strstr(o, "://");
    return h && local_host(h + 3);
}

static struct session *find_session(struct srv *s, const char *id, int *slot)
{
    for (int i = 0; *id && i < MAX_SESSIONS; i++)
        if (s->sessions[i] && !strcmp(s->sessions[i]->id, id)) {
            if (slot)
                *slot = i;
            return s->sessions[i];
        }
    return NULL;
}

static struct session *new_session(struct srv *s)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return NULL;
    struct session *x = osb_xcalloc(1, sizeof *x);
    for (int i = 0; i < 16; i++)
        snprintf(x->id + 2 * i, 3, "%02x", r[i]);
    int slot = -1;
    for (int i = 0; i < MAX_SESSIONS && slot < 0; i++)
        if (!s->sessions[i])
            slot = i;
    if (slot < 0) { /* full: the oldest session goes */
        free(s->sessions[0]);
        memmove(s->sessions, s->sessions + 1, (MAX_SESSIONS - 1) * sizeof *s->sessions);
        slot = MAX_SESSIONS - 1;
    }
    s->sessions[slot] = x;
    return x;
}

static bool is_initialize(json_t *msg)
{
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && !strcmp(m, "initialize") && json_object_get(msg, "id");
}

static void post(struct srv *s, struct conn *c)
{
    const char *ct = c->h[H_CTYPE];
    if (*ct && strncasecmp(ct, "application/json", 16))
        return reply_error(c, 415, "Unsupported Media Type", RPC_INVALID_REQUEST,
                           "Content-Type must be application/json");
    json_error_t je;
    json_t *msg = json_loadb(c->body ? c->body : "", c->body_len, JSON_DECODE_ANY, &je);
    if (!msg) {
        char text[300];
        snprintf(text, sizeof text, "Parse error: %s (at byte %d)", je.text, je.position);
        return reply_error(c, 400, "Bad Request", RPC_PARSE_ERROR, text);
    }
    struct session *x = NULL;
    char extra[128] = "";
    if (is_initialize(msg)) {
        if (!(x = new_session(s))) {
            json_decref(msg);
            return reply_error(c, 500, "Internal Server Error", RPC_INTERNAL_ERROR,
                               "no randomness for a session id");
        }
        snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", x->id);
        s->m->version[0] = 0;
    } else if (!c->h[H_SESSION][0]) {
        json_decref(msg);
        return reply_error(c, 400, "Bad Request", RPC_INVALID_REQUEST,
                           "Bad Request: the Mcp-Session-Id header is required (initialize first)");
    } else if (!(x = find_session(s, c->h[H_SESSION], NULL))) {
        json_decref(msg);
        return reply_error(c, 404, "Not Found", RPC_INVALID_REQUEST,
                           "Not Found: unknown or ended session; initialize again");
    } else {
        snprintf(s->m->version, sizeof s->m->version, "%s", x->version);
    }
    bool init = is_initialize(msg);
    json_t *r = mcp_handle(s->m, msg);
    json_decref(msg);
    snprintf(x->version, sizeof x->version, "%s", s->m->version);
    if (init && !x->version[0]) { /* initialize failed: no session */
        int i;
        if (find_session(s, x->id, &i)) {
            free(s->sessions[i]);
            s->sessions[i] = NULL;
        }
        extra[0] = 0;
    }
    if (!r)
        return reply(c, 202, "Accepted", extra[0] ? extra : NULL, NULL);
    char *t = json_dumps(r, JSON_COMPACT);
    reply(c, 200, "OK", extra[0] ? extra : NULL, t ? t : "{}");
    free(t);
    json_decref(r);
}

static void handle(struct srv *s, struct conn *c)
{
    if (!origin_ok(c->h[H_ORIGIN]))
        return reply_error(c, 403, "Forbidden", RPC_INVALID_REQUEST,
                           "Forbidden: Origin is not this machine");
    if (s->loopback && c->h[H_HOST][0] && !local_host(c->h[H_HOST]))
        return reply_error(c, 403, "Forbidden", RPC_INVALID_REQUEST,
                           "Forbidden: Host is not this machine");
    size_t plen = strcspn(c->url, "?#");
    if (plen != 4 || strncmp(c->url, "/mcp", 4))
        return reply_error(c, 404, "Not Found", RPC_INVALID_REQUEST,
                           "Not Found: the MCP endpoint is /mcp");
    if (c->h[H_VERSION][0] && !mcp_revision_supported(c->h[H_VERSION]))
        return reply_error(c, 400, "Bad Request", RPC_INVALID_REQUEST,
                           "Bad Request: unsupported MCP-Protocol-Version");
    if (c->too_big)
        return reply_error(c, 413, "Payload Too Large", RPC_INVALID_REQUEST,
                           "the body is over 4 MiB");
    if (c->p.method == HTTP_POST)
        return post(s, c);
    if (c->p.method == HTTP_DELETE) {
        int i;
        if (!find_session(s, c->h[H_SESSION], &i))
            return reply_error(c, 404, "Not Found", RPC_INVALID_REQUEST,
                               "Not Found: unknown or ended session");
        free(s->sessions[i]);
        s->sessions[i] = NULL;
        return reply(c, 200, "OK", NULL, NULL);
    }
    reply(c, 405, "Method Not Allowed", "Allow: POST, DELETE\r\n", NULL);
}

/* Reads what a connection has; false when it is finished. */
static bool serve_conn(struct srv *s, struct conn *c)
{
    char buf[65536];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN);
    size_t off = 0;
    while (off < (size_t)n) {
        if (HTTP_PARSER_ERRNO(&c->p) == HPE_PAUSED)
            http_parser_pause(&c->p, 0);
        off += http_parser_execute(&c->p, &settings, buf + off, (size_t)n - off);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->p);
        if (!c->done && e != HPE_OK) {
            reply_error(c, 400, "Bad Request", RPC_INVALID_REQUEST, http_errno_description(e));
            return false;
        }
        if (!c->done)
            break;
        bool keep = http_should_keep_alive(&c->p);
        handle(s, c);
        reset(c);
        if (!keep)
            return false;
    }
    return true;
}

static int listen_on(const char *addr, bool *loopback)
{
    char host[256] = "127.0.0.1", port[16] = "8000";
    const char *colon = strrchr(addr, ':');
    if (colon && (!strchr(addr, ']') || colon > strchr(addr, ']'))) {
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        snprintf(port, sizeof port, "%s", colon + 1);
    } else if (*addr && addr[strspn(addr, "0123456789")] == 0) {
        snprintf(port, sizeof port, "%s", addr); /* just a port */
    } else if (*addr) {
        snprintf(host, sizeof host, "%s", addr);
    }
    if (host[0] == '[') { /* [::1]:8000 */
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = 0;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    if (getaddrinfo(*host ? host : NULL, port, &hints, &res)) {
        fprintf(stderr, "opensandbox-mcp: cannot resolve --listen %s\n", addr);
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        fprintf(stderr, "opensandbox-mcp: cannot listen on %s: %s\n", addr, strerror(errno));
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *loopback = !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1");
    freeaddrinfo(res);
    /* The address as bound (port 0 picks a free one): the line to look for. */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
    if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
        getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    bool v6 = strchr(h, ':') != NULL;
    fprintf(stderr, "opensandbox-mcp: streamable HTTP on http://%s%s%s:%s/mcp\n", v6 ? "[" : "", h,
            v6 ? "]" : "", p);
    return fd;
}

static void accept_one(struct srv *s, int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < MAX_CONNS; i++)
        if (!s->conns[i]) {
            struct conn *c = osb_xcalloc(1, sizeof *c);
            c->fd = fd;
            reset(c);
            s->conns[i] = c;
            return;
        }
    close(fd); /* too many connections: the client retries */
}

int mcp_http_serve(struct mcp *m, const char *listen_addr)
{
    struct srv s = {.m = m};
    int lfd = listen_on(listen_addr, &s.loopback);
    if (lfd < 0)
        return 1;
    for (;;) {
        struct pollfd pf[MAX_CONNS + 1];
        int idx[MAX_CONNS + 1], n = 0;
        pf[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        idx[n++] = -1;
        for (int i = 0; i < MAX_CONNS; i++)
            if (s.conns[i]) {
                pf[n] = (struct pollfd){.fd = s.conns[i]->fd, .events = POLLIN};
                idx[n++] = i;
            }
        if (poll(pf, (nfds_t)n, -1) < 0 && errno != EINTR)
            return 1;
        for (int k = 1; k < n; k++) {
            struct conn *c = s.conns[idx[k]];
            if (!pf[k].revents || serve_conn(&s, c))
                continue;
            close(c->fd);
            free(c->body);
            free(c);
            s.conns[idx[k]] = NULL;
        }
        if (pf[0].revents & POLLIN)
            accept_one(&s, lfd);
    }
}
