/*
 * test_sim_queues.c — the simulated device's two queues: work runs behind
 * the host's back, copies land in order and at the link rate, events order
 * one queue behind the other without blocking the host, and the race check
 * fails loudly when a buffer is overwritten while (or before) an op that
 * should read its old contents runs. Timing bounds are generous (the test
 * machine is small and busy) but each one would catch a real bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend_util.h"
#include "check.h"
#include "quant/types.h"

static bmem at(backend_buf *b) { return (bmem){b, 0}; }

/* 8x8 f32 matrix-vector op reading weight w (a race-tracked buffer). */
static bop mv(backend_buf *w, backend_buf *x, backend_buf *y) {
    btensor t = {.name = "w", .type = SW_TYPE_F32, .ne0 = 8, .ne1 = 8, .n_bytes = 256,
                 .mem = at(w)};
    return (bop){.kind = BOP_MATMUL, .u.matmul = {t, at(x), at(y), 1}};
}

static sw_status submit_mv(backend *b, bop op) { return b->vt->submit(b, &op); }

/* Submission returns at once; the work runs later on the device's thread. */
static void test_asynchronous(void) {
    backend_test_hooks slow = {.op_delay_s = 0.05};
    backend *b = bt_sim(1 << 20, 0, &slow);
    if (b == NULL)
        return;
    float ones[64];
    for (int i = 0; i < 64; i++)
        ones[i] = 1.0f;
    backend_buf *w = bt_upload(b, ones, 256, "w"), *x = bt_upload(b, ones, 32, "x"), *y = NULL;
    SW_CHECK_OK(b->vt->alloc(b, 32, "y", &y));
    double t0 = bt_now_s();
    for (int i = 0; i < 4; i++)
        SW_CHECK_OK(submit_mv(b, mv(w, x, y)));
    double queued = bt_now_s() - t0;
    bt_sync(b);
    double ran = bt_now_s() - t0;
    float got[8];
    bt_download(b, got, at(y), sizeof got);
    printf("async: 4 ops of 50 ms queued in %.1f ms, done after %.1f ms\n", queued * 1e3,
           ran * 1e3);
    SW_CHECK(queued < 0.04, "submission blocked for %.3f s: ops are not queued", queued);
    SW_CHECK(ran >= 0.19, "sync returned after %.3f s, before the 4 x 50 ms of work", ran);
    SW_CHECK(got[0] == 8.0f && got[7] == 8.0f, "the ops computed %g", got[0]);
    b->vt->free(b, y), b->vt->free(b, x), b->vt->free(b, w);
    backend_destroy(b);
}

/* Two copies to the same place land in queue order. */
static void test_copy_order(void) {
    const uint64_t big = 4 * BT_MIB, small = 1024;
    backend *b = bt_sim(8 * BT_MIB, 200e6, NULL);
    if (b == NULL)
        return;
    uint8_t *src_a = bt_malloc(big), *src_b = bt_malloc(small), *got = bt_malloc(big);
    memset(src_a, 0xAA, big);
    memset(src_b, 0xBB, small);
    backend_buf *dst = NULL;
    backend_event *ev = NULL;
    SW_CHECK_OK(b->vt->alloc(b, big, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src_a, big));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src_b, small));
    SW_CHECK_OK(b->vt->event_record(b, ev, BQ_COPY));
    SW_CHECK_OK(b->vt->event_sync(b, ev));
    bt_download(b, got, at(dst), big);
    SW_CHECK(memcmp(got, src_b, small) == 0, "the second copy did not land last");
    SW_CHECK(memcmp(got + small, src_a + small, big - small) == 0,
             "the first copy had not landed when the event passed");
    SW_CHECK(bt_stats(b).bytes_to_device == big + small, "bytes_to_device");
    b->vt->event_destroy(b, ev);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(got), free(src_b), free(src_a);
}

