/*
 * serve.c — `spillway serve`: plans once for -np parallel sequences (the
 * plan printed as `plan` prints it), listens while the model loads
 * (/health says "loading"), then serves the OpenAI API (server.h) until
 * SIGINT or SIGTERM: queued requests are refused, running ones end with
 * finish_reason "cancelled", and every connection is answered before the
 * engine goes; with --drain-timeout they may first run to their end for
 * that long while new ones are refused (serve_drain). The connection caps
 * and the request deadline (--timeout, --max-conns, --max-conns-per-addr)
 * keep one client from locking the others out (serve/listen.c). With the
 * draft flags every request drafts (speculative decoding) unless it sets
 * "draft_max" 0; the drafter's engine lives until the scheduler is
 * destroyed.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/gen_opts.h"
#include "cli/interrupt.h"
#include "cli/model_arg.h"
#include "cli/replicas.h"
#include "serve/server.h"
#include "util/clock.h"

enum {
    DEFAULT_PORT = 8080, DEFAULT_MAX_BODY = 1 << 20, QUEUE_PER_SEQ = 4,
    DEFAULT_TIMEOUT_S = 30, DEFAULT_MAX_CONNS = 512, DEFAULT_MAX_CONNS_PER_ADDR = 64,
};
#define SHUTDOWN_DRAIN_S 10.0
_Static_assert((int)CLI_MAX_REPLICAS <= (int)SRV_MAX_REPLICAS, "the server holds every replica"); /* the longest a stopping server waits for clients */

typedef struct serve_args {
    const char *host, *api_key, *alias;
    long port;
    long max_body;
    long queue;                  /* -1: QUEUE_PER_SEQ per sequence */
    long timeout_s, max_conns, max_conns_per_addr;
    bool no_webui;               /* --no-webui: no page at "/" */
    bool public_metrics;         /* --public-metrics: /metrics without the key */
    long drain_s;                /* --drain-timeout: 0, SIGTERM cancels what runs */
    long replicas;               /* --replicas: engines, each its own device and plan */
} serve_args;

static void serve_usage(FILE *out) {
    fputs("usage: spillway serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [-np N] [-c CTX]\n"
          "                      [--api-key KEY] [--alias NAME] [--timeout S] [--max-conns N]\n"
          "                      [--max-conns-per-addr N] [--no-webui] [--replicas N]\n"
          "                      [placement and budget flags]\n"
          "  An OpenAI-compatible server: POST /v1/completions, POST /v1/chat/completions\n"
          "  (both with \"stream\": true as server-sent events), GET /v1/models, GET /health,\n"
          "  GET /metrics (Prometheus), GET /v1/plan (the plan as `plan --json` prints it),\n"
          "  and a web page at / (chat, and the plan drawn beside live metrics). Up to -np\n"
          "  requests run together (continuous batching); a bounded queue holds the rest,\n"
          "  then 503 with Retry-After.\n"
          "  With a drafter (--draft-ngram, --draft-model) a request may set \"draft_max\"\n"
          "  (or llama-server's \"speculative.n_max\"): 0 to 16 drafts per verify.\n"
          "  --host ADDR      IPv4 or IPv6 address to listen on (default 127.0.0.1; ::1 for\n"
          "                   IPv6 loopback; 0.0.0.0 or :: for every interface, which warns\n"
          "                   without --api-key)\n"
          "  --port N         TCP port (default 8080)\n"
          "  --api-key KEY    require Authorization: Bearer KEY on /v1/* and /metrics\n"
          "                   (default: $SPILLWAY_API_KEY if set, else none); the web\n"
          "                   page loads without it and asks for it\n"
          "  --no-webui       no web page at / (404 there; the API is unchanged)\n"
          "  --alias NAME     the model's name in the API (default: the file name)\n"
          "  --max-body N     largest request body in bytes (default 1048576)\n"
          "  --queue N        requests waiting beyond the -np running (default 4 x -np)\n"
          "  --timeout S      a request's headers and body must arrive within S seconds of\n"
          "                   its connection opening (or of its previous answer), and an\n"
          "                   answer may go S seconds without the client reading; waiting\n"
          "                   for tokens never times out (default 30)\n"
          "  --max-conns N    open connections in all; past it, 503 with Retry-After\n"
          "                   (default 512)\n"
          "  --max-conns-per-addr N\n"
          "                   open connections from one client address (IPv6: one /64);\n"
          "                   past it, 503 (default 64; raise it behind a proxy)\n"
          "  --drain-timeout S  on SIGINT or SIGTERM, refuse new requests (503; /health\n"
          "                   says \"draining\", 503) and let the running and queued ones\n"
          "                   finish for up to S seconds, then cancel what is left and\n"
          "                   exit 0; a second signal cuts it short (default 0: cancel at\n"
          "                   once); keep it under Kubernetes' terminationGracePeriodSeconds\n"
          "  --public-metrics GET /metrics without --api-key's key (an inference gateway's\n"
          "                   endpoint picker scrapes it without one)\n"
          "  --replicas N     N copies of the plan, each with its own device (cuda/pjrt:\n"
          "                   device i; sim: its own simulated card of --device-mem; cpu:\n"
          "                   its own KV and threads), each serving -np sequences; a\n"
          "                   request goes to the one with the fewest (default 1)\n",
          out);
    gen_opts_usage(out);
}

