#include "server/vault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "server/metrics.h"
#include "vault/ca.h"
#include "vault/proxy.h"
#include "vault/registry.h"
#include "vault/store.h"
#include "vault/vault.h"

/* What a credentialProxy sandbox mounts, read-only: the host's bundle with
 * our CA appended over its system bundle, and our CA alone where
 * a fixed place (NODE_EXTRA_CA_CERTS). */
#define BUNDLE_IN_SANDBOX "/etc/ssl/certs/ca-certificates.crt"
#define CA_IN_SANDBOX "/etc/opensandbox/vault-ca.pem"
#define HOST_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define MAX_EVENTS 4096

struct ev {
    struct ev *next;
    char id[65];
    char key[160]; /* the binding, or "(outcome)" when none was used */
    char msg[768];
    char outcome[48]; /* injected, no-binding, or the refusal's code: /metrics */
};

/* Requests per sandbox and binding (or outcome), for diagnostics. */
struct counter {
    struct counter *next;
    char id[65];
    char key[160];
    uint64_t n;
};
#define MAX_COUNTERS 8192

struct osb_srvvault {
    struct osb_server *srv;
    char *dir, *trust_dir;
    struct osb_vault_ca *ca;
    struct osb_vault_store *store;
    struct osb_vault_reg *reg;
    struct osb_vault_proxy *proxy;
    uint16_t port;
    void (*changed)(struct osb_server *, const char *);
    /* Injection records from the proxy's threads, written on the loop. */
    uv_async_t async;
    bool async_on;
    pthread_mutex_t mu;
    struct ev *head, **tail;
    size_t queued, dropped;
    struct counter *counters;
    size_t ncounters;
};

static struct osb_srvvault *glue(const struct osb_server *srv)
{
    return srv->vault;
}

/* ------------------------------------------------------------ events */

