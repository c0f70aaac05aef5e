/* What the files of libopensandbox share; never installed. Exported names
 * carry osbc_ (the public API, opensandbox.h); names shared between the
 * library's files carry osbcl_ and are hidden in the shared object.
 *
 * The library never aborts: every allocation is checked and reported as
 * OSBC_E_NOMEM. It uses jansson for JSON and http-parser for responses;
 * src/http/ws.c's pure codec functions for WebSocket frames. */
#ifndef OSBCL_INTERNAL_H
#define OSBCL_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "osb/opensandbox.h"

#define OSBCL_HIDDEN __attribute__((visibility("hidden")))

/* ------------------------------------------------------------ errors (error.c) */

/* Fill err (may be NULL) and return code, so `return osbcl_fail(...)` is one line. */
OSBCL_HIDDEN int osbcl_fail(struct osbc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with errno saved in sys_errno and ": strerror(errno)" appended. */
OSBCL_HIDDEN int osbcl_fail_sys(struct osbc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error status from a peer: OSBC_E_HTTP with http_status, the body's
 * {"code","message"} (lifecycle and execd), {"error"} (execd auth) or its
 * first line of text. what names the call: "GET /v1/sandboxes/x". */
OSBCL_HIDDEN int osbcl_fail_http(struct osbc_error *err, int status, const char *body, size_t len,
                                 const char *what);
OSBCL_HIDDEN void osbcl_err_clear(struct osbc_error *err);

/* ------------------------------------------------------------ strings (str.c) */

/* A growable string; every append sets oom instead of failing, so a chain of
 * appends is checked once (osbcl_sb_done). */
struct osbcl_sb {
    char *p;
    size_t len, cap;
    bool oom;
};
OSBCL_HIDDEN void osbcl_sb_add(struct osbcl_sb *sb, const void *data, size_t len);
OSBCL_HIDDEN void osbcl_sb_adds(struct osbcl_sb *sb, const char *s);
OSBCL_HIDDEN void osbcl_sb_addf(struct osbcl_sb *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s percent-encoded for a path segment or query value. */
OSBCL_HIDDEN void osbcl_sb_esc(struct osbcl_sb *sb, const char *s);
/* The string (caller frees), or NULL with OSBC_E_NOMEM in err when an append failed. */
OSBCL_HIDDEN char *osbcl_sb_done(struct osbcl_sb *sb, struct osbc_error *err);
OSBCL_HIDDEN void osbcl_sb_free(struct osbcl_sb *sb);
OSBCL_HIDDEN char *osbcl_strdup(const char *s); /* NULL in, NULL out */

/* JSON helpers: dump compact (NULL on OOM), and build objects of kv pairs. */
OSBCL_HIDDEN char *osbcl_json_dump(const json_t *j);
/* Sets obj[key] = {kv...} (string values); returns -1 on OOM. */
OSBCL_HIDDEN int osbcl_json_kv(json_t *obj, const char *key, const struct osbc_kv *kv, size_t n);
/* Parses text (with its length); NULL with OSBC_E_PROTOCOL in err on bad JSON. */
OSBCL_HIDDEN json_t *osbcl_json_parse(const char *text, size_t len, const char *what,
                                      struct osbc_error *err);

/* ------------------------------------------------------------ transport (http.c, tls.c) */

/* Where a request goes: the lifecycle server, or an execd/egress endpoint
 * ({protocol}://{endpoint} with the endpoint's headers). */
struct osbcl_base {
    bool tls;
    char *host;     /* name or address, no brackets */
    char *port;     /* decimal */
    char *prefix;   /* path prefix, "" or "/sandboxes/<id>/proxy/44772" */
    char **headers; /* "Name: value" lines, NULL-terminated; may be NULL */
};
OSBCL_HIDDEN void osbcl_base_free(struct osbcl_base *b);
/* Parses "host[:port][/prefix]" (no scheme) into b. */
OSBCL_HIDDEN int osbcl_base_parse(struct osbcl_base *b, const char *endpoint, bool tls,
                                  struct osbc_error *err);

/* Supplies a streamed request body: returns bytes written into buf (0 at
 * the end), or -1 with err filled. */
typedef ssize_t (*osbcl_read_fn)(void *ud, void *buf, size_t cap, struct osbc_error *err);
/* Receives a streamed response body; non-zero stops (OSBC_E_CANCELLED). */
typedef int (*osbcl_data_fn)(void *ud, const char *data, size_t len);

struct osbcl_req {
    const char *method;
    const struct osbcl_base *base; /* NULL: the lifecycle server, with the API key */
    const char *path;              /* after base->prefix; includes the query */
    const char *const *headers;    /* extra "Name: value" lines, NULL-terminated */
    const char *content_type;      /* of the body */
    const void *body;              /* a body in memory ... */
    size_t body_len;
    osbcl_read_fn body_read; /* ... or streamed: body_size bytes, or chunked when -1 */
    void *body_ud;
    long long body_size;
    osbcl_data_fn on_data; /* set: a 2xx body is streamed here instead of kept;
                            * the response's status and headers are filled in
                            * before its first call */
    void *data_ud;
    long timeout_ms; /* per read/write; 0: the client's; -1: none */
};

struct osbcl_resp {
    int status;
    char *body; /* NUL-terminated; error bodies are always kept */
    size_t len;
    char **headers; /* "name", "value" pairs (names lower-cased), NULL-terminated */
};
/* Sends rq and reads the whole response. Any status is a success here;
 * transport failures are OSBC_E_CONNECT/TIMEOUT/TLS/PROTOCOL. The client
 * reuses one keep-alive connection per host and reconnects once when a
 * reused connection turns out closed before any response byte. */
OSBCL_HIDDEN int osbcl_http(osbc_client *c, const struct osbcl_req *rq, struct osbcl_resp *rs,
                            struct osbc_error *err);
OSBCL_HIDDEN void osbcl_resp_free(struct osbcl_resp *rs);
OSBCL_HIDDEN const char *osbcl_resp_header(const struct osbcl_resp *rs, const char *name);

/* A connection handed over after a 101 Switching Protocols (WebSocket). */
struct osbcl_io;
/* Sends rq (a GET with the Upgrade headers in rq->headers) on a fresh
 * connection; on 101 returns the connection in *io, with any bytes read past
 * the response head kept for osbcl_io_read. Another status fills err as
 * osbcl_fail_http. */
OSBCL_HIDDEN int osbcl_upgrade(osbc_client *c, const struct osbcl_req *rq, struct osbcl_io **io,
                               struct osbcl_resp *rs, struct osbc_error *err);
OSBCL_HIDDEN int osbcl_io_fd(const struct osbcl_io *io);
/* Whether bytes are already buffered (poll on the fd would not show them). */
OSBCL_HIDDEN bool osbcl_io_pending(const struct osbcl_io *io);
/* Reads up to cap bytes, waiting up to timeout_ms (-1: forever, 0: not at
 * all). Returns bytes read, 0 at EOF, -1 with err, or -2 on timeout. */
OSBCL_HIDDEN ssize_t osbcl_io_read(struct osbcl_io *io, void *buf, size_t cap, int timeout_ms,
                                   struct osbc_error *err);
/* Writes all of data or fails. */
OSBCL_HIDDEN int osbcl_io_write(struct osbcl_io *io, const void *data, size_t len, int timeout_ms,
                                struct osbc_error *err);
OSBCL_HIDDEN void osbcl_io_close(struct osbcl_io *io);

/* ------------------------------------------------------------ calls (call.c) */

/* A lifecycle call with a JSON body (may be NULL): a 2xx answer puts the body
 * in *out (may be NULL: dropped); another answer is osbcl_fail_http. */
OSBCL_HIDDEN int osbcl_api(osbc_client *c, const char *method, const char *path,
                           const char *body_json, char **out, struct osbc_error *err);
/* Same with a jansson body (borrowed). */
OSBCL_HIDDEN int osbcl_api_j(osbc_client *c, const char *method, const char *path,
                             const json_t *body, char **out, struct osbc_error *err);

/* The endpoint of a sandbox's port, resolved once per client and cached
 * (GET /v1/sandboxes/{id}/endpoints/{port}?use_server_proxy=...). */
OSBCL_HIDDEN int osbcl_endpoint(osbc_client *c, const char *id, int port,
                                const struct osbcl_base **out, struct osbc_error *err);
/* Forgets a sandbox's cached endpoints (after delete, or a failed call). */
OSBCL_HIDDEN void osbcl_endpoint_forget(osbc_client *c, const char *id);

/* A JSON call to a sandbox's execd (port 44772) or egress API (18080):
 * like osbcl_api, through the cached endpoint and with its headers. */
OSBCL_HIDDEN int osbcl_sbx(osbc_client *c, const char *id, int port, const char *method,
                           const char *path, const char *body_json, char **out,
                           struct osbc_error *err);
/* The same as a full request (streaming); rq->base is filled in. */
OSBCL_HIDDEN int osbcl_sbx_http(osbc_client *c, const char *id, int port, struct osbcl_req *rq,
                                struct osbcl_resp *rs, struct osbc_error *err);

#define OSBCL_EXECD_PORT 44772
#define OSBCL_EGRESS_PORT 18080

/* The client's settings, for the modules that need them. */
OSBCL_HIDDEN long osbcl_timeout_ms(const osbc_client *c);
OSBCL_HIDDEN bool osbcl_use_server_proxy(const osbc_client *c);

#endif
