/* A sandbox's egress policy through its egress API (the endpoint of port
 * 18080; docs/network.md "The egress API"). */
#include <stdlib.h>

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
