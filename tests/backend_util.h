/*
 * backend_util.h — helpers of the backend tests (test_backend.c,
 * test_sim_queues.c): making backends, moving bytes in and out through the
 * interface, random data, clocks.
 */
#ifndef SW_TESTS_BACKEND_UTIL_H
#define SW_TESTS_BACKEND_UTIL_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/threadpool.h"
#include "backend/registry.h"

enum { BT_THREADS = 2, BT_MAX_KEYS = 64 };
#define BT_MIB (1024u * 1024u)

extern cpu_pool *bt_pool;

/* Exits the test on allocation failure (tests only). */
void *bt_malloc(size_t n);
float *bt_random_floats(size_t n, float lo, float hi);
uint64_t bt_rng(void);

double bt_now_s(void);
void bt_sleep_s(double s);

/* Backends on bt_pool: the cpu one, and a sim with capacity, link rate and
 * optional hooks (NULL: none). NULL (after a failed check) on error. */
backend *bt_cpu(void);
backend *bt_sim(uint64_t capacity, double link_Bps, const backend_test_hooks *hooks);

backend_stats bt_stats(backend *b);

/* A device buffer holding `bytes` of host data (copy queue, waited). */
backend_buf *bt_upload(backend *b, const void *host, uint64_t bytes, const char *purpose);
/* Synchronous read-back through the compute queue. */
void bt_download(backend *b, void *host, bmem src, uint64_t bytes);
/* Waits for everything queued (sync), checking it succeeded. */
void bt_sync(backend *b);

/* A weight of `type` (ne1 rows of ne0) with random, finite blocks: random
 * quants, small finite scales (every block type of quant/types.h). */
uint8_t *bt_random_weights(uint32_t type, uint64_t ne0, uint64_t ne1, uint64_t *n_bytes);

#endif
