/* CreateSandboxRequest parsing, label rules and timestamps (src/server/spec.c,
 * timefmt.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/spec.h"
#include "server/timefmt.h"
#include "net/policy.h"
#include "tap.h"

static const struct osb_spec_limits lim = {.min_timeout_s = 60, .max_timeout_s = 3600};

/* Parse JSON text; returns the status (0 on success) and fills spec/e. */
static int parse(const char *text, struct osb_create_spec *spec, struct osb_apierr *e)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!j) {
        printf("# test JSON does not parse: %s\n", text);
        return -2;
    }
    int rc = osb_spec_parse_create(j, &lim, spec, e);
    json_decref(j);
    return rc < 0 ? e->status : 0;
}

static void expect_error(const char *text, int status, const char *code, const char *word)
{
    struct osb_create_spec spec;
    struct osb_apierr e = {0};
    char what[300];
    snprintf(what, sizeof what, "%.200s -> %d", text, status);
    IS_INT(parse(text, &spec, &e), status, what);
    IS_STR(e.code, code, "  code");
    if (!strstr(e.msg, word))
        printf("# message: %s\n", e.msg);
    OK(strstr(e.msg, word) != NULL, "  message names the field");
}

#define BASE "\"image\":{\"uri\":\"host\"},\"entrypoint\":[\"tail\",\"-f\",\"/dev/null\"]"

static void test_valid(void)
{
    struct osb_create_spec s;
    struct osb_apierr e = {0};
    IS_INT(parse("{" BASE ",\"timeout\":600,\"resourceLimits\":{\"cpu\":\"500m\",\"memory\":"
                 "\"2Gi\",\"ephemeral-storage\":\"1G\",\"pids\":\"100\"},\"env\":{\"A\":\"1\","
                 "\"B\":null},\"metadata\":{\"k\":\"v\",\"ex.com/x\":\"\"},\"platform\":{\"os\":"
                 "\"LINUX\",\"arch\":\"amd64\"},\"extensions\":{},\"secureAccess\":false,"
                 "\"volumes\":[],\"unknown\":1}",
                 &s, &e),
           0, "full valid request");
    IS_STR(s.image, "host", "image");
    IS_STR(s.sb.entrypoint[2], "/dev/null", "entrypoint");
    OK(s.sb.entrypoint[3] == NULL, "entrypoint NULL-terminated");
    IS_INT(s.sb.cpu_millicores, 500, "cpu 500m");
    IS_INT(s.sb.memory_bytes, 2LL << 30, "memory 2Gi");
    IS_INT(s.sb.disk_bytes, 1000000000, "ephemeral-storage 1G");
    IS_INT(s.sb.pids_max, 100, "pids");
    IS_INT(s.timeout_s, 600, "timeout");
    IS_STR(s.sb.env[0], "A=1", "env");
    OK(s.sb.env[1] == NULL, "null env values skipped");
    IS_INT(json_object_size(s.metadata), 2, "metadata");
    IS_STR(json_string_value(json_object_get(s.platform, "os")), "linux", "platform lower-cased");
    json_t *rec = osb_spec_record(&s);
    char *dump = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    OK(strstr(dump, "\"timeout\":600") && strstr(dump, "\"uri\":\"host\"") && !strstr(dump, "env"),
       "stored record: no env (may hold secrets)");
    free(dump);
    json_decref(rec);
    osb_spec_free(&s);

    IS_INT(parse("{" BASE ",\"timeout\":null}", &s, &e), 0, "timeout null");
    IS_INT(s.timeout_s, 0, "  = manual cleanup");
    OK(s.metadata && json_object_size(s.metadata) == 0, "  metadata defaults to {}");
    osb_spec_free(&s);
    IS_INT(parse("{" BASE ",\"timeout\":60,\"resourceLimits\":{\"cpu\":\"2.5\",\"memory\":"
                 "\"1048576000\"}}",
                 &s, &e),
           0, "timeout at the minimum, decimal cpu, plain bytes");
    IS_INT(s.sb.cpu_millicores, 2500, "cpu 2.5");
    IS_INT(s.sb.memory_bytes, 1048576000, "memory in bytes");
    osb_spec_free(&s);
}

