#include "execd/x11.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

/* Core request opcodes. */
enum {
    X_GET_WINDOW_ATTRIBUTES = 3,
    X_CONFIGURE_WINDOW = 12,
    X_GET_GEOMETRY = 14,
    X_QUERY_TREE = 15,
    X_INTERN_ATOM = 16,
    X_GET_PROPERTY = 20,
    X_SEND_EVENT = 25,
    X_QUERY_POINTER = 38,
    X_TRANSLATE_COORDINATES = 40,
    X_SET_INPUT_FOCUS = 42,
    X_GET_INPUT_FOCUS = 43,
    X_GET_IMAGE = 73,
    X_QUERY_EXTENSION = 98,
    X_CHANGE_KEYBOARD_MAPPING = 100,
    X_GET_KEYBOARD_MAPPING = 101,
};
#define XTEST_FAKE_INPUT 2
/* No reply we ask for is near this (an image band is at most one maximum
 * request, 256 KiB): a larger length is a broken or hostile server, and
 * execd (PID 1 of the sandbox) must not die allocating it. */
#define REPLY_MAX (32u << 20)
#define PAD4(n) (((n) + 3u) & ~3u)

/* The protocol is spoken in our own byte order (announced at setup). */
static uint16_t get16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void put16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

/* ---- socket I/O with a deadline ---- */

static int wait_fd(struct osb_x11 *c, short ev, int64_t deadline, struct osb_err *err)
{
    for (;;) {
        int64_t left = deadline - osb_mono_ms();
        if (left <= 0)
            return osb_err_set(err, OSB_E_INTERNAL, "the X server on %s did not answer in %d ms",
                               c->display, OSB_X11_TIMEOUT_MS);
        struct pollfd p = {.fd = c->fd, .events = ev};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return osb_err_sys(err, "poll on the X connection");
    }
}

static int write_all(struct osb_x11 *c, const void *data, size_t n, struct osb_err *err)
{
    const char *p = data;
    int64_t deadline = osb_mono_ms() + OSB_X11_TIMEOUT_MS;
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(c, POLLOUT, deadline, err) < 0)
                return -1;
            continue;
        }
        if (w < 0)
            return osb_err_sys(err, "write to the X server on %s", c->display);
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int flush(struct osb_x11 *c, struct osb_err *err)
{
    if (!c->out_len)
        return 0;
    int r = write_all(c, c->out, c->out_len, err);
    c->out_len = 0;
    return r;
}

/* Queue one request; its sequence number is c->seq afterwards. A request
 * larger than the buffer goes out directly. */
static int request(struct osb_x11 *c, const void *req, size_t n, struct osb_err *err)
{
    c->seq++;
    if (c->out_len + n > sizeof c->out && flush(c, err) < 0)
        return -1;
    if (n > sizeof c->out)
        return write_all(c, req, n, err);
    memcpy(c->out + c->out_len, req, n);
    c->out_len += n;
    return 0;
}

/* Buffered requests without a reply: a failure is kept for osb_x11_sync. */
static void request_noreply(struct osb_x11 *c, const void *req, size_t n)
{
    struct osb_err e = {0};
    if (request(c, req, n, &e) < 0 && !c->async_err.code)
        c->async_err = e;
}

static int read_exact(struct osb_x11 *c, void *dst, size_t n, int64_t deadline, struct osb_err *err)
{
    unsigned char *d = dst;
    while (n) {
        if (c->in_pos < c->in_len) {
            size_t k = c->in_len - c->in_pos < n ? c->in_len - c->in_pos : n;
            if (d)
                memcpy(d, c->in + c->in_pos, k);
            c->in_pos += k;
            n -= k;
            d = d ? d + k : NULL;
            continue;
        }
        /* Large payloads (images) skip the buffer. */
        bool direct = d && n >= sizeof c->in;
        ssize_t r = recv(c->fd, direct ? d : c->in, direct ? n : sizeof c->in, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(c, POLLIN, deadline, err) < 0)
                return -1;
            continue;
        }
        if (r < 0)
            return osb_err_sys(err, "read from the X server on %s", c->display);
        if (r == 0)
            return osb_err_set(err, OSB_E_INTERNAL, "the X server on %s closed the connection",
                               c->display);
        if (direct) {
            d += r;
            n -= (size_t)r;
        } else {
            c->in_pos = 0;
            c->in_len = (size_t)r;
        }
    }
    return 0;
}

