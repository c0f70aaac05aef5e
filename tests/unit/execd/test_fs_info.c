/* FileInfo JSON, the mode conventions, path helpers with Go's filepath
 * semantics, and Permission parsing. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "execd/fs_info.h"
#include "execd/fs_path.h"
#include "execd/fs_perm.h"
#include "tap.h"

static void path_is(char *got, const char *want, const char *what)
{
    IS_STR(got, want, what);
    free(got);
}

static void paths(void)
{
    path_is(osb_fs_path_clean(""), ".", "clean empty");
    path_is(osb_fs_path_clean("/"), "/", "clean root");
    path_is(osb_fs_path_clean("//a//b/"), "/a/b", "clean slashes");
    path_is(osb_fs_path_clean("/a/./b/../c"), "/a/c", "clean dots");
    path_is(osb_fs_path_clean("/../../x"), "/x", "clean .. at root");
    path_is(osb_fs_path_clean("a/../../b"), "../b", "clean relative ..");
    path_is(osb_fs_path_clean("./"), ".", "clean ./");
    path_is(osb_fs_path_abs("/x/y/"), "/x/y", "abs absolute");
    char *cwd = getcwd(NULL, 0);
    char *want = osb_fs_path_join(cwd, "rel/f");
    path_is(osb_fs_path_abs("rel/./f"), want, "abs relative joins cwd");
    free(want);
    free(cwd);
    path_is(osb_fs_path_join("/", "a"), "/a", "join root");
    path_is(osb_fs_path_join("/a/", "b/"), "/a/b", "join cleans");
    path_is(osb_fs_path_dir("/a/b"), "/a", "dir");
    path_is(osb_fs_path_dir("/a"), "/", "dir of top level");
    path_is(osb_fs_path_dir("a"), ".", "dir of bare name");
    path_is(osb_fs_path_base("/a/b.txt"), "b.txt", "base");
    path_is(osb_fs_path_base("/a/b/"), "b", "base strips trailing slash");
    path_is(osb_fs_path_base("/"), "/", "base of root");
    path_is(osb_fs_path_base(""), ".", "base of empty");
}

static void modes(void)
{
    IS_INT(osb_fs_info_mode(0644), 644, "0644 -> 644");
    IS_INT(osb_fs_info_mode(0755 | S_IFDIR), 755, "directory 0755 -> 755");
    IS_INT(osb_fs_info_mode(04755 | S_IFREG), 755, "setuid bit dropped");
    IS_INT(osb_fs_info_mode(0), 0, "0 -> 0");
    IS_INT(osb_fs_info_mode(0777 | S_ISVTX), 777, "sticky dropped");
    mode_t m = 0;
    OK(osb_fs_perm_mode(755, &m) == 0 && m == 0755, "755 -> 0755");
    OK(osb_fs_perm_mode(600, &m) == 0 && m == 0600, "600 -> 0600");
    OK(osb_fs_perm_mode(7, &m) == 0 && m == 07, "7 -> 07");
    OK(osb_fs_perm_mode(4755, &m) == 0 && m == 0755, "4755 keeps permission bits");
    OK(osb_fs_perm_mode(888, &m) < 0, "888 rejected");
    OK(osb_fs_perm_mode(-1, &m) < 0, "negative rejected");
    OK(osb_fs_perm_mode(17777, &m) < 0, "too many digits rejected");
    IS_STR(osb_fs_info_type(S_IFREG), "file", "type file");
    IS_STR(osb_fs_info_type(S_IFDIR), "directory", "type directory");
    IS_STR(osb_fs_info_type(S_IFLNK), "symlink", "type symlink");
    IS_STR(osb_fs_info_type(S_IFIFO), "other", "type fifo");
}

static void info_json(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    struct stat st = {0};
    st.st_mode = S_IFREG | 0644;
    st.st_size = 2048;
    st.st_uid = 0;
    st.st_gid = 0;
    st.st_mtim = (struct timespec){1763303445, 123456789};
    st.st_ctim = (struct timespec){1763303445, 0};
    struct osb_fs_names *names = osb_fs_names_new();
    json_t *j = osb_fs_info_json("/workspace/a.txt", &st, names);
    char *s = osb_json_dump(j, NULL);
    IS_STR(s,
           "{\"path\":\"/workspace/a.txt\",\"type\":\"file\",\"size\":2048,"
           "\"modified_at\":\"2025-11-16T14:30:45.123456789Z\","
           "\"created_at\":\"2025-11-16T14:30:45Z\",\"owner\":\"root\",\"group\":\"root\","
           "\"mode\":644}",
           "FileInfo JSON, key order and formats");
    free(s);
    json_decref(j);
    st.st_uid = 54321;
    st.st_gid = 54322;
    j = osb_fs_info_json("/x", &st, names);
    IS_STR(json_string_value(json_object_get(j, "owner")), "54321", "unknown uid as number");
    IS_STR(json_string_value(json_object_get(j, "group")), "54322", "unknown gid as number");
    json_decref(j);
    j = osb_fs_info_json("/bad\xff"
                         "name",
                         &st, names);
    IS_STR(json_string_value(json_object_get(j, "path")), "/bad\xef\xbf\xbdname",
           "invalid UTF-8 in a name becomes U+FFFD");
    json_decref(j);
    osb_fs_names_free(names);
    char *clean = osb_fs_utf8_sanitize("ok \xc3\xa9 \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80");
    IS_STR(clean,
           "ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
           "sanitize: one U+FFFD per bad byte (truncated, surrogate, > U+10FFFF)");
    free(clean);
}

static void perm_parse(void)
{
    struct osb_err err = {0};
    struct osb_fs_perm p;
    json_t *j = json_loads("{\"owner\":null,\"group\":null,\"mode\":755}", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) == 0 && p.has_mode && p.mode == 0755 &&
           p.uid == (uid_t)-1 && p.gid == (gid_t)-1,
       "null owner/group are absent");
    json_decref(j);
    j = json_loads("{\"owner\":\"root\",\"group\":\"root\",\"mode\":0}", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) == 0 && !p.has_mode && p.uid == 0 && p.gid == 0,
       "mode 0 means no chmod; root resolves");
    json_decref(j);
    j = json_loads("{\"mode\":\"755\"}", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) < 0 && err.code == OSB_E_INVALID &&
           strstr(err.msg, "mode"),
       "string mode is a 400 naming the field");
    json_decref(j);
    j = json_loads("{\"mode\":789}", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) < 0 && err.code == OSB_E_INVALID,
       "non-octal digits are a 400");
    json_decref(j);
    j = json_loads("{\"owner\":\"no-such-user-xyz\"}", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) < 0 && err.code == OSB_E_INTERNAL,
       "unknown owner is an error (500)");
    json_decref(j);
    j = json_loads("[1]", 0, NULL);
    OK(osb_fs_perm_parse(j, "/x", &p, &err) < 0 && err.code == OSB_E_INVALID,
       "non-object permission is a 400");
    json_decref(j);
    OK(osb_fs_perm_parse(NULL, "/x", &p, &err) == 0 && !p.has_mode, "absent permission");
}

int main(void)
{
    paths();
    modes();
    info_json();
    perm_parse();
    return tap_done();
}
