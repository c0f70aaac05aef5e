/* HTTP/1.x messages as the vault proxy relays them: a head parsed into
 * fields (so it can be checked and rewritten), then the body re-encoded
 * from what the parser decoded (chunked stays chunked, with the framing
 * rewritten; trailers are dropped), so bytes the parser did not accept as
 * this message's body never reach the other side. Parsing is http-parser's;
 * a malformed or oversized head is refused, never passed on. */
#ifndef OSB_VAULT_H1_H
#define OSB_VAULT_H1_H
#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>

#include "vault/vio.h"

#define OSB_H1_HEAD_MAX 65536
#define OSB_H1_MAX_FIELDS 128

/* What was read from one side and not yet parsed. */
struct osb_h1_in {
    struct osb_vio *io;
    size_t off, len;
    char buf[65536];
};

struct osb_h1_field {
    size_t name, nlen, value, vlen; /* offsets into the message's arena */
};

struct osb_h1_msg {
    http_parser p;
    bool request, head_done, complete, skip_body, chunked, overflow;
    struct osb_vio *sink; /* where osb_h1_body writes */
    bool sink_failed;
    size_t url, url_len, reason, reason_len;
    size_t nf;
    bool in_value;
    struct osb_h1_field f[OSB_H1_MAX_FIELDS];
    size_t used;
    char arena[OSB_H1_HEAD_MAX];
    char scratch[65536 + 32]; /* one chunk with its framing */
};

enum { OSB_H1_OK = 0, OSB_H1_EOF = 1, OSB_H1_IO = -1, OSB_H1_BAD = -2 };

/* Starts a message: a request, or a response (skip_body: to a HEAD). */
void osb_h1_begin(struct osb_h1_msg *m, bool request, bool skip_body);
/* Reads and parses the head: OSB_H1_OK; OSB_H1_EOF when the stream ended
 * cleanly before the first byte; OSB_H1_IO; OSB_H1_BAD (malformed, too big,
 * too many fields). */
int osb_h1_head(struct osb_h1_in *in, struct osb_h1_msg *m);
/* Forwards the body to `to`, re-encoded: OSB_H1_OK once the message is
 * complete (also for a body that ends with the stream), or < 0. */
int osb_h1_body(struct osb_h1_in *in, struct osb_h1_msg *m, struct osb_vio *to);

/* A field's value by name (case-insensitive; the first), NULL if absent. */
const char *osb_h1_get(const struct osb_h1_msg *m, const char *name, size_t *len);
/* How many fields have this name (case-insensitive). */
size_t osb_h1_count(const struct osb_h1_msg *m, const char *name);
/* The request target / method / status. */
const char *osb_h1_target(const struct osb_h1_msg *m, size_t *len);
const char *osb_h1_method(const struct osb_h1_msg *m);

/* How a head is written out: fields named in drop[] (NULL-terminated) are
 * left out, add[] (name, value pairs) appended, and every occurrence of a
 * secret[] (n_secret) in a field value replaced by "[REDACTED]". */
struct osb_h1_edit {
    const char *const *drop;
    const char *const *add; /* name0, value0, name1, value1, ..., NULL */
    const char *const *secret;
    size_t n_secret;
};
/* Appends v[0..n) to b with every secret (of at least 4 bytes) replaced by
 * "[REDACTED]": 0, or -1 when b is full. */
struct osb_buf;
int osb_h1_redact(struct osb_buf *b, const char *v, size_t n, const char *const *secret,
                  size_t n_secret);
/* Writes m's head to `to` with the edits: 0 or -1. */
int osb_h1_write_head(struct osb_vio *to, const struct osb_h1_msg *m, const struct osb_h1_edit *ed);

/* Writes a complete answer of the proxy's own (JSON body, Connection: close). */
int osb_h1_answer(struct osb_vio *to, int status, const char *reason, const char *code,
                  const char *message);
#endif
