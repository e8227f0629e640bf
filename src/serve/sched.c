/*
 * sched.c — the server's scheduler thread (server.h): it steps the
 * library's scheduler (sw_scheduler: continuous batching, sampling, stop
 * rule and stop strings, as `spillway batch` runs them) and, after each
 * forward, copies every live request's new text and state into its
 * srv_req, where the connections read it under `mu`, and resumes the
 * connections that wait on it (srv_state.wake); it never touches a socket,
 * so a client that reads slowly holds up no one. Between forwards it
 * passes on the cancellations of clients that went away.
 *
 * With replicas (serve --replicas N) there is one such thread per replica,
 * each over its own engine and requests; a request goes to the replica
 * with the fewest, and the server's totals are the replicas' sums.
 */
#include <stdlib.h>
#include <string.h>

#include "serve/server.h"
#include "serve/tools.h"

void srv_release(srv_state *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    const int left = --r->refs;
    pthread_mutex_unlock(&s->mu);
    if (left == 0)
        srv_req_free(r);
}

size_t srv_live(const srv_state *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->n_rep; i++)
        for (const srv_req *r = s->rep[i].live; r != NULL; r = r->next)
            n++;
    return n;
}

/* The expert caches' counters, summed (slots and layers: each replica's). */
static void add_experts(sw_expert_report *to, const sw_expert_report *x) {
    to->slots = x->slots;
    to->layers = x->layers;
    to->cache_bytes += x->cache_bytes;
    to->steps += x->steps;
    to->routings += x->routings;
    to->needed += x->needed;
    to->hits += x->hits;
    to->misses += x->misses;
    to->copied += x->copied;
    to->copied_bytes += x->copied_bytes;
    to->host_experts += x->host_experts;
    to->host_tokens += x->host_tokens;
    to->prefetched += x->prefetched;
    to->prefetch_hits += x->prefetch_hits;
}

/* The server's gauges: the replicas' sums (peak RSS: the process's). */
static void totals(srv_state *s) {
    srv_metrics *m = &s->m;
    s->n_queued = s->n_running = 0;
    m->kv_used_tokens = m->kv_capacity_tokens = 0;
    m->verify_forwards = m->drafted_tokens = m->accepted_tokens = m->verify_tokens = 0;
    m->bytes_to_device = m->peak_device_bytes = m->plan_device_bytes = 0;
    memset(&m->experts, 0, sizeof m->experts);
    for (size_t i = 0; i < s->n_rep; i++) {
        const srv_replica *p = &s->rep[i];
        s->n_queued += p->n_queued;
        s->n_running += p->n_running;
        m->kv_used_tokens += p->m.kv_used_tokens;
        m->kv_capacity_tokens += p->m.kv_capacity_tokens;
        m->verify_forwards += p->m.verify_forwards;
        m->drafted_tokens += p->m.drafted_tokens;
        m->accepted_tokens += p->m.accepted_tokens;
        m->verify_tokens += p->m.verify_tokens;
        m->bytes_to_device += p->m.bytes_to_device;
        m->peak_device_bytes += p->m.peak_device_bytes;
        m->plan_device_bytes += p->m.plan_device_bytes;
        if (p->m.peak_host_rss_bytes > m->peak_host_rss_bytes)
            m->peak_host_rss_bytes = p->m.peak_host_rss_bytes;
        add_experts(&m->experts, &p->m.experts);
    }
}

/* A replica's library scheduler's counts (under mu), and the totals. */
static void count(srv_replica *p) {
    sw_scheduler_stats t;
    sw_scheduler_get_stats(p->sched, &t);
    p->n_queued = t.n_queued;
    p->n_running = t.n_running;
    p->m.kv_used_tokens = t.kv_used_tokens;
    p->m.kv_capacity_tokens = t.kv_capacity_tokens;
    p->m.verify_forwards = t.verify_forwards;
    p->m.drafted_tokens = t.drafted_tokens;
    p->m.accepted_tokens = t.accepted_tokens;
    p->m.verify_tokens = t.verify_tokens;
    totals(p->s);
}

/* The working replica with the fewest requests (the first of equals);
 * NULL when none works. */
static srv_replica *least_loaded(srv_state *s) {
    srv_replica *best = NULL;
    for (size_t i = 0; i < s->n_rep; i++) {
        srv_replica *p = &s->rep[i];
        if (p->failed || p->sched == NULL)
            continue;
        if (best == NULL || p->n_queued + p->n_running < best->n_queued + best->n_running)
            best = p;
    }
    return best;
}

