/* The vault model against upstream's rules: every validation error,
 * defaults and normalization, PATCH atomicity and revisions, matching and
 * precedence, rendering of the four auth types, sanitized output, and the
 * dump/load round trip. */
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "net/policy.h"
#include "tap.h"
#include "vault/vault.h"

static struct osb_policy pol;

static json_t *J(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j) {
        printf("# bad test JSON: %s: %s\n", je.text, text);
        fflush(stdout);
        abort();
    }
    return j;
}

static struct osb_vault *create_with(const char *body, const struct osb_policy *p,
                                     struct osb_err *err)
{
    json_t *j = J(body);
    struct osb_vault *v = NULL;
    memset(err, 0, sizeof *err);
    if (osb_vault_create(j, p, &v, err) < 0)
        v = NULL;
    json_decref(j);
    return v;
}

static struct osb_vault *create(const char *body, struct osb_err *err)
{
    return create_with(body, &pol, err);
}

static struct osb_vault *patch(struct osb_vault *cur, const char *body, struct osb_err *err)
{
    json_t *j = J(body);
    struct osb_vault *v = NULL;
    memset(err, 0, sizeof *err);
    if (osb_vault_patch(cur, j, &pol, &v, err) < 0)
        v = NULL;
    json_decref(j);
    return v;
}

/* Compact JSON text of j (consumed). */
static char *text_of(json_t *j)
{
    char *s = j ? osb_json_dump(j, NULL) : NULL;
    json_decref(j);
    return s;
}

#define IS_JSON(j, want, what) \
    do { \
        char *_s = text_of(j); \
        IS_STR(_s, want, what); \
        free(_s); \
    } while (0)

/* Creating from body fails with OSB_E_INVALID and a message holding word. */
static void refused(const char *body, const char *word, const char *what)
{
    struct osb_err err;
    struct osb_vault *v = create(body, &err);
    OK(!v && err.code == OSB_E_INVALID, what);
    if (!strstr(err.msg, word))
        printf("# message: %s (want '%s')\n", err.msg, word);
    OK(strstr(err.msg, word) != NULL, "  the message names it");
    if (v)
        osb_vault_unref(v);
}

#define CRED(n, v) "{\"name\":\"" n "\",\"source\":{\"type\":\"inline\",\"value\":\"" v "\"}}"
#define BEARER "{\"type\":\"bearer\",\"credential\":\"c\"}"
/* One credential "c" and one binding "b" with the given match and auth. */
#define B(match, auth) \
    "{\"credentials\":[" CRED("c", "v4lue") "],\"bindings\":[{\"name\":\"b\",\"match\":" match \
                                            ",\"auth\":" auth "}]}"
#define HOST "{\"hosts\":[\"api.example.com\"]}"
#define APIKEY(name) "{\"type\":\"apiKey\",\"name\":\"" name "\",\"credential\":\"c\"}"
#define GOOD \
    "{\"credentials\":[" CRED("tok", "s3cret") "," CRED( \
        "key", \
        "k3y-value") "]," \
                     "\"bindings\":[{\"name\":\"api\",\"match\":{\"hosts\":[\"API.Example.com.\"]," \
                     "\"paths\":[\"/v1/*\",\"/exact\"]},\"auth\":{\"type\":\"bearer\",\"credential\":\"tok\"}}," \
                     "{\"name\":\"wild\",\"match\":{\"hosts\":[\"*.example.com\"],\"methods\":[\"get\"]}," \
                     "\"auth\":{\"type\":\"apiKey\",\"name\":\"x-api-key\",\"credential\":\"key\"}}]}"

/* ------------------------------------------------------------ create */

static void test_defaults(void)
{
    struct osb_err err;
    struct osb_vault *v = create(B(HOST, BEARER), &err);
    OK(v != NULL, "a minimal binding is accepted");
    if (!v) {
        printf("# %s\n", err.msg);
        return;
    }
    IS_JSON(osb_vault_state_json(v),
            "{\"revision\":1,\"credentials\":[{\"name\":\"c\",\"sourceType\":\"inline\","
            "\"revision\":1}],\"bindings\":[{\"name\":\"b\",\"revision\":1,\"match\":{"
            "\"schemes\":[\"https\"],\"ports\":[443],\"hosts\":[\"api.example.com\"],"
            "\"methods\":[\"GET\",\"POST\",\"PUT\",\"PATCH\",\"DELETE\"],\"paths\":[\"/*\"]},"
            "\"auth\":{\"type\":\"bearer\"}}]}",
            "state: upstream's defaults and shape, no value");
    IS_JSON(osb_vault_credentials_json(v),
            "{\"revision\":1,\"credentials\":[{\"name\":\"c\",\"sourceType\":\"inline\","
            "\"revision\":1}]}",
            "the credential list");
    IS_JSON(osb_vault_credential_json(v, "c"),
            "{\"name\":\"c\",\"sourceType\":\"inline\",\"revision\":1}", "one credential");
    OK(osb_vault_credential_json(v, "nope") == NULL, "an unknown credential: NULL");
    OK(osb_vault_binding_json(v, "nope") == NULL, "an unknown binding: NULL");
    json_t *bl = osb_vault_bindings_json(v);
    IS_INT(json_array_size(json_object_get(bl, "bindings")), 1, "the binding list");
    IS_INT(json_integer_value(json_object_get(bl, "revision")), 1, "  with the revision");
    json_decref(bl);
    osb_vault_unref(v);

    v = create("{\"credentials\":[{\"name\":\" c \",\"source\":{\"value\":\"x\"}}],"
               "\"bindings\":[{\"name\":\"b\",\"match\":{\"hosts\":[\" api.example.com \","
               "\"API.example.com\"],\"ports\":[443,80,443],\"methods\":[\"get\",\" GET\"],"
               "\"schemes\":[\"HTTPS\",\"http\",\"https\"],\"paths\":[\" /a\",\"/a\"]},"
               "\"auth\":{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"x-one\","
               "\"credential\":\" c \"}]}}]}",
               &err);
    OK(v != NULL, "names trimmed, source.type defaults to inline");
    if (v)
        IS_JSON(osb_vault_binding_json(v, "b"),
                "{\"name\":\"b\",\"revision\":1,\"match\":{\"schemes\":[\"https\",\"http\"],"
                "\"ports\":[443,80],\"hosts\":[\"api.example.com\"],\"methods\":[\"GET\"],"
                "\"paths\":[\"/a\"]},\"auth\":{\"type\":\"customHeaders\"}}",
                "lists normalized and deduplicated; customHeaders shows only its type");
    osb_vault_unref(v);

    v = create("{}", &err);
    OK(v && osb_vault_revision(v) == 1, "{} makes an empty vault");
    if (v)
        IS_JSON(osb_vault_state_json(v), "{\"revision\":1,\"credentials\":[],\"bindings\":[]}",
                "  lists are [] when empty");
    osb_vault_unref(v);
    v = create("null", &err);
    OK(v != NULL, "null makes an empty vault (upstream's decoder)");
    osb_vault_unref(v);
    v = create_with("{\"credentials\":[" CRED("c", "v") "],\"bindings\":[]}", NULL, &err);
    OK(v != NULL, "credentials without bindings need no policy");
    osb_vault_unref(v);
}

