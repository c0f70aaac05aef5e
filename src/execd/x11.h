/* A minimal X11 protocol client: just the requests the computer-use API
 * (desktop.c) needs, so that execd stays one static binary without libX11.
 * Calls block (the desktop jobs run them on the thread pool); every reply is
 * awaited at most OSB_X11_TIMEOUT_MS. A connection is used by one thread at
 * a time. Requests without a reply are buffered; osb_x11_sync sends them
 * and reports the first X error any of them caused. */
#ifndef OSB_EXECD_X11_H
#define OSB_EXECD_X11_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define OSB_X11_TIMEOUT_MS 5000
#define OSB_X11_OUT_MAX 16384
#define OSB_X11_BAD_WINDOW 3
#define OSB_X11_BAD_DRAWABLE 9

struct osb_x11 {
    int fd;
    uint16_t seq; /* sequence number of the last request sent */
    char display[64];
    uint32_t root, root_visual;
    uint16_t width, height;
    uint8_t depth, bpp, scanline_pad;
    bool image_msb; /* the server's image byte order is MSBFirst */
    uint32_t red_mask, green_mask, blue_mask;
    uint32_t max_request; /* in bytes */
    uint8_t min_keycode, max_keycode;
    uint8_t xtest_major;      /* 0 until osb_x11_xtest_init */
    struct osb_err async_err; /* the first error of a request without reply */
    uint8_t last_error;       /* X error code of the last failed reply, or 0 */
    unsigned char out[OSB_X11_OUT_MAX];
    size_t out_len;
    unsigned char in[65536];
    size_t in_pos, in_len;
};

/* Connects to display (":N", ":N.S", "unix:N"; NULL or "" is ":0") over
 * the abstract socket "@/tmp/.X11-unix/XN", then the file of that name,
 * with the MIT-MAGIC-COOKIE-1 of $XAUTHORITY or ~/.Xauthority when one
 * matches. OSB_E_UNAVAILABLE when there is no such display (the message
 * names the display and the socket), OSB_E_DENIED when it refuses us. */
OSB_MUST_CHECK int osb_x11_open(struct osb_x11 *c, const char *display, struct osb_err *err);
void osb_x11_close(struct osb_x11 *c);

/* Sends what is buffered and waits for a round trip; fails with the first
 * X error a request without reply caused since the last sync. */
OSB_MUST_CHECK int osb_x11_sync(struct osb_x11 *c, struct osb_err *err);

/* 0 in *atom when only_if_exists and it does not exist. */
OSB_MUST_CHECK int osb_x11_intern_atom(struct osb_x11 *c, const char *name, bool only_if_exists,
                                       uint32_t *atom, struct osb_err *err);

struct osb_x11_prop {
    uint32_t type;  /* 0: the property does not exist */
    uint8_t format; /* 8, 16 or 32 */
    uint32_t n;     /* items of `format` bits */
    void *data;     /* malloc'd, NUL-terminated; free it */
};
/* Up to max_bytes of a property (type 0: any). */
OSB_MUST_CHECK int osb_x11_get_property(struct osb_x11 *c, uint32_t win, uint32_t prop,
                                        uint32_t type, uint32_t max_bytes, struct osb_x11_prop *out,
                                        struct osb_err *err);

struct osb_x11_geom {
    int x, y; /* relative to the parent */
    unsigned width, height, border;
};
OSB_MUST_CHECK int osb_x11_get_geometry(struct osb_x11 *c, uint32_t win, struct osb_x11_geom *g,
                                        struct osb_err *err);
/* (x, y) in src's coordinates to dst's. */
OSB_MUST_CHECK int osb_x11_translate(struct osb_x11 *c, uint32_t src, uint32_t dst, int x, int y,
                                     int *ox, int *oy, struct osb_err *err);
/* The pointer's position on the root window. */
OSB_MUST_CHECK int osb_x11_query_pointer(struct osb_x11 *c, int *x, int *y, struct osb_err *err);
/* The root's children, bottom to top (malloc'd array). */
OSB_MUST_CHECK int osb_x11_query_tree(struct osb_x11 *c, uint32_t win, uint32_t **children,
                                      size_t *n, struct osb_err *err);
/* map_state: 0 unmapped, 1 unviewable, 2 viewable. */
OSB_MUST_CHECK int osb_x11_window_attrs(struct osb_x11 *c, uint32_t win, int *map_state,
                                        bool *override_redirect, struct osb_err *err);
OSB_MUST_CHECK int osb_x11_get_input_focus(struct osb_x11 *c, uint32_t *win, struct osb_err *err);

/* A region of the root window as packed RGB (w * h * 3 bytes into rgb).
 * Asks in bands that each fit the server's maximum request length. */
OSB_MUST_CHECK int osb_x11_get_image_rgb(struct osb_x11 *c, int x, int y, unsigned w, unsigned h,
                                         uint8_t *rgb, struct osb_err *err);

/* Queries the XTEST extension; the fake_* calls need it. */
OSB_MUST_CHECK int osb_x11_xtest_init(struct osb_x11 *c, struct osb_err *err);
/* Buffered fake input (errors surface at osb_x11_sync). */
void osb_x11_fake_motion(struct osb_x11 *c, int x, int y);
void osb_x11_fake_button(struct osb_x11 *c, unsigned button, bool press);
void osb_x11_fake_key(struct osb_x11 *c, unsigned keycode, bool press);

struct osb_x11_keymap {
    uint8_t min_keycode;
    unsigned count; /* keycodes from min_keycode */
    unsigned per;   /* keysyms per keycode */
    uint32_t *syms; /* count * per, malloc'd */
};
OSB_MUST_CHECK int osb_x11_get_keymap(struct osb_x11 *c, struct osb_x11_keymap *km,
                                      struct osb_err *err);
void osb_x11_keymap_free(struct osb_x11_keymap *km);
/* Sets `per` keysyms for each of count keycodes from first (buffered). */
void osb_x11_change_keymap(struct osb_x11 *c, uint8_t first, unsigned count, unsigned per,
                           const uint32_t *syms);

/* A 32-bit format ClientMessage to dest (buffered). */
void osb_x11_client_message(struct osb_x11 *c, uint32_t dest, uint32_t mask, uint32_t win,
                            uint32_t type, const uint32_t data[5]);
void osb_x11_set_input_focus(struct osb_x11 *c, uint32_t win);
void osb_x11_raise(struct osb_x11 *c, uint32_t win);
#endif
