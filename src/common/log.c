#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum osb_log_level osb_log_level = OSB_LOG_INFO;
const char *osb_log_prefix = "osb";

static const char *const names[] = {"error", "warn", "info", "debug"};
static bool json_lines;      /* [log] format = "json" */
static char *file_path;      /* [log] file: stderr is this file */
static osb_log_sink_fn sink; /* e.g. the server's OTLP log export */
static void *sink_ud;

void osb_log_init(const char *prefix)
{
    osb_log_prefix = prefix;
    const char *l = getenv("OSB_LOG_LEVEL");
    if (!l)
        return;
    for (int i = 0; i < 4; i++)
        if (strcmp(l, names[i]) == 0)
            osb_log_level = (enum osb_log_level)i;
}

void osb_log_time(char out[32])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

void osb_log_line(const char *line)
{
    size_t n = strlen(line);
    char *buf = malloc(n + 1);
    if (!buf)
        return;
    memcpy(buf, line, n);
    buf[n] = '\n';
    /* one write: lines of concurrent writers (threads) stay whole */
    ssize_t w = write(STDERR_FILENO, buf, n + 1);
    (void)w;
    free(buf);
}

void osb_log_(enum osb_log_level lvl, const char *fmt, ...)
{
    char line[2048], now[32];
    osb_log_time(now);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (sink)
        sink(sink_ud, lvl, line);
    if (json_lines) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "time", now, "level", names[lvl], "service",
                              osb_log_prefix, "msg", line);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (s) {
            osb_log_line(s);
            free(s);
            return;
        }
        /* not UTF-8: the text line below, rather than no line at all */
    }
    char out[2200];
    snprintf(out, sizeof out, "%s %s %s: %s", now, osb_log_prefix, names[lvl], line);
    osb_log_line(out);
}

void osb_log_set_sink(osb_log_sink_fn fn, void *ud)
{
    sink = fn;
    sink_ud = ud;
}

void osb_log_set_json(bool on)
{
    json_lines = on;
}

bool osb_log_json(void)
{
    return json_lines;
}

int osb_log_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    int r = dup2(fd, STDERR_FILENO) < 0 ? -1 : 0, e = errno;
    close(fd);
    errno = e;
    if (r == 0 && path != file_path) {
        free(file_path);
        file_path = strdup(path);
    }
    return r;
}

int osb_log_reopen(void)
{
    return file_path ? osb_log_open(file_path) : 0;
}