static void test_good(void)
{
    struct osb_err err;
    struct osb_vault *v = create(GOOD, &err);
    OK(v != NULL, "a vault with an exact and a wildcard binding");
    if (!v) {
        printf("# %s\n", err.msg);
        return;
    }
    IS_INT(osb_vault_revision(v), 1, "revision 1");
    IS_JSON(osb_vault_binding_json(v, "wild"),
            "{\"name\":\"wild\",\"revision\":1,\"match\":{\"schemes\":[\"https\"],\"ports\":[443],"
            "\"hosts\":[\"*.example.com\"],\"methods\":[\"GET\"],\"paths\":[\"/*\"]},"
            "\"auth\":{\"type\":\"apiKey\",\"name\":\"X-Api-Key\"}}",
            "apiKey: the canonical header name is shown, methods upper-cased");
    json_t *st = osb_vault_state_json(v);
    json_t *names = json_object_get(st, "credentials");
    IS_STR(json_string_value(json_object_get(json_array_get(names, 0), "name")), "key",
           "credentials sorted by name");
    json_t *b0 = json_array_get(json_object_get(st, "bindings"), 0);
    IS_STR(json_string_value(json_object_get(b0, "name")), "api", "bindings sorted by name");
    json_decref(st);
    osb_vault_unref(v);
}

/* ------------------------------------------------------------ refusals */

static void test_refuse_shape(void)
{
    refused("[]", "object", "a body that is not an object");
    refused("{\"credentials\":[],\"bindings\":[],\"x\":1}", "'x'", "an unknown top-level field");
    refused("{\"credentials\":\"c\"}", "credentials", "credentials not an array");
    refused("{\"bindings\":{}}", "bindings", "bindings not an array");
    refused("{\"credentials\":[7]}", "credentials[0]", "a credential not an object");
    refused("{\"credentials\":[{\"name\":\"c\",\"source\":{\"value\":\"v\"},\"x\":1}]}",
            "credentials[0]: unknown field 'x'", "an unknown field in a credential");
    refused("{\"credentials\":[{\"name\":\"c\",\"source\":{\"value\":\"v\",\"env\":1}}]}",
            "credentials[0].source: unknown field 'env'", "an unknown field in a source");
    refused("{\"credentials\":[{\"name\":\"c\"}]}", "source", "a credential without source");
    refused("{\"credentials\":[{\"name\":7,\"source\":{\"value\":\"v\"}}]}", "name",
            "a name that is not a string");
    refused("{\"credentials\":[{\"name\":\"c\",\"source\":{\"value\":7}}]}", "value",
            "a value that is not a string");
    refused(B("{\"hosts\":[\"api.example.com\"],\"color\":1}", BEARER),
            "bindings[0].match: unknown field 'color'", "an unknown field in a match");
    refused(B(HOST, "{\"type\":\"bearer\",\"credential\":\"c\",\"x\":1}"),
            "bindings[0].auth: unknown field 'x'", "an unknown field in an auth");
    refused(B(HOST, "{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"X-A\","
                    "\"credential\":\"c\",\"value\":\"v\"}]}"),
            "headers[0]: unknown field 'value'", "an unknown field in a header entry");
    refused("{\"credentials\":[],\"bindings\":[{\"name\":\"b\",\"auth\":" BEARER "}]}",
            "bindings[0].match must be an object", "a binding without match");
    refused("{\"credentials\":[" CRED("c", "v") "],\"bindings\":[{\"name\":\"b\",\"match\":" HOST
                                                "}]}",
            "bindings[0].auth must be an object", "a binding without auth");
}

