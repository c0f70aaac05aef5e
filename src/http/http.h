/* HTTP/1.1 server on libuv + http-parser, shared by execd and the lifecycle
 * server: keep-alive, pipelining (one request at a time per connection, the
 * rest waits in the read buffer), buffered or streaming request bodies,
 * fixed-length / chunked / SSE responses with backpressure, WebSocket
 * upgrade, and raw takeover for proxying.
 *
 * Lifetime of a request: the handler owns `req` from the call until it ends
 * the response (osb_http_respond*, osb_http_end, osb_http_ws_accept,
 * osb_http_proxy). If the client goes away first, the close callback set with
 * osb_http_req_on_close runs and `req` is freed right after it returns; the
 * handler must drop its pointer there. Every call on a closed-but-not-yet-
 * ended request is a no-op, so async producers need no extra checks beyond
 * that callback. All calls happen on the loop thread. */
#ifndef OSB_HTTP_H
#define OSB_HTTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include <uv.h>

#include "common/err.h"

struct osb_http_server;
struct osb_http_req;
struct osb_ws;

typedef void (*osb_http_handler)(struct osb_http_req *req, void *ud);

enum {
    /* The handler runs when the headers are in, and reads the body through
     * osb_http_req_on_body. Without it the body is buffered (capped at
     * OSB_MAX_JSON_BODY, else 413) and the handler runs once it is complete. */
    OSB_ROUTE_STREAM_BODY = 1 << 0,
    /* Skip the server's auth hook (e.g. /ping). */
    OSB_ROUTE_PUBLIC = 1 << 1,
    /* The handler never reads the body, so it is never buffered (public
     * routes must not hold 16 MiB for anyone): up to OSB_MAX_DROPPED_BODY
     * of known length is dropped as it comes, anything else is answered at
     * the end of the headers and the connection ends. Requests that match
     * no route are treated so too. */
    OSB_ROUTE_NO_BODY = 1 << 2,
};

/* Patterns: literal segments, ":name" matches one segment, a trailing "*name"
 * matches the rest of the path (may be empty, may contain '/'). Routes are
 * tried in order; the first whose method and pattern match wins. method NULL
 * matches any method. */
struct osb_http_route {
    const char *method;
    const char *pattern;
    osb_http_handler fn;
    unsigned flags;
    void *ud;
};

/* Runs for every non-public route at the end of the request headers, before
 * any body byte is read or "100 Continue" is sent. Return true to let the
 * request pass; return false after responding (e.g. 401): the answer goes
 * out with Connection: close, the body is never read, the connection ends. */
typedef bool (*osb_http_auth_fn)(struct osb_http_req *req, void *ud);

struct osb_http_server *osb_http_server_new(uv_loop_t *loop);
/* Adds routes (the array is copied). */
void osb_http_server_add_routes(struct osb_http_server *srv, const struct osb_http_route *r,
                                size_t n);
void osb_http_server_set_auth(struct osb_http_server *srv, osb_http_auth_fn fn, void *ud);
/* Chooses the status osb_http_respond_error sends once a route's handler
 * (or the auth hook) runs: the service's per-route contract (statusmap.h).
 * The HTTP layer's own answers (bad framing, 413, 431) are not mapped. */
typedef int (*osb_http_status_fn)(const struct osb_http_req *req, int status, void *ud);
void osb_http_server_set_status_map(struct osb_http_server *srv, osb_http_status_fn fn, void *ud);
/* Told once about every request when it is done (answered, taken over by a
 * proxy or WebSocket, or cut by the client): for access logs and metrics. */
struct osb_http_done {
    const char *method;
    const char *route; /* the matched pattern, NULL when none matched */
    const char *path;  /* percent-decoded, no query */
    const char *id;    /* osb_http_req_set_id's, "" if none */
    int status;        /* 0: no answer was sent (the client went away) */
    uint64_t bytes;    /* response body bytes written */
    double seconds;    /* from the first byte of the request */
    bool taken_over;   /* a proxy or a WebSocket carried on */
};
typedef void (*osb_http_observe_fn)(const struct osb_http_req *req, const struct osb_http_done *d,
                                    void *ud);
