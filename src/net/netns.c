/* Network slot manager: a pool of pinned network namespaces joined to the
 * host by veth pairs, built with rtnetlink and guarded by nftables. */
#include "net/netns.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "net/nft.h"
#include "net/nl.h"
#include "net/track.h"

#define DEFAULT_SUBNET "10.88.0.0/16"
#define DEFAULT_POOL 8
#define MAX_SLOTS 65536 /* keeps "<prefix><n>" within IFNAMSIZ */

enum slot_state { S_FREE, S_BUSY, S_READY, S_CLAIMED, S_DOOMED };

struct slot {
    enum slot_state st;
    char *sandbox;
    bool restricted;
    struct osb_track track; /* allow/deny entries in the shared sets, under pmu */
};

struct osb_net {
    pthread_mutex_t mu;
    pthread_mutex_t pmu; /* slots' tracks, held across their commits (never under mu) */
    pthread_cond_t cv;
    pthread_t thread;
    bool thread_started, stop;
    char *netns_dir;
    char prefix[16], table[32];
    struct in_addr subnet;
    unsigned subnet_len, capacity, pool_size;
    struct osb_nft_cidr4 *allow_host;
    size_t n_allow_host;
    uint16_t proxy_port;
    int host_nsfd;
    struct osb_nft_conn *nft; /* every commit and conntrack flush */
    struct slot *slots;
    unsigned ready, claimed, busy, building; /* building: pool slots under construction */
    uint64_t created, destroyed, claims, sync_creates;
    char last_error[256];
};

/* --- addressing -------------------------------------------------------- */

static struct in_addr slot_ip(const struct osb_net *net, unsigned idx, unsigned host)
{
    struct in_addr a = {.s_addr = htonl(ntohl(net->subnet.s_addr) + idx * 4 + host)};
    return a;
}

static void slot_ifname(const struct osb_net *net, unsigned idx, char out[16])
{
    snprintf(out, 16, "%s%u", net->prefix, idx);
}

static void slot_pin(const struct osb_net *net, unsigned idx, char *out, size_t len)
{
    snprintf(out, len, "%s/%u", net->netns_dir, idx);
}

static void slot_fill(const struct osb_net *net, unsigned idx, struct osb_net_slot *out)
{
    memset(out, 0, sizeof(*out));
    out->index = idx;
    slot_pin(net, idx, out->netns_path, sizeof(out->netns_path));
    slot_ifname(net, idx, out->host_ifname);
    snprintf(out->sandbox_ifname, sizeof out->sandbox_ifname, "eth0");
    out->host_ip = slot_ip(net, idx, 1);
    out->sandbox_ip = slot_ip(net, idx, 2);
    out->prefix_len = 30;
}

/* ifname must outlive the returned struct. */
static struct osb_nft_slot nft_slot(const struct osb_net *net, unsigned idx, const char *ifname)
{
    return (struct osb_nft_slot){.index = idx,
                                 .ifname = ifname,
                                 .host = slot_ip(net, idx, 1),
                                 .sandbox = slot_ip(net, idx, 2)};
}

/* --- building and tearing down one slot ------------------------------- */

static int talk(struct osb_nl *nl, struct nlmsghdr *nlh, const char *what, struct osb_err *err)
{
    if (osb_nl_talk(nl, nlh, err) < 0)
        return osb_err_wrap(err, "%s", what);
    return 0;
}

/* Runs on the calling thread: moves it into a fresh netns, pins that netns
 * at `pin`, brings lo up and opens a netlink socket there, then always
 * moves the thread back to the host netns. */
