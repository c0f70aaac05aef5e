/* The in-memory index of sandbox records, loaded from the store at start
 * and kept in step with it: lookup by id (hash) and iteration in list order
 * (createdAt descending, then id). Loop thread only. */
#ifndef OSB_SERVER_REGISTRY_H
#define OSB_SERVER_REGISTRY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* protocol.md 1.8. Pausing/Resuming never show: the freezer is immediate. */
enum osb_sbx_state {
    OSB_ST_PENDING,
    OSB_ST_RUNNING,
    OSB_ST_PAUSED,
    OSB_ST_STOPPING,
    OSB_ST_TERMINATED,
    OSB_ST_FAILED,
};
#define OSB_ST_COUNT 6

const char *osb_state_name(enum osb_sbx_state st);
/* Case-insensitive ("RUNNING" works); -1 for an unknown name. */
int osb_state_parse(const char *name, enum osb_sbx_state *out) OSB_MUST_CHECK;

struct osb_create_op; /* lifecycle.c: a create in flight */

struct osb_sbx {
    char id[64];
    char token[65]; /* execd access token (hex) */
    enum osb_sbx_state state;
    char *reason, *message; /* may be NULL */
    int64_t created_us, transition_us;
    int64_t expires_us; /* 0 = manual cleanup */
    json_t *spec;       /* osb_spec_record(): image, entrypoint, platform, ... */
    json_t *metadata;   /* object of strings */
    char runtime[32];   /* the backend it runs on (runtime.h's table) */
    char image[256];    /* the stored name of its image ("" unknown), for
                                    "image in use" */
    struct osb_rt_handle handle;
    bool has_handle;
    struct osb_create_op *op; /* non-NULL while creating */
    int snapshotting;         /* snapshots being taken (it is frozen meanwhile) */
    struct osb_sbx *hnext;    /* hash chain */
};

/* Whether s is a warm pool's unclaimed member (server/pools.h): the
 * sandbox routes do not show it. Its record's spec says so. */
static inline bool osb_sbx_pool_member(const struct osb_sbx *s)
{
    return json_object_get(s->spec, "poolMember") != NULL;
}

struct osb_sbx *osb_sbx_new(const char *id);
void osb_sbx_free(struct osb_sbx *s);
/* Sets state, reason and message (copied; NULL allowed) and the
 * transition time. */
void osb_sbx_set_status(struct osb_sbx *s, enum osb_sbx_state st, const char *reason,
                        const char *message, int64_t now_us);

struct osb_sbx_index;
struct osb_sbx_index *osb_reg_new(void);
/* Frees every record still registered. */
void osb_reg_free(struct osb_sbx_index *r);
/* Takes ownership; created_us must be set. The id must be new. */
void osb_reg_add(struct osb_sbx_index *r, struct osb_sbx *s);
struct osb_sbx *osb_reg_get(const struct osb_sbx_index *r, const char *id);
/* Unlinks the record and returns it (caller frees), or NULL. */
struct osb_sbx *osb_reg_remove(struct osb_sbx_index *r, const char *id);
size_t osb_reg_count(const struct osb_sbx_index *r);
/* The i-th record in list order (createdAt descending). */
struct osb_sbx *osb_reg_at(const struct osb_sbx_index *r, size_t i);
#endif
