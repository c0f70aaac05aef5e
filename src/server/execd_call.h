/* One request to a sandbox's execd over its unix socket, for the server's
 * own use (server/pools.c claims a member with POST /_osb/claim): connect,
 * send, read the status line, close. A dead execd (no socket, refused,
 * closed without an answer) and one that does not answer in time both end
 * in status -1. Loop thread only. */
#ifndef OSB_SERVER_EXECD_CALL_H
#define OSB_SERVER_EXECD_CALL_H
#include <stdint.h>
#include <uv.h>

/* status: the HTTP status execd answered, or -1 (why says what failed). */
typedef void (*osb_execd_call_cb)(void *ud, int status, const char *why);

/* body: JSON text (copied). The callback runs exactly once, never from
 * inside this call. */
void osb_execd_call(uv_loop_t *loop, const char *sock_path, const char *token, const char *method,
                    const char *path, const char *body, int64_t timeout_ms, osb_execd_call_cb cb,
                    void *ud);
#endif
