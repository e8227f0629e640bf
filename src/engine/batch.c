/*
 * batch.c — sequences and batches. A session owns one of the engine's
 * n_seq sequences (its KV rows and its position). A batch is a list of
 * (session, token, wants logits) items: each session's items take its next
 * positions in order; one forward runs them all, whatever mix of prefill
 * chunks and decode steps they are. sw_session_eval is a batch of one
 * session, cut into chunks of n_batch.
 *
 * Limits, checked before anything runs: at most n_tok items per forward
 * (the activations are sized for that) and at most n_batch per session (a
 * sliding-window layer's ring holds window + n_batch - 1 rows, so a chunk
 * never overwrites a key one of its own queries needs). Timing is recorded
 * for --report: a forward in which every session has one token is decode.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"
#include "util/error.h"
#include "util/clock.h"


sw_status sw_session_create(sw_engine *e, sw_session **out) {
    if (e == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_session_create: NULL argument");
    *out = NULL;
    uint32_t slot = 0;
    while (slot < e->n_seq && e->seqs[slot].owner != NULL)
        slot++;
    if (slot == e->n_seq)
        return sw_errorf(SW_ERR_ARG, "all %u sequences of this engine are in use (its KV cache "
                         "is planned for %u: -np %u); destroy a session or plan more", e->n_seq,
                         e->n_seq, e->n_seq + 1);
    sw_session *s = calloc(1, sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory creating a session");
    s->engine = e;
    s->slot = slot;
    e->seqs[slot] = (engine_seq){.owner = s, .pos = 0};
    *out = s;
    return SW_OK;
}

void sw_session_destroy(sw_session *s) {
    if (s == NULL)
        return;
    s->engine->seqs[s->slot].owner = NULL;
    free(s);
}

void sw_session_set_progress(sw_session *s, sw_progress_fn fn, void *user) {
    if (s == NULL)
        return;
    s->progress = fn;
    s->progress_user = user;
}

uint32_t sw_session_pos(const sw_session *s) { return s ? s->engine->seqs[s->slot].pos : 0; }

sw_status sw_session_truncate(sw_session *s, uint32_t pos) {
    if (s == NULL || pos > sw_session_pos(s))
        return sw_errorf(SW_ERR_ARG, "cannot truncate the session to position %u", pos);
    sw_engine *e = s->engine;
    engine_seq *q = &e->seqs[s->slot];
    /* A sliding-window layer's ring (W + n_batch - 1 rows) has overwritten
     * positions still needed once more than n_batch tokens are dropped;
     * starting over (pos 0) needs none of them. */
    bool has_ring = false;
    for (uint32_t k = 0; k <= e->n_stages; k++) { /* every stage's layers */
        const sw_engine *st = k ? e->stages[k - 1] : e;
        for (uint32_t il = 0; il < st->config.n_layer; il++)
            has_ring = has_ring || st->kv[il].ring != 0;
    }
    if (pos > 0 && has_ring && q->pos - pos > e->n_batch)
        return sw_errorf(SW_ERR_ARG, "cannot rewind %u tokens (at most %u with sliding-window "
                         "layers, or to 0); start a new session", q->pos - pos, e->n_batch);
    q->pos = pos;
    return SW_OK;
}

/* Checks every item before anything runs; counts tokens per session. */
static sw_status check_batch(sw_engine *e, const sw_batch_item *items, size_t n,
                             uint32_t *n_out) {
    const uint32_t V = e->config.n_vocab;
    if (n == 0 || n > e->n_tok)
        return sw_errorf(SW_ERR_ARG, "a batch of %zu tokens (1..%u fit one forward; raise -b "
                         "or -np)", n, e->n_tok);
    for (size_t i = 0; i < n; i++)
        if (items[i].session != NULL && items[i].session->engine == e)
            e->seqs[items[i].session->slot].in_batch = 0;
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        const sw_batch_item *it = &items[i];
        if (it->session == NULL || it->session->engine != e)
            return sw_errorf(SW_ERR_ARG, "batch item %zu: the session is not this engine's", i);
        if (it->token < 0 || (uint32_t)it->token >= V)
            return sw_errorf(SW_ERR_ARG, "token id %d is outside the vocabulary (0..%u)",
                             it->token, V - 1);
        engine_seq *q = &e->seqs[it->session->slot];
        if (++q->in_batch > e->n_batch)
            return sw_errorf(SW_ERR_ARG, "batch item %zu: more than %u tokens of one sequence "
                             "in one forward (-b)", i, e->n_batch);
        if (q->pos + q->in_batch > e->n_ctx)
            return sw_errorf(SW_ERR_ARG, "context full: position %u is past the context of %u "
                             "tokens (raise -c or shorten the prompt)", q->pos + q->in_batch - 1,
                             e->n_ctx);
        *n_out += it->logits != 0;
    }
    return SW_OK;
}

