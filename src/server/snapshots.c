#include "server/snapshots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ctl.h"
#include "common/json.h"
#include "common/log.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "server/metrics.h"
#include "common/xalloc.h"
#include "image/layer.h"
#include "image/store.h"
#include "server/timefmt.h"


enum snap_state { SNAP_CREATING, SNAP_READY, SNAP_FAILED };
static const char *const state_names[] = {"Creating", "Ready", "Failed"};

struct snap {
    struct snap *next;
    struct osb_server *srv;
    char id[37];
    char sandbox_id[64];
    char *name; /* NULL when none was given */
    enum snap_state state;
    char *reason, *message;
    int64_t created_us, transition_us;
    char layer[4096]; /* the copied writable layer's dir */
    char base[256];   /* the image the sandbox ran */
};

/* The server's snapshots (srv->snaps), newest first: the list order is
 * the API's order (createdAt desc). */
struct osb_snaps {
    struct snap *head;
};

static void snap_free(struct snap *sn)
{
    free(sn->name);
    free(sn->reason);
    free(sn->message);
    free(sn);
}

static struct snap *find(struct osb_server *srv, const char *id)
{
    for (struct snap *sn = srv->snaps->head; sn; sn = sn->next)
        if (strcmp(sn->id, id) == 0)
            return sn;
    return NULL;
}

static void unlink_snap(struct snap *sn)
{
    for (struct snap **p = &sn->srv->snaps->head; *p; p = &(*p)->next)
        if (*p == sn) {
            *p = sn->next;
            return;
        }
}

static void set_state(struct snap *sn, enum snap_state st, const char *reason, const char *msg)
{
    sn->state = st;
    free(sn->reason);
    free(sn->message);
    sn->reason = reason ? osb_xstrdup(reason) : NULL;
    sn->message = msg ? osb_xstrdup(msg) : NULL;
    sn->transition_us = osb_now_us();
}

/* ------------------------------------------------------------ records */

static json_t *record(const struct snap *sn)
{
    json_t *r = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s,s:s}", "id", sn->id, "sandboxId",
                          sn->sandbox_id, "state", state_names[sn->state], "createdUs",
                          (json_int_t)sn->created_us, "transitionUs", (json_int_t)sn->transition_us,
                          "layer", sn->layer, "base", sn->base);
    if (sn->name)
        json_object_set_new(r, "name", json_string(sn->name));
    if (sn->reason)
        json_object_set_new(r, "reason", json_string(sn->reason));
    if (sn->message)
        json_object_set_new(r, "message", json_string(sn->message));
    return r;
}

static int save(struct snap *sn, struct osb_err *err)
{
    json_t *r = record(sn);
    int rc = osb_store_snap_put(sn->srv->store, sn->id, r, err);
    json_decref(r);
    if (rc < 0)
        osb_err_log("store snapshot %s: %s", sn->id, err->msg);
    return rc;
}

/* Fields of a stored record (written by this module): "" / NULL / 0 when
 * absent or of another type, which only an edited store could produce. */
static const char *jstr(json_t *o, const char *k)
{
    const char *s;
    struct osb_err err;
    return osb_json_str(o, k, false, &s, &err) > 0 ? s : "";
}

static char *jdup(json_t *o, const char *k)
{
    const char *s;
    struct osb_err err;
    return osb_json_str(o, k, false, &s, &err) > 0 ? osb_xstrdup(s) : NULL;
}

static int64_t jint(json_t *o, const char *k)
{
    int64_t v;
    struct osb_err err;
    return osb_json_int(o, k, false, &v, &err) > 0 ? v : 0;
}

static void load_one(void *ud, json_t *r)
{
    struct osb_server *srv = ud;
    struct snap *sn = osb_xcalloc(1, sizeof *sn);
    sn->srv = srv;
    snprintf(sn->id, sizeof sn->id, "%s", jstr(r, "id"));
    snprintf(sn->sandbox_id, sizeof sn->sandbox_id, "%s", jstr(r, "sandboxId"));
    snprintf(sn->layer, sizeof sn->layer, "%s", jstr(r, "layer"));
    snprintf(sn->base, sizeof sn->base, "%s", jstr(r, "base"));
    sn->name = jdup(r, "name");
    sn->reason = jdup(r, "reason");
    sn->message = jdup(r, "message");
    sn->created_us = jint(r, "createdUs");
    sn->transition_us = jint(r, "transitionUs");
    sn->state = SNAP_FAILED;
    for (int i = 0; i < 3; i++)
        if (strcmp(jstr(r, "state"), state_names[i]) == 0)
            sn->state = (enum snap_state)i;
    if (sn->state == SNAP_CREATING) {
        /* The server stopped during the copy: what was copied is useless. */
        osb_istore_discard_layer(srv->images, sn->layer);
        set_state(sn, SNAP_FAILED, "snapshot_recovery_failed",
                  "The server restarted while the snapshot was being taken.");
        struct osb_err err = {0};
        save(sn, &err);
    }
    /* Insert sorted by creation, newest first. */
    struct snap **p = &srv->snaps->head;
    while (*p && (*p)->created_us > sn->created_us)
        p = &(*p)->next;
    sn->next = *p;
    *p = sn;
}

