/* osb shell ID: an interactive terminal in the sandbox over execd's PTY
 * WebSocket. The local terminal goes to raw mode (so Ctrl-C, Ctrl-Z and
 * friends are bytes for the remote side) and is restored on every way out:
 * the remote exit, a dropped connection, SIGTERM/SIGHUP. Window size
 * changes (SIGWINCH) follow to the remote terminal.
 *
 * The signals osb handles here are blocked except inside ppoll(), so one
 * that arrives between two checks is never lost in a wait, and the library
 * never sees an EINTR in the middle of a frame. */
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
static volatile sig_atomic_t raw_on, winch, quit_sig, got_int;

static void restore(void)
{
    if (raw_on) {
        tcsetattr(0, TCSADRAIN, &saved);
        raw_on = 0;
    }
}

static void on_signal(int sig)
{
    if (sig == SIGWINCH)
        winch = 1;
    else if (sig == SIGINT)
        got_int = 1;
    else
        quit_sig = sig;
}

static bool enter_raw(void)
{
    if (!isatty(0) || tcgetattr(0, &saved) < 0)
        return false;
    struct termios raw = saved;
    cfmakeraw(&raw);
    if (tcsetattr(0, TCSADRAIN, &raw) < 0) /* keeps what was typed ahead */
        return false;
    raw_on = 1;
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

/* Drains every event already readable; returns 1 once the session is over,
 * 0 to go on, or an error code (<0). */
static int pump_remote(osbc_pty *p, int *exit_code, struct osbc_error *err)
{
    for (;;) {
        struct osbc_pty_event ev;
        int rc = osbc_pty_read(p, 0, &ev, err);
        if (rc == OSBC_E_REMOTE) { /* an error frame from execd: show it, go on */
            bool was_raw = raw_on;
            restore();
            fprintf(stderr, "osb: shell: %s\n", err->message);
            if (was_raw)
                enter_raw();
            continue;
        }
        if (rc < 0)
            return rc;
        switch (ev.type) {
        case OSBC_PTY_NONE: return 0;
        case OSBC_PTY_OUTPUT: write_all(1, ev.data, ev.len); break;
        case OSBC_PTY_STDERR: write_all(2, ev.data, ev.len); break;
        case OSBC_PTY_EXIT: *exit_code = ev.exit_code; break;
        case OSBC_PTY_CLOSED: return 1;
        }
    }
}

/* What the handled signals asked for: 0 to go on, or an error code. */
static int handle_signals(osbc_pty *p, bool tty, struct osbc_error *err)
{
    if (quit_sig)
        return OSBC_E_CANCELLED;
    if (got_int) { /* only by kill(): a terminal in raw mode sends Ctrl-C as a byte */
        got_int = 0;
        if (!tty) {
            quit_sig = SIGINT;
            return OSBC_E_CANCELLED;
        }
        if (osbc_pty_write(p, "\x03", 1, err) < 0)
            return err->code;
    }
    if (winch) {
        winch = 0;
        int cols, rows;
        term_size(&cols, &rows);
        if (cols && osbc_pty_resize(p, cols, rows, err) < 0)
            return err->code;
    }
    return 0;
}

/* The loop: stdin to the remote, the remote to stdout, until it ends. */
static int session(osbc_pty *p, bool tty, const sigset_t *wait_mask, int *exit_code,
                   struct osbc_error *err)
{
    bool in_open = true;
    for (;;) {
        int r = pump_remote(p, exit_code, err);
        if (r)
            return r < 0 ? r : 0;
        if ((r = handle_signals(p, tty, err)) < 0)
            return r;
        struct pollfd fds[2] = {{.fd = osbc_pty_fd(p), .events = POLLIN},
                                {.fd = in_open ? 0 : -1, .events = POLLIN}};
        if (ppoll(fds, 2, NULL, wait_mask) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err->message, sizeof err->message, "poll: %s", strerror(errno));
            err->http_status = 0;
            err->server_code[0] = 0;
            return err->code = OSBC_E_IO;
        }
        if (!(fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
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

/* Handlers for the signals the session watches, which stay blocked but in
 * ppoll (wait_mask: the mask to wait with). */
static void watch_signals(sigset_t *wait_mask)
{
    static const int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    sigset_t block;
    sigemptyset(&block);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        sigaddset(&block, sigs[i]);
        sigaction(sigs[i], &sa, NULL);
    }
    sigprocmask(SIG_BLOCK, &block, wait_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigdelset(wait_mask, sigs[i]);
}

/* osb's exit code for how the session ended. */
static int outcome(int r, int code, struct osbc_error *err)
{
    if (r == OSBC_E_CANCELLED)
        return quit_sig == SIGINT ? CLI_EINTR : 128 + quit_sig;
    if (r < 0)
        return cli_fail("shell", err);
    if (code < 0) {
        fprintf(stderr, "osb: shell: the session ended without an exit code\n");
        return CLI_ECONNECT;
    }
    return code > 255 ? 255 : code;
}

int cli_cmd_shell(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"command", 'c', OPT_VALUE}, {"workdir", 'w', OPT_VALUE}, {NULL, 0, 0}};
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: osb shell ID [-c COMMAND] [-w DIR]\n"
                 "An interactive terminal in the sandbox (bash, or COMMAND): every key goes to\n"
                 "the remote side; osb exits with the remote exit status and restores the\n"
                 "local terminal on every way out.");
            return CLI_OK;
        }
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
    if (c && osbc_pty_attach(c, a.pos[0], sid, &po, &p, &err) < 0) {
        rc = cli_fail("shell", &err);
        osbc_pty_delete(c, a.pos[0], sid, NULL);
        c = NULL;
    }
    if (c) {
        sigset_t wait_mask;
        watch_signals(&wait_mask);
        bool tty = enter_raw();
        atexit(restore);
        int code = -1;
        int r = session(p, tty, &wait_mask, &code, &err);
        restore(); /* before any message */
        rc = outcome(r, code, &err);
        osbc_pty_close(p);
        if (r != OSBC_E_CONNECT && r != OSBC_E_TIMEOUT) /* best effort: it may be gone */
            osbc_pty_delete(c, a.pos[0], sid, NULL);
    }
    osbc_free(sid);
    cli_args_free(&a);
    return rc;
}