static const char *error_name(unsigned code)
{
    static const char *const names[] = {
        NULL,        "BadRequest", "BadValue",    "BadWindow",   "BadPixmap", "BadAtom",
        "BadCursor", "BadFont",    "BadMatch",    "BadDrawable", "BadAccess", "BadAlloc",
        "BadColor",  "BadGC",      "BadIDChoice", "BadName",     "BadLength", "BadImplementation",
    };
    return code < OSB_ARRAY_LEN(names) && names[code] ? names[code] : "an extension's error";
}

static void x_error(struct osb_err *err, const unsigned char *e)
{
    osb_err_set(err, OSB_E_INTERNAL, "X error %s (%u) on request %u.%u (resource 0x%x)",
                error_name(e[1]), e[1], e[10], get16(e + 8), get32(e + 4));
}

/* Reads until the reply to request seq: its 32-byte header into hdr and
 * the rest (hdr length * 4 bytes) into a malloc'd *extra when extra is not
 * NULL. Events are dropped; errors for earlier requests are kept. */
static int reply(struct osb_x11 *c, uint16_t seq, unsigned char hdr[32], unsigned char **extra,
                 struct osb_err *err)
{
    if (extra)
        *extra = NULL;
    if (flush(c, err) < 0)
        return -1;
    int64_t deadline = osb_mono_ms() + OSB_X11_TIMEOUT_MS;
    for (;;) {
        if (read_exact(c, hdr, 32, deadline, err) < 0)
            return -1;
        uint16_t s = get16(hdr + 2);
        if (hdr[0] == 0) {
            if (s == seq) {
                c->last_error = hdr[1];
                x_error(err, hdr);
                return -1;
            }
            if (!c->async_err.code)
                x_error(&c->async_err, hdr);
            continue;
        }
        size_t more = hdr[0] == 1 || (hdr[0] & 0x7f) == 35 ? (size_t)get32(hdr + 4) * 4 : 0;
        if (hdr[0] != 1 || s != seq) { /* an event, or a reply nobody waits for */
            if (more && read_exact(c, NULL, more, deadline, err) < 0)
                return -1;
            continue;
        }
        if (more > REPLY_MAX)
            return osb_err_set(err, OSB_E_INTERNAL, "the X server on %s sent a %zu-byte reply",
                               c->display, more);
        if (!extra)
            return more ? read_exact(c, NULL, more, deadline, err) : 0;
        *extra = osb_xmalloc(more + 1);
        (*extra)[more] = 0;
        if (read_exact(c, *extra, more, deadline, err) < 0) {
            free(*extra);
            *extra = NULL;
            return -1;
        }
        return 0;
    }
}

/* A request with a 32-byte reply and nothing after it. */
static int roundtrip(struct osb_x11 *c, const void *req, size_t n, unsigned char hdr[32],
                     struct osb_err *err)
{
    if (request(c, req, n, err) < 0)
        return -1;
    return reply(c, c->seq, hdr, NULL, err);
}

int osb_x11_sync(struct osb_x11 *c, struct osb_err *err)
{
    uint32_t focus;
    if (osb_x11_get_input_focus(c, &focus, err) < 0)
        return -1;
    if (c->async_err.code) {
        *err = c->async_err;
        c->async_err = (struct osb_err){0};
        return -1;
    }
    return 0;
}

/* ---- simple requests ---- */

static void req_header(unsigned char *b, uint8_t op, uint8_t data, size_t bytes)
{
    b[0] = op;
    b[1] = data;
    put16(b + 2, (uint16_t)(bytes / 4));
}

static int window_req(struct osb_x11 *c, uint8_t op, uint32_t win, unsigned char hdr[32],
                      unsigned char **extra, struct osb_err *err)
{
    unsigned char b[8] = {0};
    req_header(b, op, 0, sizeof b);
    put32(b + 4, win);
    if (request(c, b, sizeof b, err) < 0)
        return -1;
    return reply(c, c->seq, hdr, extra, err);
}

