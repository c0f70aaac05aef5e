/* The server-to-client side of the PTY WebSocket: one frame's parser and
 * a message reader on top (buffering, fragments, control frames). */
#include <stdlib.h>
#include <string.h>

#include "http/ws.h"
#include "wsframe.h"

ssize_t osbcl_wsframe_parse(const uint8_t *b, size_t n, size_t max, struct osbcl_wsframe *f,
                            const char **why)
{
    if (n < 2)
        return 0;
    f->fin = b[0] & 0x80;
    f->opcode = b[0] & 0x0f;
    if (b[0] & 0x70)
        return *why = "a frame with RSV bits set", -1;
    if (b[1] & 0x80)
        return *why = "a masked frame from the server", -1;
    bool control = f->opcode & 8;
    if ((f->opcode > 2 && !control) || f->opcode > 10)
        return *why = "an unknown opcode", -1;
    uint64_t len = b[1] & 0x7f;
    size_t head = 2;
    if (len == 126) {
        if (n < 4)
            return 0;
        len = (uint64_t)b[2] << 8 | b[3];
        head = 4;
    } else if (len == 127) {
        if (n < 10)
            return 0;
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | b[2 + i];
        head = 10;
    }
    if (control && (len > 125 || !f->fin))
        return *why = "a fragmented or oversized control frame", -1;
    if (len > max)
        return *why = "a frame over the size limit", -1;
    if (n - head < len)
        return 0;
    f->payload = b + head;
    f->len = (size_t)len;
    return (ssize_t)(head + len);
}

int osbcl_wsr_feed(struct osbcl_wsr *r, const void *data, size_t len)
{
    if (r->off == r->len) {
        r->off = r->len = 0;
    } else if (r->off && r->cap - r->len < len) {
        /* Parsed bytes make room; what is left is at most part of a frame. */
        memmove(r->in, r->in + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (r->cap - r->len < len) {
        size_t cap = r->cap ? r->cap : 65536;
        while (cap - r->len < len)
            cap *= 2;
        uint8_t *n = realloc(r->in, cap);
        if (!n)
            return OSBC_E_NOMEM;
        r->in = n;
        r->cap = cap;
    }
    if (len)
        memcpy(r->in + r->len, data, len);
    r->len += len;
    return 0;
}

/* Adds a data frame's payload to the message being joined. */
static int join(struct osbcl_wsr *r, const struct osbcl_wsframe *f, const char **why)
{
    if (r->msg_len + f->len > r->max)
        return *why = "a message over the size limit", OSBC_E_PROTOCOL;
    if (r->msg_cap < r->msg_len + f->len) {
        size_t cap = r->msg_cap ? r->msg_cap : 4096;
        while (cap < r->msg_len + f->len)
            cap *= 2;
        uint8_t *m = realloc(r->msg, cap);
        if (!m)
            return OSBC_E_NOMEM;
        r->msg = m;
        r->msg_cap = cap;
    }
    if (f->len)
        memcpy(r->msg + r->msg_len, f->payload, f->len);
    r->msg_len += f->len;
    return 0;
}

/* A whole message out of frame f (or the joined fragments). */
static int deliver(int op, const uint8_t *data, size_t len, struct osbcl_wsmsg *m, const char **why)
{
    m->opcode = op;
    m->data = data;
    m->len = len;
    m->close_code = 0;
    if (op == OSB_WS_OP_TEXT && !osb_ws_utf8_valid(data, len))
        return *why = "a text message that is not UTF-8", OSBC_E_PROTOCOL;
    if (op == OSB_WS_OP_CLOSE &&
        osb_ws_parse_close(data, len, &m->close_code, &m->data, &m->len) < 0)
        return *why = "a malformed close frame", OSBC_E_PROTOCOL;
    return 1;
}

int osbcl_wsr_next(struct osbcl_wsr *r, struct osbcl_wsmsg *m, const char **why)
{
    for (;;) {
        struct osbcl_wsframe f;
        ssize_t n = osbcl_wsframe_parse(r->in + r->off, r->len - r->off, r->max, &f, why);
        if (n < 0)
            return OSBC_E_PROTOCOL;
        if (n == 0)
            return 0;
        r->off += (size_t)n;
        if (f.opcode & 8) /* control frames may come between fragments */
            return deliver(f.opcode, f.payload, f.len, m, why);
        if (f.opcode != OSB_WS_OP_CONT && r->msg_op)
            return *why = "a new message inside a fragmented one", OSBC_E_PROTOCOL;
        if (f.opcode == OSB_WS_OP_CONT && !r->msg_op)
            return *why = "a continuation of no message", OSBC_E_PROTOCOL;
        if (f.fin && f.opcode != OSB_WS_OP_CONT)
            return deliver(f.opcode, f.payload, f.len, m, why);
        if (!r->msg_op) {
            r->msg_op = f.opcode;
            r->msg_len = 0;
        }
        int rc = join(r, &f, why);
        if (rc < 0)
            return rc;
        if (f.fin) {
            int op = r->msg_op;
            r->msg_op = 0;
            return deliver(op, r->msg, r->msg_len, m, why);
        }
    }
}

void osbcl_wsr_free(struct osbcl_wsr *r)
{
    free(r->in);
    free(r->msg);
    memset(r, 0, sizeof *r);
}
