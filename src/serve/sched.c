/*
 * sched.c — the server's scheduler thread (server.h): it steps the
 * library's scheduler (sw_scheduler: continuous batching, sampling, stop
 * rule and stop strings, as `spillway batch` runs them) and, after each
 * forward, copies every live request's new text and state into its
 * srv_req, where the connections read it under `mu`, and resumes the
 * connections that wait on it (srv_state.wake); it never touches a socket,
 * so a client that reads slowly holds up no one. Between forwards it
 * passes on the cancellations of clients that went away.
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

/* The library scheduler's counts into s (under mu). */
static void count(srv_state *s) {
    sw_scheduler_stats t;
    sw_scheduler_get_stats(s->sched, &t);
    s->n_queued = t.n_queued;
    s->n_running = t.n_running;
    s->m.kv_used_tokens = t.kv_used_tokens;
    s->m.kv_capacity_tokens = t.kv_capacity_tokens;
    s->m.verify_forwards = t.verify_forwards;
    s->m.drafted_tokens = t.drafted_tokens;
    s->m.accepted_tokens = t.accepted_tokens;
    s->m.verify_tokens = t.verify_tokens;
}

bool srv_submit(srv_state *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    bool ok = !s->stopping && !s->draining && !s->failed && s->sched != NULL &&
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
        ok = sw_scheduler_submit(s->sched, r->prompt, r->n_prompt, &o, &r->req) == SW_OK;
    }
    if (ok) {
        r->phase = SRV_QUEUED;
        r->refs++;
        r->next = s->live;
        s->live = r;
        s->m.requests++;
        count(s);
        pthread_cond_signal(&s->work_cv);
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

/* r's new text and state from its library request (under mu); an ended
 * request is let go by the scheduler side. Returns true when r ended. */
static bool sync_req(srv_state *s, srv_req *r) {
    sw_request_info in;
    sw_request_get_info(s->sched, r->req, &in);
    if (r->tools != NULL) { /* its own text, ended by itself at a call's end */
        if (!srv_tools_take(r->tools, &r->text, r->stop, r->n_stop) &&
            in.state != SW_REQ_DONE) {
            sw_request_cancel(s->sched, r->req);
            r->error = "out of host memory for the output";
        } else if (r->tools->stopped && in.state != SW_REQ_DONE && !r->cancel_sent) {
            sw_request_cancel(s->sched, r->req);
            r->cancel_sent = true;
        }
        if (r->tools->stopped && in.finish == SW_FINISH_CANCELLED && !r->cancelled)
            in.finish = SW_FINISH_STOP;
    } else if (in.text_len > r->text.len) {
        char buf[4096];
        size_t n = sw_request_text(s->sched, r->req, r->text.len, buf, sizeof buf);
        while (n > 0 && sw_bytebuf_add(&r->text, buf, n))
            n = sw_request_text(s->sched, r->req, r->text.len, buf, sizeof buf);
        if (n > 0 && in.state != SW_REQ_DONE) { /* out of memory for the text */
            sw_request_cancel(s->sched, r->req);
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
                sw_request_cancel(s->sched, r->req);
                r->error = "out of host memory for the logprobs";
                break;
            }
            r->lp = lp;
            r->cap_lp = cap;
        }
        const size_t n = sw_request_logprobs(s->sched, r->req, r->n_lp, r->lp + r->n_lp,
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
        const sw_status why = sw_request_error(s->sched, r->req, NULL);
        r->error = s->failed                ? "the server's forward pass failed; see its log"
                   : why == SW_ERR_OOM_HOST ? "the server is out of host memory for the request"
                                            : "the server could not start the request";
    } else if (in.finish == SW_FINISH_CANCELLED && s->stopping && was_queued && !r->cancelled)
        r->error = "the server is shutting down";
    s->m.prompt_tokens += r->n_fed;
    s->m.generated_tokens += r->n_generated;
    if (r->error != NULL)
        s->m.requests_failed++;
    else if (in.finish == SW_FINISH_CANCELLED)
        s->m.requests_cancelled++;
    sw_request_release(s->sched, r->req);
    r->req = NULL;
    return true;
}

/* Every live request synced, its suspended connection resumed if it can
 * go on; the ended ones leave the list (under mu). */
static void sync_all(srv_state *s) {
    for (srv_req **p = &s->live; *p != NULL;) {
        srv_req *r = *p;
        const bool ended = sync_req(s, r);
        if (s->wake != NULL)
            s->wake(r);
        if (!ended) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        if (--r->refs == 0)
            srv_req_free(r);
    }
    count(s);
    pthread_cond_broadcast(&s->out_cv);
}

/* Cancellations of clients that went away, passed on (under mu). */
static void pass_cancels(srv_state *s) {
    for (srv_req *r = s->live; r != NULL; r = r->next)
        if (r->cancelled && !r->cancel_sent) {
            sw_request_cancel(s->sched, r->req);
            r->cancel_sent = true;
        }
}

static void refresh_report(srv_state *s) {
    sw_report rep;
    if (sw_engine_report(s->engine, &rep) != SW_OK)
        return;
    s->m.bytes_to_device = rep.bytes_to_device;
    s->m.peak_device_bytes = rep.peak_device_bytes;
    s->m.experts = rep.experts;
    s->m.plan_device_bytes = rep.plan_device_bytes;
    s->m.peak_host_rss_bytes = rep.peak_host_rss_bytes;
}

void *srv_sched_main(void *arg) {
    srv_state *s = arg;
    pthread_mutex_lock(&s->mu);
    count(s);
    for (;;) {
        if (s->stopping) {
            sw_scheduler_end_all(s->sched, SW_FINISH_CANCELLED);
            sync_all(s);
            break;
        }
        pass_cancels(s);
        sync_all(s); /* cancelled queued requests end at once */
        if (s->live == NULL) {
            pthread_cond_wait(&s->work_cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        uint32_t n = 0;
        const sw_status st = sw_scheduler_step(s->sched, &n);
        pthread_mutex_lock(&s->mu);
        if (st != SW_OK) {
            fprintf(stderr, "spillway serve: forward failed: %s\n", sw_last_error());
            s->failed = true;
            sw_scheduler_end_all(s->sched, SW_FINISH_ERROR);
            sync_all(s);
            break;
        }
        if (n > 0) {
            s->m.forwards++;
            s->m.last_batch = n;
        }
        sync_all(s);
        refresh_report(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