int osb_x11_intern_atom(struct osb_x11 *c, const char *name, bool only_if_exists, uint32_t *atom,
                        struct osb_err *err)
{
    size_t n = strlen(name);
    unsigned char b[8 + 256] = {0}, hdr[32];
    if (n > 256)
        return osb_err_set(err, OSB_E_INVALID, "atom name too long");
    req_header(b, X_INTERN_ATOM, only_if_exists, 8 + PAD4(n));
    put16(b + 4, (uint16_t)n);
    memcpy(b + 8, name, n);
    if (roundtrip(c, b, 8 + PAD4(n), hdr, err) < 0)
        return -1;
    *atom = get32(hdr + 8);
    return 0;
}

int osb_x11_get_property(struct osb_x11 *c, uint32_t win, uint32_t prop, uint32_t type,
                         uint32_t max_bytes, struct osb_x11_prop *out, struct osb_err *err)
{
    unsigned char b[24] = {0}, hdr[32], *extra;
    req_header(b, X_GET_PROPERTY, 0, sizeof b);
    put32(b + 4, win);
    put32(b + 8, prop);
    put32(b + 12, type);
    put32(b + 16, 0);
    put32(b + 20, (max_bytes + 3) / 4);
    *out = (struct osb_x11_prop){0};
    if (request(c, b, sizeof b, err) < 0 || reply(c, c->seq, hdr, &extra, err) < 0)
        return -1;
    out->format = hdr[1];
    out->type = get32(hdr + 8);
    out->n = get32(hdr + 16);
    size_t bytes = (size_t)out->n * (out->format / 8);
    if (bytes > (size_t)get32(hdr + 4) * 4) { /* a server that lies about the length */
        free(extra);
        return osb_err_set(err, OSB_E_INTERNAL, "malformed GetProperty reply");
    }
    out->data = extra;
    return 0;
}

int osb_x11_get_geometry(struct osb_x11 *c, uint32_t win, struct osb_x11_geom *g,
                         struct osb_err *err)
{
    unsigned char hdr[32];
    if (window_req(c, X_GET_GEOMETRY, win, hdr, NULL, err) < 0)
        return -1;
    g->x = (int16_t)get16(hdr + 12);
    g->y = (int16_t)get16(hdr + 14);
    g->width = get16(hdr + 16);
    g->height = get16(hdr + 18);
    g->border = get16(hdr + 20);
    return 0;
}

int osb_x11_translate(struct osb_x11 *c, uint32_t src, uint32_t dst, int x, int y, int *ox, int *oy,
                      struct osb_err *err)
{
    unsigned char b[16] = {0}, hdr[32];
    req_header(b, X_TRANSLATE_COORDINATES, 0, sizeof b);
    put32(b + 4, src);
    put32(b + 8, dst);
    put16(b + 12, (uint16_t)(int16_t)x);
    put16(b + 14, (uint16_t)(int16_t)y);
    if (roundtrip(c, b, sizeof b, hdr, err) < 0)
        return -1;
    *ox = (int16_t)get16(hdr + 12);
    *oy = (int16_t)get16(hdr + 14);
    return 0;
}

int osb_x11_query_pointer(struct osb_x11 *c, int *x, int *y, struct osb_err *err)
{
    unsigned char hdr[32];
    if (window_req(c, X_QUERY_POINTER, c->root, hdr, NULL, err) < 0)
        return -1;
    *x = (int16_t)get16(hdr + 16);
    *y = (int16_t)get16(hdr + 18);
    return 0;
}

int osb_x11_query_tree(struct osb_x11 *c, uint32_t win, uint32_t **children, size_t *n,
                       struct osb_err *err)
{
    unsigned char hdr[32], *extra;
    if (window_req(c, X_QUERY_TREE, win, hdr, &extra, err) < 0)
        return -1;
    size_t k = get16(hdr + 16);
    if (k * 4 > (size_t)get32(hdr + 4) * 4) {
        free(extra);
        return osb_err_set(err, OSB_E_INTERNAL, "malformed QueryTree reply");
    }
    *children = osb_xcalloc(k ? k : 1, sizeof **children);
    for (size_t i = 0; i < k; i++)
        (*children)[i] = get32(extra + 4 * i);
    *n = k;
    free(extra);
    return 0;
}

int osb_x11_window_attrs(struct osb_x11 *c, uint32_t win, int *map_state, bool *override_redirect,
                         struct osb_err *err)
{
    unsigned char hdr[32];
    if (window_req(c, X_GET_WINDOW_ATTRIBUTES, win, hdr, NULL, err) < 0)
        return -1;
    *map_state = hdr[26];
    *override_redirect = hdr[27] != 0;
    return 0;
}

