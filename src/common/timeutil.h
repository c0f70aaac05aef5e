/* Clocks and timestamps. */
#ifndef OSB_TIMEUTIL_H
#define OSB_TIMEUTIL_H
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int64_t osb_now_ms(void);  /* Unix time in ms (CLOCK_REALTIME) */
int64_t osb_mono_ms(void); /* CLOCK_MONOTONIC in ms */
/* RFC 3339 with nanoseconds and the local UTC offset, trailing zeros of the
 * fraction trimmed (Go's RFC3339Nano). buf needs 40 bytes. */
void osb_time_rfc3339(const struct timespec *ts, char *buf, size_t n);
/* HTTP date (RFC 7231 IMF-fixdate). buf needs 30 bytes. */
void osb_time_http(time_t t, char *buf, size_t n);
#endif
