/* Interactive terminals: execd's PTY sessions (protocol.md 3.9) over a
 * WebSocket of our own making on the transport's upgraded connection.
 * Output frames: 0x01 stdout, 0x02 stderr, 0x03 replay (8-byte offset
 * first); text frames carry connected/exit/error/pong. Input: 0x00 stdin,
 * text resize/signal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/base64.h"
#include "http/ws.h"
#include "wsframe.h"

#define MSG_MAX (4 * 1024 * 1024) /* a message from execd (its output frames are 32 KiB) */
#define READ_CHUNK 65536
#define CLOSE_WAIT_MS 1000 /* how long a close frame may take to leave */

struct osbc_pty {
    struct osbcl_io *io;
    int timeout_ms; /* for writes */
    struct osbcl_wsr rd;
    uint8_t *buf; /* one read from the socket */
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

/* stdin goes in frames of at most this much, well under any server's
 * message limit (ours is 4 MiB), so a large paste cannot end the session. */
#define STDIN_FRAME 32768

int osbc_pty_write(osbc_pty *p, const void *data, size_t len, struct osbc_error *err)
{
    if (!p || (!data && len))
        return osbcl_fail(err, OSBC_E_ARG, "pty write: no terminal");
    uint8_t *b = malloc(1 + (len < STDIN_FRAME ? len : STDIN_FRAME));
    if (!b)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    const uint8_t *d = data;
    int rc = 0;
    do {
        size_t n = len < STDIN_FRAME ? len : STDIN_FRAME;
        b[0] = 0x00;
        if (n)
            memcpy(b + 1, d, n);
        rc = send_frame(p, OSB_WS_OP_BINARY, b, n + 1, err);
        d += n;
        len -= n;
    } while (rc == 0 && len);
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
    const struct osbcl_base *b = NULL;
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
    if (o && (o->cols < 0 || o->rows < 0 || o->cols > 10000 || o->rows > 10000))
        return osbcl_fail(err, OSBC_E_ARG, "pty attach: a size of %dx%d", o->cols, o->rows);
    osbc_pty *p = calloc(1, sizeof *p);
    if (p && !(p->buf = malloc(READ_CHUNK))) {
        free(p);
        p = NULL;
    }
    if (!p)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    p->rd.max = MSG_MAX;
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

/* A whole text message: exit gives an event; error frames are reported
 * (OSBC_E_REMOTE; the connection goes on); connected and pong are noted. */
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

/* Output: 0x01 stdout, 0x02 stderr, 0x03 replay (after an 8-byte offset). */
static int on_binary(const uint8_t *data, size_t len, struct osbc_pty_event *ev,
                     struct osbc_error *err)
{
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

/* The server closes: answer with the same code and stop. A close other than
 * a normal one (a takeover's 4001 TAKEN_OVER, 1011 after a failed start) is
 * reported as OSBC_E_REMOTE with its reason. */
static int on_close(osbc_pty *p, const struct osbcl_wsmsg *m, struct osbc_pty_event *ev,
                    struct osbc_error *err)
{
    uint8_t cp[OSB_WS_MAX_CONTROL];
    int code = m->close_code == OSB_WS_CLOSE_NO_STATUS ? OSB_WS_CLOSE_NORMAL : m->close_code;
    size_t n = osb_ws_close_payload(cp, code, "");
    int t = p->timeout_ms;
    p->timeout_ms = CLOSE_WAIT_MS;
    send_frame(p, OSB_WS_OP_CLOSE, cp, n, NULL);
    p->timeout_ms = t;
    p->closed = true;
    ev->type = OSBC_PTY_CLOSED;
    if (code == OSB_WS_CLOSE_NORMAL || code == OSB_WS_CLOSE_GOING_AWAY)
        return 0;
    return osbcl_fail(err, OSBC_E_REMOTE, "terminal closed by the server: %.*s (%d)",
                      (int)(m->len > 120 ? 120 : m->len), m->len ? (const char *)m->data : "",
                      code);
}

/* Handles one message; may fill ev. */
static int on_msg(osbc_pty *p, const struct osbcl_wsmsg *m, struct osbc_pty_event *ev,
                  struct osbc_error *err)
{
    switch (m->opcode) {
    case OSB_WS_OP_PING: return send_frame(p, OSB_WS_OP_PONG, m->data, m->len, err);
    case OSB_WS_OP_CLOSE: return on_close(p, m, ev, err);
    case OSB_WS_OP_TEXT: return on_text(m->data, m->len, ev, err);
    case OSB_WS_OP_BINARY: return on_binary(m->data, m->len, ev, err);
    default: return 0; /* a pong */
    }
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Ends the handle's connection after a failure; returns rc. */
static int broken(osbc_pty *p, struct osbc_pty_event *ev, int rc)
{
    p->closed = true;
    ev->type = OSBC_PTY_CLOSED;
    return rc;
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
    long long end = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    for (;;) {
        struct osbcl_wsmsg m;
        const char *why = "";
        int r = osbcl_wsr_next(&p->rd, &m, &why);
        if (r == OSBC_E_NOMEM)
            return broken(p, ev, osbcl_fail(err, OSBC_E_NOMEM, "out of memory"));
        if (r < 0)
            return broken(p, ev, osbcl_fail(err, OSBC_E_PROTOCOL, "terminal: %s", why));
        if (r > 0) {
            int rc = on_msg(p, &m, ev, err);
            if (rc < 0 || ev->type != OSBC_PTY_NONE)
                return rc;
            continue;
        }
        if (p->eof)
            return broken(p, ev,
                          osbcl_fail(err, OSBC_E_CONNECT, "the terminal connection was dropped"));
        /* Wait for the rest of the time; bytes already buffered (TLS) count. */
        int t = timeout_ms;
        if (timeout_ms > 0) {
            long long left = end - now_ms();
            t = left > 0 ? (int)left : 0;
        }
        ssize_t n = osbcl_io_read(p->io, p->buf, READ_CHUNK, t, err);
        if (n == -2)
            return 0;
        if (n < 0)
            return broken(p, ev, err ? err->code : OSBC_E_CONNECT);
        if (n == 0)
            p->eof = true;
        else if (osbcl_wsr_feed(&p->rd, p->buf, (size_t)n) < 0)
            return broken(p, ev, osbcl_fail(err, OSBC_E_NOMEM, "out of memory"));
    }
}

void osbc_pty_close(osbc_pty *p)
{
    if (!p)
        return;
    if (p->io && !p->closed) {
        uint8_t cp[OSB_WS_MAX_CONTROL];
        size_t n = osb_ws_close_payload(cp, OSB_WS_CLOSE_NORMAL, "client closed");
        p->timeout_ms = CLOSE_WAIT_MS; /* a dead peer must not hold the caller */
        send_frame(p, OSB_WS_OP_CLOSE, cp, n, NULL);
    }
    osbcl_io_close(p->io);
    osbcl_wsr_free(&p->rd);
    free(p->buf);
    free(p);
}