bool srv_submit(srv_state *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    srv_replica *p = least_loaded(s);
    bool ok = !s->stopping && !s->draining && !s->failed && p != NULL &&
              s->n_queued + s->n_running < s->queue_cap + s->n_seq;
    if (ok) {
        sw_request_options o = sw_request_options_default();
        o.sampling = r->sampling;
        o.n_predict = r->max_tokens;
        o.stop = (const char *const *)r->stop;
        o.n_stop = r->n_stop;
        o.draft_max = r->draft_max;
        o.logprobs = r->logprobs;
        o.grammar = r->grammar;
        if (r->tools != NULL) { /* its text with the tool markers (tools.h) */
            o.on_token = srv_tools_on_token;
            o.user = r->tools;
            if (r->tools->grammar != NULL) /* a forced call's arguments */
                o.grammar = r->tools->grammar;
        }
        ok = sw_scheduler_submit(p->sched, r->prompt, r->n_prompt, &o, &r->req) == SW_OK;
    }
    if (ok) {
        r->phase = SRV_QUEUED;
        r->refs++;
        r->rep = p;
        r->next = p->live;
        p->live = r;
        s->m.requests++;
        p->m.requests++;
        count(p);
        pthread_cond_broadcast(&s->work_cv);   /* p's thread among them */
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* "stop", "length", "cancelled" as OpenAI names them; NULL for an error. */
static const char *finish_name(sw_finish f) {
    switch (f) {
    case SW_FINISH_EOG:
    case SW_FINISH_STOP:
        return "stop";
    case SW_FINISH_LIMIT:
    case SW_FINISH_CONTEXT:
        return "length";
    case SW_FINISH_CANCELLED:
        return "cancelled";
    default:
        return NULL;
    }
}

/* An ended request's tokens and outcome into m. */
static void count_end(srv_metrics *m, const srv_req *r, sw_finish finish) {
    m->prompt_tokens += r->n_fed;
    m->generated_tokens += r->n_generated;
    if (r->error != NULL)
        m->requests_failed++;
    else if (finish == SW_FINISH_CANCELLED)
        m->requests_cancelled++;
}

/* r's new text and state from its library request (under mu); an ended
 * request is let go by the scheduler side. Returns true when r ended. */
static bool sync_req(srv_replica *p, srv_req *r) {
    srv_state *s = p->s;
    sw_scheduler *q = p->sched;
    sw_request_info in;
    sw_request_get_info(q, r->req, &in);
    if (r->tools != NULL) { /* its own text, ended by itself at a call's end */
        if (!srv_tools_take(r->tools, &r->text, r->stop, r->n_stop) &&
            in.state != SW_REQ_DONE) {
            sw_request_cancel(q, r->req);
            r->error = "out of host memory for the output";
        } else if (r->tools->stopped && in.state != SW_REQ_DONE && !r->cancel_sent) {
            sw_request_cancel(q, r->req);
            r->cancel_sent = true;
        }
        if (r->tools->stopped && in.finish == SW_FINISH_CANCELLED && !r->cancelled)
            in.finish = SW_FINISH_STOP;
    } else if (in.text_len > r->text.len) {
        char buf[4096];
        size_t n = sw_request_text(q, r->req, r->text.len, buf, sizeof buf);
        while (n > 0 && sw_bytebuf_add(&r->text, buf, n))
            n = sw_request_text(q, r->req, r->text.len, buf, sizeof buf);
        if (n > 0 && in.state != SW_REQ_DONE) { /* out of memory for the text */
            sw_request_cancel(q, r->req);
            r->error = "out of host memory for the output";
        }
    } else if (in.text_len < r->text.len) { /* a stop string cut it */
        r->text.len = in.text_len;
        r->text.p[in.text_len] = '\0';
    }
    while (r->logprobs >= 0) { /* the new tokens' log-probabilities */
        if (r->n_lp == r->cap_lp) {
            const size_t cap = r->cap_lp ? 2 * r->cap_lp : 64;
            sw_token_logprob *lp = realloc(r->lp, cap * sizeof *lp);
            if (lp == NULL) {
                sw_request_cancel(q, r->req);
                r->error = "out of host memory for the logprobs";
                break;
            }
            r->lp = lp;
            r->cap_lp = cap;
        }
        const size_t n = sw_request_logprobs(q, r->req, r->n_lp, r->lp + r->n_lp,
                                             r->cap_lp - r->n_lp);
        r->n_lp += n;
        if (n == 0)
            break;
    }
    r->n_fed = in.n_fed;
    r->n_generated = in.n_generated;
    if (in.state == SW_REQ_QUEUED)
        return false;
    if (in.state != SW_REQ_DONE) {
        r->phase = in.state == SW_REQ_PREFILL ? SRV_PREFILL : SRV_DECODE;
        return false;
    }
    const bool was_queued = r->phase == SRV_QUEUED;
    r->phase = SRV_DONE;
    r->finish = finish_name(in.finish);
    if (in.finish == SW_FINISH_ERROR && r->error == NULL) {
        const sw_status why = sw_request_error(q, r->req, NULL);
        r->error = p->failed                ? "the server's forward pass failed; see its log"
                   : why == SW_ERR_OOM_HOST ? "the server is out of host memory for the request"
                                            : "the server could not start the request";
    } else if (in.finish == SW_FINISH_CANCELLED && s->stopping && was_queued && !r->cancelled)
        r->error = "the server is shutting down";
    count_end(&s->m, r, in.finish);   /* the server's and the replica's */
    count_end(&p->m, r, in.finish);
    sw_request_release(q, r->req);
    r->req = NULL;
    return true;
}

/* Every live request synced, its suspended connection resumed if it can
 * go on; the ended ones leave the list (under mu). */
static void sync_all(srv_replica *p) {
    srv_state *s = p->s;
    for (srv_req **at = &p->live; *at != NULL;) {
        srv_req *r = *at;
        const bool ended = sync_req(p, r);
        if (s->wake != NULL)
            s->wake(r);
        if (!ended) {
            at = &r->next;
            continue;
        }
        *at = r->next;
        if (--r->refs == 0)
            srv_req_free(r);
    }
    count(p);
    pthread_cond_broadcast(&s->out_cv);
}

/* Cancellations of clients that went away, passed on (under mu). */
static void pass_cancels(srv_replica *p) {
    for (srv_req *r = p->live; r != NULL; r = r->next)
        if (r->cancelled && !r->cancel_sent) {
            sw_request_cancel(p->sched, r->req);
            r->cancel_sent = true;
        }
}

static void refresh_report(srv_replica *p) {
    sw_report rep;
    if (sw_engine_report(p->engine, &rep) != SW_OK)
        return;
    p->m.bytes_to_device = rep.bytes_to_device;
    p->m.peak_device_bytes = rep.peak_device_bytes;
    p->m.experts = rep.experts;
    p->m.plan_device_bytes = rep.plan_device_bytes;
    p->m.peak_host_rss_bytes = rep.peak_host_rss_bytes;
    totals(p->s);
}

/* Every replica failed: the server has no engine left (under mu). */
static bool all_failed(const srv_state *s) {
    for (size_t i = 0; i < s->n_rep; i++)
        if (!s->rep[i].failed)
            return false;
    return true;
}

void *srv_sched_main(void *arg) {
    srv_replica *p = arg;
    srv_state *s = p->s;
    pthread_mutex_lock(&s->mu);
    count(p);
    for (;;) {
        if (s->stopping) {
            sw_scheduler_end_all(p->sched, SW_FINISH_CANCELLED);
            sync_all(p);
            break;
        }
        pass_cancels(p);
        sync_all(p); /* cancelled queued requests end at once */
        if (p->live == NULL) {
            pthread_cond_wait(&s->work_cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        uint32_t n = 0;
        const sw_status st = sw_scheduler_step(p->sched, &n);
        pthread_mutex_lock(&s->mu);
        if (st != SW_OK) {
            if (s->n_rep > 1)
                fprintf(stderr, "spillway serve: replica %u: forward failed: %s\n", p->index,
                        sw_last_error());
            else
                fprintf(stderr, "spillway serve: forward failed: %s\n", sw_last_error());
            p->failed = true;
            s->failed = all_failed(s);
            sw_scheduler_end_all(p->sched, SW_FINISH_ERROR);
            sync_all(p);
            break;
        }
        if (n > 0) {
            s->m.forwards++;
            s->m.last_batch = n;
            p->m.forwards++;
            p->m.last_batch = n;
        }
        sync_all(p);
        refresh_report(p);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