static void test_refuse_credentials(void)
{
    refused("{\"credentials\":[" CRED("a", "") "]}", "empty", "an empty value");
    refused("{\"credentials\":[" CRED(" ", "v") "]}", "blank", "a blank name");
    refused("{\"credentials\":[" CRED("a", "v") "," CRED("a", "w") "]}",
            "credentials[1]: duplicate credential name \"a\"", "duplicate credential names");
    refused("{\"credentials\":[{\"name\":\"a\",\"source\":{\"type\":\"vault\",\"value\":\"v\"}}]}",
            "unsupported credential source type \"vault\"", "a source type other than inline");
    refused("{\"credentials\":[" CRED("a", "x\\r\\nHost: evil.example") "]}", "control character",
            "a value with CR LF (header injection)");
    refused("{\"credentials\":[" CRED("a", "x\\u0000y") "]}", "value", "a value with a NUL");
    char *big = malloc(OSB_VAULT_MAX_VALUE + 200);
    memset(big, 'v', OSB_VAULT_MAX_VALUE + 200);
    int n = snprintf(big, OSB_VAULT_MAX_VALUE + 200,
                     "{\"credentials\":[{\"name\":\"a\","
                     "\"source\":{\"value\":\"");
    memset(big + n, 'v', OSB_VAULT_MAX_VALUE + 1);
    memcpy(big + n + OSB_VAULT_MAX_VALUE + 1, "\"}}]}", 6);
    refused(big, "too long", "a value over OSB_VAULT_MAX_VALUE bytes");
    big[n + OSB_VAULT_MAX_VALUE] = '"';
    memcpy(big + n + OSB_VAULT_MAX_VALUE, "\"}}]}", 6);
    struct osb_err err;
    struct osb_vault *v = create(big, &err);
    OK(v != NULL, "a value of exactly OSB_VAULT_MAX_VALUE bytes is fine");
    osb_vault_unref(v);
    free(big);
    char name[OSB_VAULT_MAX_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    char body[512];
    snprintf(body, sizeof body, "{\"credentials\":[" CRED("%s", "v") "]}", name);
    refused(body, "too long", "a name over OSB_VAULT_MAX_NAME bytes");

    size_t cap = (OSB_VAULT_MAX_ITEMS + 1) * 64 + 64, o = 0;
    char *many = malloc(cap);
    o += (size_t)snprintf(many, cap, "{\"credentials\":[");
    for (int i = 0; i <= OSB_VAULT_MAX_ITEMS; i++)
        o += (size_t)snprintf(many + o, cap - o, "%s" CRED("c%d", "v"), i ? "," : "", i);
    snprintf(many + o, cap - o, "]}");
    refused(many, "more than", "more than OSB_VAULT_MAX_ITEMS credentials");
    free(many);
}

static void test_refuse_hosts(void)
{
    static const char *const bad[][2] = {
        {"", "blank"},
        {"10.0.0.1", "IP address"},
        {"::1", "IP address"},
        {"*.10.0.0.1", "FQDN"},
        {"a*.example.com", "wildcard"},
        {"*.*.example.com", "wildcard"},
        {"*.", "wildcard"},
        {"https://api.example.com", "scheme"},
        {"api.example.com/v1", "path"},
        {"api.example.com:443", "FQDN"},
        {"*.example.com:443", "FQDN"},
        {"api_example.com", "FQDN"},
        {"localhost", "FQDN"},
        {"*.localhost", "FQDN"},
        {"-a.example.com", "FQDN"},
        {"a..example.com", "FQDN"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.com", "FQDN"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[512], what[160];
        snprintf(body, sizeof body, B("{\"hosts\":[\"api.example.com\",\"%s\"]}", BEARER),
                 bad[i][0]);
        snprintf(what, sizeof what, "host \"%s\" is refused", bad[i][0]);
        refused(body, bad[i][1], what);
    }
    refused(B("{\"hosts\":[\"api.example.com\",\"10.0.0.1\"]}", BEARER),
            "bindings[0].match.hosts[1]", "the message names the field");
    refused(B("{\"hosts\":[]}", BEARER), "hosts cannot be empty", "no hosts");
    refused(B("{\"hosts\":\"api.example.com\"}", BEARER), "hosts", "hosts a string");
    refused(B("{\"hosts\":[7]}", BEARER), "hosts[0]", "a host that is not a string");
}

static void test_refuse_match(void)
{
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[443,8443]}", BEARER),
            "bindings[0].match.ports[1]: port 8443", "a port other than 80/443");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[8080]}", BEARER), "80 and 443",
            "  the message says which are allowed");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[0]}", BEARER), "invalid port", "port 0");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[70000]}", BEARER), "invalid port",
            "port 70000");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[\"443\"]}", BEARER), "ports[0]",
            "a port as a string");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[443.5]}", BEARER), "ports[0]",
            "a fractional port");
    refused(B("{\"hosts\":[\"api.example.com\"],\"schemes\":[\"ftp\"]}", BEARER), "ftp",
            "scheme ftp");
    refused(B("{\"hosts\":[\"api.example.com\"],\"methods\":[\" \"]}", BEARER),
            "methods[0]: method cannot be blank", "a blank method");
    refused(B("{\"hosts\":[\"api.example.com\"],\"paths\":[\"v1\"]}", BEARER),
            "paths[0]: path pattern must start with /", "a path without /");
    refused(B("{\"hosts\":[\"api.example.com\"],\"paths\":[\"\"]}", BEARER), "paths[0]",
            "an empty path");
}

