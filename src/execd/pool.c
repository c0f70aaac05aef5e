/* The pool size: 4 threads (libuv's default) let one slow disk stall every
 * other file call, so execd asks for 8 (every thread also counts against the
 * sandbox's pids limit). libuv reads UV_THREADPOOL_SIZE once, when the pool
 * starts; starting it costs ~0.4 ms, so it happens shortly after start-up or
 * before the first child, whichever comes first. Children never see the
 * variable (osb_execd_env_hide). */
#include "execd/pool.h"

#include <stdbool.h>
#include <stdlib.h>

#include "execd/envhide.h"

#define POOL_SIZE "8"
#define POOL_START_DELAY_MS 30

static void nop_work(uv_work_t *w)
{
    (void)w;
}

void osb_execd_pool_start(struct osb_execd *x)
{
    if (x->pool_started || !x->pool_scheduled)
        return;
    x->pool_started = true;
    uv_timer_stop(&x->pool_timer);
    /* A failure leaves the pool to start with the first real job. */
    if (uv_queue_work(x->loop, &x->pool_work, nop_work, NULL) < 0)
        x->pool_started = false;
    unsetenv("UV_THREADPOOL_SIZE");
}

static void on_timer(uv_timer_t *t)
{
    osb_execd_pool_start(t->data);
}

void osb_execd_pool_schedule(struct osb_execd *x)
{
    x->pool_scheduled = true;
    uv_timer_init(x->loop, &x->pool_timer);
    x->pool_timer.data = x;
    uv_unref((uv_handle_t *)&x->pool_timer);
    if (getenv("UV_THREADPOOL_SIZE"))
        return;
    setenv("UV_THREADPOOL_SIZE", POOL_SIZE, 1);
    osb_execd_env_hide(x, "UV_THREADPOOL_SIZE");
    uv_timer_start(&x->pool_timer, on_timer, POOL_START_DELAY_MS, 0);
}
