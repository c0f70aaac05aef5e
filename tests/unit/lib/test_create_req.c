/* The create body: the SDKs' defaults and the checks made before sending. */
#include <stdlib.h>

#include "create_req.h"
#include "tap.h"

static char *body(const struct osbc_create_opts *o, int *rc, struct osbc_error *err)
{
    json_t *j;
    *rc = osbcl_create_body(o, &j, err);
    if (*rc)
        return NULL;
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

int main(void)
{
    struct osbc_error err;
    int rc;
    struct osbc_create_opts o = {.image = "python:3.12"};
    char *s = body(&o, &rc, &err);
    IS_STR(s,
           "{\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"],\"env\":{},\"extensions\":{},"
           "\"image\":{\"uri\":\"python:3.12\"},\"metadata\":{},\"resourceLimits\":"
           "{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"timeout\":600}",
           "the SDKs' defaults");
    free(s);

    o.timeout_s = OSBC_TIMEOUT_NONE;
    o.image_username = "u";
    o.image_password = "p";
    struct osbc_kv env[] = {{"A", "1"}};
    o.env = env;
    o.n_env = 1;
    s = body(&o, &rc, &err);
    OK(s && !strstr(s, "timeout"), "no expiry: no timeout field");
    OK(s && strstr(s, "\"auth\":{\"password\":\"p\",\"username\":\"u\"}"), "image auth");
    OK(s && strstr(s, "\"env\":{\"A\":\"1\"}"), "env");
    free(s);

    struct osbc_create_opts snap = {.snapshot_id = "s1", .timeout_s = 120};
    s = body(&snap, &rc, &err);
    OK(s && strstr(s, "\"snapshotId\":\"s1\"") && !strstr(s, "\"image\"") &&
           strstr(s, "\"timeout\":120"),
       "from a snapshot");
    free(s);

    struct osbc_create_opts both = {.image = "x", .snapshot_id = "s"};
    s = body(&both, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "an image and a snapshot: refused");
    struct osbc_create_opts none = {0};
    s = body(&none, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "neither: refused");

    struct osbc_create_opts np = {.image = "x", .network_policy_json = "{\"defaultAction\":"};
    s = body(&np, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "a network policy that is not JSON: refused");
    OK(strstr(err.message, "network policy is not JSON"), "says which document");
    np.network_policy_json = "[]";
    s = body(&np, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "a network policy that is not an object: refused");
    np.network_policy_json = "{\"defaultAction\":\"deny\"}";
    np.volumes_json = "{}";
    s = body(&np, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "volumes that are not an array: refused");
    np.volumes_json = "[{\"name\":\"v\"}]";
    s = body(&np, &rc, &err);
    OK(s && strstr(s, "\"networkPolicy\":{\"defaultAction\":\"deny\"}") &&
           strstr(s, "\"volumes\":[{\"name\":\"v\"}]"),
       "both documents carried");
    free(s);

    np.volumes_json = "[{\"name\":";
    s = body(&np, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "volumes that are not JSON: refused");
    OK(strstr(err.message, "the volumes is not JSON"), "says which document");

    const char *argv[] = {"python3", "-m", "http.server"};
    struct osbc_kv res[] = {{"cpu", "500m"}};
    struct osbc_create_opts ex = {.image = "x",
                                  .timeout_s = 3600,
                                  .entrypoint = argv,
                                  .n_entrypoint = 3,
                                  .resources = res,
                                  .n_resources = 1};
    s = body(&ex, &rc, &err);
    OK(s && strstr(s, "\"timeout\":3600") &&
           strstr(s, "\"entrypoint\":[\"python3\",\"-m\",\"http.server\"]") &&
           strstr(s, "\"resourceLimits\":{\"cpu\":\"500m\"}"),
       "explicit timeout, entrypoint and resources");
    free(s);
    ex.timeout_s = -5;
    s = body(&ex, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "a negative timeout other than NONE: refused");

    struct osbc_create_opts bad = {.image = "\xff\xfe"};
    s = body(&bad, &rc, &err);
    IS_INT(rc, OSBC_E_ARG, "a non-UTF-8 string: refused, not a crash");
    return tap_done();
}
