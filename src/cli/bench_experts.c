/*
 * bench_experts.c — `spillway bench --expert-trace FILE --cache-slots
 * N,...`: replays a routing trace (`spillway run --expert-trace FILE`,
 * engine/expert_trace.c) against expert caches of N slots per layer under
 * each policy (plan/expert_sim.h), without the model, and beside them a
 * static hot set (each layer's N most used experts over the whole trace,
 * which only hindsight can choose). Per cache: the share of the experts
 * each layer step needs that are already held (what a step need not copy
 * or compute on the host), the share of routings that find their expert
 * held, and the misses per layer step.
 *
 * A trace from random weights routes almost uniformly: its hit rates are
 * not a real checkpoint's, and the output says so when the routing looks
 * uniform. Steps are (forward, layer) groups of consecutive lines.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/bench.h"
#include "plan/expert_sim.h"

#define MAX_SLOTS 16
#define MAX_K 64

typedef struct replay_opts {
    const char *trace;
    long slots[MAX_SLOTS];
    size_t n_slots;
    bool policy[2];          /* by expert_policy */
    double decay;
    long n_expert;           /* 0: from the trace */
    bool json;
} replay_opts;

/* One step: a layer's routings in one forward. */
typedef struct step {
    uint32_t layer, n;
    uint32_t *ids;           /* (n) routings, tokens in order */
} step;

typedef struct trace {
    step *s;
    size_t n, cap;
    uint32_t n_layer, n_expert, k;
    uint64_t n_lines, n_forwards;
} trace;

static void usage(FILE *out) {
    fputs("usage: spillway bench --expert-trace FILE --cache-slots N,... [--policy P,...]\n"
          "                      [--decay D] [--experts N] [--json]\n"
          "  --expert-trace FILE  a routing trace (spillway run --expert-trace FILE)\n"
          "  --cache-slots N,...  expert cache sizes to replay, slots per layer\n"
          "  --policy P,...       lru, lfu-decay (default: both)\n"
          "  --decay D            lfu-decay's factor per step, in (0, 1] (default 0.9)\n"
          "  --experts N          experts per layer (default: the largest id seen + 1)\n"
          "  --json               one JSON object\n"
          "no model is loaded; a trace of random weights routes almost uniformly, so its\n"
          "hit rates are not a real checkpoint's\n", out);
}

static int parse_slots(const char *s, replay_opts *o) {
    char *end = NULL;
    o->n_slots = 0;
    for (const char *p = s; *p;) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65536 || o->n_slots == MAX_SLOTS ||
            (*end != ',' && *end != '\0')) {
            cli_error("--cache-slots expects up to %d comma-separated sizes in 1..65536, got "
                      "'%s'", MAX_SLOTS, s);
            return -1;
        }
        o->slots[o->n_slots++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    return o->n_slots ? 0 : -1;
}

static int parse_policies(const char *s, replay_opts *o) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    o->policy[0] = o->policy[1] = false;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        expert_policy p;
        if (expert_policy_parse(t, &p) != SW_OK) {
            cli_error("--policy: %s", sw_last_error());
            return -1;
        }
        o->policy[p] = true;
    }
    return o->policy[0] || o->policy[1] ? 0 : -1;
}

static int parse(int argc, char **argv, replay_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(f, "--json")) {
            o->json = true;
            continue;
        }
        if (i + 1 >= argc) {
            cli_error("bench: '%s' needs a value (see spillway bench --expert-trace --help)", f);
            return -1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(f, "--expert-trace")) {
            o->trace = v;
        } else if (!strcmp(f, "--cache-slots")) {
            if (parse_slots(v, o))
                return -1;
        } else if (!strcmp(f, "--policy")) {
            if (parse_policies(v, o))
                return -1;
        } else if (!strcmp(f, "--decay")) {
            o->decay = strtod(v, &end);
            if (end == v || *end || !(o->decay > 0.0 && o->decay <= 1.0)) {
                cli_error("--decay expects a number in (0, 1], got '%s'", v);
                return -1;
            }
        } else if (!strcmp(f, "--experts")) {
            if (cli_parse_long(f, v, 1, 65536, &o->n_expert))
                return -1;
        } else {
            cli_error("bench: '%s' does not go with --expert-trace (see spillway bench "
                      "--expert-trace FILE --help)", f);
            return -1;
        }
    }
    if (o->n_slots == 0) {
        cli_error("bench --expert-trace needs --cache-slots N,... (slots per layer)");
        return -1;
    }
    return 0;
}

