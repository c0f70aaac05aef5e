#include "execd/desktop.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "execd/execd.h"
#include "execd/keysym.h"
#include "execd/png.h"
#include "execd/spawn.h"
#include "execd/x11.h"
#include "execd/xwin.h"

/* zlib level: 1 keeps a full-screen shot in tens of milliseconds, and
 * screens compress well even so. */
#define PNG_LEVEL 1
/* 8192 x 8192: the RGB copy of a larger region would take over 200 MB. */
#define SHOT_MAX_PIXELS (64u << 20)

/* The module's state (x->desktop). */
struct osb_execd_desktop {
    struct osb_execd *x;
    char *display;
    /* One X job at a time, queued here on the loop: a typed text binds
     * spare keycodes that another job's keys must not rebind under it, and
     * a hung X server must hold one pool thread, not all of them. */
    bool running;
    struct job *queue, **queue_tail;
};

enum job_kind { J_SHOT, J_MOUSE, J_KEYS, J_CURSOR, J_WINDOWS, J_FOCUS };

struct job {
    uv_work_t work;
    struct job *next;         /* in the module's queue */
    struct osb_http_req *req; /* NULL once the client is gone */
    struct osb_execd_desktop *d;
    enum job_kind kind;
    json_t *body; /* holds what keys.text points into */
    struct osb_desktop_shot shot;
    struct osb_mouse_op mouse;
    struct osb_desktop_keys keys;
    uint32_t win;
    /* the outcome */
    json_t *result;
    unsigned char *png;
    size_t png_len;
    bool failed;
    struct osb_err err;
};

/* ---- body parsing ---- */

static int invalid(struct osb_err *err, const struct osb_err *e)
{
    return osb_err_set(err, OSB_E_INVALID, "%s", e->msg);
}

/* An integer field in [min, max]; 1 present, 0 absent. */
static int int_field(json_t *j, const char *key, bool required, int min, int max, int *out,
                     struct osb_err *err)
{
    int64_t v;
    struct osb_err e = {0};
    int r = osb_json_int(j, key, required, &v, &e);
    if (r < 0)
        return invalid(err, &e);
    if (r == 0)
        return 0;
    if (v < min || v > max)
        return osb_err_set(err, OSB_E_INVALID, "field '%s': %lld is out of range (%d..%d)", key,
                           (long long)v, min, max);
    *out = (int)v;
    return 1;
}

static int str_field(json_t *j, const char *key, bool required, const char **out,
                     struct osb_err *err)
{
    struct osb_err e = {0};
    int r = osb_json_str(j, key, required, out, &e);
    return r < 0 ? invalid(err, &e) : r;
}

static int mouse_action(const char *a, enum osb_mouse_action *out, struct osb_err *err)
{
    static const char *const names[] = {"move", "click", "double_click", "drag", "scroll"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(names); i++)
        if (strcmp(a, names[i]) == 0) {
            *out = (enum osb_mouse_action)i;
            return 0;
        }
    return osb_err_set(
        err, OSB_E_INVALID,
        "field 'action': \"%s\" is not one of move, click, double_click, drag, scroll", a);
}

static int mouse_button(json_t *j, unsigned *out, struct osb_err *err)
{
    const char *b = "left";
    if (str_field(j, "button", false, &b, err) < 0)
        return -1;
    if (strcmp(b, "left") == 0)
        *out = 1;
    else if (strcmp(b, "middle") == 0)
        *out = 2;
    else if (strcmp(b, "right") == 0)
        *out = 3;
    else
        return osb_err_set(err, OSB_E_INVALID,
                           "field 'button': \"%s\" is not left, right or middle", b);
    return 0;
}

