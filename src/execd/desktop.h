/* The computer-use API (/desktop/...): screenshots, mouse, keyboard, the
 * cursor, windows and opening URLs on the sandbox's X display (DISPLAY,
 * default ":0"). The X work runs on the thread pool, one request at a time,
 * each on its own connection (x11.h). Request bodies are parsed once into
 * the typed structs below (exported for the unit tests). */
#ifndef OSB_EXECD_DESKTOP_H
#define OSB_EXECD_DESKTOP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "execd/xinput.h"

#define OSB_DESKTOP_MAX_KEYS 16
#define OSB_DESKTOP_MAX_TEXT (64 * 1024)
#define OSB_DESKTOP_MAX_SCROLL 100

/* GET /desktop/screenshot's query. */
struct osb_desktop_shot {
    int x, y;          /* 0 when absent */
    int width, height; /* -1: to the screen's edge */
    double scale;      /* (0, 1] */
};

/* POST /desktop/keyboard. */
struct osb_desktop_keys {
    bool type;        /* else press */
    const char *text; /* type: borrowed from the JSON */
    size_t len;
    uint32_t syms[OSB_DESKTOP_MAX_KEYS]; /* press */
    size_t nsyms;
};

/* Each fails with OSB_E_INVALID and a message that starts with the field. */
OSB_MUST_CHECK int osb_desktop_parse_mouse(json_t *j, struct osb_mouse_op *op, struct osb_err *err);
OSB_MUST_CHECK int osb_desktop_parse_keys(json_t *j, struct osb_desktop_keys *k,
                                          struct osb_err *err);
/* Box-filter downscale of packed RGB to ow x oh (each at most w, h). */
void osb_desktop_downscale(const uint8_t *src, unsigned w, unsigned h, uint8_t *dst, unsigned ow,
                           unsigned oh);
#endif
