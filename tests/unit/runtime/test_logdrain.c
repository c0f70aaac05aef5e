/* The output pipe drained into a bounded log (runtime/logdrain.c):
 * 2 MiB of numbered lines through a pipe into a 256 KiB bound, on a disk
 * filesystem (FALLOC_FL_COLLAPSE_RANGE) and on tmpfs (the tail-copy path):
 * the file never passes the bound, keeps the latest lines in order, and
 * ends complete once the writer closes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fstree.h"
#include "runtime/logdrain.h"
#include "tap.h"

#define BOUND (256u << 10)
#define KEEP (64u << 10)
#define LINES (2u << 20) / 8

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void on_closed(void *ud)
{
    *(bool *)ud = true;
}

/* From the first complete line on, consecutive numbers ending at LINES-1. */
static bool lines_in_order(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[64];
    long prev = -1;
    bool ok = fgets(line, sizeof line, f) != NULL; /* maybe cut by a trim */
    while (ok && fgets(line, sizeof line, f)) {
        long n = strtol(line, NULL, 10);
        ok = strlen(line) == 8 && (prev < 0 || n == prev + 1);
        prev = n;
    }
    fclose(f);
    return ok && prev == (long)LINES - 1;
}

static void drain_into(const char *dir, const char *what)
{
    char path[4096], name[256];
    snprintf(path, sizeof path, "%s/log", dir);
    uv_loop_t loop;
    uv_loop_init(&loop);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        abort();
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    struct osb_logdrain *d = NULL;
    struct osb_err err = {0};
    snprintf(name, sizeof name, "%s: open", what);
    OK(osb_logdrain_open(&loop, p[0], path, BOUND, KEEP, &d, &err) == 0, name);
    uint64_t peak = 0;
    char buf[16];
    for (unsigned i = 0; i < LINES;) {
        snprintf(buf, sizeof buf, "%07u\n", i);
        if (write(p[1], buf, 8) == 8)
            i++;
        else
            uv_run(&loop, UV_RUN_ONCE); /* pipe full: let the drain read */
        uint64_t sz = file_size(path);
        peak = sz > peak ? sz : peak;
    }
    close(p[1]);
    while (!osb_logdrain_done(d)) {
        uv_run(&loop, UV_RUN_ONCE);
        uint64_t sz = file_size(path);
        peak = sz > peak ? sz : peak;
    }
    snprintf(name, sizeof name, "%s: the file never passed the bound (peak %llu)", what,
             (unsigned long long)peak);
    OK(peak <= BOUND && peak > KEEP, name);
    snprintf(name, sizeof name, "%s: it holds the latest lines, in order, up to the last", what);
    OK(lines_in_order(path), name);
    bool closed = false;
    osb_logdrain_close(d, on_closed, &closed);
    while (!closed)
        uv_run(&loop, UV_RUN_ONCE);
    snprintf(name, sizeof name, "%s: close runs its callback", what);
    OK(closed, name);
    uv_loop_close(&loop);
}

/* Descriptors of this process that name path. */
static int fds_on(const char *path)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char l[64], t[4096];
        snprintf(l, sizeof l, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(l, t, sizeof t - 1);
        if (k > 0) {
            t[k] = '\0';
            n += strcmp(t, path) == 0;
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* Thousands of idle sandboxes each have a drain: between chunks it holds
 * only the pipe, and what comes later still lands in the file. */
static void test_idle_holds_no_file(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/idle.log", dir);
    uv_loop_t loop;
    uv_loop_init(&loop);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        abort();
    struct osb_logdrain *d = NULL;
    struct osb_err err = {0};
    OK(osb_logdrain_open(&loop, p[0], path, BOUND, KEEP, &d, &err) == 0, "idle: open");
    OK(fds_on(path) == 0, "idle: a drain with nothing to write holds no descriptor of its log");
    if (write(p[1], "hello\n", 6) != 6)
        abort();
    while (file_size(path) < 6)
        uv_run(&loop, UV_RUN_ONCE);
    OK(fds_on(path) == 0, "idle: nor after it wrote a chunk");
    osb_logdrain_note(d, "note\n");
    OK(file_size(path) == 11 && fds_on(path) == 0, "idle: a note is appended, the file closed");
    close(p[1]);
    bool closed = false;
    osb_logdrain_close(d, on_closed, &closed);
    while (!closed)
        uv_run(&loop, UV_RUN_ONCE);
    uv_loop_close(&loop);
}

static void test_refusals(const char *dir)
{
    char path[4096], link[4096];
    snprintf(path, sizeof path, "%s/target", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    OK(symlink(path, link) == 0, "a symlink in place of the log");
    uv_loop_t loop;
    uv_loop_init(&loop);
    int p[2];
    struct osb_logdrain *d;
    struct osb_err err = {0};
    if (pipe2(p, O_CLOEXEC) < 0)
        abort();
    OK(osb_logdrain_open(&loop, p[0], link, BOUND, KEEP, &d, &err) < 0 && access(path, F_OK) < 0,
       "a log path that is a symlink is refused, nothing created behind it");
    OK(fcntl(p[0], F_GETFD) < 0 && errno == EBADF, "the pipe fd is taken even on failure");
    if (pipe2(p, O_CLOEXEC) < 0)
        abort();
    OK(osb_logdrain_open(&loop, p[0], path, KEEP, KEEP, &d, &err) < 0 && err.code == OSB_E_INVALID,
       "a bound that cannot hold keep plus a chunk is refused");
    close(p[1]);
    uv_run(&loop, UV_RUN_NOWAIT);
    uv_loop_close(&loop);
}

int main(void)
{
    const char *bases[] = {"/tmp", "/dev/shm"};
    for (size_t i = 0; i < 2; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/osb-logdrain-XXXXXX", bases[i]);
        if (!mkdtemp(dir)) {
            printf("ok - # SKIP %s: %s\n", bases[i], strerror(errno));
            continue;
        }
        drain_into(dir, bases[i]);
        if (i == 0) {
            test_refusals(dir);
            test_idle_holds_no_file(dir);
        }
        osb_fs_discard_tree(dir);
    }
    return tap_done();
}
