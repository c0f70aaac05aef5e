/* Logging: one macro that checks the level before evaluating arguments. */
#ifndef OSB_LOG_H
#define OSB_LOG_H
#include <stdbool.h>

enum osb_log_level { OSB_LOG_ERROR, OSB_LOG_WARN, OSB_LOG_INFO, OSB_LOG_DEBUG };

extern enum osb_log_level osb_log_level;
extern const char *osb_log_prefix;

void osb_log_(enum osb_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define osb_log(lvl, ...) \
    do { \
        if ((lvl) <= osb_log_level) \
            osb_log_((lvl), __VA_ARGS__); \
    } while (0)
#define osb_err_log(...) osb_log(OSB_LOG_ERROR, __VA_ARGS__)
#define osb_warn(...) osb_log(OSB_LOG_WARN, __VA_ARGS__)
#define osb_info(...) osb_log(OSB_LOG_INFO, __VA_ARGS__)
#define osb_debug(...) osb_log(OSB_LOG_DEBUG, __VA_ARGS__)

/* Lines as JSON objects {time, level, service, msg} instead of text. */
void osb_log_set_json(bool on);
bool osb_log_json(void);
/* Log to path (appended, made 0640) instead of stderr: stderr becomes the
 * file, so what libraries print lands there too. 0 or -1 (errno). */
int osb_log_open(const char *path);
/* Opens the file again (after rotation: SIGHUP); nothing without one. */
int osb_log_reopen(void);
/* Writes one whole line (a newline is added) in one write. */
void osb_log_line(const char *line);
/* Also hands every logged message to fn (from any thread that logs; fn
 * must be thread-safe). NULL: none. */
typedef void (*osb_log_sink_fn)(void *ud, enum osb_log_level lvl, const char *msg);
void osb_log_set_sink(osb_log_sink_fn fn, void *ud);
/* The current UTC time as "2006-01-02T15:04:05.000Z". */
void osb_log_time(char out[32]);

/* Reads OSB_LOG_LEVEL (error|warn|info|debug) from the environment. */
void osb_log_init(const char *prefix);
#endif
