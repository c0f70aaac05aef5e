/* Interactive terminals: execd's PTY sessions (protocol.md 3.9) over a
 * WebSocket of our own making on the transport's upgraded connection.
 * Output frames: 0x01 stdout, 0x02 stderr, 0x03 replay (8-byte offset
 * first); text frames carry connected/exit/error/pong. Input: 0x00 stdin,
 * text resize/signal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/base64.h"
#include "http/ws.h"
#include "wsframe.h"

#define MSG_MAX (4 * 1024 * 1024)

struct osbc_pty {
    struct osbcl_io *io;
    int timeout_ms; /* for writes */
    uint8_t *in;    /* bytes read, not yet parsed: in[off, len) */
    size_t off, len, cap;
    uint8_t *msg; /* a message being joined from fragments */
    size_t msg_len, msg_cap;
    int msg_op;
    bool eof, closed;
};

static bool empty(const char *s)
{
    return !s || !*s;
}

static char *pty_path(const char *sid, const char *tail, struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/pty/");
    osbcl_sb_esc(&p, sid);
    if (tail)
        osbcl_sb_adds(&p, tail);
    return osbcl_sb_done(&p, err);
}

int osbc_pty_create(osbc_client *c, const char *id, const char *cwd, const char *command,
                    char **session_id, struct osbc_error *err)
{
    if (empty(id) || !session_id)
        return osbcl_fail(err, OSBC_E_ARG, "pty create: a sandbox id");
    *session_id = NULL;
    json_t *b = json_object();
    int bad = !b;
    if (!bad && !empty(cwd))
        bad |= json_object_set_new(b, "cwd", json_string(cwd));
    if (!bad && !empty(command))
        bad |= json_object_set_new(b, "command", json_string(command));
    char *text = bad ? NULL : osbcl_json_dump(b);
    json_decref(b);
    if (!text)
        return osbcl_fail(err, OSBC_E_ARG, "pty create: cannot encode the request");
    char *out;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "POST", "/pty", text, &out, err);
    free(text);
    if (rc < 0)
        return rc;
    json_t *j = osbcl_json_parse(out, strlen(out), "POST /pty", err);
    const char *sid = json_string_value(json_object_get(j, "session_id"));
    if (!sid || !*sid)
        rc = j ? osbcl_fail(err, OSBC_E_PROTOCOL, "POST /pty: no session_id") : OSBC_E_PROTOCOL;
    else if (!(*session_id = strdup(sid)))
        rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    json_decref(j);
    free(out);
    return rc;
}

