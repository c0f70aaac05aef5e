#include "common/timeutil.h"

#include <stdio.h>
#include <string.h>

int64_t osb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t osb_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void osb_time_rfc3339(const struct timespec *ts, char *buf, size_t n)
{
    struct tm tm;
    localtime_r(&ts->tv_sec, &tm);
    char date[32], frac[16] = "", zone[8];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    if (ts->tv_nsec) {
        snprintf(frac, sizeof frac, ".%09ld", ts->tv_nsec);
        size_t l = strlen(frac);
        while (l > 1 && frac[l - 1] == '0')
            frac[--l] = '\0';
    }
    long off = tm.tm_gmtoff;
    if (off == 0) {
        snprintf(zone, sizeof zone, "Z");
    } else {
        char sign = off < 0 ? '-' : '+';
        if (off < 0)
            off = -off;
        snprintf(zone, sizeof zone, "%c%02ld:%02ld", sign, off / 3600, (off % 3600) / 60);
    }
    snprintf(buf, n, "%s%s%s", date, frac, zone);
}

void osb_time_http(time_t t, char *buf, size_t n)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}
