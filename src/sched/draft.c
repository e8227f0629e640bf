/*
 * draft.c — where drafts come from (spec.h):
 *   - n-grams: the sequence's longest recent suffix that occurred before,
 *     continued as it went on then (llama.cpp's lookup decoding). No
 *     model; it pays on edits, summaries, code and chat that quotes.
 *   - a draft model: a second engine (its own plan, KV and sequences, one
 *     per lane) with the target's vocabulary. Each draft first catches up
 *     on the target's tokens it has not seen (a new prompt in chunks of
 *     its forward size, then a token or two per verify), then generates k
 *     tokens, greedy or sampled as the request samples; the lanes share
 *     each of its forwards.
 * Nothing here allocates per token: buffers are sized at creation.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/spec.h"
#include "util/error.h"

uint32_t spec_ngram_draft(const int32_t *toks, size_t n, uint32_t n_min, uint32_t n_max,
                          uint32_t k, int32_t *out) {
    for (uint32_t len = n_max; len >= n_min && len > 0; len--) {
        if (len >= n)
            continue;
        const int32_t *suffix = toks + n - len;
        /* latest earlier occurrence, so the continuation is the freshest */
        for (size_t at = n - len; at-- > 0;) {
            if (memcmp(toks + at, suffix, len * sizeof *toks) != 0)
                continue;
            /* copied on into its own drafts past the end: a text that
             * repeats with a short period drafts whole periods */
            uint32_t m = 0;
            for (size_t j = at + len; m < k; j++, m++)
                out[m] = j < n ? toks[j] : out[j - n];
            return m;
        }
    }
    return 0;
}

/* ---- a draft model --------------------------------------------------------- */

struct spec_model {
    sw_engine *engine;
    uint32_t n_lanes, n_vocab, cap, per_seq;
    sw_session **session;        /* (n_lanes) */
    size_t *pos;                 /* (n_lanes) target tokens its sequence holds */
    sw_batch_item *items;        /* (cap) */
    int32_t *row;                /* (n_lanes) each lane's row of logits, -1: none */
    float *logits;               /* (cap, n_vocab) */
};

/* The draft must read and write the target's token ids: same count, same
 * pieces. */
static sw_status same_vocab(const sw_model *draft, uint32_t nd, const sw_model *target,
                            uint32_t nt) {
    char a[256], b[256];
    size_t la = 0, lb = 0;
    if (nd != nt)
        return sw_errorf(SW_ERR_ARG, "the draft model's vocabulary has %u tokens, the "
                         "target's %u: a draft model must share the target's vocabulary",
                         nd, nt);
    for (uint32_t id = 0; id < nt; id++) {
        sw_status sa = sw_token_to_piece(draft, (int32_t)id, a, sizeof a, &la);
        sw_status sb = sw_token_to_piece(target, (int32_t)id, b, sizeof b, &lb);
        if (sa != sb || (sa == SW_OK && (la != lb || memcmp(a, b, la < sizeof a ? la : sizeof a))))
            return sw_errorf(SW_ERR_ARG, "the draft model's token %u differs from the "
                             "target's: a draft model must share the target's vocabulary",
                             id);
    }
    return SW_OK;
}

sw_status spec_model_create(sw_engine *engine, const sw_model *model, const sw_model *target,
                            uint32_t target_vocab, uint32_t n_lanes, spec_model **out) {
    *out = NULL;
    if (sw_engine_n_seq(engine) < n_lanes || sw_engine_max_tokens(engine) < n_lanes)
        return sw_errorf(SW_ERR_ARG, "the draft model's engine has %u sequences; the target "
                         "runs %u: plan the draft with as many (-np)",
                         sw_engine_n_seq(engine), n_lanes);
    SW_TRY(same_vocab(model, sw_engine_n_vocab(engine), target, target_vocab));
    spec_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the draft model");
    m->engine = engine;
    m->n_vocab = sw_engine_n_vocab(engine);
    m->cap = sw_engine_max_tokens(engine);
    m->per_seq = sw_engine_n_batch(engine);
    m->session = calloc(n_lanes, sizeof *m->session);
    m->pos = calloc(n_lanes, sizeof *m->pos);
    m->items = calloc(m->cap, sizeof *m->items);
    m->row = calloc(n_lanes, sizeof *m->row);
    m->logits = malloc((size_t)m->cap * m->n_vocab * sizeof *m->logits);
    sw_status st = SW_OK;
    if (m->session == NULL || m->pos == NULL || m->items == NULL || m->row == NULL ||
        m->logits == NULL)
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the draft model's %u "
                       "sequences", n_lanes);
    for (uint32_t i = 0; st == SW_OK && i < n_lanes; i++, m->n_lanes = i)
        st = sw_session_create(engine, &m->session[i]);
    if (st != SW_OK) {
        spec_model_destroy(m);
        return st;
    }
    *out = m;
    return SW_OK;
}

