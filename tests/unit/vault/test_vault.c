/* The vault model: upstream's validation rules, defaults, PATCH atomicity
 * and revisions, matching and precedence, rendering, sanitized output, and
 * the dump/load round trip. */
#include <stdlib.h>
#include <string.h>

#include "net/policy.h"
#include "tap.h"
#include "vault/vault.h"

static struct osb_policy pol;

static json_t *J(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        printf("# bad test JSON: %s: %s\n", je.text, text);
    return j;
}

static struct osb_vault *create(const char *body, struct osb_err *err)
{
    json_t *j = J(body);
    struct osb_vault *v = NULL;
    memset(err, 0, sizeof *err);
    if (osb_vault_create(j, &pol, &v, err) < 0)
        v = NULL;
    json_decref(j);
    return v;
}

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
#define GOOD \
    "{\"credentials\":[" CRED("tok", "s3cret") "," CRED( \
        "key", \
        "k3y") "]," \
               "\"bindings\":[{\"name\":\"api\",\"match\":{\"hosts\":[\"API.Example.com.\"]," \
               "\"paths\":[\"/v1/*\"]},\"auth\":{\"type\":\"bearer\",\"credential\":\"tok\"}}," \
               "{\"name\":\"wild\",\"match\":{\"hosts\":[\"*.example.com\"],\"methods\":[\"get\"]}," \
               "\"auth\":{\"type\":\"apiKey\",\"name\":\"x-api-key\",\"credential\":\"key\"}}]}"

static void test_create(void)
{
    struct osb_err err;
    struct osb_vault *v = create(GOOD, &err);
    OK(v != NULL, "a good body makes a vault");
    if (!v) {
        printf("# %s\n", err.msg);
        return;
    }
    IS_INT(osb_vault_revision(v), 1, "revision 1");
    json_t *st = osb_vault_state_json(v);
    char *text = json_dumps(st, JSON_SORT_KEYS);
    OK(!strstr(text, "s3cret") && !strstr(text, "k3y"), "the state holds no value");
    OK(strstr(text, "\"api.example.com\"") != NULL, "hosts lower-cased, trailing dot gone");
    OK(strstr(text, "\"X-Api-Key\"") != NULL, "header names canonical");
    OK(strstr(text, "[\"GET\"]") != NULL, "methods upper-cased");
    OK(strstr(text, "\"ports\": [443]") != NULL, "default port 443");
    free(text);
    json_decref(st);

    const struct osb_vault_binding *b;
    IS_INT(osb_vault_match(v, "https", "api.example.com", 443, "POST", "/v1/messages", &b), 1,
           "exact host, path prefix: one binding");
    IS_STR(osb_vault_binding_name(b), "api", "  the exact host wins over the wildcard");
    IS_INT(osb_vault_match(v, "https", "api.example.com", 443, "GET", "/other", &b), 1,
           "outside api's paths, the wildcard (GET) matches");
    IS_STR(osb_vault_binding_name(b), "wild", "  it is the wildcard");
    IS_INT(osb_vault_match(v, "https", "example.com", 443, "GET", "/", &b), 0,
           "the wildcard does not cover the apex");
    IS_INT(osb_vault_match(v, "https", "api.example.com", 80, "POST", "/v1/x", &b), 0,
           "another port: none");
    IS_INT(osb_vault_match(v, "http", "api.example.com", 443, "POST", "/v1/x", &b), 0,
           "another scheme: none");
    IS_INT(osb_vault_match(v, "https", "api.example.com", 443, "POST", "/v1", &b), 0,
           "\"/v1/*\" does not cover \"/v1\"");
    OK(osb_vault_host_bound(v, "a.b.example.com", 443), "host_bound: a deep subdomain");
    OK(!osb_vault_host_bound(v, "example.org", 443), "host_bound: another domain");

    IS_INT(osb_vault_match(v, "https", "api.example.com", 443, "POST", "/v1/x", &b), 1, "render");
    struct osb_vault_header h[4];
    size_t n = 0;
    OK(osb_vault_render(v, b, h, 4, &n) == 0 && n == 1, "bearer renders one header");
    IS_STR(h[0].name, "Authorization", "  Authorization");
    IS_STR(h[0].value, "Bearer s3cret", "  Bearer <value>");
    int found = 0;
    for (size_t i = 0; i < osb_vault_nsecrets(v); i++)
        found += !strcmp(osb_vault_secret(v, i), "s3cret") +
                 !strcmp(osb_vault_secret(v, i), "Bearer s3cret");
    IS_INT(found, 2, "the value and the rendered header are both secrets to redact");

    char *dump = osb_vault_dump(v);
    struct osb_vault *w = NULL;
    OK(osb_vault_load(dump, strlen(dump), &w, &err) == 0, "dump/load round trip");
    osb_vault_dump_free(dump);
    if (w) {
        json_t *a = osb_vault_state_json(v), *c = osb_vault_state_json(w);
        OK(json_equal(a, c), "  the same state");
        json_decref(a);
        json_decref(c);
        osb_vault_unref(w);
    }
    osb_vault_unref(v);
}

