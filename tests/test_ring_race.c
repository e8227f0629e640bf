/*
 * test_ring_race.c — the ring of streamed layers on an asynchronous device
 * (the sim, with every op made slow so the compute queue lags far behind
 * the host), on the tiny Gemma 3 model (7 layers streamed through 2 slots):
 *   - the ring logic this engine replaced (refill a slot as soon as the ops
 *     reading it are queued) is caught by the sim's race check: the forward
 *     fails with SW_ERR_DEVICE naming the ring slot that was overwritten.
 *     The test rebuilds that logic from outside, with no knob in the ring:
 *     it has the device ignore copy-queue waits, and the ring's refills
 *     (ring.c's ring_fill) are the only copy-queue waits the engine queues;
 *   - the ring as built (refill behind an event recorded after the slot's
 *     last reader) passes, bit-identical to the cpu backend, with the block
 *     entry and per op;
 *   - a pass that fails midway (an op refused by injection, at several
 *     points) leaves the engine usable: the ring is reset and the same
 *     tokens then give the reference logits.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "runtime/launch.h"

#define N_PROMPT 12
#define N_DECODE 3

static int32_t prompt[N_PROMPT];

static sw_plan_options options(const char *backend_name) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = backend_name;
    o.n_threads = 2;
    o.n_ctx = 64;
    o.n_batch = 5;
    o.device_mem_bytes = 64ull << 20;
    o.host_mem_bytes = 4ull << 30;
    o.place = !strcmp(backend_name, "sim") ? "all=streamed,lm_head=host" : NULL;
    return o;
}

/* Prompt (all logits) then greedy steps into out; returns the status. */
static sw_status generate(sw_engine *e, uint32_t V, float *out) {
    sw_session *s = NULL;
    sw_status st = sw_session_create(e, &s);
    if (st == SW_OK)
        st = sw_session_eval(s, prompt, N_PROMPT, out, 1);
    for (int i = 0; st == SW_OK && i < N_DECODE; i++) {
        const float *last = out + (size_t)(N_PROMPT - 1 + i) * V;
        int32_t best = 0;
        for (uint32_t v = 1; v < V; v++)
            best = last[v] > last[best] ? (int32_t)v : best;
        st = sw_session_eval(s, &best, 1, out + (size_t)(N_PROMPT + i) * V, 0);
    }
    sw_session_destroy(s);
    return st;
}

/* The device as the old ring saw it: its copy queue never waits, so a
 * refill lands while the ops that read the slot may still be queued. */
static const backend_vtable *real_vtable;
static backend_vtable no_copy_waits;

static sw_status queue_wait_but_copies(backend *b, backend_queue q, backend_event *ev) {
    return q == BQ_COPY ? SW_OK : real_vtable->queue_wait(b, q, ev);
}

static void drop_copy_waits(backend *d) {
    real_vtable = d->vt;
    no_copy_waits = *d->vt;
    no_copy_waits.queue_wait = queue_wait_but_copies;
    d->vt = &no_copy_waits;
}

/* Runs generate() on an engine planned for backend `be`; with
 * unsafe_reuse, its device drops copy-queue waits (the old ring). */
static sw_status run(const sw_model *m, const char *be, const engine_hooks *hooks,
                     bool unsafe_reuse, uint32_t V, float *out, char *msg, size_t cap) {
    sw_plan_options o = options(be);
    sw_engine *e = NULL;
    sw_status st = runtime_launch(m, &o, NULL, hooks, &e);
    if (st == SW_OK) {
        SW_CHECK(!strcmp(be, "cpu") || e->ring.n_streamed == e->config.n_layer,
                 "expected every layer streamed");
        if (unsafe_reuse && e->device != NULL)
            drop_copy_waits(e->device);
        st = generate(e, V, out);
    }
    snprintf(msg, cap, "%s", st == SW_OK ? "" : sw_last_error());
    sw_engine_destroy(e);
    return st;
}

static void test_race(const sw_model *m, uint32_t V, const float *ref, float *got) {
    char msg[512];
    engine_hooks slow = {.backend = {.op_delay_s = 0.005}};
    sw_status st = run(m, "sim", &slow, true, V, got, msg, sizeof msg);
    SW_CHECK(st == SW_ERR_DEVICE && strstr(msg, "ring slot") && strstr(msg, "overwritten"),
             "the old ring logic was not caught (%s): %s", sw_status_name(st), msg);
    printf("old ring logic: %s: %s\n", sw_status_name(st), msg);
    for (int per_op = 0; per_op < 2; per_op++) {
        engine_hooks now = {.backend = {.op_delay_s = 0.005, .per_op = per_op != 0}};
        st = run(m, "sim", &now, false, V, got, msg, sizeof msg);
        SW_CHECK(st == SW_OK, "the ring (%s) failed the race check: %s",
                 per_op ? "per op" : "block entry", msg);
        size_t bytes = (size_t)(N_PROMPT + N_DECODE) * V * sizeof(float);
        SW_CHECK(st != SW_OK || !memcmp(got, ref, bytes), "ring (%s): logits differ from cpu",
                 per_op ? "per op" : "block entry");
        printf("ring with events (%s): %s, bit-identical to cpu\n",
               per_op ? "per op" : "block entry", st == SW_OK ? "passes" : "FAILS");
    }
}

/* A forward that fails midway, then the same tokens again. */
static void test_failed_pass(const sw_model *m, uint32_t V, const float *ref, float *got) {
    sw_plan_options o = options("sim");
    const size_t bytes = (size_t)N_PROMPT * V * sizeof(float);
    int recovered = 0;
    for (uint64_t k = 2; k <= 9; k++) {
        engine_hooks h = {.backend = {.fail_op_at = k}};
        sw_engine *e = NULL;
        sw_session *s = NULL;
        SW_CHECK_OK(runtime_launch(m, &o, NULL, &h, &e));
        if (e == NULL || sw_session_create(e, &s) != SW_OK)
            break;
        sw_status st = sw_session_eval(s, prompt, N_PROMPT, got, 1);
        SW_CHECK(st == SW_ERR_DEVICE && strstr(sw_last_error(), "injected"),
                 "fault at op %llu: %s", (unsigned long long)k, sw_status_name(st));
        SW_CHECK(sw_session_pos(s) < N_PROMPT, "a failed pass advanced the session");
        SW_CHECK_OK(sw_session_truncate(s, 0));
        st = sw_session_eval(s, prompt, N_PROMPT, got, 1);
        SW_CHECK(st == SW_OK && !memcmp(got, ref, bytes), "after a fault at op %llu the same "
                 "tokens gave %s / other logits", (unsigned long long)k, sw_status_name(st));
        recovered += st == SW_OK && !memcmp(got, ref, bytes);
        sw_session_destroy(s);
        sw_engine_destroy(e);
    }
    printf("failed passes: %d of 8 recovered with identical logits\n", recovered);
}

int main(void) {
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    if (m == NULL)
        return sw_check_finish("test_ring_race");
    uint32_t V = (uint32_t)sw_vocab_size(m);
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = (int32_t)((5 + 11 * i * i + 3 * i) % (V - 2)) + 2;
    const size_t n = (size_t)(N_PROMPT + N_DECODE) * V;
    float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    char msg[512];
    if (ref != NULL && got != NULL) {
        SW_CHECK_OK(run(m, "cpu", NULL, false, V, ref, msg, sizeof msg));
        test_race(m, V, ref, got);
        test_failed_pass(m, V, ref, got);
    }
    free(ref);
    free(got);
    sw_model_close(m);
    return sw_check_finish("test_ring_race");
}