static void test_refuse_auth(void)
{
    static const char *const reserved[] = {
        "Host",
        "content-length",
        "Content-Type",
        "Transfer-Encoding",
        "CONNECTION",
        "Upgrade",
        "TE",
        "Trailer",
        "Proxy-Authorization",
        "Proxy-Authenticate",
        "Forwarded",
        "X-Forwarded-For",
        "x-forwarded-host",
        "X-Forwarded-Proto",
        "Keep-Alive",
        "Expect",
    };
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        char body[512], what[128];
        snprintf(body, sizeof body, B(HOST, APIKEY("%s")), reserved[i]);
        snprintf(what, sizeof what, "apiKey header \"%s\" is reserved", reserved[i]);
        refused(body, "reserved credential header name", what);
        snprintf(body, sizeof body,
                 B(HOST, "{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"%s\","
                         "\"credential\":\"c\"}]}"),
                 reserved[i]);
        snprintf(what, sizeof what, "customHeaders header \"%s\" is reserved", reserved[i]);
        refused(body, "reserved", what);
    }
    refused(B(HOST, APIKEY("a:b")), "invalid credential header name", "a name with ':'");
    refused(B(HOST, APIKEY("x y")), "x y", "a name with a space");
    refused(B(HOST, APIKEY("")), "invalid credential header name", "apiKey without a name");
    refused(B(HOST, "{\"type\":\"apiKey\",\"name\":\"X-Key\"}"), "requires credential",
            "apiKey without a credential");
    refused(B(HOST, "{\"type\":\"bearer\"}"), "bearer auth requires credential",
            "bearer without a credential");
    refused(B(HOST, "{\"type\":\"basic\",\"credential\":\" \"}"), "basic auth requires credential",
            "basic with a blank credential");
    refused(B(HOST, "{\"type\":\"customHeaders\",\"headers\":[]}"), "requires headers",
            "customHeaders without headers");
    refused(B(HOST, "{\"type\":\"customHeaders\"}"), "requires headers",
            "customHeaders with no headers member");
    refused(B(HOST, "{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"X-Access-Token\","
                    "\"credential\":\"c\"},{\"name\":\"x-access-token\",\"credential\":\"c\"}]}"),
            "duplicate custom header name", "customHeaders names equal but for case");
    refused(B(HOST, "{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"X-A\"}]}"),
            "requires credential", "a header entry without credential");
    refused(B(HOST, "{\"type\":\"oauth\",\"credential\":\"c\"}"), "unsupported auth type \"oauth\"",
            "an unknown auth type");
    refused(B(HOST, "{\"type\":\"Bearer\",\"credential\":\"c\"}"), "Bearer",
            "auth types are case-sensitive");
    refused(B(HOST, "{\"type\":\"bearer\",\"credential\":\"zz\"}"),
            "binding \"b\" references unknown credential \"zz\"", "an unknown credential");
    refused(B(HOST, "{\"type\":\"customHeaders\",\"headers\":[{\"name\":\"X-A\","
                    "\"credential\":\"c\"},{\"name\":\"X-B\",\"credential\":\"zz\"}]}"),
            "zz", "an unknown credential in customHeaders");
}

static void test_refuse_policy(void)
{
    refused(B("{\"hosts\":[\"nope.example.org\"]}", BEARER), "explicit allow",
            "a host no allow rule names");
    refused(B("{\"hosts\":[\"denied.example.com\"]}", BEARER), "explicit allow",
            "a host an earlier deny rule covers");
    refused(B("{\"hosts\":[\"example.com\"]}", BEARER), "explicit allow",
            "the apex is not covered by \"*.example.com\"");
    refused(B("{\"hosts\":[\"*.other.org\"]}", BEARER), "explicit allow",
            "a wildcard only an exact rule names is not covered");
    struct osb_err err;
    struct osb_vault *v = create(B("{\"hosts\":[\"*.a.example.com\"]}", BEARER), &err);
    OK(v != NULL, "a narrower wildcard is covered by \"*.example.com\"");
    osb_vault_unref(v);
    v = create(B("{\"hosts\":[\"x.other.org\"]}", BEARER), &err);
    OK(!v, "a subdomain of an exact rule is not covered");
    v = create_with(B(HOST, BEARER), NULL, &err);
    OK(!v && strstr(err.msg, "explicit networkPolicy.egress"), "bindings without a policy");
    struct osb_policy allow;
    osb_policy_init(&allow, OSB_POLICY_ALLOW);
    v = create_with(B(HOST, BEARER), &allow, &err);
    OK(!v && strstr(err.msg, "explicit networkPolicy.egress"),
       "default allow without rules is not an explicit allow (upstream)");
    osb_policy_free(&allow);
}

#define TWO(m1, m2) \
    "{\"credentials\":[" CRED("c", "v") "],\"bindings\":[{\"name\":\"a\",\"match\":" m1 \
                                        ",\"auth\":" BEARER "},{\"name\":\"b\",\"match\":" m2 \
                                        ",\"auth\":" BEARER "}]}"

static void test_ambiguity(void)
{
    refused(TWO(HOST, "{\"hosts\":[\"api.example.com\"],\"paths\":[\"/v1/*\"]}"),
            "bindings \"a\" and \"b\" can match the same request", "same host, nested paths");
    refused(TWO("{\"hosts\":[\"*.example.com\"]}", "{\"hosts\":[\"*.a.example.com\"]}"),
            "same request", "nested wildcards");
    refused(TWO("{\"hosts\":[\"api.example.com\"],\"paths\":[\"/x\"]}",
                "{\"hosts\":[\"api.example.com\"],\"paths\":[\"/*\"]}"),
            "same request", "an exact path inside a prefix");
    static const char *const fine[][3] = {
        {HOST, "{\"hosts\":[\"*.example.com\"]}", "an exact host and a wildcard (precedence)"},
        {HOST, "{\"hosts\":[\"api.example.com\"],\"methods\":[\"HEAD\"]}", "disjoint methods"},
        {"{\"hosts\":[\"api.example.com\"],\"paths\":[\"/a/*\"]}",
         "{\"hosts\":[\"api.example.com\"],\"paths\":[\"/b/*\"]}", "disjoint path prefixes"},
        {HOST, "{\"hosts\":[\"api.example.com\"],\"ports\":[80]}", "disjoint ports"},
        {HOST, "{\"hosts\":[\"api.example.com\"],\"schemes\":[\"http\"]}", "disjoint schemes"},
        {"{\"hosts\":[\"*.a.example.com\"]}", "{\"hosts\":[\"*.b.example.com\"]}",
         "sibling wildcards"},
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        char body[1024];
        struct osb_err err;
        snprintf(body, sizeof body,
                 "{\"credentials\":[" CRED(
                     "c", "v") "],\"bindings\":[{\"name\":\"a\",\"match\":%s"
                               ",\"auth\":" BEARER "},{\"name\":\"b\",\"match\":%s,\"auth\":" BEARER
                               "}]}",
                 fine[i][0], fine[i][1]);
        struct osb_vault *v = create(body, &err);
        OK(v != NULL, fine[i][2]);
        if (!v)
            printf("# %s\n", err.msg);
        osb_vault_unref(v);
    }
}