int osb_snaps_open(struct osb_server *srv, struct osb_err *err)
{
    srv->snaps = osb_xcalloc(1, sizeof *srv->snaps);
    return osb_store_snap_load(srv->store, load_one, srv, err);
}

void osb_snaps_close(struct osb_server *srv)
{
    if (!srv->snaps)
        return;
    /* The runtime's callbacks never run after it is closed. */
    while (srv->snaps->head) {
        struct snap *sn = srv->snaps->head;
        srv->snaps->head = sn->next;
        snap_free(sn);
    }
    free(srv->snaps);
    srv->snaps = NULL;
}

int osb_snaps_image_for(struct osb_server *srv, const char *id, char *image, size_t n,
                        struct osb_apierr *e)
{
    struct snap *sn = find(srv, id);
    if (!sn)
        return osb_apierr(e, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found.", id);
    if (sn->state != SNAP_READY)
        return osb_apierr(e, "SNAPSHOT::NOT_READY", "Snapshot %s is %s, not Ready.", id,
                          state_names[sn->state]);
    snprintf(image, n, OSB_SNAP_IMAGE_PREFIX "%s", id);
    return 0;
}

/* ------------------------------------------------------------ JSON */

static json_t *snap_json(const struct snap *sn)
{
    char created[OSB_TIMEFMT_LEN], trans[OSB_TIMEFMT_LEN];
    osb_timefmt_us(sn->created_us, created);
    osb_timefmt_us(sn->transition_us, trans);
    json_t *st = json_pack("{s:s}", "state", state_names[sn->state]);
    if (sn->reason)
        json_object_set_new(st, "reason", json_string(sn->reason));
    if (sn->message)
        json_object_set_new(st, "message", json_string(sn->message));
    json_object_set_new(st, "lastTransitionAt", json_string(trans));
    json_t *j = json_pack("{s:s,s:s}", "id", sn->id, "sandboxId", sn->sandbox_id);
    if (sn->name)
        json_object_set_new(j, "name", json_string(sn->name));
    json_object_set_new(j, "status", st);
    json_object_set_new(j, "createdAt", json_string(created));
    return j;
}

/* ------------------------------------------------------------ create */

/* The stored name of the image a sandbox runs: what its snapshot stacks on. */
static int base_of(struct osb_server *srv, const struct osb_sbx *s, char *out, size_t n,
                   struct osb_err *err)
{
    if (s->image[0]) { /* resolved at its create */
        snprintf(out, n, "%s", s->image);
        return 0;
    }
    const char *snap = jstr(s->spec, "snapshotId");
    if (*snap) {
        snprintf(out, n, OSB_SNAP_IMAGE_PREFIX "%s", snap);
        return 0;
    }
    json_t *image = NULL;
    struct osb_err jerr;
    const char *uri = "";
    if (osb_json_obj(s->spec, "image", false, &image, &jerr) > 0)
        uri = jstr(image, "uri");
    if (!*uri || strcmp(uri, "host") == 0) {
        snprintf(out, n, "host");
        return 0;
    }
    struct osb_image im;
    if (osb_istore_get(srv->images, uri, &im, err) < 0)
        return -1;
    snprintf(out, n, "%s", im.name);
    osb_image_free(&im);
    return 0;
}

/* The snapshot as an image: its layer on its base, with the base's
 * Env, WorkingDir and User (a restore runs `tail -f /dev/null`). */
static int add_image(struct snap *sn, struct osb_err *err)
{
    struct osb_istore *store = sn->srv->images;
    struct osb_image base = {0}, im = {0};
    bool have_base = strcmp(sn->base, "host") != 0;
    if (have_base && osb_istore_get(store, sn->base, &base, err) < 0)
        return -1;
    char *layers[] = {sn->layer, NULL};
    snprintf(im.name, sizeof im.name, OSB_SNAP_IMAGE_PREFIX "%s", sn->id);
    snprintf(im.base, sizeof im.base, "%s", sn->base);
    im.layers = layers;
    im.env = base.env;
    im.workdir = base.workdir;
    im.user = base.user;
    im.created_ms = osb_now_ms();
    unsigned long long bytes = 0;
    if (osb_layer_size(sn->layer, &bytes, NULL) < 0)
        bytes = 0; /* unknown: the image is listed with size 0 */
    im.size_bytes = bytes;
    int rc = osb_istore_add(store, &im, err);
    if (rc == 0)
        osb_metrics_snapshot_size(sn->srv->metrics, bytes);
    if (have_base)
        osb_image_free(&base);
    return rc;
}

static void on_snapshot(void *ud, const struct osb_err *rterr)
{
    struct snap *sn = ud;
    struct osb_server *srv = sn->srv;
    struct osb_sbx *s = osb_reg_get(srv->reg, sn->sandbox_id);
    if (s)
        s->snapshotting--;
    struct osb_err err = {0};
    if (rterr)
        err = *rterr;
    if (!rterr && add_image(sn, &err) == 0) {
        set_state(sn, SNAP_READY, "snapshot_ready", "Snapshot is ready.");
        osb_info("snapshot %s of sandbox %s ready", sn->id, sn->sandbox_id);
        osb_metrics_job(srv->metrics, OSB_M_SNAPSHOT, "ok");
    } else {
        osb_metrics_job(srv->metrics, OSB_M_SNAPSHOT, "error");
        osb_warn("snapshot %s of sandbox %s failed: %s", sn->id, sn->sandbox_id, err.msg);
        osb_istore_discard_layer(srv->images, sn->layer);
        char msg[600];
        snprintf(msg, sizeof msg, "Snapshot failed: %s", err.msg);
        set_state(sn, SNAP_FAILED, "snapshot_runtime_failed", msg);
    }
    save(sn, &err);
}

/* The optional CreateSnapshotRequest {"name"}; -1 after answering 400. */
static int create_body(struct osb_http_req *req, char **name)
{
    *name = NULL;
    json_t *body = osb_api_body(req, true);
    if (!body)
        return -1;
    const char *problem = NULL, *n = NULL;
    struct osb_err err = {0};
    int r = 0;
    if (!json_is_object(body))
        problem = "the body must be a JSON object {\"name\": ...}";
    else if ((r = osb_json_name(body, "name", false, &n, &err)) < 0)
        problem = err.msg; /* not a string, or a control byte in it */
    else if (r > 0 && (!*n || strlen(n) > 253))
        problem = "field 'name' must be a non-empty string of at most 253 characters";
    else if (r > 0)
        *name = osb_xstrdup(n);
    json_decref(body);
    if (problem)
        osb_apierr_reply(req, "SNAPSHOT::INVALID_PARAMETER", "%s", problem);
    return problem ? -1 : 0;
}

/* The copy is the image store's (the runtime only freezes and hands over
 * the writable layer). */
static int snapshot(struct osb_server *srv, struct osb_sbx *s, struct snap *sn, struct osb_err *err)
{
    struct osb_rt *rt = osb_backend_get(srv, s->runtime, err->msg, sizeof err->msg);
    if (!rt)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "%s", err->msg);
    return osb_rt_snapshot(rt, s->id, &s->handle, sn->layer, osb_layer_copy_tree, on_snapshot, sn,
                           err);
}