static int new_netns(struct osb_net *net, const char *pin, int *nsfd, struct osb_nl *in,
                     struct osb_err *err)
{
    _cleanup_close_ int fd = open(pin, O_CREAT | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (fd < 0)
        return osb_err_sys(err, "create %s", pin);
    if (unshare(CLONE_NEWNET) < 0)
        return osb_err_sys(err, "unshare(CLONE_NEWNET)");
    int r = -1;
    char buf[OSB_NL_BUFSZ];
    if (mount("/proc/thread-self/ns/net", pin, NULL, MS_BIND, NULL) < 0) {
        osb_err_sys(err, "pin netns at %s", pin);
        goto back;
    }
    *nsfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (*nsfd < 0) {
        osb_err_sys(err, "open netns");
        goto back;
    }
    if (osb_nl_open(in, NETLINK_ROUTE, err) < 0)
        goto back;
    r = talk(in, osb_nl_build_link_up(buf, ++in->seq, 0, "lo"), "lo up", err);
back:
    if (setns(net->host_nsfd, CLONE_NEWNET) < 0)
        abort(); /* the thread would keep working in the wrong netns */
    return r;
}

static int setup_links(struct osb_net *net, unsigned idx, int nsfd, struct osb_nl *in,
                       struct osb_err *err)
{
    char buf[OSB_NL_BUFSZ], name[16];
    slot_ifname(net, idx, name);
    struct osb_nl host = {0};
    if (osb_nl_open(&host, NETLINK_ROUTE, err) < 0)
        return -1;
    int hidx = 0, pidx = 0, r = -1;
    if (talk(&host, osb_nl_build_veth(buf, ++host.seq, name, "eth0", nsfd), "create veth", err) <
            0 ||
        osb_nl_ifindex(&host, name, &hidx, err) < 0 ||
        talk(&host, osb_nl_build_addr4(buf, ++host.seq, hidx, slot_ip(net, idx, 1), 30),
             "host address", err) < 0 ||
        talk(&host, osb_nl_build_link_up(buf, ++host.seq, hidx, NULL), "host link up", err) < 0 ||
        osb_nl_ifindex(in, "eth0", &pidx, err) < 0 ||
        talk(in, osb_nl_build_addr4(buf, ++in->seq, pidx, slot_ip(net, idx, 2), 30),
             "sandbox address", err) < 0 ||
        talk(in, osb_nl_build_link_up(buf, ++in->seq, pidx, NULL), "eth0 up", err) < 0 ||
        talk(in, osb_nl_build_default4(buf, ++in->seq, slot_ip(net, idx, 1), pidx), "default route",
             err) < 0)
        goto out;
    r = 0;
out:
    osb_nl_close(&host);
    return r;
}

/* Queues the removal of every allow and deny entry slot s added, with
 * net->pmu held; the caller empties the track once the batch is committed. */
static void forget_tracked(struct osb_net *net, struct osb_nft_batch *b,
                           const struct osb_nft_slot *s)
{
    const struct osb_track *t = &net->slots[s->index].track;
    if (!t->n)
        return;
    struct osb_nft_addr *v = osb_xcalloc(t->n, sizeof *v);
    for (size_t i = 0; i < t->n; i++)
        v[i] = t->v[i].a;
    osb_nft_forget(b, s, v, t->n);
    free(v);
}

/* Adds the slot's elements (add) or removes them with whatever allow and
 * deny entries it still has. */
static int nft_slot_apply(struct osb_net *net, unsigned idx, bool add, bool restricted,
                          struct osb_err *err)
{
    char name[16];
    slot_ifname(net, idx, name);
    struct osb_nft_slot s = nft_slot(net, idx, name);
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    pthread_mutex_lock(&net->pmu);
    if (add) {
        osb_nft_add_slot(b, &s, restricted);
    } else {
        forget_tracked(net, b, &s);
        osb_nft_del_slot(b, &s);
    }
    int r = osb_nft_commit(net->nft, b, err);
    if (r == 0 && !add)
        osb_track_clear(&net->slots[idx].track);
    pthread_mutex_unlock(&net->pmu);
    osb_nft_batch_free(b);
    return r;
}

static void unpin(const char *pin)
{
    for (int i = 0; i < 8 && umount2(pin, MNT_DETACH) == 0; i++)
        ;
    unlink(pin);
}

static void del_link(const char *name)
{
    char buf[OSB_NL_BUFSZ];
    struct osb_nl nl = {0};
    struct osb_err e;
    if (osb_nl_open(&nl, NETLINK_ROUTE, &e) < 0)
        return;
    if (osb_nl_talk(&nl, osb_nl_build_dellink(buf, ++nl.seq, name), &e) < 0)
        osb_debug("delete link %s: %s", name, e.msg); /* often already gone */
    osb_nl_close(&nl);
}

/* Removes whatever exists of slot idx: nft objects (when with_nft), the veth
 * pair (deleting the host end deletes the peer) and the pin. */
static void slot_teardown(struct osb_net *net, unsigned idx, bool with_nft)
{
    char name[16], pin[4096];
    struct osb_err e;
    if (with_nft && nft_slot_apply(net, idx, false, false, &e) < 0) {
        pthread_mutex_lock(&net->mu);
        snprintf(net->last_error, sizeof(net->last_error), "slot %u: %s", idx, e.msg);
        pthread_mutex_unlock(&net->mu);
    }
    slot_ifname(net, idx, name);
    del_link(name);
    slot_pin(net, idx, pin, sizeof(pin));
    unpin(pin);
}

static int slot_build(struct osb_net *net, unsigned idx, bool with_nft, bool restricted,
                      struct osb_err *err)
{
    char pin[4096];
    slot_pin(net, idx, pin, sizeof(pin));
    int nsfd = -1;
    struct osb_nl in = {0};
    int r = new_netns(net, pin, &nsfd, &in, err);
    if (r == 0)
        r = setup_links(net, idx, nsfd, &in, err);
    if (nsfd >= 0)
        close(nsfd);
    osb_nl_close(&in);
    if (r == 0 && with_nft)
        r = nft_slot_apply(net, idx, true, restricted, err);
    if (r < 0) {
        osb_err_wrap(err, "network slot %u", idx);
        slot_teardown(net, idx, false);
    }
    return r;
}

/* Resets a released slot's egress state and forgets its connections. */
static int slot_clean(struct osb_net *net, unsigned idx, struct osb_err *err)
{
    char name[16], buf[OSB_NL_BUFSZ];
    slot_ifname(net, idx, name);
    struct osb_nft_slot s = nft_slot(net, idx, name);
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    pthread_mutex_lock(&net->pmu);
    osb_nft_set_restricted(b, &s, false);
    forget_tracked(net, b, &s);
    int r = osb_nft_commit(net->nft, b, err);
    if (r == 0)
        osb_track_clear(&net->slots[idx].track);
    pthread_mutex_unlock(&net->pmu);
    osb_nft_batch_free(b);
    if (r < 0)
        return r;
    /* Stale NAT mappings would deliver old flows' answers to the next user. */
    r = osb_nft_conn_talk(net->nft, osb_nl_build_ct_flush_src4(buf, 0, s.sandbox), err);
    if (r < 0 && err->sys_errno == ENOENT) /* nothing tracked */
        r = 0;
    return r < 0 ? osb_err_wrap(err, "flush conntrack of slot %u", idx) : 0;
}

/* --- the pool thread ---------------------------------------------------- */

static int find_state(struct osb_net *net, enum slot_state st)
{
    for (unsigned i = 0; i < net->capacity; i++)
        if (net->slots[i].st == st)
            return (int)i;
    return -1;
}

static void set_error(struct osb_net *net, const struct osb_err *e)
{
    snprintf(net->last_error, sizeof(net->last_error), "%s", e->msg);
}

/* Called with the lock held; drops it while working. Returns false when
 * there is nothing to do. */
static bool pool_step(struct osb_net *net)
{
    int i = find_state(net, S_DOOMED);
    if (i >= 0) {
        net->slots[i].st = S_BUSY;
        pthread_mutex_unlock(&net->mu);
        slot_teardown(net, (unsigned)i, true);
        pthread_mutex_lock(&net->mu);
        net->slots[i].st = S_FREE;
        net->busy--;
        net->destroyed++;
        return true;
    }
    if (net->ready + net->building >= net->pool_size || (i = find_state(net, S_FREE)) < 0)
        return false;
    net->slots[i].st = S_BUSY;
    net->busy++;
    net->building++;
    pthread_mutex_unlock(&net->mu);
    struct osb_err e = {0};
    int r = slot_build(net, (unsigned)i, true, false, &e);
    pthread_mutex_lock(&net->mu);
    net->busy--;
    net->building--;
    if (r < 0) {
        net->slots[i].st = S_FREE;
        set_error(net, &e);
        /* Do not spin on a persistent failure. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&net->cv, &net->mu, &ts);
        return !net->stop;
    }
    net->slots[i].st = S_READY;
    net->ready++;
    net->created++;
    pthread_cond_broadcast(&net->cv);
    return true;
}

static void *pool_main(void *arg)
{
    struct osb_net *net = arg;
    pthread_mutex_lock(&net->mu);
    while (!net->stop) {
        if (!pool_step(net) && !net->stop)
            pthread_cond_wait(&net->cv, &net->mu);
    }
    pthread_mutex_unlock(&net->mu);
    return NULL;
}

/* --- open: config, recovery ------------------------------------------- */

static int parse_config(struct osb_net *net, const struct osb_net_config *cfg, struct osb_err *err)
{
    if (!cfg->state_dir || !*cfg->state_dir)
        return osb_err_set(err, OSB_E_INVALID, "network: state directory is required");
    const char *subnet = cfg->subnet ? cfg->subnet : DEFAULT_SUBNET;
    if (osb_nl_parse_cidr4(subnet, &net->subnet, &net->subnet_len, err) < 0)
        return osb_err_wrap(err, "network subnet");
    if (net->subnet_len < 8 || net->subnet_len > 28)
        return osb_err_set(err, OSB_E_INVALID, "network subnet %s: prefix length must be 8..28",
                           subnet);
    uint64_t cap = (1ull << (32 - net->subnet_len)) / 4;
    net->capacity = cap > MAX_SLOTS ? MAX_SLOTS : (unsigned)cap;
    net->pool_size = cfg->pool_size ? cfg->pool_size : DEFAULT_POOL;
    if (net->pool_size > net->capacity)
        net->pool_size = net->capacity;
    net->allow_host = osb_xcalloc(cfg->n_allow_host_cidrs + 1, sizeof(*net->allow_host));
    for (size_t i = 0; i < cfg->n_allow_host_cidrs; i++) {
        if (osb_nl_parse_cidr4(cfg->allow_host_cidrs[i], &net->allow_host[i].addr,
                               &net->allow_host[i].len, err) < 0)
            return osb_err_wrap(err, "network allow_host_cidrs");
    }
    net->n_allow_host = cfg->n_allow_host_cidrs;
    net->proxy_port = cfg->proxy_port;
    return 0;
}

static int check_inuse(const struct osb_net *net, const struct osb_net_inuse *inuse, size_t n,
                       struct osb_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!inuse[i].sandbox_id || !*inuse[i].sandbox_id)
            return osb_err_set(err, OSB_E_INVALID, "in-use slot %u: empty sandbox id",
                               inuse[i].index);
        if (inuse[i].index >= net->capacity)
            return osb_err_set(err, OSB_E_INVALID, "in-use slot %u: outside the subnet (%u slots)",
                               inuse[i].index, net->capacity);
        for (size_t j = 0; j < i; j++) {
            if (inuse[j].index == inuse[i].index)
                return osb_err_set(err, OSB_E_INVALID, "in-use slot %u listed twice",
                                   inuse[i].index);
            if (strcmp(inuse[j].sandbox_id, inuse[i].sandbox_id) == 0)
                return osb_err_set(err, OSB_E_INVALID, "sandbox %s holds two slots",
                                   inuse[i].sandbox_id);
        }
    }
    return 0;
}

/* 4 hex digits of an FNV-1a hash of the real path of the state directory
 * (*real set, caller frees). */
static int state_hash(const char *state_dir, char **real, uint32_t *out, struct osb_err *err)
{
    *real = realpath(state_dir, NULL);
    if (!*real)
        return osb_err_sys(err, "network state directory %s", state_dir);
    uint32_t h = 2166136261u;
    for (const char *p = *real; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    *out = (h ^ (h >> 16)) & 0xffff;
    return 0;
}

int osb_net_ifprefix(const char *state_dir, char out[16], struct osb_err *err)
{
    _cleanup_free_ char *real = NULL;
    uint32_t h;
    if (state_hash(state_dir, &real, &h, err) < 0)
        return -1;
    snprintf(out, 16, "osb%04x", h);
    return 0;
}

/* Interface prefix and table name from a hash of the state directory. */
static int name_from_state(struct osb_net *net, const char *state_dir, struct osb_err *err)
{
    _cleanup_free_ char *real = NULL;
    uint32_t h;
    if (state_hash(state_dir, &real, &h, err) < 0)
        return -1;
    snprintf(net->prefix, sizeof(net->prefix), "osb%04x", h);
    snprintf(net->table, sizeof(net->table), "osb_%04x", h);
    net->netns_dir = osb_xasprintf("%s/netns", real);
    return 0;
}

static int enable_forwarding(struct osb_err *err)
{
    char v = 0;
    _cleanup_close_ int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && read(fd, &v, 1) == 1 && v == '1')
        return 0;
    if (osb_write_fileat(AT_FDCWD, "/proc/sys/net/ipv4/ip_forward", "1", err) < 0)
        return osb_err_wrap(err, "enable IPv4 forwarding");
    return 0;
}

/* Parses "<prefix><n>" / "<n>"; -1 when name is not one of ours. */
static long parse_index(const char *name, const char *prefix, unsigned cap)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    if (prefix && strncmp(name, prefix, pl) != 0)
        return -1;
    const char *p = name + pl;
    if (!*p || (*p == '0' && p[1]))
        return -1;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > (long)cap)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < (long)cap ? v : -1;
}

