/* The credential vault API (egress-api.yaml, /credential-vault...) under a
 * sandbox's port-18080 endpoint, reached through api_egress.c once the
 * egress token is checked. Values are write-only: every answer is the
 * sanitized state. Writes must come over loopback (426 otherwise, as
 * upstream's sidecar answers when neither TLS nor loopback carries them):
 * they hold the secrets. */
#include "server/api_vault.h"

#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "server/network.h"
#include "server/vault.h"
#include "vault/vault.h"

#define BASE "credential-vault"

static void fail(struct osb_http_req *req, const struct osb_err *err, const char *what)
{
    const char *code = err->code == OSB_E_INVALID || err->code == OSB_E_TOOBIG
                           ? "EGRESS::VAULT_INVALID"
                       : err->code == OSB_E_NOTFOUND ? "EGRESS::VAULT_NOT_FOUND"
                       : err->code == OSB_E_EXISTS   ? "EGRESS::VAULT_CONFLICT"
                                                     : "EGRESS::VAULT_FAILED";
    osb_apierr_reply(req, code, "%s: %s", what, err->msg);
}

static bool loopback(const struct osb_http_req *req)
{
    const char *p = osb_http_req_peer(req);
    return p && (strncmp(p, "127.", 4) == 0 || strcmp(p, "::1") == 0 ||
                 strncmp(p, "::ffff:127.", 11) == 0 || strcmp(p, "unix") == 0);
}

static json_t *body_json(struct osb_http_req *req)
{
    size_t len;
    const char *b = osb_http_req_body(req, &len);
    json_t *j = NULL;
    struct osb_err err = {0};
    if (osb_json_parse(b, len, true, &j, &err) < 0 || !json_is_object(j)) {
        osb_apierr_reply(req, "EGRESS::VAULT_INVALID", "request body: %s",
                         j            ? "must be a JSON object"
                         : err.msg[0] ? err.msg
                                      : "empty");
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Stores v (taken) for s and answers its state with status. */
static void commit(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                   struct osb_vault *v, int status)
{
    struct osb_err err = {0};
    if (osb_srvvault_put(srv, s, v, &err) < 0) {
        fail(req, &err, "store the credential vault");
    } else {
        struct osb_apierr e;
        if (osb_sbx_save(srv, s, "CredentialVault",
                         v ? "The credential vault changed." : "The credential vault was deleted.",
                         &e) < 0)
            osb_err_log("sandbox %s: save its record: %s", s->id, e.msg);
        if (v)
            osb_http_respond_json(req, status, osb_vault_state_json(v));
        else
            osb_http_respond(req, 204, NULL, NULL, 0);
    }
    if (v)
        osb_vault_unref(v);
}

static void write_vault(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                        struct osb_vault *cur, bool patch)
{
    json_t *j = body_json(req);
    if (!j)
        return;
    struct osb_vault *v = NULL;
    struct osb_err err = {0};
    const struct osb_policy *pol = osb_network_policy(srv, s);
    int r = patch ? osb_vault_patch(cur, j, pol, &v, &err) : osb_vault_create(j, pol, &v, &err);
    json_decref(j);
    if (r < 0)
        fail(req, &err, patch ? "PATCH /credential-vault" : "POST /credential-vault");
    else
        commit(srv, s, req, v, patch ? 200 : 201);
}

/* GET of the lists and single items: sub is "credentials[/name]" or
 * "bindings[/name]". */
static void read_part(struct osb_http_req *req, const struct osb_vault *v, const char *sub)
{
    bool creds = strncmp(sub, "credentials", 11) == 0;
    const char *name = sub + (creds ? 11 : 8);
    json_t *out;
    if (!*name)
        out = creds ? osb_vault_credentials_json(v) : osb_vault_bindings_json(v);
    else
        out = creds ? osb_vault_credential_json(v, name + 1) : osb_vault_binding_json(v, name + 1);
    if (!out)
        osb_apierr_reply(req, "EGRESS::VAULT_NOT_FOUND", "no %s named '%s'",
                         creds ? "credential" : "binding", name + 1);
    else
        osb_http_respond_json(req, 200, out);
}

static bool part_path(const char *sub)
{
    const char *n = NULL;
    if (strncmp(sub, "credentials", 11) == 0)
        n = sub + 11;
    else if (strncmp(sub, "bindings", 8) == 0)
        n = sub + 8;
    return n && (!*n || (n[0] == '/' && n[1] && !strchr(n + 1, '/')));
}

static void dispatch(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                     const char *sub, struct osb_vault *cur, bool broken)
{
    const char *m = osb_http_req_method(req);
    bool get = strcmp(m, "GET") == 0;
    if (*sub && !get) {
        osb_apierr_reply(req, "EGRESS::METHOD_NOT_ALLOWED", "only GET on /credential-vault/%s",
                         sub);
    } else if (!get && strcmp(m, "POST") && strcmp(m, "PATCH") && strcmp(m, "DELETE")) {
        osb_apierr_reply(req, "EGRESS::METHOD_NOT_ALLOWED", "method not allowed on /" BASE);
    } else if (broken && strcmp(m, "DELETE") != 0) {
        osb_apierr_reply(req, "EGRESS::VAULT_UNREADABLE",
                         "the stored credential vault cannot be read (its bound hosts are "
                         "refused); DELETE it and create it again");
    } else if (!get && !loopback(req)) {
        osb_apierr_reply(req, "EGRESS::VAULT_INSECURE_TRANSPORT",
                         "credential vault writes require TLS or loopback transport");
    } else if (strcmp(m, "POST") == 0) {
        if (cur)
            osb_apierr_reply(req, "EGRESS::VAULT_CONFLICT",
                             "the credential vault already exists (revision %lld): PATCH it",
                             (long long)osb_vault_revision(cur));
        else
            write_vault(srv, s, req, NULL, false);
    } else if (!cur && !broken) {
        osb_apierr_reply(req, "EGRESS::VAULT_NOT_FOUND", "no credential vault: POST one first");
    } else if (strcmp(m, "PATCH") == 0) {
        write_vault(srv, s, req, cur, true);
    } else if (strcmp(m, "DELETE") == 0) {
        commit(srv, s, req, NULL, 204);
    } else if (!*sub) {
        osb_http_respond_json(req, 200, osb_vault_state_json(cur));
    } else {
        read_part(req, cur, sub);
    }
}

void osb_api_vault(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                   const char *rest)
{
    const char *sub = rest + strlen(BASE);
    if (*sub == '/')
        sub++;
    else if (*sub) {
        osb_apierr_reply(req, "EGRESS::NOT_FOUND", "no such egress API path");
        return;
    }
    if (*sub && !part_path(sub)) {
        osb_apierr_reply(req, "EGRESS::NOT_FOUND", "no such credential vault path");
        return;
    }
    if (!osb_srvvault_wanted(s) || !osb_srvvault_reg(srv)) {
        osb_apierr_reply(req, "EGRESS::VAULT_NOT_ENABLED",
                         "the credential proxy is not enabled for this sandbox (create it with "
                         "credentialProxy.enabled and a networkPolicy)");
        return;
    }
    bool broken;
    struct osb_vault *cur = osb_srvvault_get(srv, s->id, &broken);
    dispatch(srv, s, req, sub, cur, broken);
    if (cur)
        osb_vault_unref(cur);
}
