#include "server/network.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "net/dns.h"
#include "net/hostnet.h"
#include "net/netns.h"
#include "net/policy.h"

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

static struct {
    struct osb_net *net;
    struct osb_dns *dns;
    struct nsb *list;
    bool nft; /* [egress] mode "dns+nft" */
    bool bridge;
    char upstreams[256]; /* "127.0.0.1:9, 10.0.0.2" for logs and diagnostics */
} g;

static struct nsb *find(const char *id)
{
    for (struct nsb *n = g.list; n; n = n->next)
        if (strcmp(n->id, id) == 0)
            return n;
    return NULL;
}

bool osb_network_enabled(const struct osb_server *srv)
{
    return strcmp(srv->cfg->network.mode, "none") != 0;
}

/* ------------------------------------------------------------ enforcement */

static bool restricted(const struct nsb *n)
{
    return g.nft && n->has_policy && n->policy.default_action == OSB_POLICY_DENY;
}

static void allow_addr(struct nsb *n, int family, const void *addr, unsigned prefix, uint32_t s)
{
    struct osb_err err = {0};
    if (osb_net_allow(g.net, n->slot.index, family, addr, prefix, s, &err) < 0 &&
        err.code != OSB_E_EXISTS) /* nested ranges: the wider one already covers it */
        osb_warn("sandbox %s: allow an address: %s", n->id, err.msg);
}

/* ------------------------------------------------- static IP/CIDR rules */

/* Upper bound of deny pieces per policy: carving many allow holes out of a
 * wide deny range could otherwise explode (one nft commit per piece). */
#define MAX_PIECES 4096

struct cidr {
    int family;
    unsigned prefix;
    uint8_t addr[16];
};

struct cidrs {
    struct cidr *v;
    size_t n;
};

static bool is_ip_rule(const struct osb_policy_rule *r)
{
    return r->kind == OSB_POLICY_IP || r->kind == OSB_POLICY_CIDR;
}

/* w contains every address of c. */
static bool covers(const struct cidr *w, const struct cidr *c)
{
    if (w->family != c->family || w->prefix > c->prefix)
        return false;
    unsigned full = w->prefix / 8, rest = w->prefix % 8;
    if (memcmp(w->addr, c->addr, full) != 0)
        return false;
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    return !rest || (w->addr[full] & m) == (c->addr[full] & m);
}

static struct cidr rule_cidr(const struct osb_policy_rule *r)
{
    struct cidr c = { .family = r->family, .prefix = r->prefix };
    memcpy(c.addr, r->addr, sizeof c.addr);
    return c;
}

/* Whether an IP/CIDR rule before index `upto` with action `act` fully covers
 * c (*inside: one lies strictly inside c instead). */
static bool earlier_covers(const struct osb_policy *p, size_t upto, enum osb_policy_action act,
                           const struct cidr *c, bool *inside)
{
    if (inside)
        *inside = false;
    for (size_t j = 0; j < upto; j++) {
        const struct osb_policy_rule *r = &p->rules[j];
        if (r->action != act || !is_ip_rule(r))
            continue;
        struct cidr h = rule_cidr(r);
        if (covers(&h, c))
            return true;
        if (inside && covers(c, &h))
            *inside = true;
    }
    return false;
}

static void push(struct cidrs *out, const struct cidr *c)
{
    if (c->prefix == 0) { /* nft takes prefixes from 1 on: two halves */
        struct cidr lo = *c, hi = *c;
        lo.prefix = hi.prefix = 1;
        hi.addr[0] = 0x80;
        push(out, &lo);
        push(out, &hi);
        return;
    }
    out->v = osb_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    out->v[out->n++] = *c;
}

/* Appends c minus the earlier allow rules (before `upto`) as CIDR pieces:
 * halves c until each half is either inside an allow hole (dropped) or free
 * of holes (kept). Past MAX_PIECES the rest is kept whole (holes shadowed). */
