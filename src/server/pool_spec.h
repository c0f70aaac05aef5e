/* A pool's request body (POST/PUT /v1/pools) checked and turned into what
 * server/pools.c keeps: the capacity and the template as a create request
 * of our own shape (protocol.md 1.4), from either of the two shapes a
 * template comes in:
 *
 *   ours:     {image, entrypoint, env, resourceLimits, metadata,
 *              networkPolicy, volumes, extensions.runtime}
 *   upstream: a Kubernetes PodTemplateSpec {metadata: {labels},
 *              spec: {containers: [{name, image, command, args,
 *              env: [{name, value}], resources: {limits: {cpu, memory}}}]}}
 *
 * Everything a template holds is validated as a create would validate it
 * (osb_spec_parse_create); a field that has no meaning here is a 400
 * naming it. */
#ifndef OSB_SERVER_POOL_SPEC_H
#define OSB_SERVER_POOL_SPEC_H
#include <jansson.h>
#include <stdint.h>

#include "server/apierr.h"
#include "server/spec.h"

struct osb_pool_capacity {
    int64_t buffer_min, buffer_max; /* idle members kept ready */
    int64_t pool_min, pool_max;     /* bounds on the members (idle + starting) */
};

/* Pool names: Kubernetes resource names, [a-z0-9]([-a-z0-9]*[a-z0-9])?, <= 63
 * (they appear in log lines and records; upstream allows 253). */
int osb_pool_name_check(const char *name, struct osb_apierr *e) OSB_MUST_CHECK;
/* capacitySpec: the four integers, all required, 0..10000, min <= max. */
int osb_pool_capacity_parse(json_t *v, struct osb_pool_capacity *out,
                            struct osb_apierr *e) OSB_MUST_CHECK;
json_t *osb_pool_capacity_json(const struct osb_pool_capacity *c);
/* The template as a create request of our shape (new ref; it parses with
 * osb_spec_parse_create under lim), or NULL with e naming the field. */
json_t *osb_pool_template_body(json_t *tmpl, const struct osb_spec_limits *lim,
                               struct osb_apierr *e);
#endif
