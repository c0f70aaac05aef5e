/* The gvisor backend's config.json (bundle.c): volumes as binds of their
 * staging entries, parents before children, read-only where asked; the
 * root's /tmp from <dir>/tmp; the native helper's capabilities. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/json.h"
#include "runtime/gvisor/state.h"
#include "tap.h"

static json_t *mount_at(json_t *mounts, const char *dst, size_t *index)
{
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "destination")), dst) == 0) {
            *index = i;
            return m;
        }
    }
    return NULL;
}

static bool has_option(json_t *m, const char *opt)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(m, "options"), i, o)
    {
        if (strcmp(json_string_value(o), opt) == 0)
            return true;
    }
    return false;
}

static bool has_string(json_t *a, const char *s)
{
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o)
    {
        if (strcmp(json_string_value(o), s) == 0)
            return true;
    }
    return false;
}

int main(void)
{
    char dir[] = "/tmp/osb-gvbundle-XXXXXX";
    if (!mkdtemp(dir))
        return OK(0, "setup: mkdtemp"), tap_done();
    struct osb_rt_volume vols[] = {
        {.name = "child", .src_root = "/srv", .src_rel = "a/b", .dst = "/mnt/a/b"},
        {.name = "parent", .src_root = "/srv", .src_rel = "a", .dst = "/mnt/a", .read_only = true},
        {.name = "file", .src_root = "/srv", .src_rel = "c.conf", .dst = "/etc/c.conf"},
    };
    char *layers[] = {"/layers/0", NULL}, *ep[] = {"tail", "-f", "/dev/null", NULL};
    struct osb_sandbox_spec s = {.id = "sbx-1",
                                 .layers = layers,
                                 .entrypoint = ep,
                                 .execd_token = "tok",
                                 .volumes = vols,
                                 .n_volumes = 3};
    struct osb_gv rt = {0};
    struct osb_err err = {0};
    IS_INT(osb_gv_write_bundle(&rt, &s, dir, &err), 0, "config.json written");
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    OK(cfg != NULL, "config.json is JSON");
    json_t *mounts = json_object_get(cfg, "mounts");
    size_t ia = 99, ib = 99, ic = 99, it = 99;
    json_t *a = mount_at(mounts, "/mnt/a", &ia), *b = mount_at(mounts, "/mnt/a/b", &ib),
           *c = mount_at(mounts, "/etc/c.conf", &ic), *t = mount_at(mounts, "/tmp", &it);
    OK(a && b && c && t, "a mount for each volume and for /tmp");
    OK(ia < ib, "a parent's mount comes before its child's");
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "%s/vol/1", dir);
    IS_STR(json_string_value(json_object_get(a, "source")), want,
           "a volume's source is its staging entry (by its index in the spec)");
    snprintf(want, sizeof want, "%s/vol/2", dir);
    IS_STR(json_string_value(json_object_get(c, "source")), want, "a file volume's too");
    OK(has_option(a, "ro") && !has_option(a, "rw"), "the read-only volume is ro");
    OK(has_option(b, "rw") && has_option(b, "nosuid") && has_option(b, "nodev"),
       "a read-write one is rw, nosuid, nodev");
    snprintf(want, sizeof want, "%s/tmp", dir);
    IS_STR(json_string_value(json_object_get(t, "source")), want, "/tmp is the root's own");
    json_t *caps = json_object_get(json_object_get(cfg, "process"), "capabilities");
    json_t *eff = json_object_get(caps, "effective");
    OK(has_string(eff, "CAP_CHOWN") && has_string(eff, "CAP_SETUID"),
       "root inside may chown and change uid");
    OK(!has_string(eff, "CAP_SYS_ADMIN") &&
           !has_string(json_object_get(caps, "bounding"), "CAP_SYS_ADMIN"),
       "but has no CAP_SYS_ADMIN");
    json_decref(cfg);
    osb_fs_discard_tree(dir);
    return tap_done();
}