static void carve_deny(const struct osb_policy *p, size_t upto, struct cidr c, struct cidrs *out)
{
    bool inside;
    if (earlier_covers(p, upto, OSB_POLICY_ALLOW, &c, &inside))
        return;
    unsigned bits = c.family == AF_INET ? 32 : 128;
    if (!inside || c.prefix >= bits || out->n >= MAX_PIECES) {
        push(out, &c);
        return;
    }
    struct cidr hi = c;
    c.prefix++;
    hi.prefix++;
    hi.addr[(hi.prefix - 1) / 8] |= (uint8_t)(0x80 >> ((hi.prefix - 1) % 8));
    carve_deny(p, upto, c, out);
    carve_deny(p, upto, hi, out);
}

/* Drops entries covered by another one (the kernel's interval sets refuse
 * nested ranges, and they add nothing); of equal ones the first stays. */
static void drop_nested(struct cidrs *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        bool nested = false;
        for (size_t j = 0; j < l->n && !nested; j++)
            nested = j != i && covers(&l->v[j], &l->v[i]) &&
                     (l->v[j].prefix < l->v[i].prefix || j < i);
        if (!nested)
            l->v[k++] = l->v[i];
    }
    l->n = k;
}

/* The deny and allow set entries of the policy's IP/CIDR rules, first match
 * wins. The deny sets are checked before the allow sets, so a deny entry
 * gets the earlier allow rules carved out of it: then an address is in the
 * deny sets iff its first matching IP/CIDR rule is a deny, which makes the
 * order exact for static rules. An allow rule fully covered by an earlier
 * deny is skipped (the deny sets would reject it anyway). What stays
 * approximate: past MAX_PIECES a deny range is kept whole, shadowing the
 * earlier allow ranges inside it; and addresses learned from DNS for an
 * allowed domain are still rejected when a deny IP/CIDR rule covers them. */
static void static_sets(const struct osb_policy *p, struct cidrs *deny, struct cidrs *allow)
{
    for (size_t i = 0; i < p->nrules; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if (!is_ip_rule(r))
            continue;
        struct cidr c = rule_cidr(r);
        if (r->action == OSB_POLICY_DENY)
            carve_deny(p, i, c, deny);
        else if (!earlier_covers(p, i, OSB_POLICY_DENY, &c, NULL))
            push(allow, &c);
    }
    drop_nested(deny);
    drop_nested(allow);
}

static void deny_addr(struct nsb *n, const struct cidr *c)
{
    struct osb_err err = {0};
    if (osb_net_deny(g.net, n->slot.index, c->family, c->addr, c->prefix, &err) < 0)
        osb_warn("sandbox %s: deny an address: %s", n->id, err.msg);
}

/* nft side of the policy (dns+nft): the deny IP/CIDR rules are enforced
 * under either default; with default deny, only the allow rules' IPs/CIDRs
 * and the addresses of allowed answers are reachable besides. Between the
 * reset and the re-added deny entries (a few ms) the slot is briefly
 * unrestricted for them. */
static void apply_nft(struct nsb *n)
{
    struct osb_err err = {0};
    if (osb_net_reset_allow(g.net, n->slot.index, &err) < 0 ||
        osb_net_restrict(g.net, n->slot.index, restricted(n), &err) < 0) {
        osb_err_log("sandbox %s: apply the egress policy: %s", n->id, err.msg);
        return;
    }
    if (!g.nft || !n->has_policy)
        return;
    struct cidrs deny = {0}, allow = {0};
    static_sets(&n->policy, &deny, &allow);
    for (size_t i = 0; i < deny.n; i++)
        deny_addr(n, &deny.v[i]);
    if (restricted(n))
        for (size_t i = 0; i < allow.n; i++)
            allow_addr(n, allow.v[i].family, allow.v[i].addr, allow.v[i].prefix, 0);
    free(deny.v);
    free(allow.v);
    if (!restricted(n))
        return;
    int64_t now = osb_now_ms();
    size_t k = 0;
    for (size_t i = 0; i < n->n_learned; i++) {
        struct learned *l = &n->learned[i];
        if (l->until_ms <= now || osb_policy_match_name(&n->policy, l->name) != OSB_POLICY_ALLOW)
            continue;
        allow_addr(n, l->family, l->addr, l->family == AF_INET ? 32 : 128,
                   (uint32_t)((l->until_ms - now) / 1000 + 1));
        n->learned[k++] = *l;
    }
    n->n_learned = k;
}

