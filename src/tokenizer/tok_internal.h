/*
 * tok_internal.h — the layout of struct tokenizer, shared by the files in
 * src/tokenizer/ (vocab.c builds it; partition.c, spm.c, encode.c and
 * decode.c read it). Nothing outside src/tokenizer/ includes this.
 *
 * Invariants after tokenizer_create: every text is non-empty, distinct and
 * NUL-terminated in `pool`; `slots` finds each of them; every special token
 * (TOK_ATTR_SPECIAL) is in the trie; special ids are -1 or < n_vocab.
 */
#ifndef SW_TOKENIZER_TOK_INTERNAL_H
#define SW_TOKENIZER_TOK_INTERNAL_H

#include "tokenizer/tokenizer.h"

/* Token attributes, derived from the stored type plus llama.cpp's overrides
 * by text (vocab.c); a token may carry several (CONTROL | UNUSED). */
#define TOK_ATTR_UNKNOWN (1u << 0)
#define TOK_ATTR_UNUSED (1u << 1)
#define TOK_ATTR_NORMAL (1u << 2)
#define TOK_ATTR_CONTROL (1u << 3)
#define TOK_ATTR_USER_DEFINED (1u << 4)
#define TOK_ATTR_BYTE (1u << 5)
/* Cut out of the text before merging (partition.c). */
#define TOK_ATTR_SPECIAL (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN)

/* A node of the byte trie over special-token texts. Children of a node form
 * a sibling list; node 0 is the root, whose children are also indexed by
 * first byte in root_child. */
typedef struct tok_trie_node {
    int32_t child;   /* first child, -1 when none */
    int32_t sibling; /* next child of the same parent, -1 when none */
    int32_t parent;  /* -1 for the root; always a smaller index than the node */
    int32_t token;   /* special token ending here, -1 when none */
    /* Nearest proper ancestor ending a token that may be cut out, -1 when
     * none: [0] without SW_TOK_PARSE_SPECIAL (USER_DEFINED only), [1] with
     * it. Lets partition.c try the next shorter match in O(1). */
    int32_t shorter[2];
    uint32_t depth;  /* bytes from the root = length of the text ending here */
    uint8_t byte;    /* the byte on the edge into this node */
} tok_trie_node;

struct tokenizer {
    bool can_encode;            /* model "llama" or "gemma4": spm.c's merging applies */
    bool split_newlines;        /* gemma4: runs of '\n' are merged apart from the rest,
                                 * and a run that is a token is that token (llama.cpp's
                                 * gemma4 pre-tokenizer) */
    char model[32];             /* tokenizer.ggml.model, truncated, for messages */
    uint32_t n_vocab;
    char *pool;                 /* all texts, each NUL-terminated */
    uint32_t *text_off;         /* (n_vocab) offset of each text in pool */
    uint32_t *text_len;         /* (n_vocab) bytes, NUL excluded */
    float *score;               /* (n_vocab) */
    uint8_t *type;              /* (n_vocab) TOK_TYPE_* as stored */
    uint8_t *attr;              /* (n_vocab) TOK_ATTR_* */
    uint64_t *slots;            /* (slot_mask + 1) text hash index: high 32 bits of the
                                 * text's hash << 32 | (id + 1); 0 = empty. The
                                 * stored hash bits reject most probes without
                                 * touching the text (a cache miss each) */
    size_t slot_mask;
    int32_t byte_token[256];    /* byte-fallback token per byte value, -1 none */
    tok_trie_node *trie;        /* (n_trie) special tokens */
    size_t n_trie;
    int32_t root_child[256];    /* trie child of the root per first byte, -1 none */
    size_t max_piece;           /* longest piece in bytes (special or not) */
    int32_t bos, eos, unk, pad; /* -1: none */
    int32_t start_of_turn, end_of_turn;
    bool add_bos, add_eos, add_space_prefix;
};

/* May token `id` be cut out of the text as a special token? USER_DEFINED
 * always; CONTROL and UNKNOWN only when parsing special tokens. */
static inline bool tok_is_cut(const tokenizer *t, int32_t id, bool parse_special) {
    uint8_t a = t->attr[id];
    if (!(a & TOK_ATTR_SPECIAL))
        return false;
    return parse_special || !(a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN));
}

/* Stored text of a valid id. */
static inline const char *tok_text(const tokenizer *t, int32_t id) {
    return t->pool + t->text_off[id];
}

/* FNV-1a over bytes: the hash of the text index. */
uint64_t tok_hash(const char *s, size_t n);

/* One special token cut out of the text: bytes [pos, pos + len). */
typedef struct tok_span {
    size_t pos, len;
    int32_t token;
} tok_span;

/* Finds the special tokens of text[0..n) the way llama.cpp's
 * tokenizer_st_partition does (partition.c). On success *spans (malloc'd,
 * caller frees, NULL when none) holds *n_spans spans in text order.
 * Errors: SW_ERR_OOM_HOST. */
sw_status tok_partition(const tokenizer *t, const char *text, size_t n, bool parse_special,
                        tok_span **spans, size_t *n_spans);

/* Growable id output of one encode call: ids beyond cap are counted, not
 * stored. */
typedef struct tok_out {
    int32_t *ids;
    size_t cap;
    size_t n;
} tok_out;

static inline void tok_emit(tok_out *o, int32_t id) {
    if (o->n < o->cap)
        o->ids[o->n] = id;
    o->n++;
}

/* Merges one stretch of raw text (spaces already escaped to U+2581) and
 * emits its ids (spm.c). Errors: SW_ERR_OOM_HOST, SW_ERR_UNSUPPORTED (a
 * byte without a byte token or <unk>). */
sw_status tok_spm_encode(const tokenizer *t, const char *text, size_t n, tok_out *out);

#endif
