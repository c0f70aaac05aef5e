/* Endpoints and the server proxy (DESIGN.md section 7, protocol.md 1.10
 * and 1.11). Every endpoint is the server-proxy form
 * "{host}:{port}/sandboxes/{id}/proxy/{p}": sandboxes have loopback-only
 * networks until the networking issue, so the server is the only way in.
 * The proxy reaches execd over its unix socket: port 44772 is execd itself,
 * any other port goes through execd's own /proxy/{port} to 127.0.0.1:port
 * inside the sandbox. The proxy needs no API key (as upstream); execd
 * checks the per-sandbox token the endpoint's headers carry. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "server/audit_run.h"
#include "server/cdp.h"
#include "server/network.h"
#include "server/server.h"
#include "server/signing.h"

#define EXECD_PORT 44772
#define EGRESS_PORT 18080

/* A decimal port 1..65535, or -1. */
static long parse_port(const char *s)
{
    if (!s || !*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
        return -1;
    long p = strtol(s, NULL, 10);
    return p >= 1 && p <= 65535 ? p : -1;
}

/* The route's :port, or -1 once the 400 is answered. */
static long port_param(struct osb_http_req *req)
{
    const char *ps = osb_http_req_param(req, "port");
    long port = parse_port(ps);
    if (port < 0)
        osb_apierr_reply(req, "SANDBOX::INVALID_PORT",
                         "port must be an integer in 1..65535 (got '%s')", ps ? ps : "");
    return port;
}

static bool host_ok(const char *h)
{
    if (!*h || strlen(h) > 255)
        return false;
    for (; *h; h++)
        if (!isalnum((unsigned char)*h) && !strchr(".-:[]_", *h))
            return false;
    return true;
}

/* server.eip if set (a port is added unless it has one), else the Host the
 * client used to reach us, else the listen address (a wildcard becomes
 * 127.0.0.1). No scheme, no trailing slash. */
static char *endpoint_host(struct osb_server *srv, struct osb_http_req *req)
{
    const char *eip = srv->cfg->server.eip;
    if (eip && *eip) {
        const char *h = strstr(eip, "://") ? strstr(eip, "://") + 3 : eip;
        size_t n = strlen(h);
        while (n && h[n - 1] == '/')
            n--;
        char *host = osb_xstrndup(h, n);
        const char *br = strrchr(host, ']');
        if (strchr(br ? br : host, ':'))
            return host;
        char *with_port = osb_xasprintf("%s:%d", host, srv->port);
        free(host);
        return with_port;
    }
    const char *hh = osb_http_req_header(req, "Host");
    if (hh && host_ok(hh))
        return osb_xstrdup(hh);
    const char *lh = srv->cfg->server.host;
    if (!lh || !*lh || strcmp(lh, "0.0.0.0") == 0 || strcmp(lh, "::") == 0)
        lh = "127.0.0.1";
    return strchr(lh, ':') ? osb_xasprintf("[%s]:%d", lh, srv->port)
                           : osb_xasprintf("%s:%d", lh, srv->port);
}

/* ?expires=T: a URL through the server proxy that needs no header until T
 * (server/signing.h). As upstream, not with use_server_proxy=true. */
static void signed_endpoint(struct osb_server *srv, struct osb_http_req *req, struct osb_sbx *s,
                            long port, const char *expires)
{
    const char *usp = osb_http_req_query(req, "use_server_proxy");
    if (usp && strcasecmp(usp, "true") == 0) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "expires cannot be combined with use_server_proxy=true");
        return;
    }
    if (port == EGRESS_PORT) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "the egress API (port %d) takes its token header; it has no signed URL",
                         EGRESS_PORT);
        return;
    }
    int64_t now = osb_now_ms() / 1000;
    char *end = NULL;
    errno = 0;
    long long t = strtoll(expires, &end, 10);
    if (!*expires || *end || errno || !isdigit((unsigned char)*expires) || t <= now ||
        t > now + OSB_SIGN_MAX_SECONDS) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "expires must be Unix seconds in the future, at most %d s ahead "
                         "(got '%s')",
                         OSB_SIGN_MAX_SECONDS, expires);
        return;
    }
    char ticket[OSB_TICKET_MAX];
    osb_signer_ticket(srv->signer, s->id, port, t, ticket);
    char *host = endpoint_host(srv, req);
    char *ep = osb_xasprintf("%s/sandboxes/%s/signed/%ld/%s", host, s->id, port, ticket);
    osb_http_respond_json(req, 200, json_pack("{s:s}", "endpoint", ep));
    free(host);
    free(ep);
}

