/* osb desktop ...: the computer-use API of a sandbox's desktop (execd's
 * /desktop routes): screenshots, mouse, keyboard, windows, open. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Decimal integers from the positionals at first..first+n-1; false after
 * printing why. */
static bool ints(const struct cli_args *a, size_t first, size_t n, long *out)
{
    static const char *const names[] = {"X", "Y", "TO_X", "TO_Y"};
    for (size_t i = 0; i < n; i++)
        if (!cli_long(a->pos[first + i], -1000000, 1000000, &out[i])) {
            cli_usage("%s: want an integer (got '%s')", names[i < 4 ? i : 0], a->pos[first + i]);
            return false;
        }
    return true;
}

/* Prints execd's JSON answer (or {} when it had none) as a KEY VALUE table. */
static int done(struct cli *cli, char *json)
{
    int rc = cli_print(cli, json && *json ? json : "{}", "table", "", NULL);
    osbc_free(json);
    return rc;
}

static int d_screenshot(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"region", 0, OPT_VALUE}, {"scale", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, opts, &a, 2, 2,
                  "desktop screenshot ID FILE.png|- [--region X,Y,W,H] [--scale S]", &rc);
    struct osbc_region r = {0};
    const char *rs = cli_val(&a, opts, "region"), *ss = cli_val(&a, opts, "scale");
    double scale = 0;
    char *end = NULL;
    if (c && rs &&
        (sscanf(rs, "%d,%d,%d,%d", &r.x, &r.y, &r.width, &r.height) != 4 || r.width <= 0 ||
         r.height <= 0))
        c = NULL, rc = cli_usage("--region %s: want X,Y,WIDTH,HEIGHT", rs);
    if (c && ss && ((scale = strtod(ss, &end)), *end || !(scale > 0 && scale <= 1)))
        c = NULL, rc = cli_usage("--scale %s: want a number in (0, 1]", ss);
    char *png = NULL;
    size_t len = 0;
    struct osbc_error err;
    if (c && osbc_desktop_screenshot(c, a.pos[0], rs ? &r : NULL, scale, &png, &len, &err) < 0)
        rc = cli_fail("desktop screenshot", &err);
    else if (c) {
        bool out = strcmp(a.pos[1], "-") == 0;
        FILE *f = out ? stdout : fopen(a.pos[1], "wb");
        if (!f || fwrite(png, 1, len, f) != len || (!out && fclose(f) != 0))
            rc = cli_usage("write %s: %s", a.pos[1], strerror(errno));
        else if (!out)
            cli_ok(cli, "wrote %zu bytes of PNG to %s", len, a.pos[1]);
        osbc_free(png);
    }
    cli_args_free(&a);
    return rc;
}

/* move|click|double-click ID X Y [--button B]; drag ID X Y TO_X TO_Y;
 * scroll ID X Y DX DY. */
static int mouse(struct cli *cli, int argc, char **argv, const char *action, size_t n_nums,
                 const char *usage)
{
    static const struct cli_opt opts[] = {{"button", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 1 + n_nums, 1 + n_nums, usage, &rc);
    long v[4] = {0};
    if (c && !ints(&a, 1, n_nums, v))
        rc = CLI_EUSAGE;
    if (!c || rc) {
        cli_args_free(&a);
        return rc;
    }
    const char *button = cli_val(&a, opts, "button");
    bool drag = !strcmp(action, "drag"), scroll = !strcmp(action, "scroll");
    json_t *b = json_pack("{s:s,s:i,s:i}", "action", action, "x", (int)v[0], "y", (int)v[1]);
    if (button)
        json_object_set_new(b, "button", json_string(button));
    if (drag || scroll) {
        json_object_set_new(b, drag ? "toX" : "dx", json_integer(v[2]));
        json_object_set_new(b, drag ? "toY" : "dy", json_integer(v[3]));
    }
    char *text = json_dumps(b, JSON_COMPACT), *json = NULL;
    json_decref(b);
    struct osbc_error err;
    if (osbc_desktop_mouse(c, a.pos[0], text, &json, &err) < 0)
        rc = cli_fail("desktop mouse", &err);
    else
        rc = done(cli, json);
    free(text);
    cli_args_free(&a);
    return rc;
}

static int d_move(struct cli *cli, int argc, char **argv)
{
    return mouse(cli, argc, argv, "move", 2, "desktop move ID X Y");
}

static int d_click(struct cli *cli, int argc, char **argv)
{
    return mouse(cli, argc, argv, "click", 2, "desktop click ID X Y [--button left|right|middle]");
}

static int d_double(struct cli *cli, int argc, char **argv)
{
    return mouse(cli, argc, argv, "double_click", 2, "desktop double-click ID X Y [--button B]");
}

static int d_drag(struct cli *cli, int argc, char **argv)
{
    return mouse(cli, argc, argv, "drag", 4, "desktop drag ID X Y TO_X TO_Y [--button B]");
}

static int d_scroll(struct cli *cli, int argc, char **argv)
{
    return mouse(cli, argc, argv, "scroll", 4, "desktop scroll ID X Y DX DY");
}

static int d_type(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 2, 2, "desktop type ID TEXT", &rc);
    struct osbc_error err;
    if (c && osbc_desktop_type(c, a.pos[0], a.pos[1], &err) < 0)
        rc = cli_fail("desktop type", &err);
    else if (c)
        cli_ok(cli, "typed %zu bytes", strlen(a.pos[1]));
    cli_args_free(&a);
    return rc;
}

