/* RFC 6455 WebSocket codec: handshake key, frame headers, masking, UTF-8
 * and close payloads, and a stateful frame reader. Pure byte-in/callback-out
 * code; the connection side (osb_http_ws_accept, osb_ws_send) is in
 * http.h / server.c. No extensions are negotiated, so RSV bits must be 0. */
#ifndef OSB_WS_H
#define OSB_WS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

enum {
    OSB_WS_OP_CONT = 0,
    OSB_WS_OP_TEXT = 1,
    OSB_WS_OP_BINARY = 2,
    OSB_WS_OP_CLOSE = 8,
    OSB_WS_OP_PING = 9,
    OSB_WS_OP_PONG = 10,
};

/* Close codes (RFC 6455 section 7.4.1). */
enum {
    OSB_WS_CLOSE_NORMAL = 1000,
    OSB_WS_CLOSE_GOING_AWAY = 1001,
    OSB_WS_CLOSE_PROTOCOL = 1002,
    OSB_WS_CLOSE_NO_STATUS = 1005, /* reported for an empty close payload; never sent */
    OSB_WS_CLOSE_INVALID_DATA = 1007,
    OSB_WS_CLOSE_TOO_BIG = 1009,
    OSB_WS_CLOSE_INTERNAL = 1011,
};

#define OSB_WS_MAX_HEADER 14
#define OSB_WS_MAX_CONTROL 125

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + GUID)),
 * 28 chars + NUL. */
void osb_ws_accept_key(const char *client_key, char out[29]);
/* Whether a Sec-WebSocket-Key is base64 of 16 bytes, as RFC 6455 4.2.1
 * requires. */
bool osb_ws_key_valid(const char *client_key);

/* Writes a frame header; returns its length (2..14). mask NULL = unmasked
 * (server to client); with a mask the caller must mask the payload itself
 * (osb_ws_mask). opcode is taken modulo 16. */
size_t osb_ws_frame_header(uint8_t out[OSB_WS_MAX_HEADER], bool fin, int opcode,
                           uint64_t payload_len, const uint8_t mask[4]);
/* XORs data with the mask in place; offset = payload bytes already masked
 * with the same key (so a payload can be masked in pieces). */
void osb_ws_mask(uint8_t *data, size_t len, const uint8_t mask[4], uint64_t offset);
/* Strict UTF-8 (no overlongs, surrogates, or code points past U+10FFFF). */
bool osb_ws_utf8_valid(const uint8_t *s, size_t n);

/* Builds a close payload: 2-byte code + reason cut to fit 125 bytes at a
 * UTF-8 character boundary. code 0 gives an empty payload. Returns length. */
size_t osb_ws_close_payload(uint8_t out[OSB_WS_MAX_CONTROL], int code, const char *reason);
/* Parses a received close payload. Empty: *code = 1005, empty reason.
 * Returns 0, or -1 with *code set to the close code to fail with: 1002 for a
 * 1-byte payload or a code not allowed on the wire, 1007 for a reason that
 * is not UTF-8. reason points into data (not NUL-terminated). */
OSB_MUST_CHECK int osb_ws_parse_close(const uint8_t *data, size_t len, int *code,
                                      const uint8_t **reason, size_t *reason_len);

/* Return 0 to go on; anything else stops the reader (feed returns 1). data
 * is valid only during the call. */
struct osb_ws_reader_cbs {
    /* A complete data message: opcode 1 (text, valid UTF-8) or 2 (binary),
     * fragments joined. */
    int (*on_message)(void *ud, int opcode, const uint8_t *data, size_t len);
    /* ping (9), pong (10) or close (8) with its raw payload; may arrive
     * between the fragments of a message. A close payload has already been
     * checked with osb_ws_parse_close. Either callback may be NULL. */
    int (*on_control)(void *ud, int opcode, const uint8_t *data, size_t len);
};

/* Frame reader state. Fields starting with '_' are private. */
struct osb_ws_reader {
    size_t max_message; /* cap on a (joined) data message; default OSB_MAX_WS_MESSAGE */
    bool _server;       /* reading client frames: they must be masked */
    int _state;
    uint8_t _hdr[OSB_WS_MAX_HEADER];
    size_t _hdr_have, _hdr_need;
    bool _fin, _masked;
    int _opcode;
    uint8_t _mask[4];
    uint64_t _remaining, _done; /* payload bytes of the current frame left / read */
    int _msg_opcode;            /* opcode of the message being joined, 0 if none */
    uint8_t *_msg;
    size_t _msg_len, _msg_cap;
    uint8_t _ctl[OSB_WS_MAX_CONTROL];
    int _close_code; /* sticky protocol error */
    struct osb_err _err;
};

/* server: true to read client frames (masked, as RFC 6455 5.1 requires),
 * false to read server frames (unmasked; a masked one is an error). */
void osb_ws_reader_init(struct osb_ws_reader *r, bool server);
void osb_ws_reader_free(struct osb_ws_reader *r);
/* Consumes bytes in chunks of any size. Returns
 *   0  all consumed (input after a close frame is ignored: check
 *      osb_ws_reader_closed),
 *   1  a callback returned non-zero; the reader is finished and further
 *      feeds return 1 without reading,
 *  -1  protocol error: *close_code (may be NULL) is 1002 (protocol), 1007
 *      (text not UTF-8) or 1009 (message over max_message, detected from the
 *      frame header before anything is allocated); err says what was wrong.
 *      Sticky: later feeds fail the same way. */
OSB_MUST_CHECK int osb_ws_reader_feed(struct osb_ws_reader *r, const uint8_t *data, size_t len,
                                      const struct osb_ws_reader_cbs *cbs, void *ud,
                                      int *close_code, struct osb_err *err);
/* Whether a close frame has been read. */
bool osb_ws_reader_closed(const struct osb_ws_reader *r);
#endif
