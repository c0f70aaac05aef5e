#include "execd/xinput.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "execd/keysym.h"

/* ---- mouse ---- */

static int check_point(const struct osb_x11 *c, int x, int y, const char *fx, const char *fy,
                       struct osb_err *err)
{
    if (x < 0 || x >= c->width)
        return osb_err_set(err, OSB_E_INVALID, "field '%s': %d is outside the screen (0..%u)", fx,
                           x, c->width - 1u);
    if (y < 0 || y >= c->height)
        return osb_err_set(err, OSB_E_INVALID, "field '%s': %d is outside the screen (0..%u)", fy,
                           y, c->height - 1u);
    return 0;
}

static void click(struct osb_x11 *c, unsigned button, int times)
{
    for (int i = 0; i < times; i++) {
        osb_x11_fake_button(c, button, true);
        osb_x11_fake_button(c, button, false);
    }
}

/* Drags in steps: toolkits start a drag only after motion with the button
 * held, and some need more than one event to see it. */
static void drag(struct osb_x11 *c, const struct osb_mouse_op *op)
{
    enum { STEPS = 8 };
    osb_x11_fake_button(c, op->button, true);
    for (int i = 1; i <= STEPS; i++)
        osb_x11_fake_motion(c, op->x + (op->to_x - op->x) * i / STEPS,
                            op->y + (op->to_y - op->y) * i / STEPS);
    osb_x11_fake_button(c, op->button, false);
}

int osb_xinput_mouse(struct osb_x11 *c, const struct osb_mouse_op *op, int *px, int *py,
                     struct osb_err *err)
{
    if ((op->has_xy && check_point(c, op->x, op->y, "x", "y", err) < 0) ||
        (op->action == OSB_MOUSE_DRAG &&
         check_point(c, op->to_x, op->to_y, "toX", "toY", err) < 0) ||
        osb_x11_xtest_init(c, err) < 0)
        return -1;
    if (op->has_xy)
        osb_x11_fake_motion(c, op->x, op->y);
    switch (op->action) {
    case OSB_MOUSE_MOVE: break;
    case OSB_MOUSE_CLICK: click(c, op->button, 1); break;
    case OSB_MOUSE_DOUBLE_CLICK: click(c, op->button, 2); break;
    case OSB_MOUSE_DRAG: drag(c, op); break;
    case OSB_MOUSE_SCROLL:
        /* Wheel buttons: 4 up, 5 down, 6 left, 7 right. */
        click(c, op->dy > 0 ? 5 : 4, abs(op->dy));
        click(c, op->dx > 0 ? 7 : 6, abs(op->dx));
        break;
    }
    if (osb_x11_sync(c, err) < 0)
        return -1;
    return osb_x11_query_pointer(c, px, py, err);
}

/* ---- keyboard ---- */

struct kb {
    struct osb_x11 *c;
    struct osb_x11_keymap km;
    unsigned shift_kc; /* 0: none */
    uint8_t *spare;    /* keycodes free for remapping, best first */
    size_t nspare, next;
    bool touched[256]; /* keycodes this batch typed with or bound */
    bool pending[256]; /* bound since the last commit */
};

static uint32_t *syms_of(struct kb *k, unsigned kc)
{
    return k->km.syms + (size_t)(kc - k->km.min_keycode) * k->km.per;
}

/* The keycode that yields sym at level 0, else at level 1 (*shift). */
static unsigned find_key(struct kb *k, uint32_t sym, bool *shift)
{
    unsigned levels = k->km.per < 2 ? k->km.per : 2;
    for (unsigned lv = 0; lv < levels; lv++)
        for (unsigned i = 0; i < k->km.count; i++)
            if (k->km.syms[(size_t)i * k->km.per + lv] == sym) {
                *shift = lv == 1;
                return k->km.min_keycode + i;
            }
    return 0;
}