/* snapshotId restores; image.auth is kept for the pull but never stored. */
static void test_snapshot_and_auth(void)
{
    struct osb_create_spec s;
    struct osb_apierr e = {0};
    IS_INT(parse("{\"snapshotId\":\"0a1b2c3d-aaaa-4bbb-8ccc-0123456789ab\"}", &s, &e), 0,
           "snapshotId without entrypoint");
    IS_STR(s.snapshot_id, "0a1b2c3d-aaaa-4bbb-8ccc-0123456789ab", "snapshot id");
    OK(s.image == NULL, "no image");
    IS_STR(s.sb.entrypoint[0], "tail", "entrypoint defaults to tail -f /dev/null");
    IS_STR(s.sb.entrypoint[2], "/dev/null", "  (all of it)");
    json_t *rec = osb_spec_record(&s);
    OK(json_is_string(json_object_get(rec, "snapshotId")) && !json_object_get(rec, "image"),
       "record holds snapshotId, no image");
    json_decref(rec);
    osb_spec_free(&s);

    IS_INT(parse("{\"image\":{\"uri\":\"reg:5000/a/b:1\",\"auth\":{\"username\":\"me\","
                 "\"password\":\"s3cret\"}},\"entrypoint\":[\"x\"]}",
                 &s, &e),
           0, "image with auth");
    IS_STR(s.auth_user, "me", "auth username");
    IS_STR(s.auth_pass, "s3cret", "auth password");
    rec = osb_spec_record(&s);
    char *dump = json_dumps(rec, JSON_COMPACT);
    OK(!strstr(dump, "s3cret") && !strstr(dump, "auth"), "the record holds no credentials");
    free(dump);
    json_decref(rec);
    osb_spec_free(&s);

    IS_INT(parse("{" BASE ",\"networkPolicy\":{\"egress\":[{\"action\":\"ALLOW\","
                 "\"target\":\"a.com\"}]}}",
                 &s, &e),
           0, "networkPolicy");
    OK(s.network_policy != NULL, "  parsed into the typed policy");
    json_t *npj = s.network_policy ? osb_policy_json(s.network_policy) : NULL;
    char *np = npj ? json_dumps(npj, JSON_COMPACT) : NULL;
    json_decref(npj);
    IS_STR(np,
           "{\"egress\":[{\"action\":\"allow\",\"target\":\"a.com\"}],\"defaultAction\":\"deny\"}",
           "  normalized: actions lower-cased, a missing defaultAction is deny");
    free(np);
    osb_spec_free(&s);
    OK(s.network_policy == NULL, "  freed with the spec");
}

