#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum osb_log_level osb_log_level = OSB_LOG_INFO;
const char *osb_log_prefix = "osb";

static const char *const names[] = {"error", "warn", "info", "debug"};

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

void osb_log_(enum osb_log_level lvl, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line,
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, osb_log_prefix, names[lvl]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
