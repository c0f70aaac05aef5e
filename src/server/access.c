/* The end of every API request (osb_http_server_set_observer): a sample
 * for /metrics and, unless [log] access = false, an access log line. The
 * line names the API key by an id (a hash prefix), never the key; routes
 * are templates, so no sandbox path or query reaches the log. */
#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/random.h"
#include "server/metrics.h"
#include "server/server.h"

/* Whose request: the key's id when it carried the server's key. */
static const char *key_of(const struct osb_server *srv, const struct osb_http_req *req)
{
    const char *k = osb_http_req_header(req, API_KEY_HEADER);
    return srv->api_key && k && osb_secret_eq(k, srv->api_key) ? srv->key_id : "-";
}

static void access_line(const struct osb_server *srv, const struct osb_http_req *req,
                        const struct osb_http_done *d)
{
    char now[32], line[1024];
    const char *route = d->route ? d->route : "-", *key = key_of(srv, req);
    osb_log_time(now);
    if (!osb_log_json()) {
        snprintf(line, sizeof line, "%s opensandbox-server access: %s %s %s %d %llu %.3fms key=%s",
                 now, *d->id ? d->id : "-", d->method, route, d->status,
                 (unsigned long long)d->bytes, d->seconds * 1e3, key);
        osb_log_line(line);
        return;
    }
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:f,s:s}", "time", now, "level",
                          "info", "service", "opensandbox-server", "kind", "access", "requestId",
                          d->id, "method", d->method, "route", route, "status", d->status, "bytes",
                          (json_int_t)d->bytes, "durationMs", d->seconds * 1e3, "key", key);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (s)
        osb_log_line(s);
    free(s);
}

static void on_done(const struct osb_http_req *req, const struct osb_http_done *d, void *ud)
{
    struct osb_server *srv = ud;
    osb_metrics_http(srv->metrics, d->method, d->route, d->status, d->seconds);
    if (srv->cfg->log.access)
        access_line(srv, req, d);
}

void osb_access_install(struct osb_server *srv)
{
    if (srv->api_key) {
        unsigned char h[SHA256_DIGEST_LENGTH];
        SHA256((const unsigned char *)srv->api_key, strlen(srv->api_key), h);
        snprintf(srv->key_id, sizeof srv->key_id, "sha256:%02x%02x%02x%02x%02x%02x", h[0], h[1],
                 h[2], h[3], h[4], h[5]);
    }
    osb_http_server_set_observer(srv->http, on_done, srv);
}