static void on_event(void *ud, const struct osb_vault_event *e)
{
    struct osb_srvvault *g = ud;
    struct ev *v = osb_xcalloc(1, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", e->sandbox_id);
    snprintf(v->outcome, sizeof v->outcome, "%s", e->outcome);
    if (e->binding)
        snprintf(v->key, sizeof v->key, "binding %s: credential added", e->binding);
    else
        snprintf(v->key, sizeof v->key, "%s", e->outcome);
    snprintf(v->msg, sizeof v->msg, "%s: %s %s%s -> %d (binding %s)", e->outcome, e->method,
             e->host, e->path, e->status, e->binding ? e->binding : "none");
    pthread_mutex_lock(&g->mu);
    bool room = g->queued < MAX_EVENTS;
    if (room) {
        *g->tail = v;
        g->tail = &v->next;
        g->queued++;
    } else {
        g->dropped++;
    }
    pthread_mutex_unlock(&g->mu);
    if (!room)
        free(v);
    else
        uv_async_send(&g->async);
}

static void count(struct osb_srvvault *g, const char *id, const char *key)
{
    struct counter *c = g->counters;
    while (c && (strcmp(c->id, id) || strcmp(c->key, key)))
        c = c->next;
    if (!c && g->ncounters < MAX_COUNTERS) {
        c = osb_xcalloc(1, sizeof *c);
        snprintf(c->id, sizeof c->id, "%s", id);
        snprintf(c->key, sizeof c->key, "%s", key);
        c->next = g->counters;
        g->counters = c;
        g->ncounters++;
    }
    if (c)
        c->n++;
}

static void drop_counters(struct osb_srvvault *g, const char *id)
{
    for (struct counter **p = &g->counters; *p;) {
        struct counter *c = *p;
        if (strcmp(c->id, id) == 0) {
            *p = c->next;
            free(c);
            g->ncounters--;
        } else {
            p = &c->next;
        }
    }
}

static void drain_events(uv_async_t *a)
{
    struct osb_srvvault *g = a->data;
    pthread_mutex_lock(&g->mu);
    struct ev *list = g->head;
    g->head = NULL;
    g->tail = &g->head;
    g->queued = 0;
    pthread_mutex_unlock(&g->mu);
    while (list) {
        struct ev *v = list;
        list = v->next;
        struct osb_err err = {0};
        if (osb_reg_get(g->srv->reg, v->id) &&
            osb_store_event(g->srv->store, v->id, "CredentialVault", v->msg, &err) < 0)
            osb_warn("sandbox %s: record a vault event: %s", v->id, err.msg);
        osb_info("sandbox %s: credential vault: %s", v->id, v->msg);
        count(g, v->id, v->key);
        osb_metrics_vault(g->srv->metrics, v->outcome);
        free(v);
    }
}

/* ------------------------------------------------------------ trust */

/* trust/ca.pem and trust/bundle.pem (the host's bundle + our CA), rewritten
 * at every start so a refreshed host bundle reaches new sandboxes. */
static int write_trust(struct osb_srvvault *g, struct osb_err *err)
{
    const char *ca = osb_vault_ca_pem(g->ca);
    char *host = NULL;
    size_t hl = 0;
    FILE *f = fopen(HOST_BUNDLE, "re");
    if (f) {
        struct stat st;
        if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && st.st_size < (64 << 20)) {
            host = osb_xmalloc((size_t)st.st_size + 1);
            hl = fread(host, 1, (size_t)st.st_size, f);
        }
        fclose(f);
    }
    char path[4096];
    int r = 0;
    const char *names[2] = {"ca.pem", "bundle.pem"};
    for (int i = 0; i < 2 && r == 0; i++) {
        snprintf(path, sizeof path, "%s/%s.tmp", g->trust_dir, names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        bool ok = fd >= 0;
        if (ok && i == 1 && hl)
            ok = write(fd, host, hl) == (ssize_t)hl &&
                 (host[hl - 1] == '\n' || write(fd, "\n", 1) == 1);
        if (ok)
            ok = write(fd, ca, strlen(ca)) == (ssize_t)strlen(ca);
        if (fd >= 0)
            close(fd);
        char final[4096];
        snprintf(final, sizeof final, "%s/%s", g->trust_dir, names[i]);
        if (!ok || rename(path, final) < 0)
            r = osb_err_sys(err, "write %s", final);
    }
    free(host);
    return r;
}

/* ------------------------------------------------------------ open, close */

static int open_parts(struct osb_srvvault *g, struct osb_err *err)
{
    const struct osb_config *cfg = g->srv->cfg;
    if (osb_mkdir_p(g->dir, 0700, err) < 0 || chmod(g->dir, 0700) < 0 ||
        osb_mkdir_p(g->trust_dir, 0755, err) < 0 || osb_vault_ca_open(g->dir, &g->ca, err) < 0 ||
        write_trust(g, err) < 0 || osb_vault_store_open(g->dir, &g->store, err) < 0)
        return -1;
    g->reg = osb_vault_reg_new();
    struct osb_vault_proxy_cfg pc = {.ca = g->ca,
                                     .reg = g->reg,
                                     .upstream_ca_file = cfg->credential_vault.upstream_ca_file,
                                     .on_event = on_event,
                                     .ud = g};
    return osb_vault_proxy_start(&pc, &g->port, &g->proxy, err);
}

int osb_srvvault_open(struct osb_server *srv, struct osb_err *err)
{
    if (strcmp(srv->cfg->network.mode, "none") == 0)
        return 0;
    struct osb_srvvault *g = osb_xcalloc(1, sizeof *g);
    g->srv = srv;
    g->dir = osb_xasprintf("%s/vault", srv->cfg->native.state_dir);
    g->trust_dir = osb_xasprintf("%s/trust", g->dir);
    g->tail = &g->head;
    pthread_mutex_init(&g->mu, NULL);
    srv->vault = g;
    if (uv_async_init(srv->loop, &g->async, drain_events) == 0) {
        g->async.data = g;
        g->async_on = true;
    }
    if (!g->async_on || open_parts(g, err) < 0) {
        osb_err_wrap(err, "credential vault");
        osb_srvvault_close(srv);
        return -1;
    }
    return 0;
}

void osb_srvvault_close(struct osb_server *srv)
{
    struct osb_srvvault *g = glue(srv);
    if (!g)
        return;
    osb_vault_proxy_stop(g->proxy); /* first: its threads read the rest */
    if (g->async_on) {
        drain_events(&g->async);
        uv_close((uv_handle_t *)&g->async, NULL);
        uv_run(srv->loop, UV_RUN_NOWAIT); /* the close callback, before g goes */
    }
    while (g->counters) {
        struct counter *c = g->counters;
        g->counters = c->next;
        free(c);
    }
    osb_vault_reg_free(g->reg);
    osb_vault_store_close(g->store);
    osb_vault_ca_close(g->ca);
    pthread_mutex_destroy(&g->mu);
    free(g->dir);
    free(g->trust_dir);
    free(g);
    srv->vault = NULL;
}

uint16_t osb_srvvault_port(const struct osb_server *srv)
{
    return glue(srv) ? glue(srv)->port : 0;
}

struct osb_vault_reg *osb_srvvault_reg(const struct osb_server *srv)
{
    return glue(srv) ? glue(srv)->reg : NULL;
}

void osb_srvvault_on_change(struct osb_server *srv, void (*fn)(struct osb_server *, const char *))
{
    if (glue(srv))
        glue(srv)->changed = fn;
}

/* ------------------------------------------------------------ sandboxes */

bool osb_srvvault_wanted(const struct osb_sbx *s)
{
    json_t *cp = s->spec ? json_object_get(s->spec, "credentialProxy") : NULL;
    return json_is_true(json_object_get(cp, "enabled"));
}

static void add_env(char ***env, const char *key, const char *value)
{
    size_t n = 0, kl = strlen(key);
    for (; *env && (*env)[n]; n++)
        if (strncmp((*env)[n], key, kl) == 0 && (*env)[n][kl] == '=')
            return; /* the request's own value wins */
    *env = osb_xrealloc(*env, (n + 2) * sizeof **env);
    (*env)[n] = osb_xasprintf("%s=%s", key, value);
    (*env)[n + 1] = NULL;
}

int osb_srvvault_prepare(struct osb_server *srv, struct osb_create_spec *spec, struct osb_apierr *e)
{
    struct osb_srvvault *g = glue(srv);
    if (!spec->credential_proxy)
        return 0;
    if (!g)
        return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                          "field 'credentialProxy': this server's sandboxes have no network "
                          "([network] mode = \"none\")");
    struct osb_sandbox_spec *sb = &spec->sb;
    sb->volumes = osb_xrealloc(sb->volumes, (sb->n_volumes + 2) * sizeof *sb->volumes);
    sb->volumes[sb->n_volumes++] = (struct osb_rt_volume){
        "credential-vault-bundle", g->trust_dir, "bundle.pem", NULL, BUNDLE_IN_SANDBOX, true};
    sb->volumes[sb->n_volumes++] = (struct osb_rt_volume){
        "credential-vault-ca", g->trust_dir, "ca.pem", NULL, CA_IN_SANDBOX, true};
    static const char *const bundle_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                              "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"};
    for (size_t i = 0; i < sizeof bundle_vars / sizeof *bundle_vars; i++)
        add_env(&sb->env, bundle_vars[i], BUNDLE_IN_SANDBOX);
    add_env(&sb->env, "NODE_EXTRA_CA_CERTS", CA_IN_SANDBOX);
    return 0;
}