struct link_scan {
    struct osb_net *net;
    bool *link_ok;
    char (*stale)[16];
    size_t n_stale, cap_stale;
};

static void on_link(const char *name, int ifindex, void *arg)
{
    (void)ifindex;
    struct link_scan *s = arg;
    long i = parse_index(name, s->net->prefix, s->net->capacity);
    if (i >= 0 && s->net->slots[i].st == S_CLAIMED) {
        s->link_ok[i] = true;
        return;
    }
    if (s->n_stale == s->cap_stale) {
        s->cap_stale = s->cap_stale ? 2 * s->cap_stale : 16;
        s->stale = osb_xrealloc(s->stale, s->cap_stale * sizeof(*s->stale));
    }
    snprintf(s->stale[s->n_stale++], 16, "%s", name);
}

static int recover_links(struct osb_net *net, bool *link_ok, struct osb_err *err)
{
    struct osb_nl nl = {0};
    if (osb_nl_open(&nl, NETLINK_ROUTE, err) < 0)
        return -1;
    struct link_scan s = {.net = net, .link_ok = link_ok};
    int r;
    for (int tries = 1;; tries++) {
        memset(link_ok, 0, net->capacity * sizeof *link_ok);
        s.n_stale = 0;
        r = osb_nl_links(&nl, net->prefix, on_link, &s, err);
        if (r == 0 || !osb_nl_dump_interrupted(err) || tries == OSB_NL_DUMP_TRIES)
            break;
    }
    osb_nl_close(&nl);
    for (size_t i = 0; r == 0 && i < s.n_stale; i++)
        del_link(s.stale[i]);
    free(s.stale);
    return r;
}

