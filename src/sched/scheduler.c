/*
 * scheduler.c — continuous batching over one engine (spillway.h's
 * sw_scheduler): lanes are the engine's sequences; a step admits queued
 * requests into free lanes, builds one forward (decode tokens first, then
 * prompt chunks), runs it with the lock released, then samples every row
 * that asked for logits, in item order, with its request's own sampler.
 * Nothing per token is allocated: items, owners and logits are sized once
 * for the largest forward.
 *
 * A request is freed when it has ended and its caller released it; one
 * released while running is cancelled and freed at the next step (the
 * forward in flight may still name it).
 *
 * Speculative decoding (spec.h): a decoding lane may put k drafts behind
 * its last token in the forward; its k+1 rows are verified together, the
 * agreeing prefix plus one token are output, and its sequence is rewound
 * over the rest. Each lane keeps its sequence's tokens for the drafters.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/assist.h"
#include "grammar/grammar.h"
#include "sched/spec.h"
#include "sched/stop.h"
#include "sched/token_lp.h"
#include "util/bytebuf.h"
#include "util/clock.h"
#include "util/error.h"

enum { MAX_STOP = 16, MAX_STOP_LEN = 1024 };

/* A draft sampler's seed: the request's, moved off its own stream. */
#define DRAFT_SEED_MIX 0x9E3779B97F4A7C15ull

struct sw_request {
    int32_t *prompt;
    size_t n_prompt, n_fed, n_generated;
    long n_predict;
    sw_sampler_options sampling;
    char *stop[MAX_STOP];
    size_t n_stop, stop_max_len;
    sw_token_fn on_token;
    void *user;
    bool keep;                   /* keep_sequence */
    struct lane *held;           /* ended, keeping this lane's sequence */
    sw_request_state state;
    sw_finish finish;
    sw_session *session;         /* while running */
    sw_sampler *sampler;         /* while running */
    int32_t last;                /* sampled, not yet evaluated */
    sw_bytebuf text;
    bool cancelled, released;
    sw_finish cancel_as;         /* how a cancelled running request ends */
    int draft_max;               /* drafts per verify; -1: the scheduler's */
    token_lps lp;                /* output tokens' log-probabilities (logprobs >= 0) */
    gmatch *gm;                  /* its grammar's matcher (structured output), or NULL */
    sw_status error;             /* why it ended with SW_FINISH_ERROR ... */
    char error_msg[256];         /* ... and the message (sw_request_error) */
    double t_submitted, t_started, t_first, t_end;
    struct sw_request *next;     /* queue link */
    struct sw_request *all_prev, *all_next; /* every request not yet freed */
};

typedef struct lane {
    sw_session *session;
    sw_request *req;             /* running; NULL: free, unless held */
    sw_request *held;            /* ended, its sequence kept for a continuation */
    size_t fed;                  /* prompt tokens in the forward being built */
    int32_t *toks;               /* (n_ctx + 1) the sequence's tokens: its
                                  * session's evaluated ones, then, while it
                                  * decodes, the last sampled one */
    size_t n_toks;
    int32_t draft[SW_DRAFT_MAX]; /* the drafts behind the last token this step */
    uint32_t n_draft, want_draft;
    const float *draft_q;        /* their distributions, or NULL: all mass on each
                                  * draft (n-grams, greedy drafts) */
    sw_sampler *dsampler;        /* the draft model's sampler for the request */
    float *q;                    /* (SW_DRAFT_MAX, n_vocab) draft distributions
                                  * (sampled requests with a draft model) */
} lane;

struct sw_scheduler {
    sw_engine *engine;
    const sw_model *model;
    sw_special_tokens special;
    pthread_mutex_t mu;
    lane *lanes;
    uint32_t n_lanes, cap, n_vocab, n_ctx, per_seq;
    sw_batch_item *items;        /* (cap) */
    sw_request **owners;         /* (cap) */
    float *logits;               /* (cap, n_vocab) */
    sw_request *queue_head, *queue_tail;
    sw_request *all;
    bool stepping;               /* a forward is in flight: lanes stay as built */
    sw_scheduler_stats stats;
    /* speculative decoding (sw_scheduler_set_draft) */
    sw_draft_options draft;
    spec_model *dmodel;          /* a draft model, or NULL */
    spec_assist *assist;         /* a Gemma 4 assistant, or NULL */
    spec_lane *dlanes;           /* (n_lanes) the lanes it drafts for in a step */
    uint32_t step_taken;         /* tokens taken in this step's consume */
    gvocab *gvocab;              /* the vocabulary as bytes, at the first grammar */
};

static sw_status lane_start(sw_scheduler *q, lane *l, sw_request *r, size_t n_keep);

sw_request_options sw_request_options_default(void) {
    return (sw_request_options){.sampling = sw_sampler_options_default(), .n_predict = -1,
                                .draft_max = -1, .logprobs = -1};
}

/* ---- requests ------------------------------------------------------------- */

