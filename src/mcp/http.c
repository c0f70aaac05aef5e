/* The streamable HTTP transport (MCP 2025-06-18) on one endpoint, /mcp:
 * POST carries JSON-RPC (answered as application/json; notifications get
 * 202), GET is 405 (no server-initiated stream), DELETE ends a session.
 * initialize issues an Mcp-Session-Id that every later request must carry.
 * Requests from a browser page of another origin are refused (DNS
 * rebinding), and the default address is loopback. One thread: a poll loop
 * over the connections; a tool call is answered before the next request is
 * read. */
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

struct conn {
    int fd;
    http_parser p;
    char *body;
    size_t body_len;
    char hname[64], session[80], origin[256], proto[32];
    int want; /* which header value is being read: 0 none, 1 session, 2 origin, 3 version */
    bool done, too_big;
};

struct srv {
    struct mcp *m;
    struct conn *conns[MAX_CONNS];
    char *sessions[MAX_SESSIONS];
};

static int on_field(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    snprintf(c->hname, sizeof c->hname, "%.*s", (int)len, at);
    c->want = !strcasecmp(c->hname, "mcp-session-id")         ? 1
              : !strcasecmp(c->hname, "origin")               ? 2
              : !strcasecmp(c->hname, "mcp-protocol-version") ? 3
                                                              : 0;
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    char *dst = c->want == 1   ? c->session
                : c->want == 2 ? c->origin
                : c->want == 3 ? c->proto
                               : NULL;
    size_t cap = c->want == 1   ? sizeof c->session
                 : c->want == 2 ? sizeof c->origin
                                : sizeof c->proto;
    if (dst)
        snprintf(dst, cap, "%.*s", (int)len, at);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct conn *c = p->data;
    if (c->body_len + len > MAX_BODY) {
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

static const http_parser_settings settings = {.on_header_field = on_field,
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
    json_t *e = json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code", code,
                          "message", msg);
    char *t = json_dumps(e, JSON_COMPACT);
    reply(c, status, reason, NULL, t);
    free(t);
    json_decref(e);
}

/* Browsers send Origin; only pages of this machine may talk to us. */
static bool origin_ok(const char *o)
{
    if (!*o)
        return true;
    const char *h = strstr(o, "://");
    h = h ? h + 3 : o;
    static const char *const ok[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(ok[i]);
        if (!strncmp(h, ok[i], n) && (h[n] == 0 || h[n] == ':' || h[n] == '/'))
            return true;
    }
    return false;
}

static int find_session(struct srv *s, const char *id)
{
    for (int i = 0; i < MAX_SESSIONS; i++)
        if (s->sessions[i] && !strcmp(s->sessions[i], id))
            return i;
    return -1;
}

static char *new_session(struct srv *s)
{
    unsigned char r[16];
    char *id = osb_xmalloc(33);
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return free(id), NULL;
    for (int i = 0; i < 16; i++)
        snprintf(id + 2 * i, 3, "%02x", r[i]);
    int slot = -1;
    for (int i = 0; i < MAX_SESSIONS && slot < 0; i++)
        if (!s->sessions[i])
            slot = i;
    if (slot < 0) { /* full: the oldest session goes */
        free(s->sessions[0]);
        memmove(s->sessions, s->sessions + 1, (MAX_SESSIONS - 1) * sizeof *s->sessions);
        slot = MAX_SESSIONS - 1;
    }
    s->sessions[slot] = id;
    return id;
}

static bool is_initialize(json_t *msg)
{
    const char *m = json_string_value(json_object_get(msg, "method"));
    return m && !strcmp(m, "initialize");
}

static void post(struct srv *s, struct conn *c)
{
    json_error_t je;
    json_t *msg = c->body ? json_loadb(c->body, c->body_len, 0, &je) : NULL;
    if (!msg)
        return reply_error(c, 400, "Bad Request", -32700, "Parse error: the body is not JSON");
    char *sid = NULL, extra[128] = "";
    if (is_initialize(msg)) {
        if (!(sid = new_session(s))) {
            json_decref(msg);
            return reply_error(c, 500, "Internal Server Error", -32603, "no randomness");
        }
        snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", sid);
    } else if (!*c->session) {
        json_decref(msg);
        return reply_error(c, 400, "Bad Request", -32600, "Mcp-Session-Id header is required");
    } else if (find_session(s, c->session) < 0) {
        json_decref(msg);
        return reply_error(c, 404, "Not Found", -32600, "unknown or ended session");
    }
    json_t *r = mcp_handle(s->m, msg);
    json_decref(msg);
    if (!r)
        return reply(c, 202, "Accepted", extra[0] ? extra : NULL, NULL);
    char *t = json_dumps(r, JSON_COMPACT);
    reply(c, 200, "OK", extra[0] ? extra : NULL, t);
    free(t);
    json_decref(r);
}

static void handle(struct srv *s, struct conn *c)
{
    const char *url_end = NULL;
    (void)url_end;
    if (!origin_ok(c->origin))
        return reply_error(c, 403, "Forbidden", -32600, "Origin not allowed");
    if (*c->proto && strcmp(c->proto, "2025-06-18") && strcmp(c->proto, "2025-03-26") &&
        strcmp(c->proto, "2024-11-05"))
        return reply_error(c, 400, "Bad Request", -32600, "unsupported MCP-Protocol-Version");
    if (c->too_big)
        return reply_error(c, 413, "Payload Too Large", -32600, "the body is over 4 MiB");
    int method = c->p.method;
    if (method == HTTP_POST)
        return post(s, c);
    if (method == HTTP_GET)
        return reply(c, 405, "Method Not Allowed", "Allow: POST, DELETE\r\n", NULL);
    if (method == HTTP_DELETE) {
        int i = *c->session ? find_session(s, c->session) : -1;
        if (i < 0)
            return reply_error(c, 404, "Not Found", -32600, "unknown or ended session");
        free(s->sessions[i]);
        s->sessions[i] = NULL;
        return reply(c, 200, "OK", NULL, NULL);
    }
    reply(c, 405, "Method Not Allowed", "Allow: POST, DELETE\r\n", NULL);
}

/* Reads what a connection has; false when it is finished. */
static bool serve_conn(struct srv *s, struct conn *c, char *path_ok)
{
    char buf[65536];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN);
    size_t off = 0;
    while (off < (size_t)n) {
        size_t used = http_parser_execute(&c->p, &settings, buf + off, (size_t)n - off);
        off += used;
        enum http_errno e = HTTP_PARSER_ERRNO(&c->p);
        if (!c->done && e != HPE_OK) {
            reply_error(c, 400, "Bad Request", -32600, http_errno_description(e));
            return false;
        }
        if (!c->done)
            break;
        (void)path_ok;
        bool keep = http_should_keep_alive(&c->p);
        handle(s, c);
        reset(c);
        if (!keep)
            return false;
    }
    return true;
}