/* ------------------------------------------------------------ matching */

static const char *matched(const struct osb_vault *v, const char *scheme, const char *host,
                           int port, const char *method, const char *path)
{
    const struct osb_vault_binding *b = NULL;
    int r = osb_vault_match(v, scheme, host, port, method, path, &b);
    return r == 1 ? osb_vault_binding_name(b) : r == 2 ? "(ambiguous)" : "(none)";
}

static void test_match(void)
{
    struct osb_err err;
    struct osb_vault *v = create(GOOD, &err);
    if (!v)
        return;
    IS_STR(matched(v, "https", "api.example.com", 443, "POST", "/v1/messages"), "api",
           "exact host and a path prefix: the exact binding wins over the wildcard");
    IS_STR(matched(v, "https", "api.example.com", 443, "GET", "/other"), "wild",
           "outside its paths, the wildcard (GET) matches");
    IS_STR(matched(v, "https", "api.example.com", 443, "POST", "/other"), "(none)",
           "neither: POST is not the wildcard's method");
    IS_STR(matched(v, "https", "API.Example.COM.", 443, "post", "/v1/x"), "api",
           "host case and trailing dot, method case ignored");
    IS_STR(matched(v, "HTTPS", "api.example.com", 443, "POST", "/v1/x?q=/exact"), "api",
           "scheme case ignored; a query string is no part of the path");
    IS_STR(matched(v, "https", "api.example.com", 443, "POST", "/exact?x=1"), "api",
           "an exact path with a query string");
    IS_STR(matched(v, "https", "api.example.com", 443, "POST", "/exact/more"), "(none)",
           "an exact path does not cover longer ones");
    IS_STR(matched(v, "https", "api.example.com", 443, "POST", "/v1"), "(none)",
           "\"/v1/\" + '*' does not cover \"/v1\"");
    IS_STR(matched(v, "https", "example.com", 443, "GET", "/"), "(none)",
           "the wildcard does not cover the apex");
    IS_STR(matched(v, "https", "a.b.example.com", 443, "GET", ""), "wild",
           "the wildcard covers a deep subdomain; an empty path is /");
    IS_STR(matched(v, "https", "xexample.com", 443, "GET", "/"), "(none)",
           "a suffix that is not a subdomain");
    IS_STR(matched(v, "https", "api.example.com", 80, "POST", "/v1/x"), "(none)",
           "another port: none");
    IS_STR(matched(v, "http", "api.example.com", 443, "POST", "/v1/x"), "(none)",
           "another scheme: none");
    OK(osb_vault_host_bound(v, "a.b.example.com", 443), "host_bound: a deep subdomain");
    OK(osb_vault_host_bound(v, "API.EXAMPLE.COM.", 443), "host_bound: any case, trailing dot");
    OK(!osb_vault_host_bound(v, "example.com", 443), "host_bound: not the apex");
    OK(!osb_vault_host_bound(v, "api.example.com", 80), "host_bound: not another port");
    OK(!osb_vault_host_bound(v, "example.org", 443), "host_bound: another domain");
    OK(!osb_vault_host_bound(v, "", 443), "host_bound: no name");
    osb_vault_unref(v);

    /* Validation keeps ambiguous vaults from being made; a stored one that
     * is ambiguous (an older server's) still must not pick one. */
    const char *amb =
        "{\"revision\":3,\"credentials\":[{\"name\":\"c\",\"value\":\"v4lue\",\"revision\":1}],"
        "\"bindings\":[{\"name\":\"a\",\"match\":{\"hosts\":[\"*.example.com\"]},\"auth\":" BEARER
        "},{\"name\":\"b\",\"match\":{\"hosts\":[\"*.api.example.com\"]},\"auth\":" BEARER "}]}";
    OK(osb_vault_load(amb, strlen(amb), &v, &err) == 0, "load does not judge ambiguity");
    if (v) {
        const struct osb_vault_binding *b = (void *)1;
        IS_INT(osb_vault_match(v, "https", "x.api.example.com", 443, "GET", "/", &b), 2,
               "two wildcards at one precedence: ambiguous (2)");
        OK(b == NULL, "  and no binding is handed out");
        IS_STR(matched(v, "https", "x.example.com", 443, "GET", "/"), "a",
               "  where only one covers the host, it matches");
        osb_vault_unref(v);
    }
}

/* ------------------------------------------------------------ rendering */