static void req_free(sw_scheduler *q, sw_request *r) {
    if (r->held != NULL) /* its sequence is free again */
        r->held->held = NULL;
    if (r->all_prev != NULL)
        r->all_prev->all_next = r->all_next;
    else
        q->all = r->all_next;
    if (r->all_next != NULL)
        r->all_next->all_prev = r->all_prev;
    sw_sampler_destroy(r->sampler);
    free(r->prompt);
    for (size_t i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    sw_bytebuf_free(&r->text);
    token_lps_free(&r->lp);
    gmatch_destroy(r->gm);
    free(r);
}

/* Ends r (under mu), freeing its lane (l, when it runs); frees r when its
 * caller has let go. */
static void finish(sw_scheduler *q, lane *l, sw_request *r, sw_finish why) {
    r->state = SW_REQ_DONE;
    r->finish = why;
    r->t_end = sw_clock_s();
    sw_sampler_destroy(r->sampler);
    r->sampler = NULL;
    r->session = NULL;
    if (l != NULL) {
        sw_sampler_destroy(l->dsampler);
        l->dsampler = NULL;
        l->req = NULL;
        q->stats.n_running--;
        if (r->keep && !r->released && why != SW_FINISH_CANCELLED && why != SW_FINISH_ERROR) {
            l->held = r;
            r->held = l;
        }
    }
    if (r->released)
        req_free(q, r);
}

/* Ends r with SW_FINISH_ERROR for the failure st (message msg), which
 * sw_request_error then reports: no allocation, the failure may be one. */
static void fail_request(sw_scheduler *q, lane *l, sw_request *r, sw_status st,
                         const char *msg) {
    r->error = st;
    snprintf(r->error_msg, sizeof r->error_msg, "%s", msg);
    finish(q, l, r, SW_FINISH_ERROR);
}

static sw_status copy_stops(sw_request *r, const sw_request_options *o) {
    if (o->n_stop > MAX_STOP || (o->n_stop && o->stop == NULL))
        return sw_errorf(SW_ERR_ARG, "a request takes at most %d stop strings", MAX_STOP);
    for (size_t i = 0; i < o->n_stop; i++) {
        size_t len = o->stop[i] ? strnlen(o->stop[i], MAX_STOP_LEN + 1) : 0;
        if (len == 0 || len > MAX_STOP_LEN)
            return sw_errorf(SW_ERR_ARG, "stop string %zu is %s", i + 1,
                             len ? "longer than 1024 bytes" : "empty");
        if ((r->stop[i] = malloc(len + 1)) == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a stop string");
        memcpy(r->stop[i], o->stop[i], len + 1);
        r->n_stop = i + 1;
        r->stop_max_len = len > r->stop_max_len ? len : r->stop_max_len;
    }
    return SW_OK;
}

static sw_status check_prompt(const sw_scheduler *q, const int32_t *ids, size_t n) {
    if (n == 0 || ids == NULL)
        return sw_errorf(SW_ERR_ARG, "a request needs at least one prompt token");
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= q->n_vocab)
            return sw_errorf(SW_ERR_ARG, "prompt token %zu is id %d, outside the vocabulary "
                             "of %u", i, ids[i], q->n_vocab);
    return SW_OK;
}

/* A new request of the prompt [first (when >= 0), ids...], its options
 * checked and copied (not yet on the scheduler's lists). */
static sw_status make_request(sw_scheduler *q, int32_t first, const int32_t *ids, size_t n,
                              const sw_request_options *opt, sw_request **out) {
    sw_request_options def = sw_request_options_default();
    const sw_request_options *o = opt ? opt : &def;
    sw_sampler *probe = NULL;
    const size_t k = first >= 0;
    SW_TRY(check_prompt(q, ids, n));
    SW_TRY(sw_sampler_create(&o->sampling, q->n_vocab, &probe)); /* the options' check */
    sw_sampler_destroy(probe);
    sw_request *r = calloc(1, sizeof *r);
    if (r == NULL || (r->prompt = malloc((k + n) * sizeof *ids)) == NULL) {
        free(r);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a request");
    }
    if (k)
        r->prompt[0] = first;
    memcpy(r->prompt + k, ids, n * sizeof *ids);
    r->n_prompt = k + n;
    r->n_predict = o->n_predict;
    r->sampling = o->sampling;
    r->on_token = o->on_token;
    r->user = o->user;
    r->keep = o->keep_sequence != 0;
    r->draft_max = o->draft_max;
    r->lp.top = o->logprobs;
    sw_status st = o->logprobs < -1 || o->logprobs > SW_LOGPROBS_MAX
                       ? sw_errorf(SW_ERR_ARG, "logprobs %d: -1 (none) or 0 to %d alternatives",
                                   o->logprobs, SW_LOGPROBS_MAX)
                       : SW_OK;
    if (st == SW_OK && o->grammar != NULL && /* the grammar's refs and cache lock themselves */
        (st = gvocab_once(&q->gvocab, &q->mu, q->model, q->n_vocab)) == SW_OK)
        st = gmatch_create((sw_grammar *)o->grammar, q->gvocab, &r->gm);
    if (st == SW_OK)
        st = o->draft_max < -1 || o->draft_max > SW_DRAFT_MAX
                 ? sw_errorf(SW_ERR_ARG, "draft_max %d: -1 (the scheduler's), 0 (none) or "
                             "up to %d drafts per verify", o->draft_max, SW_DRAFT_MAX)
                 : copy_stops(r, o);
    if (st != SW_OK) {
        for (size_t i = 0; i < r->n_stop; i++)
            free(r->stop[i]);
        gmatch_destroy(r->gm);
        free(r->prompt);
        free(r);
        return st;
    }
    r->t_submitted = sw_clock_s();
    *out = r;
    return SW_OK;
}

/* r onto the list of every live request (under mu). */
static void track(sw_scheduler *q, sw_request *r) {
    r->all_next = q->all;
    if (q->all != NULL)
        q->all->all_prev = r;
    q->all = r;
}

sw_status sw_scheduler_submit(sw_scheduler *q, const int32_t *ids, size_t n,
                              const sw_request_options *opt, sw_request **out) {
    sw_request *r = NULL;
    if (q == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_scheduler_submit: NULL argument");
    *out = NULL;
    if (n > q->n_ctx)
        return sw_errorf(SW_ERR_ARG, "the prompt has %zu tokens; the context holds %u", n,
                         q->n_ctx);
    SW_TRY(make_request(q, -1, ids, n, opt, &r));
    pthread_mutex_lock(&q->mu);
    track(q, r);
    r->state = SW_REQ_QUEUED;
    if (q->queue_tail != NULL)
        q->queue_tail->next = r;
    else
        q->queue_head = r;
    q->queue_tail = r;
    q->stats.n_queued++;
    pthread_mutex_unlock(&q->mu);
    *out = r;
    return SW_OK;
}

sw_status sw_scheduler_continue(sw_scheduler *q, sw_request *prev, const int32_t *ids,
                                size_t n, const sw_request_options *opt, sw_request **out) {
    sw_request *r = NULL;
    if (q == NULL || prev == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_scheduler_continue: NULL argument");
    *out = NULL;
    pthread_mutex_lock(&q->mu);
    lane *l = prev->held;
    /* the last sampled token goes first unless it ended the turn */
    const int32_t last = prev->finish == SW_FINISH_EOG ? -1 : prev->last;
    const uint32_t pos = l ? sw_session_pos(l->session) : 0;
    pthread_mutex_unlock(&q->mu);
    if (l == NULL)
        return sw_errorf(SW_ERR_ARG, "that request cannot be continued: it was not submitted "
                         "with keep_sequence, has not ended, or was cancelled or failed");
    if ((uint64_t)pos + (last >= 0) + n >= q->n_ctx)
        return sw_errorf(SW_ERR_ARG, "the conversation holds %u tokens; %zu more leave no "
                         "room to reply in its %u-token context", pos,
                         n + (last >= 0), q->n_ctx);
    SW_TRY(make_request(q, last, ids, n, opt, &r));
    sw_status st = sw_sampler_create(&r->sampling, q->n_vocab, &r->sampler);
    pthread_mutex_lock(&q->mu);
    track(q, r);
    if (st == SW_OK && l->held != prev) /* released meanwhile: its lane let go */
        st = sw_errorf(SW_ERR_ARG, "that request was released while being continued");
    if (st != SW_OK) {
        req_free(q, r);
        pthread_mutex_unlock(&q->mu);
        return st;
    }
    /* the last sampled token is fed again as the prompt's first, or was the
     * end of the turn: either way not part of the sequence */
    if (st == SW_OK)
        st = lane_start(q, l, r, sw_session_pos(l->session));
    if (st != SW_OK) {
        req_free(q, r);
        pthread_mutex_unlock(&q->mu);
        return st;
    }
    prev->held = NULL;
    l->held = NULL;
    l->req = r;
    r->session = l->session;
    r->state = SW_REQ_PREFILL;
    r->t_started = r->t_submitted;
    q->stats.n_running++;
    pthread_mutex_unlock(&q->mu);
    *out = r;
    return SW_OK;
}

/* Takes r out of the queue (under mu). */
static void unqueue(sw_scheduler *q, sw_request *r) {
    sw_request **p = &q->queue_head, *prev = NULL;
    while (*p != NULL && *p != r) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p == NULL)
        return;
    *p = r->next;
    if (q->queue_tail == r)
        q->queue_tail = prev;
    r->next = NULL;
    q->stats.n_queued--;
}

void sw_request_cancel(sw_scheduler *q, sw_request *r) {
    if (q == NULL || r == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    if (r->state == SW_REQ_QUEUED) {
        unqueue(q, r);
        finish(q, NULL, r, SW_FINISH_CANCELLED);
    } else if (r->state != SW_REQ_DONE) {
        r->cancelled = true; /* running: the next step ends it */
    }
    pthread_mutex_unlock(&q->mu);
}

void sw_request_release(sw_scheduler *q, sw_request *r) {
    if (q == NULL || r == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    r->released = true;
    if (r->state == SW_REQ_QUEUED) {
        unqueue(q, r);
        finish(q, NULL, r, SW_FINISH_CANCELLED); /* frees it */
    } else if (r->state == SW_REQ_DONE) {
        req_free(q, r);
    } else {
        r->cancelled = true;
    }
    pthread_mutex_unlock(&q->mu);
}

void sw_request_get_info(sw_scheduler *q, const sw_request *r, sw_request_info *out) {
    memset(out, 0, sizeof *out);
    if (q == NULL || r == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    *out = (sw_request_info){.state = r->state, .finish = r->finish, .n_prompt = r->n_prompt,
                             .n_fed = r->n_fed, .n_generated = r->n_generated,
                             .text_len = r->text.len, .t_submitted = r->t_submitted,
                             .t_started = r->t_started, .t_first = r->t_first,
                             .t_end = r->t_end};
    pthread_mutex_unlock(&q->mu);
}

sw_status sw_request_error(sw_scheduler *q, const sw_request *r, const char **message) {
    sw_status st = SW_OK;
    if (message != NULL)
        *message = "";
    if (q == NULL || r == NULL)
        return SW_OK;
    pthread_mutex_lock(&q->mu);
    if (r->state == SW_REQ_DONE && r->finish == SW_FINISH_ERROR && r->error != SW_OK) {
        st = r->error;
        if (message != NULL)
            *message = r->error_msg; /* written once, before the request ended */
    }
    pthread_mutex_unlock(&q->mu);
    return st;
}

size_t sw_request_logprobs(sw_scheduler *q, const sw_request *r, size_t from,
                           sw_token_logprob *out, size_t cap) {
    if (q == NULL || r == NULL || out == NULL)
        return 0;
    pthread_mutex_lock(&q->mu);
    size_t n = 0;
    for (; from + n < r->lp.n && n < cap; n++)
        out[n] = r->lp.v[from + n];
    pthread_mutex_unlock(&q->mu);
    return n;
}

size_t sw_request_text(sw_scheduler *q, const sw_request *r, size_t from, char *buf,
                       size_t cap) {
    size_t n = 0;
    if (q == NULL || r == NULL || buf == NULL)
        return 0;
    pthread_mutex_lock(&q->mu);
    if (from < r->text.len) {
        n = r->text.len - from < cap ? r->text.len - from : cap;
        memcpy(buf, r->text.p + from, n);
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* ---- a step --------------------------------------------------------------- */

/* Drafts per verify for r: its own setting, else the scheduler's; 0 when
 * the scheduler has no drafter. */
static uint32_t draft_of(const sw_scheduler *q, const sw_request *r) {
    if ((!q->draft.ngram && q->dmodel == NULL && q->assist == NULL) || r->gm != NULL)
        return 0;
    return r->draft_max >= 0 ? (uint32_t)r->draft_max : q->draft.draft_max;
}

/* Lane l starts running r, its sequence holding its first n_keep tokens:
 * the draft model forgets the rest and gets r's sampling. */
static sw_status lane_start(sw_scheduler *q, lane *l, sw_request *r, size_t n_keep) {
    l->n_toks = n_keep;
    l->n_draft = l->want_draft = 0;
    l->draft_q = NULL;
    if ((q->dmodel == NULL && q->assist == NULL) || draft_of(q, r) == 0)
        return SW_OK;
    if (q->dmodel != NULL)
        SW_TRY(spec_model_reset_lane(q->dmodel, (uint32_t)(l - q->lanes), n_keep));
    if (r->sampling.temp != 0.0f && l->q == NULL && /* once per lane, at its first need */
        (l->q = malloc((size_t)SW_DRAFT_MAX * q->n_vocab * sizeof *l->q)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a lane's draft "
                         "distributions");
    sw_sampler_options so = r->sampling;
    so.seed ^= DRAFT_SEED_MIX;
    return sw_sampler_create(&so, q->n_vocab, &l->dsampler);
}

/* How many drafts lane l can put behind its last token this step, with
 * *spare of the forward's room beyond one token per decoding lane. */
static uint32_t draft_room(const sw_scheduler *q, const lane *l, uint32_t *spare) {
    const sw_request *r = l->req;
    uint32_t k = draft_of(q, r);
    k = k < q->per_seq - 1 ? k : q->per_seq - 1;
    if (r->n_predict >= 0) { /* outputs this step: up to k + 1 */
        const size_t left = (size_t)r->n_predict - r->n_generated;
        k = left <= 1 ? 0 : k < left - 1 ? k : (uint32_t)(left - 1);
    }
    const size_t room = q->n_ctx > l->n_toks ? q->n_ctx - l->n_toks : 0; /* positions */
    k = k < room ? k : (uint32_t)room;
    k = k < *spare ? k : *spare;
    *spare -= k;
    return k;
}

/* Each decoding lane's drafts for this step (under mu): n-gram drafts at
 * once, draft-model lanes listed in q->dlanes; returns how many of
 * those. */
static uint32_t plan_drafts(sw_scheduler *q) {
    uint32_t n_decode = 0, n_model = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        n_decode += q->lanes[i].req != NULL && q->lanes[i].req->state == SW_REQ_DECODE;
    uint32_t spare = q->cap > n_decode ? q->cap - n_decode : 0;
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        lane *l = &q->lanes[i];
        l->n_draft = 0;
        l->draft_q = NULL;
        if (l->req == NULL || l->req->state != SW_REQ_DECODE)
            continue;
        const uint32_t k = draft_room(q, l, &spare);
        if (k == 0)
            continue;
        if (q->dmodel == NULL && q->assist == NULL) {
            l->n_draft = spec_ngram_draft(l->toks, l->n_toks, q->draft.ngram_min,
                                          q->draft.ngram_max, k, l->draft);
            spare += k - l->n_draft;
            continue;
        }
        l->want_draft = k;
        l->draft_q = l->req->sampling.temp != 0.0f ? l->q : NULL;
        q->dlanes[n_model++] = (spec_lane){.lane = i, .session = l->session,
                                           .toks = l->toks, .n_toks = l->n_toks,
                                           .k = k, .sampler = l->dsampler, .out = l->draft,
                                           .q = (float *)l->draft_q};
    }
    return n_model;
}

/* The draft model's drafts for the lanes plan_drafts listed, outside the
 * lock (the lanes stay as they are: stepping); a failure fails their
 * requests. */
static void model_drafts(sw_scheduler *q, uint32_t n) {
    const sw_status st = q->assist != NULL ? spec_assist_draft(q->assist, q->dlanes, n)
                                           : spec_model_draft(q->dmodel, q->dlanes, n);
    pthread_mutex_lock(&q->mu);
    for (uint32_t i = 0; i < n; i++) {
        lane *l = &q->lanes[q->dlanes[i].lane];
        if (st == SW_OK)
            l->n_draft = l->want_draft;
        else if (l->req != NULL)
            fail_request(q, l, l->req, st, sw_last_error());
    }
    pthread_mutex_unlock(&q->mu);
}

/* Free lanes take queued requests, oldest first (under mu). */
static void admit(sw_scheduler *q) {
    for (uint32_t i = 0; i < q->n_lanes && q->queue_head != NULL; i++) {
        lane *l = &q->lanes[i];
        if (l->req != NULL || l->held != NULL)
            continue;
        sw_request *r = q->queue_head;
        unqueue(q, r);
        sw_status st = sw_sampler_create(&r->sampling, q->n_vocab, &r->sampler);
        if (st == SW_OK)
            st = sw_session_truncate(l->session, 0);
        if (st == SW_OK)
            st = lane_start(q, l, r, 0);
        if (st != SW_OK) {
            fail_request(q, NULL, r, st, sw_last_error());
            i--; /* this lane is still free */
            continue;
        }
        r->state = SW_REQ_PREFILL;
        r->session = l->session;
        r->t_started = sw_clock_s();
        l->req = r;
        q->stats.n_running++;
    }
}

/* Running requests cancelled (or released) leave their lanes (under mu). */
static void drop_cancelled(sw_scheduler *q) {
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        sw_request *r = q->lanes[i].req;
        if (r != NULL && r->cancelled)
            finish(q, &q->lanes[i], r, r->cancel_as ? r->cancel_as : SW_FINISH_CANCELLED);
    }
}

static void add_item(sw_scheduler *q, uint32_t *n, sw_request *r, int32_t token, int logits) {
    q->items[*n] = (sw_batch_item){r->session, token, logits};
    q->owners[(*n)++] = r;
}

/* Decode tokens first, each with its lane's drafts, then prompt chunks
 * (under mu); *all_decode when no prompt token is in it. */
static uint32_t build(sw_scheduler *q, bool *all_decode) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        lane *l = &q->lanes[i];
        sw_request *r = l->req;
        l->fed = 0;
        if (r == NULL || r->state != SW_REQ_DECODE || n >= q->cap) {
            l->n_draft = 0;
            continue;
        }
        add_item(q, &n, r, r->last, 1);
        uint32_t j = 0; /* plan_drafts left room for them all; kept exact anyway */
        for (; j < l->n_draft && n < q->cap; j++)
            add_item(q, &n, r, l->draft[j], 1);
        l->n_draft = j;
    }
    *all_decode = true;
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        sw_request *r = q->lanes[i].req;
        if (r == NULL || r->state != SW_REQ_PREFILL)
            continue;
        *all_decode = false;
        size_t k = r->n_prompt - r->n_fed;
        k = k < q->per_seq ? k : q->per_seq;
        k = k < q->cap - n ? k : q->cap - n;
        for (size_t t = 0; t < k; t++)
            add_item(q, &n, r, r->prompt[r->n_fed + t], r->n_fed + t + 1 == r->n_prompt);
        q->lanes[i].fed = k;
    }
    return n;
}

/* The earliest stop string that the last piece (len bytes) could have
 * completed: cuts the text there. */
static bool cut_at_stop(sw_request *r, size_t len) {
    if (r->n_stop == 0)
        return false;
    size_t from = r->text.len - len;
    from = from > r->stop_max_len ? from - r->stop_max_len : 0;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < r->n_stop; i++) {
        const char *hit = strstr(r->text.p + from, r->stop[i]);
        if (hit != NULL && (size_t)(hit - r->text.p) < best)
            best = (size_t)(hit - r->text.p);
    }
    if (best == SIZE_MAX)
        return false;
    r->text.len = best;
    r->text.p[best] = '\0';
    return true;
}

/* Takes the sampled token id from its logits row, the sequence then at
 * position pos (tokens evaluated before it; under mu). */
static void take_token(sw_scheduler *q, lane *l, sw_request *r, int32_t id, uint32_t pos,
                       const float *row) {
    bool print = false;
    if (r->state == SW_REQ_PREFILL)
        r->t_first = sw_clock_s();
    const size_t generated = r->n_generated;
    sw_finish why = sched_after_sample(&q->special, r->n_predict, &r->n_generated, id, pos,
                                       q->n_ctx, &print);
    if (r->lp.top >= 0 && r->n_generated > generated &&
        !token_lps_add(&r->lp, row, q->n_vocab, id, (uint32_t)r->text.len)) {
        fail_request(q, l, r, SW_ERR_OOM_HOST, "out of host memory for a request's logprobs");
        return;
    }
    r->state = SW_REQ_DECODE;
    r->last = id;
    q->step_taken++;
    l->toks[l->n_toks++] = id;
    q->stats.generated_tokens += print;
    char buf[256];
    size_t len = 0;
    if (print && r->gm != NULL && !gmatch_accept(r->gm, id)) { /* the mask allowed it */
        fail_request(q, l, r, SW_ERR_ARG, "a token outside the request's grammar was sampled");
        return;
    }
    if (print && sw_token_to_piece(q->model, id, buf, sizeof buf, &len) == SW_OK &&
        len <= sizeof buf) {
        if (r->on_token != NULL)
            r->on_token(r->user, r, id, buf, len);
        if (!sw_bytebuf_add(&r->text, buf, len)) {
            fail_request(q, l, r, SW_ERR_OOM_HOST, "out of host memory for the text of a "
                         "request");
            return;
        }
        if (cut_at_stop(r, len))
            why = SW_FINISH_STOP;
    }
    if (why == SW_FINISH_NONE && r->gm != NULL && gmatch_done(r->gm))
        why = SW_FINISH_EOG; /* complete, and nothing may follow */
    if (why != SW_FINISH_NONE)
        finish(q, l, r, why);
}

/* Lane l's last token and its k drafts were evaluated at positions
 * p0 .. p0 + k (p0: the last token's): the target's tokens for its k+1
 * rows are taken in order until the request ends, the sequence is rewound
 * to just after the last draft kept, and the draft model to what it still
 * shares (under mu). */
static void verify(sw_scheduler *q, lane *l, sw_request *r, const float *rows, uint32_t row0) {
    const uint32_t k = l->n_draft;
    int32_t out[SW_DRAFT_MAX + 1];
    const uint32_t n_out = spec_verify(r->sampler, rows, q->n_vocab, l->draft, k, l->draft_q,
                                       out);
    const uint32_t p0 = sw_session_pos(l->session) - k - 1;
    const size_t n_toks_before = l->n_toks;
    l->n_draft = 0;
    q->stats.verify_forwards++;
    q->stats.drafted_tokens += k;
    q->stats.accepted_tokens += n_out - 1;
    uint32_t taken = 0;
    while (taken < n_out && l->req == r) {
        take_token(q, l, r, out[taken], p0 + 1 + taken, rows + (size_t)taken * q->n_vocab);
        taken++;
    }
    q->stats.verify_tokens += taken;
    if (q->assist != NULL && taken > 0) /* the row that gave the last token taken */
        spec_assist_keep(q->assist, (uint32_t)(l - q->lanes), row0 + taken - 1);
    /* evaluated and kept: the last token and the drafts output before the
     * last token taken */
    sw_status st = sw_session_truncate(l->session, p0 + taken);
    if (st == SW_OK && q->dmodel != NULL && l->dsampler != NULL)
        st = spec_model_accept(q->dmodel, (uint32_t)(l - q->lanes), n_toks_before, k,
                               n_out - 1);
    if (st != SW_OK && l->req == r)
        fail_request(q, l, r, st, sw_last_error());
}

/* After a forward (under mu): prompt progress, then sampling in item
 * order. */
static void consume(sw_scheduler *q, uint32_t n) {
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        lane *l = &q->lanes[i];
        sw_request *r = l->req;
        if (r != NULL && r->state == SW_REQ_PREFILL) {
            memcpy(l->toks + l->n_toks, r->prompt + r->n_fed, l->fed * sizeof *l->toks);
            l->n_toks += l->fed;
            r->n_fed += l->fed;
            q->stats.prompt_tokens += l->fed;
        }
    }
    uint32_t row = 0;
    for (uint32_t t = 0; t < n; t++) {
        if (!q->items[t].logits)
            continue;
        sw_request *r = q->owners[t];
        lane *l = &q->lanes[0];
        while (l->req != r)
            l++;
        const float *rows = q->logits + (size_t)row * q->n_vocab;
        if (r->state == SW_REQ_DECODE && l->n_draft > 0) {
            const uint32_t k = l->n_draft;
            verify(q, l, r, rows, row);
            t += k;
            row += k + 1;
            continue;
        }
        if (q->assist != NULL)
            spec_assist_keep(q->assist, (uint32_t)(l - q->lanes), row);
        row++;
        if (r->gm != NULL) { /* structured output: only tokens that continue it */
            const sw_status st = gmatch_mask_logits(r->gm, q->logits + (size_t)(row - 1) *
                                                                 q->n_vocab);
            if (st != SW_OK) {
                fail_request(q, l, r, st, sw_last_error());
                continue;
            }
        }
        take_token(q, l, r, sw_sampler_sample(r->sampler, rows), sw_session_pos(l->session),
                   rows);
    }
}

/* The running requests' cache rows (under mu). */
static void count_kv(sw_scheduler *q) {
    uint64_t used = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        if (q->lanes[i].req != NULL)
            used += sw_session_pos(q->lanes[i].session);
    q->stats.kv_used_tokens = used;
}

sw_status sw_scheduler_step(sw_scheduler *q, uint32_t *n_tokens) {
    bool all_decode = false;
    if (n_tokens != NULL)
        *n_tokens = 0;
    if (q == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_scheduler_step: NULL scheduler");
    pthread_mutex_lock(&q->mu);
    drop_cancelled(q);
    admit(q);
    const uint32_t n_model = plan_drafts(q);
    q->stepping = n_model != 0;
    pthread_mutex_unlock(&q->mu);
    const double t_draft = sw_clock_s();
    if (n_model != 0)
        model_drafts(q, n_model);
    const double draft_s = sw_clock_s() - t_draft; /* part of a decode step's time */
    pthread_mutex_lock(&q->mu);
    const uint32_t n = build(q, &all_decode);
    q->stepping = n != 0;
    pthread_mutex_unlock(&q->mu);
    if (n == 0)
        return SW_OK;
    /* The engine is the stepping thread's alone; the items' sessions and
     * tokens are not touched by the other calls meanwhile. */
    const double t0 = sw_clock_s();
    const sw_status st =
        q->assist != NULL ? engine_eval_batch_hidden(q->engine, q->items, n, q->logits,
                                                     spec_assist_hidden_rows(q->assist))
                          : sw_engine_eval_batch(q->engine, q->items, n, q->logits);
    const double dt = sw_clock_s() - t0;
    pthread_mutex_lock(&q->mu);
    q->stepping = false;
    if (st != SW_OK) {
        for (uint32_t i = 0; i < q->n_lanes; i++)
            if (q->lanes[i].req != NULL)
                fail_request(q, &q->lanes[i], q->lanes[i].req, st, sw_last_error());
    } else {
        q->stats.n_forwards++;
        q->stats.last_forward_tokens = n;
        q->step_taken = 0;
        consume(q, n);
        if (all_decode) {
            q->stats.decode_tokens += q->step_taken; /* output, drafts kept included */
            q->stats.decode_s += dt + draft_s;
        }
    }
    count_kv(q);
    pthread_mutex_unlock(&q->mu);
    if (n_tokens != NULL)
        *n_tokens = n;
    return st;
}

void sw_scheduler_end_all(sw_scheduler *q, sw_finish why) {
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        sw_request *r = q->lanes[i].req;
        if (r == NULL)
            continue;
        if (q->stepping) { /* its forward is in flight: it ends at the next step */
            r->cancelled = true;
            r->cancel_as = why;
        } else {
            finish(q, &q->lanes[i], r, why);
        }
    }
    while (q->queue_head != NULL) {
        sw_request *r = q->queue_head;
        unqueue(q, r);
        finish(q, NULL, r, why);
    }
    count_kv(q);
    pthread_mutex_unlock(&q->mu);
}

void sw_scheduler_get_stats(sw_scheduler *q, sw_scheduler_stats *out) {
    memset(out, 0, sizeof *out);
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->mu);
    *out = q->stats;
    pthread_mutex_unlock(&q->mu);
}

