/* POST /sandboxes/batch (ours, docs/server.md "Batch create"):
 * {"count": N, "template": <create request>} or {"count": N, "poolRef":
 * name}; N creates through the same pipeline as POST /sandboxes (so they
 * queue for admission like any other), answered together, in request
 * order, once the last is over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "server/create.h"
#include "server/server.h"

#define BAD "SANDBOX::INVALID_PARAMETER"
#define BATCH_MAX 1000

struct batch;

struct item {
    struct batch *b;
    struct osb_create_job *job; /* NULL once over */
    json_t *answer;
    bool ok;
};

struct batch {
    struct osb_http_req *req;
    size_t n, pending; /* items not over */
    bool starting;     /* inside the loop that starts them: answer after it */
    struct item *items;
};

static void batch_free(struct batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        json_decref(b->items[i].answer);
    free(b->items);
    free(b);
}

static void answer(struct batch *b)
{
    json_t *items = json_array();
    size_t ok = 0;
    for (size_t i = 0; i < b->n; i++) {
        ok += b->items[i].ok;
        json_array_append_new(items, b->items[i].answer);
        b->items[i].answer = NULL;
    }
    osb_http_req_on_close(b->req, NULL, NULL);
    osb_http_respond_json(b->req, 200,
                          json_pack("{s:o,s:I,s:I}", "items", items, "succeeded", (json_int_t)ok,
                                    "failed", (json_int_t)(b->n - ok)));
    batch_free(b);
}

/* The item's answer; the batch is answered by the caller. */
static void item_set(struct item *it, struct osb_sbx *s, const struct osb_apierr *e)
{
    it->job = NULL;
    it->ok = s != NULL;
    it->answer = s ? osb_api_sandbox_json(s, false)
                   : json_pack("{s:{s:s,s:s}}", "error", "code", e->code, "message", e->msg);
    it->b->pending--;
}

static void item_done(void *ud, struct osb_sbx *s, const struct osb_apierr *e)
{
    struct item *it = ud;
    item_set(it, s, e);
    if (it->b->pending == 0 && !it->b->starting)
        answer(it->b);
}

/* The client left: creates still queued leave nothing, those under way
 * finish and stay, as a single create's do. */
static void on_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct batch *b = ud;
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].job)
            osb_create_detach(b->items[i].job);
    osb_info("batch create: client gone with %zu of %zu creates not over", b->pending, b->n);
    batch_free(b);
}

/* count and the template (new ref); -1 after answering 400. */
static int parse_batch(struct osb_http_req *req, json_t *body, size_t *count, json_t **tpl)
{
    if (!json_is_object(body)) {
        osb_apierr_reply(req, BAD, "request body must be a JSON object {\"count\", \"template\"}");
        return -1;
    }
    json_t *c = json_object_get(body, "count");
    if (!json_is_integer(c) || json_integer_value(c) < 1 || json_integer_value(c) > BATCH_MAX) {
        osb_apierr_reply(req, BAD, "field 'count' is required: an integer in 1..%d", BATCH_MAX);
        return -1;
    }
    *count = (size_t)json_integer_value(c);
    json_t *t = json_object_get(body, "template"), *pool = json_object_get(body, "poolRef");
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "count") && strcmp(k, "template") && strcmp(k, "poolRef")) {
            osb_apierr_reply(req, BAD, "field '%s' is not known (count, template, poolRef)", k);
            return -1;
        }
    }
    if (!t == !pool) {
        osb_apierr_reply(req, BAD,
                         "exactly one of the fields 'template' and 'poolRef' is required");
        return -1;
    }
    if (pool && (!json_is_string(pool) || !*json_string_value(pool))) {
        osb_apierr_reply(req, BAD, "field 'poolRef' must be a pool name");
        return -1;
    }
    *tpl = t ? json_incref(t) : json_pack("{s:{s:O}}", "extensions", "poolRef", pool);
    return 0;
}

void osb_api_batch_create(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    json_t *body = osb_api_body(req, false);
    size_t n;
    json_t *tpl;
    if (!body)
        return;
    if (osb_http_req_header(req, "Idempotency-Key")) {
        json_decref(body);
        osb_apierr_reply(req, BAD,
                         "header 'Idempotency-Key' is not taken by the batch route; send each "
                         "create on its own to make it idempotent");
        return;
    }
    int rc = parse_batch(req, body, &n, &tpl);
    json_decref(body);
    if (rc < 0)
        return;
    /* One parse decides for all: a bad template is one 400, nothing made. */
    struct osb_create_spec spec;
    struct osb_apierr e;
    if (osb_spec_parse_create(tpl, &srv->limits, &spec, &e) < 0) {
        json_decref(tpl);
        char msg[sizeof e.msg];
        snprintf(msg, sizeof msg, "template: %s", e.msg);
        memcpy(e.msg, msg, sizeof msg);
        osb_apierr_respond(req, &e);
        return;
    }
    struct batch *b = osb_xcalloc(1, sizeof *b);
    b->req = req;
    b->n = n;
    b->pending = n;
    b->starting = true;
    b->items = osb_xcalloc(n, sizeof *b->items);
    osb_info("batch create: %zu sandboxes", n);
    for (size_t i = 0; i < n; i++) {
        struct item *it = &b->items[i];
        it->b = b;
        /* Each job takes its spec: the first is the one parsed above, the
         * others parse the same JSON, which gives the same spec. */
        if (i > 0 && osb_spec_parse_create(tpl, &srv->limits, &spec, &e) < 0) {
            item_set(it, NULL, &e);
            continue;
        }
        it->job = osb_create_start(srv, &spec, item_done, it);
    }
    json_decref(tpl);
    b->starting = false;
    if (b->pending == 0)
        answer(b);
    else
        osb_http_req_on_close(req, on_gone, b);
}