int osb_x11_get_input_focus(struct osb_x11 *c, uint32_t *win, struct osb_err *err)
{
    unsigned char b[4], hdr[32];
    req_header(b, X_GET_INPUT_FOCUS, 0, sizeof b);
    if (roundtrip(c, b, sizeof b, hdr, err) < 0)
        return -1;
    *win = get32(hdr + 8);
    return 0;
}

/* ---- XTEST and the keyboard ---- */

int osb_x11_xtest_init(struct osb_x11 *c, struct osb_err *err)
{
    if (c->xtest_major)
        return 0;
    unsigned char b[16] = {0}, hdr[32];
    req_header(b, X_QUERY_EXTENSION, 0, sizeof b);
    put16(b + 4, 5);
    memcpy(b + 8, "XTEST", 5);
    if (roundtrip(c, b, sizeof b, hdr, err) < 0)
        return -1;
    if (!hdr[8])
        return osb_err_set(err, OSB_E_INTERNAL,
                           "the X server on %s has no XTEST extension (needed for input)",
                           c->display);
    c->xtest_major = hdr[9];
    return 0;
}

static void fake(struct osb_x11 *c, uint8_t type, uint8_t detail, int x, int y)
{
    unsigned char b[36] = {0};
    req_header(b, c->xtest_major, XTEST_FAKE_INPUT, sizeof b);
    b[4] = type;
    b[5] = detail;
    put32(b + 12, type == 6 ? c->root : 0);
    put16(b + 24, (uint16_t)(int16_t)x);
    put16(b + 26, (uint16_t)(int16_t)y);
    request_noreply(c, b, sizeof b);
}

void osb_x11_fake_motion(struct osb_x11 *c, int x, int y)
{
    fake(c, 6 /* MotionNotify */, 0 /* absolute */, x, y);
}

void osb_x11_fake_button(struct osb_x11 *c, unsigned button, bool press)
{
    fake(c, press ? 4 : 5, (uint8_t)button, 0, 0);
}

void osb_x11_fake_key(struct osb_x11 *c, unsigned keycode, bool press)
{
    fake(c, press ? 2 : 3, (uint8_t)keycode, 0, 0);
}

int osb_x11_get_keymap(struct osb_x11 *c, struct osb_x11_keymap *km, struct osb_err *err)
{
    unsigned char b[8] = {0}, hdr[32], *extra;
    unsigned count = (unsigned)c->max_keycode - c->min_keycode + 1;
    req_header(b, X_GET_KEYBOARD_MAPPING, 0, sizeof b);
    b[4] = c->min_keycode;
    b[5] = (uint8_t)count;
    if (request(c, b, sizeof b, err) < 0 || reply(c, c->seq, hdr, &extra, err) < 0)
        return -1;
    unsigned per = hdr[1];
    if (!per || (size_t)per * count * 4 > (size_t)get32(hdr + 4) * 4) {
        free(extra);
        return osb_err_set(err, OSB_E_INTERNAL, "malformed GetKeyboardMapping reply");
    }
    km->min_keycode = c->min_keycode;
    km->count = count;
    km->per = per;
    km->syms = osb_xcalloc((size_t)count * per, sizeof *km->syms);
    for (size_t i = 0; i < (size_t)count * per; i++)
        km->syms[i] = get32(extra + 4 * i);
    free(extra);
    return 0;
}

void osb_x11_keymap_free(struct osb_x11_keymap *km)
{
    free(km->syms);
    km->syms = NULL;
}

void osb_x11_change_keymap(struct osb_x11 *c, uint8_t first, unsigned count, unsigned per,
                           const uint32_t *syms)
{
    size_t n = 8 + (size_t)count * per * 4;
    _cleanup_free_ unsigned char *b = osb_xcalloc(1, n);
    req_header(b, X_CHANGE_KEYBOARD_MAPPING, (uint8_t)count, n);
    b[4] = first;
    b[5] = (uint8_t)per;
    for (size_t i = 0; i < (size_t)count * per; i++)
        put32(b + 8 + 4 * i, syms[i]);
    request_noreply(c, b, n);
}

/* ---- windows ---- */