int osb_desktop_parse_mouse(json_t *j, struct osb_mouse_op *op, struct osb_err *err)
{
    const char *a;
    *op = (struct osb_mouse_op){0};
    if (str_field(j, "action", true, &a, err) < 0 || mouse_action(a, &op->action, err) < 0 ||
        mouse_button(j, &op->button, err) < 0)
        return -1;
    bool need_xy = op->action == OSB_MOUSE_MOVE || op->action == OSB_MOUSE_DRAG;
    int hx = int_field(j, "x", need_xy, 0, 32767, &op->x, err);
    int hy = hx < 0 ? -1 : int_field(j, "y", need_xy || hx, 0, 32767, &op->y, err);
    if (hx < 0 || hy < 0)
        return -1;
    if (hy && !hx)
        return osb_err_set(err, OSB_E_INVALID, "field 'x': required with y");
    op->has_xy = hx == 1;
    if (op->action == OSB_MOUSE_DRAG && (int_field(j, "toX", true, 0, 32767, &op->to_x, err) < 0 ||
                                         int_field(j, "toY", true, 0, 32767, &op->to_y, err) < 0))
        return -1;
    if (op->action == OSB_MOUSE_SCROLL) {
        int m = OSB_DESKTOP_MAX_SCROLL;
        if (int_field(j, "dx", false, -m, m, &op->dx, err) < 0 ||
            int_field(j, "dy", false, -m, m, &op->dy, err) < 0)
            return -1;
        if (!op->dx && !op->dy)
            return osb_err_set(err, OSB_E_INVALID, "field 'dy': scroll needs a non-zero dx or dy");
    }
    return 0;
}

static int parse_press(json_t *j, struct osb_desktop_keys *k, struct osb_err *err)
{
    json_t *keys;
    struct osb_err e = {0};
    if (osb_json_array(j, "keys", true, &keys, &e) < 0)
        return invalid(err, &e);
    size_t n = json_array_size(keys);
    if (n == 0 || n > OSB_DESKTOP_MAX_KEYS)
        return osb_err_set(err, OSB_E_INVALID, "field 'keys': give 1 to %d keys",
                           OSB_DESKTOP_MAX_KEYS);
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(keys, i));
        bool mod;
        if (!name)
            return osb_err_set(err, OSB_E_INVALID, "field 'keys[%zu]': must be a string", i);
        if (!(k->syms[i] = osb_keysym_for_name(name, &mod)))
            return osb_err_set(err, OSB_E_INVALID, "field 'keys[%zu]': unknown key \"%s\"", i,
                               name);
    }
    k->nsyms = n;
    return 0;
}

int osb_desktop_parse_keys(json_t *j, struct osb_desktop_keys *k, struct osb_err *err)
{
    const char *a;
    *k = (struct osb_desktop_keys){0};
    if (str_field(j, "action", true, &a, err) < 0)
        return -1;
    if (strcmp(a, "press") == 0)
        return parse_press(j, k, err);
    if (strcmp(a, "type") != 0)
        return osb_err_set(err, OSB_E_INVALID, "field 'action': \"%s\" is not type or press", a);
    k->type = true;
    if (str_field(j, "text", true, &k->text, err) < 0)
        return -1;
    k->len = json_string_length(json_object_get(j, "text"));
    if (k->len > OSB_DESKTOP_MAX_TEXT)
        return osb_err_set(err, OSB_E_INVALID, "field 'text': longer than %d bytes",
                           OSB_DESKTOP_MAX_TEXT);
    return 0;
}

/* ---- screenshots ---- */

void osb_desktop_downscale(const uint8_t *src, unsigned w, unsigned h, uint8_t *dst, unsigned ow,
                           unsigned oh)
{
    _cleanup_free_ unsigned *x0 = osb_xcalloc(ow + 1, sizeof *x0);
    for (unsigned i = 0; i <= ow; i++)
        x0[i] = (unsigned)((uint64_t)i * w / ow);
    _cleanup_free_ uint32_t *acc = osb_xcalloc((size_t)ow * 3, sizeof *acc);
    for (unsigned oy = 0; oy < oh; oy++) {
        unsigned y0 = (unsigned)((uint64_t)oy * h / oh),
                 y1 = (unsigned)((uint64_t)(oy + 1) * h / oh);
        if (y1 <= y0)
            y1 = y0 + 1;
        memset(acc, 0, (size_t)ow * 3 * sizeof *acc);
        for (unsigned y = y0; y < y1; y++) {
            const uint8_t *row = src + (size_t)y * w * 3;
            for (unsigned ox = 0; ox < ow; ox++) {
                unsigned xe = x0[ox + 1] > x0[ox] ? x0[ox + 1] : x0[ox] + 1;
                for (unsigned x = x0[ox]; x < xe; x++)
                    for (int c = 0; c < 3; c++)
                        acc[ox * 3 + c] += row[x * 3 + c];
            }
        }
        for (unsigned ox = 0; ox < ow; ox++) {
            unsigned xe = x0[ox + 1] > x0[ox] ? x0[ox + 1] : x0[ox] + 1;
            uint32_t n = (xe - x0[ox]) * (y1 - y0);
            for (int c = 0; c < 3; c++)
                dst[((size_t)oy * ow + ox) * 3 + c] = (uint8_t)((acc[ox * 3 + c] + n / 2) / n);
        }
    }
}

