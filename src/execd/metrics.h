/* /metrics and /metrics/watch (protocol.md 3.2, 3.6): CPU count and usage,
 * memory total and use of the sandbox. Numbers come from the sandbox's
 * cgroup when it has one (v1 cpu/cpuacct/memory controllers, else v2
 * cpu.max/cpu.stat/memory.max/memory.current, found through
 * /proc/self/cgroup and /proc/self/mountinfo), otherwise from /proc/stat and
 * /proc/meminfo. CPU usage is the change over ~1 s, sampled with a libuv
 * timer (the loop never blocks). Routes: osb_execd_metrics_routes. */
#ifndef OSB_EXECD_METRICS_H
#define OSB_EXECD_METRICS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* A point-in-time CPU reading. */
struct osb_cpu_sample {
    uint64_t usage_ns;    /* cgroup CPU time */
    uint64_t busy, total; /* /proc/stat ticks */
    int64_t mono_ns;
    bool cgroup;
};

struct osb_metrics {
    double cpu_count, cpu_used_pct, mem_total_mib, mem_used_mib;
    int64_t timestamp;
};

/* Where the numbers come from; probed on first use. NULL directories mean
 * /proc. */
struct osb_metrics_src {
    bool probed;
    int version;     /* 1 or 2 when a cgroup is used */
    char *cpu_acct;  /* v1 cpuacct dir (cpuacct.usage) / v2 dir (cpu.stat) */
    char *cpu_quota; /* v1 cpu dir (cpu.cfs_*) / v2 dir (cpu.max) */
    char *mem;       /* v1 memory dir / v2 dir */
    bool mem_v2;
    double cpu_limit;   /* the runtime's word (execd --cpus) when no cgroup shows a
                           quota; 0: none */
    uint64_t mem_limit; /* execd --memory, likewise for the memory total; 0: none */
};

OSB_MUST_CHECK int osb_metrics_cpu_sample(struct osb_metrics_src *src, struct osb_cpu_sample *s,
                                          struct osb_err *err);
/* Fill m from two CPU samples (a earlier) and the current memory use. */
OSB_MUST_CHECK int osb_metrics_read(struct osb_metrics_src *src, const struct osb_cpu_sample *a,
                                    const struct osb_cpu_sample *b, struct osb_metrics *m,
                                    struct osb_err *err);
/* The Metrics JSON object (Go field order, shortest-style numbers). */
void osb_metrics_json(const struct osb_metrics *m, char *buf, size_t n);
#endif