void spec_model_destroy(spec_model *m) {
    if (m == NULL)
        return;
    for (uint32_t i = 0; m->session != NULL && i < m->n_lanes; i++)
        sw_session_destroy(m->session[i]);
    free(m->session);
    free(m->pos);
    free(m->items);
    free(m->row);
    free(m->logits);
    free(m);
}

uint32_t spec_model_max_draft(const spec_model *m) {
    return m->per_seq;
}


/* One forward of the draft model over m->items[0..n); rows with logits
 * land in m->logits in item order. */
static sw_status run(spec_model *m, uint32_t n) {
    return sw_engine_eval_batch(m->engine, m->items, n, m->logits);
}

/* Cuts lane s's draft sequence back to pos (what still agrees with the
 * target): from the start when the rewind is longer than its
 * sliding-window layers keep. */
static sw_status rewind_to(spec_model *m, uint32_t s, size_t pos) {
    m->pos[s] = pos;
    if (sw_session_truncate(m->session[s], (uint32_t)pos) == SW_OK)
        return SW_OK;
    m->pos[s] = 0;
    return sw_session_truncate(m->session[s], 0);
}

sw_status spec_model_reset_lane(spec_model *m, uint32_t lane, size_t keep) {
    return m->pos[lane] > keep ? rewind_to(m, lane, keep) : SW_OK;
}

/* Brings every lane's draft sequence to all but the target's last token,
 * in forwards of whole chunks; then one forward of every lane's last
 * token, whose logits are row i for lane i. */
static sw_status catch_up(spec_model *m, const spec_lane *l, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const size_t before_last = l[i].n_toks - 1;
        if (m->pos[l[i].lane] > before_last)
            SW_TRY(rewind_to(m, l[i].lane, before_last));
    }
    for (;;) {
        uint32_t t = 0;
        for (uint32_t i = 0; i < n && t < m->cap; i++) {
            const uint32_t s = l[i].lane;
            const size_t left = l[i].n_toks - 1 - m->pos[s];
            size_t take = left < m->per_seq ? left : m->per_seq;
            take = take < m->cap - t ? take : m->cap - t;
            for (size_t j = 0; j < take; j++)
                m->items[t++] = (sw_batch_item){m->session[s], l[i].toks[m->pos[s] + j], 0};
            m->pos[s] += take;
        }
        if (t == 0)
            break;
        SW_TRY(run(m, t));
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t s = l[i].lane;
        m->items[i] = (sw_batch_item){m->session[s], l[i].toks[l[i].n_toks - 1], 1};
        m->row[i] = (int32_t)i;
        m->pos[s]++;
    }
    return run(m, n);
}

/* Draft j of every lane from its row of logits; then, while any lane
 * wants more, one forward of each such lane's newest draft. */
sw_status spec_model_draft(spec_model *m, spec_lane *l, uint32_t n) {
    if (n > m->n_lanes)
        return sw_errorf(SW_ERR_ARG, "internal: %u lanes to draft for, %u sequences", n,
                         m->n_lanes);
    SW_TRY(catch_up(m, l, n));
    for (uint32_t j = 0;; j++) {
        uint32_t t = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (m->row[i] < 0)
                continue;
            const float *lg = m->logits + (size_t)m->row[i] * m->n_vocab;
            l[i].out[j] = l[i].q != NULL ? spec_sample_draft(l[i].sampler, lg, m->n_vocab,
                                                             l[i].q + (size_t)j * m->n_vocab)
                                         : sw_sampler_sample(l[i].sampler, lg);
        }
        for (uint32_t i = 0; i < n; i++) {
            m->row[i] = -1;
            if (j + 1 >= l[i].k)
                continue;
            const uint32_t s = l[i].lane;
            m->items[t] = (sw_batch_item){m->session[s], l[i].out[j], 1};
            m->row[i] = (int32_t)t++;
            m->pos[s]++;
        }
        if (t == 0)
            return SW_OK;
        SW_TRY(run(m, t));
    }
}

sw_status spec_model_accept(spec_model *m, uint32_t lane, size_t n_toks_before, uint32_t k,
                            uint32_t accepted) {
    /* it evaluated the target's tokens and drafts 1..k-1 */
    const size_t keep = n_toks_before + (accepted < k - 1 ? accepted : k - 1);
    return m->pos[lane] > keep ? rewind_to(m, lane, keep) : SW_OK;
}