/* ---- the scheduler -------------------------------------------------------- */

sw_status sw_scheduler_create(sw_engine *engine, const sw_model *model, sw_scheduler **out) {
    if (engine == NULL || model == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_scheduler_create: NULL argument");
    *out = NULL;
    sw_scheduler *q = calloc(1, sizeof *q);
    if (q == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a scheduler");
    q->engine = engine;
    q->model = model;
    const uint32_t n_seq = sw_engine_n_seq(engine);
    q->cap = sw_engine_max_tokens(engine);
    q->n_vocab = sw_engine_n_vocab(engine);
    q->n_ctx = sw_engine_n_ctx(engine);
    q->per_seq = sw_engine_n_batch(engine);
    q->stats.kv_capacity_tokens = (uint64_t)n_seq * q->n_ctx;
    pthread_mutex_init(&q->mu, NULL);
    sw_status st = sw_model_special_tokens(model, &q->special);
    q->lanes = calloc(n_seq, sizeof *q->lanes);
    q->n_lanes = q->lanes != NULL ? n_seq : 0; /* the lanes that exist, for destroy */
    q->items = calloc(q->cap, sizeof *q->items);
    q->owners = calloc(q->cap, sizeof *q->owners);
    q->logits = malloc((size_t)q->cap * q->n_vocab * sizeof *q->logits);
    if (st == SW_OK && (q->lanes == NULL || q->items == NULL || q->owners == NULL ||
                        q->logits == NULL))
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory for %u sequences of %u tokens",
                       n_seq, q->cap);
    for (uint32_t i = 0; st == SW_OK && i < q->n_lanes; i++) {
        if ((q->lanes[i].toks = malloc(((size_t)q->n_ctx + 1) * sizeof(int32_t))) == NULL)
            st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the tokens of %u "
                           "sequences", n_seq);
        else if ((st = sw_session_create(engine, &q->lanes[i].session)) == SW_ERR_ARG)
            st = sw_errorf(SW_ERR_ARG, "a scheduler takes every sequence of its engine; "
                           "destroy the engine's sessions first");
    }
    if (st != SW_OK) {
        sw_scheduler_destroy(q);
        return st;
    }
    *out = q;
    return SW_OK;
}

