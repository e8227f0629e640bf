/*
 * http.c — the HTTP side of `spillway serve` (server.h) on libmicrohttpd:
 * a small pool of threads polling with epoll, fed by listen.c's accepting
 * thread (MHD_USE_NO_LISTEN_SOCKET), so a thread never blocks: a
 * connection whose request waits for tokens is suspended and the
 * scheduler thread resumes it (srv_state.wake) when it has something to
 * send. Bodies are collected up to srv_state.max_body (a larger one is
 * refused with 413 once read), the API key is checked in constant time,
 * and a streamed request is sent as server-sent events that hold back
 * what a stop string might still cut and any incomplete UTF-8 sequence. A
 * client that goes away mid-stream marks its request cancelled: the
 * scheduler frees its sequence before the next forward. A suspended
 * connection has no timeout; one that is sending, or awaiting a request,
 * is closed after --timeout without progress (listen.c's deadline bounds
 * the request's arrival in all).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "serve/server.h"
#include "serve/webui.h"
#include "util/clock.h"
#include "util/error.h"

enum { POOL_THREADS = 4, LOG_BURST = 5 };
#define LOG_EVERY_S 10.0         /* libmicrohttpd's messages: LOG_BURST a period at most */

struct srv_http {
    srv_state *s;
    srv_listener *l;
    struct MHD_Daemon *d;
    pthread_mutex_t log_mu;      /* the fields below */
    double log_s;                /* when the period began */
    unsigned n_logged;           /* messages printed in it */
    uint64_t n_left_out;         /* ... and left out */
};

/* One request on a connection (libmicrohttpd's req_cls). */
typedef struct conn {
    sw_bytebuf body;
    bool too_big, oom;
    srv_req *r;                  /* a non-streamed request until answered (a reference) */
} conn;

