/* SQLite store and the in-memory registry (src/server/store.c, registry.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "server/registry.h"
#include "server/store.h"
#include "tap.h"

/* The test dirs hold only the database files. */
static void rm_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char *p = osb_xasprintf("%s/%s", dir, e->d_name);
            unlink(p);
            free(p);
        }
    }
    if (d)
        closedir(d);
    if (rmdir(dir) < 0)
        printf("# cleanup of %s failed\n", dir);
}

static struct osb_sbx *make(const char *id, int64_t created)
{
    struct osb_sbx *s = osb_sbx_new(id);
    s->created_us = created;
    s->spec = json_pack("{s:{s:s},s:[s]}", "image", "uri", "host", "entrypoint", "true");
    s->metadata = json_pack("{s:s}", "k", "v");
    snprintf(s->token, sizeof s->token, "tok-%s", id);
    osb_sbx_set_status(s, OSB_ST_PENDING, "SANDBOX_PENDING", "creating", created);
    return s;
}

static void test_registry(void)
{
    struct osb_sbx_index *r = osb_reg_new();
    osb_reg_add(r, make("b", 200));
    osb_reg_add(r, make("a", 100));
    osb_reg_add(r, make("c", 300));
    osb_reg_add(r, make("d", 200)); /* same time as b: id order breaks the tie */
    IS_INT(osb_reg_count(r), 4, "four records");
    const char *want[] = {"c", "b", "d", "a"};
    for (int i = 0; i < 4; i++)
        IS_STR(osb_reg_at(r, (size_t)i)->id, want[i], "list order: createdAt desc, then id");
    OK(osb_reg_get(r, "d") && !osb_reg_get(r, "x"), "lookup");
    struct osb_sbx *s = osb_reg_remove(r, "b");
    OK(s && !osb_reg_get(r, "b"), "remove");
    osb_sbx_free(s);
    IS_STR(osb_reg_at(r, 1)->id, "d", "order after remove");
    OK(osb_reg_remove(r, "b") == NULL, "remove twice");
    for (int i = 0; i < 3000; i++) {
        char id[32];
        snprintf(id, sizeof id, "x%d", i);
        osb_reg_add(r, make(id, 1000 + i % 7));
    }
    IS_INT(osb_reg_count(r), 3003, "many records");
    OK(osb_reg_get(r, "x2999") != NULL, "lookup among many");
    bool sorted = true;
    for (size_t i = 1; i < osb_reg_count(r); i++)
        sorted &= osb_reg_at(r, i - 1)->created_us >= osb_reg_at(r, i)->created_us;
    OK(sorted, "still sorted");
    osb_reg_free(r);
    enum osb_sbx_state st;
    OK(osb_state_parse("rUnNiNg", &st) == 0 && st == OSB_ST_RUNNING,
       "state names case-insensitive");
    OK(osb_state_parse("Bogus", &st) < 0, "unknown state");
}

struct loaded {
    struct osb_sbx *all[16];
    int n;
};

static void on_load(void *ud, struct osb_sbx *s)
{
    struct loaded *l = ud;
    if (l->n < 16)
        l->all[l->n++] = s;
    else
        osb_sbx_free(s);
}

