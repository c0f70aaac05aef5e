/* Drives every lifecycle call of libopensandbox against a real server
 * (test_clientlib_lifecycle.py builds and runs it): TAP lines on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <osb/opensandbox.h>
static int fails;
#define CHK(rc, what) \
    do { \
        int _r = (rc); \
        if (_r) { \
            fails++; \
            printf("not ok - %s: %d %s [%s]\n", what, _r, e.message, e.server_code); \
        } else \
            printf("ok - %s\n", what); \
    } while (0)
#define EXPECT(rc, code, what) \
    do { \
        int _r = (rc); \
        if (_r != (code)) { \
            fails++; \
            printf("not ok - %s: got %d %s\n", what, _r, e.message); \
        } else \
            printf("ok - %s (%s)\n", what, e.message); \
    } while (0)
static int n_docs;
static int cb(void *ud, const char *j)
{
    (void)ud;
    if (n_docs == 0)
        printf("# watch doc: %.120s\n", j);
    return ++n_docs >= 2;
}
static int fake_main(osbc_client *c);
int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct osbc_config cfg;
    osbc_config_from_env(&cfg);
    osbc_client *c;
    struct osbc_error e = {0};
    if (osbc_client_new(&cfg, &c, &e)) {
        printf("new: %s\n", e.message);
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "fake"))
        return fake_main(c);
    struct osbc_kv md[] = {{"team", "lc"}, {"run", "x1"}};
    struct osbc_create_opts o = {
        .image = "host", .metadata = md, .n_metadata = 2, .idempotency_key = "lc-key-1"};
    char *json = NULL, *id = NULL, *id2 = NULL;
    CHK(osbc_sandbox_create(c, &o, &json, &id, &e), "create (waits for ping)");
    printf("# %s\n", json);
    free(json);
    CHK(osbc_sandbox_create(c, &o, NULL, &id2, &e), "create again with the same idempotency key");
    if (id && id2 && strcmp(id, id2)) {
        fails++;
        printf("not ok - idempotent: %s vs %s\n", id, id2);
    } else
        printf("ok - same id\n");
    free(id2);
    struct osbc_create_opts bad = {.image = "host", .network_policy_json = "{nope"};
    EXPECT(osbc_sandbox_create(c, &bad, NULL, NULL, &e), OSBC_E_ARG, "bad network policy refused");
    const char *st[] = {"running", "Paused"};
    struct osbc_list_opts lo = {
        .states = st, .n_states = 2, .metadata = md, .n_metadata = 2, .page = 1, .page_size = 5};
    CHK(osbc_sandbox_list(c, &lo, &json, &e), "list by state+metadata");
    if (json && id && !strstr(json, id)) {
        fails++;
        printf("not ok - list lacks id: %s\n", json);
    }
    free(json);
    struct osbc_kv md2[] = {{"team", "other"}};
    lo.metadata = md2;
    lo.n_metadata = 1;
    CHK(osbc_sandbox_list(c, &lo, &json, &e), "list by other metadata");
    if (json && id && strstr(json, id)) {
        fails++;
        printf("not ok - filter ignored\n");
    }
    free(json);
    CHK(osbc_sandbox_get(c, id, &json, &e), "get");
    free(json);
    CHK(osbc_sandbox_ping(c, id, &e), "ping");
    CHK(osbc_sandbox_metrics(c, id, &json, &e), "metrics");
    printf("# %s\n", json);
    free(json);
    EXPECT(osbc_sandbox_metrics_watch(c, id, cb, NULL, &e), OSBC_E_CANCELLED,
           "metrics watch, 2 docs then stop");
    CHK(osbc_sandbox_renew(c, id, 3600, &json, &e), "renew");
    printf("# %s\n", json);
    free(json);
    CHK(osbc_sandbox_patch_metadata(c, id, "{\"run\":null,\"k\":\"v\"}", &json, &e),
        "patch metadata");
    printf("# %.200s\n", json);
    free(json);
    CHK(osbc_sandbox_endpoint(c, id, 44772, -1, &json, &e), "endpoint");
    printf("# %s\n", json);
    free(json);
    CHK(osbc_sandbox_endpoint(c, id, 8080, 1, &json, &e), "endpoint via proxy");
    printf("# %s\n", json);
    free(json);
    CHK(osbc_diagnostics(c, id, "events", NULL, &json, &e), "diagnostics events");
    printf("# %.100s\n", json);
    free(json);
    CHK(osbc_diagnostics(c, id, "logs", "container", &json, &e), "diagnostics logs scope");
    printf("# %.100s\n", json);
    free(json);
    char *eid = NULL;
    struct osbc_create_opts eo = {
        .image = "host", .network_policy_json = "{\"defaultAction\":\"allow\",\"egress\":[]}"};
    CHK(osbc_sandbox_create(c, &eo, NULL, &eid, &e), "create with a network policy");
    CHK(osbc_egress_get(c, eid, &json, &e), "egress get (policy sandbox)");
    printf("# %.200s\n", json);
    free(json);
    CHK(osbc_egress_patch(c, eid, "[{\"action\":\"deny\",\"target\":\"example.com\"}]", &json, &e),
        "egress patch (policy sandbox)");
    printf("# %.200s\n", json);
    free(json);
    CHK(osbc_egress_get(c, eid, &json, &e), "egress get after patch");
    if (json && !strstr(json, "example.com")) {
        fails++;
        printf("not ok - rule missing\n");
    }
    free(json);
    EXPECT(osbc_egress_patch(c, eid, "{}", &json, &e), OSBC_E_ARG,
           "egress patch non-array refused");
    if (eid)
        CHK(osbc_sandbox_delete(c, eid, &e), "delete policy sandbox");
    free(eid);
    EXPECT(osbc_egress_get(c, id, &json, &e), OSBC_E_HTTP,
           "egress get without policy: server error passed on");
    char *sid = NULL;
    CHK(osbc_snapshot_create(c, id, "snap-lc", &json, &sid, &e), "snapshot create");
    free(json);
    CHK(osbc_snapshot_wait_ready(c, sid, 120000, &json, &e), "snapshot ready");
    free(json);
    CHK(osbc_snapshot_list(c, id, 1, 10, &json, &e), "snapshot list");
    if (json && sid && !strstr(json, sid)) {
        fails++;
        printf("not ok - snapshot list lacks it\n");
    }
    free(json);
    CHK(osbc_snapshot_get(c, sid, &json, &e), "snapshot get");
    free(json);
    struct osbc_create_opts fs = {.snapshot_id = sid, .timeout_s = OSBC_TIMEOUT_NONE};
    char *id3 = NULL;
    CHK(osbc_sandbox_create(c, &fs, &json, &id3, &e), "create from snapshot, no timeout");
    printf("# %.300s\n", json);
    free(json);
    if (id3)
        CHK(osbc_sandbox_delete(c, id3, &e), "delete from-snapshot sandbox");
    CHK(osbc_snapshot_delete(c, sid, &e), "snapshot delete");
    CHK(osbc_sandbox_pause(c, id, &e), "pause");
    CHK(osbc_sandbox_resume(c, id, 0, &e), "resume + ready");
    CHK(osbc_sandbox_ping(c, id, &e), "ping after resume");
    CHK(osbc_pool_create(
            c,
            "{\"name\":\"lcpool\",\"template\":{\"image\":{\"uri\":\"host\"},\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"]},\"capacitySpec\":{\"bufferMax\":1,\"bufferMin\":0,\"poolMax\":2,\"poolMin\":0}}",
            &json, &e),
        "pool create");
    printf("# %.200s\n", json);
    free(json);
    CHK(osbc_pool_list(c, &json, &e), "pool list");
    free(json);
    CHK(osbc_pool_get(c, "lcpool", &json, &e), "pool get");
    free(json);
    CHK(osbc_pool_update(
            c, "lcpool",
            "{\"capacitySpec\":{\"bufferMax\":0,\"bufferMin\":0,\"poolMax\":1,\"poolMin\":0}}",
            &json, &e),
        "pool update");
    free(json);
    CHK(osbc_pool_delete(c, "lcpool", &e), "pool delete");
    EXPECT(osbc_pool_get(c, "no/such pool", &json, &e), OSBC_E_HTTP,
           "pool get missing (escaped name)");
    CHK(osbc_image_list(c, &json, &e), "image list");
    if (json && !strstr(json, "\"host\"")) {
        fails++;
        printf("not ok - no host image\n");
    }
    free(json);
    EXPECT(osbc_image_delete(c, "no/such:img", &e), OSBC_E_HTTP, "image delete missing");
    EXPECT(osbc_image_pull(c, "", NULL, NULL, &json, &e), OSBC_E_ARG, "image pull empty ref");
    CHK(osbc_batch_create(
            c,
            "{\"count\":2,\"template\":{\"image\":{\"uri\":\"host\"},\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"],\"timeout\":600,\"metadata\":{\"batch\":\"lc\"}}}",
            &json, &e),
        "batch create 2");
    printf("# batch: %.150s\n", json);
    free(json);
    EXPECT(osbc_batch_create(c, "[1]", &json, &e), OSBC_E_ARG, "batch non-object refused");
    EXPECT(osbc_image_pull(c, "127.0.0.1:1/nope:1", "u", "p", &json, &e), OSBC_E_HTTP,
           "image pull of an unreachable registry: server error");
    CHK(osbc_sandbox_delete(c, id, &e), "delete");
    EXPECT(osbc_sandbox_get(c, id, &json, &e), OSBC_E_HTTP, "get after delete");
    EXPECT(osbc_sandbox_wait_ready(c, id, 20000, NULL), OSBC_E_HTTP,
           "wait_ready on a deleted sandbox, err NULL, fails fast");
    EXPECT(osbc_sandbox_get(c, "", &json, &e), OSBC_E_ARG, "empty id");
    EXPECT(osbc_snapshot_get(c, NULL, &json, &e), OSBC_E_ARG, "NULL snapshot id");
    free(id);
    free(sid);
    free(id3);
    osbc_client_free(c);
    printf("# fails %d\n", fails);
    return fails != 0;
}

/* Against test_clientlib_lifecycle.py's fake server, whose sandbox never gets ready. */
static int fake_main(osbc_client *c)
{
    struct osbc_error e;
    struct osbc_create_opts o = {
        .image = "img", .idempotency_key = "k-1", .ready_timeout_ms = 1500};
    char *json = (char *)1, *id = (char *)1;
    int rc = osbc_sandbox_create(c, &o, &json, &id, &e);
    printf("# rc %d code %d: %s\n", rc, e.code, e.message);
    osbc_client_free(c);
    return !(rc == OSBC_E_TIMEOUT && json == NULL && id == NULL);
}
