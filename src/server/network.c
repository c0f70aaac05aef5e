#include "server/network.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "net/dns.h"
#include "net/hostnet.h"
#include "net/cidr.h"
#include "net/netns.h"
#include "net/policy.h"
#include "server/vault.h"
#include "vault/registry.h"

#define EGRESS_AUTH "OPENSANDBOX-EGRESS-AUTH"
/* Learned addresses stay allowed at least this long: the allow check runs
 * on every packet, so a short DNS TTL must not cut a long download. A
 * policy change re-checks them at once. */
#define LEARN_MIN_S 3600
#define MAX_LEARNED 4096

struct learned {
    char name[256];
    int family;
    uint8_t addr[16];
    int64_t until_ms;
};

/* A sandbox with a slot. */
struct nsb {
    struct nsb *next;
    char id[64];
    struct osb_net_slot slot;
    char gateway[INET_ADDRSTRLEN], address[INET_ADDRSTRLEN];
    bool has_policy;
    struct osb_policy policy;
    char token[64];
    struct learned *learned;
    size_t n_learned;
};

/* srv->net: NULL until osb_network_open. */
struct osb_netglue {
    struct osb_net *net; /* NULL for [network] mode "none" */
    struct osb_dns *dns;
    struct nsb *list;
    bool nft;                   /* [egress] mode "dns+nft" */
    struct osb_vault_reg *vreg; /* the credential vault's registry, or NULL */
    bool bridge;
    char upstreams[256]; /* "127.0.0.1:9, 10.0.0.2" for logs and diagnostics */
};

static struct nsb *find(const struct osb_netglue *g, const char *id)
{
    for (struct nsb *n = g ? g->list : NULL; n; n = n->next)
        if (strcmp(n->id, id) == 0)
            return n;
    return NULL;
}

bool osb_network_enabled(const struct osb_server *srv)
{
    return strcmp(srv->cfg->network.mode, "none") != 0;
}

int osb_network_metrics(const struct osb_server *srv, struct osb_buf *b)
{
    const struct osb_netglue *g = srv->net;
    struct osb_dns_stats st = {0};
    size_t learned = 0;
    if (g && g->dns)
        osb_dns_get_stats(g->dns, &st);
    for (const struct nsb *n = g ? g->list : NULL; n; n = n->next)
        learned += n->n_learned;
    return osb_buf_addf(b,
                        "# HELP opensandbox_egress_dns_queries_total DNS queries sandboxes sent to "
                        "the server's forwarder\n# TYPE opensandbox_egress_dns_queries_total "
                        "counter\nopensandbox_egress_dns_queries_total %llu\n"
                        "# HELP opensandbox_egress_dns_denied_total Names the egress policies "
                        "denied (NXDOMAIN)\n# TYPE opensandbox_egress_dns_denied_total counter\n"
                        "opensandbox_egress_dns_denied_total %llu\n"
                        "# HELP opensandbox_egress_dns_failed_total Queries answered SERVFAIL "
                        "(upstreams failed, or too many in flight)\n"
                        "# TYPE opensandbox_egress_dns_failed_total counter\n"
                        "opensandbox_egress_dns_failed_total %llu\n"
                        "# HELP opensandbox_egress_learned_addresses Addresses allowed because an "
                        "allowed name resolved to them\n"
                        "# TYPE opensandbox_egress_learned_addresses gauge\n"
                        "opensandbox_egress_learned_addresses %zu\n",
                        (unsigned long long)st.queries, (unsigned long long)st.denied,
                        (unsigned long long)st.failed, learned);
}

/* ------------------------------------------------------------ enforcement */

static bool restricted(const struct osb_netglue *g, const struct nsb *n)
{
    return g->nft && n->has_policy && n->policy.default_action == OSB_POLICY_DENY;
}

