/* The pool size: 4 threads (libuv's default) let one slow disk stall every
 * other file call, so execd asks for 8 (every thread also counts against the
 * sandbox's pids limit). libuv reads UV_THREADPOOL_SIZE once, when the pool
 * starts; starting it costs ~0.4 ms, so it happens shortly after start-up or
 * before the first child, whichever comes first. Children never see the
 * variable (osb_execd_env_hide). */
#include "execd/pool.h"

#include <stdbool.h>
#include <stdlib.h>

#include "execd/spawn.h"

#define POOL_SIZE "8"
#define POOL_START_DELAY_MS 30

static uv_loop_t *pool_loop;
static uv_timer_t timer;
static bool started;

static void nop_work(uv_work_t *w)
{
    (void)w;
}

void osb_execd_pool_start(void)
{
    static uv_work_t w;
    if (started || !pool_loop)
        return;
    started = true;
    uv_timer_stop(&timer);
    uv_queue_work(pool_loop, &w, nop_work, NULL);
    unsetenv("UV_THREADPOOL_SIZE");
}

static void on_timer(uv_timer_t *t)
{
    (void)t;
    osb_execd_pool_start();
}

void osb_execd_pool_schedule(uv_loop_t *loop)
{
    pool_loop = loop;
    uv_timer_init(loop, &timer);
    uv_unref((uv_handle_t *)&timer);
    if (getenv("UV_THREADPOOL_SIZE"))
        return;
    setenv("UV_THREADPOOL_SIZE", POOL_SIZE, 1);
    osb_execd_env_hide("UV_THREADPOOL_SIZE");
    uv_timer_start(&timer, on_timer, POOL_START_DELAY_MS, 0);
}
