/*
 * threadpool.h — a persistent pool of worker threads for the CPU kernels.
 * One job at a time: cpu_pool_run() hands the same function to every
 * thread (the caller takes part as thread 0) and returns when all are done.
 * Created once per engine; no allocation per call.
 */
#ifndef SW_BACKEND_CPU_THREADPOOL_H
#define SW_BACKEND_CPU_THREADPOOL_H

#include "spillway.h"

typedef struct cpu_pool cpu_pool;

/* fn(arg, ith, nth): thread ith of nth does its share. */
typedef void (*cpu_task_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (1 starts no worker). Errors: SW_ERR_ARG, SW_ERR_OOM_HOST
 * (thread creation failed: message says how many started). */
sw_status cpu_pool_create(int n_threads, cpu_pool **out);

/* Joins the workers. Accepts NULL. */
void cpu_pool_destroy(cpu_pool *pool);

/* Runs fn on all threads and waits. pool may be NULL (runs fn(arg, 0, 1)).
 * Callers on different threads (the engine's, a simulated device's
 * compute thread) are served one job at a time. Not reentrant: fn must not
 * call cpu_pool_run on the same pool. */
void cpu_pool_run(cpu_pool *pool, cpu_task_fn fn, void *arg);

/* Threads in the pool (1 for NULL). */
int cpu_pool_size(const cpu_pool *pool);

#endif