static bool all_empty(const uint32_t *s, unsigned per)
{
    for (unsigned i = 0; i < per; i++)
        if (s[i])
            return false;
    return true;
}

/* A keycode an earlier call bound: one character keysym (Latin-1 or
 * Unicode) on every level it has (the server copies it to the second
 * group's levels too). */
static bool ours(const uint32_t *s, unsigned per)
{
    bool character = (s[0] >= 0xa0 && s[0] <= 0xff) || (s[0] >= 0x01000100 && s[0] <= 0x0110ffff);
    for (unsigned i = 1; character && i < per; i++)
        if (s[i] && s[i] != s[0])
            return false;
    return character;
}

static int kb_open(struct kb *k, struct osb_x11 *c, struct osb_err *err)
{
    memset(k, 0, sizeof *k);
    k->c = c;
    if (osb_x11_xtest_init(c, err) < 0 || osb_x11_get_keymap(c, &k->km, err) < 0)
        return -1;
    bool shift;
    k->shift_kc = find_key(k, OSB_XK_SHIFT_L, &shift);
    k->spare = osb_xcalloc(k->km.count, 1);
    /* Empty keycodes from the top (the low ones are those real keyboards
     * have), then the ones earlier calls bound. */
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = k->km.count; i-- > 0;) {
            const uint32_t *s = k->km.syms + (size_t)i * k->km.per;
            if (pass == 0 ? all_empty(s, k->km.per) : ours(s, k->km.per))
                k->spare[k->nspare++] = (uint8_t)(k->km.min_keycode + i);
        }
    return 0;
}

static void kb_close(struct kb *k)
{
    osb_x11_keymap_free(&k->km);
    free(k->spare);
}

/* Gives sym a spare keycode (both levels, so Shift does not matter); 0
 * when every spare one is taken by this batch. */
static unsigned kb_bind(struct kb *k, uint32_t sym)
{
    while (k->next < k->nspare && k->touched[k->spare[k->next]])
        k->next++;
    if (k->next == k->nspare)
        return 0;
    unsigned kc = k->spare[k->next++];
    uint32_t *s = syms_of(k, kc);
    memset(s, 0, k->km.per * sizeof *s);
    s[0] = sym;
    if (k->km.per > 1)
        s[1] = sym;
    k->touched[kc] = true;
    k->pending[kc] = true;
    return kc;
}

/* Sends the bindings made since the last commit, one request per run of
 * adjacent keycodes: only spare keycodes are written (a core rewrite of a
 * real key could cost it its XKB type). All go out before the keys that use
 * them, so a client reads the keymap once for the lot. */
static void kb_commit(struct kb *k)
{
    for (unsigned kc = 0; kc < 256; kc++) {
        if (!k->pending[kc])
            continue;
        unsigned end = kc;
        while (end + 1 < 256 && k->pending[end + 1])
            end++;
        osb_x11_change_keymap(k->c, (uint8_t)kc, end - kc + 1, k->km.per, syms_of(k, kc));
        for (unsigned i = kc; i <= end; i++)
            k->pending[i] = false;
        kc = end;
    }
}

/* More characters to bind than spare keycodes: the keycodes of this batch
 * may be bound again once its keys are through. The pause is for the
 * clients, which read the new mapping only after our key events. */
static int kb_new_batch(struct kb *k, struct osb_err *err)
{
    if (osb_x11_sync(k->c, err) < 0)
        return -1;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    memset(k->touched, 0, sizeof k->touched);
    k->next = 0;
    return 0;
}

/* The keycode for sym, binding a spare one if needed (*shift: press Shift
 * with it). 0 when no spare is left. */
static unsigned kb_key(struct kb *k, uint32_t sym, bool *shift)
{
    *shift = false;
    unsigned kc = find_key(k, sym, shift);
    if (kc && (!*shift || k->shift_kc))
        return kc;
    *shift = false;
    return kb_bind(k, sym);
}