static void test_invalid(void)
{
    const char *bad = "SANDBOX::INVALID_PARAMETER";
    expect_error("[]", 400, bad, "JSON object");
    expect_error("{\"entrypoint\":[\"x\"]}", 400, bad, "image.uri");
    expect_error("{\"image\":{\"uri\":\"\"},\"entrypoint\":[\"x\"]}", 400, bad, "image.uri");
    expect_error("{\"image\":\"host\",\"entrypoint\":[\"x\"]}", 400, bad, "'image'");
    expect_error("{\"snapshotId\":\"s!\",\"entrypoint\":[\"x\"]}", 404, "SNAPSHOT::NOT_FOUND",
                 "s!");
    expect_error("{\"snapshotId\":5}", 400, bad, "snapshotId");
    expect_error("{\"snapshotId\":\"ab\",\"image\":{\"uri\":\"host\"}}", 400, bad, "snapshotId");
    expect_error("{\"image\":{\"uri\":\"host\",\"auth\":{\"username\":\"u\"}},"
                 "\"entrypoint\":[\"x\"]}",
                 400, bad, "image.auth");
    expect_error("{\"image\":{\"uri\":\"host\",\"auth\":[]},\"entrypoint\":[\"x\"]}", 400, bad,
                 "image.auth");
    expect_error("{\"image\":{\"uri\":\"host\"}}", 400, "SANDBOX::INVALID_ENTRYPOINT",
                 "entrypoint");
    expect_error("{\"image\":{\"uri\":\"host\"},\"entrypoint\":[]}", 400,
                 "SANDBOX::INVALID_ENTRYPOINT", "entrypoint");
    expect_error("{\"image\":{\"uri\":\"host\"},\"entrypoint\":[\"a\",1]}", 400,
                 "SANDBOX::INVALID_ENTRYPOINT", "entrypoint[1]");
    expect_error("{" BASE ",\"resourceLimits\":{\"cpu\":\"lots\"}}", 400, bad,
                 "resourceLimits.cpu");
    expect_error("{" BASE ",\"resourceLimits\":{\"memory\":\"12XB\"}}", 400, bad,
                 "resourceLimits.memory");
    expect_error("{" BASE ",\"resourceLimits\":{\"memory\":\"1Mi\"}}", 400, bad, "minimum");
    expect_error("{" BASE ",\"resourceLimits\":{\"gpu\":\"1\"}}", 400, bad, "GPU");
    expect_error("{" BASE ",\"resourceLimits\":{\"pids\":\"8\"}}", 400, bad, "resourceLimits.pids");
    expect_error("{" BASE ",\"timeout\":59}", 400, bad, "at least 60");
    expect_error("{" BASE ",\"timeout\":3601}", 400, bad, "max_sandbox_timeout_seconds");
    expect_error("{" BASE ",\"timeout\":\"600\"}", 400, bad, "timeout");
    expect_error("{" BASE ",\"timeout\":600.5}", 400, bad, "timeout");
    expect_error("{" BASE ",\"env\":{\"A\":1}}", 400, bad, "env.A");
    expect_error("{" BASE ",\"env\":{\"A=B\":\"x\"}}", 400, bad, "A=B");
    expect_error("{" BASE ",\"metadata\":{\"opensandbox.io/id\":\"x\"}}", 400,
                 "SANDBOX::INVALID_METADATA_LABEL", "reserved");
    expect_error("{" BASE ",\"metadata\":{\"k\":\"bad value\"}}", 400,
                 "SANDBOX::INVALID_METADATA_LABEL", "'k'");
    expect_error("{" BASE ",\"platform\":{\"os\":\"linux\",\"arch\":\"s390x\"}}", 400, bad,
                 "platform.arch");
    expect_error("{" BASE ",\"networkPolicy\":{\"defaultAction\":\"maybe\"}}", 400, bad,
                 "networkPolicy");
    expect_error("{" BASE ",\"networkPolicy\":[]}", 400, bad, "networkPolicy");
    expect_error("{" BASE ",\"credentialProxy\":{\"enabled\":true}}", 400, bad,
                 "needs a networkPolicy");
    expect_error("{" BASE ",\"credentialProxy\":{\"enabled\":true},\"networkPolicy\":null}", 400,
                 bad, "needs a networkPolicy");
    expect_error("{" BASE ",\"secureAccess\":true}", 400, bad, "secureAccess");
    expect_error("{" BASE ",\"extensions\":{\"poolRef\":\"Pool A\"}}", 400, bad,
                 "extensions.poolRef");
    expect_error("{" BASE ",\"extensions\":{\"poolRef\":\"\"}}", 400, bad, "extensions.poolRef");
    expect_error("{" BASE ",\"extensions\":{\"runtime\":\"\"}}", 400,
                 "SANDBOX::RUNTIME_NOT_ALLOWED", "extensions.runtime");
    expect_error("{" BASE ",\"extensions\":{\"runtime\":\"G Visor\"}}", 400,
                 "SANDBOX::RUNTIME_NOT_ALLOWED", "extensions.runtime");
    expect_error("{" BASE ",\"extensions\":{\"runtime\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}",
                 400, "SANDBOX::RUNTIME_NOT_ALLOWED", "extensions.runtime");
    expect_error("{" BASE ",\"extensions\":{\"runtime\":1}}", 400, bad, "extensions.runtime");
    struct osb_create_spec r;
    struct osb_apierr e = {0};
    IS_INT(parse("{" BASE ",\"extensions\":{\"runtime\":\"gvisor\"}}", &r, &e), 0,
           "extensions.runtime parsed");
    IS_STR(r.runtime_req, "gvisor", "the runtime asked for is kept for the server to check");
    osb_spec_free(&r);
    IS_INT(parse("{" BASE "}", &r, &e), 0, "no extensions");
    OK(r.runtime_req == NULL, "no runtime asked: NULL (the server's default)");
    osb_spec_free(&r);
}

#define VOL(x) "{" BASE ",\"volumes\":[" x "]}"
#define HOSTV "\"host\":{\"path\":\"/data\"}"