static bool parse_long(const char *flag, const char *v, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    const long n = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
        cli_error("%s needs an integer in [%ld, %ld], got '%s'", flag, lo, hi, v);
        return false;
    }
    *out = n;
    return true;
}

/* serve's own flags; the rest are the generation flags. */
static int parse_args(gen_opts *o, serve_args *a, int argc, char **argv) {
    char **rest = malloc((size_t)argc * sizeof *rest);
    if (rest == NULL)
        return CLI_EXIT_OOM_HOST;
    int n = 0, rc = CLI_EXIT_OK;
    for (int i = 0; i < argc && rc == CLI_EXIT_OK; i++) {
        const char *f = argv[i];
        if (i > 0 && !strcmp(f, "--no-webui")) {
            a->no_webui = true;
            continue;
        }
        if (i > 0 && !strcmp(f, "--public-metrics")) {
            a->public_metrics = true;
            continue;
        }
        const bool ours = i > 0 && (!strcmp(f, "--host") || !strcmp(f, "--port") ||
                                    !strcmp(f, "--api-key") || !strcmp(f, "--alias") ||
                                    !strcmp(f, "--max-body") || !strcmp(f, "--queue") ||
                                    !strcmp(f, "--timeout") || !strcmp(f, "--max-conns") ||
                                    !strcmp(f, "--max-conns-per-addr") ||
                                    !strcmp(f, "--drain-timeout") || !strcmp(f, "--replicas"));
        if (!ours) {
            rest[n++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("%s needs a value (see spillway serve --help)", f);
            rc = CLI_EXIT_USAGE;
            break;
        }
        const char *v = argv[++i];
        if (!strcmp(f, "--host"))
            a->host = v;
        else if (!strcmp(f, "--api-key"))
            a->api_key = v;
        else if (!strcmp(f, "--alias"))
            a->alias = v;
        else if (!strcmp(f, "--port") && !parse_long(f, v, 1, 65535, &a->port))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--max-body") && !parse_long(f, v, 1024, 1L << 30, &a->max_body))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--queue") && !parse_long(f, v, 0, 1L << 20, &a->queue))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--timeout") && !parse_long(f, v, 1, 86400, &a->timeout_s))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--max-conns") && !parse_long(f, v, 1, 16384, &a->max_conns))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--drain-timeout") && !parse_long(f, v, 0, 86400, &a->drain_s))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--replicas") &&
                 !parse_long(f, v, 1, CLI_MAX_REPLICAS, &a->replicas))
            rc = CLI_EXIT_USAGE;
        else if (!strcmp(f, "--max-conns-per-addr") &&
                 !parse_long(f, v, 1, 16384, &a->max_conns_per_addr))
            rc = CLI_EXIT_USAGE;
    }
    if (rc == CLI_EXIT_OK)
        rc = gen_opts_parse_all(o, n, rest, serve_usage);
    free(rest);
    if (rc == CLI_EXIT_OK && (o->prompt != NULL || o->prompt_file != NULL)) {
        cli_error("serve takes prompts over HTTP, not -p or -f");
        rc = CLI_EXIT_USAGE;
    }
    return rc;
}

/* The model's API name: --alias, or the file name without its folder. */
static const char *serve_model_name(const serve_args *a, const gen_opts *o, char *buf,
                                    size_t cap) {
    if (a->alias != NULL)
        return a->alias;
    const char *path = o->model;
    if (path == NULL && sw_default_model_path(buf, cap) == SW_OK)
        path = buf;
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path ? path : "gemma";
}

