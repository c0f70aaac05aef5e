/* The client transport against a scripted server on loopback: each case
 * is a list of replies, one per accepted connection and request. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "tap.h"

/* The server: per request, read a head (up to \r\n\r\n plus Content-Length
 * bytes), then send reply[i]; "CLOSE" closes the connection instead;
 * "SILENT" reads and never answers. */
struct script {
    int lfd;
    const char *replies[8];
    int n_conns; /* connections accepted */
    char last_req[4096];
};

static ssize_t read_request(int fd, char *buf, size_t cap)
{
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, cap - have - 1);
        if (n <= 0)
            return -1;
        have += (size_t)n;
        buf[have] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "Content-Length: ");
        size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
        if (strcasestr(buf, "Transfer-Encoding: chunked")) {
            if (strstr(end + 4, "0\r\n\r\n"))
                return (ssize_t)have;
            continue;
        }
        if (have >= (size_t)(end + 4 - buf) + body)
            return (ssize_t)have;
    }
}

static void *serve(void *arg)
{
    struct script *s = arg;
    int fd = -1;
    for (int i = 0; s->replies[i]; i++) {
        if (fd < 0) {
            fd = accept(s->lfd, NULL, NULL);
            s->n_conns++;
        }
        if (read_request(fd, s->last_req, sizeof s->last_req) < 0) {
            close(fd);
            fd = -1;
            i--;
            continue;
        }
        if (!strcmp(s->replies[i], "CLOSE")) {
            close(fd);
            fd = -1;
        } else if (!strcmp(s->replies[i], "SILENT")) {
            char b[16];
            while (read(fd, b, sizeof b) > 0)
                ;
        } else {
            (void)!write(fd, s->replies[i], strlen(s->replies[i]));
            if (strstr(s->replies[i], "Connection: close")) {
                close(fd);
                fd = -1;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static osbc_client *start(struct script *s, pthread_t *th, long timeout_ms)
{
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 4) ||
        getsockname(s->lfd, (struct sockaddr *)&a, &len))
        abort();
    char dom[64];
    snprintf(dom, sizeof dom, "127.0.0.1:%d", ntohs(a.sin_port));
    struct osbc_config cfg = {.domain = dom, .api_key = "k1", .request_timeout_ms = timeout_ms};
    osbc_client *c;
    if (osbc_client_new(&cfg, &c, NULL))
        abort();
    pthread_create(th, NULL, serve, s);
    return c;
}

static void stop(struct script *s, pthread_t th, osbc_client *c)
{
    osbc_client_free(c);
    pthread_join(th, NULL);
    close(s->lfd);
}

static int collect(void *ud, const char *d, size_t n)
{
    osbcl_sb_add(ud, d, n);
    return 0;
}

static void test_keepalive_and_chunked(void)
{
    struct script s = {
        .replies = {
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            NULL,
        }};
    pthread_t th;
    osbc_client *c = start(&s, &th, 5000);
    char *out = NULL;
    struct osbc_error err;
    IS_INT(osbcl_api(c, "GET", "/a", NULL, &out, &err), 0, "first call");
    IS_STR(out, "hi", "content-length body");
    free(out);
    OK(strstr(s.last_req, "OPEN-SANDBOX-API-KEY: k1\r\n"), "the API key goes to the server");
    struct osbcl_sb sb = {0};
    struct osbcl_req rq = {.method = "GET", .path = "/b", .on_data = collect, .data_ud = &sb};
    struct osbcl_resp rs;
    IS_INT(osbcl_http(c, &rq, &rs, &err), 0, "second call, streamed");
    IS_STR(sb.p, "abcde", "chunked body streamed");
    osbcl_resp_free(&rs);
    osbcl_sb_free(&sb);
    stop(&s, th, c);
    IS_INT(s.n_conns, 1, "both calls on one kept-alive connection");
}

static void test_reconnect_after_close(void)
{
    struct script s = {.replies = {
                           "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1",
                           "CLOSE",
                           "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2",
                           NULL,
                       }};
    pthread_t th;
    osbc_client *c = start(&s, &th, 5000);
    char *out = NULL;
    struct osbc_error err;
    IS_INT(osbcl_api(c, "GET", "/a", NULL, &out, &err), 0, "first call");
    free(out);
    int rc = osbcl_api(c, "POST", "/b", "{}", &out, &err);
    IS_INT(rc, 0, "a kept-alive connection closed by the server: sent again on a new one");
    IS_STR(out, "2", "the answer of the retried request");
    free(out);
    stop(&s, th, c);
    IS_INT(s.n_conns, 2, "two connections");
}

static void test_errors(void)
{
    struct script s = {
        .replies = {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 50\r\n\r\n"
            "{\"code\":\"X::NOT_FOUND\",\"message\":\"Sandbox y gone\"}",
            "HTTP/1.1 500 Oops\r\nContent-Length: 9\r\n\r\nplain bad",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nshort",
            "HTTP/9 what\r\n\r\n",
            "SILENT",
            NULL,
        }};
    pthread_t th;
    osbc_client *c = start(&s, &th, 300);
    char *out = NULL;
    struct osbc_error err;
    IS_INT(osbcl_api(c, "GET", "/s/y", NULL, &out, &err), OSBC_E_HTTP, "404 is an HTTP error");
    IS_INT(err.http_status, 404, "status kept");
    IS_STR(err.server_code, "X::NOT_FOUND", "server code kept");
    IS_STR(err.message, "GET /s/y: Sandbox y gone", "message names the call and the reason");
    IS_INT(osbcl_api(c, "GET", "/t", NULL, &out, &err), OSBC_E_HTTP, "500 with a text body");
    IS_STR(err.message, "GET /t: plain bad", "the text body is the reason");
    int rc = osbcl_api(c, "GET", "/u", NULL, &out, &err);
    IS_INT(rc, OSBC_E_CONNECT, "a body cut short is a connection error");
    rc = osbcl_api(c, "GET", "/v", NULL, &out, &err);
    IS_INT(rc, OSBC_E_PROTOCOL, "a malformed status line is a protocol error");
    rc = osbcl_api(c, "GET", "/w", NULL, &out, &err);
    IS_INT(rc, OSBC_E_TIMEOUT, "no answer within the request timeout");
    osbc_client_free(c);
    shutdown(s.lfd, SHUT_RDWR);
    pthread_join(th, NULL);
    close(s.lfd);
}

static ssize_t feed(void *ud, void *buf, size_t cap, struct osbc_error *err)
{
    (void)err;
    int *left = ud;
    if (!*left)
        return 0;
    size_t n = cap < 5 ? cap : 5;
    memcpy(buf, "abcde", n);
    (*left)--;
    return (ssize_t)n;
}

static void test_streamed_upload(void)
{
    struct script s = {.replies = {
                           "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                           "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                           NULL,
                       }};
    pthread_t th;
    osbc_client *c = start(&s, &th, 5000);
    struct osbc_error err;
    int left = 2;
    struct osbcl_req rq = {
        .method = "POST", .path = "/up", .body_read = feed, .body_ud = &left, .body_size = -1};
    struct osbcl_resp rs;
    IS_INT(osbcl_http(c, &rq, &rs, &err), 0, "chunked upload");
    osbcl_resp_free(&rs);
    OK(strstr(s.last_req, "5\r\nabcde\r\n5\r\nabcde\r\n0\r\n\r\n"), "chunk framing");
    left = 3;
    rq.body_size = 10;
    IS_INT(osbcl_http(c, &rq, &rs, &err), OSBC_E_IO, "a source longer than announced fails");
    stop(&s, th, c);
}

static void test_base_parse(void)
{
    struct osbcl_base b;
    struct osbc_error err;
    IS_INT(osbcl_base_parse(&b, "127.0.0.1:8080/sandboxes/x/proxy/44772", false, &err), 0,
           "endpoint with a prefix");
    IS_STR(b.host, "127.0.0.1", "host");
    IS_STR(b.port, "8080", "port");
    IS_STR(b.prefix, "/sandboxes/x/proxy/44772", "prefix");
    osbcl_base_free(&b);
    IS_INT(osbcl_base_parse(&b, "[::1]:9/p", true, &err), 0, "IPv6 literal");
    IS_STR(b.host, "::1", "brackets dropped");
    osbcl_base_free(&b);
    IS_INT(osbcl_base_parse(&b, "example.test", true, &err), 0, "no port");
    IS_STR(b.port, "443", "https default port");
    osbcl_base_free(&b);
    OK(osbcl_base_parse(&b, "h:0", false, &err) == OSBC_E_ARG, "port 0 refused");
    OK(osbcl_base_parse(&b, "h:99999", false, &err) == OSBC_E_ARG, "port past 65535 refused");
    OK(osbcl_base_parse(&b, "h:80/a b", false, &err) == OSBC_E_ARG, "a space refused");
    OK(osbcl_base_parse(&b, "h:80/a\r\nX: y", false, &err) == OSBC_E_ARG, "CRLF refused");
}

static void test_escape(void)
{
    struct osbcl_sb sb = {0};
    osbcl_sb_esc(&sb, "a/b c?d&e=f%~.-_");
    IS_STR(sb.p, "a%2Fb%20c%3Fd%26e%3Df%25~.-_", "a path segment cannot escape its place");
    osbcl_sb_free(&sb);
}

static void test_client_args(void)
{
    struct osbc_config cfg = {.domain = "h:1", .protocol = "ftp"};
    osbc_client *c;
    struct osbc_error err;
    IS_INT(osbc_client_new(&cfg, &c, &err), OSBC_E_ARG, "protocol ftp refused");
    IS_STR(err.message, "protocol \"ftp\": want http or https", "says why");
    cfg.protocol = NULL;
    cfg.api_key = "a\r\nb";
    IS_INT(osbc_client_new(&cfg, &c, &err), OSBC_E_ARG, "an API key with CRLF refused");
    cfg.api_key = NULL;
    cfg.domain = "https://h:9";
    IS_INT(osbc_client_new(&cfg, &c, &err), 0, "a scheme in the domain");
    osbc_client_free(c);
}

int main(void)
{
    test_base_parse();
    test_escape();
    test_client_args();
    test_keepalive_and_chunked();
    test_reconnect_after_close();
    test_errors();
    test_streamed_upload();
    return tap_done();
}
