#include "execd/xwin.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/xalloc.h"

#define XA_STRING 31
#define XA_WINDOW 33
#define XA_WM_NAME 39
#define TITLE_MAX 4096

struct atoms {
    uint32_t client_list, active, wm_check, net_wm_name, utf8;
};

/* Only atoms that exist: a property named by a missing atom cannot be set. */
static int get_atoms(struct osb_x11 *c, struct atoms *a, struct osb_err *err)
{
    if (osb_x11_intern_atom(c, "_NET_CLIENT_LIST", true, &a->client_list, err) < 0 ||
        osb_x11_intern_atom(c, "_NET_ACTIVE_WINDOW", true, &a->active, err) < 0 ||
        osb_x11_intern_atom(c, "_NET_SUPPORTING_WM_CHECK", true, &a->wm_check, err) < 0 ||
        osb_x11_intern_atom(c, "_NET_WM_NAME", true, &a->net_wm_name, err) < 0 ||
        osb_x11_intern_atom(c, "UTF8_STRING", true, &a->utf8, err) < 0)
        return -1;
    return 0;
}

/* A WINDOW-typed property of the root as a list; n = 0 when unset. */
static int root_windows(struct osb_x11 *c, uint32_t prop, uint32_t **out, size_t *n,
                        struct osb_err *err)
{
    struct osb_x11_prop p;
    *out = NULL;
    *n = 0;
    if (!prop)
        return 0;
    if (osb_x11_get_property(c, c->root, prop, XA_WINDOW, 1 << 20, &p, err) < 0)
        return -1;
    if (p.type == XA_WINDOW && p.format == 32) {
        *out = p.data;
        *n = p.n;
        return 0;
    }
    free(p.data);
    return 0;
}

static bool has_ewmh(struct osb_x11 *c, const struct atoms *a)
{
    _cleanup_free_ uint32_t *w = NULL;
    size_t n;
    struct osb_err e = {0};
    return root_windows(c, a->wm_check, &w, &n, &e) == 0 && n > 0 && w[0];
}

/* Mapped, not override-redirect (menus, tooltips) children of the root. */
static int mapped_children(struct osb_x11 *c, uint32_t **out, size_t *n, struct osb_err *err)
{
    uint32_t *kids;
    size_t k, m = 0;
    if (osb_x11_query_tree(c, c->root, &kids, &k, err) < 0)
        return -1;
    for (size_t i = 0; i < k; i++) {
        int state;
        bool ovr;
        struct osb_err e = {0};
        if (osb_x11_window_attrs(c, kids[i], &state, &ovr, &e) == 0 && state == 2 && !ovr)
            kids[m++] = kids[i];
    }
    *out = kids;
    *n = m;
    return 0;
}

static char *latin1_to_utf8(const unsigned char *s, size_t n)
{
    char *o = osb_xmalloc(n * 2 + 1), *p = o;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x80) {
            *p++ = (char)s[i];
        } else {
            *p++ = (char)(0xc0 | s[i] >> 6);
            *p++ = (char)(0x80 | (s[i] & 0x3f));
        }
    }
    *p = 0;
    return o;
}

/* _NET_WM_NAME (UTF-8), else WM_NAME (Latin-1); "" when neither. */
static char *title_of(struct osb_x11 *c, const struct atoms *a, uint32_t win, struct osb_err *err)
{
    struct osb_x11_prop p;
    if (a->net_wm_name && a->utf8 &&
        osb_x11_get_property(c, win, a->net_wm_name, a->utf8, TITLE_MAX, &p, err) == 0) {
        if (p.type == a->utf8 && p.format == 8)
            return p.data;
        free(p.data);
    }
    if (osb_x11_get_property(c, win, XA_WM_NAME, 0, TITLE_MAX, &p, err) < 0)
        return NULL;
    char *t = p.type == XA_STRING && p.format == 8 ? latin1_to_utf8(p.data, p.n)
              : p.format == 8 && p.data            ? osb_xstrdup(p.data)
                                                   : osb_xstrdup("");
    free(p.data);
    return t;
}

/* One entry; NULL with err set when the window went away meanwhile. */
static json_t *describe(struct osb_x11 *c, const struct atoms *a, uint32_t win, uint32_t active,
                        struct osb_err *err)
{
    struct osb_x11_geom g;
    int x, y;
    if (osb_x11_get_geometry(c, win, &g, err) < 0 ||
        osb_x11_translate(c, win, c->root, 0, 0, &x, &y, err) < 0)
        return NULL;
    _cleanup_free_ char *title = title_of(c, a, win, err);
    if (!title)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(win));
    json_object_set_new(o, "title", json_stringn(title, strlen(title)) ?: json_string(""));
    json_object_set_new(o, "x", json_integer(x));
    json_object_set_new(o, "y", json_integer(y));
    json_object_set_new(o, "width", json_integer(g.width));
    json_object_set_new(o, "height", json_integer(g.height));
    json_object_set_new(o, "focused", json_boolean(win == active));
    return o;
}

static bool gone(const struct osb_x11 *c)
{
    return c->last_error == OSB_X11_BAD_WINDOW || c->last_error == OSB_X11_BAD_DRAWABLE;
}

static int active_window(struct osb_x11 *c, const struct atoms *a, bool ewmh, uint32_t *out,
                         struct osb_err *err)
{
    _cleanup_free_ uint32_t *w = NULL;
    size_t n;
    *out = 0;
    if (ewmh && root_windows(c, a->active, &w, &n, err) < 0)
        return -1;
    if (ewmh && n)
        *out = w[0];
    return ewmh ? 0 : osb_x11_get_input_focus(c, out, err);
}

int osb_xwin_list(struct osb_x11 *c, json_t **items, struct osb_err *err)
{
    struct atoms a;
    _cleanup_free_ uint32_t *wins = NULL;
    size_t n = 0;
    uint32_t active;
    if (get_atoms(c, &a, err) < 0)
        return -1;
    bool ewmh = has_ewmh(c, &a);
    if ((ewmh && root_windows(c, a.client_list, &wins, &n, err) < 0) ||
        (!ewmh && mapped_children(c, &wins, &n, err) < 0) ||
        active_window(c, &a, ewmh, &active, err) < 0)
        return -1;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        c->last_error = 0;
        json_t *o = describe(c, &a, wins[i], active, err);
        if (o) {
            json_array_append_new(arr, o);
        } else if (!gone(c)) {
            json_decref(arr);
            return -1;
        }
    }
    osb_err_clear(err);
    *items = arr;
    return 0;
}

int osb_xwin_focus(struct osb_x11 *c, uint32_t win, struct osb_err *err)
{
    struct atoms a;
    struct osb_x11_geom g;
    c->last_error = 0;
    if (osb_x11_get_geometry(c, win, &g, err) < 0) {
        if (gone(c))
            return osb_err_set(err, OSB_E_INVALID, "field 'id': no window %u", win);
        return -1;
    }
    if (get_atoms(c, &a, err) < 0)
        return -1;
    if (has_ewmh(c, &a) && a.active) {
        /* source 2: a pager, which managers obey without focus-stealing
         * checks; time 0 (CurrentTime). */
        const uint32_t data[5] = {2, 0, 0, 0, 0};
        osb_x11_client_message(c, c->root, (1u << 19) | (1u << 20), win, a.active, data);
    } else {
        osb_x11_raise(c, win);
        osb_x11_set_input_focus(c, win);
    }
    return osb_x11_sync(c, err);
}