/* A query parameter as an integer in [min, max]; absent leaves *out. */
static int query_int(struct osb_http_req *req, const char *name, int min, int max, int *out,
                     struct osb_err *err)
{
    const char *v = osb_http_req_query(req, name);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < min || n > max)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter '%s': \"%s\" is not an integer in %d..%d", name, v, min,
                           max);
    *out = (int)n;
    return 0;
}

static int parse_shot(struct osb_http_req *req, struct osb_desktop_shot *s, struct osb_err *err)
{
    *s = (struct osb_desktop_shot){.width = -1, .height = -1, .scale = 1};
    if (query_int(req, "x", 0, 32767, &s->x, err) < 0 ||
        query_int(req, "y", 0, 32767, &s->y, err) < 0 ||
        query_int(req, "width", 1, 32767, &s->width, err) < 0 ||
        query_int(req, "height", 1, 32767, &s->height, err) < 0)
        return -1;
    const char *v = osb_http_req_query(req, "scale");
    if (v) {
        char *end;
        s->scale = strtod(v, &end);
        if (!*v || *end || !(s->scale > 0 && s->scale <= 1))
            return osb_err_set(err, OSB_E_INVALID,
                               "query parameter 'scale': \"%s\" is not a number in (0, 1]", v);
    }
    return 0;
}

/* Fits the region to the screen: a region that starts outside it, or
 * reaches past it, is the caller's mistake. */
static int shot_region(const struct osb_x11 *c, struct osb_desktop_shot *s, struct osb_err *err)
{
    if (s->x >= c->width)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter 'x': %d is outside the screen (width %u)", s->x,
                           c->width);
    if (s->y >= c->height)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter 'y': %d is outside the screen (height %u)", s->y,
                           c->height);
    if (s->width < 0)
        s->width = c->width - s->x;
    if (s->height < 0)
        s->height = c->height - s->y;
    if (s->x + s->width > c->width)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter 'width': x + width = %d is past the screen (%u)",
                           s->x + s->width, c->width);
    if (s->y + s->height > c->height)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter 'height': y + height = %d is past the screen (%u)",
                           s->y + s->height, c->height);
    return 0;
}

static int run_shot(struct job *jb, struct osb_x11 *c, struct osb_err *err)
{
    struct osb_desktop_shot *s = &jb->shot;
    if (shot_region(c, s, err) < 0)
        return -1;
    unsigned w = (unsigned)s->width, h = (unsigned)s->height;
    if ((uint64_t)w * h > SHOT_MAX_PIXELS)
        return osb_err_set(err, OSB_E_INVALID,
                           "query parameter 'width': a %ux%u region is over %u pixels; ask for "
                           "a smaller one",
                           w, h, SHOT_MAX_PIXELS);
    _cleanup_free_ uint8_t *rgb = osb_xmalloc((size_t)w * h * 3);
    if (osb_x11_get_image_rgb(c, s->x, s->y, w, h, rgb, err) < 0)
        return -1;
    if (s->scale < 1) {
        unsigned ow = (unsigned)lround(w * s->scale), oh = (unsigned)lround(h * s->scale);
        ow = ow ? ow : 1;
        oh = oh ? oh : 1;
        uint8_t *small = osb_xmalloc((size_t)ow * oh * 3);
        osb_desktop_downscale(rgb, w, h, small, ow, oh);
        free(rgb);
        rgb = small;
        w = ow;
        h = oh;
    }
    return osb_png_encode(rgb, w, h, PNG_LEVEL, &jb->png, &jb->png_len, err);
}