/* The names the bindings of v bind, from its sanitized form: what is still
 * intercepted (and refused) if the stored vault cannot be read later. */
static void record_hosts(struct osb_sbx *s, const struct osb_vault *v)
{
    json_t *hosts = json_array();
    json_t *st = v ? osb_vault_state_json(v) : NULL, *b;
    size_t i, k;
    json_array_foreach(json_object_get(st, "bindings"), i, b)
    {
        json_t *h;
        json_array_foreach(json_object_get(json_object_get(b, "match"), "hosts"), k, h)
            json_array_append(hosts, h);
    }
    json_decref(st);
    json_object_set_new(s->spec, "credentialVaultHosts", hosts);
}

static char **hosts_of(const struct osb_sbx *s)
{
    json_t *a = json_object_get(s->spec, "credentialVaultHosts");
    size_t n = json_array_size(a), i;
    char **v = osb_xcalloc(n + 1, sizeof *v);
    json_t *h;
    size_t k = 0;
    json_array_foreach(a, i, h) if (json_is_string(h)) v[k++] = osb_xstrdup(json_string_value(h));
    return v;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

void osb_srvvault_attach(struct osb_server *srv, const struct osb_sbx *s, struct in_addr ip)
{
    struct osb_srvvault *g = glue(srv);
    if (!g || !osb_srvvault_wanted(s))
        return;
    struct osb_vault *v = NULL;
    struct osb_err err = {0};
    bool broken = false;
    if (osb_vault_store_get(g->store, s->id, &v, &err) < 0 && err.code != OSB_E_NOTFOUND) {
        /* Fail closed: its bound names stay intercepted, every request refused. */
        osb_err_log("sandbox %s: its credential vault cannot be read: %s", s->id, err.msg);
        broken = true;
    }
    char **hosts = broken ? hosts_of(s) : NULL;
    osb_vault_reg_set(g->reg, ip, s->id, v, broken, (const char *const *)hosts);
    strv_free(hosts);
    if (v)
        osb_vault_unref(v);
}

void osb_srvvault_detach(struct osb_server *srv, const char *id, struct in_addr ip)
{
    struct osb_srvvault *g = glue(srv);
    if (!g)
        return;
    osb_vault_reg_drop(g->reg, ip);
    drop_counters(g, id);
    struct osb_err err = {0};
    if (osb_vault_store_del(g->store, id, &err) < 0)
        osb_warn("sandbox %s: remove its credential vault: %s", id, err.msg);
}

struct osb_vault *osb_srvvault_get(struct osb_server *srv, const char *id, bool *broken)
{
    *broken = false;
    return glue(srv) ? osb_vault_reg_get(glue(srv)->reg, id, broken) : NULL;
}

int osb_srvvault_put(struct osb_server *srv, struct osb_sbx *s, struct osb_vault *v,
                     struct osb_err *err)
{
    struct osb_srvvault *g = glue(srv);
    if (!g)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "this server has no credential vault");
    if ((v ? osb_vault_store_put(g->store, s->id, v, err)
           : osb_vault_store_del(g->store, s->id, err)) < 0)
        return -1;
    if (!osb_vault_reg_update(g->reg, s->id, v, false, NULL))
        return osb_err_set(err, OSB_E_NOTFOUND, "the sandbox has no network slot");
    record_hosts(s, v);
    if (g->changed)
        g->changed(srv, s->id);
    return 0;
}