static void test_store(void)
{
    char dir[] = "/tmp/osb-store-test-XXXXXX";
    OK(mkdtemp(dir) != NULL, "temp dir");
    char *path = osb_xasprintf("%s/db", dir);
    struct osb_store *st = NULL;
    struct osb_err err = {0};
    IS_INT(osb_store_open(path, &st, &err), 0, "open");
    struct osb_sbx *a = make("aaa", 1000), *b = make("bbb", 2000);
    IS_INT(osb_store_put(st, a, "Pending", "accepted", &err), 0, "put a");
    IS_INT(osb_store_put(st, b, "Pending", NULL, &err), 0, "put b");
    a->has_handle = true;
    a->handle.pid = 1234;
    a->handle.start_time = 987654321;
    snprintf(a->handle.sock_path, sizeof a->handle.sock_path, "/proc/1234/root/run/x.sock");
    snprintf(a->handle.log_path, sizeof a->handle.log_path, "/state/aaa/log");
    a->expires_us = 5000;
    osb_sbx_set_status(a, OSB_ST_RUNNING, "SANDBOX_RUNNING", NULL, 1500);
    IS_INT(osb_store_put(st, a, "Running", "ready", &err), 0, "update a");
    int fails = 0;
    for (int i = 0; i < OSB_STORE_MAX_EVENTS + 20; i++)
        fails += osb_store_put(st, b, "Tick", NULL, &err) < 0;
    IS_INT(fails, 0, "many events stored");
    IS_INT(osb_store_delete(st, "bbb", &err), 0, "delete b");
    IS_INT(osb_store_put(st, b, "Again", NULL, &err), 0, "re-put b");
    osb_store_close(st);

    IS_INT(osb_store_open(path, &st, &err), 0, "reopen");
    struct loaded l = {0};
    IS_INT(osb_store_load(st, on_load, &l, &err), 0, "load");
    IS_INT(l.n, 2, "two records");
    struct osb_sbx *la = l.all[0] && !strcmp(l.all[0]->id, "aaa") ? l.all[0] : l.all[1];
    IS_STR(la->id, "aaa", "record a");
    IS_INT(la->state, OSB_ST_RUNNING, "state");
    IS_STR(la->reason, "SANDBOX_RUNNING", "reason");
    OK(la->message == NULL, "NULL message kept NULL");
    IS_INT(la->created_us, 1000, "created");
    IS_INT(la->transition_us, 1500, "transition");
    IS_INT(la->expires_us, 5000, "expires");
    OK(la->has_handle && la->handle.pid == 1234 && la->handle.start_time == 987654321, "handle");
    IS_STR(la->handle.sock_path, "/proc/1234/root/run/x.sock", "sock path");
    IS_STR(la->token, "tok-aaa", "token");
    IS_STR(json_string_value(json_object_get(la->metadata, "k")), "v", "metadata");
    IS_STR(json_string_value(json_object_get(json_object_get(la->spec, "image"), "uri")), "host",
           "spec");
    struct osb_sbx *lb = la == l.all[0] ? l.all[1] : l.all[0];
    OK(!lb->has_handle && lb->expires_us == 0, "b: no handle, no expiry");

    struct osb_store_event *ev = NULL;
    size_t n = 0;
    IS_INT(osb_store_events(st, "aaa", 10, &ev, &n, &err), 0, "events of a");
    IS_INT(n, 2, "two events");
    IS_STR(ev[0].type, "Pending", "oldest first");
    IS_STR(ev[1].message, "ready", "event message");
    osb_store_events_free(ev, n);
    IS_INT(osb_store_events(st, "bbb", 5000, &ev, &n, &err), 0, "events of b");
    IS_INT(n, 1, "events deleted with the record");
    osb_store_events_free(ev, n);
    osb_store_close(st);
    for (int i = 0; i < l.n; i++)
        osb_sbx_free(l.all[i]);
    osb_sbx_free(a);
    osb_sbx_free(b);
    rm_flat_dir(dir);
    free(path);
}

static void test_event_trim(void)
{
    char dir[] = "/tmp/osb-store-test-XXXXXX";
    OK(mkdtemp(dir) != NULL, "temp dir");
    char *path = osb_xasprintf("%s/db", dir);
    struct osb_store *st = NULL;
    struct osb_err err = {0};
    IS_INT(osb_store_open(path, &st, &err), 0, "open");
    struct osb_sbx *s = make("t", 1);
    int fails = 0;
    for (int i = 0; i < OSB_STORE_MAX_EVENTS + 50; i++)
        fails +=
            osb_store_put(st, s, i == OSB_STORE_MAX_EVENTS + 49 ? "Last" : "Tick", NULL, &err) < 0;
    IS_INT(fails, 0, "every event stored");
    struct osb_store_event *ev = NULL;
    size_t n = 0;
    IS_INT(osb_store_events(st, "t", 100000, &ev, &n, &err), 0, "read the events");
    IS_INT(n, OSB_STORE_MAX_EVENTS, "events trimmed to the cap");
    IS_STR(ev[n - 1].type, "Last", "newest kept");
    osb_store_events_free(ev, n);
    osb_store_close(st);
    osb_sbx_free(s);
    rm_flat_dir(dir);
    free(path);
}

int main(void)
{
    test_registry();
    test_store();
    test_event_trim();
    return tap_done();
}
