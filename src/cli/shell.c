/* osb shell ID: an interactive terminal in the sandbox over execd's PTY
 * WebSocket. The local terminal goes to raw mode (so Ctrl-C, Ctrl-Z and
 * friends are bytes for the remote side) and is restored on every way out:
 * the remote exit, a dropped connection, SIGTERM/SIGHUP. Window size
 * changes (SIGWINCH) follow to the remote terminal. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"

static struct termios saved;
static volatile sig_atomic_t raw_on, winch, quit_sig;

static void restore(void)
{
    if (raw_on) {
        tcsetattr(0, TCSAFLUSH, &saved);
        raw_on = 0;
    }
}

static void on_winch(int sig)
{
    (void)sig;
    winch = 1;
}

static void on_quit(int sig)
{
    quit_sig = sig;
}

static bool enter_raw(void)
{
    if (!isatty(0) || tcgetattr(0, &saved) < 0)
        return false;
    struct termios raw = saved;
    cfmakeraw(&raw);
    if (tcsetattr(0, TCSAFLUSH, &raw) < 0)
        return false;
    raw_on = 1;
    atexit(restore);
    return true;
}

static void term_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = *rows = 0;
    if (ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Drains every event already readable; returns 1 on exit/close, 0 to go on,
 * or an error code (<0). */
static int pump_remote(osbc_pty *p, int *exit_code, struct osbc_error *err)
{
    for (;;) {
        struct osbc_pty_event ev;
        int rc = osbc_pty_read(p, 0, &ev, err);
        if (rc < 0 && rc != OSBC_E_REMOTE)
            return rc;
        if (rc == OSBC_E_REMOTE) { /* an error frame: show it, go on */
            restore();
            fprintf(stderr, "osb: shell: %s\n", err->message);
            enter_raw();
            continue;
        }
        switch (ev.type) {
        case OSBC_PTY_NONE: return 0;
        case OSBC_PTY_OUTPUT: write_all(1, ev.data, ev.len); break;
        case OSBC_PTY_STDERR: write_all(2, ev.data, ev.len); break;
        case OSBC_PTY_EXIT: *exit_code = ev.exit_code; break;
        case OSBC_PTY_CLOSED: return 1;
        }
    }
}

/* The loop: stdin to the remote, the remote to stdout, until it ends. */
static int session(osbc_pty *p, bool tty, int *exit_code, struct osbc_error *err)
{
    bool in_open = true;
    for (;;) {
        int r = pump_remote(p, exit_code, err);
        if (r)
            return r < 0 ? r : 0;
        if (quit_sig)
            return OSBC_E_CANCELLED;
        if (winch) {
            winch = 0;
            int cols, rows;
            term_size(&cols, &rows);
            if (cols && osbc_pty_resize(p, cols, rows, err) < 0)
                return err->code;
        }
        struct pollfd fds[2] = {{.fd = osbc_pty_fd(p), .events = POLLIN},
                                {.fd = in_open ? 0 : -1, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            return OSBC_E_IO;
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[4096];
            ssize_t n = read(0, buf, sizeof buf);
            if (n > 0 && osbc_pty_write(p, buf, (size_t)n, err) < 0)
                return err->code;
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                in_open = false; /* end of input: ^D, as a terminal would send */
                if (!tty && osbc_pty_write(p, "\x04", 1, err) < 0)
                    return err->code;
            }
        }
    }
}

int cli_cmd_shell(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"command", 'c', OPT_VALUE}, {"workdir", 'w', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb shell ID [-c COMMAND] [-w DIR]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *sid = NULL;
    osbc_pty *p = NULL;
    struct osbc_error err;
    if (c && osbc_pty_create(c, a.pos[0], cli_val(&a, opts, "workdir"),
                             cli_val(&a, opts, "command"), &sid, &err) < 0)
        rc = cli_fail("shell", &err), c = NULL;
    struct osbc_pty_opts po = {.since = -1};
    term_size(&po.cols, &po.rows);
    if (c && osbc_pty_attach(c, a.pos[0], sid, &po, &p, &err) < 0)
        rc = cli_fail("shell", &err), c = NULL;
    if (c) {
        struct sigaction sa = {.sa_handler = on_winch};
        sigaction(SIGWINCH, &sa, NULL);
        sa.sa_handler = on_quit;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGINT, &sa, NULL); /* only when stdin is not a terminal */
        bool tty = enter_raw();
        int code = -1;
        int r = session(p, tty, &code, &err);
        restore();
        if (r == OSBC_E_CANCELLED)
            rc = quit_sig == SIGINT ? CLI_EINTR : 128 + quit_sig;
        else if (r < 0)
            rc = cli_fail("shell", &err);
        else if (code < 0)
            rc = (fprintf(stderr, "osb: shell: the session ended without an exit code\n"),
                  CLI_ECONNECT);
        else
            rc = code > 255 ? 255 : code;
        osbc_pty_close(p);
        osbc_pty_delete(c, a.pos[0], sid, NULL); /* best effort: it may be gone */
    }
    osbc_free(sid);
    cli_args_free(&a);
    return rc;
}
