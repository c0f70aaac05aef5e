/* src/common: buffers, errors, JSON helpers, time formatting. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/ctl.h"
#include "common/err.h"
#include "common/json.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "tap.h"

static void test_buf(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 10);
    OK(osb_buf_adds(&b, "hello") == 0, "add within cap");
    OK(osb_buf_addf(&b, "%d", 12345) == 0, "addf within cap");
    IS_STR(b.data, "hello12345", "content");
    OK(osb_buf_adds(&b, "x") < 0, "add past cap fails");
    IS_STR(b.data, "hello12345", "failed add leaves the buffer unchanged");
    osb_buf_consume(&b, 5);
    IS_STR(b.data, "12345", "consume");
    size_t n;
    char *s = osb_buf_steal(&b, &n);
    IS_INT(n, 5, "steal length");
    free(s);
    IS_INT(b.len, 0, "empty after steal");
    osb_buf_init(&b, SIZE_MAX);
    int rc = 0;
    for (int i = 0; i < 1000; i++)
        rc |= osb_buf_adds(&b, "0123456789");
    IS_INT(rc, 0, "unbounded buffer takes every piece");
    IS_INT(b.len, 10000, "unbounded buffer grows");
    osb_buf_free(&b);
}

static void test_err(void)
{
    struct osb_err e = {0};
    IS_INT(osb_err_set(&e, OSB_E_NOTFOUND, "no %s", "thing"), -1, "set returns -1");
    IS_INT(osb_err_http_status(&e), 404, "notfound -> 404");
    osb_err_wrap(&e, "open %d", 7);
    IS_STR(e.msg, "open 7: no thing", "wrap prepends context");
    errno = ENOENT;
    osb_err_sys(&e, "stat /x");
    IS_STR(e.msg, "stat /x: No such file or directory", "sys appends strerror");
    IS_INT(e.sys_errno, ENOENT, "sys keeps errno");
    IS_INT(osb_err_set(NULL, OSB_E_INVALID, "x"), -1, "NULL err is allowed");
}

static void test_json(void)
{
    struct osb_err e = {0};
    json_t *j = NULL;
    OK(osb_json_parse_object("  ", 2, true, &j, &e) == 0 && json_is_object(j), "empty -> {}");
    json_decref(j);
    OK(osb_json_parse_object("[1]", 3, false, &j, &e) < 0, "array rejected");
    IS_STR(e.msg, "request body must be a JSON object", "array message");
    OK(osb_json_parse("{\"a\":", 5, false, &j, &e) < 0, "truncated JSON rejected");
    OK(strstr(e.msg, "invalid JSON"), "names the problem");
    char deep[300];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 100);
    OK(osb_json_parse(deep, 300, false, &j, &e) < 0, "deep nesting rejected");

    const char *doc = "{\"s\":\"x\",\"i\":5,\"f\":2.5,\"b\":true,\"n\":null,\"m\":{\"k\":1}}";
    OK(osb_json_parse_object(doc, strlen(doc), false, &j, &e) == 0, "getters' document parses");
    const char *s = NULL;
    int64_t i = 0;
    bool b = false;
    json_t *m = NULL;
    IS_INT(osb_json_str(j, "s", true, &s, &e), 1, "string present");
    IS_INT(osb_json_str(j, "n", false, &s, &e), 0, "null is absent");
    IS_INT(osb_json_str(j, "n", true, &s, &e), -1, "null required fails");
    IS_STR(e.msg, "field 'n' is required", "required message");
    IS_INT(osb_json_str(j, "i", true, &s, &e), -1, "int as string fails");
    IS_STR(e.msg, "field 'i' must be a string", "type message names field");
    IS_INT(osb_json_int(j, "i", true, &i, &e), 1, "int present");
    IS_INT(i, 5, "int value");
    IS_INT(osb_json_int(j, "f", true, &i, &e), -1, "fraction is not an int");
    IS_INT(osb_json_bool(j, "b", true, &b, &e), 1, "bool present");
    IS_INT(osb_json_strmap(j, "m", &m, &e), -1, "map with non-string value fails");
    IS_STR(e.msg, "field 'm.k' must be a string", "map message");
    json_t *o = NULL;
    IS_INT(osb_json_obj(j, "m", true, &o, &e), 1, "object present");
    OK(o == json_object_get(j, "m"), "object borrowed from its parent");
    o = NULL;
    IS_INT(osb_json_obj(j, "n", false, &o, &e), 0, "null object is absent");
    OK(o == NULL, "absent object leaves out alone");
    IS_INT(osb_json_obj(j, "x", true, &o, &e), -1, "missing required object fails");
    IS_STR(e.msg, "field 'x' is required", "required object message");
    IS_INT(osb_json_obj(j, "s", false, &o, &e), -1, "string as object fails");
    IS_STR(e.msg, "field 's' must be an object", "object type message names field");
    IS_INT(osb_json_array(j, "m", false, &o, &e), -1, "object as array fails");
    IS_STR(e.msg, "field 'm' must be an array", "array type message names field");
    json_t *arr = json_pack("{s:[i]}", "a", 1);
    IS_INT(osb_json_array(arr, "a", true, &o, &e), 1, "array present");
    OK(o == json_object_get(arr, "a"), "array borrowed from its parent");
    json_decref(arr);
    json_decref(j);

    j = json_pack("{s:s,s:i}", "t", "<a&b>", "n", 1);
    size_t n;
    char *out = osb_json_dump(j, &n);
    IS_STR(out, "{\"t\":\"\\u003ca\\u0026b\\u003e\",\"n\":1}", "Go-style escaping, order kept");
    IS_INT(n, strlen(out), "dump length");
    free(out);
    json_decref(j);
}

static void test_time(void)
{
    setenv("TZ", "UTC", 1);
    struct timespec ts = {.tv_sec = 1700000000, .tv_nsec = 123000000};
    char buf[64];
    osb_time_rfc3339(&ts, buf, sizeof buf);
    IS_STR(buf, "2023-11-14T22:13:20.123Z", "RFC3339Nano trims zeros");
    ts.tv_nsec = 0;
    osb_time_rfc3339(&ts, buf, sizeof buf);
    IS_STR(buf, "2023-11-14T22:13:20Z", "no fraction when zero");
    setenv("TZ", "UTC-8", 1);
    tzset();
    osb_time_rfc3339(&ts, buf, sizeof buf);
    IS_STR(buf, "2023-11-15T06:13:20+08:00", "local offset");
    osb_time_http(1700000000, buf, sizeof buf);
    IS_STR(buf, "Tue, 14 Nov 2023 22:13:20 GMT", "HTTP date");
    OK(osb_now_ms() > 1700000000000LL, "now in ms");
}

static void test_random(void)
{
    char hex[33], uuid[37];
    osb_random_hex(hex, 16);
    IS_INT(strlen(hex), 32, "hex token length");
    osb_random_uuid4(uuid);
    OK(strlen(uuid) == 36 && uuid[8] == '-' && uuid[14] == '4', "uuid4 shape");
    OK(osb_secret_eq("s3cret", "s3cret"), "equal secrets");
    OK(!osb_secret_eq("s3cret", "s3cres"), "different secrets");
    OK(!osb_secret_eq("s3c", "s3cret"), "a prefix is not equal");
    OK(!osb_secret_eq("", "x") && osb_secret_eq("", ""), "empty secrets");
}

static void test_ctl(void)
{
    IS_INT(osb_ctl_find("abc", 3), -1, "no control byte");
    IS_INT(osb_ctl_find("a\0b", 3), 1, "embedded NUL found");
    IS_INT(osb_ctl_find("ab\x1f", 3), 2, "0x1f found");
    IS_INT(osb_ctl_find("a\x7f", 2), 1, "DEL found");
    IS_INT(osb_ctl_find("\x20~\x80\xff", 4), -1, "space, ~ and high bytes pass");
    struct osb_err e = {0};
    IS_INT(osb_ctl_check("field 'x'", "a\nb", 3, &e), -1, "check fails on a newline");
    IS_STR(e.msg, "field 'x' contains control byte 0x0a", "message names the field and byte");
    IS_INT(e.code, OSB_E_INVALID, "a 400 error");
    IS_INT(osb_ctl_check("x", "ok", 2, &e), 0, "check passes");
    json_t *j = json_loads("{\"p\":\"/tmp/a\\u0000b\",\"q\":\"/tmp/\\u0001\",\"r\":\"/ok\"}",
                           JSON_ALLOW_NUL, NULL);
    const char *v = NULL;
    IS_INT(osb_json_name(j, "p", true, &v, &e), -1, "json name: embedded NUL refused");
    IS_STR(e.msg, "field 'p' contains control byte 0x00", "json name: message");
    IS_INT(osb_json_name(j, "q", true, &v, &e), -1, "json name: 0x01 refused");
    IS_INT(osb_json_name(j, "r", true, &v, &e), 1, "json name: clean value");
    IS_STR(v, "/ok", "json name: value");
    IS_INT(osb_json_name(j, "none", false, &v, &e), 0, "json name: absent");
    json_decref(j);
}

int main(void)
{
    test_buf();
    test_err();
    test_json();
    test_time();
    test_random();
    test_ctl();
    return tap_done();
}
