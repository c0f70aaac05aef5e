/* libFuzzer target: raw bytes into a real HTTP server connection (a
 * socketpair adopted by the server), through parsing, routing, buffered and
 * streaming bodies, error answers and WebSocket upgrades. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/conn.h"
#include "http/http.h"

static void h_echo(struct osb_http_req *req, void *ud)
{
    (void)ud;
    size_t n;
    const char *b = osb_http_req_body(req, &n);
    const char *const *v;
    osb_http_req_query_all(req, "a", &v);
    osb_http_req_param(req, "id");
    osb_http_respond(req, 200, "text/plain", b ? b : "", n);
}

static void s_body(struct osb_http_req *req, const char *d, size_t n, void *ud)
{
    (void)req, (void)d, (void)n, (void)ud;
}

static void s_end(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond_empty(req, 200);
}

static void h_stream(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_req_on_body(req, s_body, s_end, NULL);
}

static void ws_msg(struct osb_ws *ws, int op, const uint8_t *d, size_t n, void *ud)
{
    (void)ud;
    osb_ws_send(ws, op, d, n);
}

static void h_ws(struct osb_http_req *req, void *ud)
{
    (void)ud;
    static const struct osb_ws_cbs cbs = {.on_message = ws_msg};
    if (!osb_http_ws_accept(req, &cbs, NULL))
        return; /* refused, and answered (400 or 426) */
}

static const struct osb_http_route routes[] = {
    {"GET", "/ws", h_ws, 0, NULL},
    {NULL, "/stream/*rest", h_stream, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/e/:id", h_echo, 0, NULL},
    {NULL, "/*rest", h_echo, 0, NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uv_loop_t *loop;
    static struct osb_http_server *srv;
    if (!srv) {
        loop = uv_default_loop();
        srv = osb_http_server_new(loop);
        osb_http_server_add_routes(srv, routes, sizeof routes / sizeof routes[0]);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 0;
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    if (osb_http_server_adopt_fd(srv, sv[0], NULL) < 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    size_t off = 0;
    char sink[65536];
    for (int i = 0; i < 100000 && srv->nconns > 0; i++) {
        if (off < size) {
            ssize_t w = write(sv[1], data + off, size - off);
            if (w > 0)
                off += (size_t)w;
            if (off == size)
                shutdown(sv[1], SHUT_WR);
        } else if (size == 0 && i == 0) {
            shutdown(sv[1], SHUT_WR);
        }
        while (read(sv[1], sink, sizeof sink) > 0)
            ;
        uv_run(loop, UV_RUN_NOWAIT);
    }
    close(sv[1]);
    while (srv->nconns > 0)
        osb_http__conn_close(srv->conns);
    uv_run(loop, UV_RUN_NOWAIT);
    return 0;
}
