/* Pieces of the gvisor backend that need no runsc: the limits and
 * cgroupsPath it writes into config.json (runtime/gvisor/cgroup.c), and
 * the FIFOs runsc create's stdio are, with the tail a failed create
 * reports (runtime/gvisor/log.c). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fstree.h"
#include "runtime/gvisor/state.h"
#include "tap.h"

static json_int_t num(json_t *j, const char *a, const char *b)
{
    return json_integer_value(json_object_get(json_object_get(j, a), b));
}

static void test_limits(void)
{
    struct osb_gv rt = {0};
    snprintf(rt.cg_path, sizeof rt.cg_path, "opensandbox-0badcafe");
    struct osb_sandbox_spec s = {.id = "sb-1", .memory_bytes = 64 << 20, .cpu_millicores = 500};
    json_t *lnx = json_object();
    osb_gv_add_limits(&rt, &s, lnx);
    json_t *res = json_object_get(lnx, "resources");
    IS_INT(num(res, "memory", "limit"), (64 + 32) << 20, "memory limit plus the Sentry's 32 MiB");
    IS_INT(num(res, "memory", "swap"), (64 + 32) << 20, "swap = memory: no swap on top");
    IS_INT(num(res, "cpu", "quota"), 50000, "500m: a quota of 50 ms");
    IS_INT(num(res, "cpu", "period"), 100000, "per 100 ms");
    IS_INT(num(res, "pids", "limit"), OSB_LIMIT_DEFAULT_PIDS * 16 + 256,
           "pids: a host backstop of 16 tasks per process plus the Sentry's own");
    IS_STR(json_string_value(json_object_get(lnx, "cgroupsPath")), "opensandbox-0badcafe/sb-1",
           "cgroupsPath: the parent, then the id");
    json_decref(lnx);

    struct osb_sandbox_spec bare = {.id = "sb-2", .pids_max = 100};
    lnx = json_object();
    osb_gv_add_limits(&rt, &bare, lnx);
    res = json_object_get(lnx, "resources");
    OK(!json_object_get(res, "memory") && !json_object_get(res, "cpu"),
       "no memory or CPU limit asked: none written");
    IS_INT(num(res, "pids", "limit"), 100 * 16 + 256, "pids_max 100: 1856 host tasks");
    json_decref(lnx);
}

static void test_fifo_tail(void)
{
    char dir[] = "/tmp/osb-gvpieces-XXXXXX";
    OK(mkdtemp(dir) != NULL, "temp dir");
    struct osb_err err = {0};
    int fd = osb_gv_fifo(dir, OSB_GV_LOG_FIFO, &err);
    OK(fd >= 0, "the FIFO is made and opened");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" OSB_GV_LOG_FIFO, dir);
    struct stat st;
    OK(stat(path, &st) == 0 && S_ISFIFO(st.st_mode) && (st.st_mode & 0777) == 0600,
       "a FIFO only its owner may open");
    OK((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR, "held read-write: writes never fail");
    OK(osb_gv_fifo(dir, OSB_GV_LOG_FIFO, &err) < 0, "an existing one is refused");

    char tail[16];
    osb_gv_log_tail(fd, tail, sizeof tail);
    IS_STR(tail, "", "nothing written: an empty tail");
    const char *msg = "runsc: some long preamble\nerror: the real cause\n\n";
    OK(write(fd, msg, strlen(msg)) == (ssize_t)strlen(msg), "runsc's message written");
    osb_gv_log_tail(fd, tail, sizeof tail);
    IS_STR(tail, "he real cause", "the last 15 bytes, trailing newlines then cut");
    char big[10000];
    memset(big, 'x', sizeof big);
    OK(write(fd, big, sizeof big) == (ssize_t)sizeof big && write(fd, "END", 3) == 3,
       "more than one read's worth");
    osb_gv_log_tail(fd, tail, sizeof tail);
    IS_STR(tail, "xxxxxxxxxxxxEND", "across reads: still the last bytes");
    close(fd);
    osb_fs_discard_tree(dir);
}

int main(void)
{
    test_limits();
    test_fifo_tail();
    return tap_done();
}
