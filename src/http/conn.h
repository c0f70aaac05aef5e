/* Internals shared by server.c, wsconn.c and proxy.c. Not for other modules. */
#ifndef OSB_HTTP_CONN_H
#define OSB_HTTP_CONN_H
#include <http_parser.h>
#include <stdbool.h>
#include <uv.h>

#include "common/buf.h"
#include "http/http.h"

struct osb_http_server {
    uv_loop_t *loop;
    struct osb_http_route *routes;
    size_t nroutes;
    osb_http_auth_fn auth;
    void *auth_ud;
    osb_http_status_fn status_map;
    void *status_ud;
    const char *invalid_code; /* "code" of the 400 for control bytes in the target */
    uv_tcp_t tcp;
    uv_pipe_t unix_sock;
    bool tcp_on, unix_on, closing;
    int pending_handles; /* listeners not yet closed */
    uv_prepare_t reaper; /* closes doomed connections before the loop polls */
    size_t ndoomed;
    struct conn *conns;  /* doubly linked */
    size_t nconns;
    uv_timer_t linger_timer; /* ends lingering closes past their deadline */
    size_t nlinger;
    uv_timer_t head_timer; /* ends connections past their head deadline */
};

/* CONN_LINGER: the last response is out (or queued), the write side is shut
 * down, and what the client still sends is read and dropped for a while so
 * closing does not reset the connection before it read the answer. */
enum conn_mode { CONN_HTTP, CONN_WS, CONN_PROXY, CONN_LINGER };

struct conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    struct osb_http_server *srv;
    struct conn *prev, *next;
    http_parser parser;
    struct osb_buf in;           /* received, not yet parsed */
    struct osb_http_req *req;    /* request being parsed or handled */
    size_t head_bytes;           /* of the request head being parsed */
    size_t queued;               /* bytes handed to uv_write, not yet written */
    bool reading, closing, close_after_flush, in_process, eof;
    bool doomed; /* a write failed: closed by the reaper, outside any caller */
    enum conn_mode mode;
    void *mode_ctx;              /* struct osb_ws * or struct proxy * */
    uv_shutdown_t shut;          /* CONN_LINGER */
    size_t linger_left;          /* bytes still dropped before closing */
    uint64_t linger_until;       /* uv_now deadline */
    uint64_t head_until;         /* uv_now deadline for the next request head; 0 once it is in */
    char peer[64];
};

struct kv {
    char *name, *value;
};

struct osb_http_req {
    struct conn *c; /* NULL once the connection is gone */
    const struct osb_http_route *route;
    char method[24];
    struct osb_buf target;
    char *path;
    struct kv *headers, *params, *query;
    size_t nheaders, nparams, nquery;
    const char **qvals; /* scratch for osb_http_req_query_all */
    struct osb_buf body;
    struct osb_buf resp_headers;
    bool header_value_last, headers_done, complete, dispatched, started, ended, chunked,
        head_only, paused, keep_alive, taken_over;
    bool collect; /* a streaming route buffers its body after all (osb_http_req_collect) */
    bool drop_body; /* a small body no handler reads: dropped, the answer follows it */
    osb_http_body_cb on_body;
    osb_http_end_cb on_end;
    void *body_ud;
    osb_http_close_cb on_close;
    void *close_ud;
    osb_http_drain_cb on_drain;
    void *drain_ud;
};

/* uv_alloc_cb handing out the shared read slab. */
void osb_http__alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf);
/* Queue bytes on the connection (copied). */
void osb_http__conn_write(struct conn *c, const void *data, size_t len);
/* Close once everything queued is written. */
void osb_http__conn_close_after_flush(struct conn *c);
void osb_http__conn_close(struct conn *c);
/* Re-evaluate whether the connection should be reading. */
void osb_http__conn_update_read(struct conn *c);
/* Detach the request from its connection for a protocol switch; the
 * request is freed, the connection stays open in the given mode. */
void osb_http__take_over(struct osb_http_req *req, enum conn_mode mode, void *ctx);

/* Close after the queued answer, lingering (linger.c): for an answer sent
 * before the request body was read. */
void osb_http__linger(struct conn *c);
void osb_http__linger_on_data(struct conn *c, size_t len);
void osb_http__linger_on_close(struct conn *c);
void osb_http__linger_timer(uv_timer_t *t);

/* Mode hooks implemented by wsconn.c and proxy.c. */
void osb_http__ws_on_data(struct conn *c, const char *data, size_t len);
void osb_http__ws_on_close(struct conn *c);
void osb_http__ws_on_drain(struct conn *c);
void osb_http__proxy_on_data(struct conn *c, const char *data, size_t len);
void osb_http__proxy_on_close(struct conn *c);
void osb_http__proxy_on_drain(struct conn *c);
#endif