static enum MHD_Result send_reply(struct MHD_Connection *c, srv_reply rep, const char *type,
                                  bool retry_after) {
    if (rep.body == NULL) /* strdup failed */
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(rep.body), rep.body, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(rep.body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    if (retry_after)
        MHD_add_response_header(resp, "Retry-After", "1");
    const enum MHD_Result ok = MHD_queue_response(c, rep.status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, srv_reply rep) {
    return send_reply(c, rep, "application/json", false);
}

/* ---- streaming ------------------------------------------------------------ */

typedef struct stream {
    srv_state *s;
    srv_req *r;
    struct MHD_Connection *c;
    size_t sent;                 /* text bytes sent */
    bool first, ended;
    sw_bytebuf pend;             /* formatted events; pend_off of them handed over */
    size_t pend_off;
} stream;

static bool pend_add(stream *st, const char *a, size_t n) {
    return sw_bytebuf_add(&st->pend, a, n);
}

static bool pend_event(stream *st, char *json) {
    if (json == NULL)
        return false;
    const bool ok = pend_add(st, "data: ", 6) && pend_add(st, json, strlen(json)) &&
                    pend_add(st, "\n\n", 2);
    free(json);
    return ok;
}

/* Text bytes that may go out now: all of it when done; else short of what
 * a stop string could still cut, and not inside a UTF-8 sequence. */
static size_t safe_len(const srv_req *r) {
    if (r->phase == SRV_DONE)
        return r->text.len;
    size_t n = r->text.len;
    const size_t hold = r->stop_max_len > 0 ? r->stop_max_len - 1 : 0;
    n = n > hold ? n - hold : 0;
    size_t k = n;
    while (k > 0 && ((unsigned char)r->text.p[k - 1] & 0xC0) == 0x80)
        k--; /* k - 1: the lead byte of the last sequence, if incomplete */
    if (k > 0) {
        const unsigned char lead = (unsigned char)r->text.p[k - 1];
        const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (n - (k - 1) < need)
            n = k - 1;
    }
    return n;
}

/* Formats what is new (under mu). */
static bool stream_fill(stream *st) {
    srv_state *s = st->s;
    srv_req *r = st->r;
    const size_t n = safe_len(r);
    if (n > st->sent || (st->first && r->chat)) {
        if (!pend_event(st, srv_api_chunk(s, r, r->text.p + st->sent, n - st->sent, NULL,
                                          st->first)))
            return false;
        st->first = false;
        st->sent = n;
    }
    if (r->phase == SRV_DONE) {
        char *last = NULL;
        if (r->error != NULL) {
            srv_reply e = srv_api_error(503, "server_error", "%s", r->error);
            last = e.body;
        } else {
            last = srv_api_chunk(s, r, "", 0, r->finish ? r->finish : "stop", false);
        }
        if (!pend_event(st, last) || !pend_add(st, "data: [DONE]\n\n", 14))
            return false;
        st->ended = true;
    }
    return true;
}

/* Resumes r's suspended connection when it can go on: r ended, or its
 * stream has new text to send (under mu; srv_state.wake). */
static void wake(srv_req *r) {
    if (r->waiter == NULL)
        return;
    if (r->phase != SRV_DONE && !(r->stream && safe_len(r) > r->waiter_sent))
        return;
    struct MHD_Connection *c = r->waiter;
    r->waiter = NULL;
    MHD_resume_connection(c);
}

/* libmicrohttpd asks for more of a stream: what is formatted, or the
 * connection suspended until the scheduler has more (returning 0). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *st = cls;
    if (st->pend_off == st->pend.len) {
        st->pend.len = st->pend_off = 0;
        if (st->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        srv_state *s = st->s;
        srv_req *r = st->r;
        pthread_mutex_lock(&s->mu);
        if (r->phase != SRV_DONE && safe_len(r) <= st->sent && !(st->first && r->chat)) {
            r->waiter = st->c;
            r->waiter_sent = st->sent;
            MHD_suspend_connection(st->c);
            pthread_mutex_unlock(&s->mu);
            return 0;
        }
        const bool ok = stream_fill(st);
        pthread_mutex_unlock(&s->mu);
        if (!ok)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = st->pend.len - st->pend_off;
    n = n < max ? n : max;
    memcpy(buf, st->pend.p + st->pend_off, n);
    st->pend_off += n;
    return (ssize_t)n;
}

/* The connection is finished, or the client went away. */
static void stream_free(void *cls) {
    stream *st = cls;
    srv_state *s = st->s;
    pthread_mutex_lock(&s->mu);
    if (st->r->phase != SRV_DONE) {
        st->r->cancelled = true;
        pthread_cond_broadcast(&s->work_cv); /* r's replica among them */
    }
    if (st->r->waiter == st->c)
        st->r->waiter = NULL;
    s->n_answering--;
    pthread_cond_broadcast(&s->out_cv);
    pthread_mutex_unlock(&s->mu);
    srv_release(s, st->r);
    sw_bytebuf_free(&st->pend);
    free(st);
}

/* ---- requests ------------------------------------------------------------- */

static bool key_ok(const srv_state *s, struct MHD_Connection *c) {
    if (s->api_key == NULL)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *want = s->api_key;
    if (h == NULL || strncmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    /* constant time in the key's length: every byte is compared */
    const size_t hn = strlen(h), wn = strlen(want);
    unsigned diff = (unsigned)(hn ^ wn);
    for (size_t i = 0; i < wn; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < hn ? h[i] : 0);
    return diff == 0;
}

/* A non-streamed request's answer once it ended (k->r's reference let go);
 * until then the connection is suspended (woken early, it suspends again). */
static enum MHD_Result answer(srv_state *s, struct MHD_Connection *c, conn *k) {
    srv_req *r = k->r;
    pthread_mutex_lock(&s->mu);
    const bool done = r->phase == SRV_DONE;
    if (!done) {
        r->waiter = c;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&s->mu);
    if (!done)
        return MHD_YES;
    k->r = NULL;
    srv_reply rep = srv_api_response(s, r);
    srv_release(s, r);
    const enum MHD_Result ok = send_json(c, rep);
    pthread_mutex_lock(&s->mu);
    s->n_answering--;
    pthread_cond_broadcast(&s->out_cv);
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static enum MHD_Result start_generation(srv_state *s, struct MHD_Connection *c, bool chat,
                                        conn *k) {
    srv_req *r = NULL;
    srv_reply err = {0};
    if (!srv_api_parse(s, chat, k->body.p ? k->body.p : "", k->body.len, &r, &err))
        return send_json(c, err);
    if (!srv_submit(s, r)) {
        pthread_mutex_lock(&s->mu);
        const bool stopping = s->stopping || s->draining || s->failed || s->engine == NULL;
        const size_t queued = s->n_queued;
        pthread_mutex_unlock(&s->mu);
        srv_release(s, r);
        if (stopping)
            return send_json(c, srv_api_error(503, "server_error", "the server is not "
                                              "accepting requests (loading, failed or "
                                              "shutting down)"));
        return send_reply(c, srv_api_error(503, "server_error", "the server is busy: %zu "
                                           "requests queued; retry later", queued),
                          "application/json", true);
    }
    pthread_mutex_lock(&s->mu);
    s->n_answering++; /* until the answer is handed to the connection */
    pthread_mutex_unlock(&s->mu);
    if (r->stream) {
        stream *st = calloc(1, sizeof *st);
        struct MHD_Response *resp = NULL;
        if (st != NULL) {
            *st = (stream){.s = s, .r = r, .c = c, .first = true};
            resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st,
                                                     stream_free);
        }
        if (resp == NULL) {
            if (st != NULL) {
                stream_free(st); /* cancels r, drops our reference and the count */
            } else {
                pthread_mutex_lock(&s->mu);
                r->cancelled = true;
                s->n_answering--;
                pthread_mutex_unlock(&s->mu);
                srv_release(s, r);
            }
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        const enum MHD_Result ok = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return ok;
    }
    k->r = r;
    return answer(s, c, k);
}

static enum MHD_Result route(srv_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, conn *k) {
    srv_state *s = h->s;
    const bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    const bool completions = !strcmp(url, "/v1/completions");
    const bool chat = !strcmp(url, "/v1/chat/completions");
    if (!strcmp(url, "/health"))
        return get ? send_json(c, srv_api_health(s))
                   : send_json(c, srv_api_error(405, "invalid_request_error", "use GET"));
    const srv_asset *page = s->webui ? srv_webui_find(url) : NULL;
    if (page != NULL) /* the web page: no key, it holds no secret (webui.h) */
        return get || !strcmp(method, "HEAD")
                   ? srv_webui_send(c, page)
                   : send_json(c, srv_api_error(405, "invalid_request_error", "use GET"));
    const bool known = completions || chat || !strcmp(url, "/v1/models") ||
                       !strcmp(url, "/v1/plan") || !strcmp(url, "/metrics");
    if (!known)
        return send_json(c, srv_api_error(404, "invalid_request_error", "no such endpoint: "
                                          "%.200s", url));
    const bool open = s->public_metrics && !strcmp(url, "/metrics"); /* gateways' scrapes */
    if (!open && !key_ok(s, c))
        return send_json(c, srv_api_error(401, "invalid_request_error", "a valid API key is "
                                          "required: Authorization: Bearer KEY"));
    if (!strcmp(url, "/v1/models"))
        return get ? send_json(c, srv_api_models(s))
                   : send_json(c, srv_api_error(405, "invalid_request_error", "use GET"));
    if (!strcmp(url, "/v1/plan"))
        return get ? send_json(c, srv_api_plan(s))
                   : send_json(c, srv_api_error(405, "invalid_request_error", "use GET"));
    if (!strcmp(url, "/metrics")) {
        if (!get)
            return send_json(c, srv_api_error(405, "invalid_request_error", "use GET"));
        const srv_conn_counts cc = srv_listen_counts(h->l);
        return send_reply(c, srv_api_metrics(s, &cc), "text/plain; version=0.0.4", false);
    }
    if (!post)
        return send_json(c, srv_api_error(405, "invalid_request_error", "use POST"));
    if (k->too_big)
        return send_json(c, srv_api_error(413, "invalid_request_error", "the body is over "
                                          "%zu bytes", s->max_body));
    if (k->oom)
        return send_json(c, srv_api_error(500, "server_error", "out of memory"));
    return start_generation(s, c, chat, k);
}

/* The connection's listener slot (listen.c), or NULL. */
static srv_slot *slot_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_cls) {
    (void)version;
    srv_http *h = cls;
    srv_state *s = h->s;
    conn *k = *req_cls;
    if (k == NULL) {
        if ((k = calloc(1, sizeof *k)) == NULL)
            return MHD_NO;
        *req_cls = k;
        return MHD_YES;
    }
    if (k->r != NULL) /* resumed */
        return answer(s, c, k);
    if (*upload_size > 0) {
        const size_t n = *upload_size;
        *upload_size = 0;
        if (k->too_big || k->oom || k->body.len + n > s->max_body) {
            k->too_big = k->too_big || (!k->oom && k->body.len + n > s->max_body);
            return MHD_YES; /* read and dropped; refused at the end */
        }
        k->oom = !sw_bytebuf_add(&k->body, upload, n);
        return MHD_YES;
    }
    srv_listen_received(h->l, slot_of(c)); /* all in: no deadline while answered */
    return route(h, c, url, method, k);
}

/* The request ended: answered, failed, or the client or the server went
 * away. A non-streamed request not yet answered is let go (cancelled). */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)toe;
    srv_http *h = cls;
    conn *k = *req_cls;
    srv_listen_answered(h->l, slot_of(c)); /* the next request's deadline runs */
    if (k == NULL)
        return;
    if (k->r != NULL) {
        srv_state *s = h->s;
        srv_req *r = k->r;
        pthread_mutex_lock(&s->mu);
        if (r->phase != SRV_DONE) {
            r->cancelled = true;
            pthread_cond_broadcast(&s->work_cv); /* r's replica among them */
        }
        if (r->waiter == c)
            r->waiter = NULL;
        s->n_answering--;
        pthread_cond_broadcast(&s->out_cv);
        pthread_mutex_unlock(&s->mu);
        srv_release(s, r);
    }
    sw_bytebuf_free(&k->body);
    free(k);
    *req_cls = NULL;
}

/* A connection started (its listener slot found by its socket) or ended. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    srv_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci != NULL ? srv_listen_opened(h->l, ci->connect_fd) : NULL;
    } else {
        srv_listen_closed(h->l, *socket_context);
        *socket_context = NULL;
    }
}

/* libmicrohttpd's messages (mostly clients that went away, or were cut at
 * their deadline), on stderr: LOG_BURST every LOG_EVERY_S at most, so a
 * flood of clients cannot flood the log. */
static void on_log(void *cls, const char *fmt, va_list ap) {
    srv_http *h = cls;
    pthread_mutex_lock(&h->log_mu);
    const double now = sw_clock_s();
    if (now - h->log_s >= LOG_EVERY_S) {
        if (h->n_left_out > 0)
            fprintf(stderr, "serve: libmicrohttpd: %llu more messages left out\n",
                    (unsigned long long)h->n_left_out);
        h->log_s = now;
        h->n_logged = 0;
        h->n_left_out = 0;
    }
    if (h->n_logged < LOG_BURST) {
        h->n_logged++;
        fputs("serve: libmicrohttpd: ", stderr);
        vfprintf(stderr, fmt, ap);
    } else {
        h->n_left_out++;
    }
    pthread_mutex_unlock(&h->log_mu);
}

srv_http *srv_http_start(srv_state *s, const srv_net_options *o) {
    srv_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the server");
        return NULL;
    }
    h->s = s;
    pthread_mutex_init(&h->log_mu, NULL);
    if ((h->l = srv_listen_open(o)) == NULL)
        goto fail;
    /* above the listener's caps, so libmicrohttpd itself never refuses one */
    const unsigned mhd_limit = o->max_conns * 2 + 64 * POOL_THREADS;
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_NO_LISTEN_SOCKET |
            MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG,
        0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)POOL_THREADS, MHD_OPTION_CONNECTION_LIMIT,
        mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, h, MHD_OPTION_END);
    if (h->d == NULL) {
        sw_errorf(SW_ERR_IO, "cannot start libmicrohttpd's threads: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_lock(&s->mu);
    s->wake = wake;
    pthread_mutex_unlock(&s->mu);
    if (!srv_listen_start(h->l, h->d))
        goto fail;
    return h;
fail:
    srv_http_stop(h);
    return NULL;
}

const char *srv_http_url(const srv_http *h) {
    return srv_listen_url(h->l);
}

bool srv_http_loopback(const srv_http *h) {
    return srv_listen_loopback(h->l);
}

void srv_http_quiesce(srv_http *h) {
    srv_listen_stop(h->l);
}

void srv_http_stop(srv_http *h) {
    if (h == NULL)
        return;
    srv_listen_stop(h->l);
    if (h->d != NULL) {
        pthread_mutex_lock(&h->s->mu);
        h->s->wake = NULL;
        pthread_mutex_unlock(&h->s->mu);
        MHD_stop_daemon(h->d);
    }
    srv_listen_close(h->l);
    pthread_mutex_destroy(&h->log_mu);
    free(h);
}
