/* Splits a byte stream into lines as command output events need them: the
 * terminators are "\n", "\r" and "\r\n" (one terminator, even when the "\r"
 * ends one chunk and the "\n" starts the next), and they are not part of the
 * line. A line is reported as soon as its terminator arrives, so progress
 * bars that redraw with "\r" stream live. A run of bytes longer than `max`
 * without a terminator is reported in pieces of at most `max` bytes (cut
 * before a UTF-8 continuation byte when possible). */
#ifndef OSB_EXECD_LINES_H
#define OSB_EXECD_LINES_H
#include <stdbool.h>
#include <stddef.h>

struct osb_lines {
    char *part; /* bytes of the unterminated line so far */
    size_t part_len, part_cap;
    size_t max;
    bool skip_lf; /* the last chunk ended in "\r": a leading "\n" belongs to it */
};

/* Called once per line; `line` is valid only during the call. */
typedef void (*osb_lines_fn)(void *ud, const char *line, size_t len);

void osb_lines_init(struct osb_lines *l, size_t max);
void osb_lines_feed(struct osb_lines *l, const char *data, size_t n, osb_lines_fn fn, void *ud);
/* Report the pending unterminated line, if any (end of output). */
void osb_lines_flush(struct osb_lines *l, osb_lines_fn fn, void *ud);
/* Forget pending bytes (a new run on a reused stream). */
void osb_lines_reset(struct osb_lines *l);
void osb_lines_free(struct osb_lines *l);
#endif
