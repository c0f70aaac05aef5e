/* libFuzzer target: HTTP/2 frames from both ends through src/vault/h2.c (the
 * vault proxy's HTTP/2 relay; the sandbox side is hostile). The first input
 * byte splits the rest: what the sandbox sends after its preface, and what
 * the upstream sends. Both are written to socket pairs, whose writing ends
 * are then shut, and the relay runs until it ends. Invariants: no crash, no
 * leak (ASan), and it returns: every malformed frame, header block or
 * SETTINGS ends the relay or is answered, never waited on. (What reaches the
 * upstream is checked frame by frame in tests/unit/vault/test_h2.c.) The
 * sources are included directly: the fuzz build links only src/common
 * and src/http. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../src/vault/h1.c"
#include "../src/vault/h2.c"
#include "../src/vault/vio.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void verdict(void *ud, const struct osb_h2_req *rq, struct osb_h2_verdict *v)
{
    static const char *const add[] = {"Authorization", "Bearer fuzz-secret", NULL};
    (void)ud;
    if (!rq->method || strstr(rq->authority, "evil"))
        *v = (struct osb_h2_verdict){.status = 421, .code = "C", .message = "m"};
    else
        *v = (struct osb_h2_verdict){.add = add, .binding = "b"};
}

static void answered(void *ud, const char *b, const char *a, const char *m, const char *p, int s)
{
    (void)ud, (void)b, (void)a, (void)m, (void)p, (void)s;
}

static const char *const *secrets(void *ud, size_t *n)
{
    static const char *const s[] = {"fuzz-secret"};
    (void)ud;
    *n = 1;
    return s;
}

static void pair(int sv[2])
{
    int big = 1 << 20;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    for (int i = 0; i < 2; i++) {
        setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    }
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct osb_h2_ops ops = {NULL, verdict, answered, secrets};
    if (size < 1 || size > 16384)
        return 0;
    size_t k = 1 + (size - 1) * data[0] / 255;
    int c[2], u[2];
    pair(c);
    pair(u);
    if (write(c[0], OSB_H2_PREFACE, 24) != 24 ||
        (k > 1 && write(c[0], data + 1, k - 1) != (ssize_t)(k - 1)) ||
        (size > k && write(u[0], data + k, size - k) != (ssize_t)(size - k)))
        abort();
    shutdown(c[0], SHUT_WR);
    shutdown(u[0], SHUT_WR);
    struct osb_vio cv = {.fd = c[1], .timeout_ms = 1000}, uv = {.fd = u[1], .timeout_ms = 1000};
    osb_h2_relay(&cv, &uv, &ops, 1000);
    close(c[1]);
    close(u[1]);
    close(c[0]);
    close(u[0]);
    return 0;
}
