/* Top-level windows of an X display (x11.h): the list the computer-use API
 * shows and focusing one. With an EWMH window manager (one that sets
 * _NET_SUPPORTING_WM_CHECK) the list is its _NET_CLIENT_LIST and focus goes
 * through _NET_ACTIVE_WINDOW, so the manager raises and decorates as it
 * does for a click; without one, the root's mapped children and
 * SetInputFocus plus a raise. */
#ifndef OSB_EXECD_XWIN_H
#define OSB_EXECD_XWIN_H
#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "execd/x11.h"

/* [{"id","title","x","y","width","height","focused"}], bottom to top. */
OSB_MUST_CHECK int osb_xwin_list(struct osb_x11 *c, json_t **items, struct osb_err *err);
/* OSB_E_INVALID naming "id" when there is no such window. */
OSB_MUST_CHECK int osb_xwin_focus(struct osb_x11 *c, uint32_t win, struct osb_err *err);
#endif