static void test_events(void) {
    const uint64_t n = 2 * BT_MIB; /* 40 ms at 50 MB/s */
    backend *b = bt_sim(4 * BT_MIB, 50e6, NULL);
    if (b == NULL)
        return;
    uint8_t *src = bt_malloc(n);
    memset(src, 7, n);
    backend_buf *dst = NULL;
    backend_event *fresh = NULL, *ev = NULL;
    SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
    SW_CHECK_OK(b->vt->event_create(b, &fresh));
    SW_CHECK_OK(b->vt->event_create(b, &ev));
    double t0 = bt_now_s();
    SW_CHECK_OK(b->vt->event_sync(b, fresh)); /* never recorded: passed */
    SW_CHECK(bt_now_s() - t0 < 0.01, "a never-recorded event blocked");
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src, n));
    SW_CHECK_OK(b->vt->event_record(b, ev, BQ_COPY));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src, n)); /* after the mark */
    t0 = bt_now_s();
    SW_CHECK_OK(b->vt->event_sync(b, ev));
    double first = bt_now_s() - t0;
    bt_sync(b);
    double both = bt_now_s() - t0;
    printf("events: mark after copy 1 passed at %.0f ms, both copies at %.0f ms\n",
           first * 1e3, both * 1e3);
    SW_CHECK(first > 0.03 && first < both - 0.02, "the event waited for %.3f s (both %.3f s): "
             "its mark is not between the copies", first, both);
    b->vt->event_destroy(b, ev);
    b->vt->event_destroy(b, fresh);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* The compute queue waits for an upload (host not blocked), and the op
 * sees the uploaded weights; the wait counts as stall. */
static void test_compute_waits_for_copy(void) {
    backend *b = bt_sim(8 * BT_MIB, 20e6, NULL); /* 4 MiB: ~200 ms */
    if (b == NULL)
        return;
    uint8_t *pad = calloc(1, 4 * BT_MIB);
    float w2[64], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, got[8];
    for (int i = 0; i < 64; i++)
        w2[i] = 2.0f;
    backend_buf *w = NULL, *big = NULL, *x = bt_upload(b, ones, 32, "x"), *y = NULL;
    backend_event *filled = NULL;
    SW_CHECK_OK(b->vt->alloc(b, 256, "w", &w));
    SW_CHECK_OK(b->vt->alloc(b, 4 * BT_MIB, "big", &big));
    SW_CHECK_OK(b->vt->alloc(b, 32, "y", &y));
    SW_CHECK_OK(b->vt->event_create(b, &filled));
    double t0 = bt_now_s();
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(big), pad, 4 * BT_MIB));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(w), w2, 256));
    SW_CHECK_OK(b->vt->event_record(b, filled, BQ_COPY));
    SW_CHECK_OK(b->vt->queue_wait(b, BQ_COMPUTE, filled));
    SW_CHECK_OK(submit_mv(b, mv(w, x, y)));
    double queued = bt_now_s() - t0;
    bt_download(b, got, at(y), sizeof got);
    SW_CHECK(queued < 0.05, "queue_wait blocked the host for %.3f s", queued);
    SW_CHECK(got[0] == 16.0f, "the op ran before its weights landed (got %g)", got[0]);
    SW_CHECK(bt_stats(b).wait_stall_s > 0.1, "compute waited %.3f s for the copy: not counted "
             "as stall", bt_stats(b).wait_stall_s);
    SW_CHECK_OK(b->vt->sync(b));
    b->vt->event_destroy(b, filled);
    b->vt->free(b, y), b->vt->free(b, x), b->vt->free(b, big), b->vt->free(b, w);
    backend_destroy(b);
    free(pad);
}

/* Refilling a weight buffer behind the event recorded after its last
 * reader is safe; refilling it without that wait is caught, loudly. */
static void race_case(bool wait, sw_status *st_out, char *msg, size_t cap) {
    backend_test_hooks slow = {.op_delay_s = 0.1};
    backend *b = bt_sim(1 << 20, 0, &slow);
    if (b == NULL)
        return;
    float w1[64], w2[64], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, got[8];
    for (int i = 0; i < 64; i++)
        w1[i] = 1.0f, w2[i] = 3.0f;
    backend_buf *w = bt_upload(b, w1, 256, "ring slot 0"), *x = bt_upload(b, ones, 32, "x");
    backend_buf *y = NULL;
    backend_event *consumed = NULL;
    SW_CHECK_OK(b->vt->alloc(b, 32, "y", &y));
    SW_CHECK_OK(b->vt->event_create(b, &consumed));
    SW_CHECK_OK(submit_mv(b, mv(w, x, y)));  /* reads w1 for 100 ms */
    SW_CHECK_OK(b->vt->event_record(b, consumed, BQ_COMPUTE));
    if (wait)
        SW_CHECK_OK(b->vt->queue_wait(b, BQ_COPY, consumed));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(w), w2, 256));
    *st_out = b->vt->sync(b);
    snprintf(msg, cap, "%s", *st_out == SW_OK ? "" : sw_last_error());
    if (*st_out == SW_OK) {
        bt_download(b, got, at(y), sizeof got);
        SW_CHECK(got[0] == 8.0f, "the op read the refilled weights (%g)", got[0]);
    }
    b->vt->event_destroy(b, consumed);
    b->vt->free(b, y), b->vt->free(b, x), b->vt->free(b, w);
    backend_destroy(b);
}