/* ---- jobs on the thread pool ---- */

static json_t *point(int x, int y)
{
    return json_pack("{sisi}", "x", x, "y", y);
}

static int run_x(struct job *jb, struct osb_x11 *c, struct osb_err *err)
{
    int x, y;
    switch (jb->kind) {
    case J_SHOT: return run_shot(jb, c, err);
    case J_MOUSE:
        if (osb_xinput_mouse(c, &jb->mouse, &x, &y, err) < 0)
            return -1;
        jb->result = point(x, y);
        return 0;
    case J_KEYS:
        if ((jb->keys.type ? osb_xinput_type(c, jb->keys.text, jb->keys.len, err)
                           : osb_xinput_press(c, jb->keys.syms, jb->keys.nsyms, err)) < 0)
            return -1;
        jb->result = json_object();
        return 0;
    case J_CURSOR:
        if (osb_x11_query_pointer(c, &x, &y, err) < 0)
            return -1;
        jb->result = point(x, y);
        return 0;
    case J_WINDOWS: {
        json_t *items;
        if (osb_xwin_list(c, &items, err) < 0)
            return -1;
        jb->result = json_pack("{so}", "items", items);
        return 0;
    }
    case J_FOCUS:
        if (osb_xwin_focus(c, jb->win, err) < 0)
            return -1;
        jb->result = json_object();
        return 0;
    }
    return osb_err_set(err, OSB_E_INTERNAL, "unknown desktop job");
}

static void work_cb(uv_work_t *w)
{
    struct job *jb = w->data;
    struct osb_x11 *c = osb_xmalloc(sizeof *c); /* 80 KiB of buffers: not on a pool stack */
    jb->failed = osb_x11_open(c, jb->d->display, &jb->err) < 0 || run_x(jb, c, &jb->err) < 0;
    osb_x11_close(c);
    free(c);
}

static void respond_err(struct osb_http_req *req, const struct osb_err *err)
{
    switch (err->code) {
    case OSB_E_INVALID:
        osb_http_respond_error(req, 400, "DESKTOP::INVALID_PARAMETER", "%s", err->msg);
        break;
    case OSB_E_UNAVAILABLE:
    case OSB_E_DENIED:
        osb_http_respond_error(req, 409, "DESKTOP::NO_DISPLAY", "%s", err->msg);
        break;
    default: osb_http_respond_error(req, 500, "DESKTOP::X_ERROR", "%s", err->msg);
    }
}

static void job_free(struct job *jb)
{
    json_decref(jb->result);
    json_decref(jb->body);
    free(jb->png);
    free(jb);
}

static void after_cb(uv_work_t *w, int status);

/* Runs the next queued job whose client is still there. */
static void run_next(struct osb_execd_desktop *d)
{
    while (!d->running && d->queue) {
        struct job *jb = d->queue;
        d->queue = jb->next;
        if (!d->queue)
            d->queue_tail = &d->queue;
        if (!jb->req) {
            job_free(jb);
            continue;
        }
        d->running = true;
        if (uv_queue_work(d->x->loop, &jb->work, work_cb, after_cb) < 0) {
            jb->failed = true;
            osb_err_set(&jb->err, OSB_E_INTERNAL, "cannot queue the desktop job");
            after_cb(&jb->work, 0);
        }
    }
}

static void after_cb(uv_work_t *w, int status)
{
    struct job *jb = w->data;
    struct osb_execd_desktop *d = jb->d;
    (void)status;
    if (jb->req) {
        osb_http_req_on_close(jb->req, NULL, NULL);
        if (jb->failed)
            respond_err(jb->req, &jb->err);
        else if (jb->png)
            osb_http_respond(jb->req, 200, "image/png", jb->png, jb->png_len);
        else
            osb_http_respond_json(jb->req, 200, json_incref(jb->result));
    }
    job_free(jb);
    d->running = false;
    run_next(d);
}

static void on_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct job *jb = ud;
    jb->req = NULL;
}