static bool is_netns_pin(const char *path)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && sf.f_type == NSFS_MAGIC;
}

static int recover_pins(struct osb_net *net, bool *pin_ok, struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(net->netns_dir);
    if (!d)
        return osb_err_sys(err, "open %s", net->netns_dir);
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", net->netns_dir, de->d_name);
        long i = parse_index(de->d_name, NULL, net->capacity);
        if (i >= 0 && net->slots[i].st == S_CLAIMED && is_netns_pin(path))
            pin_ok[i] = true;
        else if (i < 0 || net->slots[i].st != S_CLAIMED)
            unpin(path);
    }
    return 0;
}

static int recover(struct osb_net *net, const struct osb_net_inuse *inuse, size_t n,
                   struct osb_err *err)
{
    struct osb_nft_table_cfg tc = {.table = net->table,
                                   .ifprefix = net->prefix,
                                   .subnet = net->subnet,
                                   .subnet_len = net->subnet_len,
                                   .allow_host = net->allow_host,
                                   .n_allow_host = net->n_allow_host,
                                   .proxy_port = net->proxy_port};
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    char names[2][16];
    osb_nft_reset_table(b, &tc);
    for (size_t i = 0; i < n; i++) {
        slot_ifname(net, inuse[i].index, names[0]);
        struct osb_nft_slot s = nft_slot(net, inuse[i].index, names[0]);
        osb_nft_add_slot(b, &s, inuse[i].restricted);
    }
    int r = osb_nft_commit(net->nft, b, err);
    osb_nft_batch_free(b);
    if (r < 0)
        return osb_err_wrap(err, "network: rebuild nftables table %s", net->table);
    _cleanup_free_ bool *link_ok = osb_xcalloc(net->capacity, sizeof(bool));
    _cleanup_free_ bool *pin_ok = osb_xcalloc(net->capacity, sizeof(bool));
    if (recover_links(net, link_ok, err) < 0 || recover_pins(net, pin_ok, err) < 0)
        return osb_err_wrap(err, "network: remove stale slots");
    for (size_t i = 0; i < n; i++) {
        unsigned idx = inuse[i].index;
        if (link_ok[idx] && pin_ok[idx])
            continue;
        /* Half a slot (crash mid-build, reboot): its sandbox cannot be using
         * it, so build it afresh. */
        slot_teardown(net, idx, false);
        if (slot_build(net, idx, false, false, err) < 0)
            return osb_err_wrap(err, "network: rebuild in-use slot");
    }
    return 0;
}