static void test_race_check(void) {
    char msg[512];
    sw_status st = SW_OK;
    race_case(true, &st, msg, sizeof msg);
    SW_CHECK(st == SW_OK, "a refill behind the consumed event was flagged: %s", msg);
    race_case(false, &st, msg, sizeof msg);
    SW_CHECK(st == SW_ERR_DEVICE && strstr(msg, "'ring slot 0' was overwritten") != NULL,
             "a refill without the wait was not caught (%s): %s", sw_status_name(st), msg);
    printf("race check: %s\n", msg);
}

/* More copies than queue slots: submission blocks for a slot, nothing is
 * lost or reordered. */
static void test_queue_full(void) {
    enum { N_COPIES = 150, BYTES = 8192 };
    backend *b = bt_sim(1 << 20, 50e6, NULL);
    if (b == NULL)
        return;
    uint8_t *src = bt_malloc((size_t)N_COPIES * BYTES), got[BYTES];
    for (int i = 0; i < N_COPIES; i++)
        memset(src + (size_t)i * BYTES, i, BYTES);
    backend_buf *dst = NULL;
    SW_CHECK_OK(b->vt->alloc(b, BYTES, "dst", &dst));
    for (int i = 0; i < N_COPIES; i++)
        SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src + (size_t)i * BYTES, BYTES));
    bt_sync(b); /* the read-back goes on the compute queue: after the copies */
    bt_download(b, got, at(dst), BYTES);
    SW_CHECK(memcmp(got, src + (size_t)(N_COPIES - 1) * BYTES, BYTES) == 0,
             "the last queued copy is not the last landed");
    SW_CHECK(bt_stats(b).bytes_to_device == (uint64_t)N_COPIES * BYTES, "bytes_to_device");
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* Throttle accuracy within +-10%; no attempt may beat the link. Falling
 * short needs only CPU contention, so up to ten tries are made. */
static void test_throttle(double rate) {
    const uint64_t n = 64 * BT_MIB;
    backend *b = bt_sim(n, rate, NULL);
    if (b == NULL)
        return;
    uint8_t *src = bt_malloc(n);
    backend_buf *dst = NULL;
    memset(src, 3, n);
    SW_CHECK_OK(b->vt->alloc(b, n, "dst", &dst));
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src, n)); /* first touch: not timed */
    bt_sync(b);
    double best = 0.0;
    for (int attempt = 0; attempt < 10 && best < 0.9 * rate && dst != NULL; attempt++) {
        const double t0 = bt_now_s();
        SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src, n));
        bt_sync(b);
        const double got = (double)n / (bt_now_s() - t0);
        printf("throttle %.0f MB/s: achieved %.1f MB/s (%+.1f%%)\n", rate / 1e6, got / 1e6,
               (got / rate - 1.0) * 100.0);
        SW_CHECK(got <= 1.1 * rate, "throttle at %.0f MB/s let %.1f MB/s through", rate / 1e6,
                 got / 1e6);
        best = got > best ? got : best;
    }
    SW_CHECK(best >= 0.9 * rate, "throttle at %.0f MB/s achieved at best %.1f MB/s (outside "
             "+-10%%)", rate / 1e6, best / 1e6);
    b->vt->free(b, dst);
    backend_destroy(b);
    free(src);
}

