/* The native runtime without the server.
 *
 * Without arguments: a TAP smoke test (create a `host` sandbox, reach its
 * execd socket, pause/resume, stats, destroy, nothing left behind). Skips
 * when not root.
 *
 * `test_runtime_driver serve STATE_DIR`: a driver for the integration
 * tests and the benchmark (tests/integration/test_runtime*.py,
 * bench/runtime_bench.py). Reads one JSON request per line on stdin and
 * writes one JSON line per answer on stdout ({"seq":N,"ok":true,...} or
 * {"seq":N,"ok":false,"code":C,"error":"..."}); sandboxes it creates are
 * watched and their exits reported as {"event":"exit","id":ID}.
 *   {"op":"create","id":..,"image":..,"entrypoint":[..],"env":[..],
 *    "cpu":m,"memory":b,"pids":n,"disk":b,"hostname":..,"token":..}
 *      -> pid, start_time, sock, log, ms (osb_rt_create to callback)
 *   {"op":"destroy"|"pause"|"resume"|"stats"|"alive","id":..}
 *   {"op":"import","name":..,"tar":..}  {"op":"rmimage","name":..}
 *   {"op":"images"}  {"op":"cleanup","known":[..]}  {"op":"describe"}
 *   {"op":"watch","id":..,"pid":..,"start_time":..} (re-adopt)
 *   {"op":"quit"} */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "image/resolve.h"
#include "image/store.h"
#include "runtime/runtime.h"
#include "tap.h"

static uv_loop_t *loop;
static struct osb_rt *rt;
/* The image store is the caller's (as in the server): the driver resolves
 * images to layers itself and answers "in use" from its own sandboxes. */
static struct osb_istore *images;
static char state_dir[4096];

struct sb {
    char id[OSB_RT_ID_MAX + 1];
    char image[256];
    struct osb_rt_handle h;
    struct sb *next;
};
static struct sb *sandboxes;

