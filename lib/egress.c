/* A sandbox's egress policy and credential vault through its egress API
 * (the endpoint of port 18080; docs/network.md, docs/credential-vault.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int osbc_egress_get(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EGRESS_PORT, "GET", "/policy", NULL, json, err);
}

int osbc_egress_patch(osbc_client *c, const char *id, const char *rules_json, char **json,
                      struct osbc_error *err)
{
    if (json)
        *json = NULL;
    json_t *j = rules_json ? json_loads(rules_json, 0, NULL) : NULL;
    bool ok = json_is_array(j);
    json_decref(j);
    if (!ok)
        return osbcl_fail(err, OSBC_E_ARG,
                          "egress patch: the rules must be a JSON array of {action, target}");
    return osbcl_sbx(c, id, OSBCL_EGRESS_PORT, "PATCH", "/policy", rules_json, json, err);
}

/* ------------------------------------------------------------ the vault */

/* what: NULL/"" (the state), "credentials", "bindings", or either with
 * "/NAME"; a name is percent-encoded into the path. */
int osbc_vault_get(osbc_client *c, const char *id, const char *what, char **json,
                   struct osbc_error *err)
{
    char path[512];
    size_t o = (size_t)snprintf(path, sizeof path, "/credential-vault");
    if (what && *what) {
        const char *slash = strchr(what, '/');
        size_t kl = slash ? (size_t)(slash - what) : strlen(what);
        if (!((kl == 11 && !strncmp(what, "credentials", 11)) ||
              (kl == 8 && !strncmp(what, "bindings", 8))) ||
            (slash && !slash[1]))
            return osbcl_fail(err, OSBC_E_ARG,
                              "vault get: want credentials[/NAME] or bindings[/NAME]");
        o += (size_t)snprintf(path + o, sizeof path - o, "/%.*s", (int)kl, what);
        for (const unsigned char *p = slash ? (const unsigned char *)slash : NULL; p && *p; p++) {
            if (o + 4 >= sizeof path)
                return osbcl_fail(err, OSBC_E_ARG, "vault get: the name is too long");
            bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                         (*p >= '0' && *p <= '9') || strchr("-._~", *p) ||
                         p == (const unsigned char *)slash;
            o += plain ? (size_t)snprintf(path + o, sizeof path - o, "%c", *p)
                       : (size_t)snprintf(path + o, sizeof path - o, "%%%02X", *p);
        }
    }
    return osbcl_sbx(c, id, OSBCL_EGRESS_PORT, "GET", path, NULL, json, err);
}

static int vault_write(osbc_client *c, const char *id, const char *method, const char *body,
                       char **json, struct osbc_error *err)
{
    if (json)
        *json = NULL;
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    bool ok = json_is_object(j);
    json_decref(j);
    if (!ok)
        return osbcl_fail(err, OSBC_E_ARG, "vault %s: the body must be a JSON object",
                          method[0] == 'P' && method[1] == 'O' ? "create" : "patch");
    return osbcl_sbx(c, id, OSBCL_EGRESS_PORT, method, "/credential-vault", body, json, err);
}

int osbc_vault_create(osbc_client *c, const char *id, const char *body_json, char **json,
                      struct osbc_error *err)
{
    return vault_write(c, id, "POST", body_json, json, err);
}

int osbc_vault_patch(osbc_client *c, const char *id, const char *body_json, char **json,
                     struct osbc_error *err)
{
    return vault_write(c, id, "PATCH", body_json, json, err);
}

int osbc_vault_delete(osbc_client *c, const char *id, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EGRESS_PORT, "DELETE", "/credential-vault", NULL, NULL, err);
}