static void allow_addr(struct osb_netglue *g, struct nsb *n, int family, const void *addr,
                       unsigned prefix, uint32_t s)
{
    struct osb_err err = {0};
    if (osb_net_allow(g->net, n->slot.index, family, addr, prefix, s, &err) < 0 &&
        err.code != OSB_E_EXISTS) /* nested ranges: the wider one already covers it */
        osb_warn("sandbox %s: allow an address: %s", n->id, err.msg);
}

static void deny_addr(struct osb_netglue *g, struct nsb *n, const struct osb_cidr *c)
{
    struct osb_err err = {0};
    if (osb_net_deny(g->net, n->slot.index, c->family, c->addr, c->prefix, &err) < 0)
        osb_warn("sandbox %s: deny an address: %s", n->id, err.msg);
}

static void reintercept(struct osb_netglue *g, struct nsb *n);

/* nft side of the policy (dns+nft): the deny IP/CIDR rules are enforced
 * under either default; with default deny, only the allow rules' IPs/CIDRs
 * and the addresses of allowed answers are reachable besides. Between the
 * reset and the re-added deny entries (a few ms) the slot is briefly
 * unrestricted for them. */
static void apply_nft(struct osb_netglue *g, struct nsb *n)
{
    struct osb_err err = {0};
    if (osb_net_reset_allow(g->net, n->slot.index, &err) < 0 ||
        osb_net_restrict(g->net, n->slot.index, restricted(g, n), &err) < 0) {
        osb_err_log("sandbox %s: apply the egress policy: %s", n->id, err.msg);
        return;
    }
    if (!g->nft || !n->has_policy) {
        reintercept(g, n);
        return;
    }
    struct osb_cidrs deny = {0}, allow = {0};
    osb_cidr_policy_sets(&n->policy, &deny, &allow);
    for (size_t i = 0; i < deny.n; i++)
        deny_addr(g, n, &deny.v[i]);
    if (restricted(g, n))
        for (size_t i = 0; i < allow.n; i++)
            allow_addr(g, n, allow.v[i].family, allow.v[i].addr, allow.v[i].prefix, 0);
    osb_cidrs_free(&deny);
    osb_cidrs_free(&allow);
    if (!restricted(g, n)) {
        reintercept(g, n);
        return;
    }
    int64_t now = osb_now_ms();
    size_t k = 0;
    for (size_t i = 0; i < n->n_learned; i++) {
        struct learned *l = &n->learned[i];
        if (l->until_ms <= now || osb_policy_match_name(&n->policy, l->name) != OSB_POLICY_ALLOW)
            continue;
        allow_addr(g, n, l->family, l->addr, l->family == AF_INET ? 32 : 128,
                   (uint32_t)((l->until_ms - now) / 1000 + 1));
        n->learned[k++] = *l;
    }
    n->n_learned = k;
    reintercept(g, n);
}

/* An address of a name the sandbox's vault binds: its connections to the
 * bound ports go to the vault proxy, which is told the address is genuine.
 * Before the answer reaches the sandbox, as the allow entries. */
static void intercept(struct osb_netglue *g, struct nsb *n, const char *name, int family,
                      const uint8_t *addr, uint32_t keep)
{
    if (!g->vreg || family != AF_INET)
        return;
    struct in_addr dst;
    memcpy(&dst, addr, 4);
    static const uint16_t ports[] = {443, 80};
    bool any = false;
    for (size_t i = 0; i < 2; i++) {
        if (!osb_vault_reg_bound(g->vreg, n->slot.sandbox_ip, name, ports[i]))
            continue;
        struct osb_err err = {0};
        if (osb_net_intercept(g->net, n->slot.index, dst, ports[i], keep, &err) < 0)
            osb_warn("sandbox %s: intercept %s:%u: %s", n->id, name, ports[i], err.msg);
        else
            any = true;
    }
    if (any)
        osb_vault_reg_learn(g->vreg, n->slot.sandbox_ip, name, dst,
                            osb_mono_ms() + (int64_t)keep * 1000);
}

