/* src/server/signing.c and the key file under it (common/keyfile.c) on
 * real files: a ticket checks for its own sandbox, port and time only; an
 * altered, truncated, foreign or expired one does not; the key is made
 * once, kept, and refused when its file is wrong. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/signing.h"
#include "tap.h"

static char dir[] = "/tmp/osb-signing-XXXXXX";

static void tickets(struct osb_signer *s, struct osb_signer *other)
{
    char t[OSB_TICKET_MAX], u[OSB_TICKET_MAX];
    osb_signer_ticket(s, "sbx-1", 44772, 2000000000, t);
    OK(strncmp(t, "x2qxvk-", 7) == 0 && strlen(t) == 7 + 32, "ticket: base36 time, '-', 32 hex");
    OK(osb_signer_check(s, "sbx-1", 44772, t, 1999999999), "check: good before its time");
    OK(osb_signer_check(s, "sbx-1", 44772, t, 2000000000), "check: good at its time");
    OK(!osb_signer_check(s, "sbx-1", 44772, t, 2000000001), "check: expired after it");
    OK(!osb_signer_check(s, "sbx-2", 44772, t, 0), "check: another sandbox");
    OK(!osb_signer_check(s, "sbx-1", 8080, t, 0), "check: another port");
    OK(!osb_signer_check(other, "sbx-1", 44772, t, 0), "check: another key");
    snprintf(u, sizeof u, "%s", t);
    u[strlen(u) - 1] = u[strlen(u) - 1] == '0' ? '1' : '0';
    OK(!osb_signer_check(s, "sbx-1", 44772, u, 0), "check: one digit of the signature changed");
    snprintf(u, sizeof u, "%s", t);
    u[0] = 'y';
    OK(!osb_signer_check(s, "sbx-1", 44772, u, 0), "check: the time changed");
    static const char *const bad[] = {"",
                                      "-",
                                      "x2qxvk",
                                      "x2qxvk-",
                                      "x2qxvk-00",
                                      "0x2qxvk-",
                                      "X2QXVK-0123456789abcdef0123456789abcdef",
                                      "x2q!vk-0123456789abcdef0123456789abcdef",
                                      "zzzzzzzzzzzzz-0123456789abcdef0123456789abcdef",
                                      NULL};
    int any = 0;
    for (size_t i = 0; bad[i]; i++)
        any |= osb_signer_check(s, "sbx-1", 44772, bad[i], 0);
    OK(!any, "check: malformed tickets");
    OK(!osb_signer_check(s, "sbx-1", 44772, NULL, 0), "check: no ticket");
    snprintf(u, sizeof u, "%s", t);
    u[strlen(u) - 1] = '\0';
    OK(!osb_signer_check(s, "sbx-1", 44772, u, 0), "check: a signature cut short");
}

static void keyfiles(void)
{
    char path[256], path2[256];
    snprintf(path, sizeof path, "%s/signing.key", dir);
    snprintf(path2, sizeof path2, "%s/other.key", dir);
    struct osb_err err = {0};
    struct osb_signer *s = NULL, *again = NULL, *other = NULL;
    OK(osb_signer_open(path, &s, &err) == 0, "open: makes a key");
    struct stat sb;
    OK(stat(path, &sb) == 0 && sb.st_size == 32 && (sb.st_mode & 0777) == 0600,
       "open: 32 bytes, mode 0600");
    OK(osb_signer_open(path, &again, &err) == 0, "open: reads the key again");
    char t[OSB_TICKET_MAX];
    osb_signer_ticket(s, "a", 1, 100, t);
    OK(osb_signer_check(again, "a", 1, t, 0), "open: the same key signs the same");
    OK(osb_signer_open(path2, &other, &err) == 0, "open: a second key");
    tickets(s, other);
    osb_signer_free(again);
    osb_signer_free(other);
    osb_signer_free(s);

    chmod(path, 0644);
    s = NULL;
    OK(osb_signer_open(path, &s, &err) < 0 && s == NULL && strstr(err.msg, "mode 0600"),
       "open: a key others may read is refused");
    chmod(path, 0600);
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd >= 0) {
        if (write(fd, "x", 1) != 1)
            perror("write");
        close(fd);
    }
    OK(osb_signer_open(path, &s, &err) < 0, "open: a key of the wrong length is refused");
    unlink(path);
    if (symlink(path2, path) != 0)
        perror("symlink");
    OK(osb_signer_open(path, &s, &err) < 0, "open: a symlink is refused");
    unlink(path);
    unlink(path2);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    keyfiles();
    rmdir(dir);
    return tap_done();
}
