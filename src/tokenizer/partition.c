/*
 * partition.c — cutting special tokens out of the text before merging,
 * with the result of llama.cpp's tokenizer_st_partition.
 *
 * llama.cpp takes the special tokens longest first and, for each, splits
 * every remaining stretch of raw text at its leftmost non-overlapping
 * occurrences. So a longer token wins over a shorter one anywhere in the
 * text, not just at the same position: with tokens "bcd" and "ab", "abcd"
 * becomes "a" + <bcd>. Equal lengths are ordered by an unstable sort there,
 * so their order is unspecified; here it is leftmost first. (It matters
 * only for two equal-length tokens whose texts overlap, like "ab" / "ba" in
 * "aba"; Gemma's vocabularies have none.)
 *
 * Doing that token by token costs O(text × specials) (Gemma 3 has 6,400).
 * Instead: one trie walk per position finds its longest candidate, and a
 * heap pops candidates by (length desc, position asc) — the same order. A
 * candidate is taken unless it overlaps one taken before; one whose start
 * is free but whose end is taken retries with its next shorter match.
 * Memory stays O(text), time O(text × longest special token × log text).
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/heap.h"

typedef struct candidate {
    size_t pos;
    size_t len;   /* == trie[node].depth */
    int32_t node; /* trie node whose token matches text[pos, pos + len) */
} candidate;

/* Pops longer candidates first, then those further left. */
static bool cand_before(const candidate *a, const candidate *b) {
    return a->len > b->len || (a->len == b->len && a->pos < b->pos);
}

SW_HEAP_DEFINE(cand, candidate, cand_before)

/* The deepest trie node on text[pos..] whose token may be cut, or -1. */
static int32_t longest_match(const tokenizer *t, const unsigned char *s, size_t n, size_t pos,
                             bool parse_special) {
    int32_t best = -1;
    int32_t node = t->root_child[s[pos]];
    size_t i = pos + 1;
    while (node >= 0) {
        const tok_trie_node *nd = &t->trie[node];
        if (nd->token >= 0 && tok_is_cut(t, nd->token, parse_special))
            best = node;
        if (i >= n)
            break;
        int32_t c = nd->child;
        while (c >= 0 && t->trie[c].byte != s[i])
            c = t->trie[c].sibling;
        node = c;
        i++;
    }
    return best;
}

static int cmp_span_pos(const void *a, const void *b) {
    const tok_span *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Pops candidates in llama.cpp's order and keeps the ones that fit.
 * Every span taken so far is at least as long as the candidate, so the
 * candidate overlaps one exactly when its first or last byte is taken. */
static size_t select_spans(const tokenizer *t, candidate *heap, size_t n_heap,
                           unsigned char *taken, bool parse_special, tok_span *spans) {
    size_t n_spans = 0;
    while (n_heap > 0) {
        candidate c = cand_pop(heap, &n_heap);
        if (taken[c.pos])
            continue; /* every shorter match starts here too */
        if (taken[c.pos + c.len - 1]) {
            int32_t shorter = t->trie[c.node].shorter[parse_special ? 1 : 0];
            if (shorter >= 0)
                cand_push(heap, &n_heap,
                          (candidate){c.pos, t->trie[shorter].depth, shorter});
            continue;
        }
        memset(taken + c.pos, 1, c.len);
        spans[n_spans++] = (tok_span){c.pos, c.len, t->trie[c.node].token};
    }
    return n_spans;
}

static sw_status oom(size_t n) {
    return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory splitting special "
                     "tokens out of %zu bytes of text", n);
}

sw_status tok_partition(const tokenizer *t, const char *text, size_t n, bool parse_special,
                        tok_span **spans, size_t *n_spans) {
    const unsigned char *s = (const unsigned char *)text;
    candidate *heap = NULL;
    unsigned char *taken = NULL;
    size_t n_heap = 0;
    sw_status st = SW_OK;

    *spans = NULL;
    *n_spans = 0;
    if (n == 0 || t->n_trie <= 1)
        return SW_OK;
    for (size_t pos = 0; pos < n; pos++) {
        int32_t node = longest_match(t, s, n, pos, parse_special);
        if (node < 0)
            continue;
        /* at most one candidate per position from here on */
        if (heap == NULL && (heap = malloc((n - pos) * sizeof *heap)) == NULL) {
            st = oom(n);
            goto fail;
        }
        cand_push(heap, &n_heap, (candidate){pos, t->trie[node].depth, node});
    }
    if (n_heap == 0)
        goto fail; /* nothing to cut: SW_OK, no spans */
    taken = calloc(n, 1);
    *spans = malloc(n_heap * sizeof **spans);
    if (taken == NULL || *spans == NULL) {
        st = oom(n);
        goto fail;
    }
    *n_spans = select_spans(t, heap, n_heap, taken, parse_special, *spans);
    qsort(*spans, *n_spans, sizeof **spans, cmp_span_pos);
fail:
    if (st != SW_OK) {
        free(*spans);
        *spans = NULL;
    }
    free(heap);
    free(taken);
    return st;
}