int osbc_pty_delete(osbc_client *c, const char *id, const char *session_id, struct osbc_error *err)
{
    if (empty(id) || empty(session_id))
        return osbcl_fail(err, OSBC_E_ARG, "pty delete: a sandbox id and a session id");
    char *p = pty_path(session_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", p, NULL, NULL, err);
    free(p);
    return rc;
}

static int send_frame(osbc_pty *p, int opcode, const void *data, size_t len, struct osbc_error *err)
{
    if (p->closed)
        return osbcl_fail(err, OSBC_E_CONNECT, "the terminal connection is closed");
    uint8_t mask[4];
    if (getrandom(mask, sizeof mask, 0) != (ssize_t)sizeof mask)
        return osbcl_fail_sys(err, OSBC_E_IO, "getrandom");
    uint8_t *f = malloc(OSB_WS_MAX_HEADER + len);
    if (!f)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    size_t h = osb_ws_frame_header(f, true, opcode, len, mask);
    memcpy(f + h, data, len);
    osb_ws_mask(f + h, len, mask, 0);
    int rc = osbcl_io_write(p->io, f, h + len, p->timeout_ms, err);
    free(f);
    return rc;
}

int osbc_pty_write(osbc_pty *p, const void *data, size_t len, struct osbc_error *err)
{
    if (!p || (!data && len))
        return osbcl_fail(err, OSBC_E_ARG, "pty write: no terminal");
    uint8_t *b = malloc(len + 1);
    if (!b)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    b[0] = 0x00;
    if (len)
        memcpy(b + 1, data, len);
    int rc = send_frame(p, OSB_WS_OP_BINARY, b, len + 1, err);
    free(b);
    return rc;
}

int osbc_pty_resize(osbc_pty *p, int cols, int rows, struct osbc_error *err)
{
    if (!p || cols < 1 || rows < 1 || cols > 10000 || rows > 10000)
        return osbcl_fail(err, OSBC_E_ARG, "pty resize: %dx%d", cols, rows);
    char m[80];
    int n = snprintf(m, sizeof m, "{\"type\":\"resize\",\"cols\":%d,\"rows\":%d}", cols, rows);
    return send_frame(p, OSB_WS_OP_TEXT, m, (size_t)n, err);
}

int osbc_pty_signal(osbc_pty *p, const char *sig, struct osbc_error *err)
{
    static const char *const ok[] = {"SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGHUP"};
    bool known = false;
    for (size_t i = 0; sig && i < sizeof ok / sizeof *ok; i++)
        known |= !strcmp(sig, ok[i]);
    if (!p || !known)
        return osbcl_fail(err, OSBC_E_ARG,
                          "pty signal: want SIGINT, SIGTERM, SIGKILL, SIGQUIT "
                          "or SIGHUP");
    char m[64];
    int n = snprintf(m, sizeof m, "{\"type\":\"signal\",\"signal\":\"%s\"}", sig);
    return send_frame(p, OSB_WS_OP_TEXT, m, (size_t)n, err);
}

static int handshake(osbc_client *c, const char *id, const char *sid, const struct osbc_pty_opts *o,
                     struct osbcl_io **io, struct osbc_error *err)
{
    uint8_t key[16];
    char key64[32], want[29], hkey[64];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key)
        return osbcl_fail_sys(err, OSBC_E_IO, "getrandom");
    osb_base64_encode(key, sizeof key, key64);
    osb_ws_accept_key(key64, want);
    snprintf(hkey, sizeof hkey, "Sec-WebSocket-Key: %s", key64);
    const char *hdrs[] = {"Upgrade: websocket", "Connection: Upgrade", hkey,
                          "Sec-WebSocket-Version: 13", NULL};
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/pty/");
    osbcl_sb_esc(&p, sid);
    osbcl_sb_adds(&p, "/ws");
    char sep = '?';
    if (o && o->since >= 0)
        osbcl_sb_addf(&p, "?since=%lld", o->since), sep = '&';
    if (o && o->takeover)
        osbcl_sb_addf(&p, "%ctakeover=1", sep);
    char *path = osbcl_sb_done(&p, err);
    if (!path)
        return OSBC_E_NOMEM;
    const struct osbcl_base *b;
    int rc = osbcl_endpoint(c, id, OSBCL_EXECD_PORT, &b, err);
    struct osbcl_req rq = {.method = "GET", .base = b, .path = path, .headers = hdrs};
    struct osbcl_resp rs = {0};
    if (rc == 0)
        rc = osbcl_upgrade(c, &rq, io, &rs, err);
    if (rc == 0) {
        const char *acc = osbcl_resp_header(&rs, "sec-websocket-accept");
        if (!acc || strcmp(acc, want)) {
            osbcl_io_close(*io);
            *io = NULL;
            rc = osbcl_fail(err, OSBC_E_PROTOCOL, "GET %s: a wrong Sec-WebSocket-Accept", path);
        }
    }
    osbcl_resp_free(&rs);
    free(path);
    return rc;
}

