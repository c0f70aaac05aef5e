#include "server/api_egress.h"

#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "net/policy.h"
#include "server/api_vault.h"
#include "server/network.h"
#include "server/vault.h"
#include "server/server.h"

#define EGRESS_AUTH "OPENSANDBOX-EGRESS-AUTH"

/* Errors are {code,message} (upstream's sidecar sends text/plain, which no
 * SDK can show); the status map (apierr.c) keeps them to the statuses
 * egress-api.yaml lists. */

static json_t *status_json(const struct osb_server *srv, const struct osb_policy *p)
{
    return json_pack("{s:s,s:s,s:s}", "status", "ok", "mode",
                     osb_policy_mode_str(osb_policy_mode(p)), "enforcementMode",
                     srv->cfg->egress.mode);
}

/* The body through the one parser (duplicate keys and over-deep nesting
 * are refused: a sandbox sends it). *j is NULL for an empty body. */
static int body_json(struct osb_http_req *req, json_t **j)
{
    size_t len;
    const char *b = osb_http_req_body(req, &len);
    struct osb_err err = {0};
    if (osb_json_parse(b, len, true, j, &err) < 0) {
        osb_apierr_reply(req, "EGRESS::INVALID_BODY", "request body: %s", err.msg);
        return -1;
    }
    return 0;
}

/* Puts p in force and saves the record; answers 500 when s lost its
 * policy meanwhile. */
static int commit(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                  struct osb_policy *p)
{
    struct osb_err err = {0};
    if (osb_srvvault_check_policy(srv, s, p, &err) < 0) {
        osb_policy_free(p);
        osb_apierr_reply(req, "EGRESS::INVALID_POLICY", "credential vault policy validation: %s",
                         err.msg);
        return -1;
    }
    if (osb_network_set_policy(srv, s, p, &err) < 0) {
        osb_apierr_reply(req, "EGRESS::NOT_ENABLED", "%s", err.msg);
        return -1;
    }
    struct osb_apierr e;
    if (osb_sbx_save(srv, s, "EgressPolicy", "The egress policy changed.", &e) < 0)
        osb_err_log("sandbox %s: save the egress policy: %s", s->id, e.msg);
    return 0;
}

static void replace_policy(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req)
{
    json_t *j;
    if (body_json(req, &j) < 0)
        return;
    struct osb_policy p;
    struct osb_err err = {0};
    int r = osb_policy_parse(json_is_null(j) ? NULL : j, &p, &err);
    bool empty = !j;
    json_decref(j);
    if (r < 0) {
        osb_apierr_reply(req, "EGRESS::INVALID_POLICY", "%s", err.msg);
        return;
    }
    if (commit(srv, s, req, &p) < 0)
        return;
    /* Upstream answers with the reset text only for an empty body. */
    if (empty) {
        osb_http_respond_json(req, 200,
                              json_pack("{s:s,s:s,s:s}", "status", "ok", "mode", "deny_all",
                                        "reason", "policy reset to default deny-all"));
        return;
    }
    osb_http_respond_json(req, 200, status_json(srv, osb_network_policy(srv, s)));
}

/* PATCH merges rules into a copy, DELETE removes targets from one; the
 * copy goes in force only when the whole body was good. */
static int edit(struct osb_policy *p, json_t *j, bool patch, size_t *removed, struct osb_err *err)
{
    if (!patch)
        return osb_policy_delete_json(p, j, removed, err);
    struct osb_policy_rule *rules;
    size_t nr;
    if (osb_policy_parse_rules(j, &rules, &nr, err) < 0)
        return -1;
    int r = osb_policy_patch(p, rules, nr, err);
    osb_policy_rules_free(rules, nr);
    return r;
}

static void patch_or_delete(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                            bool patch)
{
    json_t *j;
    if (body_json(req, &j) < 0)
        return;
    if (!j) {
        osb_apierr_reply(req, "EGRESS::INVALID_BODY", "the body must be a non-empty JSON array");
        return;
    }
    struct osb_policy p;
    osb_policy_copy(&p, osb_network_policy(srv, s));
    struct osb_err err = {0};
    size_t removed = 0;
    int r = edit(&p, j, patch, &removed, &err);
    json_decref(j);
    if (r < 0) {
        osb_policy_free(&p);
        osb_apierr_reply(
            req, err.code == OSB_E_TOOBIG ? "EGRESS::TOO_MANY_RULES" : "EGRESS::INVALID_RULES",
            "%s", err.msg);
        return;
    }
    if (commit(srv, s, req, &p) < 0)
        return;
    json_t *out = status_json(srv, osb_network_policy(srv, s));
    if (!patch && removed == 0)
        json_object_set_new(out, "reason", json_string("no matching targets found"));
    osb_http_respond_json(req, 200, out);
}

static bool is_vault(const char *rest)
{
    return strncmp(rest, "credential-vault", 16) == 0 && (rest[16] == 0 || rest[16] == '/');
}

/* At the end of the headers: answers and returns false unless the request
 * carries the egress token for a known path. */
static bool admit(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                  const char *rest)
{
    if (!osb_network_policy(srv, s)) {
        osb_apierr_reply(req, "EGRESS::NOT_ENABLED",
                         "no egress policy: this sandbox was created without networkPolicy");
        return false;
    }
    if (strcmp(rest, "healthz") == 0) {
        osb_http_respond(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return false;
    }
    if (!osb_network_token_ok(srv, s, osb_http_req_header(req, EGRESS_AUTH))) {
        osb_apierr_reply(req, "EGRESS::UNAUTHORIZED",
                         "unauthorized: missing or wrong OPENSANDBOX-EGRESS-AUTH header");
        return false;
    }
    if (strcmp(rest, "policy") != 0 && !is_vault(rest)) {
        osb_apierr_reply(req, "EGRESS::NOT_FOUND", "no such egress API path");
        return false;
    }
    return true;
}

static const char *rest_of(struct osb_http_req *req)
{
    const char *rest = osb_http_req_param(req, "rest");
    return rest ? rest : "";
}

static void body_in(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    /* Again: the sandbox or its policy may have gone while the body came. */
    if (!s || !admit(srv, s, req, rest_of(req)))
        return;
    const char *m = osb_http_req_method(req);
    if (is_vault(rest_of(req))) {
        osb_api_vault(srv, s, req, rest_of(req));
    } else if (strcmp(m, "GET") == 0) {
        const struct osb_policy *p = osb_network_policy(srv, s);
        json_t *out = status_json(srv, p);
        json_object_set_new(out, "policy", osb_policy_json(p));
        osb_http_respond_json(req, 200, out);
    } else if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0) {
        replace_policy(srv, s, req);
    } else if (strcmp(m, "PATCH") == 0 || strcmp(m, "DELETE") == 0) {
        patch_or_delete(srv, s, req, m[0] == 'P');
    } else {
        osb_apierr_reply(req, "EGRESS::METHOD_NOT_ALLOWED", "method not allowed on /policy");
    }
}

static void h_egress(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    if (s && admit(srv, s, req, rest_of(req)))
        osb_http_req_collect(req, body_in, srv);
}

const struct osb_http_route osb_api_egress_routes[] = {
    {NULL, "/sandboxes/:id/proxy/18080/*rest", h_egress, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/sandboxes/:id/proxy/18080", h_egress, OSB_ROUTE_STREAM_BODY, NULL},
};
const size_t osb_api_egress_nroutes =
    sizeof osb_api_egress_routes / sizeof osb_api_egress_routes[0];
