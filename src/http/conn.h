/* Internals of src/http: the connection, the request, and the connection
 * primitives (conn.c) that every connection mode uses. Not for other modules.
 *
 * A connection is in one mode at a time: HTTP (server.c), WebSocket
 * (wsconn.c), a spliced proxy (proxy.c) or a lingering close (linger.c).
 * Each mode module keeps one const struct osb_http_mode and switches a
 * connection to it; conn.c reaches the mode only through that table, so the
 * modes call the primitives and nothing calls back into a mode by name. */
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
    osb_http_observe_fn observe;
    void *observe_ud;
    const char *invalid_code; /* "code" of the 400 for control bytes in the target */
    uv_tcp_t tcp;
    uv_pipe_t unix_sock;
    bool tcp_on, unix_on, closing;
    int pending_handles; /* listeners not yet closed */
    uv_prepare_t reaper; /* closes doomed connections before the loop polls */
    size_t ndoomed;
    struct conn *conns; /* doubly linked */
    size_t nconns;
    uv_timer_t linger_timer; /* ends lingering closes past their deadline */
    size_t nlinger;
    uv_timer_t head_timer; /* ends connections past their head deadline */
    /* Reads are consumed before the next one is allocated (the loop is
     * single threaded), so every socket of the server shares one slab. */
    char slab[256 * 1024];
};

struct conn;

struct osb_http_mode {
    /* Bytes read from the client; the slab is reused after the call. */
    void (*on_data)(struct conn *c, const char *data, size_t len);
    /* The client sent EOF (reading has stopped). NULL: close at once. */
    void (*on_eof)(struct conn *c);
    /* The send queue fell below half of OSB_WRITE_HIGH_WATER. May be NULL. */
    void (*on_drain)(struct conn *c);
    /* The connection is closing: drop the mode's state. May be NULL. */
    void (*on_close)(struct conn *c);
    /* Whether the connection should be reading now. NULL: always. */
    bool (*want_read)(const struct conn *c);
};

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
    struct osb_buf in;        /* received, not yet parsed */
    struct osb_http_req *req; /* request being parsed or handled */
    size_t head_bytes;        /* of the request head being parsed */
    size_t queued;            /* bytes handed to uv_write, not yet written */
    bool reading, closing, close_after_flush, in_process, eof;
    bool doomed; /* a write failed: closed by the reaper, outside any caller */
    const struct osb_http_mode *mode;
    void *mode_ctx;        /* struct osb_ws * or struct proxy * */
    uv_shutdown_t shut;    /* lingering close */
    size_t linger_left;    /* bytes still dropped before closing */
    uint64_t linger_until; /* uv_now deadline */
    uint64_t head_until;   /* uv_now deadline for the next request head; 0 once it is in */
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
    bool header_value_last, headers_done, complete, dispatched, started, ended, chunked, head_only,
        paused, keep_alive, taken_over;
    bool collect;       /* a streaming route buffers its body after all (osb_http_req_collect) */
    bool drop_body;     /* a small body no handler reads: dropped, the answer follows it */
    bool head_overflow; /* resp_headers filled up: the response cannot be sent */
    osb_http_body_cb on_body;
    osb_http_end_cb on_end;
    void *body_ud;
    osb_http_close_cb on_close;
    void *close_ud;
    osb_http_drain_cb on_drain;
    void *drain_ud;
    /* What the observer is told when the request is freed. */
    struct osb_http_server *srv;
    uint64_t t0;    /* uv_hrtime at the first byte */
    int status;     /* the response's (0: none was sent) */
    uint64_t bytes; /* body bytes written */
    char id[64];    /* osb_http_req_set_id */
    void *note;     /* osb_http_req_set_note, freed after the observer */
    void (*note_free)(void *note);
};

/* ---- conn.c: the primitives every mode uses ---- */

/* Link a new connection into the server in the given mode. */
void osb_http__conn_open(struct osb_http_server *srv, struct conn *c,
                         const struct osb_http_mode *mode);
/* Close and free a connection that was never opened (a refused accept). */
void osb_http__conn_discard(struct conn *c);
/* Switch modes; ctx becomes c->mode_ctx. */
void osb_http__conn_set_mode(struct conn *c, const struct osb_http_mode *mode, void *ctx);
/* The server's read slab. */
uv_buf_t osb_http__slab(struct osb_http_server *srv);
/* Queue bytes on the connection: what the socket takes now is not copied,
 * the rest is copied once. */
void osb_http__conn_write(struct conn *c, const void *data, size_t len);
void osb_http__conn_writev(struct conn *c, uv_buf_t *bufs, unsigned n);
/* Close once everything queued is written. */
void osb_http__conn_close_after_flush(struct conn *c);
/* Mark for closing by the server's prepare hook, outside any caller. */
void osb_http__conn_doom(struct conn *c);
void osb_http__conn_close(struct conn *c);
/* Re-evaluate whether the connection should be reading. */
void osb_http__conn_update_read(struct conn *c);

/* ---- server.c ---- */

/* Detach the request from its connection for a protocol switch; the
 * request is freed, the connection stays open in the given mode. */
void osb_http__take_over(struct osb_http_req *req, const struct osb_http_mode *mode, void *ctx);

/* ---- linger.c ---- */

/* Close after the queued answer, lingering: for an answer sent before the
 * request body was read. */
void osb_http__linger(struct conn *c);
#endif