static void h_endpoint(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    if (!s)
        return;
    long port = port_param(req);
    if (port < 0)
        return;
    /* An ended sandbox has nothing to reach: SDKs ask for the endpoint
     * right after the create, so the reason surfaces there at once. */
    if (s->state == OSB_ST_TERMINATED || s->state == OSB_ST_FAILED) {
        osb_apierr_reply(
            req, "SANDBOX::NOT_RUNNING", "Sandbox %s is %s (%s: %s); it has no endpoints.", s->id,
            osb_state_name(s->state), s->reason ? s->reason : "-", s->message ? s->message : "");
        return;
    }
    const char *expires = osb_http_req_query(req, "expires");
    if (expires) {
        signed_endpoint(srv, req, s, port, expires);
        return;
    }
    char *host = endpoint_host(srv, req);
    const char *bridge_ip = osb_network_bridge_ip(srv, s);
    /* Bridge mode: the sandbox's own address, except for the ports the
     * server itself serves (execd's, through its socket; the egress API). */
    char *ep = bridge_ip[0] && port != EXECD_PORT && port != EGRESS_PORT
                   ? osb_xasprintf("%s:%ld", bridge_ip, port)
                   : osb_xasprintf("%s/sandboxes/%s/proxy/%ld", host, s->id, port);
    /* Only execd's own endpoint carries its token: clients send endpoint
     * headers on every request, and an app on another port must never see
     * it (the proxy adds it for the hop through execd itself). The egress
     * API's endpoint carries the policy token. */
    const char *egress = NULL;
    if (osb_json_str(s->spec, "egressToken", false, &egress, NULL) < 0)
        egress = NULL;
    json_t *j = port == EXECD_PORT ? json_pack("{s:s,s:{s:s}}", "endpoint", ep, "headers",
                                               "X-EXECD-ACCESS-TOKEN", s->token)
                : port == EGRESS_PORT && egress
                    ? json_pack("{s:s,s:{s:s}}", "endpoint", ep, "headers",
                                "OPENSANDBOX-EGRESS-AUTH", egress)
                    : json_pack("{s:s}", "endpoint", ep);
    free(host);
    free(ep);
    osb_http_respond_json(req, 200, j);
}

/* A ".." path segment (raw or percent-encoded) must not walk out of the
 * sandbox's route on a server behind us. */
static bool dotdot(const char *rest)
{
    char *d = osb_xstrdup(rest);
    /* The server refuses a path with a bad escape before any handler runs,
     * so decoding cannot fail here; if it did, refusing is the safe side. */
    bool bad = osb_http_url_decode(d, false) < 0;
    for (char *seg = d; seg && !bad; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL)
        bad = strncmp(seg, "..", 2) == 0 && (seg[2] == '/' || seg[2] == '\0');
    free(d);
    return bad;
}

/* A browser's CDP discovery answer names its sockets as the sandbox sees
 * them; it is rewritten to this route, by the Host the client used (its
 * scheme from X-Forwarded-Proto when a TLS proxy is in front). */
static void cdp_rewrite(struct osb_server *srv, struct osb_http_req *req, struct osb_sbx *s,
                        long port, bool is_signed, struct osb_http_rewrite *rw)
{
    const char *hh = osb_http_req_header(req, "Host");
    char *host = hh && host_ok(hh) ? osb_xstrdup(hh) : endpoint_host(srv, req);
    const char *proto = osb_http_req_header(req, "X-Forwarded-Proto");
    /* The prefix the client came in by (/v1 or none), so that an ingress
     * that forwards only one of them forwards the WebSocket too. */
    const char *v1 = strncmp(osb_http_req_target(req), "/v1/", 4) == 0 ? "/v1" : "";
    char *route = is_signed ? osb_xasprintf("%s/sandboxes/%s/signed/%ld/%s", v1, s->id, port,
                                            osb_http_req_param(req, "ticket"))
                            : osb_xasprintf("%s/sandboxes/%s/proxy/%ld", v1, s->id, port);
    osb_cdp_rewrite(rw, port, proto && strcasecmp(proto, "https") == 0, host, route);
    free(host);
    free(route);
}

/* What the proxy does to a relayed exchange besides relaying it: a run on
 * execd itself is tapped for its audit record (nothing else is: the tap costs
 * a byte scan of the body), and a browser's CDP discovery answer is rewritten
 * to point at the proxy. tap and rw are the caller's, alive for the call. */
static void attach_hooks(struct osb_server *srv, struct osb_http_req *req, struct osb_sbx *s,
                         long port, bool is_signed, struct osb_http_upstream *up,
                         struct osb_http_tap *tap, struct osb_http_rewrite *rw)
{
    const char *rest = osb_http_req_param(req, "rest");
    struct osb_audit_run *run =
        srv->audit && port == EXECD_PORT ? osb_audit_run_new(osb_http_req_method(req), rest) : NULL;
    if (run) {
        osb_http_req_set_note(req, run, osb_audit_run_free);
        osb_audit_run_tap(run, tap);
        up->tap = tap;
    }
    if (port != EXECD_PORT && osb_cdp_is_discovery(osb_http_req_method(req), rest)) {
        cdp_rewrite(srv, req, s, port, is_signed, rw);
        up->rewrite = rw;
    }
}