static void h_create(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    char *name;
    if (!s || create_body(req, &name) < 0)
        return;
    if (s->state != OSB_ST_RUNNING || s->op || !s->has_handle) {
        free(name);
        osb_apierr_reply(req, "SNAPSHOT::INVALID_SOURCE_STATE",
                         "Sandbox %s is %s; only a Running sandbox can be snapshotted.", s->id,
                         osb_state_name(s->state));
        return;
    }
    struct snap *sn = osb_xcalloc(1, sizeof *sn);
    sn->srv = srv;
    osb_random_uuid4(sn->id);
    snprintf(sn->sandbox_id, sizeof sn->sandbox_id, "%s", s->id);
    sn->name = name;
    sn->created_us = osb_now_us();
    set_state(sn, SNAP_CREATING, "snapshot_accepted", "Snapshot creation accepted.");
    osb_istore_new_layer(srv->images, "snap", sn->layer, sizeof sn->layer);
    struct osb_err err = {0};
    if (base_of(srv, s, sn->base, sizeof sn->base, &err) < 0 || save(sn, &err) < 0 ||
        snapshot(srv, s, sn, &err) < 0) {
        struct osb_err derr = {0};
        if (osb_store_snap_delete(srv->store, sn->id, &derr) < 0)
            osb_err_log("forget snapshot %s: %s", sn->id, derr.msg);
        osb_istore_discard_layer(srv->images, sn->layer);
        osb_apierr_reply(req,
                         err.code == OSB_E_EXISTS ? "SNAPSHOT::INVALID_SOURCE_STATE"
                                                  : "SNAPSHOT::CREATE_FAILED",
                         "Snapshot of sandbox %s failed: %s", s->id, err.msg);
        snap_free(sn);
        return;
    }
    s->snapshotting++;
    sn->next = srv->snaps->head;
    srv->snaps->head = sn;
    char loc[80];
    snprintf(loc, sizeof loc, "/v1/snapshots/%s", sn->id);
    osb_http_add_header(req, "Location", loc);
    osb_http_respond_json(req, 202, snap_json(sn));
}

