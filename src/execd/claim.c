/* The deferred entrypoint of a pooled sandbox (claim.h). */
#include "execd/claim.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct claim_state {
    char **boot_entry;
    osb_execd_claim_start start;
    void *ud;
    bool claimed;
};

static struct claim_state cs;

bool osb_execd_claim_deferred(void)
{
    const char *v = getenv(OSB_EXECD_DEFER_ENV);
    bool on = v && strcmp(v, "1") == 0;
    unsetenv(OSB_EXECD_DEFER_ENV);
    return on;
}

/* Every check before anything changes: a bad body changes nothing. */
static int check_body(json_t *b, char *msg, size_t n)
{
    if (!json_is_object(b))
        return snprintf(msg, n, "body must be a JSON object"), -1;
    json_t *env = json_object_get(b, "env"), *ep = json_object_get(b, "entrypoint");
    json_t *kr = json_object_get(b, "keepRunning");
    if (env && !json_is_object(env))
        return snprintf(msg, n, "field 'env' must be an object of strings"), -1;
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        if (!json_is_string(v) || !*k || strchr(k, '='))
            return snprintf(msg, n, "field 'env.%s' must be a string with a name without '='", k),
                   -1;
    }
    if (ep && (!json_is_array(ep) || json_array_size(ep) == 0))
        return snprintf(msg, n, "field 'entrypoint' must be a non-empty array of strings"), -1;
    size_t i;
    json_array_foreach(ep, i, v)
    {
        if (!json_is_string(v))
            return snprintf(msg, n, "field 'entrypoint[%zu]' must be a string", i), -1;
    }
    if (kr && !json_is_boolean(kr))
        return snprintf(msg, n, "field 'keepRunning' must be a boolean"), -1;
    if (!ep && !cs.boot_entry)
        return snprintf(msg, n, "field 'entrypoint' is required (none on the command line)"), -1;
    return 0;
}

static char **entry_argv(json_t *ep)
{
    if (!ep)
        return cs.boot_entry;
    char **argv = osb_xcalloc(json_array_size(ep) + 1, sizeof *argv);
    size_t i;
    json_t *v;
    json_array_foreach(ep, i, v) argv[i] = osb_xstrdup(json_string_value(v));
    return argv;
}

static void h_claim(struct osb_http_req *req, void *ud)
{
    (void)ud;
    if (cs.claimed) {
        osb_http_respond_error(req, 409, "ALREADY_CLAIMED", "this sandbox was already claimed");
        return;
    }
    size_t len = 0;
    const char *body = osb_http_req_body(req, &len);
    json_t *b = json_loadb(body ? body : "", len, 0, NULL);
    char msg[300];
    if (check_body(b, msg, sizeof msg) < 0) {
        json_decref(b);
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", msg);
        return;
    }
    cs.claimed = true;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(b, "env"), k, v) setenv(k, json_string_value(v), 1);
    char **argv = entry_argv(json_object_get(b, "entrypoint"));
    bool keep = json_is_true(json_object_get(b, "keepRunning"));
    json_decref(b);
    /* Answered first: the entrypoint's end (even at once) is the
     * runtime's to report, not this request's. */
    osb_http_respond_empty(req, 200);
    cs.start(argv, keep, cs.ud);
}

static const struct osb_http_route claim_routes[] = {
    {"POST", "/_osb/claim", h_claim, 0, NULL},
};

void osb_execd_claim_routes(struct osb_execd *x, char **boot_entry, osb_execd_claim_start start,
                            void *ud)
{
    cs = (struct claim_state){.boot_entry = boot_entry, .start = start, .ud = ud};
    osb_http_server_add_routes(x->http, claim_routes, 1);
}