static void net_free(struct osb_net *net)
{
    if (net->host_nsfd >= 0)
        close(net->host_nsfd);
    for (unsigned i = 0; net->slots && i < net->capacity; i++) {
        free(net->slots[i].sandbox);
        osb_track_free(&net->slots[i].track);
    }
    free(net->slots);
    free(net->allow_host);
    free(net->netns_dir);
    osb_nft_conn_free(net->nft);
    pthread_mutex_destroy(&net->mu);
    pthread_mutex_destroy(&net->pmu);
    pthread_cond_destroy(&net->cv);
    free(net);
}

int osb_net_open(const struct osb_net_config *cfg, const struct osb_net_inuse *inuse, size_t n,
                 struct osb_net **out, struct osb_err *err)
{
    struct osb_net *net = osb_xcalloc(1, sizeof(*net));
    pthread_mutex_init(&net->mu, NULL);
    pthread_mutex_init(&net->pmu, NULL);
    pthread_cond_init(&net->cv, NULL);
    net->host_nsfd = -1;
    net->nft = osb_nft_conn_new();
    if (parse_config(net, cfg, err) < 0 || check_inuse(net, inuse, n, err) < 0 ||
        osb_mkdir_p(cfg->state_dir, 0700, err) < 0 ||
        name_from_state(net, cfg->state_dir, err) < 0 || osb_mkdir_p(net->netns_dir, 0700, err) < 0)
        goto fail;
    net->host_nsfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (net->host_nsfd < 0) {
        osb_err_sys(err, "open host netns");
        goto fail;
    }
    if (enable_forwarding(err) < 0)
        goto fail;
    net->slots = osb_xcalloc(net->capacity, sizeof(*net->slots));
    for (size_t i = 0; i < n; i++) {
        struct slot *s = &net->slots[inuse[i].index];
        s->st = S_CLAIMED;
        s->sandbox = osb_xstrdup(inuse[i].sandbox_id);
        s->restricted = inuse[i].restricted;
    }
    net->claimed = (unsigned)n;
    if (recover(net, inuse, n, err) < 0)
        goto fail;
    int e = pthread_create(&net->thread, NULL, pool_main, net);
    if (e) {
        errno = e;
        osb_err_sys(err, "network pool thread");
        goto fail;
    }
    net->thread_started = true;
    *out = net;
    return 0;
fail:
    net_free(net);
    return -1;
}

