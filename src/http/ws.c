#include "http/ws.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/limits.h"
#include "common/sha1.h"
#include "common/xalloc.h"

static const char WS_GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* A message buffer above this is freed after delivery, so an idle
 * connection does not keep a large one. */
#define KEEP_BUFFER (64 * 1024)

enum { RS_HDR, RS_PAYLOAD, RS_CLOSED, RS_STOPPED, RS_ERROR };

/* ---- handshake, framing helpers ---- */

void osb_ws_accept_key(const char *client_key, char out[29])
{
    struct osb_sha1_ctx c;
    uint8_t md[OSB_SHA1_LEN];
    osb_sha1_init(&c);
    osb_sha1_update(&c, client_key, strlen(client_key));
    osb_sha1_update(&c, WS_GUID, sizeof WS_GUID - 1);
    osb_sha1_final(&c, md);
    osb_base64_encode(md, sizeof md, out);
}

bool osb_ws_key_valid(const char *client_key)
{
    uint8_t nonce[OSB_BASE64_DECODED_MAX(24)];
    size_t n = strlen(client_key), got;
    return n == 24 && osb_base64_decode(client_key, n, nonce, &got) == 0 && got == 16;
}

size_t osb_ws_frame_header(uint8_t out[OSB_WS_MAX_HEADER], bool fin, int opcode,
                           uint64_t payload_len, const uint8_t mask[4])
{
    uint8_t mbit = mask ? 0x80 : 0;
    size_t n = 2;
    out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
    if (payload_len < 126) {
        out[1] = (uint8_t)(mbit | payload_len);
    } else if (payload_len <= 0xFFFF) {
        out[1] = mbit | 126;
        out[2] = (uint8_t)(payload_len >> 8);
        out[3] = (uint8_t)payload_len;
        n = 4;
    } else {
        out[1] = mbit | 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(payload_len >> (56 - 8 * i));
        n = 10;
    }
    if (mask) {
        memcpy(out + n, mask, 4);
        n += 4;
    }
    return n;
}

void osb_ws_mask(uint8_t *data, size_t len, const uint8_t mask[4], uint64_t offset)
{
    uint8_t k[8];
    for (int i = 0; i < 8; i++)
        k[i] = mask[(offset + (uint64_t)i) & 3];
    uint64_t k64;
    memcpy(&k64, k, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) { /* a word at a time: masking is on the hot path */
        uint64_t w;
        memcpy(&w, data + i, 8);
        w ^= k64;
        memcpy(data + i, &w, 8);
    }
    for (; i < len; i++)
        data[i] ^= k[i & 7];
}

/* Continuation bytes after lead byte c and the allowed range of the first
 * one (this is what excludes overlongs, surrogates and > U+10FFFF); -1 if c
 * cannot start a character. */
static int utf8_seq(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        return 1;
    if (c == 0xE0)
        *lo = 0xA0;
    else if (c == 0xED)
        *hi = 0x9F;
    if (c >= 0xE0 && c <= 0xEF)
        return 2;
    if (c == 0xF0)
        *lo = 0x90;
    else if (c == 0xF4)
        *hi = 0x8F;
    return c >= 0xF0 && c <= 0xF4 ? 3 : -1;
}

bool osb_ws_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint64_t w;
        if (i + 8 <= n && (memcpy(&w, s + i, 8), !(w & 0x8080808080808080ULL))) {
            i += 8;
            continue;
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint8_t lo, hi;
        int more = utf8_seq(s[i], &lo, &hi);
        if (more < 0 || n - i <= (size_t)more || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (int k = 2; k <= more; k++)
            if ((s[i + (size_t)k] & 0xC0) != 0x80)
                return false;
        i += (size_t)more + 1;
    }
    return true;
}

size_t osb_ws_close_payload(uint8_t out[OSB_WS_MAX_CONTROL], int code, const char *reason)
{
    if (code <= 0)
        return 0;
    out[0] = (uint8_t)(code >> 8);
    out[1] = (uint8_t)code;
    size_t n = reason ? strlen(reason) : 0;
    if (n > OSB_WS_MAX_CONTROL - 2) {
        n = OSB_WS_MAX_CONTROL - 2;
        while (n > 0 && ((uint8_t)reason[n] & 0xC0) == 0x80)
            n--;
    }
    if (n)
        memcpy(out + 2, reason, n);
    return n + 2;
}

/* Codes a peer may send (RFC 6455 7.4.1 plus the IANA-registered 1012-1014;
 * 1004-1006 and 1015 are reserved for local use). */
