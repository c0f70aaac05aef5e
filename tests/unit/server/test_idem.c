/* src/server/idem.c, the pure parts: which keys are valid, and the body
 * fingerprint (the same request in any key order, with or without
 * extensions.requestId, has one fingerprint; any other change gives
 * another). */
#include <jansson.h>
#include <string.h>

#include "server/apierr.h"
#include "server/idem.h"
#include "tap.h"

static void test_keys(void)
{
    char k[300];
    OK(osb_idem_key_ok("a"), "one character");
    OK(osb_idem_key_ok("retry 1: job/42~ok"), "printable ASCII with a space");
    memset(k, 'k', 255);
    k[255] = '\0';
    OK(osb_idem_key_ok(k), "255 characters");
    k[255] = 'k';
    k[256] = '\0';
    OK(!osb_idem_key_ok(k), "256 characters");
    OK(!osb_idem_key_ok(""), "empty");
    OK(!osb_idem_key_ok("a\tb"), "a tab");
    OK(!osb_idem_key_ok("a\x7f"), "DEL");
    OK(!osb_idem_key_ok("caf\xc3\xa9"), "not ASCII");
}

static void fp(const char *json, char hex[41])
{
    json_t *j = json_loads(json, 0, NULL);
    osb_idem_fingerprint(j, hex);
    json_decref(j);
}

static void test_fingerprint(void)
{
    char a[41], b[41], c[41], d[41], e[41];
    fp("{\"image\":{\"uri\":\"host\"},\"timeout\":60}", a);
    fp("{\"timeout\":60,\"image\":{\"uri\":\"host\"}}", b);
    fp("{\"timeout\":60,\"image\":{\"uri\":\"host\"},\"extensions\":{\"requestId\":\"k\"}}", c);
    fp("{\"timeout\":61,\"image\":{\"uri\":\"host\"}}", d);
    fp("{\"timeout\":60,\"image\":{\"uri\":\"host\"},\"extensions\":{\"requestId\":\"k\","
       "\"runtime\":\"gvisor\"}}",
       e);
    IS_INT((int)strlen(a), 40, "40 hex digits");
    IS_STR(a, b, "key order does not matter");
    IS_STR(a, c, "extensions.requestId is not part of the request");
    OK(strcmp(a, d) != 0, "another value: another fingerprint");
    OK(strcmp(a, e) != 0, "another extension: another fingerprint");
}

int main(void)
{
    test_keys();
    test_fingerprint();
    return tap_done();
}