/* The draft model's plan, after the target's (draft_start has said how
 * many drafts a verify takes). */
static void print_drafter(const draft_flags *f, const draft_ctx *d) {
    if (d->engine == NULL)
        return;
    fprintf(stderr, "drafter: %s\n", f->model);
    sw_engine_print_plan(d->engine, stderr, 0);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* --drain-timeout: new requests are refused (503, /health "draining", so
 * a Kubernetes readiness probe takes the pod out of its Service) while the
 * submitted ones run to their end, for up to drain_s or until a second
 * signal; the caller then stops as without a drain (what is left is
 * cancelled, every connection answered). The listener stays open, so a
 * client that still connects gets a 503 rather than a refused connection. */
/* Waits on cv (mu held) for a signal or 100 ms, whichever comes first:
 * the shutdown loops re-check their clocks and flags at that pace. */
static void wait_tick(pthread_cond_t *cv, pthread_mutex_t *mu) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &until);
}

static void serve_drain(srv_state *s, double drain_s) {
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    const size_t n = srv_live(s);
    pthread_mutex_unlock(&s->mu);
    fprintf(stderr, "serve: draining: %zu requests may run for up to %.0f s (a second "
            "signal stops at once)\n", n, drain_s);
    cli_interrupt_signal = 0;
    const double t_end = sw_clock_s() + drain_s;
    pthread_mutex_lock(&s->mu);
    while (srv_live(s) > 0 && !s->failed && !cli_interrupt_signal && sw_clock_s() < t_end) {
        wait_tick(&s->out_cv, &s->mu);
    }
    const bool left = srv_live(s) > 0;
    pthread_mutex_unlock(&s->mu);
    fprintf(stderr, "serve: drained%s\n", left ? " (time up or a second signal: cancelling "
            "the rest)" : "");
}

/* Replica i's engine and scheduler (the first one's plan is printed; the
 * others are the same plan on their own device). */
static int start_replica(gen_opts *o, const sw_model *m, size_t i, srv_replica *p,
                         draft_ctx *draft) {
    sw_engine *e = NULL;
    int rc = cli_replica_engine(o, m, i, &e);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (i == 0)
        sw_engine_print_plan(e, stderr, 0);
    sw_scheduler *q = NULL;
    if ((rc = gen_opts_start_scheduler(o, m, e, &q, draft)) != CLI_EXIT_OK) {
        sw_scheduler_destroy(q);
        draft_end(draft);
        sw_engine_destroy(e);
        return rc;
    }
    if (i == 0)
        print_drafter(&o->draft, draft);
    p->engine = e;
    p->sched = q;
    return CLI_EXIT_OK;
}