static struct sb *find_sb(const char *id)
{
    for (struct sb *s = sandboxes; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static void forget_sb(const char *id)
{
    for (struct sb **p = &sandboxes; *p; p = &(*p)->next)
        if (strcmp((*p)->id, id) == 0) {
            struct sb *s = *p;
            *p = s->next;
            free(s);
            return;
        }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void binary(const char *env, const char *name, char *out, size_t n)
{
    const char *e = getenv(env);
    char cwd[4096];
    if (e && *e)
        snprintf(out, n, "%s", e);
    else
        snprintf(out, n, "%s/%s/bin/%s", getcwd(cwd, sizeof cwd) ? cwd : ".",
                 getenv("BUILD") ? getenv("BUILD") : "build", name);
}

static int open_rt(const char *state, struct osb_err *err)
{
    char execd[4096], init[4096];
    binary("EXECD_BIN", "execd", execd, sizeof execd);
    binary("OSB_INIT_BIN", "osb-sandbox-init", init, sizeof init);
    /* OSB_USERNS_RANGE="start:count": run every sandbox in a user namespace. */
    const char *range = getenv("OSB_USERNS_RANGE");
    struct osb_rt_config cfg = {.state_dir = state,
                                .execd_path = execd,
                                .init_path = init,
                                .user_namespaces = range && *range,
                                .userns_range = range};
    snprintf(state_dir, sizeof state_dir, "%s", state);
    if (osb_rt_open(OSB_RT_DEFAULT, &cfg, loop, &rt, err) < 0)
        return -1;
    return osb_istore_open(state, &images, err);
}

/* ------------------------------------------------------------ serve */

static void emit(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(j);
}

static json_t *reply(json_int_t seq, const struct osb_err *err)
{
    json_t *j = json_pack("{s:I,s:b}", "seq", seq, "ok", err == NULL);
    if (err) {
        json_object_set_new(j, "code", json_integer(err->code));
        json_object_set_new(j, "error", json_string(err->msg));
    }
    return j;
}

static void on_exit_cb(void *ud, const char *id, const struct osb_rt_end *end)
{
    (void)ud;
    emit(json_pack("{s:s,s:s,s:i,s:i,s:i}", "event", "exit", "id", id, "how", (int)end->how, "kind",
                   (int)end->report.kind, "value", end->report.value));
}

struct pending {
    json_int_t seq;
    double t0;
    char id[OSB_RT_ID_MAX + 1];
    char image[256];
};

static void on_created(void *ud, const struct osb_rt_handle *h, const struct osb_err *err)
{
    struct pending *p = ud;
    double ms = now_ms() - p->t0;
    json_t *j = reply(p->seq, err);
    json_object_set_new(j, "ms", json_real(ms));
    if (h) {
        struct sb *s = calloc(1, sizeof *s);
        snprintf(s->id, sizeof s->id, "%s", p->id);
        snprintf(s->image, sizeof s->image, "%s", p->image);
        s->h = *h;
        s->next = sandboxes;
        sandboxes = s;
        struct osb_err werr = {0};
        if (osb_rt_watch(rt, p->id, h, on_exit_cb, NULL, &werr) < 0)
            json_object_set_new(j, "watch_error", json_string(werr.msg));
        json_object_set_new(j, "pid", json_integer(h->pid));
        json_object_set_new(j, "start_time", json_integer((json_int_t)h->start_time));
        json_object_set_new(j, "sock", json_string(h->sock_path));
        json_object_set_new(j, "log", json_string(h->log_path));
    }
    emit(j);
    free(p);
}

static const char **strv(json_t *a)
{
    size_t n = json_array_size(a);
    const char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(a, i));
    return v;
}

static char *jstr(json_t *req, const char *k)
{
    return (char *)json_string_value(json_object_get(req, k));
}

static void op_create(json_t *req, json_int_t seq)
{
    struct osb_err err = {0};
    const char **entry = strv(json_object_get(req, "entrypoint"));
    const char **env = strv(json_object_get(req, "env"));
    struct osb_image_res im;
    if (osb_image_resolve(images, jstr(req, "image"), &im, &err) < 0) {
        emit(reply(seq, &err));
        free(entry);
        free(env);
        return;
    }
    struct osb_sandbox_spec spec = {
        .id = jstr(req, "id"),
        .image = im.name,
        .layers = im.layers,
        .image_host = im.host,
        .entrypoint = (char **)entry,
        .env = (char **)env,
        .cpu_millicores = json_integer_value(json_object_get(req, "cpu")),
        .memory_bytes = json_integer_value(json_object_get(req, "memory")),
        .pids_max = json_integer_value(json_object_get(req, "pids")),
        .disk_bytes = json_integer_value(json_object_get(req, "disk")),
        .hostname = jstr(req, "hostname"),
        .execd_token = jstr(req, "token"),
    };
    struct pending *p = calloc(1, sizeof *p);
    p->seq = seq;
    p->t0 = now_ms();
    snprintf(p->id, sizeof p->id, "%s", spec.id ? spec.id : "");
    snprintf(p->image, sizeof p->image, "%s", im.name);
    if (osb_rt_create(rt, &spec, on_created, p, &err) < 0) {
        emit(reply(seq, &err));
        free(p);
    }
    osb_image_res_free(&im);
    free(entry);
    free(env);
}

static void op_simple(const char *op, json_t *req, json_int_t seq)
{
    struct osb_err err = {0};
    const char *id = json_string_value(json_object_get(req, "id"));
    double t0 = now_ms();
    int r = 0;
    json_t *extra = json_object();
    if (strcmp(op, "destroy") == 0) {
        r = osb_rt_destroy(rt, id, &err);
        if (id)
            forget_sb(id);
    } else if (strcmp(op, "pause") == 0) {
        r = osb_rt_pause(rt, id, &err);
    } else if (strcmp(op, "resume") == 0) {
        r = osb_rt_resume(rt, id, &err);
    } else if (strcmp(op, "stats") == 0) {
        struct osb_rt_stats st;
        r = osb_rt_stats(rt, id, &st, &err);
        if (r == 0) {
            json_object_set_new(extra, "memory", json_integer((json_int_t)st.memory_bytes));
            json_object_set_new(extra, "cpu_ns", json_integer((json_int_t)st.cpu_usage_ns));
            json_object_set_new(extra, "pids", json_integer((json_int_t)st.pids));
        }
    } else if (strcmp(op, "alive") == 0) {
        struct sb *s = id ? find_sb(id) : NULL;
        json_object_set_new(extra, "alive", json_boolean(s && osb_rt_alive(rt, id, &s->h)));
    }
    json_t *j = reply(seq, r < 0 ? &err : NULL);
    json_object_set_new(j, "ms", json_real(now_ms() - t0));
    json_object_update(j, extra);
    json_decref(extra);
    emit(j);
}

/* Whether one of our sandboxes runs image name (its id into by). */
static bool in_use(const char *name, char *by, size_t n)
{
    struct osb_image im;
    char canon[256];
    snprintf(canon, sizeof canon, "%s", name);
    if (osb_istore_get(images, name, &im, NULL) == 0) {
        snprintf(canon, sizeof canon, "%s", im.name);
        osb_image_free(&im);
    }
    for (struct sb *s = sandboxes; s; s = s->next)
        if (strcmp(s->image, canon) == 0) {
            snprintf(by, n, "%s", s->id);
            return true;
        }
    return false;
}

static bool in_use_cb(void *ud, const char *name)
{
    (void)ud;
    char by[OSB_RT_ID_MAX + 1];
    return in_use(name, by, sizeof by);
}

static int image_remove(const char *name, struct osb_err *err)
{
    char by[OSB_RT_ID_MAX + 1];
    if (name && strcmp(name, OSB_IMAGE_HOST) != 0 && in_use(name, by, sizeof by))
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` is in use by sandbox `%s`", name, by);
    return osb_istore_remove(images, name ? name : "", in_use_cb, NULL, err);
}

/* The built-in host image first, then the store's. */
static int image_list(json_t *a, struct osb_err *err)
{
    char host[4200];
    struct stat st;
    json_int_t created = 0;
    snprintf(host, sizeof host, "%s/images/%s", state_dir, OSB_IMAGE_HOST);
    if (stat(host, &st) == 0)
        created = (json_int_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "name", OSB_IMAGE_HOST, "size",
                                       (json_int_t)0, "created_ms", created));
    struct osb_image *ims;
    size_t n;
    if (osb_istore_list(images, &ims, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "name", ims[i].name, "size",
                                           (json_int_t)ims[i].size_bytes, "created_ms",
                                           (json_int_t)ims[i].created_ms));
        osb_image_free(&ims[i]);
    }
    free(ims);
    return (int)n + 1;
}

static void op_images(json_t *req, const char *op, json_int_t seq)
{
    struct osb_err err = {0};
    const char *name = json_string_value(json_object_get(req, "name"));
    double t0 = now_ms();
    int r = 0;
    json_t *extra = json_object();
    if (strcmp(op, "import") == 0) {
        r = osb_istore_import(images, name ? name : "", jstr(req, "tar"), &err);
    } else if (strcmp(op, "rmimage") == 0) {
        r = image_remove(name, &err);
    } else {
        json_t *a = json_array();
        r = image_list(a, &err);
        json_object_set_new(extra, "images", a);
    }
    json_t *j = reply(seq, r < 0 ? &err : NULL);
    json_object_set_new(j, "ms", json_real(now_ms() - t0));
    json_object_update(j, extra);
    json_decref(extra);
    emit(j);
}

static void op_cleanup(json_t *req, json_int_t seq)
{
    struct osb_err err = {0};
    const char **known = strv(json_object_get(req, "known"));
    int r = osb_rt_cleanup_orphans(rt, known, &err);
    free(known);
    emit(reply(seq, r < 0 ? &err : NULL));
}

static void op_watch(json_t *req, json_int_t seq)
{
    struct osb_err err = {0};
    const char *id = json_string_value(json_object_get(req, "id"));
    struct osb_rt_handle h = {.pid = (pid_t)json_integer_value(json_object_get(req, "pid")),
                              .start_time =
                                  (uint64_t)json_integer_value(json_object_get(req, "start_time"))};
    int r = osb_rt_watch(rt, id, &h, on_exit_cb, NULL, &err);
    if (r == 0 && id && !find_sb(id)) {
        struct sb *s = calloc(1, sizeof *s);
        snprintf(s->id, sizeof s->id, "%s", id);
        s->h = h;
        s->next = sandboxes;
        sandboxes = s;
    }
    emit(reply(seq, r < 0 ? &err : NULL));
}

static uv_pipe_t in;
static struct osb_buf inbuf;

static void handle_line(const char *line)
{
    json_error_t je;
    json_t *req = json_loads(line, 0, &je);
    json_int_t seq = json_integer_value(json_object_get(req, "seq"));
    const char *op = json_string_value(json_object_get(req, "op"));
    if (!op) {
        struct osb_err err = {.code = OSB_E_INVALID};
        snprintf(err.msg, sizeof err.msg, "bad request: %s", je.text);
        emit(reply(seq, &err));
    } else if (strcmp(op, "create") == 0) {
        op_create(req, seq);
    } else if (strcmp(op, "import") == 0 || strcmp(op, "rmimage") == 0 ||
               strcmp(op, "images") == 0) {
        op_images(req, op, seq);
    } else if (strcmp(op, "cleanup") == 0) {
        op_cleanup(req, seq);
    } else if (strcmp(op, "watch") == 0) {
        op_watch(req, seq);
    } else if (strcmp(op, "describe") == 0) {
        json_t *j = reply(seq, NULL);
        json_object_set_new(j, "describe", json_string(osb_rt_describe(rt)));
        emit(j);
    } else if (strcmp(op, "quit") == 0) {
        emit(reply(seq, NULL));
        uv_read_stop((uv_stream_t *)&in);
        osb_rt_close(rt);
        rt = NULL;
        osb_istore_close(images);
        images = NULL;
        uv_close((uv_handle_t *)&in, NULL);
    } else {
        op_simple(op, req, seq);
    }
    json_decref(req);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    static char chunk[65536];
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    if (n < 0) {
        uv_read_stop(s);
        osb_rt_close(rt);
        rt = NULL;
        osb_istore_close(images);
        images = NULL;
        uv_close((uv_handle_t *)s, NULL);
        return;
    }
    MUST(osb_buf_add(&inbuf, buf->base, (size_t)n));
    char *nl;
    while (inbuf.len && (nl = memchr(inbuf.data, '\n', inbuf.len))) {
        *nl = '\0';
        handle_line(inbuf.data);
        osb_buf_consume(&inbuf, (size_t)(nl - inbuf.data) + 1);
    }
}

static int serve(const char *state)
{
    struct osb_err err = {0};
    if (open_rt(state, &err) < 0) {
        json_t *j = reply(0, &err);
        emit(j);
        return 1;
    }
    emit(
        json_pack("{s:I,s:b,s:s}", "seq", (json_int_t)0, "ok", 1, "describe", osb_rt_describe(rt)));
    osb_buf_init(&inbuf, 64 << 20);
    uv_pipe_init(loop, &in, 0);
    uv_pipe_open(&in, 0);
    uv_read_start((uv_stream_t *)&in, on_alloc, on_read);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}

/* ------------------------------------------------------------ smoke test */

static struct osb_rt_handle smoke_h;
static int smoke_done, smoke_exited;
static struct osb_err smoke_err;

static void smoke_created(void *ud, const struct osb_rt_handle *h, const struct osb_err *err)
{
    (void)ud;
    if (h)
        smoke_h = *h;
    else
        smoke_err = *err;
    smoke_done = 1;
}

static void smoke_exit(void *ud, const char *id, const struct osb_rt_end *end)
{
    (void)ud;
    (void)id;
    (void)end;
    smoke_exited = 1;
}

static void run_until(int *flag, int ms)
{
    int64_t end = osb_mono_ms() + ms;
    while (!*flag && osb_mono_ms() < end)
        uv_run(loop, UV_RUN_NOWAIT), usleep(500);
}

static bool sock_answers(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    const char req[] = "GET /ping HTTP/1.1\r\nHost: x\r\nX-EXECD-ACCESS-TOKEN: smoke\r\n\r\n";
    char buf[256] = "";
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1) &&
              read(fd, buf, sizeof buf - 1) > 0 && strstr(buf, " 200 ");
    close(fd);
    return ok;
}

static void smoke_create(void)
{
    struct osb_err err = {0};
    const char *entry[] = {"/bin/sh", "-c", "echo smoke-entrypoint; exec sleep 600", NULL};
    char *no_layers[] = {NULL};
    struct osb_sandbox_spec spec = {.id = "smoke-1",
                                    .image = "host",
                                    .image_host = true,
                                    .layers = no_layers,
                                    .entrypoint = (char **)entry,
                                    .memory_bytes = 256 << 20,
                                    .cpu_millicores = 500,
                                    .execd_token = "smoke"};
    double t0 = now_ms();
    OK(osb_rt_create(rt, &spec, smoke_created, NULL, &err) == 0, "create starts");
    run_until(&smoke_done, 10000);
    if (smoke_err.msg[0])
        printf("# %s\n", smoke_err.msg);
    OK(smoke_done && smoke_h.pid > 0, "create succeeds");
    printf("# create took %.1f ms\n", now_ms() - t0);
    OK(osb_rt_create(rt, &spec, smoke_created, NULL, &err) < 0 && err.code == OSB_E_EXISTS,
       "a second create with the same id is refused");
    OK(osb_rt_alive(rt, "smoke-1", &smoke_h), "alive");
    OK(osb_rt_watch(rt, "smoke-1", &smoke_h, smoke_exit, NULL, &err) == 0, "watch");
    bool up = false;
    for (int i = 0; i < 2000 && !up; i++, usleep(1000))
        up = sock_answers(smoke_h.sock_path);
    OK(up, "execd answers /ping on the unix socket");
}

static void smoke_checks(void)
{
    struct osb_err err = {0};
    struct osb_rt_stats st;
    OK(osb_rt_stats(rt, "smoke-1", &st, &err) == 0 && st.pids >= 2 && st.memory_bytes > 0,
       "stats report processes and memory");
    OK(osb_rt_pause(rt, "smoke-1", &err) == 0, "pause");
    OK(osb_rt_resume(rt, "smoke-1", &err) == 0, "resume");
    OK(osb_rt_pause(rt, "nope", &err) < 0 && err.code == OSB_E_NOTFOUND,
       "pause of an unknown sandbox is NOTFOUND");
    OK(osb_rt_destroy(rt, "../etc", &err) < 0 && err.code == OSB_E_INVALID,
       "an id with a path in it is refused");
    /* execd starts the entrypoint once it listens: its output comes soon. */
    char log[4096] = "";
    for (int i = 0; i < 200 && !strstr(log, "smoke-entrypoint"); i++) {
        FILE *f = fopen(smoke_h.log_path, "r");
        if (f) {
            size_t n = fread(log, 1, sizeof log - 1, f);
            log[n] = '\0';
            fclose(f);
        }
        if (!strstr(log, "smoke-entrypoint")) /* the runtime drains the pipe on the loop */
            uv_run(loop, UV_RUN_NOWAIT), usleep(10000);
    }
    OK(strstr(log, "smoke-entrypoint") != NULL, "the entrypoint's output is in the log");
    OK(osb_rt_destroy(rt, "smoke-1", &err) == 0, "destroy");
    OK(!osb_rt_alive(rt, "smoke-1", &smoke_h), "PID 1 is gone after destroy");
    OK(osb_rt_destroy(rt, "smoke-1", &err) == 0, "destroy again is a no-op");
    struct stat sb;
    OK(stat(smoke_h.log_path, &sb) < 0 && errno == ENOENT, "the state dir is gone");
    run_until(&smoke_exited, 200);
    OK(!smoke_exited, "destroy cancels the watch");
}

int main(int argc, char **argv)
{
    loop = uv_default_loop();
    if (argc >= 3 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2]);
    if (geteuid() != 0) {
        printf("ok - runtime smoke test # SKIP needs root\n");
        return 0;
    }
    char state[] = "/tmp/osb-rt-smoke-XXXXXX";
    if (!mkdtemp(state))
        return 1;
    struct osb_err err = {0};
    int r = open_rt(state, &err);
    if (r < 0)
        printf("# %s\n", err.msg);
    OK(r == 0, "open the runtime");
    if (r == 0) {
        printf("# %s\n", osb_rt_describe(rt));
        smoke_create();
        smoke_checks();
        osb_rt_close(rt);
        rt = NULL;
        osb_istore_close(images);
        uv_run(loop, UV_RUN_NOWAIT);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", state);
    OK(system(cmd) == 0, "remove the state dir");
    return tap_done();
}
