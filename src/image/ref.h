/* Image references as Docker spells them, parsed into parts and put back
 * in canonical form:
 *   alpine                      -> docker.io/library/alpine:latest
 *   python:3.12                 -> docker.io/library/python:3.12
 *   ghcr.io/org/img:tag         -> ghcr.io/org/img:tag
 *   localhost:5000/a/b@sha256:… -> localhost:5000/a/b@sha256:…
 * The first component is a registry when it holds '.' or ':' or is
 * "localhost"; otherwise the registry is docker.io, and a single-component
 * path gets "library/". Path components are [a-z0-9]+ joined by '.', '_',
 * '__' or '-'+; tags are [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; digests are
 * sha256:<64 lowercase hex>. With neither tag nor digest the tag is
 * "latest"; with both, the digest decides what is pulled. */
#ifndef OSB_IMAGE_REF_H
#define OSB_IMAGE_REF_H
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define OSB_DIGEST_MAX 72 /* "sha256:" + 64 hex + NUL, with room */

struct osb_ref {
    char domain[256];            /* "docker.io", "localhost:5000", "127.0.0.1:5000" */
    char path[256];              /* "library/alpine", "team/img" */
    char tag[129];               /* "" when only a digest was given */
    char digest[OSB_DIGEST_MAX]; /* "sha256:…" or "" */
};

/* OSB_E_INVALID with a message naming what is wrong. */
OSB_MUST_CHECK int osb_ref_parse(const char *s, struct osb_ref *out, struct osb_err *err);
/* Canonical form: domain/path[:tag][@digest]. */
void osb_ref_string(const struct osb_ref *r, char *out, size_t n);
/* "sha256:" and 64 lower-case hex digits (the only digests accepted). */
bool osb_digest_ok(const char *d);
#endif
