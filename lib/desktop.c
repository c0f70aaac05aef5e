/* execd's computer-use API (the /desktop routes; docs/execd.md, "Computer use"):
 * a screenshot as PNG bytes, the rest JSON both ways. A sandbox with no
 * display answers 409 DESKTOP::NO_DISPLAY, which comes back as the error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int osbc_desktop_screenshot(osbc_client *c, const char *id, const struct osbc_region *region,
                            double scale, char **png, size_t *len, struct osbc_error *err)
{
    if (!png || !len)
        return osbcl_fail(err, OSBC_E_ARG, "desktop screenshot: png and len are required");
    *png = NULL;
    *len = 0;
    if (scale < 0 || scale > 1)
        return osbcl_fail(err, OSBC_E_ARG, "desktop screenshot: scale in (0, 1], or 0");
    char path[200];
    int n = snprintf(path, sizeof path, "/desktop/screenshot?");
    if (region && region->width > 0 && region->height > 0)
        n += snprintf(path + n, sizeof path - (size_t)n, "x=%d&y=%d&width=%d&height=%d&", region->x,
                      region->y, region->width, region->height);
    if (scale > 0)
        snprintf(path + n, sizeof path - (size_t)n, "scale=%g", scale);
    struct osbcl_req rq = {.method = "GET", .path = path};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300))
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "GET /desktop/screenshot");
    if (rc == 0) {
        *png = rs.body;
        *len = rs.len;
        rs.body = NULL;
    }
    if (rs.status)
        osbcl_resp_free(&rs);
    return rc;
}

static int post(osbc_client *c, const char *id, const char *path, json_t *body, char **json,
                struct osbc_error *err)
{
    char *text = body ? osbcl_json_dump(body) : NULL;
    json_decref(body);
    if (!text)
        return osbcl_fail(err, OSBC_E_ARG, "%s: cannot encode the request (not UTF-8?)", path);
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "POST", path, text, json, err);
    free(text);
    return rc;
}

/* A caller's JSON object, checked here so a typo fails before the call. */
static json_t *object_of(const char *body_json, const char *what, struct osbc_error *err)
{
    json_t *j = body_json ? json_loads(body_json, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        osbcl_fail(err, OSBC_E_ARG, "%s: the body must be a JSON object", what);
        return NULL;
    }
    return j;
}

int osbc_desktop_mouse(osbc_client *c, const char *id, const char *body_json, char **json,
                       struct osbc_error *err)
{
    json_t *b = object_of(body_json, "desktop mouse", err);
    return b ? post(c, id, "/desktop/mouse", b, json, err) : OSBC_E_ARG;
}

int osbc_desktop_keyboard(osbc_client *c, const char *id, const char *body_json, char **json,
                          struct osbc_error *err)
{
    json_t *b = object_of(body_json, "desktop keyboard", err);
    return b ? post(c, id, "/desktop/keyboard", b, json, err) : OSBC_E_ARG;
}

int osbc_desktop_click(osbc_client *c, const char *id, int x, int y, const char *button, int twice,
                       struct osbc_error *err)
{
    json_t *b = json_pack("{s:s,s:i,s:i,s:s}", "action", twice ? "double_click" : "click", "x", x,
                          "y", y, "button", button ? button : "left");
    return post(c, id, "/desktop/mouse", b, NULL, err);
}

int osbc_desktop_type(osbc_client *c, const char *id, const char *text, struct osbc_error *err)
{
    if (!text)
        return osbcl_fail(err, OSBC_E_ARG, "desktop type: no text");
    json_t *b = json_pack("{s:s,s:s}", "action", "type", "text", text);
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "desktop type: the text is not UTF-8");
    return post(c, id, "/desktop/keyboard", b, NULL, err);
}

int osbc_desktop_press(osbc_client *c, const char *id, const char *const *keys, size_t n,
                       struct osbc_error *err)
{
    if (!keys || !n)
        return osbcl_fail(err, OSBC_E_ARG, "desktop press: at least one key");
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        if (!keys[i] || json_array_append_new(arr, json_string(keys[i])) < 0) {
            json_decref(arr);
            return osbcl_fail(err, OSBC_E_ARG, "desktop press: key %zu is not UTF-8", i);
        }
    return post(c, id, "/desktop/keyboard", json_pack("{s:s,s:o}", "action", "press", "keys", arr),
                NULL, err);
}

int osbc_desktop_cursor(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", "/desktop/cursor", NULL, json, err);
}

int osbc_desktop_windows(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", "/desktop/windows", NULL, json, err);
}

int osbc_desktop_focus(osbc_client *c, const char *id, const char *window, struct osbc_error *err)
{
    if (!window || !*window)
        return osbcl_fail(err, OSBC_E_ARG, "desktop focus: no window id");
    /* The id as the window list gives it: a number there stays a number. */
    char *end;
    long long v = strtoll(window, &end, 10);
    json_t *wid = *end ? json_string(window) : json_integer(v);
    if (!wid)
        return osbcl_fail(err, OSBC_E_ARG, "desktop focus: the window id is not UTF-8");
    return post(c, id, "/desktop/windows", json_pack("{s:s,s:o}", "action", "focus", "id", wid),
                NULL, err);
}

int osbc_desktop_open(osbc_client *c, const char *id, const char *target, char **json,
                      struct osbc_error *err)
{
    json_t *b = target ? json_pack("{s:s}", "target", target) : NULL;
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "desktop open: a target (URL or path) in UTF-8");
    return post(c, id, "/desktop/open", b, json, err);
}