void osb_net_close(struct osb_net *net)
{
    if (!net)
        return;
    pthread_mutex_lock(&net->mu);
    net->stop = true;
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    if (net->thread_started)
        pthread_join(net->thread, NULL);
    bool keep_table = net->claimed > 0;
    if (!keep_table) {
        struct osb_nft_batch *b = osb_nft_batch_new(net->table);
        struct osb_err e;
        osb_nft_delete_table(b);
        if (osb_nft_commit(net->nft, b, &e) < 0)
            osb_warn("drop nftables table %s: %s", net->table, e.msg);
        osb_nft_batch_free(b);
    }
    for (unsigned i = 0; i < net->capacity; i++) {
        if (net->slots[i].st == S_READY || net->slots[i].st == S_DOOMED)
            slot_teardown(net, i, keep_table);
    }
    net_free(net);
}

/* --- claim / release ---------------------------------------------------- */

static int find_sandbox(struct osb_net *net, const char *id)
{
    for (unsigned i = 0; i < net->capacity; i++)
        if (net->slots[i].sandbox && strcmp(net->slots[i].sandbox, id) == 0)
            return (int)i;
    return -1;
}

/* Pool empty: build a slot on the calling thread (the reserved slot carries
 * the sandbox id so a concurrent claim of the same id is refused). */
static int claim_sync(struct osb_net *net, int i, struct osb_err *err)
{
    net->busy++;
    pthread_mutex_unlock(&net->mu);
    int r = slot_build(net, (unsigned)i, true, false, err);
    pthread_mutex_lock(&net->mu);
    net->busy--;
    if (r < 0) {
        free(net->slots[i].sandbox);
        net->slots[i].sandbox = NULL;
        net->slots[i].st = S_FREE;
        return -1;
    }
    net->created++;
    net->sync_creates++;
    return 0;
}

int osb_net_claim(struct osb_net *net, const char *sandbox_id, struct osb_net_slot *out,
                  struct osb_err *err)
{
    if (!sandbox_id || !*sandbox_id)
        return osb_err_set(err, OSB_E_INVALID, "network claim: empty sandbox id");
    pthread_mutex_lock(&net->mu);
    int r = -1;
    if (find_sandbox(net, sandbox_id) >= 0) {
        osb_err_set(err, OSB_E_EXISTS, "sandbox %s already holds a network slot", sandbox_id);
        goto out;
    }
    int i = find_state(net, S_READY);
    if (i >= 0) {
        net->ready--;
    } else if ((i = find_state(net, S_FREE)) < 0) {
        osb_err_set(err, OSB_E_TOOBIG, "no free network slot (%u in the subnet)", net->capacity);
        goto out;
    } else {
        net->slots[i].st = S_BUSY;
        net->slots[i].sandbox = osb_xstrdup(sandbox_id);
        if (claim_sync(net, i, err) < 0)
            goto out;
    }
    net->slots[i].st = S_CLAIMED;
    net->slots[i].restricted = false;
    free(net->slots[i].sandbox);
    net->slots[i].sandbox = osb_xstrdup(sandbox_id);
    net->claimed++;
    net->claims++;
    pthread_cond_broadcast(&net->cv); /* refill */
    slot_fill(net, (unsigned)i, out);
    r = 0;
out:
    pthread_mutex_unlock(&net->mu);
    return r;
}

