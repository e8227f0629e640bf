/*
 * hf_tokenizer.c — the synthetic vocabulary as Hugging Face tokenizer files:
 * tokenizer.json in the tokenizers library's layout for Gemma (BPE with
 * byte fallback, no pre-tokenizer, " " replaced by U+2581, <bos> prepended
 * by the post-processor, the control tokens as added tokens) and
 * tokenizer_config.json. The merge list holds, for every merged piece in
 * id order, the split it was made from and then every other split into two
 * normal pieces, so BPE by merge rank reaches the pieces SentencePiece's
 * score-ordered merging reaches on the GGUF twin (tested on the tokenizer
 * corpus: identical ids).
 */
#include <stdio.h>
#include <string.h>

#include "synth/synth_internal.h"

/* tokenizer_config.json: the keys transformers 5.x saves for a Gemma
 * tokenizer, plus add_bos_token/add_eos_token, added_tokens_decoder and
 * chat_template as the Hub's Gemma checkpoints (saved by 4.x) hold them. */
void synth_tokenizer_config_json(jsonw *j, const void *ctx) {
    const synth_vocab *v = ctx;
    char id[16];
    jw_obj(j);
    jw_key(j, "add_bos_token");
    jw_bool(j, true);
    jw_key(j, "add_eos_token");
    jw_bool(j, false);
    jw_key(j, "added_tokens_decoder");
    jw_obj(j);
    for (uint32_t i = 0; i < v->first_normal; i++) {
        if (v->type[i] == SYNTH_TOK_BYTE)
            continue;
        size_t len;
        const char *p = synth_piece(v, i, &len);
        snprintf(id, sizeof id, "%u", i);
        jw_key(j, id);
        jw_obj(j);
        jw_key(j, "content");
        jw_strn(j, p, len);
        const char *flags[] = {"lstrip", "normalized", "rstrip", "single_word"};
        for (size_t k = 0; k < 4; k++) {
            jw_key(j, flags[k]);
            jw_bool(j, false);
        }
        jw_key(j, "special");
        jw_bool(j, true);
        jw_obj_end(j);
    }
    jw_obj_end(j);
    const char *pairs[][2] = {
        {"backend", "tokenizers"}, {"bos_token", "<bos>"},
        {"chat_template", synth_chat_template(v->gemma4)}, {"clean_up_tokenization_spaces", NULL},
        {"eos_token", "<eos>"}, {"mask_token", "<mask>"},
        {"model_max_length", NULL}, {"pad_token", "<pad>"},
        {"spaces_between_special_tokens", NULL}, {"tokenizer_class", "GemmaTokenizer"},
        {"unk_token", "<unk>"}, {"use_default_system_prompt", NULL}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        jw_key(j, pairs[k][0]);
        if (pairs[k][1] != NULL)
            jw_str(j, pairs[k][1]);
        else if (!strcmp(pairs[k][0], "model_max_length"))
            jw_int(j, (int64_t)1000000000000000000ll);
        else
            jw_bool(j, false);
    }
    jw_obj_end(j);
}

/* {"type": "Replace", "pattern": {"String": from}, "content": to} */
static void replace_rule(jsonw *j, const char *from, const char *to) {
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "Replace");
    jw_key(j, "pattern");
    jw_obj(j);
    jw_key(j, "String");
    jw_str(j, from);
    jw_obj_end(j);
    jw_key(j, "content");
    jw_str(j, to);
    jw_obj_end(j);
}

/* {"SpecialToken": {"id": "<bos>", "type_id": t}} or {"Sequence": ...}. */
static void template_piece(jsonw *j, const char *kind, const char *id, int type_id) {
    jw_obj(j);
    jw_key(j, kind);
    jw_obj(j);
    jw_key(j, "id");
    jw_str(j, id);
    jw_key(j, "type_id");
    jw_int(j, type_id);
    jw_obj_end(j);
    jw_obj_end(j);
}

