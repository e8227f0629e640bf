/*
 * build.c — assembling a grammar (grammar.h): rules reserved by id and
 * defined later (so a schema's $ref can point at a rule being built),
 * alternatives built as separate sequences and appended whole, byte sets
 * deduplicated (the 256 single bytes are sets 0..255). Appends never fail
 * on the spot: they set `oom`, which grammar_finish reports once.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "util/error.h"

/* Grows *p (elements of size sz) to hold n + 1; false when out of memory. */
static bool grow(void **p, uint32_t *cap, uint32_t n, size_t sz) {
    if (n < *cap)
        return true;
    const uint32_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, (size_t)c * sz);
    if (q == NULL)
        return false;
    *p = q;
    *cap = c;
    return true;
}

sw_status grammar_create(sw_grammar **out) {
    sw_grammar *g = calloc(1, sizeof *g);
    if (g == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar");
    g->refs = 1;
    pthread_mutex_init(&g->mu, NULL);
    for (uint32_t b = 0; b < 256; b++) {
        uint8_t bits[32] = {0};
        bits[b >> 3] = (uint8_t)(1u << (b & 7));
        if (!grow((void **)&g->set, &g->cap_set, g->n_set, sizeof *g->set)) {
            grammar_unref(g);
            return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar");
        }
        memcpy(g->set[g->n_set++], bits, 32);
    }
    *out = g;
    return SW_OK;
}

void grammar_ref(sw_grammar *g) {
    pthread_mutex_lock(&g->mu);
    g->refs++;
    pthread_mutex_unlock(&g->mu);
}

void grammar_unref(sw_grammar *g) {
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    const int left = --g->refs;
    pthread_mutex_unlock(&g->mu);
    if (left > 0)
        return;
    gcache_destroy(g->cache);
    pthread_mutex_destroy(&g->mu);
    free(g->el);
    free(g->alt_start);
    free(g->rule);
    free(g->set);
    free(g);
}

uint32_t grammar_rule_new(sw_grammar *g) {
    if (!grow((void **)&g->rule, &g->cap_rule, g->n_rule, sizeof *g->rule)) {
        g->oom = true;
        return 0;
    }
    g->rule[g->n_rule] = (grule){0, 0};
    return g->n_rule++;
}

void grammar_define(sw_grammar *g, uint32_t r, gseq *alts, uint32_t n) {
    bool ok = !g->oom && r < g->n_rule && n > 0;
    if (ok)
        g->rule[r].first_alt = g->n_alt;
    for (uint32_t a = 0; a < n; a++) {
        ok = ok && !alts[a].oom &&
             grow((void **)&g->alt_start, &g->cap_alt, g->n_alt, sizeof *g->alt_start);
        if (ok)
            g->alt_start[g->n_alt++] = g->n_el;
        for (uint32_t i = 0; ok && i <= alts[a].n; i++) {
            ok = grow((void **)&g->el, &g->cap_el, g->n_el, sizeof *g->el);
            if (ok)
                g->el[g->n_el++] = i < alts[a].n ? alts[a].v[i] : (gel){GEL_END, 0};
        }
        gseq_free(&alts[a]);
    }
    if (ok)
        g->rule[r].n_alt = n;
    else
        g->oom = true;
}

uint32_t grammar_set(sw_grammar *g, const uint8_t bits[32]) {
    int count = 0, last = 0;
    for (int b = 0; b < 256; b++)
        if (bits[b >> 3] >> (b & 7) & 1) {
            count++;
            last = b;
        }
    if (count == 1)
        return (uint32_t)last;
    for (uint32_t i = 256; i < g->n_set; i++)
        if (!memcmp(g->set[i], bits, 32))
            return i;
    if (!grow((void **)&g->set, &g->cap_set, g->n_set, sizeof *g->set)) {
        g->oom = true;
        return 0;
    }
    memcpy(g->set[g->n_set], bits, 32);
    return g->n_set++;
}

uint32_t grammar_ranges(sw_grammar *g, const uint8_t *pairs, size_t n) {
    uint8_t bits[32] = {0};
    for (size_t i = 0; i < n; i++)
        for (unsigned b = pairs[2 * i]; b <= pairs[2 * i + 1]; b++)
            bits[b >> 3] |= (uint8_t)(1u << (b & 7));
    return grammar_set(g, bits);
}

sw_status grammar_finish(sw_grammar *g) {
    if (g->oom)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar");
    for (uint32_t r = 0; r < g->n_rule; r++)
        if (g->rule[r].n_alt == 0)
            return sw_errorf(SW_ERR_ARG, "grammar rule %u is referenced but never defined", r);
    if (g->root >= g->n_rule)
        return sw_errorf(SW_ERR_ARG, "the grammar has no root rule");
    return SW_OK;
}

static void seq_add(gseq *s, gel e) {
    if (s->oom || !grow((void **)&s->v, &s->cap, s->n, sizeof *s->v)) {
        s->oom = true;
        return;
    }
    s->v[s->n++] = e;
}

void gseq_byte(gseq *s, uint8_t b) { seq_add(s, (gel){GEL_SET, b}); }

void gseq_lit(gseq *s, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        gseq_byte(s, (uint8_t)p[i]);
}

void gseq_set(gseq *s, uint32_t set) { seq_add(s, (gel){GEL_SET, set}); }

void gseq_ref(gseq *s, uint32_t rule) { seq_add(s, (gel){GEL_REF, rule}); }

void gseq_free(gseq *s) {
    free(s->v);
    *s = (gseq){0};
}