static void on_learn(void *ud, const char *key, const char *name, int family, const uint8_t *addr,
                     uint32_t ttl)
{
    (void)ud;
    struct nsb *n = find(key);
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
    if (restricted(n))
        allow_addr(n, family, addr, family == AF_INET ? 32 : 128, keep);
}

static int start_dns(struct nsb *n, struct osb_err *err)
{
    return osb_dns_serve(g.dns, n->id, n->gateway, n->has_policy ? &n->policy : NULL, on_learn,
                         NULL, err);
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

static void unlink_nsb(struct nsb *n)
{
    for (struct nsb **p = &g.list; *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            return;
        }
}

/* The policy and token the record holds (a restart). */
static void load_policy(struct nsb *n, const struct osb_sbx *s)
{
    json_t *pol = json_object_get(s->spec, "networkPolicy");
    struct osb_err err = {0};
    if (pol && osb_policy_parse(pol, &n->policy, &err) == 0)
        n->has_policy = true;
    else if (pol) /* fail closed: a stored policy that no longer parses denies all
                   */
        osb_policy_init(&n->policy, OSB_POLICY_DENY), n->has_policy = true;
    const char *tok = json_string_value(json_object_get(s->spec, "egressToken"));
    snprintf(n->token, sizeof n->token, "%s", tok ? tok : "");
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

static int open_dns(struct osb_server *srv, struct osb_err *err)
{
    char **ups = upstreams(srv->cfg);
    if (!ups[0]) {
        strv_free(ups);
        return osb_err_set(err, OSB_E_INVALID,
                           "no DNS upstream: set [network] dns_upstreams "
                           "(the host's /etc/resolv.conf has no nameserver)");
    }
    size_t len = 0;
    g.upstreams[0] = 0;
    for (size_t i = 0; ups[i] && len < sizeof g.upstreams; i++)
        len += (size_t)snprintf(g.upstreams + len, sizeof g.upstreams - len, "%s%s",
                                i ? ", " : "", ups[i]);
    struct osb_dns_config dc = {.upstreams = (const char *const *)ups};
    int r = osb_dns_open(srv->loop, &dc, &g.dns, err);
    strv_free(ups);
    return r;
}

/* Sandboxes the records say hold a slot. */
static size_t in_use(struct osb_server *srv, struct osb_net_inuse **out)
{
    size_t count = osb_reg_count(srv->reg), k = 0;
    *out = osb_xcalloc(count + 1, sizeof **out);
    for (size_t i = 0; i < count; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        json_t *net = json_object_get(s->spec, "network");
        json_t *slot = json_object_get(net, "slot");
        if (!json_is_integer(slot))
            continue;
        json_t *pol = json_object_get(s->spec, "networkPolicy");
        const char *def = json_string_value(json_object_get(pol, "defaultAction"));
        (*out)[k++] = (struct osb_net_inuse){.sandbox_id = s->id,
                                             .index = (unsigned)json_integer_value(slot),
                                             .restricted = g.nft && pol &&
                                                           (!def || strcmp(def, "allow") != 0)};
    }
    return k;
}

/* Re-apply DNS and policy for a sandbox that kept its slot. */
static void readopt(struct osb_server *srv, struct osb_sbx *s)
{
    struct osb_net_slot slot;
    if (osb_net_find(g.net, s->id, &slot, NULL) < 0)
        return;
    struct nsb *n = osb_xcalloc(1, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", s->id);
    n->slot = slot;
    fill_addrs(n);
    load_policy(n, s);
    n->next = g.list;
    g.list = n;
    struct osb_err err = {0};
    if (start_dns(n, &err) < 0)
        osb_err_log("sandbox %s: DNS forwarder: %s", s->id, err.msg);
    apply_nft(n);
    (void)srv;
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

static const char *enforcement(void)
{
    return g.nft ? "DNS filtering and nftables address sets" : "DNS filtering only";
}

static void log_summary(const struct osb_server *srv)
{
    struct osb_net_stats st;
    osb_net_stats(g.net, &st);
    osb_info("sandbox networking: %s on %s (a /30 per sandbox, host links %s<n>, nftables table "
             "inet %s), DNS through %s, networkPolicy enforced by %s, %u networks kept ready%s",
             g.bridge ? "bridge (endpoints give each sandbox's own address; NAT out)" : "NAT",
             srv->cfg->network.subnet, st.prefix, st.table, g.upstreams, enforcement(),
             st.pool_size, osb_reg_count(srv->reg) ? ", running sandboxes re-attached" : "");
}

int osb_network_open(struct osb_server *srv, struct osb_err *err)
{
    g.nft = strcmp(srv->cfg->egress.mode, "dns+nft") == 0;
    g.bridge = strcmp(srv->cfg->network.mode, "bridge") == 0;
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
    };
    if (check_subnet(srv, err) < 0)
        return -1;
    struct osb_net_inuse *inuse;
    size_t k = in_use(srv, &inuse);
    int r = osb_net_open(&nc, inuse, k, &g.net, err);
    free(inuse);
    if (r < 0)
        return osb_err_wrap(err,
                            "[network] mode \"%s\" (set mode = \"none\" for loopback-only "
                            "sandboxes)",
                            srv->cfg->network.mode);
    if (open_dns(srv, err) < 0) {
        osb_net_close(g.net);
        g.net = NULL;
        return -1;
    }
    for (size_t i = 0, c = osb_reg_count(srv->reg); i < c; i++)
        readopt(srv, osb_reg_at(srv->reg, i));
    log_summary(srv);
    return 0;
}

void osb_network_close(struct osb_server *srv)
{
    (void)srv;
    while (g.list) {
        struct nsb *n = g.list;
        g.list = n->next;
        nsb_free(n);
    }
    if (g.dns)
        osb_dns_close(g.dns);
    if (g.net)
        osb_net_close(g.net);
    g.dns = NULL;
    g.net = NULL;
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
                       const struct osb_create_spec *spec, struct osb_rt_spec *rs,
                       struct osb_apierr *e)
{
    if (!osb_network_enabled(srv)) {
        if (spec->network_policy)
            return osb_apierr_set(e, 400, "SANDBOX::INVALID_PARAMETER",
                                  "field 'networkPolicy': this server's sandboxes have no network "
                                  "([network] mode = \"none\")");
        return 0;
    }
    struct nsb *n = osb_xcalloc(1, sizeof *n);
    snprintf(n->id, sizeof n->id, "%s", s->id);
    struct osb_err err = {0};
    if (spec->network_policy) {
        if (osb_policy_parse(spec->network_policy, &n->policy, &err) < 0) {
            nsb_free(n);
            return osb_apierr_set(e, 400, "SANDBOX::INVALID_PARAMETER", "field 'networkPolicy': %s",
                                  err.msg);
        }
        n->has_policy = true;
        osb_random_hex(n->token, 24);
    }
    if (osb_net_claim(g.net, s->id, &n->slot, &err) < 0) {
        nsb_free(n);
        return osb_apierr_set(e, 500, "SANDBOX::NETWORK_FAILED", "Sandbox %s: no network slot: %s",
                              s->id, err.msg);
    }
    fill_addrs(n);
    if (start_dns(n, &err) < 0) {
        struct osb_err rerr;
        if (osb_net_release(g.net, s->id, &rerr) < 0)
            osb_err_log("sandbox %s: release its network slot: %s", s->id, rerr.msg);
        nsb_free(n);
        return osb_apierr_set(e, 500, "SANDBOX::NETWORK_FAILED", "Sandbox %s: DNS forwarder: %s",
                              s->id, err.msg);
    }
    n->next = g.list;
    g.list = n;
    apply_nft(n);
    record(s, n);
    rs->netns = n->slot.netns_path;
    rs->dns = n->gateway;
    return 0;
}

void osb_network_detach(struct osb_server *srv, struct osb_sbx *s)
{
    (void)srv;
    /* The record no longer holds the slot (in_use() at the next start). */
    json_object_del(s->spec, "network");
    struct nsb *n = find(s->id);
    if (!g.net || !n)
        return;
    osb_dns_stop(g.dns, s->id);
    struct osb_err err = {0};
    if (osb_net_release(g.net, s->id, &err) < 0)
        osb_err_log("sandbox %s: release its network slot: %s", s->id, err.msg);
    unlink_nsb(n);
    nsb_free(n);
}

static int describe_policy(const struct osb_server *srv, const struct nsb *n, struct osb_buf *b)
{
    if (!n->has_policy)
        return osb_buf_adds(b, "egress policy: none (every destination is allowed but the "
                               "blocked ones above)\n");
    int rc = osb_buf_addf(b, "egress policy: default %s, %zu rule%s, mode %s, enforced by %s (%s)\n",
                 osb_policy_action_str(n->policy.default_action), n->policy.nrules,
                 n->policy.nrules == 1 ? "" : "s",
                 osb_policy_mode_str(osb_policy_mode(&n->policy)), enforcement(),
                 srv->cfg->egress.mode);
    if (g.nft && restricted(n))
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
    const struct nsb *n = find(s->id);
    if (!n)
        return rc | osb_buf_adds(b, "The sandbox holds no network now (it is not running).\n");
    rc |= osb_buf_addf(b, "sandbox address: %s/%u on %s\ngateway: %s (host link %s)\n"
                    "DNS: %s:53, the server's forwarder on the gateway, upstream %s\n"
                    "outbound: NAT through the host; other sandboxes, host services (but this "
                    "DNS) and 169.254.0.0/16 are blocked\n",
                 n->address, n->slot.prefix_len, n->slot.sandbox_ifname, n->gateway,
                 n->slot.host_ifname, n->gateway, g.upstreams);
    if (g.bridge)
        rc |= osb_buf_addf(b, "endpoints: the sandbox's own address (%s:<port>); ports 44772 and "
                        "18080 through the server proxy\n", n->address);
    else
        rc |= osb_buf_adds(b, "endpoints: through the server proxy (/sandboxes/<id>/proxy/<port>)\n");
    return rc | describe_policy(srv, n, b);
}

const char *osb_network_bridge_ip(const struct osb_server *srv, const struct osb_sbx *s)
{
    (void)srv;
    const struct nsb *n = g.bridge ? find(s->id) : NULL;
    return n ? n->address : "";
}

/* ------------------------------------------------------------ the egress API
 */

/* Errors are {code,message} (upstream's sidecar sends text/plain, which no
 * SDK can show); the status map (apierr.c) keeps them to the statuses
 * egress-api.yaml lists. */
static void fail(struct osb_http_req *req, int status, const char *code, const char *msg)
{
    osb_http_respond_error(req, status, code, "%s", msg);
}

static json_t *status_json(const struct nsb *n, struct osb_server *srv)
{
    return json_pack("{s:s,s:s,s:s}", "status", "ok", "mode",
                     osb_policy_mode_str(osb_policy_mode(&n->policy)), "enforcementMode",
                     srv->cfg->egress.mode);
}

/* The body as JSON; NULL for an empty body (*empty set). */
static json_t *body_json(struct osb_http_req *req, bool *empty, char *why, size_t n)
{
    size_t len;
    const char *b = osb_http_req_body(req, &len);
    *empty = len == 0 || strspn(b, " \t\r\n") == len;
    if (*empty)
        return NULL;
    json_error_t je;
    json_t *j = json_loadb(b, len, JSON_DECODE_ANY, &je);
    if (!j)
        snprintf(why, n, "invalid JSON body: %s", je.text);
    return j;
}

/* Apply a changed policy: DNS, nft, the record. */
static void commit(struct osb_server *srv, struct osb_sbx *s, struct nsb *n)
{
    struct osb_err err = {0};
    if (osb_dns_set_policy(g.dns, n->id, &n->policy, &err) < 0)
        osb_err_log("sandbox %s: DNS policy: %s", n->id, err.msg);
    apply_nft(n);
    json_object_set_new(s->spec, "networkPolicy", osb_policy_json(&n->policy));
    osb_lc_save(srv, s, "EgressPolicy", "The egress policy changed.", NULL);
}

static void replace_policy(struct osb_server *srv, struct osb_sbx *s, struct nsb *n,
                           struct osb_http_req *req)
{
    bool empty;
    char why[300];
    json_t *j = body_json(req, &empty, why, sizeof why);
    if (!j && !empty) {
        fail(req, 400, "EGRESS::INVALID_BODY", why);
        return;
    }
    struct osb_policy p;
    struct osb_err err = {0};
    if (osb_policy_parse(json_is_null(j) ? NULL : j, &p, &err) < 0) {
        json_decref(j);
        fail(req, 400, "EGRESS::INVALID_POLICY", err.msg);
        return;
    }
    json_decref(j);
    osb_policy_free(&n->policy);
    n->policy = p;
    commit(srv, s, n);
    /* Upstream answers with the reset text only for an empty body. */
    if (empty) {
        osb_http_respond_json(req, 200,
                              json_pack("{s:s,s:s,s:s}", "status", "ok", "mode", "deny_all",
                                        "reason", "policy reset to default deny-all"));
        return;
    }
    osb_http_respond_json(req, 200, status_json(n, srv));
}

static void patch_or_delete(struct osb_server *srv, struct osb_sbx *s, struct nsb *n,
                            struct osb_http_req *req, bool patch)
{
    bool empty;
    char why[300];
    json_t *j = body_json(req, &empty, why, sizeof why);
    if (!j) {
        fail(req, 400, "EGRESS::INVALID_BODY",
             empty ? "the body must be a non-empty JSON array" : why);
        return;
    }
    struct osb_err err = {0};
    size_t removed = 0;
    int r;
    if (patch) {
        struct osb_policy_rule *rules;
        size_t nr;
        r = osb_policy_parse_rules(j, &rules, &nr, &err);
        if (r == 0) {
            r = osb_policy_patch(&n->policy, rules, nr, &err);
            osb_policy_rules_free(rules, nr);
        }
    } else {
        r = osb_policy_delete_json(&n->policy, j, &removed, &err);
    }
    json_decref(j);
    if (r < 0) {
        const char *code = err.code == OSB_E_TOOBIG ? "EGRESS::TOO_MANY_RULES" : "EGRESS::INVALID_RULES";
        fail(req, 400, code, err.msg);
        return;
    }
    commit(srv, s, n);
    json_t *out = status_json(n, srv);
    if (!patch && removed == 0)
        json_object_set_new(out, "reason", json_string("no matching targets found"));
    osb_http_respond_json(req, 200, out);
}

bool osb_network_egress_admit(struct osb_server *srv, struct osb_sbx *s,
                              struct osb_http_req *req, const char *rest)
{
    (void)srv;
    struct nsb *n = find(s->id);
    if (!n || !n->has_policy) {
        fail(req, 404, "EGRESS::NOT_ENABLED",
             "no egress policy: this sandbox was created without networkPolicy");
        return false;
    }
    if (strcmp(rest, "healthz") == 0) {
        osb_http_respond(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return false;
    }
    const char *tok = osb_http_req_header(req, EGRESS_AUTH);
    if (!tok || !osb_secret_eq(tok, n->token)) {
        fail(req, 401, "EGRESS::UNAUTHORIZED",
             "unauthorized: missing or wrong OPENSANDBOX-EGRESS-AUTH header");
        return false;
    }
    if (strcmp(rest, "policy") != 0) {
        fail(req, 404, "EGRESS::NOT_FOUND", "no such egress API path");
        return false;
    }
    return true;
}

void osb_network_egress_api(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                            const char *rest)
{
    /* Again: the sandbox or its policy may have gone while the body came. */
    if (!osb_network_egress_admit(srv, s, req, rest))
        return;
    const char *m = osb_http_req_method(req);
    struct nsb *n = find(s->id);
    if (strcmp(m, "GET") == 0) {
        json_t *out = status_json(n, srv);
        json_object_set_new(out, "policy", osb_policy_json(&n->policy));
        osb_http_respond_json(req, 200, out);
    } else if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0) {
        replace_policy(srv, s, n, req);
    } else if (strcmp(m, "PATCH") == 0 || strcmp(m, "DELETE") == 0) {
        patch_or_delete(srv, s, n, req, m[0] == 'P');
    } else {
        fail(req, 405, "EGRESS::METHOD_NOT_ALLOWED", "method not allowed on /policy");
    }
}
