/*
 * mask.c — which tokens may come next (grammar.h). For each position a
 * parse can stop at (a byte set), a walk over the vocabulary sorted by
 * bytes classifies every token by that rule alone, started from the stack
 * [position]: accepted (some parse consumes it without leaving the rule,
 * or leaves it exactly at its end), or leaving the rule after k bytes with
 * bytes to spare (an "exit": what follows depends on the callers), or
 * rejected. That is computed once per position and grammar, and cached.
 * A step's mask is then, for each live stack: its top's accepted bits,
 * plus each exit whose rest the callers' state (the stack popped once,
 * expanded) accepts: a first-byte table drops most of them unchecked, the
 * rest follow the walk's memoized transitions (walk.c).
 * The last few masks are kept per request by a hash of its state: inside
 * a string the state repeats from token to token.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "util/error.h"

enum { N_RECENT = 4 };

/* A grammar's cached entries past this are all dropped (and rebuilt as
 * needed): a schema with long counted strings can reach thousands of
 * positions, 32 KiB each on a 262k vocabulary. */
#define CACHE_MAX_BYTES ((size_t)256 << 20)

typedef struct gexit {
    uint32_t id;
    uint32_t k;                  /* bytes consumed inside the rule */
} gexit;

typedef struct gentry {
    uint64_t *acc;               /* (n_words) accepted by the rule alone */
    gexit *ex;
    uint32_t n_ex, cap_ex;
} gentry;

struct gcache {
    const gvocab *v;
    uint32_t n_words, n_el;
    gentry **at;                 /* (n_el) per position, NULL until needed */
    size_t bytes;                /* held by the entries */
    gwalk *walk;                 /* the walks' interned states and transitions */
    int32_t *sid;                /* (v->max_len + 1) a walk's state by depth */
};

struct gmatch {
    sw_grammar *g;
    const gvocab *v;
    uint32_t n_words;
    gstate *cur, *t1, *t2;       /* the parses so far; scratch for accepting a token */
    gstate *ctx;                 /* a stack's callers */
    uint64_t *bits;              /* (n_words) the last mask */
    uint64_t *recent;            /* (N_RECENT, n_words) masks of recent states ... */
    uint64_t recent_key[N_RECENT]; /* ... by their hash (0: empty) */
    uint32_t next_recent;
};

static void entry_free(gentry *e) {
    if (e != NULL) {
        free(e->acc);
        free(e->ex);
        free(e);
    }
}

void gcache_destroy(gcache *c) {
    if (c == NULL)
        return;
    for (uint32_t i = 0; c->at != NULL && i < c->n_el; i++)
        entry_free(c->at[i]);
    free(c->at);
    gwalk_destroy(c->walk);
    free(c->sid);
    free(c);
}

static gcache *cache_create(const sw_grammar *g, const gvocab *v) {
    gcache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->v = v;
    c->n_el = g->n_el;
    c->n_words = (v->n_vocab + 63) / 64;
    c->at = calloc(g->n_el, sizeof *c->at);
    c->sid = malloc(((size_t)v->max_len + 1) * sizeof *c->sid);
    c->walk = gwalk_create();
    if (c->at == NULL || c->sid == NULL || c->walk == NULL) {
        gcache_destroy(c);
        return NULL;
    }
    return c;
}

static bool add_exit(gentry *e, uint32_t id, uint32_t k) {
    if (e->n_ex == e->cap_ex) {
        const uint32_t cap = e->cap_ex ? 2 * e->cap_ex : 256;
        gexit *x = realloc(e->ex, (size_t)cap * sizeof *x);
        if (x == NULL)
            return false;
        e->ex = x;
        e->cap_ex = cap;
    }
    e->ex[e->n_ex++] = (gexit){id, k};
    return true;
}

/* Classifies sorted token i from the walk's states by depth c->sid, valid
 * to depth *valid for the previous token; false when out of memory. */
static bool classify(const sw_grammar *g, gcache *c, gentry *e, uint32_t i, uint32_t *valid) {
    const gvocab *v = c->v;
    int32_t *D = c->sid;
    const uint32_t id = v->ord[i], len = v->off[id + 1] - v->off[id];
    const uint8_t *p = v->blob + v->off[id];
    uint32_t d = v->lcp[i] < *valid ? v->lcp[i] : *valid;
    while (d < len && gwalk_live(c->walk, D[d])) {
        if ((D[d + 1] = gwalk_next(c->walk, g, D[d], p[d])) < 0)
            return false;
        d++;
    }
    *valid = d;
    if (d == len && (gwalk_live(c->walk, D[len]) || gwalk_accept(c->walk, D[len]))) {
        e->acc[id >> 6] |= 1ull << (id & 63);
        return true;
    }
    const uint32_t last = d < len - 1 ? d : len - 1;
    for (uint32_t k = 1; k <= last; k++)
        if (gwalk_accept(c->walk, D[k]) && !add_exit(e, id, k))
            return false;
    return true;
}