static void test_refusals(void)
{
    refused("[]", "object", "a body that is not an object");
    refused("{\"credentials\":[],\"bindings\":[],\"x\":1}", "'x'", "an unknown field");
    refused("{\"credentials\":[" CRED("a", "") "]}", "empty", "an empty value");
    refused("{\"credentials\":[" CRED(" ", "v") "]}", "blank", "a blank name");
    refused("{\"credentials\":[" CRED("a", "v") "," CRED("a", "w") "]}", "exists",
            "duplicate names");
    refused("{\"credentials\":[{\"name\":\"a\",\"source\":{\"type\":\"vault\",\"value\":\"v\"}}]}",
            "vault", "a source type other than inline");
#define B(match, auth) \
    "{\"credentials\":[" CRED("c", "v") "],\"bindings\":[{\"name\":\"b\",\"match\":" match \
                                        ",\"auth\":" auth "}]}"
#define BEARER "{\"type\":\"bearer\",\"credential\":\"c\"}"
    refused(B("{\"hosts\":[\"nope.example.org\"]}", BEARER), "explicit allow",
            "a host no allow rule names");
    refused(B("{\"hosts\":[\"denied.example.com\"]}", BEARER), "explicit allow",
            "a host an earlier deny rule covers");
    refused(B("{\"hosts\":[\"10.0.0.1\"]}", BEARER), "IP address", "an IP literal");
    refused(B("{\"hosts\":[\"*.10.0.0.1\"]}", BEARER), "FQDN", "a wildcard over an IP");
    refused(B("{\"hosts\":[\"a*.example.com\"]}", BEARER), "wildcard", "a bad wildcard");
    refused(B("{\"hosts\":[\"https://api.example.com\"]}", BEARER), "scheme", "a URL as host");
    refused(B("{\"hosts\":[]}", BEARER), "hosts", "no hosts");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[8443]}", BEARER), "8443",
            "a port other than 80/443");
    refused(B("{\"hosts\":[\"api.example.com\"],\"ports\":[\"443\"]}", BEARER), "port",
            "a port as a string");
    refused(B("{\"hosts\":[\"api.example.com\"],\"schemes\":[\"ftp\"]}", BEARER), "ftp",
            "scheme ftp");
    refused(B("{\"hosts\":[\"api.example.com\"],\"paths\":[\"v1\"]}", BEARER), "/",
            "a path without /");
    refused(B("{\"hosts\":[\"api.example.com\"]}", "{\"type\":\"bearer\",\"credential\":\"zz\"}"),
            "zz", "an unknown credential");
    refused(B("{\"hosts\":[\"api.example.com\"]}",
              "{\"type\":\"apiKey\",\"name\":\"Content-Length\",\"credential\":\"c\"}"),
            "reserved", "a reserved header");
    refused(B("{\"hosts\":[\"api.example.com\"]}",
              "{\"type\":\"apiKey\",\"name\":\"a:b\",\"credential\":\"c\"}"),
            "invalid", "a header name that is not a token");
    refused(B("{\"hosts\":[\"api.example.com\"]}", "{\"type\":\"customHeaders\",\"headers\":[]}"),
            "requires headers", "customHeaders without headers");
    refused(B("{\"hosts\":[\"api.example.com\"]}", "{\"type\":\"oauth\",\"credential\":\"c\"}"),
            "oauth", "an unknown auth type");
    refused(
        "{\"credentials\":[" CRED(
            "c",
            "v") "],\"bindings\":["
                 "{\"name\":\"a\",\"match\":{\"hosts\":[\"api.example.com\"]},\"auth\":" BEARER "},"
                 "{\"name\":\"b\",\"match\":{\"hosts\":[\"api.example.com\"],\"paths\":[\"/v1/*\"]},"
                 "\"auth\":" BEARER "}]}",
        "same request", "two bindings that can match one request");
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

