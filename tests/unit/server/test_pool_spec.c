/* Pool request bodies (src/server/pool_spec.c): capacitySpec, names, and
 * the two template shapes turned into a create request of ours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/pool_spec.h"
#include "tap.h"

static const struct osb_spec_limits lim = {.min_timeout_s = 60, .max_timeout_s = 3600};

static json_t *tmpl(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    if (!j)
        printf("# test JSON does not parse: %s\n", text);
    return j;
}

/* The template's create body as compact JSON with sorted keys (caller frees). */
static char *body_of(const char *text, struct osb_apierr *e)
{
    json_t *t = tmpl(text);
    json_t *b = osb_pool_template_body(t, &lim, e);
    json_decref(t);
    char *s = b ? json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(b);
    return s;
}

static void expect_body(const char *text, const char *want, const char *name)
{
    struct osb_apierr e = {0};
    char *got = body_of(text, &e);
    IS_STR(got ? got : e.msg, want, name);
    free(got);
}

static void expect_bad(const char *text, const char *word)
{
    struct osb_apierr e = {0};
    char *got = body_of(text, &e);
    char name[300];
    snprintf(name, sizeof name, "%.200s -> 400", text);
    OK(!got && e.status == 400, name);
    if (!strstr(e.msg, word))
        printf("# message: %s\n", e.msg);
    OK(strstr(e.msg, word) != NULL, "  message names the field");
    free(got);
}

static void test_ours(void)
{
    expect_body("{\"image\":{\"uri\":\"host\"}}",
                "{\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"],\"image\":{\"uri\":\"host\"}}",
                "ours without entrypoint: the keep-alive default");
    expect_body("{\"image\":{\"uri\":\"host\"},\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A\":"
                "\"b\"}}",
                "{\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A\":\"b\"},\"image\":{\"uri\":"
                "\"host\"}}",
                "ours: kept as given");
    expect_bad("{\"image\":{\"uri\":\"host\"},\"timeout\":60}", "template.timeout");
    expect_bad("{\"image\":{\"uri\":\"host\"},\"extensions\":{\"poolRef\":\"p\"}}",
               "template.extensions.poolRef");
    expect_bad("{\"image\":{\"uri\":\"host\"},\"entrypoint\":\"sh\"}", "template: ");
    expect_bad("{\"entrypoint\":[\"sh\"]}", "image.uri");
    expect_bad("[]", "template");
}

static void test_pod(void)
{
    expect_body("{\"metadata\":{\"labels\":{\"app\":\"x\"}},\"spec\":{\"containers\":[{\"name\":"
                "\"c\",\"image\":\"host\",\"command\":[\"sleep\"],\"args\":[\"9\"],\"env\":[{"
                "\"name\":\"A\",\"value\":\"b\"},{\"name\":\"E\"}],\"resources\":{\"limits\":{"
                "\"cpu\":\"500m\",\"memory\":\"1Gi\"}}}]}}",
                "{\"entrypoint\":[\"sleep\",\"9\"],\"env\":{\"A\":\"b\",\"E\":\"\"},\"image\":{"
                "\"uri\":\"host\"},\"metadata\":{\"app\":\"x\"},\"resourceLimits\":{\"cpu\":"
                "\"500m\",\"memory\":\"1Gi\"}}",
                "pod template: image, command+args, env, limits, labels");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\"}],\"volumes\":[]}}",
               "template.spec.volumes");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"ports\":[]}]}}",
               "template.spec.containers[0].ports");
    expect_bad("{\"spec\":{\"containers\":[]}}", "exactly one container");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"resources\":{\"requests\":{}}}]}}",
               "resources.requests");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"resources\":{\"limits\":{"
               "\"gpu\":\"1\"}}}]}}",
               "resources.limits.gpu");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"env\":[{\"value\":\"x\"}]}]}}",
               "env[0].name");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"args\":[\"x\"]}]}}", "args");
    expect_bad("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"image\":\"h\"}]}}",
               "template.metadata.name");
    expect_bad("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", "containers[0].image");
    expect_bad("{\"spec\":{\"containers\":[{\"image\":\"host\",\"resources\":{\"limits\":{"
               "\"cpu\":\"lots\"}}}]}}",
               "template: ");
}

static void expect_cap(const char *text, int ok, const char *word)
{
    json_t *j = tmpl(text);
    struct osb_pool_capacity c;
    struct osb_apierr e = {0};
    int rc = osb_pool_capacity_parse(j, &c, &e);
    json_decref(j);
    char name[300];
    snprintf(name, sizeof name, "capacitySpec %.200s -> %s", text, ok ? "ok" : "400");
    OK((rc == 0) == ok, name);
    if (!ok && !strstr(e.msg, word))
        printf("# message: %s\n", e.msg);
    if (!ok)
        OK(strstr(e.msg, word) != NULL, "  message names the field");
}

static void test_capacity(void)
{
    expect_cap("{\"bufferMin\":1,\"bufferMax\":2,\"poolMin\":0,\"poolMax\":5}", 1, NULL);
    expect_cap("{\"bufferMin\":1,\"bufferMax\":2,\"poolMin\":0}", 0, "poolMax");
    expect_cap("{\"bufferMin\":3,\"bufferMax\":2,\"poolMin\":0,\"poolMax\":5}", 0, "bufferMin");
    expect_cap("{\"bufferMin\":0,\"bufferMax\":2,\"poolMin\":6,\"poolMax\":5}", 0, "poolMin");
    expect_cap("{\"bufferMin\":6,\"bufferMax\":7,\"poolMin\":0,\"poolMax\":5}", 0, "poolMax");
    expect_cap("{\"bufferMin\":-1,\"bufferMax\":2,\"poolMin\":0,\"poolMax\":5}", 0, "bufferMin");
    expect_cap("{\"bufferMin\":1.5,\"bufferMax\":2,\"poolMin\":0,\"poolMax\":5}", 0, "bufferMin");
    expect_cap("{\"bufferMin\":1,\"bufferMax\":2,\"poolMin\":0,\"poolMax\":5,\"x\":1}", 0,
               "capacitySpec.x");
    expect_cap("[]", 0, "capacitySpec");
    struct osb_pool_capacity c = {1, 2, 3, 4};
    json_t *j = osb_pool_capacity_json(&c);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    IS_STR(s, "{\"bufferMax\":2,\"bufferMin\":1,\"poolMax\":4,\"poolMin\":3}", "capacity JSON");
    free(s);
    json_decref(j);
}

static void test_names(void)
{
    const char *good[] = {"a", "pool-1", "0a"};
    const char *bad[] = {"",
                         "-a",
                         "a-",
                         "A",
                         "a_b",
                         "a.b",
                         "a234567890123456789012345678901234567890123456789012345678901234"};
    struct osb_apierr e;
    char name[100];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(name, sizeof name, "name '%s' ok", good[i]);
        OK(osb_pool_name_check(good[i], &e) == 0, name);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(name, sizeof name, "name '%.20s' -> 400", bad[i]);
        OK(osb_pool_name_check(bad[i], &e) < 0 && e.status == 400, name);
    }
}

int main(void)
{
    test_ours();
    test_pod();
    test_capacity();
    test_names();
    return tap_done();
}