static void on_learn(void *ud, const char *key, const char *name, int family, const uint8_t *addr,
                     uint32_t ttl)
{
    struct osb_netglue *g = ud;
    struct nsb *n = find(g, key);
    if (!n || !n->has_policy)
        return;
    uint32_t keep = ttl > LEARN_MIN_S ? ttl : LEARN_MIN_S;
    size_t alen = family == AF_INET ? 4 : 16;
    struct learned *l = NULL;
    for (size_t i = 0; i < n->n_learned && !l; i++)
        if (n->learned[i].family == family && !memcmp(n->learned[i].addr, addr, alen) &&
            strcmp(n->learned[i].name, name) == 0)
            l = &n->learned[i];
    if (!l && n->n_learned < MAX_LEARNED) {
        n->learned = osb_xrealloc(n->learned, (n->n_learned + 1) * sizeof *n->learned);
        l = &n->learned[n->n_learned++];
        memset(l, 0, sizeof *l);
        snprintf(l->name, sizeof l->name, "%s", name);
        l->family = family;
        memcpy(l->addr, addr, alen);
    }
    if (l)
        l->until_ms = osb_now_ms() + (int64_t)keep * 1000;
    if (restricted(g, n))
        allow_addr(g, n, family, addr, family == AF_INET ? 32 : 128, keep);
    intercept(g, n, name, family, addr, keep);
}

/* After a reset of the slot's sets (a policy change) or a vault change:
 * the names it already resolved that are (now) bound. */
static void reintercept(struct osb_netglue *g, struct nsb *n)
{
    int64_t now = osb_now_ms();
    for (size_t i = 0; i < n->n_learned; i++) {
        struct learned *l = &n->learned[i];
        if (l->until_ms > now &&
            (!n->has_policy || osb_policy_match_name(&n->policy, l->name) == OSB_POLICY_ALLOW))
            intercept(g, n, l->name, l->family, l->addr,
                      (uint32_t)((l->until_ms - now) / 1000 + 1));
    }
}

static void on_vault_change(struct osb_server *srv, const char *id)
{
    struct nsb *n = find(srv->net, id);
    if (n && srv->net->net)
        reintercept(srv->net, n);
}

static int start_dns(struct osb_netglue *g, struct nsb *n, struct osb_err *err)
{
    return osb_dns_serve(g->dns, n->id, n->gateway, n->has_policy ? &n->policy : NULL, on_learn, g,
                         err);
}

/* ------------------------------------------------------------ records */

static void fill_addrs(struct nsb *n)
{
    inet_ntop(AF_INET, &n->slot.host_ip, n->gateway, sizeof n->gateway);
    inet_ntop(AF_INET, &n->slot.sandbox_ip, n->address, sizeof n->address);
}

static void nsb_free(struct nsb *n)
{
    if (n->has_policy)
        osb_policy_free(&n->policy);
    free(n->learned);
    free(n);
}

static void unlink_nsb(struct osb_netglue *g, struct nsb *n)
{
    for (struct nsb **p = &g->list; *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            return;
        }
}

/* The policy and token the record holds (a restart). */
static void load_policy(struct nsb *n, const struct osb_sbx *s)
{
    json_t *pol = NULL;
    const char *tok = "";
    struct osb_err err = {0};
    int has = osb_json_obj(s->spec, "networkPolicy", false, &pol, &err);
    if (has > 0 && osb_policy_parse(pol, &n->policy, &err) == 0)
        n->has_policy = true;
    else if (has) /* fail closed: a stored policy that no longer parses denies all */
        osb_policy_init(&n->policy, OSB_POLICY_DENY), n->has_policy = true;
    if (osb_json_str(s->spec, "egressToken", false, &tok, &err) < 0)
        tok = "";
    snprintf(n->token, sizeof n->token, "%s", tok);
}

/* ------------------------------------------------------------ open/close */