void osb_x11_client_message(struct osb_x11 *c, uint32_t dest, uint32_t mask, uint32_t win,
                            uint32_t type, const uint32_t data[5])
{
    unsigned char b[44] = {0};
    req_header(b, X_SEND_EVENT, 0 /* propagate */, sizeof b);
    put32(b + 4, dest);
    put32(b + 8, mask);
    unsigned char *ev = b + 12;
    ev[0] = 33; /* ClientMessage */
    ev[1] = 32; /* format */
    put32(ev + 4, win);
    put32(ev + 8, type);
    for (int i = 0; i < 5; i++)
        put32(ev + 12 + 4 * i, data[i]);
    request_noreply(c, b, sizeof b);
}

void osb_x11_set_input_focus(struct osb_x11 *c, uint32_t win)
{
    unsigned char b[12] = {0};
    req_header(b, X_SET_INPUT_FOCUS, 1 /* RevertToPointerRoot */, sizeof b);
    put32(b + 4, win);
    put32(b + 8, 0 /* CurrentTime */);
    request_noreply(c, b, sizeof b);
}

void osb_x11_raise(struct osb_x11 *c, uint32_t win)
{
    unsigned char b[16] = {0};
    req_header(b, X_CONFIGURE_WINDOW, 0, sizeof b);
    put32(b + 4, win);
    put16(b + 8, 0x40); /* StackMode */
    put32(b + 12, 0);   /* Above */
    request_noreply(c, b, sizeof b);
}

/* ---- connection setup ---- */

/* The display number of ":N", ":N.S" or "unix:N"; -1 for anything else
 * (TCP displays are not supported: the sandbox's X server is local). */
static int display_number(const char *d)
{
    if (strncmp(d, "unix:", 5) == 0)
        d += 4;
    if (*d != ':' || d[1] < '0' || d[1] > '9')
        return -1;
    char *end;
    long n = strtol(d + 1, &end, 10);
    if ((*end && *end != '.') || n > 65535)
        return -1;
    return (int)n;
}

static int try_connect(const char *path, bool abstract)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n + 2 > sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path + (abstract ? 1 : 0), path, n);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 1 : 0));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* One counted field of an Xauthority entry. */
static bool auth_field(FILE *f, char *buf, size_t cap, size_t *len)
{
    unsigned char l[2];
    if (fread(l, 1, 2, f) != 2)
        return false;
    *len = (size_t)l[0] << 8 | l[1];
    if (*len > cap)
        return false;
    return fread(buf, 1, *len, f) == *len;
}

/* The MIT-MAGIC-COOKIE-1 for display number dnum from the Xauthority file:
 * a local entry (family 256, this host) or a wildcard one (65535). */
static size_t find_cookie(int dnum, unsigned char cookie[16])
{
    char path[4096], host[256] = "";
    const char *xa = getenv("XAUTHORITY"), *home = getenv("HOME");
    if (xa && *xa)
        snprintf(path, sizeof path, "%s", xa);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.Xauthority", home);
    else
        return 0;
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    gethostname(host, sizeof host - 1);
    char want[16], addr[256], num[32], name[64], data[256];
    snprintf(want, sizeof want, "%d", dnum);
    unsigned char fam[2];
    size_t al, nl, ml, dl;
    while (fread(fam, 1, 2, f) == 2 && auth_field(f, addr, sizeof addr, &al) &&
           auth_field(f, num, sizeof num, &nl) && auth_field(f, name, sizeof name, &ml) &&
           auth_field(f, data, sizeof data, &dl)) {
        unsigned family = (unsigned)fam[0] << 8 | fam[1];
        bool local = family == 256 && al == strlen(host) && memcmp(addr, host, al) == 0;
        if (!(local || family == 65535) || (nl && (nl != strlen(want) || memcmp(num, want, nl))))
            continue;
        if (ml == 18 && memcmp(name, "MIT-MAGIC-COOKIE-1", 18) == 0 && dl == 16) {
            memcpy(cookie, data, 16);
            return 16;
        }
    }
    return 0;
}

static int send_setup(struct osb_x11 *c, int dnum, struct osb_err *err)
{
    unsigned char b[12 + 20 + 16] = {0}, cookie[16];
    size_t clen = find_cookie(dnum, cookie);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    b[0] = 'l';
#else
    b[0] = 'B';
#endif
    put16(b + 2, 11);
    size_t n = 12;
    if (clen) {
        put16(b + 6, 18);
        put16(b + 8, 16);
        memcpy(b + 12, "MIT-MAGIC-COOKIE-1", 18);
        memcpy(b + 12 + 20, cookie, 16);
        n += 20 + 16;
    }
    return write_all(c, b, n, err);
}

