/* Lifecycle API timestamps: RFC 3339 UTC with a 'Z', microsecond fraction
 * printed only when non-zero (what Pydantic emits, protocol.md 1.1). All
 * server times are Unix microseconds (int64). */
#ifndef OSB_SERVER_TIMEFMT_H
#define OSB_SERVER_TIMEFMT_H
#include <stddef.h>
#include <stdint.h>

#define OSB_TIMEFMT_LEN 40

int64_t osb_now_us(void);
/* "2024-01-15T10:30:00.123456Z" or "2024-01-15T10:30:00Z". */
void osb_timefmt_us(int64_t us, char buf[OSB_TIMEFMT_LEN]);
/* Parses "YYYY-MM-DDTHH:MM:SS[.frac][Z|+HH:MM|-HH:MM|+HHMM]" (a naive
 * time is UTC; 't' or ' ' may separate date and time). Returns 0, or -1
 * on anything else. */
int osb_timefmt_parse(const char *s, int64_t *us);
#endif
