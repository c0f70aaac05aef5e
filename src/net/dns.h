/* The host-side DNS forwarder of the egress policy: one object on the
 * server's libuv loop serves every sandbox. For each sandbox ("key", the
 * sandbox id) it listens on UDP and TCP at the host end of the sandbox's
 * link and answers that sandbox's queries:
 *
 *   - a name the sandbox's policy allows (osb_policy_match_name; no policy
 *     = allow everything) is forwarded as-is (any type) to the upstream
 *     resolvers, tried in order, each for timeout_ms; when all fail the
 *     sandbox gets SERVFAIL, so a lookup never stalls;
 *   - a denied name gets NXDOMAIN at once, with no upstream traffic;
 *   - a malformed query gets FORMERR (or is dropped when it is not even a
 *     query), an opcode other than QUERY gets NOTIMP.
 *
 * For an allowed name, every A/AAAA address of the answer (following CNAME
 * chains inside the answer section) is reported through the learn callback
 * BEFORE the answer is relayed, so the caller can open the firewall for it
 * before the client connects. A policy change (osb_dns_set_policy) applies
 * to the next query, and to answers still in flight: an answer for a name
 * denied meanwhile becomes NXDOMAIN and teaches nothing.
 *
 * Enforcement lives here, outside the sandbox: the sandbox can only talk
 * to the listening address, which nothing inside it controls. Upstream
 * queries leave from a fresh socket (random source port) with a random
 * message id, and an answer must match the question exactly. */
#ifndef OSB_NET_DNS_H
#define OSB_NET_DNS_H
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "net/policy.h"

/* Queries in flight per sandbox; past it new queries get SERVFAIL, so a
 * sandbox cannot exhaust the host's sockets. */
#define OSB_DNS_MAX_PENDING 256
/* Open TCP client connections per sandbox; more are refused (closed). */
#define OSB_DNS_MAX_TCP_CONNS 64
/* A TCP client connection with nothing in flight is closed after this. */
#define OSB_DNS_TCP_IDLE_MS 10000

struct osb_dns;

struct osb_dns_config {
    /* NULL-terminated "ip:port", "ip" (port 53) or "[ipv6]:port"; at least one. */
    const char *const *upstreams;
    int port;            /* listening port of every sandbox; 0 = 53 */
    unsigned timeout_ms; /* per upstream attempt; 0 = 2000 */
};

/* name: the allowed name that was asked (lower case, as matched); family
 * AF_INET (addr: 4 bytes) or AF_INET6 (16 bytes); ttl in seconds as the
 * upstream sent it. Called on the loop thread, before the answer goes
 * to the sandbox. It may call osb_dns_set_policy, but must not call
 * osb_dns_stop or osb_dns_close (defer those). */
typedef void (*osb_dns_learn_fn)(void *ud, const char *key, const char *name, int family,
                                 const uint8_t *addr, uint32_t ttl);

/** Create the forwarder on loop. The config is copied. Errors: OSB_E_INVALID
 * (no upstream, a bad upstream address). */
OSB_MUST_CHECK int osb_dns_open(uv_loop_t *loop, const struct osb_dns_config *cfg,
                                struct osb_dns **out, struct osb_err *err);

/** Start serving sandbox `key` on UDP and TCP listen_ipv4:port (each
 * sandbox needs its own address: the host end of its link). policy is
 * copied (NULL: allow everything); learn may be NULL. Errors: OSB_E_EXISTS
 * (key already served), OSB_E_INVALID (bad address), OSB_E_SYS (bind). */
OSB_MUST_CHECK int osb_dns_serve(struct osb_dns *dns, const char *key, const char *listen_ipv4,
                                 const struct osb_policy *policy, osb_dns_learn_fn learn, void *ud,
                                 struct osb_err *err);

/** Replace the policy of `key` (copied; NULL: allow everything).
 * OSB_E_NOTFOUND when key is not served. */
OSB_MUST_CHECK int osb_dns_set_policy(struct osb_dns *dns, const char *key,
                                      const struct osb_policy *policy, struct osb_err *err);

/** What the forwarder did since it opened, over every sandbox. */
struct osb_dns_stats {
    uint64_t queries; /* well-formed queries received */
    uint64_t denied;  /* answered NXDOMAIN by the policy */
    uint64_t failed;  /* answered SERVFAIL: upstreams failed, or too many in flight */
};
void osb_dns_get_stats(const struct osb_dns *dns, struct osb_dns_stats *out);

/** Stop serving `key`: close its sockets and drop its queries in flight
 * (no answers are sent, nothing more is learned). Unknown keys are ignored. */
void osb_dns_stop(struct osb_dns *dns, const char *key);

/** Stop every sandbox and free the forwarder. Its handles finish closing
 * on the next loop iteration (run the loop before uv_loop_close). */
void osb_dns_close(struct osb_dns *dns);

#endif
