/* A client of the OCI distribution API (and Docker's registry v2) over
 * libcurl: resolves a reference to one image manifest for a platform and
 * streams its blobs, verifying every byte against its digest.
 *
 * Auth: anonymous first; on 401 with `WWW-Authenticate: Bearer realm=…,
 * service=…,scope=…` a token is fetched from the realm (with the
 * username/password as Basic credentials when given: Docker Hub's flow);
 * on `Basic` the credentials are sent directly. Credentials are never
 * logged and never appear in an error message.
 *
 * Pushes ask for a token with scope repository:<path>:pull,push and go to
 * the registry itself (never a mirror).
 *
 * Blocking; one handle per pull or push, used by one thread at a time (different
 * handles may run on different threads at once). */
#ifndef OSB_IMAGE_REGISTRY_H
#define OSB_IMAGE_REGISTRY_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "image/ref.h"

struct osb_registry_opts {
    /* Registries ("host" or "host:port", as in the reference) reached over
     * plain HTTP. NULL-terminated; may be NULL. */
    const char *const *insecure;
    /* Base URLs tried, in order, before docker.io itself for docker.io
     * references ("http://127.0.0.1:5000", "https://mirror.example.com").
     * NULL-terminated; may be NULL. */
    const char *const *mirrors;
    const char *username; /* image.auth; NULL for anonymous */
    const char *password;
    const char *os;   /* platform picked from an index: "linux" */
    const char *arch; /* "amd64", "arm64" */
};

struct osb_blob {
    char digest[OSB_DIGEST_MAX];
    int64_t size;
    char media_type[128];
};

struct osb_manifest {
    char digest[OSB_DIGEST_MAX]; /* the image manifest's (after index selection) */
    struct osb_blob config_blob;
    json_t *config;          /* the config blob, verified and parsed */
    struct osb_blob *layers; /* bottom first */
    size_t n_layers;
};

struct osb_registry;

/* Errors of every call below:
 *   OSB_E_NOTFOUND     the repository, tag or blob does not exist
 *   OSB_E_DENIED       authentication failed or access was refused
 *   OSB_E_UNAVAILABLE  cannot connect, TLS failure, timeout, 5xx
 *   OSB_E_INTEGRITY    digest or size mismatch
 *   OSB_E_UNSUPPORTED  a media type this client does not handle, or no
 *                      manifest for the platform in an index
 *   OSB_E_INVALID      a malformed manifest/index/config
 * Messages name the image (the canonical reference). */
OSB_MUST_CHECK int osb_registry_open(const struct osb_ref *ref, const struct osb_registry_opts *o,
                                     struct osb_registry **out, struct osb_err *err);
void osb_registry_close(struct osb_registry *r);

/* Resolve ref (tag or digest; an index or manifest list is followed to the
 * opts' platform) to an image manifest (Docker v2 schema 2 or OCI) and its
 * config. Layer media types accepted: tar, tar+gzip, tar+zstd (OCI and
 * Docker spellings). */
OSB_MUST_CHECK int osb_registry_manifest(struct osb_registry *r, struct osb_manifest *out,
                                         struct osb_err *err);
void osb_manifest_free(struct osb_manifest *m);

/* Stream a blob: cb gets the raw bytes as they arrive (return < 0 to stop;
 * the callback's own error goes into err). The size and the sha256 digest
 * are checked at the end: OSB_E_INTEGRITY on mismatch, after all data was
 * delivered, so a consumer must commit only when this returns 0. */
typedef int (*osb_registry_data_cb)(void *ud, const void *data, size_t len, struct osb_err *err);
OSB_MUST_CHECK int osb_registry_blob(struct osb_registry *r, const struct osb_blob *b,
                                     osb_registry_data_cb cb, void *ud, struct osb_err *err);

/* Upload the blob in the file at path (size bytes, digest as given): a
 * HEAD first, and nothing more when the registry has it (returns 1); else
 * a monolithic upload (POST, then PUT <Location>?digest=… streaming the
 * file) and returns 0. The registry verifies the digest (OSB_E_INVALID
 * when it refuses the upload). */
OSB_MUST_CHECK int osb_registry_push_blob(struct osb_registry *r, const char *digest, int64_t size,
                                          const char *path, struct osb_err *err);

/* PUT the manifest bytes under reference: a tag, or a digest, which must
 * be the bytes' own (OSB_E_INTEGRITY otherwise, or when the registry says
 * it stored other bytes). */
OSB_MUST_CHECK int osb_registry_push_manifest(struct osb_registry *r, const char *reference,
                                              const char *media_type, const void *data, size_t len,
                                              struct osb_err *err);
#endif
