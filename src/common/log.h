/* Logging: one macro that checks the level before evaluating arguments. */
#ifndef OSB_LOG_H
#define OSB_LOG_H

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

/* Reads OSB_LOG_LEVEL (error|warn|info|debug) from the environment. */
void osb_log_init(const char *prefix);
#endif