/* ------------------------------------------------------------ get, list, delete */

static struct snap *find_or_404(struct osb_server *srv, struct osb_http_req *req)
{
    const char *id = osb_http_req_param(req, "id");
    struct snap *sn = id ? find(srv, id) : NULL;
    if (!sn)
        osb_apierr_reply(req, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found.", id ? id : "");
    return sn;
}

static void h_get(struct osb_http_req *req, void *ud)
{
    struct snap *sn = find_or_404(ud, req);
    if (sn)
        osb_http_respond_json(req, 200, snap_json(sn));
}

/* state= values (repeatable, comma-separated, case-insensitive) as a mask;
 * *given false when there is no filter. */
static unsigned state_mask(struct osb_http_req *req, bool *given)
{
    const char *const *vals;
    size_t n = osb_http_req_query_all(req, "state", &vals);
    unsigned mask = 0;
    *given = false;
    for (size_t i = 0; i < n; i++) {
        char *dup = osb_xstrdup(vals[i]), *save = NULL;
        for (char *t = strtok_r(dup, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            *given = true;
            for (int k = 0; k < 3; k++)
                if (strcasecmp(t, state_names[k]) == 0)
                    mask |= 1u << k;
        }
        free(dup);
    }
    return mask;
}

static void h_list(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    long page, size;
    if (osb_api_page(req, &page, &size) < 0)
        return;
    const char *sandbox = osb_http_req_query(req, "sandboxId");
    bool by_state;
    unsigned mask = state_mask(req, &by_state);
    json_t *items = json_array();
    size_t total = 0, first = (size_t)(page - 1) * (size_t)size;
    for (struct snap *sn = srv->snaps->head; sn; sn = sn->next) {
        if ((by_state && !(mask & (1u << sn->state))) ||
            (sandbox && *sandbox && strcmp(sandbox, sn->sandbox_id) != 0))
            continue;
        if (total >= first && total < first + (size_t)size)
            json_array_append_new(items, snap_json(sn));
        total++;
    }
    osb_http_respond_json(req, 200,
                          json_pack("{s:o,s:o}", "items", items, "pagination",
                                    osb_api_pagination(page, size, total)));
}

static void h_delete(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct snap *sn = find_or_404(srv, req);
    if (!sn)
        return;
    if (sn->state == SNAP_CREATING) {
        osb_apierr_reply(req, "SNAPSHOT::INVALID_STATE", "Snapshot %s is still being created.",
                         sn->id);
        return;
    }
    char name[256], by[80];
    snprintf(name, sizeof name, OSB_SNAP_IMAGE_PREFIX "%s", sn->id);
    struct osb_err err = {0};
    if (sn->state == SNAP_READY) {
        if (osb_images_used_by(srv->reg, name, by, sizeof by)) {
            osb_apierr_reply(req, "SNAPSHOT::IN_USE", "Snapshot %s is in use by sandbox %s.",
                             sn->id, by);
            return;
        }
        if (osb_istore_remove(srv->images, name, osb_images_in_use_cb, srv->reg, &err) < 0 &&
            err.code != OSB_E_NOTFOUND) {
            bool busy = err.code == OSB_E_EXISTS;
            osb_apierr_reply(req, busy ? "SNAPSHOT::IN_USE" : "SNAPSHOT::DELETE_FAILED",
                             "Snapshot %s: %s", sn->id, err.msg);
            return;
        }
        osb_istore_discard_layer(srv->images, sn->layer);
    }
    if (osb_store_snap_delete(srv->store, sn->id, &err) < 0) {
        osb_apierr_reply(req, "SNAPSHOT::DELETE_FAILED", "Snapshot %s: %s", sn->id, err.msg);
        return;
    }
    unlink_snap(sn);
    snap_free(sn);
    osb_http_respond_empty(req, 204);
}

const struct osb_http_route osb_api_snapshot_routes[] = {
    {"POST", "/sandboxes/:id/snapshots", h_create, 0, NULL},
    {"GET", "/snapshots", h_list, 0, NULL},
    {"GET", "/snapshots/:id", h_get, 0, NULL},
    {"DELETE", "/snapshots/:id", h_delete, 0, NULL},
};
const size_t osb_api_snapshot_nroutes =
    sizeof osb_api_snapshot_routes / sizeof osb_api_snapshot_routes[0];
