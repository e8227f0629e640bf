/*
 * grammar.h — constrained decoding inside the library: a context-free
 * grammar over bytes (build.c), compiled from a JSON schema (schema.c,
 * schema_types.c), a matcher that follows it byte by byte (match.c), and
 * the token masks that keep a sampler on it (mask.c, vocab.c; walk.c: the
 * matcher as a DFA built on the fly for the vocabulary walks).
 *
 * The grammar is GBNF-shaped (llama.cpp's grammars are the anchor): rules
 * of alternatives, each a sequence of byte sets and rule references. The
 * matcher is a pushdown automaton whose state is a set of stacks of
 * positions in the element array (one stack per live parse; a reference
 * in tail position replaces its caller, so repetition written as right
 * recursion runs in constant stack). No left recursion: the compiler
 * never writes one, and the matcher bounds depth so a hand-made one ends.
 *
 * Token masks follow XGrammar's split: for a stack's top position, which
 * tokens the rule alone accepts or rejects is computed once per grammar
 * (a walk over the vocabulary sorted by bytes, sharing prefixes) and
 * cached; only the tokens that leave the rule ("uncertain") are checked
 * against the whole stack at each step.
 */
#ifndef SW_GRAMMAR_GRAMMAR_H
#define SW_GRAMMAR_GRAMMAR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"
#include "spillway_grammar.h"

/* ---- the grammar ------------------------------------------------------------ */

enum { GEL_END = 0, GEL_SET, GEL_REF }; /* end of an alternative, a byte set, a rule */

typedef struct gel {
    uint32_t type;               /* GEL_* */
    uint32_t v;                  /* GEL_SET: set id (0..255: the byte itself); GEL_REF: rule */
} gel;

typedef struct grule {
    uint32_t first_alt, n_alt;   /* into grammar.alt_start; n_alt 0: not yet defined */
} grule;

typedef struct gcache gcache;    /* mask.c: per-position token classes */

struct sw_grammar {
    gel *el;                     /* (n_el) every alternative's elements, each ended by END */
    uint32_t n_el, cap_el;
    uint32_t *alt_start;         /* (n_alt) where each alternative starts in el */
    uint32_t n_alt, cap_alt;
    grule *rule;                 /* (n_rule) */
    uint32_t n_rule, cap_rule;
    uint8_t (*set)[32];          /* (n_set) 256-bit byte sets; 0..255 are the single bytes */
    uint32_t n_set, cap_set;
    uint32_t root;
    bool oom;                    /* an append failed: the build reports it at the end */
    int refs;                    /* sw_grammar_destroy and requests hold references */
    pthread_mutex_t mu;          /* guards refs and cache */
    gcache *cache;               /* token classes for one vocabulary, or NULL */
};

/* A sequence being built (one alternative), appended to a rule when whole. */
typedef struct gseq {
    gel *v;
    uint32_t n, cap;
    bool oom;
} gseq;

sw_status grammar_create(sw_grammar **out);
/* Drops a reference; the last frees. Accepts NULL. */
void grammar_unref(sw_grammar *g);
void grammar_ref(sw_grammar *g);

/* A new rule id, defined later by grammar_define (references may precede it). */
uint32_t grammar_rule_new(sw_grammar *g);
/* Rule r's alternatives: n sequences (consumed: freed here). */
void grammar_define(sw_grammar *g, uint32_t r, gseq *alts, uint32_t n);
/* A set id for the bytes set in bits (the byte's own id for one byte). */
uint32_t grammar_set(sw_grammar *g, const uint8_t bits[32]);
/* SW_OK when every rule is defined and nothing ran out of memory. */
sw_status grammar_finish(sw_grammar *g);

void gseq_byte(gseq *s, uint8_t b);
void gseq_lit(gseq *s, const char *p, size_t n);
void gseq_set(gseq *s, uint32_t set);
void gseq_ref(gseq *s, uint32_t rule);
void gseq_free(gseq *s);
/* A set from ranges: pairs lo, hi (inclusive), n pairs. */
uint32_t grammar_ranges(sw_grammar *g, const uint8_t *pairs, size_t n);

/* ---- the matcher --------------------------------------------------------------- */

enum { GM_MAX_STACKS = 128, GM_MAX_DEPTH = 96, GM_POOL = 8192 };

/* The parses alive after some bytes: stack i is pos[off[i] .. off[i+1]),
 * bottom first; every top is a GEL_SET element. accept: a parse ended
 * (the whole grammar, or in a rule-local walk, the start rule). */
