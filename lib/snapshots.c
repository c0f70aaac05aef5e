/* Snapshots (protocol.md 1.3; docs/images.md "Snapshots"). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static char *snap_path(const char *base, const char *id, const char *tail, struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, base);
    osbcl_sb_esc(&p, id);
    if (tail)
        osbcl_sb_adds(&p, tail);
    return osbcl_sb_done(&p, err);
}

int osbc_snapshot_create(osbc_client *c, const char *sandbox_id, const char *name, char **json,
                         char **snapshot_id, struct osbc_error *err)
{
    if (json)
        *json = NULL;
    if (snapshot_id)
        *snapshot_id = NULL;
    if (!sandbox_id || !*sandbox_id)
        return osbcl_fail(err, OSBC_E_ARG, "snapshot create: no sandbox id");
    json_t *b = name && *name ? json_pack("{s:s}", "name", name) : json_object();
    char *text = b ? osbcl_json_dump(b) : NULL;
    json_decref(b);
    char *p = text ? snap_path("/v1/sandboxes/", sandbox_id, "/snapshots", err) : NULL;
    if (!p) {
        free(text);
        return osbcl_fail(err, OSBC_E_ARG, "snapshot create: cannot encode the request");
    }
    char *body;
    int rc = osbcl_api(c, "POST", p, text, &body, err);
    free(p);
    free(text);
    if (rc < 0)
        return rc;
    json_t *j = osbcl_json_parse(body, strlen(body), "POST snapshots", err);
    const char *sid = json_string_value(json_object_get(j, "id"));
    if (!sid || !*sid)
        rc = j ? osbcl_fail(err, OSBC_E_PROTOCOL, "snapshot create: the answer has no id")
               : OSBC_E_PROTOCOL;
    else if (snapshot_id && !(*snapshot_id = strdup(sid)))
        rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    json_decref(j);
    if (rc == 0 && json)
        *json = body;
    else
        free(body);
    return rc;
}

int osbc_snapshot_list(osbc_client *c, const char *sandbox_id, int page, int page_size, char **json,
                       struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/v1/snapshots");
    char sep = '?';
    if (sandbox_id && *sandbox_id) {
        osbcl_sb_adds(&p, "?sandboxId=");
        osbcl_sb_esc(&p, sandbox_id);
        sep = '&';
    }
    if (page > 0)
        osbcl_sb_addf(&p, "%cpage=%d", sep, page), sep = '&';
    if (page_size > 0)
        osbcl_sb_addf(&p, "%cpageSize=%d", sep, page_size);
    char *path = osbcl_sb_done(&p, err);
    if (!path)
        return OSBC_E_NOMEM;
    int rc = osbcl_api(c, "GET", path, NULL, json, err);
    free(path);
    return rc;
}

static int snap_call(osbc_client *c, const char *method, const char *id, char **json,
                     struct osbc_error *err)
{
    if (json)
        *json = NULL;
    if (!id || !*id)
        return osbcl_fail(err, OSBC_E_ARG, "no snapshot id");
    char *p = snap_path("/v1/snapshots/", id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_api(c, method, p, NULL, json, err);
    free(p);
    return rc;
}

int osbc_snapshot_get(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return snap_call(c, "GET", id, json, err);
}

int osbc_snapshot_delete(osbc_client *c, const char *id, struct osbc_error *err)
{
    return snap_call(c, "DELETE", id, NULL, err);
}

int osbc_snapshot_wait_ready(osbc_client *c, const char *id, long timeout_ms, char **json,
                             struct osbc_error *err)
{
    if (json)
        *json = NULL;
    time_t end = time(NULL) + (timeout_ms > 0 ? (timeout_ms + 999) / 1000 : 300);
    int delay = 10;
    for (;;) {
        char *body;
        int rc = snap_call(c, "GET", id, &body, err);
        if (rc < 0)
            return rc;
        json_t *j = osbcl_json_parse(body, strlen(body), "GET snapshot", err);
        json_t *st = json_object_get(j, "status");
        char state_buf[64] = "", msg[300];
        const char *state = NULL;
        if (json_string_value(json_object_get(st, "state"))) { /* j is freed below */
            snprintf(state_buf, sizeof state_buf, "%s",
                     json_string_value(json_object_get(st, "state")));
            state = state_buf;
        }
        snprintf(msg, sizeof msg, "%s",
                 json_string_value(json_object_get(st, "message"))
                     ? json_string_value(json_object_get(st, "message"))
                     : "no message");
        json_decref(j);
        if (!j) {
            free(body);
            return OSBC_E_PROTOCOL;
        }
        if (state && !strcmp(state, "Ready")) {
            if (json)
                *json = body;
            else
                free(body);
            return 0;
        }
        free(body);
        if (!state || !strcmp(state, "Failed") || !strcmp(state, "Deleting"))
            return osbcl_fail(err, OSBC_E_REMOTE, "snapshot %s is %s: %s", id,
                              state ? state : "in no state", msg);
        if (time(NULL) >= end)
            return osbcl_fail(err, OSBC_E_TIMEOUT, "snapshot %s is still %s", id, state);
        poll(NULL, 0, delay);
        if (delay < 500)
            delay *= 2;
    }
}