void sw_scheduler_destroy(sw_scheduler *q) {
    if (q == NULL)
        return;
    sw_scheduler_end_all(q, SW_FINISH_CANCELLED);
    while (q->all != NULL)
        req_free(q, q->all);
    for (uint32_t i = 0; q->lanes != NULL && i < q->n_lanes; i++) {
        sw_session_destroy(q->lanes[i].session);
        sw_sampler_destroy(q->lanes[i].dsampler);
        free(q->lanes[i].toks);
        free(q->lanes[i].q);
    }
    spec_model_destroy(q->dmodel);
    spec_assist_destroy(q->assist);
    gvocab_destroy(q->gvocab);
    free(q->dlanes);
    pthread_mutex_destroy(&q->mu);
    free(q->lanes);
    free(q->items);
    free(q->owners);
    free(q->logits);
    free(q);
}

/* ---- speculative decoding -------------------------------------------------- */

sw_draft_options sw_draft_options_default(void) {
    return (sw_draft_options){.ngram_min = 2, .ngram_max = 4, .draft_max = 0};
}

static sw_status check_draft(const sw_scheduler *q, const sw_draft_options *o) {
    if (o->draft_max > SW_DRAFT_MAX)
        return sw_errorf(SW_ERR_ARG, "--draft-max %u: 1 to %d drafts per verify", o->draft_max,
                         SW_DRAFT_MAX);
    if (o->ngram && (o->ngram_min < 1 || o->ngram_max < o->ngram_min || o->ngram_max > 64))
        return sw_errorf(SW_ERR_ARG, "n-gram drafts match %u to %u tokens (1 <= min <= max "
                         "<= 64)", o->ngram_min, o->ngram_max);
    if ((o->engine == NULL) != (o->model == NULL))
        return sw_errorf(SW_ERR_ARG, "a draft model needs both its engine and its model");
    if ((o->engine != NULL) + (o->assistant != NULL) + (o->ngram != 0) > 1)
        return sw_errorf(SW_ERR_ARG, "one drafter: a draft model, an assistant or n-grams");
    if (o->engine != NULL && o->engine == q->engine)
        return sw_errorf(SW_ERR_ARG, "the draft model needs an engine of its own (it keeps "
                         "its own KV cache)");
    return SW_OK;
}

