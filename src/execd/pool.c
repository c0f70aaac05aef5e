/* The pool size: 4 threads (libuv's default) let one slow disk stall every
 * other file call, so execd asks for 8 (every thread also counts against the
 * sandbox's pids limit). libuv reads UV_THREADPOOL_SIZE once, when the pool
 * starts, and aborts if it cannot create a thread; so the pool starts with
 * the first file call or before the first user process, whichever comes
 * first (once user processes exist they could use up the pids limit), and
 * never for an idle sandbox: eight threads in each of thousands of idle
 * sandboxes cost the host memory and every pivot_root (which walks every
 * task) time. Children never see the variable (osb_execd_env_hide). */
#include "execd/pool.h"

#include <stdbool.h>
#include <stdlib.h>

#include "execd/envhide.h"

#define POOL_SIZE "8"

static void nop_work(uv_work_t *w)
{
    (void)w;
}

void osb_execd_pool_start(struct osb_execd *x)
{
    if (x->pool_started || !x->pool_prepared)
        return;
    x->pool_started = true;
    /* A failure leaves the pool to start with the first real job. */
    if (uv_queue_work(x->loop, &x->pool_work, nop_work, NULL) < 0)
        x->pool_started = false;
    unsetenv("UV_THREADPOOL_SIZE");
}

void osb_execd_pool_prepare(struct osb_execd *x)
{
    x->pool_prepared = true;
    if (getenv("UV_THREADPOOL_SIZE"))
        return;
    setenv("UV_THREADPOOL_SIZE", POOL_SIZE, 1);
    osb_execd_env_hide(x, "UV_THREADPOOL_SIZE");
}