/* The routing of one line, or -1 (printed) for a line that is not one. */
static int parse_line(const char *line, uint64_t lineno, const char *path, uint64_t *fwd,
                      uint32_t *layer, uint32_t *ids, uint32_t *k) {
    json_object *o = json_tokener_parse(line), *v = NULL, *e = NULL;
    int rc = -1;
    if (o == NULL || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "step", &v) || json_object_get_int64(v) < 0)
        goto bad;
    *fwd = (uint64_t)json_object_get_int64(v);
    if (!json_object_object_get_ex(o, "layer", &v) || json_object_get_int64(v) < 0 ||
        json_object_get_int64(v) > 4096 || !json_object_object_get_ex(o, "experts", &e) ||
        !json_object_is_type(e, json_type_array) || json_object_array_length(e) == 0 ||
        json_object_array_length(e) > MAX_K)
        goto bad;
    *layer = (uint32_t)json_object_get_int64(v);
    *k = (uint32_t)json_object_array_length(e);
    for (uint32_t j = 0; j < *k; j++) {
        json_object *x = json_object_array_get_idx(e, j);
        const int64_t id = json_object_get_int64(x);
        if (!json_object_is_type(x, json_type_int) || id < 0 || id > 65535)
            goto bad;
        ids[j] = (uint32_t)id;
    }
    rc = 0;
bad:
    if (rc != 0)
        cli_error("%s:%llu: not a routing line ({\"step\":N,\"layer\":L,...,\"experts\":[...]}; "
                  "write one with spillway run --expert-trace)", path,
                  (unsigned long long)lineno);
    json_object_put(o);
    return rc;
}

/* Appends routings to the last step, or starts a new one. */
static int add(trace *t, bool fresh, uint32_t layer, const uint32_t *ids, uint32_t k) {
    if (fresh) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 1024;
            step *s = realloc(t->s, cap * sizeof *s);
            if (s == NULL)
                return -1;
            t->s = s;
            t->cap = cap;
        }
        t->s[t->n++] = (step){.layer = layer};
    }
    step *s = &t->s[t->n - 1];
    uint32_t *p = realloc(s->ids, (s->n + k) * sizeof *p);
    if (p == NULL)
        return -1;
    memcpy(p + s->n, ids, k * sizeof *p);
    s->ids = p;
    s->n += k;
    return 0;
}

static int read_trace(const char *path, trace *t) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        cli_error("--expert-trace: cannot read '%s'", path);
        return CLI_EXIT_IO;
    }
    char *line = NULL;
    size_t cap = 0;
    uint64_t last_fwd = UINT64_MAX;
    uint32_t last_layer = UINT32_MAX, ids[MAX_K], k = 0;
    int rc = CLI_EXIT_OK;
    while (rc == CLI_EXIT_OK && getline(&line, &cap, f) > 0) {
        uint64_t fwd = 0;
        uint32_t layer = 0;
        t->n_lines++;
        if (line[0] == '\n')
            continue;
        if (parse_line(line, t->n_lines, path, &fwd, &layer, ids, &k)) {
            rc = CLI_EXIT_USAGE;
            break;
        }
        const bool fresh = fwd != last_fwd || layer != last_layer;
        t->n_forwards += fwd != last_fwd;
        if (add(t, fresh, layer, ids, k)) {
            cli_error("bench: out of host memory reading the trace");
            rc = CLI_EXIT_OOM_HOST;
        }
        last_fwd = fwd;
        last_layer = layer;
        t->k = k > t->k ? k : t->k;
        t->n_layer = layer + 1 > t->n_layer ? layer + 1 : t->n_layer;
        for (uint32_t j = 0; j < k; j++)
            t->n_expert = ids[j] + 1 > t->n_expert ? ids[j] + 1 : t->n_expert;
    }
    free(line);
    fclose(f);
    if (rc == CLI_EXIT_OK && t->n == 0) {
        cli_error("--expert-trace: '%s' holds no routing", path);
        rc = CLI_EXIT_USAGE;
    }
    return rc;
}

typedef struct replay_row {
    long slots;
    const char *policy;
    expert_stats st;
} replay_row;

/* Each layer's `slots` most used experts over the trace, held throughout. */
static int static_set(const trace *t, long slots, expert_stats *st) {
    uint64_t *count = calloc((size_t)t->n_layer * t->n_expert, sizeof *count);
    uint8_t *hot = calloc((size_t)t->n_layer * t->n_expert, 1);
    uint8_t *seen = calloc(t->n_expert, 1);
    if (count == NULL || hot == NULL || seen == NULL) {
        free(count), free(hot), free(seen);
        return -1;
    }
    for (size_t i = 0; i < t->n; i++)
        for (uint32_t j = 0; j < t->s[i].n; j++)
            count[(size_t)t->s[i].layer * t->n_expert + t->s[i].ids[j]]++;
    for (uint32_t l = 0; l < t->n_layer; l++) /* the top `slots`, ties to lower ids */
        for (long r = 0; r < slots && r < (long)t->n_expert; r++) {
            uint32_t best = UINT32_MAX;
            for (uint32_t e = 0; e < t->n_expert; e++)
                if (!hot[(size_t)l * t->n_expert + e] &&
                    (best == UINT32_MAX || count[(size_t)l * t->n_expert + e] >
                                               count[(size_t)l * t->n_expert + best]))
                    best = e;
            hot[(size_t)l * t->n_expert + best] = 1;
        }
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < t->n; i++) {
        const step *s = &t->s[i];
        const uint8_t *h = hot + (size_t)s->layer * t->n_expert;
        st->steps++;
        for (uint32_t j = 0; j < s->n; j++) {
            st->routings++;
            st->routing_hits += h[s->ids[j]];
            if (!seen[s->ids[j]]) {
                seen[s->ids[j]] = 1;
                st->needed++;
                st->hits += h[s->ids[j]];
            }
        }
        for (uint32_t j = 0; j < s->n; j++)
            seen[s->ids[j]] = 0;
    }
    st->misses = st->needed - st->hits;
    free(count), free(hot), free(seen);
    return 0;
}