/* Prepends <bos>, as Gemma's tokenizer.json does. */
static void post_processor(jsonw *j) {
    jw_key(j, "post_processor");
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "TemplateProcessing");
    jw_key(j, "single");
    jw_arr(j);
    template_piece(j, "SpecialToken", "<bos>", 0);
    template_piece(j, "Sequence", "A", 0);
    jw_arr_end(j);
    jw_key(j, "pair");
    jw_arr(j);
    template_piece(j, "SpecialToken", "<bos>", 0);
    template_piece(j, "Sequence", "A", 0);
    template_piece(j, "SpecialToken", "<bos>", 1);
    template_piece(j, "Sequence", "B", 1);
    jw_arr_end(j);
    jw_key(j, "special_tokens");
    jw_obj(j);
    jw_key(j, "<bos>");
    jw_obj(j);
    jw_key(j, "id");
    jw_str(j, "<bos>");
    jw_key(j, "ids");
    jw_arr(j);
    jw_int(j, 2);
    jw_arr_end(j);
    jw_key(j, "tokens");
    jw_arr(j);
    jw_str(j, "<bos>");
    jw_arr_end(j);
    jw_obj_end(j);
    jw_obj_end(j);
    jw_obj_end(j);
}

static void added_tokens(jsonw *j, const synth_vocab *v) {
    jw_key(j, "added_tokens");
    jw_arr(j);
    for (uint32_t i = 0; i < v->first_normal; i++) {
        if (v->type[i] == SYNTH_TOK_BYTE)
            continue;
        size_t len;
        const char *p = synth_piece(v, i, &len);
        jw_obj(j);
        jw_key(j, "id");
        jw_int(j, i);
        jw_key(j, "content");
        jw_strn(j, p, len);
        const char *flags[] = {"single_word", "lstrip", "rstrip", "normalized"};
        for (size_t k = 0; k < 4; k++) {
            jw_key(j, flags[k]);
            jw_bool(j, false);
        }
        jw_key(j, "special");
        jw_bool(j, true);
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

typedef struct merge_out {
    jsonw *j;
    const synth_vocab *v;
} merge_out;

static void merge_pair(void *user, uint32_t a, uint32_t b) {
    const merge_out *o = user;
    jsonw *j = o->j;
    size_t la, lb;
    const synth_vocab *v = o->v;
    const char *pa = synth_piece(v, a, &la), *pb = synth_piece(v, b, &lb);
    jw_arr(j);
    jw_strn(j, pa, la);
    jw_strn(j, pb, lb);
    jw_arr_end(j);
}

static void bpe_model(jsonw *j, const synth_vocab *v) {
    jw_key(j, "model");
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "BPE");
    jw_key(j, "dropout");
    jw_null(j);
    jw_key(j, "unk_token");
    jw_str(j, "<unk>");
    jw_key(j, "continuing_subword_prefix");
    jw_null(j);
    jw_key(j, "end_of_word_suffix");
    jw_null(j);
    jw_key(j, "fuse_unk");
    jw_bool(j, true);
    jw_key(j, "byte_fallback");
    jw_bool(j, true);
    jw_key(j, "ignore_merges");
    jw_bool(j, false);
    jw_key(j, "vocab");
    jw_obj(j);
    for (uint32_t i = 0; i < v->n; i++) {
        size_t len;
        const char *p = synth_piece(v, i, &len);
        jw_keyn(j, p, len);
        jw_int(j, i);
    }
    jw_obj_end(j);
    jw_key(j, "merges");
    jw_arr(j);
    merge_out o = {j, v};
    for (uint32_t k = v->first_merged; k < v->n; k++)
        synth_vocab_merges(v, k, merge_pair, &o);
    jw_arr_end(j);
    jw_obj_end(j);
}

/* tokenizer.json in the key order the tokenizers library writes. */
void synth_tokenizer_json(jsonw *j, const void *ctx) {
    const synth_vocab *v = ctx;
    jw_obj(j);
    jw_key(j, "version");
    jw_str(j, "1.0");
    jw_key(j, "truncation");
    jw_null(j);
    jw_key(j, "padding");
    jw_null(j);
    added_tokens(j, v);
    jw_key(j, "normalizer");
    replace_rule(j, " ", "\xe2\x96\x81");
    jw_key(j, "pre_tokenizer");
    jw_null(j);
    post_processor(j);
    jw_key(j, "decoder");
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "Sequence");
    jw_key(j, "decoders");
    jw_arr(j);
    replace_rule(j, "\xe2\x96\x81", " ");
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "ByteFallback");
    jw_obj_end(j);
    jw_obj(j);
    jw_key(j, "type");
    jw_str(j, "Fuse");
    jw_obj_end(j);
    jw_arr_end(j);
    jw_obj_end(j);
    bpe_model(j, v);
    jw_obj_end(j);
}
