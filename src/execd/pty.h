/* Interactive terminals over WebSocket (protocol.md 3.9): POST /pty creates
 * a session, GET /pty/{id}/ws attaches one client at a time. The shell
 * (`bash --norc --noprofile [-c command]`, `sh` without bash) starts on the
 * first attach, on a real pseudo-terminal (80x24) or, with ?pty=0, on plain
 * pipes with stderr kept apart. Output is also kept in a replay buffer (the
 * last OSB_PTY_REPLAY_BYTES, addressed by absolute byte offsets) so a client
 * can reconnect with ?since=N and miss nothing that is still buffered.
 * Routes: osb_execd_pty_routes (execd.h). Frame details and choices:
 * docs/internals/code.md. */
#ifndef OSB_EXECD_PTY_H
#define OSB_EXECD_PTY_H
#include <stddef.h>
#include <stdint.h>

/* WebSocket frame tags (first byte of a binary frame). */
enum {
    OSB_PTY_STDIN = 0x00,  /* client -> server */
    OSB_PTY_STDOUT = 0x01, /* server -> client */
    OSB_PTY_STDERR = 0x02, /* server -> client, pipe mode only */
    OSB_PTY_REPLAY = 0x03, /* server -> client: 0x03 | u64 BE offset | bytes */
};

/* Largest output payload per frame. */
#define OSB_PTY_FRAME_MAX (32 * 1024)

/* The replay ring: the last `cap` bytes of a stream whose total length is
 * `total`; exposed for tests. */
struct osb_pty_ring {
    char *data;
    size_t cap, len, head; /* head: index of the oldest byte */
    size_t alloc;          /* bytes allocated (grows to cap) */
    uint64_t total;
};
void osb_pty_ring_init(struct osb_pty_ring *r, size_t cap);
void osb_pty_ring_add(struct osb_pty_ring *r, const char *data, size_t n);
/* Bytes from absolute offset `since` (clamped to what is still buffered) to
 * the end, into a malloc'd buffer; *start gets the offset of its first byte.
 * Returns the length (0 and *out NULL when there is nothing). */
size_t osb_pty_ring_since(const struct osb_pty_ring *r, uint64_t since, uint64_t *start,
                          char **out);
void osb_pty_ring_free(struct osb_pty_ring *r);
#endif