static int d_key(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, 9, "desktop key ID KEY... (ctrl c)", &rc);
    struct osbc_error err;
    if (c && osbc_desktop_press(c, a.pos[0], a.pos + 1, a.n_pos - 1, &err) < 0)
        rc = cli_fail("desktop key", &err);
    else if (c)
        cli_ok(cli, "pressed %zu key(s)", a.n_pos - 1);
    cli_args_free(&a);
    return rc;
}

static int d_cursor(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "desktop cursor ID", &rc);
    char *json = NULL;
    struct osbc_error err;
    if (c && osbc_desktop_cursor(c, a.pos[0], &json, &err) < 0)
        rc = cli_fail("desktop cursor", &err);
    else if (c)
        rc = done(cli, json);
    cli_args_free(&a);
    return rc;
}

static int d_windows(struct cli *cli, int argc, char **argv)
{
    static const struct cli_col cols[] = {
        {"ID", "id"},         {"TITLE", "title"},     {"X", "x"},  {"Y", "y"}, {"WIDTH", "width"},
        {"HEIGHT", "height"}, {"FOCUSED", "focused"}, {NULL, NULL}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "desktop windows ID", &rc);
    char *json = NULL;
    struct osbc_error err;
    if (c && osbc_desktop_windows(c, a.pos[0], &json, &err) < 0)
        rc = cli_fail("desktop windows", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "items", cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int d_focus(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 2, 2, "desktop focus ID WINDOW_ID", &rc);
    struct osbc_error err;
    if (c && osbc_desktop_focus(c, a.pos[0], a.pos[1], &err) < 0)
        rc = cli_fail("desktop focus", &err);
    else if (c)
        cli_ok(cli, "focused window %s", a.pos[1]);
    cli_args_free(&a);
    return rc;
}

static int d_open(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 2, 2, "desktop open ID URL|PATH", &rc);
    char *json = NULL;
    struct osbc_error err;
    if (c && osbc_desktop_open(c, a.pos[0], a.pos[1], &json, &err) < 0)
        rc = cli_fail("desktop open", &err);
    else if (c)
        rc = done(cli, json);
    cli_args_free(&a);
    return rc;
}

int cli_cmd_desktop(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"screenshot", d_screenshot, "screenshot ID FILE.png|- [--region X,Y,W,H] [--scale S]"},
        {"move", d_move, "move ID X Y"},
        {"click", d_click, "click ID X Y [--button left|right|middle]"},
        {"double-click", d_double, "double-click ID X Y [--button B]"},
        {"drag", d_drag, "drag ID X Y TO_X TO_Y [--button B]"},
        {"scroll", d_scroll, "scroll ID X Y DX DY"},
        {"type", d_type, "type ID TEXT"},
        {"key", d_key, "key ID KEY... (e.g. ctrl c)"},
        {"cursor", d_cursor, "cursor ID"},
        {"windows", d_windows, "windows ID"},
        {"focus", d_focus, "focus ID WINDOW_ID"},
        {"open", d_open, "open ID URL|PATH"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "desktop", subs, argc, argv);
}
