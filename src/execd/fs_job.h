/* File operations run on the libuv thread pool, never on the loop: a
 * recursive search, an rm -rf or an fsync can take seconds and execd's one
 * loop also carries every command stream. A job copies what it needs out of
 * the request (the request may die while the job runs), does its work in
 * `run` on a pool thread, and the result is sent from the loop. */
#ifndef OSB_EXECD_FS_JOB_H
#define OSB_EXECD_FS_JOB_H
#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "common/err.h"
#include "http/http.h"

struct osb_fs_job;
/* Runs on a pool thread: must not touch the request. Returns <0 with err
 * set to fail the request; otherwise the answer is the JSON given to
 * osb_fs_job_result, or an empty 200 without one. */
typedef int (*osb_fs_job_fn)(struct osb_fs_job *job, void *ud, struct osb_err *err);

/* ud is owned by the job and released with free_ud (may be NULL) on the
 * loop after the answer went out (or the client left). */
void osb_fs_job_run(uv_loop_t *loop, struct osb_http_req *req, osb_fs_job_fn run, void *ud,
                    void (*free_ud)(void *ud));
/* 200 with this JSON (reference taken). */
void osb_fs_job_result(struct osb_fs_job *job, json_t *j);
/* A failed job is answered through execd's error table (errmap.h). */
#endif
