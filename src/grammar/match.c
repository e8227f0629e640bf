/*
 * match.c — the grammar's pushdown automaton (grammar.h): a state is the
 * set of parses alive (stacks of element positions, each top a byte set),
 * advanced one byte at a time. Expanding a reference replaces the top by
 * its continuation (dropped when the continuation is the end of the
 * alternative: tail calls keep repetition in constant stack) and pushes
 * each alternative's start.
 *
 * Limits, so hostile or odd grammars end: a stack deeper than
 * GM_MAX_DEPTH, expansion nested deeper than MAX_EXPAND or taking more
 * than EXPAND_BUDGET steps for one byte, or more than
 * GM_MAX_STACKS parses (or GM_POOL positions) drop the parses beyond them.
 * Dropping only narrows what is allowed: every parse kept is still valid.
 */
#include <string.h>

#include "grammar/grammar.h"

enum { MAX_EXPAND = 64, EXPAND_BUDGET = 1 << 16 };

static bool has_byte(const sw_grammar *g, uint32_t set, uint8_t b) {
    return (g->set[set][b >> 3] >> (b & 7)) & 1; /* sets 0..255 are stored too */
}

/* Adds stack stk (n positions) to out unless it is there already. */
static void push_unique(gstate *out, const uint32_t *stk, uint32_t n) {
    for (uint32_t i = 0; i < out->n; i++) {
        const uint32_t a = out->off[i], len = out->off[i + 1] - a;
        if (len == n && !memcmp(out->pos + a, stk, n * sizeof *stk))
            return;
    }
    if (out->n >= GM_MAX_STACKS || out->n_pos + n > GM_POOL)
        return;
    memcpy(out->pos + out->n_pos, stk, n * sizeof *stk);
    out->n_pos += n;
    out->off[++out->n] = out->n_pos;
}

/* Every parse of stack stk (n positions; its top any element) into out,
 * each ending at a byte set; a stack that empties marks out accepting.
 * stk is not modified. */
static void expand(const sw_grammar *g, const uint32_t *stk, uint32_t n, gstate *out,
                   int depth, int *budget) {
    if (depth > MAX_EXPAND || --*budget < 0) /* a grammar that branches without end */
        return;
    if (n == 0) {
        out->accept = true;
        return;
    }
    const uint32_t p = stk[n - 1];
    const gel e = g->el[p];
    if (e.type == GEL_SET) {
        push_unique(out, stk, n);
        return;
    }
    if (e.type == GEL_END) { /* the alternative is done: back to its caller */
        expand(g, stk, n - 1, out, depth + 1, budget);
        return;
    }
    uint32_t loc[GM_MAX_DEPTH + 1];
    uint32_t m = n - 1;
    memcpy(loc, stk, m * sizeof *loc);
    if (g->el[p + 1].type != GEL_END)
        loc[m++] = p + 1;
    if (m >= GM_MAX_DEPTH)
        return;
    const grule r = g->rule[e.v];
    for (uint32_t a = 0; a < r.n_alt; a++) {
        loc[m] = g->alt_start[r.first_alt + a];
        expand(g, loc, m + 1, out, depth + 1, budget);
    }
}

static void clear(gstate *s) {
    s->n = s->n_pos = 0;
    s->off[0] = 0;
    s->accept = false;
}

void gstate_start(const sw_grammar *g, gstate *s) {
    clear(s);
    const grule r = g->rule[g->root];
    for (uint32_t a = 0; a < r.n_alt; a++) {
        const uint32_t p = g->alt_start[r.first_alt + a];
        int budget = EXPAND_BUDGET;
        expand(g, &p, 1, s, 0, &budget);
    }
}

void gstate_at(const sw_grammar *g, uint32_t p, gstate *s) {
    clear(s);
    int budget = EXPAND_BUDGET;
    expand(g, &p, 1, s, 0, &budget);
}

void gstate_from_stack(const sw_grammar *g, const uint32_t *stack, uint32_t n, gstate *s) {
    clear(s);
    int budget = EXPAND_BUDGET;
    expand(g, stack, n, s, 0, &budget);
}

bool gstate_advance(const sw_grammar *g, const gstate *s, uint8_t b, gstate *out) {
    clear(out);
    uint32_t loc[GM_MAX_DEPTH + 1];
    int budget = EXPAND_BUDGET;
    for (uint32_t i = 0; i < s->n; i++) {
        const uint32_t a = s->off[i], n = s->off[i + 1] - a;
        const uint32_t top = s->pos[a + n - 1];
        if (!has_byte(g, g->el[top].v, b))
            continue;
        memcpy(loc, s->pos + a, (n - 1) * sizeof *loc);
        loc[n - 1] = top + 1;
        expand(g, loc, n, out, 0, &budget);
    }
    return out->n > 0 || out->accept;
}

bool gstate_accepts(const sw_grammar *g, const gstate *from, const uint8_t *p, size_t n,
                    gstate *tmp2) {
    const gstate *a = from;
    for (size_t i = 0; i < n; i++) {
        gstate *b = a == &tmp2[0] ? &tmp2[1] : &tmp2[0];
        if (!gstate_advance(g, a, p[i], b) || b->n == 0)
            return i + 1 == n && b->accept;
        a = b;
    }
    return true;
}
