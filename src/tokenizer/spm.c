/*
 * spm.c — the merge step of SentencePiece-BPE encoding, for one stretch of
 * raw text whose spaces are already U+2581 (llama.cpp's
 * llm_tokenizer_spm_session, same result id for id).
 *
 * The text starts as one symbol per UTF-8 character. Repeatedly, of all
 * adjacent pairs whose concatenation is a token, the one whose token has
 * the highest score merges (ties: the leftmost). A max-heap holds the
 * candidate pairs; an entry goes stale when either side has changed since
 * it was pushed, which its recorded byte size detects, and is skipped when
 * popped. Each merge pushes at most two pairs: O(n log n) overall.
 *
 * Any token may merge, whatever its type (control, user-defined, byte):
 * llama.cpp looks pairs up in the full vocabulary. A final symbol that is
 * not a token becomes one byte token per byte.
 */
#include <stdlib.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"
#include "util/heap.h"

typedef struct symbol {
    size_t off;   /* first byte in the text */
    size_t n;     /* bytes; 0 once merged into its left neighbour */
    int32_t prev; /* neighbours among live symbols, -1 at the ends */
    int32_t next;
    int32_t id;   /* the token it spells once merged; -1 = not looked up yet */
} symbol;

typedef struct bigram {
    float score;  /* score of the token the pair would become */
    int32_t id;   /* that token */
    int32_t left, right;
    size_t size;  /* bytes of the pair when pushed: detects stale entries */
} bigram;

/* Pops the higher score first, the leftmost among equal scores. */
static bool bigram_before(const bigram *a, const bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

SW_HEAP_DEFINE(heap, bigram, bigram_before)

typedef struct session {
    const tokenizer *t;
    const char *text;
    symbol *sym;
    bigram *heap;
    size_t n_heap;
} session;

/* Pushes the pair (left, right) if together they spell a token. Live
 * neighbours are contiguous in the text, so the pair is one slice. */
static void try_pair(session *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0)
        return;
    const symbol *l = &s->sym[left];
    size_t size = l->n + s->sym[right].n;
    int32_t id = tokenizer_find(s->t, s->text + l->off, size);
    if (id >= 0)
        heap_push(s->heap, &s->n_heap, (bigram){s->t->score[id], id, left, right, size});
}

/* Bytes in the UTF-8 character led by byte c, judged from c alone as
 * llama.cpp does (unicode_len_utf8): 0xC0-0xDF → 2, 0xE0-0xEF → 3,
 * 0xF0-0xFF → 4, anything else 1. Following bytes are not checked, so
 * "\xE2AB" is one (non-token) symbol that falls back to three bytes. */
static size_t char_len(unsigned char c) {
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

static int32_t split_chars(session *s, size_t n) {
    int32_t count = 0;
    for (size_t off = 0; off < n; count++) {
        size_t len = char_len((unsigned char)s->text[off]);
        if (len > n - off)
            len = n - off;
        s->sym[count] = (symbol){off, len, count - 1, off + len < n ? count + 1 : -1, -1};
        off += len;
    }
    return count;
}

static void merge_all(session *s, int32_t n_sym) {
    for (int32_t i = 1; i < n_sym; i++)
        try_pair(s, i - 1, i);
    while (s->n_heap > 0) {
        bigram b = heap_pop(s->heap, &s->n_heap);
        symbol *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue; /* stale: a side merged elsewhere since the push */
        l->n += r->n;
        l->id = b.id;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = b.left;
        try_pair(s, l->prev, b.left);
        try_pair(s, b.left, l->next);
    }
}

/* Emits a final symbol: its token, or one byte token per byte. (llama.cpp
 * also tries to undo the merge that built it, but a merged symbol is
 * always a token, so only unmerged characters ever get here.) */
static sw_status emit_symbol(const session *s, const symbol *sym, tok_out *out) {
    const tokenizer *t = s->t;
    int32_t id = sym->id >= 0 ? sym->id : tokenizer_find(t, s->text + sym->off, sym->n);
    if (id >= 0) {
        tok_emit(out, id);
        return SW_OK;
    }
    for (size_t i = 0; i < sym->n; i++) {
        unsigned char b = (unsigned char)s->text[sym->off + i];
        id = t->byte_token[b] >= 0 ? t->byte_token[b] : t->unk;
        if (id < 0)
            return sw_errorf(SW_ERR_UNSUPPORTED, "tokenizer: byte 0x%02X has no token and the "
                             "vocabulary has neither <0x%02X> nor <unk>", b, b);
        tok_emit(out, id);
    }
    return SW_OK;
}

sw_status tok_spm_encode(const tokenizer *t, const char *text, size_t n, tok_out *out) {
    session s = {t, text, NULL, NULL, 0};
    sw_status st = SW_OK;
    if (n == 0)
        return SW_OK;
    if (n > INT32_MAX / 4)
        return sw_errorf(SW_ERR_ARG, "tokenizer: a stretch of %zu bytes without special tokens "
                         "is too long (limit %d)", n, INT32_MAX / 4);
    s.sym = malloc(n * sizeof *s.sym);
    s.heap = malloc(3 * n * sizeof *s.heap); /* n - 1 seeds + 2 per merge */
    if (s.sym == NULL || s.heap == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory encoding %zu bytes", n);
        goto fail;
    }
    merge_all(&s, split_chars(&s, n));
    for (int32_t i = 0; i >= 0 && st == SW_OK; i = s.sym[i].next)
        st = emit_symbol(&s, &s.sym[i], out);
fail:
    free(s.sym);
    free(s.heap);
    return st;
}