static bool close_code_allowed(int c)
{
    return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

int osb_ws_parse_close(const uint8_t *data, size_t len, int *code, const uint8_t **reason,
                       size_t *reason_len)
{
    *reason = data;
    *reason_len = 0;
    if (len == 0) {
        *code = OSB_WS_CLOSE_NO_STATUS;
        return 0;
    }
    int c = len >= 2 ? data[0] << 8 | data[1] : 0;
    if (len == 1 || !close_code_allowed(c)) {
        *code = OSB_WS_CLOSE_PROTOCOL;
        return -1;
    }
    if (!osb_ws_utf8_valid(data + 2, len - 2)) {
        *code = OSB_WS_CLOSE_INVALID_DATA;
        return -1;
    }
    *code = c;
    *reason = data + 2;
    *reason_len = len - 2;
    return 0;
}

/* ---- reader ---- */

void osb_ws_reader_init(struct osb_ws_reader *r, bool server)
{
    memset(r, 0, sizeof *r);
    r->max_message = OSB_MAX_WS_MESSAGE;
    r->_server = server;
    r->_state = RS_HDR;
    r->_hdr_need = 2;
}

void osb_ws_reader_free(struct osb_ws_reader *r)
{
    free(r->_msg);
    r->_msg = NULL;
    r->_msg_len = r->_msg_cap = 0;
}

bool osb_ws_reader_closed(const struct osb_ws_reader *r)
{
    return r->_state == RS_CLOSED;
}

__attribute__((format(printf, 3, 4))) static int fail(struct osb_ws_reader *r, int close_code,
                                                      const char *fmt, ...)
{
    r->_state = RS_ERROR;
    r->_close_code = close_code;
    r->_err.code = close_code == OSB_WS_CLOSE_TOO_BIG ? OSB_E_TOOBIG : OSB_E_INVALID;
    r->_err.sys_errno = 0;
    int n = snprintf(r->_err.msg, sizeof r->_err.msg, "websocket: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->_err.msg + n, sizeof r->_err.msg - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Checks the first two header bytes (RFC 6455 5.2, 5.4, 5.5) and sets the
 * full header length. */
static int check_start(struct osb_ws_reader *r)
{
    uint8_t b0 = r->_hdr[0], b1 = r->_hdr[1], len7 = b1 & 0x7F;
    int op = b0 & 0x0F;
    bool fin = b0 & 0x80, masked = b1 & 0x80;
    if (b0 & 0x70)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "reserved bits set (no extension was negotiated)");
    if ((op > 2 && op < 8) || op > 10)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "reserved opcode %d", op);
    if (op >= 8 && !fin)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "fragmented control frame (opcode %d)", op);
    if (op >= 8 && len7 > OSB_WS_MAX_CONTROL)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "control frame payload over 125 bytes");
    if (op == 0 && !r->_msg_opcode)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "continuation frame without a message to continue");
    if ((op == 1 || op == 2) && r->_msg_opcode)
        return fail(r, OSB_WS_CLOSE_PROTOCOL,
                    "new data frame while a fragmented message is in progress");
    if (r->_server != masked)
        return fail(r, OSB_WS_CLOSE_PROTOCOL, "%s",
                    masked ? "masked frame from the server" : "unmasked frame from the client");
    r->_fin = fin;
    r->_opcode = op;
    r->_masked = masked;
    r->_hdr_need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (masked ? 4 : 0);
    return 0;
}

/* The header is complete: payload length, mask key, size limit. */
static int finish_header(struct osb_ws_reader *r)
{
    uint8_t len7 = r->_hdr[1] & 0x7F;
    uint64_t len = len7;
    size_t p = 2;
    if (len7 == 126) {
        len = (uint64_t)r->_hdr[2] << 8 | r->_hdr[3];
        p = 4;
    } else if (len7 == 127) {
        len = 0;
        for (p = 2; p < 10; p++)
            len = len << 8 | r->_hdr[p];
        if (len >> 63)
            return fail(r, OSB_WS_CLOSE_PROTOCOL, "payload length has its top bit set");
    }
    if (r->_masked)
        memcpy(r->_mask, r->_hdr + p, 4);
    if (r->_opcode < 8 && len > r->max_message - r->_msg_len)
        return fail(r, OSB_WS_CLOSE_TOO_BIG, "message of %llu+ bytes exceeds the %zu-byte limit",
                    (unsigned long long)(r->_msg_len + len), r->max_message);
    if (r->_opcode == 1 || r->_opcode == 2)
        r->_msg_opcode = r->_opcode;
    r->_remaining = len;
    r->_done = 0;
    r->_state = RS_PAYLOAD;
    return 0;
}

static int stop(struct osb_ws_reader *r)
{
    r->_state = RS_STOPPED;
    return 1;
}

static int deliver(struct osb_ws_reader *r, const uint8_t *data, size_t len,
                   const struct osb_ws_reader_cbs *cbs, void *ud)
{
    int op = r->_msg_opcode;
    r->_msg_opcode = 0;
    if (op == OSB_WS_OP_TEXT && !osb_ws_utf8_valid(data, len))
        return fail(r, OSB_WS_CLOSE_INVALID_DATA, "text message is not valid UTF-8");
    int rc = cbs->on_message ? cbs->on_message(ud, op, data, len) : 0;
    r->_msg_len = 0;
    if (r->_msg_cap > KEEP_BUFFER)
        osb_ws_reader_free(r);
    return rc ? stop(r) : 0;
}

