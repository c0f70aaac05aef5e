/* The egress policy model of protocol.md section 4 (NetworkPolicy, the
 * /policy API): parsing and validation, name and IP matching, PATCH merge,
 * DELETE by target, mode and JSON output. Pure: no I/O, no globals.
 *
 * A policy is a value: callers own it, copy it with osb_policy_copy and
 * release it with osb_policy_free. Every mutating call leaves the policy
 * unchanged when it fails. */
#ifndef OSB_NET_POLICY_H
#define OSB_NET_POLICY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* OPENSANDBOX_EGRESS_MAX_RULES of the upstream sidecar. */
#define OSB_POLICY_MAX_RULES 4096

enum osb_policy_action { OSB_POLICY_DENY = 0, OSB_POLICY_ALLOW = 1 };

enum osb_policy_kind {
    OSB_POLICY_DOMAIN,   /* exact name, case-insensitive */
    OSB_POLICY_WILDCARD, /* "*.example.com": any subdomain, not the apex */
    OSB_POLICY_IP,       /* one address (stored as a /32 or /128) */
    OSB_POLICY_CIDR,     /* a prefix; host bits are masked off */
};

enum osb_policy_mode {
    OSB_POLICY_MODE_ALLOW_ALL, /* allow + no rules */
    OSB_POLICY_MODE_DENY_ALL,  /* deny + no rules */
    OSB_POLICY_MODE_ENFORCING, /* anything else */
};

struct osb_policy_rule {
    enum osb_policy_action action;
    enum osb_policy_kind kind;
    char *target;     /* trimmed, case kept: what GET returns and DELETE compares */
    char *name;       /* DOMAIN/WILDCARD: lower case, no "*." and no trailing dot */
    int family;       /* IP/CIDR: AF_INET or AF_INET6 */
    unsigned prefix;  /* IP/CIDR: prefix length */
    uint8_t addr[16]; /* IP/CIDR: network address, host bits zero */
};

struct osb_policy {
    enum osb_policy_action default_action;
    size_t nrules;
    struct osb_policy_rule *rules; /* index order = priority order */
};

/** An empty policy with the given default action (no rules). */
void osb_policy_init(struct osb_policy *p, enum osb_policy_action default_action);
void osb_policy_free(struct osb_policy *p);
/** Deep copy into dst (dst is overwritten, not freed). */
void osb_policy_copy(struct osb_policy *dst, const struct osb_policy *src);

/** Parse a NetworkPolicy object (a create request's networkPolicy, a POST
 * /policy body). v == NULL, JSON null or {} give the default deny-all.
 * defaultAction: "allow"|"deny" (case-insensitive), absent/null/"" = deny.
 * Rule action: lower-cased, absent/""/null = deny, anything else an error.
 * Errors (OSB_E_INVALID) name the field: "egress[2].target must not be empty".
 * More than OSB_POLICY_MAX_RULES rules: OSB_E_TOOBIG. out is written only on
 * success. Unknown keys are ignored, as upstream does. */
OSB_MUST_CHECK int osb_policy_parse(json_t *v, struct osb_policy *out, struct osb_err *err);

/** Parse a PATCH /policy body: a non-empty array of NetworkRule. On success
 * *rules (caller frees with osb_policy_rules_free) and *n are set. Errors
 * name the element: "rules[1].action must be allow or deny". */
OSB_MUST_CHECK int osb_policy_parse_rules(json_t *array, struct osb_policy_rule **rules, size_t *n,
                                          struct osb_err *err);
void osb_policy_rules_free(struct osb_policy_rule *rules, size_t n);

/** PATCH merge: the incoming rules first (within them, the first rule for a
 * target wins), then the existing rules whose target (case-insensitive)
 * is not in the patch, in their order. The rules are copied. A result over
 * OSB_POLICY_MAX_RULES fails with OSB_E_TOOBIG and p unchanged. */
OSB_MUST_CHECK int osb_policy_patch(struct osb_policy *p, const struct osb_policy_rule *rules,
                                    size_t n, struct osb_err *err);

/** Remove every rule whose target equals (case-insensitive, surrounding
 * spaces ignored) one of targets[0..n). Returns how many were removed. */
size_t osb_policy_delete(struct osb_policy *p, const char *const *targets, size_t n);
/** DELETE /policy body: a non-empty JSON array of strings, all checked
 * before anything is removed; *removed gets the count. */
OSB_MUST_CHECK int osb_policy_delete_json(struct osb_policy *p, json_t *targets, size_t *removed,
                                          struct osb_err *err);

/** The action for a DNS name (any case, trailing dot ignored): of all
 * matching domain/wildcard rules the lowest index wins, else the default.
 * p == NULL means no networkPolicy at all: everything is allowed. */
enum osb_policy_action osb_policy_match_name(const struct osb_policy *p, const char *name);

/** The action for an address (family AF_INET: 4 bytes, AF_INET6: 16) from
 * the IP/CIDR rules, first match wins; *matched (may be NULL) tells whether
 * a rule matched (false: the default action was returned). p == NULL:
 * allow, unmatched. */
enum osb_policy_action osb_policy_match_ip(const struct osb_policy *p, int family, const void *addr,
                                           bool *matched);

enum osb_policy_mode osb_policy_mode(const struct osb_policy *p);
/** "allow_all" | "deny_all" | "enforcing". */
const char *osb_policy_mode_str(enum osb_policy_mode m);
/** "allow" | "deny". */
const char *osb_policy_action_str(enum osb_policy_action a);

/** {"egress":[{"action":..,"target":..},...],"defaultAction":..}; egress is
 * [] when empty, never null. New reference. */
json_t *osb_policy_json(const struct osb_policy *p);

#endif