static void test_patch(void)
{
    struct osb_err err;
    struct osb_vault *v = create(GOOD, &err), *w;
    if (!v)
        return;
    w = patch(v, "{\"expectedRevision\":5}", &err);
    OK(!w && err.code == OSB_E_EXISTS, "a stale expectedRevision: OSB_E_EXISTS (409)");
    w = patch(v, "{\"credentials\":{\"add\":[" CRED("new", "n") "," CRED("tok", "x") "]}}", &err);
    OK(!w && err.code == OSB_E_INVALID, "adding an existing name fails");
    w = patch(v, "{\"credentials\":{\"delete\":[\"tok\"]}}", &err);
    OK(!w && strstr(err.msg, "unknown credential"), "deleting a bound credential fails");
    w = patch(v, "{\"credentials\":{\"replace\":[" CRED("nope", "n") "]}}", &err);
    OK(!w && strstr(err.msg, "does not exist"), "replacing a missing one fails");
    w = patch(v, "{\"credentials\":{\"delete\":[\"key\"],\"add\":[" CRED("key", "n") "]}}", &err);
    OK(!w && strstr(err.msg, "multiple operations"), "one name in two operations fails");
    IS_INT(osb_vault_revision(v), 1, "the vault is unchanged by failed patches");
    w = patch(v,
              "{\"expectedRevision\":1,\"credentials\":{\"replace\":[" CRED(
                  "tok", "n3w") "]},"
                                "\"bindings\":{\"delete\":[\"wild\"]}}",
              &err);
    OK(w != NULL, "replace a value, delete a binding");
    if (w) {
        IS_INT(osb_vault_revision(w), 2, "  revision 2");
        json_t *c = osb_vault_credential_json(w, "tok"), *k = osb_vault_credential_json(w, "key");
        IS_INT(json_integer_value(json_object_get(c, "revision")), 2,
               "  the replaced credential has the new revision");
        IS_INT(json_integer_value(json_object_get(k, "revision")), 1, "  the other keeps its own");
        json_decref(c);
        json_decref(k);
        OK(osb_vault_binding_json(w, "wild") == NULL, "  the binding is gone");
        const struct osb_vault_binding *b;
        struct osb_vault_header h[2];
        size_t n;
        osb_vault_match(w, "https", "api.example.com", 443, "GET", "/v1/x", &b);
        OK(b && osb_vault_render(w, b, h, 2, &n) == 0 && !strcmp(h[0].value, "Bearer n3w"),
           "  the new value is injected");
        osb_vault_unref(w);
    }
    osb_vault_unref(v);
}

int main(void)
{
    json_t *p = J("{\"defaultAction\":\"deny\",\"egress\":["
                  "{\"action\":\"deny\",\"target\":\"denied.example.com\"},"
                  "{\"action\":\"allow\",\"target\":\"api.example.com\"},"
                  "{\"action\":\"allow\",\"target\":\"*.example.com\"}]}");
    struct osb_err err = {0};
    if (osb_policy_parse(p, &pol, &err) < 0)
        printf("# policy: %s\n", err.msg);
    json_decref(p);
    test_create();
    test_refusals();
    test_patch();
    osb_policy_free(&pol);
    return tap_failed ? 1 : 0;
}
