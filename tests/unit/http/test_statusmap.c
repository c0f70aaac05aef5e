/* The per-route status map: listed statuses stay, transport ones stay,
 * unlisted client errors go to 400, the rest to 500, and a route the
 * contract does not know keeps whatever the handler chose. */
#include "common/cleanup.h"
#include "http/statusmap.h"
#include "tap.h"

static const struct osb_status_rule rules[] = {
    {"POST", "/sandboxes", "400 401 409 500"},
    {"GET", "/sandboxes/:id", "401 403 404 500"},
    {"DELETE", "/files", "500"},
    {"GET", "/ping", ""},
    {"GET", "/x", "4000 5000"},
};

static int pick(const char *m, const char *p, int status)
{
    return osb_status_pick(osb_status_find(rules, OSB_ARRAY_LEN(rules), m, p), status);
}

int main(void)
{
    IS_INT(pick("POST", "/sandboxes", 409), 409, "a listed status stays");
    IS_INT(pick("POST", "/sandboxes", 404), 400, "unlisted 404 on create -> 400");
    IS_INT(pick("POST", "/sandboxes", 403), 400, "unlisted 403 on create -> 400");
    IS_INT(pick("POST", "/sandboxes", 502), 500, "unlisted 502 on create -> 500");
    IS_INT(pick("POST", "/sandboxes", 501), 500, "unlisted 501 -> 500");
    IS_INT(pick("POST", "/sandboxes", 413), 413, "413 is transport-level: stays");
    IS_INT(pick("POST", "/sandboxes", 401), 401, "401 stays");
    IS_INT(pick("GET", "/sandboxes/:id", 409), 500, "a 4xx on a route without 400 -> 500");
    IS_INT(pick("GET", "/sandboxes/:id", 400), 500, "400 on a route without 400 -> 500");
    IS_INT(pick("DELETE", "/files", 400), 500, "DELETE /files lists only 500");
    IS_INT(pick("DELETE", "/files", 405), 405, "405 stays");
    IS_INT(pick("GET", "/ping", 500), 500, "nothing listed: unchanged");
    IS_INT(pick("GET", "/x", 400), 400, "\"4000 5000\" lists neither 400 nor 500: unchanged");
    IS_INT(pick("GET", "/x", 500), 500, "\"5000\" is not 500, 500 unchanged");
    IS_INT(pick("GET", "/sandboxes", 404), 404, "no rule for the method: unchanged");
    IS_INT(pick("POST", "/nope", 502), 502, "no rule for the path: unchanged");
    OK(osb_status_find(rules, OSB_ARRAY_LEN(rules), "GET", "/sandboxes/:id/x") == NULL,
       "find matches whole patterns only");
    return tap_done();
}
