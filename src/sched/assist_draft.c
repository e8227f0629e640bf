/*
 * assist_draft.c — drafts from a Gemma 4 assistant (spec.h): each step
 * batches every lane still drafting into one engine_assist_step; a lane's
 * first step starts from its last token and the hidden row the target's
 * forward gave for it, later ones from its previous draft and the hidden
 * row the assistant gave back. Drafts are greedy or, for a sampled
 * request, drawn from the assistant's distribution under the request's
 * sampling (the q rows rejection sampling needs). Buffers are sized at
 * creation.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/assist.h"
#include "sched/spec.h"
#include "util/error.h"

struct spec_assist {
    engine_assist *ea;
    uint32_t n_lanes, n_embd, n_vocab, cap;
    float *rows;          /* (cap, n_embd) the target's hidden rows of a forward */
    float *kept;          /* (n_lanes, n_embd) each lane's */
    float *next;          /* (n_lanes, n_embd) the assistant's, step to step */
    float *cur;           /* (n_lanes, n_embd) this step's inputs */
    float *logits;        /* (n_lanes, n_vocab) */
    assist_row *in;       /* (n_lanes) */
    uint32_t *which;      /* (n_lanes) the spec_lane of each row */
};

sw_status spec_assist_create(sw_engine *target, const sw_model *assistant, uint32_t n_lanes,
                             spec_assist **out) {
    *out = NULL;
    spec_assist *a = calloc(1, sizeof *a);
    if (a == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant");
    sw_status st = engine_assist_create(target, assistant, n_lanes, &a->ea);
    if (st != SW_OK) {
        free(a);
        return st;
    }
    a->n_lanes = n_lanes;
    a->n_embd = engine_assist_n_embd(a->ea);
    a->n_vocab = engine_assist_n_vocab(a->ea);
    a->cap = sw_engine_max_tokens(target);
    const size_t H = a->n_embd;
    a->rows = calloc((size_t)a->cap * H, sizeof *a->rows);
    a->kept = calloc(n_lanes * H, sizeof *a->kept);
    a->next = malloc(n_lanes * H * sizeof *a->next);
    a->cur = malloc(n_lanes * H * sizeof *a->cur);
    a->logits = malloc((size_t)n_lanes * a->n_vocab * sizeof *a->logits);
    a->in = malloc(n_lanes * sizeof *a->in);
    a->which = malloc(n_lanes * sizeof *a->which);
    if (a->rows == NULL || a->kept == NULL || a->next == NULL || a->cur == NULL ||
        a->logits == NULL || a->in == NULL || a->which == NULL) {
        spec_assist_destroy(a);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the assistant's %u lanes",
                         n_lanes);
    }
    *out = a;
    return SW_OK;
}

void spec_assist_destroy(spec_assist *a) {
    if (a == NULL)
        return;
    engine_assist_destroy(a->ea);
    free(a->rows);
    free(a->kept);
    free(a->next);
    free(a->cur);
    free(a->logits);
    free(a->in);
    free(a->which);
    free(a);
}

float *spec_assist_hidden_rows(spec_assist *a) {
    return a->rows;
}

void spec_assist_keep(spec_assist *a, uint32_t lane, uint32_t row) {
    if (lane < a->n_lanes && row < a->cap)
        memcpy(a->kept + (size_t)lane * a->n_embd, a->rows + (size_t)row * a->n_embd,
               a->n_embd * sizeof *a->kept);
}

sw_status spec_assist_draft(spec_assist *a, spec_lane *l, uint32_t n) {
    if (n > a->n_lanes)
        return sw_errorf(SW_ERR_ARG, "internal: %u lanes to draft for, room for %u", n,
                         a->n_lanes);
    const size_t H = a->n_embd;
    uint32_t m = n; /* lanes still drafting: which[r] for row r of cur */
    for (uint32_t i = 0; i < n; i++) {
        a->which[i] = i;
        memcpy(a->cur + i * H, a->kept + (size_t)l[i].lane * H, H * sizeof *a->cur);
    }
    for (uint32_t j = 0;; j++) {
        uint32_t kept = 0;
        for (uint32_t r = 0; r < m; r++) {
            const uint32_t i = a->which[r];
            if (j >= l[i].k)
                continue;
            if (kept != r)
                memmove(a->cur + kept * H, a->cur + r * H, H * sizeof *a->cur);
            a->which[kept] = i;
            a->in[kept] = (assist_row){.session = l[i].session,
                                       .token = j == 0 ? l[i].toks[l[i].n_toks - 1]
                                                       : l[i].out[j - 1],
                                       .hidden = a->cur + kept * H};
            kept++;
        }
        if ((m = kept) == 0)
            return SW_OK;
        SW_TRY(engine_assist_step(a->ea, a->in, m, a->logits, a->next));
        for (uint32_t r = 0; r < m; r++) {
            spec_lane *x = &l[a->which[r]];
            const float *lg = a->logits + (size_t)r * a->n_vocab;
            x->out[j] = x->q != NULL ? spec_sample_draft(x->sampler, lg, a->n_vocab,
                                                         x->q + (size_t)j * a->n_vocab)
                                     : sw_sampler_sample(x->sampler, lg);
        }
        memcpy(a->cur, a->next, (size_t)m * H * sizeof *a->cur);
    }
}