static struct job *job_new(struct osb_execd_desktop *d, struct osb_http_req *req,
                           enum job_kind kind)
{
    struct job *jb = osb_xcalloc(1, sizeof *jb);
    jb->d = d;
    jb->req = req;
    jb->kind = kind;
    jb->work.data = jb;
    return jb;
}

static void job_start(struct job *jb)
{
    struct osb_execd_desktop *d = jb->d;
    osb_http_req_on_close(jb->req, on_gone, jb);
    *d->queue_tail = jb;
    d->queue_tail = &jb->next;
    run_next(d);
}

/* ---- handlers ---- */

static int parse_body(struct osb_http_req *req, json_t **j, struct osb_err *err)
{
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    struct osb_err e = {0};
    if (osb_json_parse_object(body, len, false, j, &e) < 0)
        return osb_err_set(err, OSB_E_INVALID, "%s", e.msg);
    return 0;
}

static void h_screenshot(struct osb_http_req *req, void *ud)
{
    struct job *jb = job_new(ud, req, J_SHOT);
    if (parse_shot(req, &jb->shot, &jb->err) < 0) {
        respond_err(req, &jb->err);
        free(jb);
        return;
    }
    job_start(jb);
}

static void h_cursor(struct osb_http_req *req, void *ud)
{
    job_start(job_new(ud, req, J_CURSOR));
}

static void h_windows(struct osb_http_req *req, void *ud)
{
    job_start(job_new(ud, req, J_WINDOWS));
}

static int parse_focus(json_t *j, uint32_t *win, struct osb_err *err)
{
    const char *a;
    int64_t id;
    struct osb_err e = {0};
    if (str_field(j, "action", true, &a, err) < 0)
        return -1;
    if (strcmp(a, "focus") != 0)
        return osb_err_set(err, OSB_E_INVALID, "field 'action': \"%s\" is not focus", a);
    if (osb_json_int(j, "id", true, &id, &e) < 0)
        return invalid(err, &e);
    if (id <= 0 || id > UINT32_MAX)
        return osb_err_set(err, OSB_E_INVALID, "field 'id': %lld is not a window id",
                           (long long)id);
    *win = (uint32_t)id;
    return 0;
}

/* The POST routes: parse the body into the job's typed request, then run. */
static void post_job(struct osb_http_req *req, struct osb_execd_desktop *d, enum job_kind kind)
{
    struct job *jb = job_new(d, req, kind);
    int r = parse_body(req, &jb->body, &jb->err);
    if (r == 0 && kind == J_MOUSE)
        r = osb_desktop_parse_mouse(jb->body, &jb->mouse, &jb->err);
    else if (r == 0 && kind == J_KEYS)
        r = osb_desktop_parse_keys(jb->body, &jb->keys, &jb->err);
    else if (r == 0 && kind == J_FOCUS)
        r = parse_focus(jb->body, &jb->win, &jb->err);
    if (r < 0) {
        respond_err(req, &jb->err);
        json_decref(jb->body);
        free(jb);
        return;
    }
    job_start(jb);
}

static void h_mouse(struct osb_http_req *req, void *ud)
{
    post_job(req, ud, J_MOUSE);
}

static void h_keyboard(struct osb_http_req *req, void *ud)
{
    post_job(req, ud, J_KEYS);
}

static void h_focus(struct osb_http_req *req, void *ud)
{
    post_job(req, ud, J_FOCUS);
}

/* ---- POST /desktop/open ---- */

#define CHROMIUM "/usr/lib/chromium/chromium"

/* name in $PATH (as execd's children see it), malloc'd; NULL if absent. */
static char *find_in_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char *f = osb_xasprintf("%.*s/%s", (int)n, n ? p : ".", name);
        if (access(f, X_OK) == 0)
            return f;
        free(f);
        p += n + (p[n] == ':');
    }
    return NULL;
}

static bool is_web_url(const char *t)
{
    return strncasecmp(t, "http://", 7) == 0 || strncasecmp(t, "https://", 8) == 0;
}

/* argv for opening target: xdg-open, else for a web URL chromium (the
 * binary itself: Debian's /usr/bin wrapper adds nothing we need) or
 * firefox. NULL when none fits. */