static void test_volumes_valid(void)
{
    struct osb_create_spec s;
    struct osb_apierr e = {0};
    IS_INT(parse(VOL("{\"name\":\"a\",\"mountPath\":\"/mnt//a/./\",\"host\":{\"path\":"
                     "\"/data//x/\"},\"subPath\":\"./s//t/\"},"
                     "{\"name\":\"b-1\",\"mountPath\":\"/b\",\"readOnly\":true,\"pvc\":{"
                     "\"claimName\":\"my.claim\",\"storage\":\"1.5Gi\",\"storageClass\":\"x\","
                     "\"accessModes\":[\"ReadWriteOnce\"]}},"
                     "{\"name\":\"c\",\"mountPath\":\"/etc/c\",\"subPath\":\".\",\"pvc\":{"
                     "\"claimName\":\"c\",\"createIfNotExists\":false,"
                     "\"deleteOnSandboxTermination\":true},\"host\":null}"),
                 &s, &e),
           0, "volumes: host and pvc");
    IS_INT((int)s.n_volumes, 3, "three volumes");
    IS_STR(s.volumes[0].mount_path, "/mnt/a", "mountPath normalized");
    IS_STR(s.volumes[0].host_path, "/data/x", "host.path normalized");
    IS_STR(s.volumes[0].sub_path, "s/t", "subPath normalized");
    OK(!s.volumes[0].read_only && s.volumes[0].backend == OSB_VOL_HOST, "readOnly defaults false");
    OK(s.volumes[1].read_only && s.volumes[1].backend == OSB_VOL_PVC, "pvc, readOnly");
    IS_STR(s.volumes[1].pvc.claim, "my.claim", "claimName");
    OK(s.volumes[1].pvc.create && !s.volumes[1].pvc.delete_on_term, "pvc defaults");
    IS_STR(s.volumes[1].pvc.storage, "1.5Gi", "storage recorded");
    OK(!s.volumes[2].pvc.create && s.volumes[2].pvc.delete_on_term, "pvc flags");
    OK(s.volumes[2].sub_path == NULL, "subPath '.' is the root");
    s.volumes[2].pvc.created = true;
    json_t *r = osb_spec_record(&s);
    json_t *v = json_object_get(r, "volumes");
    OK(json_is_true(json_object_get(json_object_get(json_array_get(v, 2), "pvc"), "autoCreated")) &&
           !json_object_get(json_object_get(json_array_get(v, 1), "pvc"), "autoCreated"),
       "record: autoCreated only for a claim this request made");
    IS_INT((int)json_array_size(v), 3, "record has the volumes");
    IS_STR(
        json_string_value(json_object_get(json_object_get(json_array_get(v, 0), "host"), "path")),
        "/data/x", "record: host path");
    IS_STR(json_string_value(json_object_get(json_array_get(v, 0), "subPath")), "s/t",
           "record: subPath");
    json_t *pvc = json_object_get(json_array_get(v, 2), "pvc");
    OK(json_is_true(json_object_get(pvc, "deleteOnSandboxTermination")) &&
           json_is_false(json_object_get(pvc, "createIfNotExists")),
       "record: pvc flags");
    IS_STR(json_string_value(json_array_get(
               json_object_get(json_object_get(json_array_get(v, 1), "pvc"), "accessModes"), 0)),
           "ReadWriteOnce", "record: accessModes");
    json_decref(r);
    osb_spec_free(&s);
}