static void test_render(void)
{
    struct osb_err err;
    struct osb_vault *v = create(
        "{\"credentials\":[" CRED("t", "tok-1") "," CRED("u", "dXNlcjpwdw==") "," CRED("k", "key-2") "," CRED(
            "x",
            "x-3") "],\"bindings\":["
                   "{\"name\":\"be\",\"match\":{\"hosts\":[\"a.example.com\"]},\"auth\":{\"type\":\"bearer\","
                   "\"credential\":\"t\"}},"
                   "{\"name\":\"ba\",\"match\":{\"hosts\":[\"b.example.com\"]},\"auth\":{\"type\":\"basic\","
                   "\"credential\":\"u\"}},"
                   "{\"name\":\"ak\",\"match\":{\"hosts\":[\"c.example.com\"]},\"auth\":{\"type\":"
                   "\"apiKey\",\"name\":\"x-api-key\",\"credential\":\"k\"}},"
                   "{\"name\":\"ch\",\"match\":{\"hosts\":[\"d.example.com\"]},\"auth\":{\"type\":"
                   "\"customHeaders\",\"headers\":[{\"name\":\"x-one\",\"credential\":\"k\"},{\"name\":"
                   "\"X-TWO\",\"credential\":\"x\"}]}}]}",
        &err);
    OK(v != NULL, "a vault with the four auth types");
    if (!v) {
        printf("# %s\n", err.msg);
        return;
    }
    static const char *const want[][5] = {
        {"a.example.com", "Authorization", "Bearer tok-1", NULL, NULL},
        {"b.example.com", "Authorization", "Basic dXNlcjpwdw==", NULL, NULL},
        {"c.example.com", "X-Api-Key", "key-2", NULL, NULL},
        {"d.example.com", "X-One", "key-2", "X-Two", "x-3"},
    };
    static const char *const what[] = {"bearer", "basic", "apiKey", "customHeaders"};
    for (size_t i = 0; i < 4; i++) {
        const struct osb_vault_binding *b = NULL;
        struct osb_vault_header h[4];
        size_t n = 99;
        osb_vault_match(v, "https", want[i][0], 443, "GET", "/", &b);
        OK(b && osb_vault_render(v, b, h, 4, &n) == 0, what[i]);
        size_t wn = want[i][3] ? 2 : 1;
        IS_INT(n, wn, "  header count");
        for (size_t k = 0; k < wn && k < n; k++) {
            IS_STR(h[k].name, want[i][1 + 2 * k], "  name");
            IS_STR(h[k].value, want[i][2 + 2 * k], "  value");
        }
        if (i == 3)
            OK(osb_vault_render(v, b, h, 1, &n) < 0, "  too small an array: -1");
    }
    static const char *const secrets[] = {
        "tok-1", "Bearer tok-1", "dXNlcjpwdw==", "Basic dXNlcjpwdw==", "key-2", "x-3"};
    for (size_t i = 0; i < 6; i++) {
        bool found = false;
        for (size_t k = 0; k < osb_vault_nsecrets(v); k++)
            found |= strcmp(osb_vault_secret(v, k), secrets[i]) == 0;
        OK(found, secrets[i]);
    }
    OK(osb_vault_secret(v, osb_vault_nsecrets(v)) == NULL, "past the secrets: NULL");

    json_t *outs[] = {osb_vault_state_json(v),           osb_vault_credentials_json(v),
                      osb_vault_bindings_json(v),        osb_vault_credential_json(v, "t"),
                      osb_vault_credential_json(v, "u"), osb_vault_binding_json(v, "ch"),
                      osb_vault_binding_json(v, "ak")};
    bool clean = true;
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        char *s = text_of(outs[i]);
        for (size_t k = 0; s && k < 6; k++)
            clean &= strstr(s, secrets[k]) == NULL;
        free(s);
    }
    OK(clean, "no sanitized output holds a value or a rendered header");

    char *dump = osb_vault_dump(v);
    struct osb_vault *w = NULL;
    OK(osb_vault_load(dump, strlen(dump), &w, &err) == 0, "dump/load round trip");
    osb_vault_dump_free(dump);
    if (w) {
        char *a = text_of(osb_vault_state_json(v)), *c = text_of(osb_vault_state_json(w));
        IS_STR(c, a, "  the same state");
        free(a);
        free(c);
        IS_INT(osb_vault_nsecrets(w), osb_vault_nsecrets(v), "  the same secrets");
        const struct osb_vault_binding *b = NULL;
        struct osb_vault_header h[4];
        size_t n = 0;
        osb_vault_match(w, "https", "d.example.com", 443, "GET", "/", &b);
        OK(b && osb_vault_render(w, b, h, 4, &n) == 0 && n == 2 && !strcmp(h[1].value, "x-3"),
           "  the same headers");
        osb_vault_unref(w);
    }
    osb_vault_ref(v);
    osb_vault_unref(v);
    OK(osb_vault_revision(v) == 1, "ref then unref keeps it alive");
    osb_vault_unref(v);
}

static void test_load_refusals(void)
{
    static const char *const bad[] = {
        "",
        "[]",
        "{\"revision\":0,\"credentials\":[],\"bindings\":[]}",
        "{\"revision\":1,\"credentials\":{},\"bindings\":[]}",
        "{\"revision\":1,\"credentials\":[],\"bindings\":{}}",
        "{\"revision\":1,\"credentials\":[{\"name\":\"c\",\"value\":\"\",\"revision\":1}],"
        "\"bindings\":[]}",
        "{\"revision\":1,\"credentials\":[{\"name\":\"c\",\"value\":\"a\\nb\",\"revision\":1}],"
        "\"bindings\":[]}",
        "{\"revision\":1,\"credentials\":[{\"name\":\"c\",\"value\":\"v\",\"revision\":1},"
        "{\"name\":\"c\",\"value\":\"w\",\"revision\":1}],\"bindings\":[]}",
        "{\"revision\":1,\"credentials\":[],\"bindings\":[{\"name\":\"b\",\"match\":" HOST
        ",\"auth\":" BEARER "}]}",
        "{\"revision\":1,\"revision\":2,\"credentials\":[],\"bindings\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct osb_vault *v = (void *)1;
        struct osb_err err = {0};
        char what[64];
        snprintf(what, sizeof what, "load refuses bad stored vault #%zu", i);
        OK(osb_vault_load(bad[i], strlen(bad[i]), &v, &err) < 0 && !v && err.code == OSB_E_INVALID,
           what);
    }
}

/* ------------------------------------------------------------ PATCH */

