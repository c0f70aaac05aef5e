/* idle: which command lines are `tail -f /dev/null`. */
#include <stddef.h>

#include "execd/idle.h"
#include "tap.h"

static int idle(const char *a, const char *b, const char *c, const char *d)
{
    const char *argv[] = {a, b, c, d, NULL};
    return osb_execd_idle_argv(argv);
}

int main(void)
{
    OK(idle("tail", "-f", "/dev/null", NULL), "tail -f /dev/null");
    OK(idle("/usr/bin/tail", "-f", "/dev/null", NULL), "by a path");
    OK(!idle("tail", "-f", "/dev/null", "/etc/hosts"), "another file too");
    OK(!idle("tail", "-F", "/dev/null", NULL), "-F (follows by name)");
    OK(!idle("tail", "-f", "/tmp/log", NULL), "a real file");
    OK(!idle("mytail", "-f", "/dev/null", NULL), "another program");
    OK(!idle("tail", "-f", NULL, NULL), "no file");
    OK(!idle("tail", NULL, NULL, NULL), "tail alone");
    OK(!idle("sleep", "infinity", NULL, NULL), "sleep infinity (sleeps already)");
    return tap_done();
}