/* A throttled copy and queued compute overlap instead of adding up. */
static void test_overlap(void) {
    backend_test_hooks slow = {.op_delay_s = 0.03};
    backend *b = bt_sim(32 * BT_MIB, 100e6, &slow); /* 16 MiB: ~168 ms */
    if (b == NULL)
        return;
    uint8_t *src = calloc(1, 16 * BT_MIB);
    float ones[64];
    for (int i = 0; i < 64; i++)
        ones[i] = 1.0f;
    backend_buf *big = NULL, *w = bt_upload(b, ones, 256, "w"), *x = bt_upload(b, ones, 32, "x");
    backend_buf *y = NULL;
    SW_CHECK_OK(b->vt->alloc(b, 16 * BT_MIB, "big", &big));
    SW_CHECK_OK(b->vt->alloc(b, 32, "y", &y));
    const double t0 = bt_now_s();
    SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(big), src, 16 * BT_MIB));
    for (int i = 0; i < 5; i++) /* 150 ms of compute */
        SW_CHECK_OK(submit_mv(b, mv(w, x, y)));
    bt_sync(b);
    const double total = bt_now_s() - t0;
    const backend_stats s = bt_stats(b);
    printf("overlap: copy busy %.3f s, compute 0.150 s, wall %.3f s\n", s.copy_busy_s, total);
    SW_CHECK(s.copy_busy_s > 0.12, "the copy was not throttled (busy %.3f s)", s.copy_busy_s);
    SW_CHECK(total < s.copy_busy_s + 0.15 - 0.075, "copy and compute overlapped less than half "
             "the compute (wall %.3f s, copy %.3f s)", total, s.copy_busy_s);
    b->vt->free(b, y), b->vt->free(b, x), b->vt->free(b, w), b->vt->free(b, big);
    backend_destroy(b);
    free(src);
}

/* Destroy with seconds of throttled copies and slow ops queued, buffers
 * still allocated: drops the work, joins, frees everything, promptly. ASan
 * checks for leaks and for work touching freed memory. */
static void test_destroy_in_flight(void) {
    const uint64_t n = 4 * BT_MIB;
    uint8_t *src = bt_malloc(n);
    memset(src, 9, n);
    for (int r = 0; r < 2; r++) {
        backend_test_hooks slow = {.op_delay_s = 0.2};
        backend *b = bt_sim(n, r == 0 ? 20e6 : 0.0, &slow);
        if (b == NULL)
            break;
        float ones[64] = {0};
        backend_buf *dst = NULL, *w = bt_upload(b, ones, 256, "w"), *x = bt_upload(b, ones, 32, "x");
        SW_CHECK_OK(b->vt->alloc(b, n - 4096, "dst", &dst));
        for (int i = 0; i < 8; i++)
            SW_CHECK_OK(b->vt->copy_h2d(b, BQ_COPY, at(dst), src, n - 4096));
        for (int i = 0; i < 8; i++)
            SW_CHECK_OK(submit_mv(b, mv(w, x, x)));
        const double t0 = bt_now_s();
        backend_destroy(b);
        const double took = bt_now_s() - t0;
        SW_CHECK(took < 0.5, "destroy with work in flight took %.3f s", took);
    }
    free(src);
}

static void test_fail_op(void) {
    backend_test_hooks hooks = {.fail_op_at = 2};
    backend *b = bt_sim(1 << 20, 0, &hooks);
    if (b == NULL)
        return;
    float ones[64] = {0};
    backend_buf *w = bt_upload(b, ones, 256, "w"), *x = bt_upload(b, ones, 32, "x");
    SW_CHECK_OK(submit_mv(b, mv(w, x, x)));
    SW_CHECK(submit_mv(b, mv(w, x, x)) == SW_ERR_DEVICE &&
             strstr(sw_last_error(), "injected") != NULL, "the 2nd op must be refused");
    SW_CHECK_OK(submit_mv(b, mv(w, x, x)));
    bt_sync(b);
    b->vt->free(b, x), b->vt->free(b, w);
    backend_destroy(b);
}

int main(void) {
    SW_CHECK_OK(cpu_pool_create(BT_THREADS, &bt_pool));
    if (bt_pool == NULL)
        return sw_check_finish("test_sim_queues");
    test_asynchronous();
    test_copy_order();
    test_events();
    test_compute_waits_for_copy();
    test_race_check();
    test_queue_full();
    test_throttle(200e6);
    test_throttle(1e9);
    test_overlap();
    test_destroy_in_flight();
    test_fail_op();
    cpu_pool_destroy(bt_pool);
    return sw_check_finish("test_sim_queues");
}