typedef struct gstate {
    uint32_t n, n_pos;
    bool accept;
    uint32_t off[GM_MAX_STACKS + 1];
    uint32_t pos[GM_POOL];
} gstate;

/* The start: g's root rule expanded. */
void gstate_start(const sw_grammar *g, gstate *s);
/* The stack [p] alone (p: a GEL_SET position): the rule-local start. */
void gstate_at(const sw_grammar *g, uint32_t p, gstate *s);
/* The single stack `stack` (n positions). */
void gstate_from_stack(const sw_grammar *g, const uint32_t *stack, uint32_t n, gstate *s);
/* out = s after byte b; false when no parse survives (out: empty). */
bool gstate_advance(const sw_grammar *g, const gstate *s, uint8_t b, gstate *out);
/* Whether the bytes p[0..n) can follow state `from`: some parse consumes
 * them all (tmp2: two scratch states, neither of them `from`). */
bool gstate_accepts(const sw_grammar *g, const gstate *from, const uint8_t *p, size_t n,
                    gstate *tmp2);

/* ---- the matcher as a DFA, for the vocabulary walks (walk.c) ------------------- */

typedef struct gwalk gwalk;

gwalk *gwalk_create(void);       /* NULL: out of memory */
void gwalk_destroy(gwalk *w);
/* The state id of the stack [p]; -1 when out of memory. */
int32_t gwalk_start(gwalk *w, const sw_grammar *g, uint32_t p);
/* The id of state s (interned); -1 when out of memory. */
int32_t gwalk_intern(gwalk *w, const gstate *s);
/* The state after byte b (an empty state when nothing survives); -1: out of memory. */
int32_t gwalk_next(gwalk *w, const sw_grammar *g, int32_t id, uint8_t b);
bool gwalk_live(const gwalk *w, int32_t id);   /* some stack is left */
bool gwalk_accept(const gwalk *w, int32_t id); /* some parse ended */

/* ---- token masks --------------------------------------------------------------- */

/* A model's vocabulary as bytes: every token's piece, the ids sorted by
 * them, and each one's common prefix with the one before (vocab.c). */
typedef struct gvocab {
    uint32_t n_vocab;
    uint8_t *blob;               /* the pieces, back to back */
    uint32_t *off;               /* (n_vocab + 1) piece of id i: blob[off[i] .. off[i+1]) */
    uint32_t *ord;               /* (n_sorted) ids with a non-empty piece, by bytes */
    uint16_t *lcp;               /* (n_sorted) common prefix with the previous one */
    uint32_t n_sorted, max_len;
    uint32_t first[257];         /* sorted ids starting with byte b: ord[first[b] .. first[b+1]) */
    int32_t end_ids[4];          /* end-of-sequence / end-of-turn ids: allowed when complete */
    uint32_t n_end;
} gvocab;

sw_status gvocab_create(const sw_model *model, uint32_t n_vocab, gvocab **out);
/* *slot, made under mu when still NULL (a scheduler's, at its first
 * constrained request: about 0.1-0.3 s, once); it never changes after. */
sw_status gvocab_once(gvocab **slot, pthread_mutex_t *mu, const sw_model *model,
                      uint32_t n_vocab);
void gvocab_destroy(gvocab *v);

/* One request's place in a grammar: its parses and mask scratch. */
typedef struct gmatch gmatch;

/* Takes a reference to g. Errors: SW_ERR_OOM_HOST. */
sw_status gmatch_create(sw_grammar *g, const gvocab *v, gmatch **out);
void gmatch_destroy(gmatch *m);
/* Sets logits (n_vocab) of every token that cannot continue the text to
 * -infinity (end tokens stay only where the text is complete).
 * Errors: SW_ERR_OOM_HOST (the cache could not grow). */
sw_status gmatch_mask_logits(gmatch *m, float *logits);
/* The allowed tokens as bits (n_vocab bits, 1: allowed), as the above. */
sw_status gmatch_mask_bits(gmatch *m, const uint64_t **bits);
/* Follows token id; false when the grammar does not allow it (the state
 * is then unchanged). */
bool gmatch_accept(gmatch *m, int32_t id);
/* True when the text is complete and nothing may follow it. */
bool gmatch_done(const gmatch *m);
/* The parses so far (borrowed; for tests and benchmarks). */
const gstate *gmatch_state(const gmatch *m);

void gcache_destroy(gcache *c);

#endif