static void tap(struct kb *k, unsigned kc, bool shift)
{
    if (shift)
        osb_x11_fake_key(k->c, k->shift_kc, true);
    osb_x11_fake_key(k->c, kc, true);
    osb_x11_fake_key(k->c, kc, false);
    if (shift)
        osb_x11_fake_key(k->c, k->shift_kc, false);
}

struct tap {
    unsigned kc;
    bool shift;
};

/* Plans keys for text from *p until a character finds no keycode (every
 * spare one is bound in this batch); *p is left there. */
static size_t plan_batch(struct kb *k, const char **p, const char *end, struct tap *taps,
                         struct osb_err *err)
{
    size_t n = 0;
    while (*p < end) {
        const char *at = *p;
        uint32_t cp, sym;
        if (osb_utf8_next(p, end, &cp) < 0) {
            osb_err_set(err, OSB_E_INVALID, "field 'text': not valid UTF-8");
            return SIZE_MAX;
        }
        if (!(sym = osb_keysym_for_codepoint(cp)))
            continue; /* control characters other than newline and tab */
        bool shift;
        unsigned kc = kb_key(k, sym, &shift);
        if (!kc) {
            *p = at;
            break;
        }
        k->touched[kc] = true;
        taps[n++] = (struct tap){kc, shift};
    }
    return n;
}

static int type_text(struct kb *k, const char *text, size_t len, struct osb_err *err)
{
    _cleanup_free_ struct tap *taps = osb_xcalloc(len + 1, sizeof *taps);
    const char *p = text, *end = text + len;
    for (;;) {
        size_t n = plan_batch(k, &p, end, taps, err);
        if (n == SIZE_MAX)
            return -1;
        kb_commit(k);
        for (size_t i = 0; i < n; i++)
            tap(k, taps[i].kc, taps[i].shift);
        if (p == end)
            break;
        if (n == 0)
            return osb_err_set(err, OSB_E_INTERNAL, "no spare keycode to type with");
        if (kb_new_batch(k, err) < 0)
            return -1;
    }
    return osb_x11_sync(k->c, err);
}

int osb_xinput_type(struct osb_x11 *c, const char *text, size_t len, struct osb_err *err)
{
    struct kb k;
    int r = kb_open(&k, c, err);
    if (r == 0)
        r = type_text(&k, text, len, err);
    kb_close(&k);
    return r;
}

int osb_xinput_press(struct osb_x11 *c, const uint32_t *syms, size_t n, struct osb_err *err)
{
    struct kb k;
    if (kb_open(&k, c, err) < 0) {
        kb_close(&k);
        return -1;
    }
    _cleanup_free_ unsigned *kcs = osb_xcalloc(n + 1, sizeof *kcs);
    _cleanup_free_ bool *shifts = osb_xcalloc(n + 1, sizeof *shifts);
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        if (!(kcs[i] = kb_key(&k, syms[i], &shifts[i])))
            r = osb_err_set(err, OSB_E_INTERNAL, "no keycode left for key %zu", i);
        else
            k.touched[kcs[i] & 0xff] = true;
    /* A modifier acts through its keycode (the modifier map), at whatever
     * level the keymap lists its keysym: no Shift with it (Xvfb's Meta_L is
     * on level 2 of the key it shares). */
    for (size_t i = 0; i < n; i++)
        if (syms[i] >= OSB_XK_SHIFT_L && syms[i] <= 0xffee)
            shifts[i] = false;
    if (r == 0) {
        kb_commit(&k);
        for (size_t i = 0; i < n; i++) {
            if (shifts[i])
                osb_x11_fake_key(c, k.shift_kc, true);
            osb_x11_fake_key(c, kcs[i], true);
        }
        for (size_t i = n; i-- > 0;) {
            osb_x11_fake_key(c, kcs[i], false);
            if (shifts[i])
                osb_x11_fake_key(c, k.shift_kc, false);
        }
        r = osb_x11_sync(c, err);
    }
    kb_close(&k);
    return r;
}