int osb_net_find(struct osb_net *net, const char *sandbox_id, struct osb_net_slot *out,
                 struct osb_err *err)
{
    pthread_mutex_lock(&net->mu);
    int i = sandbox_id ? find_sandbox(net, sandbox_id) : -1;
    if (i >= 0 && net->slots[i].st == S_CLAIMED)
        slot_fill(net, (unsigned)i, out);
    pthread_mutex_unlock(&net->mu);
    if (i < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox %s holds no network slot",
                           sandbox_id ? sandbox_id : "(null)");
    return 0;
}

int osb_net_release(struct osb_net *net, const char *sandbox_id, struct osb_err *err)
{
    pthread_mutex_lock(&net->mu);
    int i = sandbox_id ? find_sandbox(net, sandbox_id) : -1;
    if (i < 0 || net->slots[i].st != S_CLAIMED) {
        pthread_mutex_unlock(&net->mu);
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox %s holds no network slot",
                           sandbox_id ? sandbox_id : "(null)");
    }
    struct slot *s = &net->slots[i];
    s->st = S_BUSY;
    free(s->sandbox);
    s->sandbox = NULL;
    net->claimed--;
    net->busy++;
    pthread_mutex_unlock(&net->mu);

    int r = slot_clean(net, (unsigned)i, err);
    pthread_mutex_lock(&net->mu);
    if (r == 0 && net->ready + net->building < net->pool_size) {
        s->st = S_READY;
        net->ready++;
        net->busy--;
    } else {
        s->st = S_DOOMED; /* stays busy until the pool thread destroys it */
    }
    pthread_cond_broadcast(&net->cv);
    pthread_mutex_unlock(&net->mu);
    return r < 0 ? osb_err_wrap(err, "release network slot %d", i) : 0;
}

/* --- egress ---------------------------------------------------------------- */

static int claimed_slot(struct osb_net *net, unsigned index, struct osb_err *err)
{
    pthread_mutex_lock(&net->mu);
    bool ok = index < net->capacity && net->slots[index].st == S_CLAIMED;
    pthread_mutex_unlock(&net->mu);
    if (!ok)
        return osb_err_set(err, OSB_E_NOTFOUND, "network slot %u is not claimed", index);
    return 0;
}

/* The egress changes check that the slot is claimed with net->pmu held, as
 * a release cleans the slot under pmu after unclaiming it: a change either
 * lands before that clean (which undoes it) or is refused. */
int osb_net_restrict(struct osb_net *net, unsigned index, bool on, struct osb_err *err)
{
    char name[16];
    slot_ifname(net, index, name);
    struct osb_nft_slot s = nft_slot(net, index, name);
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    osb_nft_set_restricted(b, &s, on);
    pthread_mutex_lock(&net->pmu);
    int r = claimed_slot(net, index, err);
    if (r == 0 && (r = osb_nft_commit(net->nft, b, err)) == 0) {
        pthread_mutex_lock(&net->mu);
        net->slots[index].restricted = on;
        pthread_mutex_unlock(&net->mu);
    } else if (r < 0 && err->code != OSB_E_NOTFOUND) {
        osb_err_wrap(err, "restrict network slot %u", index);
    }
    pthread_mutex_unlock(&net->pmu);
    osb_nft_batch_free(b);
    return r;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Adds one allow or deny entry and records it in the slot's track, with
 * net->pmu held across check, commit and record (so two nesting ranges
 * cannot both pass the check). */
static int add_entry(struct osb_net *net, unsigned index, const struct osb_nft_addr *a,
                     uint32_t timeout_s, struct osb_err *err)
{
    const char *what = a->deny ? "deny" : "allow";
    char name[16];
    slot_ifname(net, index, name);
    struct osb_nft_slot s = nft_slot(net, index, name);
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    pthread_mutex_lock(&net->pmu);
    int r = claimed_slot(net, index, err);
    struct osb_track *t = r == 0 ? &net->slots[index].track : NULL;
    if (r == 0 && (r = osb_nft_addr_check(a, err)) == 0 &&
        (r = osb_track_check(t, a, now_ms(), err)) == 0 &&
        (r = osb_nft_add_addr(b, &s, a, (uint64_t)timeout_s * 1000, err)) == 0 &&
        (r = osb_nft_commit(net->nft, b, err)) == 0) {
        int64_t now = now_ms(); /* after the commit: never earlier than the kernel's expiry */
        osb_track_put(t, a, timeout_s ? now + (int64_t)timeout_s * 1000 : 0, now);
    }
    pthread_mutex_unlock(&net->pmu);
    osb_nft_batch_free(b);
    if (r == 0)
        return 0;
    /* Nesting is found in the track; EEXIST from the kernel is a range
     * whose first or last address falls inside one it holds. */
    if (err->code == OSB_E_EXISTS || err->sys_errno == EEXIST)
        return osb_err_set(err, OSB_E_EXISTS,
                           "%s on network slot %u: the /%u range overlaps "
                           "a range already in the %s sets",
                           what, index, a->prefix, what);
    if (err->code == OSB_E_INVALID || err->code == OSB_E_NOTFOUND)
        return -1;
    return osb_err_wrap(err, "%s on network slot %u", what, index);
}

static int entry(int family, const void *addr, unsigned prefix_len, bool deny,
                 struct osb_nft_addr *out, struct osb_err *err)
{
    *out = (struct osb_nft_addr){.deny = deny, .family = family, .prefix = prefix_len};
    size_t alen = family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
    if (!alen)
        return osb_err_set(err, OSB_E_INVALID, "address family %d is not IPv4 or IPv6", family);
    memcpy(out->addr, addr, alen);
    return 0;
}

int osb_net_allow(struct osb_net *net, unsigned index, int family, const void *addr,
                  unsigned prefix_len, uint32_t timeout_s, struct osb_err *err)
{
    struct osb_nft_addr a;
    if (entry(family, addr, prefix_len, false, &a, err) < 0)
        return -1;
    return add_entry(net, index, &a, timeout_s, err);
}

int osb_net_intercept(struct osb_net *net, unsigned index, struct in_addr dst, uint16_t port,
                      uint32_t timeout_s, struct osb_err *err)
{
    if (!net->proxy_port)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "no vault proxy on this server");
    struct osb_nft_addr a;
    if (entry(AF_INET, &dst, 32, false, &a, err) < 0)
        return -1;
    a.port = port;
    return add_entry(net, index, &a, timeout_s, err);
}

