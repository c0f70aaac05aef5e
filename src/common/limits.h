/* Every cap on untrusted input in one place, each with its reason. */
#ifndef OSB_LIMITS_H
#define OSB_LIMITS_H

/* Request line + headers: browsers and SDKs send < 8 KiB; 64 KiB leaves room
 * for large cookies/tokens while bounding memory per connection. */
#define OSB_MAX_HEAD_BYTES (64 * 1024)
/* Headers per request: far beyond any real client. */
#define OSB_MAX_HEADERS 100
/* Buffered (JSON) request bodies. Bulk data goes through streaming routes. */
#define OSB_MAX_JSON_BODY (16 * 1024 * 1024)
/* Nesting accepted in request JSON; deeper input is an attack, not a request. */
#define OSB_MAX_JSON_DEPTH 64
/* Multipart part headers (Content-Disposition etc.). */
#define OSB_MAX_PART_HEAD (16 * 1024)
/* A multipart metadata part is a small JSON document. */
#define OSB_MAX_PART_METADATA (64 * 1024)
/* Bytes written to a socket before the producer is paused (backpressure). */
#define OSB_WRITE_HIGH_WATER (1024 * 1024)
/* Closing a connection that still has unread input makes the kernel send
 * a reset, which can destroy the answer (a 401, a 413) before the client
 * read it. So after such an answer the write side is shut down and up to
 * this many bytes are read and dropped, for at most OSB_LINGER_MS, before
 * the close: enough for a client to notice, never a buffer. */
#define OSB_LINGER_BYTES (1024 * 1024)
#define OSB_LINGER_MS 2000
/* A connection waiting for a request head (new, or idle after a response)
 * is closed if the whole head has not come within this: otherwise a client
 * sending nothing, or one byte a minute, holds a connection slot forever.
 * Apache's mod_reqtimeout starts at 20 s; a real client sends its head in
 * one write. A request whose headers are in is not timed (SSE, uploads). */
#define OSB_HEAD_TIMEOUT_MS 20000
/* A body no handler reads (an unknown route, /ping) up to this size is
 * read and dropped so the connection can live on; a larger one is answered
 * at once and the connection ends (Go's server draws the line here too). */
#define OSB_MAX_DROPPED_BODY (256 * 1024)
/* Concurrent client connections per daemon; the open-files limit is 20000. */
#define OSB_MAX_CONNECTIONS 8192
/* A WebSocket message (fragments joined). PTY input is keystrokes. */
#define OSB_MAX_WS_MESSAGE (4 * 1024 * 1024)
/* One line of command output becomes one event; a longer unterminated run
 * of bytes is cut into pieces so a newline-free stream cannot grow memory. */
#define OSB_MAX_OUTPUT_LINE (1024 * 1024)
/* Command records kept for /command/status and logs; the oldest finished
 * ones (and their log files) are dropped past this. */
#define OSB_MAX_COMMAND_RECORDS 4096
/* Live bash sessions: each is a shell process and three pipes. */
#define OSB_MAX_SESSIONS 1024
/* Live code contexts: each is an interpreter process (10-50 MB resident). */
#define OSB_MAX_CODE_CONTEXTS 256
/* Live PTY sessions: each is a shell on a pseudo-terminal plus its replay buffer. */
#define OSB_MAX_PTY_SESSIONS 256
/* PTY output kept per session for reconnects with ?since= (the tail). */
#define OSB_PTY_REPLAY_BYTES (1024 * 1024)
/* Files in one /files/upload request: each holds a temp file until the
 * body is complete; SDKs send one or a few. */
#define OSB_MAX_UPLOAD_FILES 1024
/* Paths are bounded by the kernel, PATH_MAX. */
#endif
