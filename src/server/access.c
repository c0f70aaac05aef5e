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
#include "server/audit.h"
#include "server/audit_run.h"
#include "server/metrics.h"
#include "server/server.h"

/* Whose request: the key's id when it carried the server's key. */
static const char *key_of(const struct osb_server *srv, const struct osb_http_req *req)
{
    const char *k = osb_http_req_header(req, API_KEY_HEADER);
    if (osb_http_req_param(req, "ticket")) /* the signed proxy routes */
        return "signed-url";
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
    /* By hand, not through jansson: a line per request. Every value is
     * ASCII the server checked (the id: printable, so only " and \ need
     * escaping; methods and route patterns are tokens). */
    char id[160]; /* ids are at most 63 bytes (osb_http_req_set_id) */
    size_t o = 0;
    for (const char *p = d->id; *p && o + 2 < sizeof id; p++) {
        if (*p == '"' || *p == '\\')
            id[o++] = '\\';
        id[o++] = *p;
    }
    id[o] = 0;
    snprintf(line, sizeof line,
             "{\"time\":\"%s\",\"level\":\"info\",\"service\":\"opensandbox-server\","
             "\"kind\":\"access\",\"requestId\":\"%s\",\"method\":\"%s\",\"route\":\"%s\","
             "\"status\":%d,\"bytes\":%llu,\"durationMs\":%.3f,\"key\":\"%s\"}",
             now, id, d->method, route, d->status, (unsigned long long)d->bytes, d->seconds * 1e3,
             key);
    osb_log_line(line);
}

/* A request that may change state (not GET, HEAD or OPTIONS), that matched
 * a route and got past the key: a record. The body is never recorded (a
 * vault's carries secrets); a proxied request records its port and path,
 * and a run on execd (the only note a request carries: api_proxy.c) the
 * text run and how it ended (audit_run.h). */
static void audit(struct osb_server *srv, const struct osb_http_req *req,
                  const struct osb_http_done *d)
{
    if (!srv->audit || !d->route || d->status == 401 || !strcmp(d->method, "GET") ||
        !strcmp(d->method, "HEAD") || !strcmp(d->method, "OPTIONS"))
        return;
    const char *route = strncmp(d->route, "/v1/", 4) == 0 ? d->route + 3 : d->route;
    char action[300];
    snprintf(action, sizeof action, "%s %s", d->method, route);
    const char *port = osb_http_req_param(req, "port"), *rest = osb_http_req_param(req, "rest");
    json_t *detail = json_object();
    if (port || strstr(route, "/proxy/18080"))
        json_object_set_new(detail, "port", json_string(port ? port : "18080"));
    json_t *path = rest ? json_string(rest) : NULL; /* NULL too when not UTF-8 */
    if (path)
        json_object_set_new(detail, "path", path);
    osb_audit_run_detail(osb_http_req_note(req), detail);
    struct osb_audit_rec r = {key_of(srv, req),
                              action,
                              strncmp(route, "/sandboxes/", 11) == 0 ? osb_http_req_param(req, "id")
                                                                     : NULL,
                              d->id,
                              d->status,
                              detail};
    osb_audit_append(srv->audit, &r);
    json_decref(detail);
}

static void on_done(const struct osb_http_req *req, const struct osb_http_done *d, void *ud)
{
    struct osb_server *srv = ud;
    osb_metrics_http(srv->metrics, d->method, d->route, d->status, d->seconds);
    if (srv->cfg->log.access)
        access_line(srv, req, d);
    audit(srv, req, d);
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
