/*
 * serve_sched.c — the server's scheduler (serve.h): continuous batching as
 * `spillway batch` does it (batch_run.c), over requests that arrive while
 * it runs. Between forwards it drops requests whose client went away,
 * admits queued ones into free sequences, and builds the next forward:
 * one decode token per running request, then prompt chunks (at most -b
 * tokens per request) of requests in prefill, so a long prompt never
 * stalls the others' decoding. Each request samples with its own sampler
 * and stops as `run` stops (gen_after_sample), or at a stop string.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/serve.h"
#include "util/clock.h"

typedef struct lane {
    sw_session *session;
    srv_req *req;                /* NULL: free */
    size_t fed;                  /* prompt tokens in the forward being built */
} lane;

typedef struct sched {
    srv_state *s;
    lane *lanes;
    uint32_t n_lanes, cap, n_vocab;
    sw_batch_item *items;
    srv_req **owners;
    float *logits;
} sched;

static void req_free(srv_req *r) {
    free(r->prompt);
    for (size_t i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    sw_bytebuf_free(&r->text);
    free(r);
}

void srv_release(srv_state *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    const int left = --r->refs;
    pthread_mutex_unlock(&s->mu);
    if (left == 0)
        req_free(r);
}

bool srv_submit(srv_state *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    const bool ok = !s->stopping && !s->failed && s->engine != NULL &&
                    s->n_queued + s->n_running < s->queue_cap + s->n_seq;
    if (ok) {
        r->phase = SRV_QUEUED;
        r->refs++;
        r->next = NULL;
        if (s->queue_tail != NULL)
            s->queue_tail->next = r;
        else
            s->queue_head = r;
        s->queue_tail = r;
        s->n_queued++;
        s->m.requests++;
        pthread_cond_signal(&s->work_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* Ends r (under mu): its lane is freed, waiters are woken, and the
 * scheduler's reference goes. Returns true when r is to be freed. */
static bool finish(sched *q, lane *l, srv_req *r, const char *why, const char *error) {
    srv_state *s = q->s;
    r->phase = SRV_DONE;
    r->finish = why;
    r->error = error;
    sw_sampler_destroy(r->sampler);
    r->sampler = NULL;
    r->session = NULL;
    if (l != NULL) {
        l->req = NULL;
        s->n_running--;
    }
    s->m.prompt_tokens += r->n_fed;
    s->m.generated_tokens += r->n_generated;
    if (error != NULL)
        s->m.requests_failed++;
    else if (why != NULL && !strcmp(why, "cancelled"))
        s->m.requests_cancelled++;
    pthread_cond_broadcast(&s->out_cv);
    return --r->refs == 0;
}

/* Free lanes take queued requests, oldest first (under mu). */
static void admit(sched *q) {
    srv_state *s = q->s;
    for (uint32_t i = 0; i < q->n_lanes && s->queue_head != NULL; i++) {
        lane *l = &q->lanes[i];
        if (l->req != NULL)
            continue;
        srv_req *r = s->queue_head;
        s->queue_head = r->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        s->n_queued--;
        if (r->cancelled) {
            if (finish(q, NULL, r, "cancelled", NULL))
                req_free(r);
            i--; /* this lane is still free */
            continue;
        }
        sw_status st = sw_sampler_create(&r->sampling, q->n_vocab, &r->sampler);
        if (st == SW_OK)
            st = sw_session_truncate(l->session, 0);
        if (st != SW_OK) {
            if (finish(q, NULL, r, NULL, "the server could not start the request"))
                req_free(r);
            continue;
        }
        r->phase = SRV_PREFILL;
        r->session = l->session;
        l->req = r;
        s->n_running++;
    }
}

/* Requests whose client went away leave their lanes (under mu). */
static void drop_cancelled(sched *q) {
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        srv_req *r = q->lanes[i].req;
        if (r != NULL && r->cancelled && finish(q, &q->lanes[i], r, "cancelled", NULL))
            req_free(r);
    }
}

static void add_item(sched *q, uint32_t *n, srv_req *r, int32_t token, int logits) {
    q->items[*n] = (sw_batch_item){r->session, token, logits};
    q->owners[(*n)++] = r;
}

/* Decode tokens first, then prompt chunks (under mu). */
static uint32_t build(sched *q) {
    uint32_t n = 0, per_seq = sw_engine_n_batch(q->s->engine);
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        srv_req *r = q->lanes[i].req;
        q->lanes[i].fed = 0;
        if (r != NULL && r->phase == SRV_DECODE && n < q->cap)
            add_item(q, &n, r, r->last, 1);
    }
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        srv_req *r = q->lanes[i].req;
        if (r == NULL || r->phase != SRV_PREFILL)
            continue;
        size_t k = r->n_prompt - r->n_fed;
        k = k < per_seq ? k : per_seq;
        k = k < q->cap - n ? k : q->cap - n;
        for (size_t t = 0; t < k; t++)
            add_item(q, &n, r, r->prompt[r->n_fed + t], r->n_fed + t + 1 == r->n_prompt);
        q->lanes[i].fed = k;
    }
    return n;
}

/* The earliest stop string in the text that the last piece (len bytes)
 * could have completed: cuts the text there. */
static bool cut_at_stop(srv_req *r, size_t len) {
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

/* Samples for one item that had logits (under mu). */
static void take_token(sched *q, lane *l, srv_req *r, const float *logits) {
    srv_state *s = q->s;
    const int32_t id = sw_sampler_sample(r->sampler, logits);
    bool print = false;
    if (r->phase == SRV_PREFILL)
        r->t_first = sw_clock_s();
    gen_stop stop = gen_after_sample(&s->special, r->max_tokens, &r->n_generated, id,
                                     sw_session_pos(r->session), sw_engine_n_ctx(s->engine),
                                     &print);
    r->phase = SRV_DECODE;
    r->last = id;
    if (print) {
        char buf[256];
        size_t len = 0;
        if (sw_token_to_piece(s->model, id, buf, sizeof buf, &len) == SW_OK &&
            len <= sizeof buf) {
            if (!sw_bytebuf_add(&r->text, buf, len)) {
                if (finish(q, l, r, NULL, "out of host memory for the output"))
                    req_free(r);
                return;
            }
            if (cut_at_stop(r, len))
                stop = GEN_STOP_EOG;
        }
    }
    if (stop != GEN_GOING) {
        const char *why = stop == GEN_STOP_EOG ? "stop" : "length";
        if (finish(q, l, r, why, NULL))
            req_free(r);
        return;
    }
    pthread_cond_broadcast(&s->out_cv);
}

static void consume(sched *q, uint32_t n) {
    for (uint32_t i = 0; i < q->n_lanes; i++)
        if (q->lanes[i].req != NULL && q->lanes[i].req->phase == SRV_PREFILL)
            q->lanes[i].req->n_fed += q->lanes[i].fed;
    uint32_t row = 0;
    for (uint32_t t = 0; t < n; t++) {
        if (!q->items[t].logits)
            continue;
        srv_req *r = q->owners[t];
        lane *l = &q->lanes[0];
        while (l->req != r)
            l++;
        take_token(q, l, r, q->logits + (size_t)row++ * q->n_vocab);
    }
}

/* Every running and queued request ends (under mu): on shutdown, or when
 * the engine failed. */
static void end_all(sched *q, const char *error) {
    srv_state *s = q->s;
    for (uint32_t i = 0; i < q->n_lanes; i++) {
        srv_req *r = q->lanes[i].req;
        if (r != NULL && finish(q, &q->lanes[i], r, error ? NULL : "cancelled", error))
            req_free(r);
    }
    while (s->queue_head != NULL) {
        srv_req *r = s->queue_head;
        s->queue_head = r->next;
        s->n_queued--;
        if (finish(q, NULL, r, error ? NULL : "cancelled", error ? error : "the server is "
                                                                      "shutting down"))
            req_free(r);
    }
    s->queue_tail = NULL;
}

static void refresh_report(srv_state *s) {
    sw_report rep;
    if (sw_engine_report(s->engine, &rep) != SW_OK)
        return;
    s->m.bytes_to_device = rep.bytes_to_device;
    s->m.peak_device_bytes = rep.peak_device_bytes;
    s->m.plan_device_bytes = rep.plan_device_bytes;
    s->m.peak_host_rss_bytes = rep.peak_host_rss_bytes;
}

/* The running requests' cache rows, of all the lanes' contexts. */
static void count_kv(sched *q) {
    uint64_t used = 0;
    for (uint32_t i = 0; i < q->n_lanes; i++)
        if (q->lanes[i].req != NULL)
            used += sw_session_pos(q->lanes[i].session);
    q->s->m.kv_used_tokens = used;
    q->s->m.kv_capacity_tokens = (uint64_t)q->n_lanes * sw_engine_n_ctx(q->s->engine);
}

static void run_loop(sched *q) {
    srv_state *s = q->s;
    pthread_mutex_lock(&s->mu);
    count_kv(q);
    for (;;) {
        if (s->stopping) {
            end_all(q, NULL);
            break;
        }
        drop_cancelled(q);
        admit(q);
        const uint32_t n = build(q);
        if (n == 0) {
            pthread_cond_wait(&s->work_cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        /* The engine is the scheduler's alone; the items' sessions and
         * tokens are not touched by the connections. */
        const sw_status st = sw_engine_eval_batch(s->engine, q->items, n, q->logits);
        pthread_mutex_lock(&s->mu);
        if (st != SW_OK) {
            fprintf(stderr, "spillway serve: forward failed: %s\n", sw_last_error());
            s->failed = true;
            end_all(q, "the server's forward pass failed; see its log");
            break;
        }
        s->m.forwards++;
        s->m.last_batch = n;
        consume(q, n);
        count_kv(q);
        refresh_report(s);
    }
    pthread_mutex_unlock(&s->mu);
}

void *srv_sched_main(void *arg) {
    srv_state *s = arg;
    sched q = {.s = s, .n_lanes = sw_engine_n_seq(s->engine),
               .cap = sw_engine_max_tokens(s->engine), .n_vocab = sw_engine_n_vocab(s->engine)};
    q.lanes = calloc(q.n_lanes, sizeof *q.lanes);
    q.items = calloc(q.cap, sizeof *q.items);
    q.owners = calloc(q.cap, sizeof *q.owners);
    q.logits = malloc((size_t)q.cap * q.n_vocab * sizeof *q.logits);
    bool ok = q.lanes != NULL && q.items != NULL && q.owners != NULL && q.logits != NULL;
    for (uint32_t i = 0; ok && i < q.n_lanes; i++)
        ok = sw_session_create(s->engine, &q.lanes[i].session) == SW_OK;
    if (ok) {
        run_loop(&q);
    } else {
        fprintf(stderr, "spillway serve: cannot set up %u sequences of %u tokens: %s\n",
                q.n_lanes, q.cap, sw_last_error());
        pthread_mutex_lock(&s->mu);
        s->failed = true;
        end_all(&q, "the server could not set up its sequences");
        pthread_mutex_unlock(&s->mu);
    }
    for (uint32_t i = 0; q.lanes != NULL && i < q.n_lanes; i++)
        sw_session_destroy(q.lanes[i].session);
    free(q.lanes);
    free(q.items);
    free(q.owners);
    free(q.logits);
    return NULL;
}