int osbc_pty_attach(osbc_client *c, const char *id, const char *session_id,
                    const struct osbc_pty_opts *o, osbc_pty **out, struct osbc_error *err)
{
    if (empty(id) || empty(session_id) || !out)
        return osbcl_fail(err, OSBC_E_ARG, "pty attach: a sandbox id and a session id");
    *out = NULL;
    osbc_pty *p = calloc(1, sizeof *p);
    if (!p)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    long t = osbcl_timeout_ms(c);
    p->timeout_ms = t > 0x7fffffff ? 0x7fffffff : (int)t;
    int rc = handshake(c, id, session_id, o, &p->io, err);
    if (rc == 0 && o && o->cols > 0 && o->rows > 0)
        rc = osbc_pty_resize(p, o->cols, o->rows, err);
    if (rc < 0) {
        osbc_pty_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

int osbc_pty_fd(const osbc_pty *p)
{
    return p && p->io ? osbcl_io_fd(p->io) : -1;
}

/* Reads more bytes into p->in: 1 read, 0 timeout, -1 error (err set). */
static int fill(osbc_pty *p, int timeout_ms, struct osbc_error *err)
{
    if (p->off == p->len)
        p->off = p->len = 0;
    if (p->cap - p->len < 16384) {
        if (p->off) {
            memmove(p->in, p->in + p->off, p->len - p->off);
            p->len -= p->off;
            p->off = 0;
        }
        if (p->cap - p->len < 16384) {
            size_t cap = p->cap ? p->cap * 2 : 65536;
            if (cap > MSG_MAX + 64 * 1024)
                return osbcl_fail(err, OSBC_E_PROTOCOL, "a terminal frame over the limit"), -1;
            uint8_t *n = realloc(p->in, cap);
            if (!n)
                return osbcl_fail(err, OSBC_E_NOMEM, "out of memory"), -1;
            p->in = n;
            p->cap = cap;
        }
    }
    ssize_t n = osbcl_io_read(p->io, p->in + p->len, p->cap - p->len, timeout_ms, err);
    if (n == -2)
        return 0;
    if (n < 0)
        return -1;
    if (n == 0)
        p->eof = true;
    p->len += (size_t)n;
    return 1;
}

/* A whole text message: exit gives an event; error frames are reported. */
static int on_text(const uint8_t *data, size_t len, struct osbc_pty_event *ev,
                   struct osbc_error *err)
{
    json_t *j = json_loadb((const char *)data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    int rc = 0;
    if (type && !strcmp(type, "exit")) {
        ev->type = OSBC_PTY_EXIT;
        json_t *code = json_object_get(j, "exit_code");
        ev->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
    } else if (type && !strcmp(type, "error")) {
        const char *code = json_string_value(json_object_get(j, "code"));
        const char *msg = json_string_value(json_object_get(j, "error"));
        rc = osbcl_fail(err, OSBC_E_REMOTE, "terminal: %s (%s)", msg ? msg : "error",
                        code ? code : "no code");
        if (err && code)
            snprintf(err->server_code, sizeof err->server_code, "%s", code);
    }
    json_decref(j);
    return rc;
}

static int on_message(int op, const uint8_t *data, size_t len, struct osbc_pty_event *ev,
                      struct osbc_error *err)
{
    if (op == OSB_WS_OP_TEXT)
        return on_text(data, len, ev, err);
    if (len < 1)
        return 0;
    size_t skip = data[0] == 0x03 ? 9 : 1;
    if ((data[0] != 0x01 && data[0] != 0x02 && data[0] != 0x03) || len < skip)
        return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: an output frame tagged 0x%02x", data[0]);
    ev->type = data[0] == 0x02 ? OSBC_PTY_STDERR : OSBC_PTY_OUTPUT;
    ev->data = (const char *)data + skip;
    ev->len = len - skip;
    return 0;
}

/* Handles one parsed frame; may fill ev. */
static int on_frame(osbc_pty *p, const struct osbcl_wsframe *f, struct osbc_pty_event *ev,
                    struct osbc_error *err)
{
    if (f->opcode == OSB_WS_OP_PING)
        return send_frame(p, OSB_WS_OP_PONG, f->payload, f->len, err);
    if (f->opcode == OSB_WS_OP_PONG)
        return 0;
    if (f->opcode == OSB_WS_OP_CLOSE) {
        uint8_t cp[OSB_WS_MAX_CONTROL];
        size_t n = osb_ws_close_payload(cp, OSB_WS_CLOSE_NORMAL, "");
        send_frame(p, OSB_WS_OP_CLOSE, cp, n, NULL);
        p->closed = true;
        ev->type = OSBC_PTY_CLOSED;
        return 0;
    }
    if (f->opcode != OSB_WS_OP_CONT && p->msg_op)
        return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: a new message inside a fragmented one");
    if (f->opcode == OSB_WS_OP_CONT && !p->msg_op)
        return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: a continuation of nothing");
    if (f->fin && f->opcode != OSB_WS_OP_CONT) {
        if (f->len > MSG_MAX)
            return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: a message over the limit");
        /* Copy: ev->data must outlive the buffer compaction of the next read. */
        if (p->msg_cap < f->len + 1) {
            uint8_t *m = realloc(p->msg, f->len + 1);
            if (!m)
                return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
            p->msg = m;
            p->msg_cap = f->len + 1;
        }
        memcpy(p->msg, f->payload, f->len);
        return on_message(f->opcode, p->msg, f->len, ev, err);
    }
    if (!p->msg_op) {
        p->msg_op = f->opcode;
        p->msg_len = 0;
    }
    if (p->msg_len + f->len > MSG_MAX)
        return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: a message over the limit");
    if (p->msg_cap < p->msg_len + f->len + 1) {
        size_t cap = (p->msg_len + f->len + 1) * 2;
        uint8_t *m = realloc(p->msg, cap);
        if (!m)
            return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        p->msg = m;
        p->msg_cap = cap;
    }
    memcpy(p->msg + p->msg_len, f->payload, f->len);
    p->msg_len += f->len;
    if (!f->fin)
        return 0;
    int op = p->msg_op;
    p->msg_op = 0;
    return on_message(op, p->msg, p->msg_len, ev, err);
}

int osbc_pty_read(osbc_pty *p, int timeout_ms, struct osbc_pty_event *ev, struct osbc_error *err)
{
    if (!p || !ev)
        return osbcl_fail(err, OSBC_E_ARG, "pty read: no terminal");
    memset(ev, 0, sizeof *ev);
    if (p->closed) {
        ev->type = OSBC_PTY_CLOSED;
        return 0;
    }
    bool waited = false;
    for (;;) {
        struct osbcl_wsframe f;
        const char *why = NULL;
        ssize_t n = osbcl_wsframe_parse(p->in + p->off, p->len - p->off, MSG_MAX, &f, &why);
        if (n < 0) {
            p->closed = true;
            return osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: %s", why);
        }
        if (n > 0) {
            p->off += (size_t)n;
            int rc = on_frame(p, &f, ev, err);
            if (rc < 0 || ev->type != OSBC_PTY_NONE)
                return rc;
            continue;
        }
        if (p->eof) {
            p->closed = true;
            ev->type = OSBC_PTY_CLOSED;
            return osbcl_fail(err, OSBC_E_CONNECT, "the terminal connection was dropped");
        }
        if (waited && !osbcl_io_pending(p->io))
            return 0; /* one wait per call */
        int r = fill(p, waited ? 0 : timeout_ms, err);
        waited = true;
        if (r < 0) {
            p->closed = true;
            ev->type = OSBC_PTY_CLOSED;
            return err ? err->code : OSBC_E_CONNECT;
        }
        if (r == 0)
            return 0;
    }
}

void osbc_pty_close(osbc_pty *p)
{
    if (!p)
        return;
    if (p->io && !p->closed) {
        uint8_t cp[OSB_WS_MAX_CONTROL];
        size_t n = osb_ws_close_payload(cp, OSB_WS_CLOSE_NORMAL, "client closed");
        send_frame(p, OSB_WS_OP_CLOSE, cp, n, NULL);
    }
    osbcl_io_close(p->io);
    free(p->in);
    free(p->msg);
    free(p);
}
