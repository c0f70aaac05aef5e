#include "server/timefmt.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t osb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void osb_timefmt_us(int64_t us, char buf[OSB_TIMEFMT_LEN])
{
    time_t sec = (time_t)(us / 1000000);
    int64_t frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        sec--;
    }
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(buf, OSB_TIMEFMT_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac)
        snprintf(buf + n, OSB_TIMEFMT_LEN - n, ".%06lldZ", (long long)frac);
    else
        snprintf(buf + n, OSB_TIMEFMT_LEN - n, "Z");
}

/* Reads exactly n digits; returns -1 if any is missing. */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

static bool expect(const char **p, char c)
{
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

/* The zone suffix: Z, +HH:MM, +HHMM, +HH (or nothing = UTC). */
static int parse_zone(const char *p, int64_t *offset_s)
{
    *offset_s = 0;
    if (*p == '\0')
        return 0;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        return 0;
    if (*p != '+' && *p != '-')
        return -1;
    int sign = *p++ == '-' ? -1 : 1;
    int hh = digits(&p, 2), mm = 0;
    if (hh < 0 || hh > 23)
        return -1;
    if (*p) {
        expect(&p, ':');
        mm = digits(&p, 2);
        if (mm < 0 || mm > 59 || *p)
            return -1;
    }
    *offset_s = sign * (hh * 3600 + mm * 60);
    return 0;
}

static bool tm_valid(const struct tm *tm)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (tm->tm_mon < 0 || tm->tm_mon > 11 || tm->tm_mday < 1 || tm->tm_mday > mdays[tm->tm_mon])
        return false;
    if (tm->tm_mon == 1 && tm->tm_mday == 29) {
        int y = tm->tm_year + 1900;
        if (!((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
            return false;
    }
    return tm->tm_hour <= 23 && tm->tm_min <= 59 && tm->tm_sec <= 60;
}

int osb_timefmt_parse(const char *s, int64_t *us)
{
    const char *p = s;
    struct tm tm = {0};
    int y = digits(&p, 4);
    if (y < 0 || !expect(&p, '-') || (tm.tm_mon = digits(&p, 2) - 1) < -1 || !expect(&p, '-') ||
        (tm.tm_mday = digits(&p, 2)) < 0)
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if ((tm.tm_hour = digits(&p, 2)) < 0 || !expect(&p, ':') || (tm.tm_min = digits(&p, 2)) < 0 ||
        !expect(&p, ':') || (tm.tm_sec = digits(&p, 2)) < 0)
        return -1;
    tm.tm_year = y - 1900;
    if (!tm_valid(&tm))
        return -1;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        for (; isdigit((unsigned char)*p); p++, n++)
            if (n < 6)
                frac = frac * 10 + (*p - '0');
        if (n == 0)
            return -1;
        for (; n < 6; n++)
            frac *= 10;
    }
    int64_t off;
    if (parse_zone(p, &off) < 0)
        return -1;
    int64_t sec = (int64_t)timegm(&tm) - off;
    *us = sec * 1000000 + frac;
    return 0;
}