void osb_http_server_set_observer(struct osb_http_server *srv, osb_http_observe_fn fn, void *ud);
/* A control byte (0x00-0x1f, 0x7f) in the percent-decoded path or in a
 * query parameter's decoded name or value is refused on every route with
 * 400 {"code":code,...} (after the auth hook); the default code is
 * "BAD_REQUEST". code must outlive the server. */
void osb_http_server_set_invalid_code(struct osb_http_server *srv, const char *code);
/* Body for unmatched routes; default is gin's "404 page not found" text. */
OSB_MUST_CHECK int osb_http_listen_tcp(struct osb_http_server *srv, const char *host, int port,
                                       struct osb_err *err);
/* Returns the bound port (useful with port 0), or -1. */
OSB_MUST_CHECK int osb_http_server_port(struct osb_http_server *srv);
OSB_MUST_CHECK int osb_http_listen_unix(struct osb_http_server *srv, const char *path,
                                        struct osb_err *err);
/* Listen on an inherited unix stream socket, already bound (by whoever
 * made it, e.g. the sandbox runtime). Takes the place of --unix: one or
 * the other. */
OSB_MUST_CHECK int osb_http_listen_unix_fd(struct osb_http_server *srv, int fd,
                                           struct osb_err *err);
/* Serve an already-connected stream socket (socketpair, inherited fd). */
OSB_MUST_CHECK int osb_http_server_adopt_fd(struct osb_http_server *srv, int fd,
                                            struct osb_err *err);
/* Stops listening and closes every connection; frees the server once the
 * handles are closed (run the loop to finish). */
void osb_http_server_close(struct osb_http_server *srv);

/* ---- request ---- */
const char *osb_http_req_method(const struct osb_http_req *req);
/* Percent-decoded path without the query. */
const char *osb_http_req_path(const struct osb_http_req *req);
/* The raw request target as sent ("/a%20b?x=1"). */
const char *osb_http_req_target(const struct osb_http_req *req);
/* The pattern of the route the request matched ("/sandboxes/:id"), or NULL. */
const char *osb_http_req_route_pattern(const struct osb_http_req *req);
/* A ":name" or "*name" capture from the route pattern, decoded; NULL if none. */
const char *osb_http_req_param(const struct osb_http_req *req, const char *name);
/* First value of a decoded query parameter, NULL if absent. */
const char *osb_http_req_query(const struct osb_http_req *req, const char *name);
/* All values of a query parameter in order; returns the count, *vals points
 * into the request (valid while the request lives). */
size_t osb_http_req_query_all(const struct osb_http_req *req, const char *name,
                              const char *const **vals);
/* Case-insensitive header lookup (first occurrence), NULL if absent. */
const char *osb_http_req_header(const struct osb_http_req *req, const char *name);
/* Iterate headers: returns false past the end. */
bool osb_http_req_header_at(const struct osb_http_req *req, size_t i, const char **name,
                            const char **value);
/* Buffered body (NUL-terminated), or NULL/0 when empty or streaming. */
const char *osb_http_req_body(const struct osb_http_req *req, size_t *len);
/* The request's id for logs (e.g. X-Request-ID), at most 63 bytes kept. */
void osb_http_req_set_id(struct osb_http_req *req, const char *id);
/* Peer address as text ("127.0.0.1" or "unix"). */
const char *osb_http_req_peer(const struct osb_http_req *req);
/* One value a handler keeps with its request for the server's observer
 * (e.g. what a proxied exchange showed): free_fn(note) runs when the
 * request is freed, after the observer saw it. A second call frees the
 * first note. */
