/*
 * walk.c — the matcher as a DFA built on the fly, for the walks over the
 * vocabulary that classify tokens per position (mask.c). Inside a rule
 * the same few states recur from token to token (in a string, every plain
 * character leads back to the same set of stacks), so each distinct state
 * is interned once, by its bytes, and each (state, byte) transition is
 * computed once and then looked up: a walk costs a table lookup per
 * vocabulary byte instead of a stack expansion.
 *
 * States are kept across walks of one grammar (they are absolute sets of
 * positions, whatever the walk started from) until there are more than
 * RESET_STATES at a walk's start, when all are forgotten.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

enum { RESET_STATES = 1 << 15, MAX_STATES = 1 << 20 };

typedef struct wstate {
    uint32_t off, len;           /* its words in arena: n, accept, off[0..n], pos[...] */
    uint64_t hash;
    int32_t *next;               /* (256) -1: not yet computed; NULL until the first */
    bool live, accept;
} wstate;

struct gwalk {
    uint32_t *arena;
    size_t n_arena, cap_arena;
    wstate *st;
    uint32_t n_st, cap_st;
    int32_t *table;              /* (cap_table) open addressing: state ids, -1 empty */
    uint32_t cap_table;
    gstate *a, *b;               /* scratch */
};

gwalk *gwalk_create(void) {
    gwalk *w = calloc(1, sizeof *w);
    if (w == NULL || (w->a = malloc(sizeof *w->a)) == NULL ||
        (w->b = malloc(sizeof *w->b)) == NULL) {
        gwalk_destroy(w);
        return NULL;
    }
    return w;
}

static void forget(gwalk *w) {
    for (uint32_t i = 0; i < w->n_st; i++)
        free(w->st[i].next);
    w->n_st = 0;
    w->n_arena = 0;
    if (w->table != NULL)
        memset(w->table, 0xff, (size_t)w->cap_table * sizeof *w->table);
}

void gwalk_destroy(gwalk *w) {
    if (w == NULL)
        return;
    forget(w);
    free(w->arena);
    free(w->st);
    free(w->table);
    free(w->a);
    free(w->b);
    free(w);
}

static uint64_t words_hash(const uint32_t *p, uint32_t n) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Doubles the table and re-inserts every state; false when out of memory. */
static bool rehash(gwalk *w) {
    const uint32_t cap = w->cap_table ? 2 * w->cap_table : 1024;
    int32_t *t = malloc((size_t)cap * sizeof *t);
    if (t == NULL)
        return false;
    memset(t, 0xff, (size_t)cap * sizeof *t);
    for (uint32_t i = 0; i < w->n_st; i++) {
        uint32_t k = (uint32_t)w->st[i].hash & (cap - 1);
        while (t[k] >= 0)
            k = (k + 1) & (cap - 1);
        t[k] = (int32_t)i;
    }
    free(w->table);
    w->table = t;
    w->cap_table = cap;
    return true;
}

static bool reserve(gwalk *w, size_t words) {
    if (w->n_arena + words > w->cap_arena) {
        size_t cap = w->cap_arena ? 2 * w->cap_arena : 1 << 16;
        while (cap < w->n_arena + words)
            cap *= 2;
        uint32_t *p = realloc(w->arena, cap * sizeof *p);
        if (p == NULL)
            return false;
        w->arena = p;
        w->cap_arena = cap;
    }
    if (w->n_st == w->cap_st) {
        const uint32_t cap = w->cap_st ? 2 * w->cap_st : 1024;
        wstate *s = realloc(w->st, (size_t)cap * sizeof *s);
        if (s == NULL)
            return false;
        w->st = s;
        w->cap_st = cap;
    }
    return (w->n_st + 1) * 2 <= w->cap_table || rehash(w);
}

/* The id of state s, interned if new; -1 when out of memory. */
static int32_t intern(gwalk *w, const gstate *s) {
    const uint32_t len = 2 + s->n + 1 + s->n_pos;
    if (w->n_st >= MAX_STATES || !reserve(w, len))
        return -1;
    uint32_t *p = w->arena + w->n_arena; /* written past the end; kept only if new */
    p[0] = s->n;
    p[1] = s->accept;
    memcpy(p + 2, s->off, (s->n + 1) * sizeof *p);
    memcpy(p + 3 + s->n, s->pos, s->n_pos * sizeof *p);
    const uint64_t h = words_hash(p, len);
    uint32_t k = (uint32_t)h & (w->cap_table - 1);
    for (; w->table[k] >= 0; k = (k + 1) & (w->cap_table - 1)) {
        const wstate *o = &w->st[w->table[k]];
        if (o->hash == h && o->len == len && !memcmp(w->arena + o->off, p, len * sizeof *p))
            return w->table[k];
    }
    w->st[w->n_st] = (wstate){.off = (uint32_t)w->n_arena, .len = len, .hash = h,
                              .live = s->n > 0, .accept = s->accept};
    w->n_arena += len;
    w->table[k] = (int32_t)w->n_st;
    return (int32_t)w->n_st++;
}

/* State id back into a gstate. */
static void load(const gwalk *w, int32_t id, gstate *s) {
    const uint32_t *p = w->arena + w->st[id].off;
    s->n = p[0];
    s->accept = p[1] != 0;
    memcpy(s->off, p + 2, (s->n + 1) * sizeof *p);
    s->n_pos = s->off[s->n];
    memcpy(s->pos, p + 3 + s->n, s->n_pos * sizeof *p);
}

int32_t gwalk_start(gwalk *w, const sw_grammar *g, uint32_t p) {
    if (w->n_st > RESET_STATES)
        forget(w);
    gstate_at(g, p, w->a);
    return intern(w, w->a);
}

int32_t gwalk_next(gwalk *w, const sw_grammar *g, int32_t id, uint8_t b) {
    wstate *s = &w->st[id];
    if (s->next == NULL) {
        if ((s->next = malloc(256 * sizeof *s->next)) == NULL)
            return -1;
        memset(s->next, 0xff, 256 * sizeof *s->next);
    }
    if (s->next[b] >= 0)
        return s->next[b];
    load(w, id, w->a);
    gstate_advance(g, w->a, b, w->b);
    const int32_t to = intern(w, w->b);
    w->st[id].next[b] = to; /* w->st may have moved */
    return to;
}

int32_t gwalk_intern(gwalk *w, const gstate *s) { return intern(w, s); }

bool gwalk_live(const gwalk *w, int32_t id) { return w->st[id].live; }

bool gwalk_accept(const gwalk *w, int32_t id) { return w->st[id].accept; }
