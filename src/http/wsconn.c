/* WebSocket connections (RFC 6455) on top of the HTTP server: the upgrade
 * handshake and the glue between the socket and the frame codec (ws.c). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/limits.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "http/conn.h"
#include "http/ws.h"

static const struct osb_http_mode ws_mode;

struct osb_ws {
    struct conn *c;
    struct osb_ws_reader reader;
    struct osb_ws_cbs cbs;
    void *ud;
    bool close_sent, closed;
    int peer_code; /* close code the peer sent, 0 if none */
};

static bool header_has_token(const char *v, const char *token)
{
    return v && strcasestr(v, token);
}

struct osb_ws *osb_http_ws_accept(struct osb_http_req *req, const struct osb_ws_cbs *cbs, void *ud)
{
    const char *key = osb_http_req_header(req, "sec-websocket-key");
    const char *ver = osb_http_req_header(req, "sec-websocket-version");
    if (!req->c || !key || !osb_ws_key_valid(key) ||
        !header_has_token(osb_http_req_header(req, "upgrade"), "websocket") ||
        !header_has_token(osb_http_req_header(req, "connection"), "upgrade")) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "expected a WebSocket upgrade request");
        return NULL;
    }
    if (!ver || strcmp(ver, "13") != 0) {
        osb_http_add_header(req, "Sec-WebSocket-Version", "13");
        osb_http_respond_error(req, 426, "INVALID_REQUEST_BODY",
                               "unsupported Sec-WebSocket-Version");
        return NULL;
    }
    char accept[32];
    osb_ws_accept_key(key, accept);
    struct conn *c = req->c;
    struct osb_ws *ws = osb_xcalloc(1, sizeof *ws);
    ws->c = c;
    ws->cbs = *cbs;
    ws->ud = ud;
    osb_ws_reader_init(&ws->reader, true);
    osb_http_add_header(req, "Upgrade", "websocket");
    osb_http_add_header(req, "Connection", "Upgrade");
    osb_http_add_header(req, "Sec-WebSocket-Accept", accept);
    req->keep_alive = true; /* no "Connection: close" on a 101 */
    osb_http_start(req, 101, NULL, -1);
    osb_http__take_over(req, &ws_mode, ws);
    return ws;
}

static void send_frame(struct osb_ws *ws, int opcode, const void *data, size_t len)
{
    if (!ws->c || ws->close_sent)
        return;
    uint8_t h[OSB_WS_MAX_HEADER];
    size_t hl = osb_ws_frame_header(h, true, opcode, len, NULL);
    osb_http__conn_write(ws->c, h, hl);
    osb_http__conn_write(ws->c, data, len);
}

void osb_ws_send(struct osb_ws *ws, int opcode, const void *data, size_t len)
{
    send_frame(ws, opcode, data, len);
}

size_t osb_ws_queued(const struct osb_ws *ws)
{
    return ws->c ? ws->c->queued : 0;
}

void osb_ws_close(struct osb_ws *ws, int code, const char *reason)
{
    if (!ws->c || ws->close_sent)
        return;
    uint8_t payload[OSB_WS_MAX_CONTROL];
    size_t n = osb_ws_close_payload(payload, code, reason ? reason : "");
    send_frame(ws, OSB_WS_OP_CLOSE, payload, n);
    ws->close_sent = true;
    osb_http__conn_close_after_flush(ws->c);
}

static int on_message(void *ud, int opcode, const uint8_t *data, size_t len)
{
    struct osb_ws *ws = ud;
    if (ws->c && !ws->close_sent && ws->cbs.on_message)
        ws->cbs.on_message(ws, opcode, data, len, ws->ud);
    return ws->c ? 0 : 1;
}

static int on_control(void *ud, int opcode, const uint8_t *data, size_t len)
{
    struct osb_ws *ws = ud;
    if (opcode == OSB_WS_OP_PING) {
        send_frame(ws, OSB_WS_OP_PONG, data, len);
    } else if (opcode == OSB_WS_OP_CLOSE) {
        int code = OSB_WS_CLOSE_NO_STATUS;
        const uint8_t *reason;
        size_t rlen;
        /* The reader checked the payload already; should it not parse,
         * the echo is a protocol error. */
        if (osb_ws_parse_close(data, len, &code, &reason, &rlen) < 0)
            code = OSB_WS_CLOSE_PROTOCOL;
        /* Echo the code, as RFC 6455 5.5.1 asks. */
        if (!ws->close_sent) {
            uint8_t p[2] = {(uint8_t)(code >> 8), (uint8_t)code};
            send_frame(ws, OSB_WS_OP_CLOSE, p, code == OSB_WS_CLOSE_NO_STATUS ? 0 : 2);
            ws->close_sent = true;
        }
        ws->closed = true;
        ws->peer_code = code;
        if (ws->c)
            osb_http__conn_close_after_flush(ws->c);
        return 1;
    }
    return 0;
}

static void ws_on_data(struct conn *c, const char *data, size_t len)
{
    struct osb_ws *ws = c->mode_ctx;
    if (!ws || ws->closed)
        return;
    static const struct osb_ws_reader_cbs cbs = {.on_message = on_message,
                                                 .on_control = on_control};
    int close_code = 0;
    struct osb_err err = {0};
    if (osb_ws_reader_feed(&ws->reader, (const uint8_t *)data, len, &cbs, ws, &close_code, &err) <
        0) {
        osb_debug("websocket from %s: %s", c->peer, err.msg);
        osb_ws_close(ws, close_code ? close_code : OSB_WS_CLOSE_PROTOCOL, err.msg);
    }
}

static void ws_on_close(struct conn *c)
{
    struct osb_ws *ws = c->mode_ctx;
    c->mode_ctx = NULL;
    if (!ws)
        return;
    ws->c = NULL;
    if (ws->cbs.on_close)
        ws->cbs.on_close(ws, ws->peer_code ? ws->peer_code : 1006, ws->ud);
    osb_ws_reader_free(&ws->reader);
    free(ws);
}

static void ws_on_drain(struct conn *c)
{
    struct osb_ws *ws = c->mode_ctx;
    if (ws && ws->cbs.on_drain)
        ws->cbs.on_drain(ws, ws->ud);
}

static const struct osb_http_mode ws_mode = {
    .on_data = ws_on_data,
    .on_drain = ws_on_drain,
    .on_close = ws_on_close,
};
