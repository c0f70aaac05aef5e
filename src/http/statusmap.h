/* Error statuses per operation, as an API contract (an OpenAPI file) lists
 * them. Generated clients parse an error body only for the statuses the
 * contract lists for that call, so an error the handler raised with another
 * status is moved to the nearest listed one; its code keeps saying what
 * happened. The service fills the table; the HTTP server applies it to
 * every osb_http_respond_error of a dispatched request. */
#ifndef OSB_HTTP_STATUSMAP_H
#define OSB_HTTP_STATUSMAP_H
#include <stdbool.h>
#include <stddef.h>

struct osb_status_rule {
    const char *method;   /* "GET" ... */
    const char *path;     /* the route pattern, e.g. "/sandboxes/:id" */
    const char *statuses; /* the listed error statuses, e.g. "400 401 409 500" */
};

/* Transport-level answers every route may give whatever its contract says
 * (401 auth, 405, 411, 413, 414, 426, 431). */
bool osb_status_is_transport(int status);
/* The rule for method+path, or NULL when the contract has no such operation. */
const struct osb_status_rule *osb_status_find(const struct osb_status_rule *t, size_t n,
                                              const char *method, const char *path);
/* The status to send for `status` under rule r (NULL: unchanged). A listed
 * or transport status stays. Any other client error becomes 400 if listed;
 * anything else becomes 500 if listed; failing both it stays. */
int osb_status_pick(const struct osb_status_rule *r, int status);
#endif
