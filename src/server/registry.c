#include "server/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"

static const char *const state_names[OSB_ST_COUNT] = {
    [OSB_ST_PENDING] = "Pending",   [OSB_ST_RUNNING] = "Running",       [OSB_ST_PAUSED] = "Paused",
    [OSB_ST_STOPPING] = "Stopping", [OSB_ST_TERMINATED] = "Terminated", [OSB_ST_FAILED] = "Failed",
};

const char *osb_state_name(enum osb_sbx_state st)
{
    return (unsigned)st < OSB_ST_COUNT ? state_names[st] : "Unknown";
}

int osb_state_parse(const char *name, enum osb_sbx_state *out)
{
    for (int i = 0; i < OSB_ST_COUNT; i++) {
        if (strcasecmp(name, state_names[i]) == 0) {
            *out = (enum osb_sbx_state)i;
            return 0;
        }
    }
    return -1;
}

struct osb_sbx *osb_sbx_new(const char *id)
{
    struct osb_sbx *s = osb_xcalloc(1, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    return s;
}

void osb_sbx_free(struct osb_sbx *s)
{
    if (!s)
        return;
    free(s->reason);
    free(s->message);
    json_decref(s->spec);
    json_decref(s->metadata);
    free(s);
}

static char *dup_or_null(const char *s)
{
    return s ? osb_xstrdup(s) : NULL;
}

void osb_sbx_set_status(struct osb_sbx *s, enum osb_sbx_state st, const char *reason,
                        const char *message, int64_t now_us)
{
    char *r = dup_or_null(reason), *m = dup_or_null(message);
    free(s->reason);
    free(s->message);
    s->reason = r;
    s->message = m;
    s->state = st;
    s->transition_us = now_us;
}

/* ------------------------------------------------------------ registry */

#define NBUCKETS 1024

struct osb_sbx_index {
    struct osb_sbx *buckets[NBUCKETS];
    struct osb_sbx **order; /* list order */
    size_t n, cap;
};

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % NBUCKETS;
}

struct osb_sbx_index *osb_reg_new(void)
{
    return osb_xcalloc(1, sizeof(struct osb_sbx_index));
}

void osb_reg_free(struct osb_sbx_index *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        osb_sbx_free(r->order[i]);
    free(r->order);
    free(r);
}

/* Whether a comes before b in list order. */
static bool before(const struct osb_sbx *a, const struct osb_sbx *b)
{
    if (a->created_us != b->created_us)
        return a->created_us > b->created_us;
    return strcmp(a->id, b->id) < 0;
}

/* First index whose record does not come before s. */
static size_t lower_bound(const struct osb_sbx_index *r, const struct osb_sbx *s)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(r->order[mid], s))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void osb_reg_add(struct osb_sbx_index *r, struct osb_sbx *s)
{
    unsigned h = hash(s->id);
    s->hnext = r->buckets[h];
    r->buckets[h] = s;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->order = osb_xrealloc(r->order, r->cap * sizeof *r->order);
    }
    size_t at = lower_bound(r, s);
    memmove(r->order + at + 1, r->order + at, (r->n - at) * sizeof *r->order);
    r->order[at] = s;
    r->n++;
}

struct osb_sbx *osb_reg_get(const struct osb_sbx_index *r, const char *id)
{
    for (struct osb_sbx *s = r->buckets[hash(id)]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

struct osb_sbx *osb_reg_remove(struct osb_sbx_index *r, const char *id)
{
    struct osb_sbx **pp = &r->buckets[hash(id)];
    while (*pp && strcmp((*pp)->id, id) != 0)
        pp = &(*pp)->hnext;
    struct osb_sbx *s = *pp;
    if (!s)
        return NULL;
    *pp = s->hnext;
    s->hnext = NULL;
    size_t at = lower_bound(r, s);
    while (at < r->n && r->order[at] != s)
        at++;
    if (at < r->n) {
        memmove(r->order + at, r->order + at + 1, (r->n - at - 1) * sizeof *r->order);
        r->n--;
    }
    return s;
}

size_t osb_reg_count(const struct osb_sbx_index *r)
{
    return r->n;
}

struct osb_sbx *osb_reg_at(const struct osb_sbx_index *r, size_t i)
{
    return i < r->n ? r->order[i] : NULL;
}