static int control_frame(struct osb_ws_reader *r, const struct osb_ws_reader_cbs *cbs, void *ud)
{
    size_t len = (size_t)r->_done;
    if (r->_opcode == OSB_WS_OP_CLOSE) {
        int code;
        const uint8_t *reason;
        size_t rlen;
        if (osb_ws_parse_close(r->_ctl, len, &code, &reason, &rlen) < 0) {
            if (code == OSB_WS_CLOSE_INVALID_DATA)
                return fail(r, code, "close reason is not valid UTF-8");
            if (len == 1)
                return fail(r, code, "close payload of 1 byte");
            return fail(r, code, "close code %d is not allowed", r->_ctl[0] << 8 | r->_ctl[1]);
        }
        r->_state = RS_CLOSED;
    }
    int rc = cbs->on_control ? cbs->on_control(ud, r->_opcode, r->_ctl, len) : 0;
    return rc ? stop(r) : 0;
}

static int complete_frame(struct osb_ws_reader *r, const struct osb_ws_reader_cbs *cbs, void *ud)
{
    r->_state = RS_HDR;
    r->_hdr_have = 0;
    r->_hdr_need = 2;
    if (r->_opcode >= 8)
        return control_frame(r, cbs, ud);
    if (!r->_fin)
        return 0;
    return deliver(r, r->_msg, r->_msg_len, cbs, ud);
}

static int feed_header(struct osb_ws_reader *r, const uint8_t *p, size_t n, size_t *used,
                       const struct osb_ws_reader_cbs *cbs, void *ud)
{
    size_t take = r->_hdr_need - r->_hdr_have;
    if (take > n)
        take = n;
    memcpy(r->_hdr + r->_hdr_have, p, take);
    r->_hdr_have += take;
    *used = take;
    if (r->_hdr_have < r->_hdr_need)
        return 0;
    if (r->_hdr_have == 2 && check_start(r) < 0)
        return -1;
    if (r->_hdr_have < r->_hdr_need)
        return 0;
    if (finish_header(r) < 0)
        return -1;
    return r->_remaining ? 0 : complete_frame(r, cbs, ud);
}

static void reserve(struct osb_ws_reader *r, size_t need)
{
    if (need <= r->_msg_cap)
        return;
    size_t cap = r->_msg_cap ? r->_msg_cap * 2 : 4096;
    if (cap < need)
        cap = need;
    if (cap > r->max_message)
        cap = r->max_message; /* need <= max_message: finish_header checked */
    r->_msg = osb_xrealloc(r->_msg, cap);
    r->_msg_cap = cap;
}

/* Where the payload bytes go: the control buffer or the message buffer. */
static uint8_t *payload_dst(struct osb_ws_reader *r, size_t take)
{
    if (r->_opcode >= 8)
        return r->_ctl + r->_done;
    reserve(r, r->_msg_len + take);
    uint8_t *d = r->_msg + r->_msg_len;
    r->_msg_len += take;
    return d;
}

static int feed_payload(struct osb_ws_reader *r, const uint8_t *p, size_t n, size_t *used,
                        const struct osb_ws_reader_cbs *cbs, void *ud)
{
    size_t take = r->_remaining < n ? (size_t)r->_remaining : n;
    *used = take;
    /* A whole unmasked single-frame message already in the input: hand it
     * over without copying (the client side's common case). */
    if (!r->_masked && r->_fin && r->_opcode != 0 && r->_opcode < 8 && r->_done == 0 &&
        take == r->_remaining) {
        r->_state = RS_HDR;
        r->_hdr_have = 0;
        r->_hdr_need = 2;
        return deliver(r, p, take, cbs, ud);
    }
    uint8_t *d = payload_dst(r, take);
    memcpy(d, p, take);
    if (r->_masked)
        osb_ws_mask(d, take, r->_mask, r->_done);
    r->_done += take;
    r->_remaining -= take;
    return r->_remaining ? 0 : complete_frame(r, cbs, ud);
}

int osb_ws_reader_feed(struct osb_ws_reader *r, const uint8_t *data, size_t len,
                       const struct osb_ws_reader_cbs *cbs, void *ud, int *close_code,
                       struct osb_err *err)
{
    static const struct osb_ws_reader_cbs none;
    if (!cbs)
        cbs = &none;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < len && r->_state <= RS_PAYLOAD;) {
        size_t used = 0;
        if (r->_state == RS_HDR)
            rc = feed_header(r, data + i, len - i, &used, cbs, ud);
        else
            rc = feed_payload(r, data + i, len - i, &used, cbs, ud);
        i += used;
    }
    if (r->_state == RS_ERROR) {
        if (close_code)
            *close_code = r->_close_code;
        if (err)
            *err = r->_err;
        return -1;
    }
    return r->_state == RS_STOPPED ? 1 : 0;
}