/* The draft length the cost model finds best for the target's plan, a
 * draft costing one forward of the draft model's, an assistant's step
 * its bytes read where it runs (nothing for n-grams), at the acceptance
 * rate SW_DRAFT_ACCEPTANCE. */
static uint32_t default_draft_max(const sw_scheduler *q, const sw_draft_options *o) {
    uint64_t assistant_bytes = 0;
    if (o->assistant != NULL &&
        sw_assistant_device_bytes(o->assistant, q->n_lanes, &assistant_bytes) != SW_OK)
        assistant_bytes = 0; /* its creation reports why */
    const double draft_s =
        o->engine != NULL ? sw_plan_forward_seconds(sw_engine_plan(o->engine), 1)
        : o->assistant != NULL ? sw_plan_drafter_seconds(sw_engine_plan(q->engine),
                                                         assistant_bytes)
                               : 0.0;
    const uint32_t k_max = q->per_seq - 1 < SW_DRAFT_MAX ? q->per_seq - 1 : SW_DRAFT_MAX;
    return sw_plan_best_draft_max(sw_engine_plan(q->engine), SW_DRAFT_ACCEPTANCE, draft_s,
                                  k_max > 0 ? k_max : 1);
}

uint32_t sw_scheduler_draft_max(const sw_scheduler *q) {
    return q != NULL ? q->draft.draft_max : 0;
}

