#include "http/statusmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool osb_status_is_transport(int status)
{
    switch (status) {
    case 401:
    case 405:
    case 411:
    case 413:
    case 414:
    case 426:
    case 431: return true;
    default: return false;
    }
}

const struct osb_status_rule *osb_status_find(const struct osb_status_rule *t, size_t n,
                                              const char *method, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].method, method) == 0 && strcmp(t[i].path, path) == 0)
            return &t[i];
    return NULL;
}

static bool listed(const char *statuses, int status)
{
    char want[8];
    snprintf(want, sizeof want, "%d", status);
    for (const char *p = statuses; (p = strstr(p, want)); p += 3)
        if ((p == statuses || p[-1] == ' ') && (p[3] == '\0' || p[3] == ' '))
            return true;
    return false;
}

int osb_status_pick(const struct osb_status_rule *r, int status)
{
    if (!r || listed(r->statuses, status) || osb_status_is_transport(status))
        return status;
    if (status >= 400 && status < 500 && listed(r->statuses, 400))
        return 400;
    if (listed(r->statuses, 500))
        return 500;
    return status;
}