/* [network] dns_upstreams, else the host's resolv.conf nameservers. */
static char **upstreams(const struct osb_config *cfg)
{
    size_t n = 0;
    char **out = osb_xcalloc(9, sizeof *out);
    for (size_t i = 0; cfg->network.dns_upstreams && cfg->network.dns_upstreams[i] && n < 8; i++)
        out[n++] = osb_xstrdup(cfg->network.dns_upstreams[i]);
    FILE *f = n ? NULL : fopen("/etc/resolv.conf", "re");
    char line[256], ip[128];
    while (f && n < 8 && fgets(line, sizeof line, f))
        if (sscanf(line, " nameserver %127s", ip) == 1)
            out[n++] = strchr(ip, ':') ? osb_xasprintf("[%s]:53", ip) : osb_xstrdup(ip);
    if (f)
        fclose(f);
    return out;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static int open_dns(struct osb_server *srv, struct osb_netglue *g, struct osb_err *err)
{
    char **ups = upstreams(srv->cfg);
    if (!ups[0]) {
        strv_free(ups);
        return osb_err_set(err, OSB_E_INVALID,
                           "no DNS upstream: set [network] dns_upstreams "
                           "(the host's /etc/resolv.conf has no nameserver)");
    }
    size_t len = 0;
    g->upstreams[0] = 0;
    for (size_t i = 0; ups[i] && len < sizeof g->upstreams; i++)
        len += (size_t)snprintf(g->upstreams + len, sizeof g->upstreams - len, "%s%s",
                                i ? ", " : "", ups[i]);
    struct osb_dns_config dc = {.upstreams = (const char *const *)ups};
    int r = osb_dns_open(srv->loop, &dc, &g->dns, err);
    strv_free(ups);
    return r;
}

/* Sandboxes the records say hold a slot. */
/* Whether the record's policy (normalized by osb_policy_json) restricts
 * the slot's addresses under g. */
static bool record_restricted(const struct osb_netglue *g, json_t *spec)
{
    json_t *pol = NULL;
    const char *def = NULL;
    if (!g->nft || osb_json_obj(spec, "networkPolicy", false, &pol, NULL) <= 0)
        return false;
    return osb_json_str(pol, "defaultAction", false, &def, NULL) <= 0 || strcmp(def, "allow") != 0;
}

static size_t in_use(struct osb_server *srv, struct osb_net_inuse **out)
{
    size_t count = osb_reg_count(srv->reg), k = 0;
    *out = osb_xcalloc(count + 1, sizeof **out);
    for (size_t i = 0; i < count; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        json_t *net = NULL;
        int64_t slot;
        if (osb_json_obj(s->spec, "network", false, &net, NULL) <= 0 ||
            osb_json_int(net, "slot", true, &slot, NULL) <= 0 || slot < 0 || slot > UINT32_MAX)
            continue;
        (*out)[k++] = (struct osb_net_inuse){.sandbox_id = s->id,
                                             .index = (unsigned)slot,
                                             .restricted = record_restricted(srv->net, s->spec)};
    }
    return k;
}

/* Re-apply DNS and policy for a sandbox that kept its slot. */
static void readopt(struct osb_netglue *g, struct osb_sbx *s)
{
    struct osb_net_slot slot;
    if (osb_net_find(g->net, s->id, &slot, NULL) < 0)
        return;
    struct nsb *n = osb_xcalloc(1, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", s->id);
    n->slot = slot;
    fill_addrs(n);
    load_policy(n, s);
    n->next = g->list;
    g->list = n;
    struct osb_err err = {0};
    if (start_dns(g, n, &err) < 0)
        osb_err_log("sandbox %s: DNS forwarder: %s", s->id, err.msg);
    apply_nft(g, n);
}

static void readopt_all(struct osb_server *srv, struct osb_netglue *g)
{
    for (size_t i = 0, c = osb_reg_count(srv->reg); i < c; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        readopt(g, s);
        struct nsb *n = find(g, s->id);
        if (n)
            osb_srvvault_attach(srv, s, n->slot.sandbox_ip);
    }
}

/* Another server, docker0 or a VPN on the same range would take the
 * sandboxes' gateway addresses (or their traffic): refuse before touching
 * anything. This server's own slots from a previous run do not count. */
static int check_subnet(struct osb_server *srv, struct osb_err *err)
{
    char own[16];
    if (osb_net_ifprefix(srv->cfg->native.state_dir, own, err) < 0)
        return -1;
    return osb_hostnet_check(srv->cfg->network.subnet, own, err);
}

static const char *enforcement(const struct osb_netglue *g)
{
    return g->nft ? "DNS filtering and nftables address sets" : "DNS filtering only";
}

static void log_summary(const struct osb_server *srv)
{
    const struct osb_netglue *g = srv->net;
    struct osb_net_stats st;
    osb_net_stats(g->net, &st);
    osb_info("sandbox networking: %s on %s (a /30 per sandbox, host links %s<n>, nftables table "
             "inet %s), DNS through %s, networkPolicy enforced by %s, %u networks kept ready%s",
             g->bridge ? "bridge (endpoints give each sandbox's own address; NAT out)" : "NAT",
             srv->cfg->network.subnet, st.prefix, st.table, g->upstreams, enforcement(g),
             st.pool_size, osb_reg_count(srv->reg) ? ", running sandboxes re-attached" : "");
}

int osb_network_open(struct osb_server *srv, struct osb_err *err)
{
    struct osb_netglue *g = srv->net = osb_xcalloc(1, sizeof *srv->net);
    g->nft = strcmp(srv->cfg->egress.mode, "dns+nft") == 0;
    g->bridge = strcmp(srv->cfg->network.mode, "bridge") == 0;
    if (!osb_network_enabled(srv)) {
        osb_info("sandbox networking: none (each sandbox has only its own loopback interface)");
        return 0;
    }
    size_t n_allow = 0;
    while (srv->cfg->network.allow_host_cidrs && srv->cfg->network.allow_host_cidrs[n_allow])
        n_allow++;
    struct osb_net_config nc = {
        .state_dir = srv->cfg->native.state_dir,
        .subnet = srv->cfg->network.subnet,
        .pool_size = (unsigned)srv->cfg->network.pool_size,
        .allow_host_cidrs = (const char *const *)srv->cfg->network.allow_host_cidrs,
        .n_allow_host_cidrs = n_allow,
        .proxy_port = osb_srvvault_port(srv),
    };
    g->vreg = osb_srvvault_reg(srv);
    if (check_subnet(srv, err) < 0)
        return -1;
    struct osb_net_inuse *inuse;
    size_t k = in_use(srv, &inuse);
    int r = osb_net_open(&nc, inuse, k, &g->net, err);
    free(inuse);
    if (r < 0)
        return osb_err_wrap(err,
                            "[network] mode \"%s\" (set mode = \"none\" for loopback-only "
                            "sandboxes)",
                            srv->cfg->network.mode);
    if (open_dns(srv, g, err) < 0) {
        osb_net_close(g->net);
        g->net = NULL;
        return -1;
    }
    readopt_all(srv, g);
    osb_srvvault_on_change(srv, on_vault_change);
    log_summary(srv);
    return 0;
}

void osb_network_close(struct osb_server *srv)
{
    struct osb_netglue *g = srv->net;
    if (!g)
        return;
    while (g->list) {
        struct nsb *n = g->list;
        g->list = n->next;
        nsb_free(n);
    }
    if (g->dns)
        osb_dns_close(g->dns);
    if (g->net)
        osb_net_close(g->net);
    free(g);
    srv->net = NULL;
}

/* ------------------------------------------------------------ attach/detach */

static void record(struct osb_sbx *s, const struct nsb *n)
{
    json_object_set_new(s->spec, "network",
                        json_pack("{s:i,s:s,s:s}", "slot", (json_int_t)n->slot.index, "gateway",
                                  n->gateway, "address", n->address));
    if (n->has_policy) {
        json_object_set_new(s->spec, "networkPolicy", osb_policy_json(&n->policy));
        json_object_set_new(s->spec, "egressToken", json_string(n->token));
    }
}

int osb_network_attach(struct osb_server *srv, struct osb_sbx *s,
                       const struct osb_create_spec *spec, struct osb_sandbox_spec *rs,
                       struct osb_apierr *e)
{
    if (!osb_network_enabled(srv)) {
        if (spec->network_policy)
            return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                              "field 'networkPolicy': this server's sandboxes have no network "
                              "([network] mode = \"none\")");
        return 0;
    }
    struct osb_netglue *g = srv->net;
    struct nsb *n = osb_xcalloc(1, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", s->id);
    struct osb_err err = {0};
    if (spec->network_policy) {
        osb_policy_copy(&n->policy, spec->network_policy);
        n->has_policy = true;
        osb_random_hex(n->token, 24);
    }
    if (osb_net_claim(g->net, s->id, &n->slot, &err) < 0) {
        nsb_free(n);
        return osb_apierr(e, "SANDBOX::NETWORK_FAILED", "Sandbox %s: no network slot: %s", s->id,
                          err.msg);
    }
    fill_addrs(n);
    if (start_dns(g, n, &err) < 0) {
        struct osb_err rerr;
        if (osb_net_release(g->net, s->id, &rerr) < 0)
            osb_err_log("sandbox %s: release its network slot: %s", s->id, rerr.msg);
        nsb_free(n);
        return osb_apierr(e, "SANDBOX::NETWORK_FAILED", "Sandbox %s: DNS forwarder: %s", s->id,
                          err.msg);
    }
    n->next = g->list;
    g->list = n;
    record(s, n);
    osb_srvvault_attach(srv, s, n->slot.sandbox_ip); /* before its first lookup */
    apply_nft(g, n);
    rs->netns = n->slot.netns_path;
    rs->dns = n->gateway;
    return 0;
}

void osb_network_detach(struct osb_server *srv, struct osb_sbx *s)
{
    struct osb_netglue *g = srv->net;
    /* The record no longer holds the slot (in_use() at the next start). */
    json_object_del(s->spec, "network");
    struct nsb *n = find(g, s->id);
    if (!n || !g->net)
        return;
    osb_dns_stop(g->dns, s->id);
    osb_srvvault_detach(srv, s->id, n->slot.sandbox_ip);
    struct osb_err err = {0};
    if (osb_net_release(g->net, s->id, &err) < 0)
        osb_err_log("sandbox %s: release its network slot: %s", s->id, err.msg);
    unlink_nsb(g, n);
    nsb_free(n);
}

static int describe_policy(const struct osb_server *srv, const struct nsb *n, struct osb_buf *b)
{
    const struct osb_netglue *g = srv->net;
    if (!n->has_policy)
        return osb_buf_adds(b, "egress policy: none (every destination is allowed but the "
                               "blocked ones above)\n");
    int rc = osb_buf_addf(b,
                          "egress policy: default %s, %zu rule%s, mode %s, enforced by %s "
                          "(%s)\n",
                          osb_policy_action_str(n->policy.default_action), n->policy.nrules,
                          n->policy.nrules == 1 ? "" : "s",
                          osb_policy_mode_str(osb_policy_mode(&n->policy)), enforcement(g),
                          srv->cfg->egress.mode);
    if (g->nft && restricted(g, n))
        rc |= osb_buf_addf(b, "addresses learned from allowed DNS answers: %zu\n", n->n_learned);
    return rc;
}

int osb_network_diag(const struct osb_server *srv, const struct osb_sbx *s, struct osb_buf *b)
{
    int rc = osb_buf_addf(b, "network mode: %s\n", srv->cfg->network.mode);
    if (!osb_network_enabled(srv))
        return rc | osb_buf_adds(b, "interfaces: lo (127.0.0.1) only; the sandbox cannot reach "
                                    "other hosts\nDNS: none\negress policy: none (there is no "
                                    "network to leave by)\n");
    const struct osb_netglue *g = srv->net;
    const struct nsb *n = find(g, s->id);
    if (!n)
        return rc | osb_buf_adds(b, "The sandbox holds no network now (it is not running).\n");
    rc |= osb_buf_addf(b,
                       "sandbox address: %s/%u on %s\ngateway: %s (host link %s)\n"
                       "DNS: %s:53, the server's forwarder on the gateway, upstream %s\n"
                       "outbound: NAT through the host; other sandboxes, host services (but "
                       "this DNS) and 169.254.0.0/16 are blocked\n",
                       n->address, n->slot.prefix_len, n->slot.sandbox_ifname, n->gateway,
                       n->slot.host_ifname, n->gateway, g->upstreams);
    if (g->bridge)
        rc |= osb_buf_addf(b,
                           "endpoints: the sandbox's own address (%s:<port>); ports 44772 "
                           "and 18080 through the server proxy\n",
                           n->address);
    else
        rc |= osb_buf_adds(b, "endpoints: through the server proxy "
                              "(/sandboxes/<id>/proxy/<port>)\n");
    rc |= describe_policy(srv, n, b);
    return rc | osb_srvvault_diag(srv, s, b);
}

/* The host end of the sandbox's veth counts the other way round: what the
 * host end receives, the sandbox sent. */
static int link_counter(const char *ifname, const char *which, uint64_t *out)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", ifname, which);
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;
    int ok = f && fscanf(f, "%llu", &v) == 1;
    if (f)
        fclose(f);
    *out = v;
    return ok ? 0 : -1;
}

int osb_network_link_bytes(const struct osb_server *srv, const struct osb_sbx *s, uint64_t *rx,
                           uint64_t *tx)
{
    const struct nsb *n = find(srv->net, s->id);
    if (!n)
        return -1;
    return link_counter(n->slot.host_ifname, "tx_bytes", rx) < 0 ||
                   link_counter(n->slot.host_ifname, "rx_bytes", tx) < 0
               ? -1
               : 0;
}

const char *osb_network_bridge_ip(const struct osb_server *srv, const struct osb_sbx *s)
{
    const struct osb_netglue *g = srv->net;
    const struct nsb *n = g && g->bridge ? find(g, s->id) : NULL;
    return n ? n->address : "";
}


/* ------------------------------------------------ for the egress API */

const struct osb_policy *osb_network_policy(const struct osb_server *srv, const struct osb_sbx *s)
{
    const struct nsb *n = find(srv->net, s->id);
    return n && n->has_policy ? &n->policy : NULL;
}

bool osb_network_token_ok(const struct osb_server *srv, const struct osb_sbx *s, const char *tok)
{
    const struct nsb *n = find(srv->net, s->id);
    return n && n->has_policy && tok && osb_secret_eq(tok, n->token);
}

int osb_network_set_policy(struct osb_server *srv, struct osb_sbx *s, struct osb_policy *p,
                           struct osb_err *err)
{
    struct osb_netglue *g = srv->net;
    struct nsb *n = find(g, s->id);
    if (!n || !n->has_policy) {
        osb_policy_free(p);
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox %s has no egress policy", s->id);
    }
    osb_policy_free(&n->policy);
    n->policy = *p;
    memset(p, 0, sizeof *p);
    struct osb_err derr = {0};
    if (osb_dns_set_policy(g->dns, n->id, &n->policy, &derr) < 0)
        osb_err_log("sandbox %s: DNS policy: %s", n->id, derr.msg);
    apply_nft(g, n);
    json_object_set_new(s->spec, "networkPolicy", osb_policy_json(&n->policy));
    return 0;
}