static double share(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

static void print_rows(const replay_opts *o, const trace *t, const replay_row *r, size_t n) {
    const double per_step = share(r[0].st.needed, r[0].st.steps);
    if (o->json) {
        fputs("{\"trace\":", stdout);
        json_put_string(stdout, o->trace);
        printf(",\"forwards\":%llu,\"layer_steps\":%zu,\"layers\":%u,\"experts\":%u,"
               "\"k\":%u,\"caches\":[", (unsigned long long)t->n_forwards, t->n, t->n_layer,
               t->n_expert, t->k);
        for (size_t i = 0; i < n; i++)
            printf("%s{\"slots\":%ld,\"policy\":\"%s\",\"hit_rate\":%.6f,"
                   "\"routing_hit_rate\":%.6f,\"misses_per_step\":%.4f}", i ? "," : "",
                   r[i].slots, r[i].policy, share(r[i].st.hits, r[i].st.needed),
                   share(r[i].st.routing_hits, r[i].st.routings),
                   share(r[i].st.misses, r[i].st.steps));
        printf("]}\n");
        return;
    }
    printf("expert trace %s: %llu forwards, %zu layer steps, %u layers, %u experts, %u routed "
           "per token, %.1f distinct experts needed per layer step\n", o->trace,
           (unsigned long long)t->n_forwards, t->n, t->n_layer, t->n_expert, t->k, per_step);
    printf("%-7s %-22s %9s %13s %12s\n", "slots", "cache", "hit rate", "routing hits",
           "misses/step");
    for (size_t i = 0; i < n; i++)
        printf("%-7ld %-22s %8.1f%% %12.1f%% %12.2f\n", r[i].slots, r[i].policy,
               100.0 * share(r[i].st.hits, r[i].st.needed),
               100.0 * share(r[i].st.routing_hits, r[i].st.routings),
               share(r[i].st.misses, r[i].st.steps));
    printf("hit rate: experts a layer step needs that the cache holds (need not be copied);\n"
           "routing hits: routings whose expert was held at the step's start; a trace of\n"
           "random weights routes near uniformly, so these are not a real checkpoint's\n");
}

int bench_expert_replay(int argc, char **argv) {
    replay_opts o = {.policy = {true, true}, .decay = 0.9};
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    trace t = {0};
    replay_row *rows = calloc(o.n_slots * 3, sizeof *rows);
    size_t n = 0;
    if (rows == NULL) {
        cli_error("bench: out of host memory");
        return CLI_EXIT_OOM_HOST;
    }
    if ((rc = read_trace(o.trace, &t)) != CLI_EXIT_OK)
        goto done;
    if (o.n_expert) {
        if ((long)t.n_expert > o.n_expert) {
            cli_error("--experts %ld: the trace routes to expert %u", o.n_expert,
                      t.n_expert - 1);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        t.n_expert = (uint32_t)o.n_expert;
    }
    for (size_t i = 0; rc == CLI_EXIT_OK && i < o.n_slots; i++) {
        const long slots = o.slots[i] < (long)t.n_expert ? o.slots[i] : (long)t.n_expert;
        for (int p = 0; p < 2; p++) {
            if (!o.policy[p])
                continue;
            expert_cache *c = NULL;
            if (expert_cache_create(t.n_layer, t.n_expert, (uint32_t)slots, (expert_policy)p,
                                    o.decay, &c) != SW_OK) {
                rc = cli_fail(SW_ERR_OOM_HOST);
                break;
            }
            for (size_t s = 0; s < t.n; s++)
                expert_cache_step(c, t.s[s].layer, t.s[s].ids, t.s[s].n);
            rows[n] = (replay_row){slots, expert_policy_name((expert_policy)p), {0}};
            expert_cache_stats(c, &rows[n++].st);
            expert_cache_destroy(c);
        }
        rows[n] = (replay_row){slots, "static (hindsight)", {0}};
        if (static_set(&t, slots, &rows[n++].st)) {
            cli_error("bench: out of host memory");
            rc = CLI_EXIT_OOM_HOST;
        }
    }
    if (rc == CLI_EXIT_OK)
        print_rows(&o, &t, rows, n);
done:
    for (size_t i = 0; i < t.n; i++)
        free(t.s[i].ids);
    free(t.s);
    free(rows);
    return rc;
}
