/* execd's SSE event stream (protocol.md 3.3): each event is compact JSON
 * followed by "\n\n", no "data:" prefix, fields in the order type, text,
 * execution_count, execution_time, timestamp, results, error; zero values
 * are left out; timestamp (Unix ms) is always present. A ping event goes out
 * every 3 s while the stream is open. */
#ifndef OSB_EXECD_EVENTS_H
#define OSB_EXECD_EVENTS_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "http/http.h"

struct osb_execd_event {
    const char *type; /* required */
    const char *text; /* may be NULL; text_len 0 means strlen(text) */
    size_t text_len;
    int64_t execution_count; /* 0: absent */
    int64_t execution_time;  /* 0: absent */
    json_t *results;         /* borrowed; NULL: absent */
    const char *ename;       /* non-NULL: an "error" object is added */
    const char *evalue;
    json_t *traceback; /* borrowed array of strings; NULL: [] */
};

struct osb_sse;
/* Start the SSE response on req. on_gone runs if the client disconnects
 * first; the stream is freed after it returns, so drop the pointer there. */
struct osb_sse *osb_sse_open(uv_loop_t *loop, struct osb_http_req *req, void (*on_gone)(void *ud),
                             void *ud);
void osb_sse_send(struct osb_sse *s, const struct osb_execd_event *ev);
/* Send raw bytes as they are (e.g. the session timeout JSON line). */
void osb_sse_send_raw(struct osb_sse *s, const char *data, size_t len);
/* Bytes waiting on the socket: pause producers above OSB_WRITE_HIGH_WATER. */
size_t osb_sse_queued(const struct osb_sse *s);
/* Run fn once the socket queue falls below half of OSB_WRITE_HIGH_WATER
 * (after a producer paused because osb_sse_queued() was above it). One hook
 * per stream; fn NULL removes it. */
void osb_sse_on_drain(struct osb_sse *s, void (*fn)(void *ud), void *ud);
/* End the response and free the stream. */
void osb_sse_close(struct osb_sse *s);

/* Build the event JSON text (caller frees); exposed for tests. */
char *osb_execd_event_json(const struct osb_execd_event *ev, int64_t now_ms, size_t *len);
#endif
