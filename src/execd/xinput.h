/* Mouse and keyboard input through XTEST on an open X connection
 * (x11.h). Text the keymap cannot type is typed through spare keycodes,
 * as xdotool does: a keycode without symbols gets the character's keysym
 * for the duration of the text. The mapping is left in place afterwards;
 * a client reads the keymap only after it saw our key events, so
 * restoring it at once would make it read the old mapping for them. */
#ifndef OSB_EXECD_XINPUT_H
#define OSB_EXECD_XINPUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "execd/x11.h"

enum osb_mouse_action {
    OSB_MOUSE_MOVE,
    OSB_MOUSE_CLICK,
    OSB_MOUSE_DOUBLE_CLICK,
    OSB_MOUSE_DRAG,
    OSB_MOUSE_SCROLL,
};

struct osb_mouse_op {
    enum osb_mouse_action action;
    bool has_xy; /* else the pointer stays where it is (click, scroll) */
    int x, y;
    unsigned button; /* 1 left, 2 middle, 3 right */
    int to_x, to_y;  /* drag */
    int dx, dy;      /* scroll, in wheel clicks; dy > 0 scrolls down */
};

/* Performs op; *px, *py: the pointer afterwards. Coordinates outside the
 * screen are OSB_E_INVALID naming the field. */
OSB_MUST_CHECK int osb_xinput_mouse(struct osb_x11 *c, const struct osb_mouse_op *op, int *px,
                                    int *py, struct osb_err *err);
/* Types UTF-8 text (already validated). */
OSB_MUST_CHECK int osb_xinput_type(struct osb_x11 *c, const char *text, size_t len,
                                   struct osb_err *err);
/* Presses the keysyms in order and releases them in reverse (a chord such
 * as ctrl+c). */
OSB_MUST_CHECK int osb_xinput_press(struct osb_x11 *c, const uint32_t *syms, size_t n,
                                    struct osb_err *err);
#endif
