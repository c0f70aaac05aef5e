/* Chrome DevTools Protocol through the server proxy (docs/server.md,
 * "Endpoints and the proxy"). A browser in a sandbox answers its discovery
 * routes (/json/version, /json/list, /json) with URLs of its own,
 * ws://127.0.0.1:{port}/devtools/..., which mean nothing outside the
 * sandbox; Playwright's connectOverCDP and Puppeteer's connect follow
 * webSocketDebuggerUrl. These answers are rewritten to point back through
 * the same proxy route the client came by. */
#ifndef OSB_SRV_CDP_H
#define OSB_SRV_CDP_H
#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

/* The largest discovery answer rewritten (a browser with many tabs). */
#define OSB_CDP_MAX_ANSWER (1024 * 1024)

/* Whether a proxied request (method, path below the port's route, without
 * the query) asks a discovery route. */
bool osb_cdp_is_discovery(const char *method, const char *rest);

/* The rewrite for one discovery answer of `port`: internal URLs become
 * "{ws|wss}://{host}{route}/...", e.g. host "sbx.example:8080" and route
 * "/sandboxes/ID/proxy/9222". The strings are copied; the proxy owns it. */
void osb_cdp_rewrite(struct osb_http_rewrite *rw, long port, bool tls, const char *host,
                     const char *route);

/* The rewriter itself (osb_http_rewrite.fn), for tests: a new body, or
 * NULL when it is not JSON or names no internal URL. */
char *osb_cdp_rewrite_body(void *ud, const char *body, size_t len, size_t *out_len);
#endif