static char *opener(struct osb_execd *x, const char *target, const char *argv[8])
{
    char *prog = find_in_path("xdg-open");
    size_t n = 0;
    if (!prog && is_web_url(target)) {
        if (access(CHROMIUM, X_OK) == 0) {
            prog = osb_xstrdup(CHROMIUM);
            argv[1] = "--no-first-run";
            argv[2] = "--no-default-browser-check";
            n = 2;
            /* Chromium refuses to run as root with its sandbox on. */
            if ((x->has_default_user ? x->default_uid : geteuid()) == 0)
                argv[++n] = "--no-sandbox";
        } else {
            prog = find_in_path("firefox");
        }
    }
    argv[0] = prog;
    argv[n + 1] = target;
    argv[n + 2] = NULL;
    return prog;
}

static void opened_exit(pid_t pid, int wstatus, void *ud)
{
    (void)ud;
    osb_debug("desktop: opener %d ended (status 0x%x)", (int)pid, wstatus);
}

static int parse_open(json_t *j, const char **target, struct osb_err *err)
{
    struct osb_err e = {0};
    if (osb_json_name(j, "target", true, target, &e) < 0)
        return invalid(err, &e);
    if (!**target)
        return osb_err_set(err, OSB_E_INVALID, "field 'target': must not be empty");
    /* It is an argument: it must not read as an option. */
    if (**target == '-')
        return osb_err_set(err, OSB_E_INVALID, "field 'target': must not start with '-'");
    return 0;
}

static void h_open(struct osb_http_req *req, void *ud)
{
    struct osb_execd_desktop *d = ud;
    struct osb_err err = {0};
    json_t *j = NULL;
    const char *target, *argv[8] = {0};
    if (parse_body(req, &j, &err) < 0 || parse_open(j, &target, &err) < 0) {
        respond_err(req, &err);
        json_decref(j);
        return;
    }
    _cleanup_free_ char *prog = opener(d->x, target, argv);
    if (!prog) {
        osb_http_respond_error(req, 409, "DESKTOP::NO_OPENER", "no xdg-open in PATH%s",
                               is_web_url(target) ? ", nor " CHROMIUM " or firefox"
                                                  : " (needed for anything but an http(s) URL)");
        json_decref(j);
        return;
    }
    json_t *extra = json_pack("{ss}", "DISPLAY", d->display);
    char **env = osb_execd_env_build(d->x, extra);
    struct osb_spawn sp = {.argv = argv,
                           .envp = (const char *const *)env,
                           .stdin_fd = -1,
                           .stdout_fd = -1,
                           .stderr_fd = -1,
                           .new_session = true, /* detached: outlives nothing of ours */
                           .ctty_fd = -1};
    pid_t pid = osb_execd_spawn(d->x, &sp, &err);
    osb_execd_env_free(env);
    json_decref(extra);
    json_decref(j);
    if (pid < 0) {
        osb_http_respond_error(req, 500, "DESKTOP::OPEN_FAILED", "%s", err.msg);
        return;
    }
    osb_execd_watch_child(d->x, pid, opened_exit, NULL);
    osb_http_respond_json(req, 200, json_pack("{si}", "pid", (int)pid));
}

/* ---- routes ---- */

void osb_execd_desktop_routes(struct osb_execd *x)
{
    struct osb_execd_desktop *d = osb_xcalloc(1, sizeof *d);
    const char *disp = getenv("DISPLAY");
    d->x = x;
    d->display = osb_xstrdup(disp && *disp ? disp : ":0");
    d->queue_tail = &d->queue;
    x->desktop = d;
    const struct osb_http_route routes[] = {
        {"GET", "/desktop/screenshot", h_screenshot, OSB_ROUTE_NO_BODY, d},
        {"POST", "/desktop/mouse", h_mouse, 0, d},
        {"POST", "/desktop/keyboard", h_keyboard, 0, d},
        {"GET", "/desktop/cursor", h_cursor, OSB_ROUTE_NO_BODY, d},
        {"GET", "/desktop/windows", h_windows, OSB_ROUTE_NO_BODY, d},
        {"POST", "/desktop/windows", h_focus, 0, d},
        {"POST", "/desktop/open", h_open, 0, d},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
