/* src/common/endreport: the line execd writes when its entrypoint ends,
 * parsed by the runtime as untrusted input. */
#include <stdio.h>
#include <string.h>

#include "common/endreport.h"
#include "tap.h"

static void roundtrip(enum osb_end_kind kind, int value, const char *want)
{
    char buf[OSB_ENDREPORT_MAX];
    struct osb_endreport r = {kind, value}, back = {0};
    int n = osb_endreport_format(&r, buf, sizeof buf);
    char what[64];
    snprintf(what, sizeof what, "format %.*s", (int)strcspn(want, "\n"), want);
    OK(n > 0 && (size_t)n == strlen(want) && memcmp(buf, want, (size_t)n) == 0, what);
    OK(osb_endreport_parse(buf, (size_t)(n > 0 ? n : 0), &back) == 0 && back.kind == kind &&
           back.value == value,
       "parses back");
}

static void bad(const char *line)
{
    struct osb_endreport r = {OSB_END_EXITED, 777};
    char what[64];
    snprintf(what, sizeof what, "rejects \"");
    for (const char *c = line; *c && strlen(what) < sizeof what - 8; c++)
        snprintf(what + strlen(what), sizeof what - strlen(what),
                 *c == '\n'   ? "\\n"
                 : *c == '\r' ? "\\r"
                              : "%c",
                 *c);
    snprintf(what + strlen(what), sizeof what - strlen(what), "\"");
    OK(osb_endreport_parse(line, strlen(line), &r) < 0 && r.value == 777, what);
}

int main(void)
{
    roundtrip(OSB_END_EXITED, 0, "exit 0\n");
    roundtrip(OSB_END_EXITED, 255, "exit 255\n");
    roundtrip(OSB_END_SIGNALED, 9, "signal 9\n");
    roundtrip(OSB_END_SIGNALED, 64, "signal 64\n");
    roundtrip(OSB_END_EXEC_FAILED, 2, "exec 2\n");
    roundtrip(OSB_END_EXEC_FAILED, 4095, "exec 4095\n");

    char buf[OSB_ENDREPORT_MAX];
    struct osb_endreport r = {OSB_END_EXITED, 256};
    OK(osb_endreport_format(&r, buf, sizeof buf) < 0, "exit code 256 is not formatted");
    r = (struct osb_endreport){OSB_END_SIGNALED, 0};
    OK(osb_endreport_format(&r, buf, sizeof buf) < 0, "signal 0 is not formatted");
    r = (struct osb_endreport){(enum osb_end_kind)0, 1};
    OK(osb_endreport_format(&r, buf, sizeof buf) < 0, "unknown kind is not formatted");

    bad("");
    bad("\n");
    bad("exit 3");           /* no newline */
    bad("exit 3\nexit 4\n"); /* two lines */
    bad("exit 256\n");
    bad("exit -1\n");
    bad("exit +3\n");
    bad("exit 03\n");
    bad("exit  3\n");
    bad("exit 3 \n");
    bad("exit\n");
    bad("exit \n");
    bad("signal 0\n");
    bad("signal 65\n");
    bad("exec 0\n");
    bad("exec 4096\n");
    bad("Exit 3\n");
    bad("exited 3\n");
    bad("quit 3\n");
    bad("exit 3\r\n");
    bad("exec 12345678901\n");
    struct osb_endreport z = {OSB_END_EXITED, 777};
    OK(osb_endreport_parse("exit 3\0\n", 8, &z) < 0 && z.value == 777, "a NUL byte is rejected");
    OK(osb_endreport_parse("exit 3\n", 7, &z) == 0 && z.kind == OSB_END_EXITED && z.value == 3,
       "exit 3");
    return tap_done();
}
