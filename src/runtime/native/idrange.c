/* The uid/gid range pool (idrange.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "runtime/native/idrange.h"

static int parse_u32(const char *s, char end, uint32_t *out, const char **rest)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || *e != end || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    *rest = e;
    return 0;
}

int osb_idr_parse(const char *s, uint32_t *first, uint32_t *count, struct osb_err *err)
{
    const char *rest;
    uint32_t a, n;
    if (!s || parse_u32(s, ':', &a, &rest) < 0 || parse_u32(rest + 1, '\0', &n, &rest) < 0)
        return osb_err_set(err, OSB_E_INVALID,
                           "`%s` is not \"start:count\" (two decimal numbers, e.g. "
                           "\"100000:6553600\")",
                           s ? s : "");
    if (a < OSB_IDR_MIN_START)
        return osb_err_set(err, OSB_E_INVALID,
                           "`%s`: start must be at least %u (the ids below are the host's own "
                           "users, root among them)",
                           s, OSB_IDR_MIN_START);
    if (n == 0 || n % OSB_IDR_SLOT)
        return osb_err_set(err, OSB_E_INVALID,
                           "`%s`: count must be a positive multiple of %u (one range per sandbox)",
                           s, OSB_IDR_SLOT);
    if ((uint64_t)a + n > UINT32_MAX)
        return osb_err_set(err, OSB_E_INVALID,
                           "`%s`: start + count must not exceed %" PRIu32
                           " (the kernel's invalid id)",
                           s, UINT32_MAX);
    *first = a;
    *count = n;
    return 0;
}

void osb_idr_init(struct osb_idr *r, uint32_t first, uint32_t count)
{
    r->first = first;
    r->n = count / OSB_IDR_SLOT;
    r->owner = osb_xcalloc(r->n ? r->n : 1, sizeof *r->owner);
}

void osb_idr_free(struct osb_idr *r)
{
    free(r->owner);
    r->owner = NULL;
    r->n = 0;
}

static size_t slot_of(const struct osb_idr *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->owner[i], id) == 0)
            return i;
    return r->n;
}

static uint32_t first_of(const struct osb_idr *r, size_t slot)
{
    return r->first + (uint32_t)slot * OSB_IDR_SLOT;
}

int osb_idr_alloc(struct osb_idr *r, const char *id, uint32_t *first, struct osb_err *err)
{
    size_t i = slot_of(r, id);
    if (i == r->n)
        i = slot_of(r, "");
    if (i == r->n)
        return osb_err_set(err, OSB_E_EXHAUSTED,
                           "no free uid range: all %zu ranges of %u ids of [native] userns_range "
                           "are in use (delete a sandbox or widen the range)",
                           r->n, OSB_IDR_SLOT);
    snprintf(r->owner[i], sizeof r->owner[i], "%s", id);
    *first = first_of(r, i);
    return 0;
}

int osb_idr_mark(struct osb_idr *r, const char *id, uint32_t first, struct osb_err *err)
{
    if (first < r->first || (first - r->first) % OSB_IDR_SLOT ||
        (first - r->first) / OSB_IDR_SLOT >= r->n)
        return osb_err_set(err, OSB_E_INVALID,
                           "sandbox `%s` maps uid %" PRIu32 ", outside [native] userns_range", id,
                           first);
    size_t i = (first - r->first) / OSB_IDR_SLOT;
    if (r->owner[i][0] && strcmp(r->owner[i], id) != 0)
        return osb_err_set(err, OSB_E_EXISTS, "sandboxes `%s` and `%s` both map uid %" PRIu32,
                           r->owner[i], id, first);
    snprintf(r->owner[i], sizeof r->owner[i], "%s", id);
    return 0;
}

void osb_idr_release(struct osb_idr *r, const char *id)
{
    size_t i = slot_of(r, id);
    if (i < r->n && id[0])
        r->owner[i][0] = '\0';
}

size_t osb_idr_used(const struct osb_idr *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        k += r->owner[i][0] != '\0';
    return k;
}
