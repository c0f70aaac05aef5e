#include "vault/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "vault/vault.h"

/* Bounded: a sandbox cannot grow the server's memory by resolving names. */
#define MAX_LEARNED 1024
#define MAX_HOSTS 512

struct learned {
    char name[256];
    struct in_addr dst;
    int64_t until_ms;
};

struct ent {
    struct ent *next;
    struct in_addr addr;
    char id[65];
    struct osb_vault *v;
    bool broken;
    char **hosts;
    struct learned *learned;
    size_t n_learned;
};

struct osb_vault_reg {
    pthread_mutex_t mu;
    struct ent *list;
};

struct osb_vault_reg *osb_vault_reg_new(void)
{
    struct osb_vault_reg *r = osb_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void ent_free(struct ent *e)
{
    if (e->v)
        osb_vault_unref(e->v);
    strv_free(e->hosts);
    free(e->learned);
    free(e);
}

void osb_vault_reg_free(struct osb_vault_reg *r)
{
    if (!r)
        return;
    while (r->list) {
        struct ent *e = r->list;
        r->list = e->next;
        ent_free(e);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static struct ent **slot(struct osb_vault_reg *r, struct in_addr a)
{
    struct ent **p = &r->list;
    while (*p && (*p)->addr.s_addr != a.s_addr)
        p = &(*p)->next;
    return p;
}

static char **strv_dup(const char *const *v)
{
    size_t n = 0;
    while (v && v[n] && n < MAX_HOSTS)
        n++;
    char **out = osb_xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = osb_xstrdup(v[i]);
    return out;
}

void osb_vault_reg_set(struct osb_vault_reg *r, struct in_addr addr, const char *id,
                       struct osb_vault *v, bool broken, const char *const *hosts)
{
    if (v)
        osb_vault_ref(v);
    pthread_mutex_lock(&r->mu);
    struct ent **p = slot(r, addr);
    if (!*p) {
        *p = osb_xcalloc(1, sizeof **p);
        (*p)->addr = addr;
    }
    struct ent *e = *p;
    snprintf(e->id, sizeof e->id, "%s", id);
    struct osb_vault *old = e->v;
    e->v = v;
    e->broken = broken;
    strv_free(e->hosts);
    e->hosts = hosts ? strv_dup(hosts) : NULL;
    pthread_mutex_unlock(&r->mu);
    if (old)
        osb_vault_unref(old);
}

bool osb_vault_reg_update(struct osb_vault_reg *r, const char *id, struct osb_vault *v, bool broken,
                          const char *const *hosts)
{
    struct in_addr addr = {0};
    bool found = false;
    pthread_mutex_lock(&r->mu);
    for (struct ent *e = r->list; e && !found; e = e->next)
        if (strcmp(e->id, id) == 0) {
            addr = e->addr;
            found = true;
        }
    pthread_mutex_unlock(&r->mu);
    if (found) /* the entry only goes on the loop thread, as this call */
        osb_vault_reg_set(r, addr, id, v, broken, hosts);
    return found;
}

struct osb_vault *osb_vault_reg_get(struct osb_vault_reg *r, const char *id, bool *broken)
{
    struct osb_vault *v = NULL;
    *broken = false;
    pthread_mutex_lock(&r->mu);
    for (struct ent *e = r->list; e; e = e->next)
        if (strcmp(e->id, id) == 0) {
            if ((v = e->v))
                osb_vault_ref(v);
            *broken = e->broken;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    return v;
}

void osb_vault_reg_drop(struct osb_vault_reg *r, struct in_addr addr)
{
    pthread_mutex_lock(&r->mu);
    struct ent **p = slot(r, addr), *e = *p;
    if (e)
        *p = e->next;
    pthread_mutex_unlock(&r->mu);
    if (e)
        ent_free(e);
}

/* "*.example.com" covers every subdomain, not the apex (as the bindings). */
static bool host_match(const char *pat, const char *name)
{
    if (strncmp(pat, "*.", 2) != 0)
        return strcasecmp(pat, name) == 0;
    size_t lp = strlen(pat + 1), ln = strlen(name);
    return ln > lp && strcasecmp(name + ln - lp, pat + 1) == 0;
}

static bool bound_locked(const struct ent *e, const char *name, int port)
{
    if (e->v && osb_vault_host_bound(e->v, name, port))
        return true;
    for (size_t i = 0; e->broken && e->hosts && e->hosts[i]; i++)
        if (host_match(e->hosts[i], name))
            return true;
    return false;
}

bool osb_vault_reg_bound(struct osb_vault_reg *r, struct in_addr addr, const char *name, int port)
{
    pthread_mutex_lock(&r->mu);
    struct ent *e = *slot(r, addr);
    bool b = e && bound_locked(e, name, port);
    pthread_mutex_unlock(&r->mu);
    return b;
}

void osb_vault_reg_learn(struct osb_vault_reg *r, struct in_addr addr, const char *name,
                         struct in_addr dst, int64_t until_ms)
{
    pthread_mutex_lock(&r->mu);
    struct ent *e = *slot(r, addr);
    struct learned *l = NULL;
    for (size_t i = 0; e && i < e->n_learned && !l; i++)
        if (e->learned[i].dst.s_addr == dst.s_addr && strcasecmp(e->learned[i].name, name) == 0)
            l = &e->learned[i];
    if (e && !l) {
        int64_t now = osb_mono_ms();
        size_t k = 0; /* drop the expired first */
        for (size_t i = 0; i < e->n_learned; i++)
            if (e->learned[i].until_ms > now)
                e->learned[k++] = e->learned[i];
        e->n_learned = k;
        if (k < MAX_LEARNED) {
            e->learned = osb_xrealloc(e->learned, (k + 1) * sizeof *e->learned);
            l = &e->learned[e->n_learned++];
            snprintf(l->name, sizeof l->name, "%s", name);
            l->dst = dst;
        }
    }
    if (l)
        l->until_ms = until_ms;
    pthread_mutex_unlock(&r->mu);
}

void osb_vault_reg_forget(struct osb_vault_reg *r, struct in_addr addr)
{
    pthread_mutex_lock(&r->mu);
    struct ent *e = *slot(r, addr);
    if (e)
        e->n_learned = 0;
    pthread_mutex_unlock(&r->mu);
}

void osb_vault_reg_view(struct osb_vault_reg *r, struct in_addr addr, const char *name, int port,
                        struct in_addr dst, struct osb_vault_view *out)
{
    memset(out, 0, sizeof *out);
    int64_t now = osb_mono_ms();
    pthread_mutex_lock(&r->mu);
    struct ent *e = *slot(r, addr);
    if (e) {
        out->known = true;
        out->broken = e->broken;
        snprintf(out->id, sizeof out->id, "%s", e->id);
        out->bound = name && bound_locked(e, name, port);
        for (size_t i = 0; name && i < e->n_learned && !out->learned; i++)
            out->learned = e->learned[i].dst.s_addr == dst.s_addr && e->learned[i].until_ms > now &&
                           strcasecmp(e->learned[i].name, name) == 0;
        if ((out->vault = e->v))
            osb_vault_ref(e->v);
    }
    pthread_mutex_unlock(&r->mu);
}