/* Reads the visual of the root window out of the screen's depth list. */
static int parse_visuals(struct osb_x11 *c, const unsigned char *p, const unsigned char *end,
                         unsigned ndepths)
{
    for (unsigned i = 0; i < ndepths; i++) {
        if (p + 8 > end)
            return -1;
        unsigned nvis = get16(p + 2);
        p += 8;
        for (unsigned v = 0; v < nvis; v++, p += 24) {
            if (p + 24 > end)
                return -1;
            if (get32(p) == c->root_visual) {
                c->red_mask = get32(p + 8);
                c->green_mask = get32(p + 12);
                c->blue_mask = get32(p + 16);
            }
        }
    }
    return 0;
}

static int parse_setup(struct osb_x11 *c, const unsigned char *s, size_t n, struct osb_err *err)
{
    /* Offsets count from the start of the reply, its 8-byte head included. */
    if (n < 40)
        return osb_err_set(err, OSB_E_INTERNAL, "short X setup reply");
    size_t vlen = get16(s + 24), nformats = s[29];
    c->max_request = (uint32_t)get16(s + 26) * 4;
    c->image_msb = s[30] == 1;
    c->min_keycode = s[34];
    c->max_keycode = s[35];
    if (40 + PAD4(vlen) + 8 * nformats + 40 > n || s[28] < 1)
        return osb_err_set(err, OSB_E_INTERNAL, "malformed X setup reply");
    const unsigned char *p = s + 40 + PAD4(vlen), *end = s + n, *fmts = p;
    p += 8 * nformats;
    c->root = get32(p);
    c->width = get16(p + 20);
    c->height = get16(p + 22);
    c->root_visual = get32(p + 32);
    c->depth = p[38];
    for (size_t i = 0; i < nformats; i++)
        if (fmts[8 * i] == c->depth) {
            c->bpp = fmts[8 * i + 1];
            c->scanline_pad = fmts[8 * i + 2];
        }
    if (parse_visuals(c, p + 40, end, p[39]) < 0 || !c->bpp)
        return osb_err_set(err, OSB_E_INTERNAL, "malformed X setup reply");
    return 0;
}

static int read_setup(struct osb_x11 *c, struct osb_err *err)
{
    unsigned char h[8];
    int64_t deadline = osb_mono_ms() + OSB_X11_TIMEOUT_MS;
    if (read_exact(c, h, 8, deadline, err) < 0)
        return -1;
    size_t n = (size_t)get16(h + 6) * 4; /* at most 256 KiB */
    _cleanup_free_ unsigned char *s = osb_xmalloc(n + 8 + 1);
    memcpy(s, h, 8);
    if (read_exact(c, s + 8, n, deadline, err) < 0)
        return -1;
    s[n + 8] = 0;
    if (h[0] == 0) {
        size_t rl = h[1] < n ? h[1] : n;
        return osb_err_set(err, OSB_E_DENIED, "the X server on %s refused the connection: %.*s",
                           c->display, (int)rl, (const char *)s + 8);
    }
    if (h[0] != 1)
        return osb_err_set(err, OSB_E_DENIED,
                           "the X server on %s wants an authentication we do not speak",
                           c->display);
    return parse_setup(c, s, n + 8, err);
}

int osb_x11_open(struct osb_x11 *c, const char *display, struct osb_err *err)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    snprintf(c->display, sizeof c->display, "%s", display && *display ? display : ":0");
    int dnum = display_number(c->display);
    if (dnum < 0)
        return osb_err_set(err, OSB_E_UNAVAILABLE,
                           "no X display: DISPLAY=%s is not a local display (\":N\")", c->display);
    char path[64];
    snprintf(path, sizeof path, "/tmp/.X11-unix/X%d", dnum);
    c->fd = try_connect(path, true);
    if (c->fd < 0)
        c->fd = try_connect(path, false);
    if (c->fd < 0)
        return osb_err_set(err, OSB_E_UNAVAILABLE,
                           "no X display: DISPLAY=%s, cannot connect to %s: %s", c->display, path,
                           strerror(errno));
    if (send_setup(c, dnum, err) < 0 || read_setup(c, err) < 0) {
        osb_x11_close(c);
        return -1;
    }
    return 0;
}