sw_status sw_scheduler_set_draft(sw_scheduler *q, const sw_draft_options *opt) {
    if (q == NULL || opt == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_scheduler_set_draft: NULL argument");
    sw_draft_options chosen = *opt;
    const sw_draft_options *o = &chosen;
    SW_TRY(check_draft(q, o));
    if (chosen.draft_max == 0)
        chosen.draft_max = default_draft_max(q, o);
    spec_model *m = NULL;
    spec_assist *as = NULL;
    spec_lane *dl = NULL;
    if (o->engine != NULL)
        SW_TRY(spec_model_create(o->engine, o->model, q->model, q->n_vocab, q->n_lanes, &m));
    if (o->assistant != NULL)
        SW_TRY(spec_assist_create(q->engine, o->assistant, q->n_lanes, &as));
    if ((m != NULL || as != NULL) && (dl = calloc(q->n_lanes, sizeof *dl)) == NULL) {
        spec_model_destroy(m);
        spec_assist_destroy(as);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the drafter");
    }
    pthread_mutex_lock(&q->mu);
    sw_status st = SW_OK;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        if (q->lanes[i].req != NULL || q->lanes[i].held != NULL)
            st = sw_errorf(SW_ERR_ARG, "set the drafter before the first request runs");
    if (st == SW_OK) {
        spec_model_destroy(q->dmodel);
        spec_assist_destroy(q->assist);
        free(q->dlanes);
        q->dmodel = m;
        q->assist = as;
        q->dlanes = dl;
        q->draft = *o;
        m = NULL;
        as = NULL;
        dl = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    spec_model_destroy(m);
    spec_assist_destroy(as);
    free(dl);
    return st;
}