int cmd_serve(int argc, char **argv) {
    gen_opts o;
    serve_args a = {.host = "127.0.0.1", .port = DEFAULT_PORT, .max_body = DEFAULT_MAX_BODY,
                    .queue = -1, .timeout_s = DEFAULT_TIMEOUT_S, .max_conns = DEFAULT_MAX_CONNS,
                    .max_conns_per_addr = DEFAULT_MAX_CONNS_PER_ADDR, .replicas = 1,
                    .api_key = getenv("SPILLWAY_API_KEY")};
    gen_opts_init(&o);
    int rc = parse_args(&o, &a, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if ((rc = cli_replicas_check(a.replicas, &o)) != CLI_EXIT_OK)
        return rc;
    if (a.api_key != NULL && a.api_key[0] == '\0')
        a.api_key = NULL;
    sw_model *m = NULL;
    if ((rc = cli_open_model(o.model, &m)) != CLI_EXIT_OK)
        return rc;
    char path_buf[4096];
    srv_state s = {.sampler = o.sampler, .model = m,
                   .model_name = serve_model_name(&a, &o, path_buf, sizeof path_buf),
                   .api_key = a.api_key, .max_body = (size_t)a.max_body,
                   .webui = !a.no_webui, .public_metrics = a.public_metrics};
    s.m.t_start = sw_clock_s();
    s.m.created = (int64_t)time(NULL);
    sw_model_special_tokens(m, &s.special);
    cli_note_base_model(m, "serve");
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.work_cv, NULL);
    pthread_cond_init(&s.out_cv, NULL);
    pthread_t sched[SRV_MAX_REPLICAS];
    size_t n_started = 0, n_made = 0;
    srv_replica made[SRV_MAX_REPLICAS];
    draft_ctx draft[SRV_MAX_REPLICAS]; /* drafters, until their schedulers are destroyed */
    memset(made, 0, sizeof made);
    memset(draft, 0, sizeof draft);
    cli_interrupt_catch();
    const srv_net_options net = {.host = a.host, .port = (uint16_t)a.port,
                                 .timeout_s = (unsigned)a.timeout_s,
                                 .max_conns = (unsigned)a.max_conns,
                                 .max_conns_per_addr = (unsigned)a.max_conns_per_addr};
    srv_http *d = srv_http_start(&s, &net);
    if (d == NULL) {
        cli_error("%s", sw_last_error());
        rc = CLI_EXIT_IO;
        goto done;
    }
    fprintf(stderr, "serve: listening on %s (loading the model)\n", srv_http_url(d));
    if (!srv_http_loopback(d) && s.api_key == NULL)
        fprintf(stderr, "serve: warning: --host %s is reachable from other machines and no "
                "--api-key is set: anyone who can connect can use the model\n", a.host);
    for (; n_made < (size_t)a.replicas; n_made++) {
        if (a.replicas > 1)
            fprintf(stderr, "serve: replica %zu of %ld\n", n_made + 1, a.replicas);
        if ((rc = start_replica(&o, m, n_made, &made[n_made], &draft[n_made])) != CLI_EXIT_OK)
            goto done;
    }
    /* every replica loaded: the server takes them at once */
    pthread_mutex_lock(&s.mu);
    for (size_t i = 0; i < n_made; i++) {
        s.rep[i] = made[i];
        s.rep[i].s = &s;
        s.rep[i].index = (unsigned)i;
    }
    s.n_rep = n_made;
    const uint32_t per_seq = sw_engine_n_seq(made[0].engine);
    s.n_seq = (size_t)per_seq * n_made;
    s.queue_cap = a.queue >= 0 ? (size_t)a.queue : s.n_seq * QUEUE_PER_SEQ;
    s.engine = made[0].engine;
    pthread_mutex_unlock(&s.mu);
    for (; n_started < n_made; n_started++)
        if (pthread_create(&sched[n_started], NULL, srv_sched_main, &s.rep[n_started]) != 0) {
            cli_error("cannot start the scheduler thread");
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
    fprintf(stderr, "serve: ready: model '%s', %u sequences of %u tokens%s, queue %zu%s\n",
            s.model_name, per_seq, sw_engine_n_ctx(s.engine),
            n_made > 1 ? " per replica" : "", s.queue_cap,
            s.api_key ? ", API key required" : "");
    if (n_made > 1)
        fprintf(stderr, "serve: %zu replicas, %zu sequences in all\n", n_made, s.n_seq);
    if (s.webui)
        fprintf(stderr, "serve: web page at %s/\n", srv_http_url(d));
    while (!cli_interrupt_signal)
        sleep_ms(100);
    fprintf(stderr, "serve: signal %d: stopping\n", (int)cli_interrupt_signal);
    if (a.drain_s > 0)
        serve_drain(&s, (double)a.drain_s);
done:
    pthread_mutex_lock(&s.mu);
    s.stopping = true;
    pthread_cond_broadcast(&s.work_cv);
    pthread_mutex_unlock(&s.mu);
    for (size_t i = 0; i < n_started; i++)
        pthread_join(sched[i], NULL);
    for (size_t i = n_started; i < s.n_rep; i++)
        srv_sched_main(&s.rep[i]); /* stopping: ends what was submitted, wakes its connections */
    if (d != NULL) {
        /* Every request has ended; let the connections send what is left
         * (a streamed request's last events) before closing them. */
        srv_http_quiesce(d);
        const double t_end = sw_clock_s() + SHUTDOWN_DRAIN_S;
        pthread_mutex_lock(&s.mu);
        while (s.n_answering > 0 && sw_clock_s() < t_end) {
            wait_tick(&s.out_cv, &s.mu);
        }
        pthread_mutex_unlock(&s.mu);
    }
    srv_http_stop(d);
    cli_interrupt_restore();
    for (size_t i = 0; i < n_made; i++) { /* made[i] is s.rep[i] once the server took it */
        sw_scheduler_destroy(made[i].sched);
        draft_end(&draft[i]);
        sw_engine_destroy(made[i].engine);
    }
    sw_model_close(m);
    pthread_cond_destroy(&s.out_cv);
    pthread_cond_destroy(&s.work_cv);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