void osb_x11_close(struct osb_x11 *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* ---- images ---- */

static unsigned shift_of(uint32_t mask)
{
    return mask ? (unsigned)__builtin_ctz(mask) : 0;
}

/* One pixel value of a ZPixmap row in the server's byte order. */
static uint32_t pixel_at(const struct osb_x11 *c, const unsigned char *row, unsigned x)
{
    unsigned bytes = c->bpp / 8;
    const unsigned char *p = row + (size_t)x * bytes;
    uint32_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint32_t)p[c->image_msb ? i : bytes - 1 - i] << (8 * (bytes - 1 - i));
    return v;
}

static uint8_t channel(uint32_t v, uint32_t mask)
{
    if (!mask)
        return 0;
    uint32_t bits = (uint32_t)__builtin_popcount(mask);
    uint32_t x = (v & mask) >> shift_of(mask);
    return bits >= 8 ? (uint8_t)(x >> (bits - 8)) : (uint8_t)(x * 255 / ((1u << bits) - 1));
}

static void convert_rows(const struct osb_x11 *c, const unsigned char *src, size_t stride,
                         unsigned w, unsigned rows, uint8_t *dst)
{
    bool fast = c->bpp == 32 && !c->image_msb && c->red_mask == 0xff0000 &&
                c->green_mask == 0xff00 && c->blue_mask == 0xff;
    for (unsigned r = 0; r < rows; r++) {
        const unsigned char *row = src + r * stride;
        uint8_t *o = dst + (size_t)r * w * 3;
        if (fast) { /* the common case: BGRX */
            for (unsigned x = 0; x < w; x++, o += 3) {
                o[0] = row[4 * x + 2];
                o[1] = row[4 * x + 1];
                o[2] = row[4 * x];
            }
            continue;
        }
        for (unsigned x = 0; x < w; x++, o += 3) {
            uint32_t v = pixel_at(c, row, x);
            o[0] = channel(v, c->red_mask);
            o[1] = channel(v, c->green_mask);
            o[2] = channel(v, c->blue_mask);
        }
    }
}

static int send_get_image(struct osb_x11 *c, int x, int y, unsigned w, unsigned h,
                          struct osb_err *err)
{
    unsigned char b[20] = {0};
    req_header(b, X_GET_IMAGE, 2 /* ZPixmap */, sizeof b);
    put32(b + 4, c->root);
    put16(b + 8, (uint16_t)(int16_t)x);
    put16(b + 10, (uint16_t)(int16_t)y);
    put16(b + 12, (uint16_t)w);
    put16(b + 14, (uint16_t)h);
    put32(b + 16, 0xffffffff);
    return request(c, b, sizeof b, err);
}

int osb_x11_get_image_rgb(struct osb_x11 *c, int x, int y, unsigned w, unsigned h, uint8_t *rgb,
                          struct osb_err *err)
{
    if (c->bpp != 16 && c->bpp != 24 && c->bpp != 32)
        return osb_err_set(err, OSB_E_INTERNAL, "unsupported X pixel format: %u bits per pixel",
                           c->bpp);
    unsigned pad = c->scanline_pad ? c->scanline_pad : 32;
    size_t stride = ((size_t)w * c->bpp + pad - 1) / pad * pad / 8;
    size_t limit = c->max_request > 4096 ? c->max_request : 4096;
    unsigned band = stride >= limit ? 1 : (unsigned)(limit / stride);
    unsigned nbands = (h + band - 1) / band;
    /* Every band is asked for up front, then the replies are read in
     * order: one round trip's latency instead of one per band. */
    uint16_t first = (uint16_t)(c->seq + 1);
    for (unsigned i = 0; i < nbands; i++) {
        unsigned rows = h - i * band < band ? h - i * band : band;
        if (send_get_image(c, x, y + (int)(i * band), w, rows, err) < 0)
            return -1;
    }
    for (unsigned i = 0; i < nbands; i++) {
        unsigned rows = h - i * band < band ? h - i * band : band;
        unsigned char hdr[32], *data;
        if (reply(c, (uint16_t)(first + i), hdr, &data, err) < 0)
            return -1;
        if ((size_t)get32(hdr + 4) * 4 < stride * rows) {
            free(data);
            return osb_err_set(err, OSB_E_INTERNAL, "short GetImage reply");
        }
        convert_rows(c, data, stride, w, rows, rgb + (size_t)i * band * w * 3);
        free(data);
    }
    return 0;
}
