/* The server-to-client frame parser of the PTY WebSocket. */
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