/* A failed patch: the code, a word of the message, and cur untouched. */
static void patch_fails(struct osb_vault *cur, const char *body, enum osb_errc code,
                        const char *word, const char *what)
{
    struct osb_err err;
    char *before = text_of(osb_vault_state_json(cur));
    struct osb_vault *w = patch(cur, body, &err);
    OK(!w && err.code == code, what);
    if (!strstr(err.msg, word))
        printf("# message: %s (want '%s')\n", err.msg, word);
    OK(strstr(err.msg, word) != NULL, "  the message says why");
    char *after = text_of(osb_vault_state_json(cur));
    IS_STR(after, before, "  the vault is unchanged");
    free(before);
    free(after);
    osb_vault_unref(w);
}

static void test_patch_refusals(struct osb_vault *v)
{
    patch_fails(v, "{\"expectedRevision\":5}", OSB_E_EXISTS,
                "expectedRevision 5 does not match current revision 1",
                "a stale expectedRevision: OSB_E_EXISTS (409)");
    patch_fails(v, "{\"expectedRevision\":\"1\"}", OSB_E_INVALID, "expectedRevision",
                "expectedRevision not an integer");
    patch_fails(v, "{\"x\":1}", OSB_E_INVALID, "'x'", "an unknown top-level field");
    patch_fails(v, "{\"credentials\":{\"upsert\":[]}}", OSB_E_INVALID, "'upsert'",
                "an unknown operation");
    patch_fails(v, "{\"credentials\":[]}", OSB_E_INVALID, "credentials must be an object",
                "a mutation set that is not an object");
    patch_fails(v, "[]", OSB_E_INVALID, "object", "a body that is not an object");
    patch_fails(v, "{\"credentials\":{\"add\":[" CRED("new", "n") "," CRED("tok", "x") "]}}",
                OSB_E_INVALID, "credentials.add[1]: credential \"tok\" already exists",
                "add of an existing name: 400 (upstream)");
    patch_fails(v, "{\"credentials\":{\"add\":[" CRED("new", "n") "," CRED("new", "x") "]}}",
                OSB_E_INVALID, "duplicate credential add name \"new\"", "one name added twice");
    patch_fails(v, "{\"credentials\":{\"replace\":[" CRED("nope", "n") "]}}", OSB_E_INVALID,
                "credential \"nope\" does not exist", "replace of a missing one: 400 (upstream)");
    patch_fails(v, "{\"credentials\":{\"delete\":[\"nope\"]}}", OSB_E_INVALID,
                "credential \"nope\" does not exist", "delete of a missing one: 400 (upstream)");
    patch_fails(v, "{\"credentials\":{\"delete\":[\" \"]}}", OSB_E_INVALID,
                "delete name cannot be blank", "a blank delete name");
    patch_fails(v, "{\"credentials\":{\"delete\":[7]}}", OSB_E_INVALID, "delete[0]",
                "a delete name that is not a string");
    patch_fails(v, "{\"credentials\":{\"delete\":[\"key\"],\"add\":[" CRED("key", "n") "]}}",
                OSB_E_INVALID, "mentioned by multiple operations", "one name in two operations");
    patch_fails(v, "{\"credentials\":{\"replace\":[" CRED("key", "n") "," CRED("key", "m") "]}}",
                OSB_E_INVALID, "mentioned by multiple operations", "one name replaced twice");
    patch_fails(v, "{\"credentials\":{\"delete\":[\"tok\"]}}", OSB_E_INVALID,
                "binding \"api\" references unknown credential \"tok\"",
                "deleting a bound credential: the result is validated as a whole");
    patch_fails(v, "{\"bindings\":{\"delete\":[\"nope\"]}}", OSB_E_INVALID,
                "binding \"nope\" does not exist", "deleting a missing binding");
    patch_fails(v,
                "{\"bindings\":{\"add\":[{\"name\":\"api\",\"match\":" HOST
                ",\"auth\":{\"type\":\"bearer\",\"credential\":\"tok\"}}]}}",
                OSB_E_INVALID, "binding \"api\" already exists", "adding an existing binding");
    patch_fails(v,
                "{\"bindings\":{\"add\":[{\"name\":\"api2\",\"match\":{\"hosts\":["
                "\"api.example.com\"],\"paths\":[\"/v1/x\"]},\"auth\":{\"type\":\"bearer\","
                "\"credential\":\"tok\"}}]}}",
                OSB_E_INVALID, "same request", "adding a binding that makes an ambiguity");
    patch_fails(v,
                "{\"bindings\":{\"replace\":[{\"name\":\"api\",\"match\":{\"hosts\":["
                "\"nope.example.org\"]},\"auth\":{\"type\":\"bearer\",\"credential\":\"tok\"}}]}}",
                OSB_E_INVALID, "explicit allow", "replacing a binding with an uncovered host");
    patch_fails(
        v,
        "{\"credentials\":{\"add\":[" CRED(
            "ok", "fine") "]},\"bindings\":{\"add\":[{"
                          "\"name\":\"x\",\"match\":{\"hosts\":[\"x.example.com\"],\"ports\":[22]},"
                          "\"auth\":{\"type\":\"bearer\",\"credential\":\"ok\"}}]}}",
        OSB_E_INVALID, "bindings.add[0].match.ports[0]",
        "a good credential with a bad binding: nothing applied");
}

