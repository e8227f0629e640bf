/*
 * hf_internal.h — what the Hugging Face tokenizer reader's files share
 * (hf_vocab.c reads the vocabulary and the folder, hf_pipeline.c checks the
 * normalizer / pre-tokenizer / post-processor / model options, hf_merges.c
 * turns the merge list into scores). Nothing outside src/tokenizer/hf_*.c
 * includes this.
 *
 * Invariant of a filled hf_vocab: ids 0..n-1 each have exactly one text
 * (borrowed from the parsed tokenizer.json, valid while its root lives), and
 * hf_vocab_find finds every one of them by its Hugging Face spelling.
 */
#ifndef SW_TOKENIZER_HF_INTERNAL_H
#define SW_TOKENIZER_HF_INTERNAL_H

#include <json-c/json.h>

#include "tokenizer/tok_internal.h"

/* How an id entered the vocabulary. */
enum { HF_PLAIN = 0, HF_ADDED = 1, HF_ADDED_SPECIAL = 2 };

typedef struct hf_vocab {
    const char *path;       /* tokenizer.json, for messages */
    uint32_t n;             /* tokens: ids 0..n-1 */
    const char **text;      /* (n) Hugging Face spelling, borrowed from the JSON */
    uint32_t *len;          /* (n) bytes */
    uint8_t *added;         /* (n) HF_PLAIN / HF_ADDED / HF_ADDED_SPECIAL */
    uint64_t *slots;        /* text hash index as in struct tokenizer: hash high
                             * 32 bits << 32 | (id + 1); 0 = empty */
    size_t slot_mask;
} hf_vocab;

/* The id spelled text[0..len) in the Hugging Face spelling, or -1. */
int32_t hf_vocab_find(const hf_vocab *v, const char *text, size_t len);

/* Room for ids below cap (v->path set for messages; errors SW_ERR_FORMAT,
 * SW_ERR_OOM_HOST); gives a free id its text (borrowed); frees. */
sw_status hf_vocab_alloc(hf_vocab *v, size_t cap);
void hf_vocab_put(hf_vocab *v, uint32_t id, const char *text, size_t len);
void hf_vocab_free(hf_vocab *v);

/* What the tokenizer.json pipeline asks for, once it passed the checks. */
typedef struct hf_pipeline {
    bool add_space_prefix;  /* normalizer Prepend("▁") */
    bool has_template;      /* post_processor is a TemplateProcessing */
    int64_t tmpl_bos;       /* id the template puts before the text, -1 none */
    int64_t tmpl_eos;       /* id it puts after the text, -1 none */
} hf_pipeline;

/* Checks "normalizer", "pre_tokenizer" and "post_processor" of the root
 * object against what the SentencePiece encoder does (see hf_pipeline.c for
 * the accepted forms). Errors: SW_ERR_FORMAT (wrong JSON types),
 * SW_ERR_UNSUPPORTED (a step Spillway does not reproduce, named). */
sw_status hf_read_pipeline(const json_object *root, const char *path, hf_pipeline *out);

/* Checks the options of "model" (type BPE, byte fallback, no dropout, no
 * subword prefix/suffix, no ignore_merges); *unk gets model.unk_token or
 * NULL. Errors: SW_ERR_FORMAT, SW_ERR_UNSUPPORTED. */
sw_status hf_check_model(const json_object *model, const char *path, const char **unk);

/* Set of merge rules (left id, right id). */
typedef struct hf_pairs {
    uint64_t *keys;         /* (mask + 1) left << 32 | right; UINT64_MAX = empty */
    size_t mask;
} hf_pairs;

void hf_pairs_free(hf_pairs *p);

/* Reads model.merges (["a", "b"] pairs or "a b" strings) against v and
 * gives each token its score: minus the rank of the first merge producing
 * it, or minus the number of merges when none does (hf_merges.c says why
 * this reproduces SentencePiece scores). score has v->n entries; *pairs
 * gets every rule. Errors: SW_ERR_FORMAT (a rule naming an unknown piece or
 * making one that is not a token, a rule listed twice, wrong types),
 * SW_ERR_UNSUPPORTED (more than 2^24 rules), SW_ERR_OOM_HOST. */
sw_status hf_read_merges(const hf_vocab *v, const json_object *merges, float *score,
                         hf_pairs *pairs);

/* The same over n rules that `rule` hands out one rank at a time (the two
 * pieces of rule `rank`, or an error naming it): GGUF's
 * tokenizer.ggml.merges ("a b" strings) as well as tokenizer.json's. */
typedef sw_status (*hf_rule_fn)(void *user, size_t rank, const char *side[2], size_t len[2]);
sw_status hf_merge_scores(const hf_vocab *v, size_t n, hf_rule_fn rule, void *user,
                          float *score, hf_pairs *pairs);

/* Scores (n_vocab of tokens) and rules of a GGUF vocabulary's
 * tokenizer.ggml.merges (gguf_merges.c). Errors as hf_merge_scores, and
 * SW_ERR_FORMAT for a missing or malformed key. */
sw_status tok_gguf_merge_scores(const gguf_file *f, const gguf_value *tokens, float *score,
                                hf_pairs *pairs);

/* Splits "a b" at its first space into the two pieces; false when there
 * is no space. */
bool hf_split_rule(const char *s, size_t n, const char *side[2], size_t len[2]);

/* Refuses a vocabulary where SentencePiece merging (spm.c: any two
 * adjacent symbols whose concatenation is a token) could join two pieces
 * that the merge list never joins, since the ids would then differ from
 * Hugging Face's. Checks every token of t without a space in its text.
 * Errors: SW_ERR_UNSUPPORTED naming the missing rule. */
sw_status hf_check_merges_complete(const tokenizer *t, const hf_pairs *pairs, const char *path);

#endif
