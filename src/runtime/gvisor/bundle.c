/* The OCI bundle's config.json: execd as the process, the overlay root
 * the create step mounts (execd's binary directory is a read-only bind
 * inside it, mounts.c: served with the root, no mount of its own, which
 * would cost the gofer and the Sentry host threads), execd's socket
 * directory as a bind,
 * the root's /tmp and the volumes as binds of their staging entries
 * (mounts.c), the limits (cgroup.c), the network slot's namespace when
 * given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fstree.h"
#include "common/json.h"
#include "runtime/gvisor/state.h"
#include "runtime/init/spec.h"

static json_t *process_args(const struct osb_sandbox_spec *s)
{
    json_t *a = json_array();
    const char *head[] = {OSB_GV_BIN_DIR "/execd", "--port", OSB_EXECD_PORT, "--unix",
                          OSB_GV_SOCK_DIR "/" OSB_GV_SOCK_NAME};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        json_array_append_new(a, json_string(head[i]));
    if (s->workdir) {
        json_array_append_new(a, json_string("--workdir"));
        json_array_append_new(a, json_string(s->workdir));
    }
    if (s->user) {
        json_array_append_new(a, json_string("--user"));
        json_array_append_new(a, json_string(s->user));
    }
    if (s->cpu_millicores > 0) { /* no cgroupfs inside the Sentry to read it from */
        json_array_append_new(a, json_string("--cpus"));
        json_array_append_new(a, json_sprintf("%lld.%03lld", (long long)(s->cpu_millicores / 1000),
                                              (long long)(s->cpu_millicores % 1000)));
    }
    if (s->memory_bytes > 0) {
        json_array_append_new(a, json_string("--memory"));
        json_array_append_new(a, json_sprintf("%lld", (long long)s->memory_bytes));
    }
    if (!s->keep_running) { /* the end report: runsc create's stdin (watch.c) */
        json_array_append_new(a, json_string("--report-to-fd"));
        json_array_append_new(a, json_string("0"));
    }
    json_array_append_new(a, json_string("--"));
    for (size_t i = 0; s->entrypoint[i]; i++)
        json_array_append_new(a, json_string(s->entrypoint[i]));
    return a;
}

/* The image's env, then defaults the native helper sets too; the token
 * travels in the environment execd reads it from (and hides). */
static json_t *process_env(const struct osb_sandbox_spec *s)
{
    json_t *e = json_array();
    bool path = false, home = false;
    for (size_t i = 0; s->env && s->env[i]; i++) {
        if (strncmp(s->env[i], "EXECD_ACCESS_TOKEN=", 19) == 0)
            continue;
        path |= strncmp(s->env[i], "PATH=", 5) == 0;
        home |= strncmp(s->env[i], "HOME=", 5) == 0;
        json_array_append_new(e, json_string(s->env[i]));
    }
    if (!path)
        json_array_append_new(
            e, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    if (!home)
        json_array_append_new(e, json_string("HOME=/root"));
    json_array_append_new(e, json_sprintf("EXECD_ACCESS_TOKEN=%s", s->execd_token));
    return e;
}

static json_t *bind_mount(const char *src, const char *dst, bool ro)
{
    return json_pack("{s:s, s:s, s:s, s:[s,s,s,s]}", "destination", dst, "type", "bind", "source",
                     src, "options", "rbind", ro ? "ro" : "rw", "nosuid", "nodev");
}

/* Volumes, parents before children: each from <dir>/vol/<i>, where the
 * create's child attaches the source it resolved. */
static void add_volumes(json_t *mounts, const struct osb_sandbox_spec *s, const char *dir)
{
    size_t n = s->n_volumes, order[n ? n : 1];
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i;
             j > 0 && strcmp(s->volumes[order[j - 1]].dst, s->volumes[order[j]].dst) > 0; j--) {
            size_t x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    for (size_t k = 0; k < n; k++) {
        const struct osb_rt_volume *v = &s->volumes[order[k]];
        char src[PATH_MAX + 32];
        snprintf(src, sizeof src, "%s/vol/%zu", dir, order[k]);
        json_array_append_new(mounts, bind_mount(src, v->dst, v->read_only));
    }
}

static json_t *namespaces(const struct osb_sandbox_spec *s)
{
    json_t *ns = json_pack("[{s:s},{s:s},{s:s},{s:s}]", "type", "pid", "type", "ipc", "type", "uts",
                           "type", "mount");
    json_t *net = json_pack("{s:s}", "type", "network");
    if (s->netns)
        json_object_set_new(net, "path", json_string(s->netns));
    json_array_append_new(ns, net);
    return ns;
}

int osb_gv_write_bundle(const struct osb_gv *rt, const struct osb_sandbox_spec *s, const char *dir,
                        struct osb_err *err)
{
    char sock[PATH_MAX + 8], path[PATH_MAX + 16];
    snprintf(sock, sizeof sock, "%s/sock", dir);
    char host[13];
    snprintf(host, sizeof host, "%s", s->id);
    json_t *mounts = json_pack("[{s:s,s:s,s:s}, {s:s,s:s,s:s}, o]", "destination", "/proc", "type",
                               "proc", "source", "proc", "destination", "/sys", "type", "sysfs",
                               "source", "sysfs", bind_mount(sock, OSB_GV_SOCK_DIR, false));
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    json_array_append_new(mounts, bind_mount(tmp, "/tmp", false));
    snprintf(tmp, sizeof tmp, "%s/shm", dir);
    json_array_append_new(mounts, bind_mount(tmp, "/dev/shm", false));
    add_volumes(mounts, s, dir);
    json_t *cfg = json_pack(
        "{s:s, s:{s:b, s:{s:i,s:i}, s:o, s:o, s:s}, s:{s:s, s:b}, s:s, s:o, s:{s:o}}", "ociVersion",
        "1.0.2", "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args", process_args(s),
        "env", process_env(s), "cwd", "/", "root", "path", "rootfs", "readonly", 0, "hostname",
        s->hostname ? s->hostname : host, "mounts", mounts, "linux", "namespaces", namespaces(s));
    if (!cfg)
        return osb_err_set(err, OSB_E_INTERNAL, "cannot build config.json for `%s`", s->id);
    osb_gv_add_limits(rt, s, json_object_get(cfg, "linux"));
    osb_gv_harden_process(s, json_object_get(cfg, "process"));
    size_t len;
    char *text = osb_json_dump(cfg, &len);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = osb_fs_create(path, text, len, 1, err);
    free(text);
    return rc < 0 ? -1 : 0;
}
