/* The `image` CLI verbs on a store in a temp dir (no registry: pull is
 * covered by tests/integration/test_image_store.py). */
#include "server/image_cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static char out[8192];

/* Run the CLI with stdout captured into out. */
static int cli(struct osb_istore *s, int argc, char **argv)
{
    char path[] = "/tmp/osb-cli-out-XXXXXX";
    int fd = mkstemp(path);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    int rc = osb_image_cli(s, NULL, NULL, NULL, argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

int main(void)
{
    if (geteuid() != 0) {
        puts("ok - # SKIP needs root (chroot)");
        return 0;
    }
    char dir[] = "/tmp/osb-cli-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char cmd[512], tar[300];
    snprintf(tar, sizeof tar, "%s/r.tar", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/src && echo hi > %s/src/f && tar -C %s/src -cf %s .",
             dir, dir, dir, tar);
    OK(system(cmd) == 0, "made a rootfs tar");
    struct osb_istore *s;
    struct osb_err err = {0};
    char state[300];
    snprintf(state, sizeof state, "%s/state", dir);
    OK(osb_istore_open(state, &s, &err) == 0, "store opens");
    char *imp[] = {"image", "import", "team/base:1", tar};
    IS_INT(cli(s, 4, imp), 0, "import exits 0");
    snprintf(cmd, sizeof cmd, "imported team/base:1 from %s\n", tar);
    IS_STR(out, cmd, "import prints what it did");
    IS_INT(cli(s, 4, imp), 1, "import of a taken name exits 1");
    char *list[] = {"image", "list"};
    IS_INT(cli(s, 2, list), 0, "list exits 0");
    OK(strncmp(out, "NAME", 4) == 0 && strstr(out, "DIGEST\n") && strstr(out, "\nhost ") &&
           strstr(out, "\nteam/base:1 "),
       "list: header with DIGEST, host row, the import");
    char *rm[] = {"image", "rm", "team/base:1"};
    IS_INT(cli(s, 3, rm), 0, "rm exits 0");
    IS_STR(out, "removed team/base:1\n", "rm prints what it removed");
    IS_INT(cli(s, 3, rm), 1, "rm again exits 1");
    char *prune[] = {"image", "prune"};
    IS_INT(cli(s, 2, prune), 0, "prune exits 0");
    OK(strncmp(out, "removed 1 layers, freed ", 24) == 0, "prune reports one layer freed");
    char *bad[] = {"image", "frobnicate"};
    IS_INT(cli(s, 2, bad), 2, "unknown verb: usage, exit 2");
    char *pull[] = {"image", "pull", "127.0.0.1:1/x:1", "--platform", "linux"};
    IS_INT(cli(s, 5, pull), 1, "a bad --platform exits 1");
    osb_istore_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    OK(system(cmd) == 0, "cleaned up");
    return tap_done();
}