/* The entry of position p, walking the vocabulary once. */
static gentry *entry_build(const sw_grammar *g, gcache *c, uint32_t p) {
    gentry *e = calloc(1, sizeof *e);
    if (e == NULL || (e->acc = calloc(c->n_words, sizeof *e->acc)) == NULL ||
        (c->sid[0] = gwalk_start(c->walk, g, p)) < 0) {
        entry_free(e);
        return NULL;
    }
    /* only the first bytes the position takes: the other tokens are rejected */
    for (uint32_t b = 0; b < 256; b++) {
        const uint32_t from = c->v->first[b], to = c->v->first[b + 1];
        if (from == to)
            continue;
        const int32_t s1 = gwalk_next(c->walk, g, c->sid[0], (uint8_t)b);
        bool ok = s1 >= 0;
        if (ok && !gwalk_live(c->walk, s1) && !gwalk_accept(c->walk, s1))
            continue;
        uint32_t valid = 0;
        for (uint32_t i = from; ok && i < to; i++)
            ok = classify(g, c, e, i, &valid);
        if (!ok) {
            entry_free(e);
            return NULL;
        }
    }
    return e;
}

/* The cache entry of position p for m's vocabulary (under g->mu). */
static sw_status entry_get(gmatch *m, uint32_t p, gentry **out) {
    sw_grammar *g = m->g;
    if (g->cache != NULL && g->cache->v != m->v) { /* another model's: start over */
        gcache_destroy(g->cache);
        g->cache = NULL;
    }
    if (g->cache == NULL && (g->cache = cache_create(g, m->v)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar's token cache");
    gcache *c = g->cache;
    if (c->at[p] == NULL && c->bytes > CACHE_MAX_BYTES) { /* no entry is in use between calls */
        for (uint32_t i = 0; i < c->n_el; i++) {
            entry_free(c->at[i]);
            c->at[i] = NULL;
        }
        c->bytes = 0;
    }
    if (c->at[p] == NULL) {
        if ((c->at[p] = entry_build(g, c, p)) == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar's token cache");
        c->bytes += (size_t)c->n_words * sizeof(uint64_t) + c->at[p]->cap_ex * sizeof(gexit);
    }
    *out = c->at[p];
    return SW_OK;
}

/* Whether the callers' state ctx (a walk state id) takes bytes p[0..n). */
static bool ctx_accepts(gwalk *w, const sw_grammar *g, int32_t ctx, const uint8_t *p,
                        uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (!gwalk_live(w, ctx) || (ctx = gwalk_next(w, g, ctx, p[i])) < 0)
            return false;
    }
    return gwalk_live(w, ctx) || gwalk_accept(w, ctx);
}

/* Stack i of m->cur's exits that its callers accept, into bits: the
 * callers' state goes into the walk's DFA, so a rest like `",` is
 * followed by table lookups, once computed for any request (under g->mu). */
static sw_status add_exits(gmatch *m, const gentry *e, uint32_t i, uint64_t *bits) {
    const gstate *s = m->cur;
    gwalk *w = m->g->cache->walk;
    const uint32_t a = s->off[i], n = s->off[i + 1] - a;
    gstate_from_stack(m->g, s->pos + a, n - 1, m->ctx);
    const int32_t ctx = gwalk_intern(w, m->ctx);
    if (ctx < 0)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar's token cache");
    uint8_t first[32] = {0};     /* bytes some caller's parse can take next */
    for (uint32_t j = 0; j < m->ctx->n; j++) {
        const uint8_t *set = m->g->set[m->g->el[m->ctx->pos[m->ctx->off[j + 1] - 1]].v];
        for (int k = 0; k < 32; k++)
            first[k] |= set[k];
    }
    const gvocab *v = m->v;
    for (uint32_t x = 0; x < e->n_ex; x++) {
        const uint32_t id = e->ex[x].id, k = e->ex[x].k;
        if (bits[id >> 6] >> (id & 63) & 1)
            continue;
        const uint8_t *p = v->blob + v->off[id];
        if (!(first[p[k] >> 3] >> (p[k] & 7) & 1))
            continue;
        if (ctx_accepts(w, m->g, ctx, p + k, v->off[id + 1] - v->off[id] - k))
            bits[id >> 6] |= 1ull << (id & 63);
    }
    return SW_OK;
}

static uint64_t state_hash(const gstate *s) {
    uint64_t h = 1469598103934665603ull ^ s->n ^ ((uint64_t)s->accept << 40);
    for (uint32_t i = 0; i <= s->n; i++)
        h = (h ^ s->off[i]) * 1099511628211ull;
    for (uint32_t i = 0; i < s->n_pos; i++)
        h = (h ^ s->pos[i]) * 1099511628211ull;
    return h | 1; /* never 0: that marks an empty slot */
}

static sw_status compute(gmatch *m, uint64_t *bits) {
    memset(bits, 0, (size_t)m->n_words * sizeof *bits);
    sw_status st = SW_OK;
    pthread_mutex_lock(&m->g->mu);
    for (uint32_t i = 0; i < m->cur->n && st == SW_OK; i++) {
        gentry *e = NULL;
        const uint32_t top = m->cur->pos[m->cur->off[i + 1] - 1];
        st = entry_get(m, top, &e);
        if (st != SW_OK)
            break;
        for (uint32_t w = 0; w < m->n_words; w++)
            bits[w] |= e->acc[w];
        if (e->n_ex > 0)
            st = add_exits(m, e, i, bits);
    }
    pthread_mutex_unlock(&m->g->mu);
    for (uint32_t j = 0; m->cur->accept && j < m->v->n_end; j++)
        bits[m->v->end_ids[j] >> 6] |= 1ull << (m->v->end_ids[j] & 63);
    return st;
}

sw_status gmatch_mask_bits(gmatch *m, const uint64_t **out) {
    const uint64_t key = state_hash(m->cur);
    for (uint32_t r = 0; r < N_RECENT; r++)
        if (m->recent_key[r] == key) {
            *out = m->recent + (size_t)r * m->n_words;
            return SW_OK;
        }
    SW_TRY(compute(m, m->bits));
    const uint32_t r = m->next_recent++ % N_RECENT;
    memcpy(m->recent + (size_t)r * m->n_words, m->bits, (size_t)m->n_words * sizeof *m->bits);
    m->recent_key[r] = key;
    *out = m->bits;
    return SW_OK;
}

sw_status gmatch_mask_logits(gmatch *m, float *logits) {
    const uint64_t *bits = NULL;
    SW_TRY(gmatch_mask_bits(m, &bits));
    const uint32_t n = m->v->n_vocab;
    for (uint32_t w = 0; w < m->n_words; w++) {
        const uint64_t word = bits[w];
        if (word == ~0ull)
            continue;
        const uint32_t base = w * 64, end = base + 64 < n ? base + 64 : n;
        for (uint32_t i = base; i < end; i++)
            if (!(word >> (i - base) & 1))
                logits[i] = -INFINITY;
    }
    return SW_OK;
}

bool gmatch_accept(gmatch *m, int32_t id) {
    const gvocab *v = m->v;
    if (id < 0 || (uint32_t)id >= v->n_vocab)
        return false;
    for (uint32_t j = 0; j < v->n_end; j++)
        if (v->end_ids[j] == id)
            return m->cur->accept;
    const uint32_t len = v->off[id + 1] - v->off[id];
    const uint8_t *p = v->blob + v->off[id];
    gstate *src = m->cur;
    for (uint32_t i = 0; i < len; i++) {
        gstate *dst = src == m->t1 ? m->t2 : m->t1;
        if (!gstate_advance(m->g, src, p[i], dst))
            return false;
        src = dst;
    }
    if (len == 0)
        return false;
    gstate *old = m->cur; /* the final state becomes current; the old one scratch */
    m->cur = src;
    if (src == m->t1)
        m->t1 = old;
    else
        m->t2 = old;
    return true;
}

bool gmatch_done(const gmatch *m) { return m->cur->n == 0 && m->cur->accept; }

const gstate *gmatch_state(const gmatch *m) { return m->cur; }

sw_status gmatch_create(sw_grammar *g, const gvocab *v, gmatch **out) {
    *out = NULL;
    gmatch *m = calloc(1, sizeof *m);
    if (m == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar matcher");
    m->g = g;
    m->v = v;
    m->n_words = (v->n_vocab + 63) / 64;
    m->cur = malloc(sizeof *m->cur);
    m->t1 = malloc(sizeof *m->t1);
    m->t2 = malloc(sizeof *m->t2);
    m->ctx = malloc(sizeof *m->ctx);
    m->bits = malloc((size_t)m->n_words * sizeof *m->bits);
    m->recent = malloc((size_t)N_RECENT * m->n_words * sizeof *m->recent);
    if (!m->cur || !m->t1 || !m->t2 || !m->ctx || !m->bits || !m->recent) {
        m->g = NULL;
        gmatch_destroy(m);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar matcher");
    }
    grammar_ref(g);
    gstate_start(g, m->cur);
    *out = m;
    return SW_OK;
}

void gmatch_destroy(gmatch *m) {
    if (m == NULL)
        return;
    grammar_unref(m->g);
    free(m->cur);
    free(m->t1);
    free(m->t2);
    free(m->ctx);
    free(m->bits);
    free(m->recent);
    free(m);
}
