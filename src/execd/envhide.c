#include "execd/envhide.h"

#include <string.h>

void osb_execd_env_hide(struct osb_execd *x, const char *key)
{
    x->hidden_env = key;
}

bool osb_execd_env_hiding(const struct osb_execd *x)
{
    return x->hidden_env != NULL;
}

bool osb_execd_env_hidden(const struct osb_execd *x, const char *kv, size_t keylen)
{
    const char *h = x->hidden_env;
    return h && strlen(h) == keylen && strncmp(kv, h, keylen) == 0;
}
