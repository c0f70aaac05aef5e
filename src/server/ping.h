/* Readiness probe: GET /ping on execd's unix socket until it answers 200,
 * retrying every millisecond (the socket appears a few ms after execd is
 * exec'd), up to a deadline. Loop thread only. */
#ifndef OSB_SERVER_PING_H
#define OSB_SERVER_PING_H
#include <stdint.h>
#include <uv.h>

struct osb_ping;
/* ok: 0 when execd answered 200, -1 on timeout (why says what was seen last). */
typedef void (*osb_ping_cb)(void *ud, int ok, const char *why);

/* Strings are copied. The callback runs exactly once unless cancelled. */
struct osb_ping *osb_ping_start(uv_loop_t *loop, const char *sock_path, const char *token,
                                int64_t timeout_ms, osb_ping_cb cb, void *ud);
/* The callback will not run; resources are released asynchronously. */
void osb_ping_cancel(struct osb_ping *p);
#endif