static void test_patch(void)
{
    struct osb_err err;
    struct osb_vault *v = create(GOOD, &err), *w;
    if (!v)
        return;
    test_patch_refusals(v);
    w = patch(
        v,
        "{\"expectedRevision\":1,\"credentials\":{\"replace\":[" CRED(
            "tok", "n3w-value") "],\"add\":[" CRED("more",
                                                   "m0re") "]},"
                                                           "\"bindings\":{\"delete\":[\"wild\"]}}",
        &err);
    OK(w != NULL, "replace a value, add one, delete a binding");
    if (!w) {
        printf("# %s\n", err.msg);
        osb_vault_unref(v);
        return;
    }
    IS_INT(osb_vault_revision(w), 2, "  revision 2");
    IS_INT(osb_vault_revision(v), 1, "  the old vault keeps revision 1");
    IS_JSON(osb_vault_credentials_json(w),
            "{\"revision\":2,\"credentials\":[{\"name\":\"key\",\"sourceType\":\"inline\","
            "\"revision\":1},{\"name\":\"more\",\"sourceType\":\"inline\",\"revision\":2},"
            "{\"name\":\"tok\",\"sourceType\":\"inline\",\"revision\":2}]}",
            "  replaced and added credentials get the new revision, the other keeps its own");
    json_t *b = osb_vault_binding_json(w, "api");
    IS_INT(json_integer_value(json_object_get(b, "revision")), 2,
           "  a binding shows the vault's revision (upstream)");
    json_decref(b);
    OK(osb_vault_binding_json(w, "wild") == NULL, "  the binding is gone");
    const struct osb_vault_binding *mb;
    struct osb_vault_header h[2];
    size_t n;
    osb_vault_match(w, "https", "api.example.com", 443, "GET", "/v1/x", &mb);
    OK(mb && osb_vault_render(w, mb, h, 2, &n) == 0 && !strcmp(h[0].value, "Bearer n3w-value"),
       "  the new value is injected");
    osb_vault_match(v, "https", "api.example.com", 443, "GET", "/v1/x", &mb);
    OK(mb && osb_vault_render(v, mb, h, 2, &n) == 0 && !strcmp(h[0].value, "Bearer s3cret"),
       "  the old vault still injects the old value");

    struct osb_vault *x = patch(w, "{}", &err);
    OK(x && osb_vault_revision(x) == 3, "an empty patch still makes a revision (upstream)");
    osb_vault_unref(x);
    x = patch(w, "null", &err);
    OK(x && osb_vault_revision(x) == 3, "a null body too");
    osb_vault_unref(x);
    x = patch(w,
              "{\"bindings\":{\"delete\":[\"api\"]},\"credentials\":{\"delete\":[\"tok\","
              "\"key\",\"more\"]}}",
              &err);
    OK(x != NULL, "deleting a binding and its credential together (upstream's test)");
    if (x)
        IS_JSON(osb_vault_state_json(x), "{\"revision\":3,\"credentials\":[],\"bindings\":[]}",
                "  an empty vault at revision 3");
    osb_vault_unref(x);
    x = patch(w,
              "{\"bindings\":{\"replace\":[{\"name\":\"api\",\"match\":{\"hosts\":["
              "\"api.example.com\"],\"methods\":[\"put\"]},\"auth\":{\"type\":\"basic\","
              "\"credential\":\"more\"}}]}}",
              &err);
    OK(x != NULL, "replacing a binding");
    IS_STR(x ? matched(x, "https", "api.example.com", 443, "PUT", "/any") : NULL, "api",
           "  its new match applies");
    IS_STR(x ? matched(x, "https", "api.example.com", 443, "GET", "/v1/x") : NULL, "(none)",
           "  and its old one no longer");
    osb_vault_unref(x);

    struct osb_policy narrow;
    json_t *pj = J("{\"defaultAction\":\"deny\",\"egress\":[{\"action\":\"allow\","
                   "\"target\":\"other.example.org\"}]}");
    OK(osb_policy_parse(pj, &narrow, &err) == 0, "a policy without the bound host");
    json_decref(pj);
    OK(osb_vault_check_policy(w, &narrow, &err) < 0 && strstr(err.msg, "api.example.com"),
       "check_policy: the new policy would strand a binding");
    OK(osb_vault_check_policy(w, &pol, &err) == 0, "check_policy: the current one holds");
    osb_policy_free(&narrow);
    osb_vault_unref(w);
    osb_vault_unref(v);
}

static void test_patch_limits(void)
{
    struct osb_err err;
    struct osb_vault *v = create("{}", &err);
    size_t cap = (OSB_VAULT_MAX_ITEMS + 1) * 64 + 64, o = 0;
    char *body = malloc(cap);
    o += (size_t)snprintf(body, cap, "{\"credentials\":{\"add\":[");
    for (int i = 0; i < OSB_VAULT_MAX_ITEMS; i++)
        o += (size_t)snprintf(body + o, cap - o, "%s" CRED("c%d", "v"), i ? "," : "", i);
    snprintf(body + o, cap - o, "]}}");
    struct osb_vault *w = v ? patch(v, body, &err) : NULL;
    OK(w != NULL, "OSB_VAULT_MAX_ITEMS credentials by PATCH");
    struct osb_vault *x =
        w ? patch(w, "{\"credentials\":{\"add\":[" CRED("one", "more") "]}}", &err) : NULL;
    OK(w && !x && strstr(err.msg, "more than"), "one more is refused");
    osb_vault_unref(x);
    osb_vault_unref(w);
    osb_vault_unref(v);
    free(body);
}

int main(void)
{
    json_t *p = J("{\"defaultAction\":\"deny\",\"egress\":["
                  "{\"action\":\"deny\",\"target\":\"denied.example.com\"},"
                  "{\"action\":\"allow\",\"target\":\"api.example.com\"},"
                  "{\"action\":\"allow\",\"target\":\"*.example.com\"},"
                  "{\"action\":\"allow\",\"target\":\"other.org\"}]}");
    struct osb_err err = {0};
    if (osb_policy_parse(p, &pol, &err) < 0) {
        printf("# policy: %s\n", err.msg);
        abort();
    }
    json_decref(p);
    test_defaults();
    test_good();
    test_refuse_shape();
    test_refuse_credentials();
    test_refuse_hosts();
    test_refuse_match();
    test_refuse_auth();
    test_refuse_policy();
    test_ambiguity();
    test_match();
    test_render();
    test_load_refusals();
    test_patch();
    test_patch_limits();
    osb_policy_free(&pol);
    return tap_done();
}