static void test_volumes_invalid(void)
{
    const char *bad = "SANDBOX::INVALID_PARAMETER";
    expect_error("{" BASE ",\"volumes\":{}}", 400, bad, "'volumes' must be an array");
    expect_error(VOL("1"), 400, bad, "volumes[0]");
    expect_error(VOL("{\"mountPath\":\"/a\"," HOSTV "}"), 400, bad, "volumes[0].name");
    expect_error(VOL("{\"name\":\"A\",\"mountPath\":\"/a\"," HOSTV "}"), 400, bad,
                 "volumes[0].name");
    expect_error(VOL("{\"name\":\"a-\",\"mountPath\":\"/a\"," HOSTV "}"), 400, bad,
                 "volumes[0].name");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\"," HOSTV "},{\"name\":\"a\","
                     "\"mountPath\":\"/b\"," HOSTV "}"),
                 400, bad, "volumes[1].name");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\"," HOSTV "},{\"name\":\"b\","
                     "\"mountPath\":\"/a/\"," HOSTV "}"),
                 400, bad, "volumes[1].mountPath");
    expect_error(VOL("{\"name\":\"a\"," HOSTV "}"), 400, bad, "volumes[0].mountPath");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"rel\"," HOSTV "}"), 400, bad,
                 "volumes[0].mountPath");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"//\"," HOSTV "}"), 400, bad,
                 "volumes[0].mountPath");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a/../proc\"," HOSTV "}"), 400, bad, "'..'");
    const char *reserved[] = {"/proc", "/proc/sys",        "/sys/x", "/dev",
                              "/run",  "/run/opensandbox", "/opt",   "/opt/opensandbox/x"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        char body[400];
        snprintf(body, sizeof body, VOL("{\"name\":\"a\",\"mountPath\":\"%s\"," HOSTV "}"),
                 reserved[i]);
        expect_error(body, 400, bad, "reserved");
    }
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"readOnly\":\"yes\"," HOSTV "}"), 400,
                 bad, "volumes[0].readOnly");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"subPath\":\"/abs\"," HOSTV "}"), 400,
                 bad, "volumes[0].subPath");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"subPath\":\"x/../../y\"," HOSTV "}"),
                 400, bad, "volumes[0].subPath");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\"}"), 400, bad, "exactly one backend");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\"," HOSTV ",\"pvc\":{\"claimName\":"
                     "\"c\"}}"),
                 400, bad, "exactly one backend");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"host\":{}}"), 400, bad,
                 "volumes[0].host.path");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"host\":{\"path\":\"C:\\\\x\"}}"), 400,
                 bad, "volumes[0].host.path");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"host\":{\"path\":\"/d/../e\"}}"), 400,
                 bad, "volumes[0].host.path");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"pvc\":{}}"), 400, bad,
                 "volumes[0].pvc.claimName");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"pvc\":{\"claimName\":\"Bad_\"}}"), 400,
                 bad, "volumes[0].pvc.claimName");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"pvc\":{\"claimName\":\"c\","
                     "\"storage\":\"1GB\"}}"),
                 400, bad, "volumes[0].pvc.storage");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"pvc\":{\"claimName\":\"c\","
                     "\"accessModes\":[1]}}"),
                 400, bad, "volumes[0].pvc.accessModes[0]");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"pvc\":{\"claimName\":\"c\","
                     "\"createIfNotExists\":1}}"),
                 400, bad, "volumes[0].pvc.createIfNotExists");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"ossfs\":{\"bucket\":\"b\"}}"), 400,
                 bad, "volumes[0].ossfs.endpoint");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"ossfs\":{\"bucket\":\"bk\","
                     "\"endpoint\":\"e\",\"accessKeyId\":\"i\",\"accessKeySecret\":\"s\"}}"),
                 400, bad, "volumes[0].ossfs.bucket");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"ossfs\":{\"bucket\":\"bkt\","
                     "\"endpoint\":\"e\",\"accessKeyId\":\"i\",\"accessKeySecret\":\"s\","
                     "\"version\":\"2.0\"}}"),
                 400, "VOLUME::UNSUPPORTED_BACKEND", "not supported by this runtime");
    expect_error(VOL("{\"name\":\"a\",\"mountPath\":\"/a\",\"ossfs\":{\"bucket\":\"bkt\","
                     "\"endpoint\":\"e\",\"accessKeyId\":\"i\",\"accessKeySecret\":\"s\","
                     "\"version\":\"3.0\"}}"),
                 400, bad, "volumes[0].ossfs.version");
}

