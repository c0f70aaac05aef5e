/* cmd_util: Go texts for exit statuses and durations, ids, $VAR expansion;
 * cmd_out: the line event encoder (Go encoding/json escaping). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "execd/cmd_out.h"
#include "execd/cmd_util.h"
#include "tap.h"

static const char *exit_text(int wstatus)
{
    static char buf[128];
    osb_cmd_exit_text(wstatus, buf, sizeof buf);
    return buf;
}

static void test_exit_text(void)
{
    IS_STR(exit_text(3 << 8), "exit status 3", "exit status");
    IS_STR(exit_text(SIGKILL), "signal: killed", "SIGKILL");
    IS_STR(exit_text(SIGTERM), "signal: terminated", "SIGTERM");
    IS_STR(exit_text(SIGSEGV | 0x80), "signal: segmentation fault (core dumped)", "core dump");
    IS_STR(exit_text(SIGRTMIN + 1), "signal: signal 35", "unnamed signal");
    IS_INT(osb_cmd_exit_code(7 << 8), 7, "exit code");
    IS_INT(osb_cmd_exit_code(SIGKILL), -1, "signal exit code is -1");
}

static const char *dur(long long ms)
{
    static char buf[64];
    osb_cmd_duration_text(ms, buf, sizeof buf);
    return buf;
}

static void test_duration(void)
{
    IS_STR(dur(0), "0s", "0");
    IS_STR(dur(500), "500ms", "ms");
    IS_STR(dur(1000), "1s", "1s");
    IS_STR(dur(1500), "1.5s", "fraction");
    IS_STR(dur(1001), "1.001s", "ms fraction");
    IS_STR(dur(60000), "1m0s", "minute");
    IS_STR(dur(3600000), "1h0m0s", "hour");
    IS_STR(dur(90061250), "25h1m1.25s", "mixed");
}

static void test_ids(void)
{
    char hex[33], uuid[37];
    osb_random_hex(hex, 16);
    IS_INT(strlen(hex), 32, "32 hex chars");
    IS_INT(strspn(hex, "0123456789abcdef"), 32, "lowercase hex");
    osb_random_uuid4(uuid);
    IS_INT(strlen(uuid), 36, "uuid length");
    OK(uuid[8] == '-' && uuid[13] == '-' && uuid[14] == '4' && uuid[18] == '-' &&
           strchr("89ab", uuid[19]) && uuid[23] == '-',
       "uuid v4 layout");
    char other[33];
    osb_random_hex(other, 16);
    OK(strcmp(hex, other) != 0, "random");
}

static void test_expand(void)
{
    char *env[] = {"D=/data", "HOME=/home/u", "E=", NULL};
    struct osb_err err = {0};
    char *out = NULL;
    OK(osb_cmd_expand_path("$D/x/${D}", env, &out, &err) == 0, "expand ok");
    IS_STR(out, "/data/x//data", "$VAR and ${VAR}");
    free(out);
    OK(osb_cmd_expand_path("~/w", env, &out, &err) == 0, "tilde");
    IS_STR(out, "/home/u/w", "~ is $HOME");
    free(out);
    OK(osb_cmd_expand_path("/a$/b$1${", env, &out, &err) == 0, "lone $ kept");
    IS_STR(out, "/a$/b$1${", "non-variable $ sequences are literal");
    free(out);
    OK(osb_cmd_expand_path("/x$E/y", env, &out, &err) == 0, "empty variable");
    IS_STR(out, "/x/y", "empty value");
    free(out);
    OK(osb_cmd_expand_path("$NOPE/$ALSO", env, &out, &err) < 0, "undefined variable fails");
    IS_INT(err.code, OSB_E_INVALID, "invalid input");
    OK(strstr(err.msg, "NOPE,ALSO") != NULL, "names the variables");
}

static const char *event(const char *line, size_t len)
{
    static char buf[1024];
    size_t n = osb_cmd_out_event(buf, "stdout", line, len, 1700000000000LL);
    buf[n] = '\0';
    return buf;
}

static void test_event(void)
{
    IS_STR(event("hello", 5),
           "{\"type\":\"stdout\",\"text\":\"hello\",\"timestamp\":1700000000000}\n\n",
           "plain line");
    IS_STR(event("", 0), "{\"type\":\"stdout\",\"text\":\"\\n\",\"timestamp\":1700000000000}\n\n",
           "empty line is \\n");
    IS_STR(event("<a&b>\"\\\t\x01", 9),
           "{\"type\":\"stdout\",\"text\":\"\\u003ca\\u0026b\\u003e\\\"\\\\\\t\\u0001\","
           "\"timestamp\":1700000000000}\n\n",
           "Go escapes");
    IS_STR(event("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9),
           "{\"type\":\"stdout\",\"text\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
           "\"timestamp\":1700000000000}\n\n",
           "valid UTF-8 kept");
    IS_STR(event("a\xff"
                 "b\xc3",
                 4),
           "{\"type\":\"stdout\",\"text\":\"a\\ufffdb\\ufffd\",\"timestamp\":1700000000000}\n\n",
           "invalid bytes and a cut sequence become U+FFFD");
    IS_STR(
        event("\xed\xa0\x80", 3),
        "{\"type\":\"stdout\",\"text\":\"\\ufffd\\ufffd\\ufffd\",\"timestamp\":1700000000000}\n\n",
        "surrogates are invalid");
    IS_STR(event("\xc0\xaf", 2),
           "{\"type\":\"stdout\",\"text\":\"\\ufffd\\ufffd\",\"timestamp\":1700000000000}\n\n",
           "overlong is invalid");
    IS_STR(event("\xe2\x80\xa8", 3),
           "{\"type\":\"stdout\",\"text\":\"\\u2028\",\"timestamp\":1700000000000}\n\n",
           "U+2028 escaped");
    OK(strlen(event("\x01\x01\x01\x01", 4)) <= osb_cmd_out_event_max(4), "max bound holds");
}

int main(void)
{
    test_exit_text();
    test_duration();
    test_ids();
    test_expand();
    test_event();
    return tap_done();
}