int osb_srvvault_diag(const struct osb_server *srv, const struct osb_sbx *s, struct osb_buf *b)
{
    struct osb_srvvault *g = glue(srv);
    if (!g || !osb_srvvault_wanted(s))
        return osb_buf_adds(b, "credential proxy: off\n");
    bool broken;
    struct osb_vault *v = osb_vault_reg_get(g->reg, s->id, &broken);
    int rc = broken ? osb_buf_adds(b, "credential proxy: on; its vault cannot be read: requests "
                                      "to its bound names are refused\n")
             : v    ? osb_buf_addf(b, "credential proxy: on; vault revision %lld\n",
                                   (long long)osb_vault_revision(v))
                    : osb_buf_adds(b, "credential proxy: on; no vault yet\n");
    if (v)
        osb_vault_unref(v);
    for (const struct counter *c = g->counters; c; c = c->next)
        if (strcmp(c->id, s->id) == 0)
            rc |= osb_buf_addf(b, "  %s: %llu requests\n", c->key, (unsigned long long)c->n);
    return rc;
}

int osb_srvvault_check_policy(struct osb_server *srv, const struct osb_sbx *s,
                              const struct osb_policy *p, struct osb_err *err)
{
    bool broken;
    struct osb_vault *v = glue(srv) ? osb_vault_reg_get(glue(srv)->reg, s->id, &broken) : NULL;
    int r = v ? osb_vault_check_policy(v, p, err) : 0;
    if (v)
        osb_vault_unref(v);
    return r;
}
