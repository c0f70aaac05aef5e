/* CreateSandboxRequest (protocol.md 1.4) parsed and validated into a C
 * struct, plus the rules shared with other routes: metadata label rules and
 * resource quantities. Every rejection names the field. */
#ifndef OSB_SERVER_SPEC_H
#define OSB_SERVER_SPEC_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/resolve.h"
#include "runtime/runtime.h"
#include "server/apierr.h"

/* One entry of "volumes" (protocol.md 1.9), shape-checked only: where a
 * host path may come from and whether a claim exists is decided later
 * (server/volumes.c), against the configuration and the filesystem. */
enum osb_vol_backend { OSB_VOL_HOST, OSB_VOL_PVC };

struct osb_volume {
    char *name;       /* [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63, unique */
    char *mount_path; /* absolute, normalized, not "/" nor reserved */
    char *sub_path;   /* NULL or relative, normalized, no ".." */
    bool read_only;
    enum osb_vol_backend backend;
    char *host_path; /* host: absolute, normalized, no ".." */
    struct {
        char *claim;           /* DNS subdomain, <= 253 */
        bool create;           /* createIfNotExists (default true) */
        bool delete_on_term;   /* deleteOnSandboxTermination (default false) */
        char *storage_class;   /* recorded only */
        char *storage;         /* as requested, recorded */
        int64_t storage_bytes; /* storage parsed (>= OSB_CLAIM_MIN_BYTES), 0 when absent:
                                  the size of a claim this request makes */
        json_t *access_modes;  /* NULL or array of strings; recorded only */
        bool created;          /* set by osb_vol_prepare: this request made the claim
                                  (recorded as "autoCreated"; only such a claim is
                                  removed on termination, as upstream does) */
    } pvc;
    /* Filled by osb_vol_prepare (server/volumes.c): what the runtime mounts. */
    char *src_root; /* the allowed root, or the claim's data directory */
    char *src_rel;  /* host path relative to src_root ("" = itself) */
};

struct osb_policy;

struct osb_create_spec {
    char *image;       /* image.uri; NULL with snapshot_id */
    char *snapshot_id; /* snapshotId (a restore), or NULL */
    char *auth_user;   /* image.auth: used for the pull only, never stored */
    char *auth_pass;
    struct osb_policy *network_policy; /* networkPolicy, parsed (src/net/policy.h), or
                                          NULL: no egress policy */
    bool credential_proxy;             /* credentialProxy.enabled (needs network_policy):
                                          the sandbox gets a credential vault (server/vault.c) */
    /* What the runtime gets, owned here. The parser fills entrypoint
     * (NULL-terminated, >= 1 element), env (NULL-terminated "K=V") and the
     * limits (0 = none/default); osb_spec_complete (server/complete.c) the
     * image's layers and config (workdir, user, env below the request's,
     * Entrypoint+Cmd for the SDKs' keep-alive default, which sets
     * keep_running: its end does not end the sandbox) and the limit
     * defaults; the create (lifecycle.c) the id, token, volumes and
     * network slot. */
    struct osb_sandbox_spec sb;
    struct osb_image_res img; /* the image, resolved once (osb_spec_resolve) */
    char *runtime_req;        /* extensions.runtime as asked, or NULL (the server's default) */
    const char *runtime;      /* the backend to run on (a constant name; set by the server) */
    int64_t timeout_s;        /* 0 = manual cleanup */
    json_t *metadata;         /* object of strings, never NULL */
    json_t *platform;         /* NULL or {"os","arch"} lower-cased */
    json_t *resource_limits;  /* NULL or the map as given */
    struct osb_volume *volumes;
    size_t n_volumes;
    char id[37]; /* the sandbox id (a uuid4), set by the handler after parsing */
    /* Pools (server/pools.c). pool_ref: extensions.poolRef, a claim from
     * that pool. pool_member: set by a pool's refill, never parsed: the
     * sandbox is that pool's idle member, built from template revision
     * pool_rev; pool_keep_running is its template's keep_running (the
     * member itself always has an end report: see osb_pool_member_prepare). */
    char *pool_ref;
    char *pool_member;
    int64_t pool_rev;
    bool pool_keep_running;
};

struct osb_spec_limits {
    int64_t min_timeout_s; /* 60 unless a test lowers it */
    int64_t max_timeout_s; /* 0 = no cap */
};

/* body: the parsed request object (borrowed). On success out owns copies;
 * free with osb_spec_free (or, once its image is resolved, with
 * osb_spec_release: server/complete.h). On failure out is left empty. */
int osb_spec_parse_create(json_t *body, const struct osb_spec_limits *lim,
                          struct osb_create_spec *out, struct osb_apierr *e) OSB_MUST_CHECK;
void osb_spec_free(struct osb_create_spec *s);

/* The spec kept in the store and echoed by GET: image, entrypoint,
 * platform, resourceLimits, timeout, volumes (no env: it may hold secrets;
 * volumes hold no credentials: ossfs is refused before). New ref. */
json_t *osb_spec_record(const struct osb_create_spec *s);

/* Kubernetes label rules for one metadata entry (value may be NULL to check
 * only the key). Returns 0, or -1 with a message naming the problem. */
int osb_label_check(const char *key, const char *value, char *msg, size_t n) OSB_MUST_CHECK;
/* Whether the key uses the reserved "opensandbox.io/" prefix. */
int osb_label_reserved(const char *key);
#endif