void osb_http_req_set_note(struct osb_http_req *req, void *note, void (*free_fn)(void *note));
void *osb_http_req_note(const struct osb_http_req *req);

/* Streaming bodies (OSB_ROUTE_STREAM_BODY): on_body gets each decoded chunk
 * (chunked framing removed), on_end once the body is complete. Pausing stops
 * reading the socket until resumed (backpressure for slow consumers). */
typedef void (*osb_http_body_cb)(struct osb_http_req *req, const char *data, size_t len, void *ud);
typedef void (*osb_http_end_cb)(struct osb_http_req *req, void *ud);
void osb_http_req_on_body(struct osb_http_req *req, osb_http_body_cb on_body,
                          osb_http_end_cb on_end, void *ud);
void osb_http_req_pause(struct osb_http_req *req);
/* For a streaming handler that has admitted its request at the end of the
 * headers: the body is buffered as on a buffered route (413 past
 * OSB_MAX_JSON_BODY, osb_http_req_body), then on_end runs. */
void osb_http_req_collect(struct osb_http_req *req, osb_http_end_cb on_end, void *ud);
void osb_http_req_resume(struct osb_http_req *req);

/* Called if the connection closes before the response ended. */
typedef void (*osb_http_close_cb)(struct osb_http_req *req, void *ud);
void osb_http_req_on_close(struct osb_http_req *req, osb_http_close_cb fn, void *ud);

/* ---- responses ---- */
/* Add a response header before the response starts. */
void osb_http_add_header(struct osb_http_req *req, const char *name, const char *value);
/* Full response with Content-Length (0 allowed: the empty-body form SDKs need). */
void osb_http_respond(struct osb_http_req *req, int status, const char *content_type,
                      const void *body, size_t len);
void osb_http_respond_empty(struct osb_http_req *req, int status);
/* Serializes (compact, Go escaping) and takes the reference. */
void osb_http_respond_json(struct osb_http_req *req, int status, json_t *j);
/* {"code":code,"message":...} */
void osb_http_respond_error(struct osb_http_req *req, int status, const char *code, const char *fmt,
                            ...) __attribute__((format(printf, 4, 5)));

/* Streaming: content_length < 0 means chunked. */
void osb_http_start(struct osb_http_req *req, int status, const char *content_type,
                    int64_t content_length);
/* Queue bytes (copied). Returns the bytes now waiting in the socket queue
 * (call with len 0 to just ask);
 * producers should pause above OSB_WRITE_HIGH_WATER and wait for on_drain. */
size_t osb_http_write(struct osb_http_req *req, const void *data, size_t len);
typedef void (*osb_http_drain_cb)(struct osb_http_req *req, void *ud);
/* Called when the queue falls below half the high-water mark. */
void osb_http_req_on_drain(struct osb_http_req *req, osb_http_drain_cb fn, void *ud);
/* Finish the response; the request is freed (on a later loop turn). */
void osb_http_end(struct osb_http_req *req);
/* Give up on a response that cannot be completed (e.g. a file shrank under
 * a Content-Length): the connection is closed, the request freed; no close
 * callback runs. */
void osb_http_abort(struct osb_http_req *req);
/* Whether headers were already sent. */
bool osb_http_started(const struct osb_http_req *req);

/* SSE response headers as execd sends them (text/event-stream, no-cache,
 * keep-alive, X-Accel-Buffering: no, chunked). */
void osb_http_sse_start(struct osb_http_req *req);

/* ---- WebSocket (RFC 6455) ---- */
struct osb_ws_cbs {
    /* opcode 1 (text) or 2 (binary); fragments are joined. */
    void (*on_message)(struct osb_ws *ws, int opcode, const uint8_t *data, size_t len, void *ud);
    /* The connection is gone (close frame, error, or EOF); ws is freed after. */
    void (*on_close)(struct osb_ws *ws, int code, void *ud);
    /* Optional: the send queue fell below half of OSB_WRITE_HIGH_WATER. */
    void (*on_drain)(struct osb_ws *ws, void *ud);
};
/* Validates the upgrade request and answers 101; on failure answers 400 and
 * returns NULL. The request is consumed either way. */