int osb_net_deny(struct osb_net *net, unsigned index, int family, const void *addr,
                 unsigned prefix_len, struct osb_err *err)
{
    struct osb_nft_addr a;
    if (entry(family, addr, prefix_len, true, &a, err) < 0)
        return -1;
    return add_entry(net, index, &a, 0, err);
}

int osb_net_reset_allow(struct osb_net *net, unsigned index, struct osb_err *err)
{
    char name[16];
    slot_ifname(net, index, name);
    struct osb_nft_slot s = nft_slot(net, index, name);
    struct osb_nft_batch *b = osb_nft_batch_new(net->table);
    pthread_mutex_lock(&net->pmu);
    int r = claimed_slot(net, index, err);
    if (r == 0) {
        forget_tracked(net, b, &s);
        if ((r = osb_nft_commit(net->nft, b, err)) == 0)
            osb_track_clear(&net->slots[index].track);
        else
            osb_err_wrap(err, "reset allow/deny sets of network slot %u", index);
    }
    pthread_mutex_unlock(&net->pmu);
    osb_nft_batch_free(b);
    return r;
}

/* --- stats ----------------------------------------------------------------- */

void osb_net_stats(struct osb_net *net, struct osb_net_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&net->mu);
    out->capacity = net->capacity;
    out->ready = net->ready;
    out->claimed = net->claimed;
    out->busy = net->busy;
    out->pool_size = net->pool_size;
    out->created = net->created;
    out->destroyed = net->destroyed;
    out->claims = net->claims;
    out->sync_creates = net->sync_creates;
    snprintf(out->prefix, sizeof(out->prefix), "%s", net->prefix);
    snprintf(out->table, sizeof(out->table), "%s", net->table);
    snprintf(out->last_error, sizeof(out->last_error), "%s", net->last_error);
    pthread_mutex_unlock(&net->mu);
}

void osb_net_describe(struct osb_net *net, char *buf, size_t len)
{
    struct osb_net_stats s;
    osb_net_stats(net, &s);
    char sub[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &net->subnet, sub, sizeof(sub));
    snprintf(buf, len,
             "net %s: subnet %s/%u table inet %s slots %u: ready %u/%u claimed %u busy %u "
             "created %llu destroyed %llu claims %llu sync %llu%s%s",
             s.prefix, sub, net->subnet_len, s.table, s.capacity, s.ready, s.pool_size, s.claimed,
             s.busy, (unsigned long long)s.created, (unsigned long long)s.destroyed,
             (unsigned long long)s.claims, (unsigned long long)s.sync_creates,
             s.last_error[0] ? " last error: " : "", s.last_error);
}
