/*
 * threadpool.c — persistent worker threads that run one job at a time.
 *
 * A job is published by bumping `generation` (release) after storing fn and
 * arg; workers wait for the bump, run their share, and count `n_pending`
 * down. Both waits (workers for a job, the caller for completion) spin
 * briefly and then sleep on a condition variable, because a decode step
 * dispatches a few hundred short jobs back to back and a futex round trip
 * per job would cost more than the work in some of them. The spin yields
 * the CPU every few rounds: with more threads than free cores (a loaded
 * machine, or -t above the core count) a pure spin would hold a core that
 * the thread everyone waits for needs. Every state
 * change a sleeper waits for is made under `mu`, so no wake-up is lost.
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */

#include "backend/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/error.h"

/* Spin rounds before sleeping (tens of microseconds: about the gap between
 * two kernels of one layer), yielding every POOL_YIELD_EVERY rounds. Tuned
 * on a 2-core machine, idle and under a load of 8 runnable processes. */
enum { POOL_SPIN_ITERS = 2048, POOL_YIELD_EVERY = 32 };

typedef struct pool_worker {
    struct cpu_pool *pool;
    int ith;
    pthread_t thread;
} pool_worker;

struct cpu_pool {
    int n_threads;         /* workers + the caller (thread 0) */
    pool_worker *workers;  /* n_threads - 1 entries */
    pthread_mutex_t run_mu; /* one job at a time, whichever thread calls */
    pthread_mutex_t mu;
    pthread_cond_t cv_job;  /* a new generation, or stop */
    pthread_cond_t cv_done; /* n_pending reached 0 */
    cpu_task_fn fn;         /* written by the caller before the bump */
    void *arg;
    atomic_uint_fast64_t generation;
    atomic_int n_pending;   /* workers still running the current job */
    atomic_bool stop;
};

static void pool_relax(int round) {
    if (round % POOL_YIELD_EVERY == POOL_YIELD_EVERY - 1) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits until the generation differs from `seen` or stop is set; returns
 * the new generation. */
static uint_fast64_t pool_wait_job(cpu_pool *p, uint_fast64_t seen) {
    for (int i = 0; i < POOL_SPIN_ITERS; i++) {
        uint_fast64_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&p->stop, memory_order_acquire))
            return g;
        pool_relax(i);
    }
    pthread_mutex_lock(&p->mu);
    uint_fast64_t g;
    while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
           !atomic_load_explicit(&p->stop, memory_order_acquire))
        pthread_cond_wait(&p->cv_job, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *pool_worker_main(void *opaque) {
    pool_worker *w = opaque;
    cpu_pool *p = w->pool;
    uint_fast64_t seen = 0;
    for (;;) {
        seen = pool_wait_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        p->fn(p->arg, w->ith, p->n_threads);
        /* acq_rel: our writes in fn happen-before the caller's return. */
        if (atomic_fetch_sub_explicit(&p->n_pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->cv_done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* Stops and joins the first n_started workers. */
static void pool_stop_workers(cpu_pool *p, int n_started) {
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->stop, true, memory_order_release);
    pthread_cond_broadcast(&p->cv_job);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n_started; i++)
        pthread_join(p->workers[i].thread, NULL);
}

sw_status cpu_pool_create(int n_threads, cpu_pool **out) {
    if (out == NULL || n_threads < 1 || n_threads > 4096)
        return sw_errorf(SW_ERR_ARG, "cpu_pool_create: n_threads %d (want 1..4096)",
                         n_threads);
    *out = NULL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "cpu_pool_create: out of host memory (%zu bytes)",
                         sizeof *p);
    p->n_threads = n_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->n_pending, 0);
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->run_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_job, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    int n_started = 0;
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (p->workers == NULL) {
            sw_errorf(SW_ERR_OOM_HOST, "cpu_pool_create: out of host memory for %d worker "
                      "records", n_threads - 1);
            goto fail;
        }
    }
    for (; n_started < n_threads - 1; n_started++) {
        pool_worker *w = &p->workers[n_started];
        w->pool = p;
        w->ith = n_started + 1;
        if (pthread_create(&w->thread, NULL, pool_worker_main, w) != 0) {
            sw_errorf(SW_ERR_OOM_HOST,
                      "cpu_pool_create: could not start thread %d of %d (%d started); "
                      "try fewer threads (-t)",
                      n_started + 2, n_threads, n_started + 1);
            goto fail;
        }
    }
    *out = p;
    return SW_OK;
fail:
    pool_stop_workers(p, n_started);
    free(p->workers);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_job);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
    free(p);
    return SW_ERR_OOM_HOST;
}

void cpu_pool_destroy(cpu_pool *pool) {
    if (pool == NULL)
        return;
    pool_stop_workers(pool, pool->n_threads - 1);
    free(pool->workers);
    pthread_cond_destroy(&pool->cv_done);
    pthread_cond_destroy(&pool->cv_job);
    pthread_mutex_destroy(&pool->mu);
    pthread_mutex_destroy(&pool->run_mu);
    free(pool);
}

/* Waits for every worker to finish the current job. */
static void pool_wait_done(cpu_pool *p) {
    for (int i = 0; i < POOL_SPIN_ITERS; i++) {
        if (atomic_load_explicit(&p->n_pending, memory_order_acquire) == 0)
            return;
        pool_relax(i);
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->n_pending, memory_order_acquire) != 0)
        pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void cpu_pool_run(cpu_pool *pool, cpu_task_fn fn, void *arg) {
    if (pool == NULL || pool->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->run_mu);
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->n_pending, pool->n_threads - 1, memory_order_relaxed);
    /* The bump is made under mu so a worker that checked the generation
     * under mu and is about to sleep cannot miss the broadcast. */
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->cv_job);
    pthread_mutex_unlock(&pool->mu);
    fn(arg, 0, pool->n_threads);
    pool_wait_done(pool);
    pthread_mutex_unlock(&pool->run_mu);
}

int cpu_pool_size(const cpu_pool *pool) {
    return pool == NULL ? 1 : pool->n_threads;
}