static int listen_on(const char *addr)
{
    char host[256] = "127.0.0.1", port[16] = "8765";
    const char *colon = strrchr(addr, ':');
    if (colon) {
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        snprintf(port, sizeof port, "%s", colon + 1);
    } else if (*addr) {
        snprintf(port, sizeof port, "%s", addr);
    }
    if (host[0] == '[') { /* [::1]:8765 */
        memmove(host, host + 1, strlen(host));
        host[strcspn(host, "]")] = 0;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    if (getaddrinfo(host, port, &hints, &res)) {
        fprintf(stderr, "opensandbox-mcp: cannot resolve --listen %s\n", addr);
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        fprintf(stderr, "opensandbox-mcp: cannot listen on %s: %s\n", addr, strerror(errno));
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

int mcp_http_serve(struct mcp *m, const char *listen_addr)
{
    int lfd = listen_on(listen_addr);
    if (lfd < 0)
        return 1;
    fprintf(stderr, "opensandbox-mcp: streamable HTTP on http://%s/mcp\n", listen_addr);
    struct srv s = {.m = m};
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
            if (!pf[k].revents)
                continue;
            struct conn *c = s.conns[idx[k]];
            if (!serve_conn(&s, c, NULL)) {
                close(c->fd);
                free(c->body);
                free(c);
                s.conns[idx[k]] = NULL;
            }
        }
        if (pf[0].revents & POLLIN) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            int slot = -1;
            for (int i = 0; fd >= 0 && i < MAX_CONNS && slot < 0; i++)
                if (!s.conns[i])
                    slot = i;
            if (fd >= 0 && slot < 0) {
                close(fd); /* too many connections: the client retries */
            } else if (fd >= 0) {
                struct conn *c = osb_xcalloc(1, sizeof *c);
                c->fd = fd;
                reset(c);
                s.conns[slot] = c;
            }
        }
    }
}
