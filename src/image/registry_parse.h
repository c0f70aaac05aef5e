/* The pure parts of the registry client (no network): auth challenges,
 * media types, manifests and indexes. Separate so unit tests reach them. */
#ifndef OSB_IMAGE_REGISTRY_PARSE_H
#define OSB_IMAGE_REGISTRY_PARSE_H
#include <jansson.h>
#include <stddef.h>

#include "common/err.h"
#include "image/registry.h"

enum osb_media_kind {
    OSB_MT_UNKNOWN,
    OSB_MT_INDEX,    /* OCI index or Docker manifest list */
    OSB_MT_MANIFEST, /* OCI or Docker v2 schema 2 image manifest */
    OSB_MT_CONFIG,
    OSB_MT_LAYER,   /* tar, tar+gzip, tar+zstd */
    OSB_MT_SCHEMA1, /* Docker v2 schema 1 (not supported) */
    OSB_MT_FOREIGN, /* non-distributable layers (not supported) */
};
enum osb_media_kind osb_media_kind(const char *media_type);

/* What the Accept header of a manifest request lists. */
#define OSB_MANIFEST_ACCEPT \
    "application/vnd.oci.image.index.v1+json, " \
    "application/vnd.docker.distribution.manifest.list.v2+json, " \
    "application/vnd.oci.image.manifest.v1+json, " \
    "application/vnd.docker.distribution.manifest.v2+json"

struct osb_auth_challenge {
    char scheme[16]; /* "Bearer", "Basic" */
    char realm[512];
    char service[256];
    char scope[512];
};
/* Parse a WWW-Authenticate value: scheme then k="v" (or k=token) pairs,
 * comma separated. OSB_E_INVALID when there is no scheme. */
OSB_MUST_CHECK int osb_auth_parse(const char *header, struct osb_auth_challenge *out,
                                  struct osb_err *err);

/* The platform to pick when the options name none: linux and the
 * machine's architecture in Go's spelling (amd64, arm64, ...). */
const char *osb_default_arch(void);

/* From an index, the digest of the manifest for os/arch (variant is
 * ignored; "unknown/unknown" attestation entries never match).
 * OSB_E_UNSUPPORTED when no entry matches (the message lists those
 * offered), OSB_E_INVALID when malformed. image names the image. */
OSB_MUST_CHECK int osb_index_select(json_t *index, const char *os, const char *arch,
                                    const char *image, char digest[OSB_DIGEST_MAX],
                                    struct osb_err *err);

/* Fill config_blob, layers, n_layers of out from an image manifest
 * (config and digest left alone). Checks media types and digests. */
OSB_MUST_CHECK int osb_manifest_parse(json_t *manifest, const char *image, struct osb_manifest *out,
                                      struct osb_err *err);
#endif