/* The headers the hop adds (name, value pairs, NULL-ended; extra has room
 * for 4 pairs): execd's token when the server authenticates the hop, and
 * X-Forwarded-Proto/-Host unless the client sent them. */
static void forward_headers(struct osb_http_req *req, const char *token, const char *extra[9])
{
    const char *host = osb_http_req_header(req, "Host");
    size_t n = 0;
    if (token) {
        extra[n++] = "X-EXECD-ACCESS-TOKEN";
        extra[n++] = token;
    }
    if (!osb_http_req_header(req, "X-Forwarded-Proto")) {
        extra[n++] = "X-Forwarded-Proto";
        extra[n++] = "http";
    }
    if (host && !osb_http_req_header(req, "X-Forwarded-Host")) {
        extra[n++] = "X-Forwarded-Host";
        extra[n++] = host;
    }
    extra[n] = NULL;
}

/* The hop to port inside s. A signed request (server/signing.h) carries
 * no token: the server adds execd's for port 44772 too. */
static void relay(struct osb_server *srv, struct osb_http_req *req, struct osb_sbx *s, long port,
                  bool is_signed)
{
    const char *rest = osb_http_req_param(req, "rest");
    if (rest && dotdot(rest)) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "proxy path must not contain '..' segments");
        return;
    }
    if (s->state != OSB_ST_RUNNING || s->op || !s->has_handle) {
        osb_apierr_reply(req, "SANDBOX::NOT_RUNNING",
                         "Sandbox %s is %s (%s: %s); the proxy reaches running sandboxes "
                         "only.",
                         s->id, osb_state_name(s->state), s->reason ? s->reason : "-",
                         s->message ? s->message : "");
        return;
    }
    const char *t = osb_http_req_target(req), *q = strchr(t, '?');
    char *target = port == EXECD_PORT
                       ? osb_xasprintf("/%s%s", rest ? rest : "", q ? q : "")
                       : osb_xasprintf("/proxy/%ld/%s%s", port, rest ? rest : "", q ? q : "");
    /* For any port but execd's the hop goes through execd's /proxy: the
     * server authenticates that hop itself, and a token the client sent is
     * dropped (execd never forwards its token to the app either). */
    static const char *const drop_api[] = {"OPEN-SANDBOX-API-KEY", NULL};
    static const char *const drop_all[] = {"OPEN-SANDBOX-API-KEY", "X-EXECD-ACCESS-TOKEN", NULL};
    bool add_token = port != EXECD_PORT || is_signed;
    struct osb_http_upstream up = {.unix_path = s->handle.sock_path,
                                   .drop_headers = add_token ? drop_all : drop_api};
    struct osb_http_tap tap;
    struct osb_http_rewrite rw;
    attach_hooks(srv, req, s, port, is_signed, &up, &tap, &rw);
    const char *extra[9] = {NULL};
    forward_headers(req, add_token ? s->token : NULL, extra);
    osb_http_proxy(req, &up, target, extra);
    free(target);
}

static void h_proxy(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    long port = port_param(req);
    if (port < 0)
        return;
    struct osb_sbx *s = osb_api_find(srv, req);
    if (s)
        relay(srv, req, s, port, false);
}

/* The ticket is checked before the sandbox is looked up, so a URL that is
 * not ours tells nothing about which sandboxes exist. */
static void h_signed(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    const char *ps = osb_http_req_param(req, "port"), *id = osb_http_req_param(req, "id");
    long port = parse_port(ps);
    if (port < 0 || port == EGRESS_PORT || !id ||
        !osb_signer_check(srv->signer, id, port, osb_http_req_param(req, "ticket"),
                          osb_now_ms() / 1000)) {
        osb_apierr_reply(req, "SANDBOX::INVALID_SIGNATURE",
                         "this signed URL is not valid or has expired; ask "
                         "GET /sandboxes/{id}/endpoints/{port}?expires=... for a new one");
        return;
    }
    struct osb_sbx *s = osb_api_find(srv, req);
    if (s)
        relay(srv, req, s, port, true);
}

const struct osb_http_route osb_api_proxy_routes[] = {
    {"GET", "/sandboxes/:id/endpoints/:port", h_endpoint, 0, NULL},
    {NULL, "/sandboxes/:id/proxy/:port/*rest", h_proxy, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/sandboxes/:id/proxy/:port", h_proxy, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/sandboxes/:id/signed/:port/:ticket/*rest", h_signed, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/sandboxes/:id/signed/:port/:ticket", h_signed, OSB_ROUTE_STREAM_BODY, NULL},
};
const size_t osb_api_proxy_nroutes = sizeof osb_api_proxy_routes / sizeof osb_api_proxy_routes[0];
