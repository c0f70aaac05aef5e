/* How a subcommand begins (its arguments parsed and counted, the client
 * made) and the commands that apply one call to each name given (`sandbox
 * kill`, `snapshot rm`, `pool rm`, `image rm`). */
#include <stdlib.h>

#include "cli/cli.h"
#include "common/xalloc.h"

osbc_client *cli_start(struct cli *cli, int argc, char **argv, const struct cli_opt *opts,
                       struct cli_args *a, size_t n_min, size_t n_max, const char *usage, int *rc)
{
    *rc = cli_parse(cli, argc, argv, opts, 0, a);
    if (!*rc && (a->n_pos < n_min || a->n_pos > n_max))
        *rc = cli_usage("usage: osb %s", usage);
    osbc_client *c = *rc ? NULL : cli_client(cli);
    if (!*rc && !c)
        *rc = CLI_EUSAGE;
    return c;
}

int cli_each(struct cli *cli, int argc, char **argv, const struct cli_each *e)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, (size_t)-1, e->usage, &rc);
    const char **done = osb_xcalloc(a.n_pos + 1, sizeof *done);
    size_t n = 0;
    for (size_t i = 0; c && i < a.n_pos; i++) {
        struct osbc_error err;
        if (e->call(c, a.pos[i], &err) < 0) {
            char *what = osb_xasprintf("%s %s", e->what, a.pos[i]);
            int r = cli_fail(what, &err);
            free(what);
            rc = rc ? rc : r; /* the first failure's code; the others go on */
        } else {
            done[n++] = a.pos[i];
        }
    }
    if (n)
        cli_status_rows(cli, e->key, done, n, e->status);
    free(done);
    cli_args_free(&a);
    return rc;
}