OSB_MUST_CHECK struct osb_ws *osb_http_ws_accept(struct osb_http_req *req,
                                                 const struct osb_ws_cbs *cbs, void *ud);
/* Queue one frame. Once a close was sent or the connection is gone, frames
 * are dropped (as osb_http_write drops writes on an ended request): the
 * sender learns of it from on_close, so there is no result to check. */
void osb_ws_send(struct osb_ws *ws, int opcode, const void *data, size_t len);
/* Returns bytes queued on the socket (for backpressure). */
size_t osb_ws_queued(const struct osb_ws *ws);
/* Send a close frame and close the connection (on_close follows). */
void osb_ws_close(struct osb_ws *ws, int code, const char *reason);

/* ---- proxy ---- */
struct osb_http_upstream {
    const char *unix_path; /* either a unix socket path */
    const char *host;      /* or host + port */
    int port;
    /* NULL-terminated header names not forwarded (case-insensitive), on
     * top of the hop-by-hop ones; e.g. the lifecycle server's API key. */
    const char *const *drop_headers;
    /* Optional: sees the exchange (the lifecycle server's audit trail). */
    const struct osb_http_tap *tap;
    /* Optional: may rewrite one small answer whole. */
    const struct osb_http_rewrite *rewrite;
};
/* An answer rewritten whole (the lifecycle server's CDP discovery
 * answers, whose URLs point inside the sandbox). A 200 answer framed by a
 * Content-Length of at most `max`, with no Content-Encoding and a
 * Content-Type that starts with `content_type` (case-insensitive), is held
 * until complete; fn gets its body and returns a new malloc'd one (its
 * length in *out_len), or NULL to keep it. The head is relayed with the new
 * Content-Length and the exchange ends there. Every other answer streams
 * untouched, as without a rewrite; an upgrade is never rewritten. The
 * rewrite is copied and the proxy owns ud: free_ud(ud) runs once, when the
 * proxy is done (free_ud may be NULL). */
struct osb_http_rewrite {
    const char *content_type;
    size_t max;
    char *(*fn)(void *ud, const char *body, size_t len, size_t *out_len);
    void (*free_ud)(void *ud);
    void *ud;
};
/* What a proxy shows a tap, read-only (the bytes relayed do not change):
 * the request body as it is forwarded (decoded: no chunked framing), the
 * upstream's answer as it is relayed (raw: status line, head, framing),
 * then on_end exactly once, before the request is freed (so before the
 * server's observer sees it); client_left: the client went away before the
 * answer ended. A WebSocket upgrade ends the tap when the connection
 * switches: spliced bytes are not shown. The tap is copied; any member may
 * be NULL. */
struct osb_http_tap {
    void (*on_request)(void *ud, const char *data, size_t len);
    void (*on_response)(void *ud, const char *data, size_t len);
    void (*on_end)(void *ud, bool client_left);
    void *ud;
};
/* Forward the request (method, target, headers, body) to the upstream and
 * stream the answer back; WebSocket upgrades are spliced both ways. The
 * connection is closed after the exchange. A failed connect answers 502
 * {"code":"PROXY::BAD_GATEWAY",...}. extra_headers: NULL-terminated name/value pairs
 * added to the forwarded request. */
void osb_http_proxy(struct osb_http_req *req, const struct osb_http_upstream *up,
                    const char *target, const char *const *extra_headers);

/* Reason phrase for a status code. */
const char *osb_http_reason(int status);
/* Percent-decode in place (also '+' -> ' ' when form); returns the decoded
 * length (an encoded %00 leaves a NUL inside it), or -1 on bad escapes. */
OSB_MUST_CHECK long osb_http_url_decode(char *s, bool form);
#endif