/* Writes ids, positions, sequences and logit rows into the host arrays. */
static void write_meta(sw_engine *e, const sw_batch_item *items, size_t n) {
    int32_t *ids = engine_host_meta(e, e->act.ids), *pos = engine_host_meta(e, e->act.pos);
    int32_t *seq = engine_host_meta(e, e->act.seq), *rows = engine_host_meta(e, e->act.out_rows);
    uint32_t n_out = 0;
    for (size_t i = 0; i < n; i++)
        e->seqs[items[i].session->slot].in_batch = 0;
    for (size_t i = 0; i < n; i++) {
        engine_seq *q = &e->seqs[items[i].session->slot];
        ids[i] = items[i].token;
        pos[i] = (int32_t)(q->pos + q->in_batch++);
        seq[i] = (int32_t)items[i].session->slot;
        if (items[i].logits)
            rows[n_out++] = (int32_t)i;
    }
}

sw_status sw_engine_eval_batch(sw_engine *e, const sw_batch_item *items, size_t n,
                               float *logits) {
    uint32_t n_out = 0;
    if (e == NULL || (items == NULL && n > 0))
        return sw_errorf(SW_ERR_ARG, "sw_engine_eval_batch: NULL argument");
    sw_status st = check_batch(e, items, n, &n_out);
    if (st != SW_OK)
        return st;
    if (n_out > 0 && logits == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_eval_batch: %u items want logits but there is "
                         "no buffer", n_out);
    write_meta(e, items, n);
    const double t0 = sw_clock_s();
    if ((st = engine_forward(e, (uint32_t)n, n_out, logits)) != SW_OK)
        return st;
    const double dt = sw_clock_s() - t0;
    bool decode = true;
    for (size_t i = 0; i < n; i++) {
        engine_seq *q = &e->seqs[items[i].session->slot];
        decode = decode && q->in_batch == 1;
        q->pos += q->in_batch;
        q->in_batch = 0;
    }
    if (decode) {
        e->decode_s += dt;
        e->n_decode_tokens += n;
    } else {
        e->prefill_s += dt;
        e->n_prefill_tokens += n;
    }
    return SW_OK;
}

sw_status sw_session_eval(sw_session *s, const int32_t *ids, size_t n, float *logits,
                          int all_logits) {
    if (s == NULL || (ids == NULL && n > 0))
        return sw_errorf(SW_ERR_ARG, "sw_session_eval: NULL argument");
    sw_engine *e = s->engine;
    uint32_t pos = sw_session_pos(s);
    if (n > e->n_ctx - pos)
        return sw_errorf(SW_ERR_ARG, "%zu tokens do not fit: %u of the %u-token context are "
                         "used, %u free (raise -c or shorten the prompt)", n, pos, e->n_ctx,
                         e->n_ctx - pos);
    const uint32_t V = e->config.n_vocab;
    for (size_t done = 0; done < n;) {
        uint32_t chunk = (uint32_t)(n - done < e->n_batch ? n - done : e->n_batch);
        bool last = done + chunk == n;
        float *out = NULL;
        for (uint32_t i = 0; i < chunk; i++)
            e->items[i] = (sw_batch_item){s, ids[done + i],
                                          logits != NULL && (all_logits || (last && i + 1 == chunk))};
        if (logits != NULL && all_logits)
            out = logits + done * V;
        else if (logits != NULL && last)
            out = logits;
        sw_status st = sw_engine_eval_batch(e, e->items, chunk, out);
        if (st != SW_OK)
            return st;
        done += chunk;
        if (s->progress)
            s->progress(s->progress_user, done, n);
    }
    return SW_OK;
}