static void test_labels(void)
{
    char msg[400];
    static const char *const good[][2] = {
        {"a", "b"},
        {"team", ""},
        {"example.com/team", "x-y_z.1"},
        {"A_b.c-d", "V"},
        {"a.b-c.d/N", "0"},
        {"k", "123456789012345678901234567890123456789012345678901234567890123"},
    };
    static const char *const bad[][2] = {
        {"", "v"},
        {"-a", "v"},
        {"a-", "v"},
        {"a b", "v"},
        {"A.com/x", "v"},
        {"/x", "v"},
        {"a/", "v"},
        {"a/b/c", "v"},
        {"a..b/x", "v"},
        {"k", "-v"},
        {"k", "v v"},
        {"k", "é"},
        {"k", "1234567890123456789012345678901234567890123456789012345678901234"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char what[200];
        snprintf(what, sizeof what, "label ok: %s=%s", good[i][0], good[i][1]);
        IS_INT(osb_label_check(good[i][0], good[i][1], msg, sizeof msg), 0, what);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[200];
        snprintf(what, sizeof what, "label rejected: '%s'='%s'", bad[i][0], bad[i][1]);
        IS_INT(osb_label_check(bad[i][0], bad[i][1], msg, sizeof msg), -1, what);
    }
    OK(osb_label_reserved("opensandbox.io/x"), "reserved prefix");
    OK(!osb_label_reserved("x.opensandbox.io/x"), "only the exact prefix is reserved");
}

static void test_time(void)
{
    char buf[OSB_TIMEFMT_LEN];
    osb_timefmt_us(1705314600123456LL, buf);
    IS_STR(buf, "2024-01-15T10:30:00.123456Z", "format with microseconds");
    osb_timefmt_us(1705314600000000LL, buf);
    IS_STR(buf, "2024-01-15T10:30:00Z", "format without a fraction");
    int64_t us = 0;
    IS_INT(osb_timefmt_parse("2024-01-15T10:30:00.123456Z", &us), 0, "parse Z");
    IS_INT(us, 1705314600123456LL, "  value");
    IS_INT(osb_timefmt_parse("2024-01-15T11:30:00.5+01:00", &us), 0, "parse offset");
    IS_INT(us, 1705314600500000LL, "  value in UTC");
    IS_INT(osb_timefmt_parse("2024-01-15T10:30:00.123Z", &us), 0, "parse JS toISOString");
    IS_INT(us, 1705314600123000LL, "  value");
    IS_INT(osb_timefmt_parse("2024-01-15 10:30:00", &us), 0, "naive = UTC");
    IS_INT(us, 1705314600000000LL, "  value");
    IS_INT(osb_timefmt_parse("2024-01-15T10:30:00.1234567891Z", &us), 0, "long fraction");
    IS_INT(us, 1705314600123456LL, "  truncated to microseconds");
    const char *bad[] = {"",
                         "2024-01-15",
                         "2024-13-01T00:00:00Z",
                         "2023-02-29T00:00:00Z",
                         "2024-01-15T25:00:00Z",
                         "2024-01-15T10:30:00.Z",
                         "2024-01-15T10:30:00Zx",
                         "2024-01-15T10:30:00+1",
                         "tomorrow"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[80];
        snprintf(what, sizeof what, "rejects '%s'", bad[i]);
        IS_INT(osb_timefmt_parse(bad[i], &us), -1, what);
    }
    IS_INT(osb_timefmt_parse("2024-02-29T00:00:00Z", &us), 0, "leap day");
}

/* extensions.poolRef is kept for the claim; a pool member's record says
 * which pool and revision (and never reaches the API: server/api.c picks
 * its fields). */
static void test_pool_ref(void)
{
    struct osb_create_spec spec;
    struct osb_apierr e = {0};
    IS_INT(parse("{" BASE ",\"extensions\":{\"poolRef\":\"pool-a\"}}", &spec, &e), 0,
           "poolRef parses");
    IS_STR(spec.pool_ref, "pool-a", "  kept as spec.pool_ref");
    spec.pool_member = strdup("pool-a");
    spec.pool_rev = 3;
    spec.pool_keep_running = true;
    json_t *r = osb_spec_record(&spec);
    char *txt = json_dumps(json_object_get(r, "poolMember"), JSON_COMPACT | JSON_SORT_KEYS);
    IS_STR(txt, "{\"keepRunning\":true,\"name\":\"pool-a\",\"revision\":3}",
           "a member's record names its pool");
    free(txt);
    json_decref(r);
    osb_spec_free(&spec);
}

int main(void)
{
    test_pool_ref();
    test_valid();
    test_invalid();
    test_snapshot_and_auth();
    test_volumes_valid();
    test_volumes_invalid();
    test_labels();
    test_time();
    return tap_done();
}
