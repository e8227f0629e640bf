/*
 * precision_util.c — shared helpers of the precision tests (see the header).
 */
#include "precision_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plan/catalog.h"

sw_plan_options prec_options(const char *backend_name, uint64_t device_mem, uint32_t n_ctx,
                             uint32_t n_batch, const char *kv, const char *weights) {
    sw_plan_options o = sw_plan_options_default();
    o.n_threads = 2;
    o.n_ctx = n_ctx;
    o.n_batch = n_batch;
    o.backend = backend_name;
    o.device_mem_bytes = device_mem;
    o.kv_type = kv;
    o.weights = weights;
    /* These tests measure what weight and KV rounding do, so the host's
     * matmuls keep f32 activations (8-bit ones are test_forward_golden's
     * second pass). */
    o.cpu_dots = "f32";
    return o;
}

static void record_plan(const sw_engine *e, prec_run *r) {
    const plan *p = e->plan;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        r->n_resident += p->layer_place[il] == PLACE_RESIDENT;
        r->n_streamed += p->layer_place[il] == PLACE_STREAMED;
        r->n_host += p->layer_place[il] == PLACE_HOST;
    }
    r->stream_pinned = p->stream_pinned && r->n_streamed > 0;
    r->streams_from_pinned = r->n_streamed > 0;
    uintptr_t lo = (uintptr_t)e->hw.pinned.ptr, n = (uintptr_t)e->hw.pinned.bytes;
    for (uint32_t il = 0; il < e->config.n_layer; il++) {
        if (p->layer_place[il] != PLACE_STREAMED)
            continue;
        for (uint32_t i = 0; i < e->packs[il].n_items; i++) {
            uintptr_t src = (uintptr_t)e->packs[il].items[i].src;
            r->streams_from_pinned = r->streams_from_pinned && src >= lo && src - lo < n;
        }
    }
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const plan_buffer *b = &p->buffers[i];
        if (b->kind == BUF_KV && b->tier == TIER_DEVICE)
            r->plan_kv_device_bytes += b->bytes;
        if (b->kind == BUF_CONVERTED || b->kind == BUF_STAGING)
            r->plan_converted_bytes += b->bytes;
    }
    r->weights_bytes = plan_model_total_bytes(&p->model);
    r->stored_bytes = p->model.convert != PLAN_CONVERT_NONE ? p->model.stored_bytes : r->weights_bytes;
    r->n_converted = p->model.n_converted;
    r->n_kept = p->model.n_kept;
    sw_engine_report(e, &r->rep);
}

prec_run prec_run_prompt(const sw_model *m, const sw_plan_options *o, const int32_t *ids,
                         uint32_t n, uint32_t n_decode) {
    prec_run r;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    memset(&r, 0, sizeof r);
    r.st = sw_engine_launch(m, o, NULL, &e);
    if (r.st != SW_OK)
        return r;
    r.n_vocab = sw_engine_n_vocab(e);
    r.n_tokens = n + n_decode;
    r.logits = malloc((size_t)r.n_tokens * r.n_vocab * sizeof(float));
    SW_CHECK_OK(sw_session_create(e, &s));
    if (r.logits != NULL && s != NULL) {
        SW_CHECK_OK(sw_session_eval(s, ids, n, r.logits, 1));
        for (uint32_t i = 0; i < n_decode; i++) {
            float *prev = r.logits + (size_t)(n - 1 + i) * r.n_vocab;
            int32_t next = prec_argmax(prev, r.n_vocab);
            SW_CHECK_OK(sw_session_eval(s, &next, 1, prev + r.n_vocab, 0));
        }
    }
    record_plan(e, &r);
    sw_session_destroy(s);
    sw_engine_destroy(e);
    return r;
}

void prec_run_free(prec_run *r) {
    free(r->logits);
    r->logits = NULL;
}

int32_t prec_argmax(const float *x, uint32_t n) {
    int32_t b = 0;
    for (uint32_t i = 1; i < n; i++)
        b = x[i] > x[b] ? (int32_t)i : b;
    return b;
}

void prec_compare(const float *a, const float *b, uint32_t n_rows, uint32_t n_vocab,
                  prec_diff *d) {
    memset(d, 0, sizeof *d);
    d->n_rows = n_rows;
    for (uint32_t t = 0; t < n_rows; t++) {
        const float *x = a + (size_t)t * n_vocab, *y = b + (size_t)t * n_vocab;
        double scale = 0, row = 0;
        for (uint32_t v = 0; v < n_vocab; v++) {
            scale = fmax(scale, fabs((double)x[v]));
            row = fmax(row, fabs((double)y[v] - x[v]));
        }
        d->max_abs = fmax(d->max_abs, row);
        d->max_rel = fmax(d->max_rel, row / fmax(scale, 1e-30));
        d->same_argmax += prec_argmax(x, n_vocab) == prec_argmax(y, n_vocab);
    }
}
