/*
 * vocab.c — building a tokenizer from a list of tokens: the text pool, the
 * text → id hash index, token attributes (with llama.cpp's overrides by
 * text), the byte-fallback table and the trie over special tokens.
 *
 * Everything is computed once here so encoding does no lookups that are
 * not O(1) or O(token length). Reading GGUF keys is gguf_vocab.c's job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"
#include "util/error.h"

/* Texts llama.cpp marks CONTROL whatever their stored type, because it
 * recognises end-of-generation / turn / fill-in-the-middle tokens by text
 * (llama-vocab.cpp, load(): the EOT, EOM, FIM and EOG lists). Matching its
 * ids needs the same: Gemma 3 stores "</s>" as USER_DEFINED, llama.cpp
 * treats it as CONTROL (not cut out of plain text, prints nothing).
 * llama.cpp skips the EOT/EOM/FIM look-alikes when the file names those ids;
 * here they are always applied — it differs only for a file that names a
 * FIM id and also holds a differently spelled FIM look-alike. */
static const char *const FORCED_CONTROL[] = {
    /* end of generation / turn */
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
    "<|tool_response>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[e~[",
    /* fill in the middle */
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>",
    "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>",
    "<|code_suffix|>", "<|suffix|>", "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
    "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>",
    "<|code_middle|>", "<|middle|>", "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
    "[PAD]", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
    "<|file_sep|>",
};

uint64_t tok_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int32_t tokenizer_find(const tokenizer *t, const char *text, size_t len) {
    if (t == NULL || t->slots == NULL || (text == NULL && len > 0))
        return -1;
    uint64_t h = tok_hash(text, len);
    uint64_t tag = h & 0xffffffff00000000ull;
    size_t i = (size_t)h & t->slot_mask;
    for (;;) {
        uint64_t v = t->slots[i];
        if (v == 0)
            return -1;
        int32_t id = (int32_t)(uint32_t)v - 1;
        if ((v & 0xffffffff00000000ull) == tag && t->text_len[id] == len &&
            memcmp(tok_text(t, id), text, len) == 0)
            return id;
        i = (i + 1) & t->slot_mask;
    }
}

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case TOK_TYPE_NORMAL: return TOK_ATTR_NORMAL;
    case TOK_TYPE_UNKNOWN: return TOK_ATTR_UNKNOWN;
    case TOK_TYPE_CONTROL: return TOK_ATTR_CONTROL;
    case TOK_TYPE_USER_DEFINED: return TOK_ATTR_USER_DEFINED;
    case TOK_TYPE_UNUSED: return TOK_ATTR_UNUSED;
    case TOK_TYPE_BYTE: return TOK_ATTR_BYTE;
    }
    return 0; /* undefined or unknown type: prints nothing, never special */
}

/* Copies the texts into one pool; an empty text becomes "[EMPTY_<id>]" as
 * in llama.cpp, so every token can be looked up and printed. */
static sw_status fill_pool(tokenizer *t, const tokenizer_token *tokens, size_t n) {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = tokens[i].len ? tokens[i].len : 24;
        if (tokens[i].len > 0 && tokens[i].text == NULL)
            return sw_errorf(SW_ERR_ARG, "tokenizer: token %zu has no text", i);
        if (len > UINT32_MAX - 1 || bytes > UINT32_MAX - 1 - len)
            return sw_errorf(SW_ERR_FORMAT, "tokenizer: vocabulary texts exceed 4 GiB");
        bytes += len + 1;
    }
    t->pool = malloc(bytes ? bytes : 1);
    if (t->pool == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for %zu bytes of "
                         "token text", bytes);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char *dst = t->pool + used;
        size_t len = tokens[i].len;
        if (len == 0)
            len = (size_t)snprintf(dst, 24, "[EMPTY_%zu]", i);
        else
            memcpy(dst, tokens[i].text, len);
        dst[len] = '\0';
        t->text_off[i] = (uint32_t)used;
        t->text_len[i] = (uint32_t)len;
        t->score[i] = tokens[i].score;
        t->type[i] = (uint8_t)(tokens[i].type >= 0 && tokens[i].type <= 255 ? tokens[i].type : 0);
        t->attr[i] = attr_of_type(tokens[i].type);
        used += len + 1;
    }
    return SW_OK;
}

/* Indexes every text; a text seen twice is an error, as in llama.cpp. */
static sw_status build_index(tokenizer *t) {
    size_t n_slots = 16;
    while (n_slots < 2 * (size_t)t->n_vocab)
        n_slots *= 2;
    t->slots = calloc(n_slots, sizeof *t->slots);
    if (t->slots == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for its index");
    t->slot_mask = n_slots - 1;
    for (uint32_t id = 0; id < t->n_vocab; id++) {
        int32_t prev = tokenizer_find(t, tok_text(t, (int32_t)id), t->text_len[id]);
        if (prev >= 0)
            return sw_errorf(SW_ERR_FORMAT, "tokenizer: duplicate token '%.64s' has ids %d and "
                             "%u; the vocabulary is corrupt", tok_text(t, (int32_t)id), prev, id);
        uint64_t h = tok_hash(tok_text(t, (int32_t)id), t->text_len[id]);
        size_t i = (size_t)h & t->slot_mask;
        while (t->slots[i] != 0)
            i = (i + 1) & t->slot_mask;
        t->slots[i] = (h & 0xffffffff00000000ull) | (id + 1);
    }
    return SW_OK;
}

static void mark_by_text(tokenizer *t, const char *text, uint8_t set) {
    int32_t id = tokenizer_find(t, text, strlen(text));
    if (id >= 0)
        t->attr[id] |= set;
}

static void set_attr_by_text(tokenizer *t, const char *text, uint8_t attr) {
    int32_t id = tokenizer_find(t, text, strlen(text));
    if (id >= 0)
        t->attr[id] = attr;
}

/* llama.cpp's attribute overrides by text (see FORCED_CONTROL), its
 * "unused" detection and its later exceptions, in its order. Not copied:
 * its lstrip/rstrip attributes chosen by model name (Phi-3, Jina,
 * ModernBERT), which Gemma vocabularies never get. */
static void apply_llama_cpp_overrides(tokenizer *t) {
    for (size_t k = 0; k < sizeof FORCED_CONTROL / sizeof FORCED_CONTROL[0]; k++)
        mark_by_text(t, FORCED_CONTROL[k], TOK_ATTR_CONTROL);
    for (uint32_t id = 0; id < t->n_vocab; id++)
        if ((t->attr[id] & TOK_ATTR_CONTROL) && strstr(tok_text(t, (int32_t)id), "unused"))
            t->attr[id] |= TOK_ATTR_UNUSED;
    /* gpt-oss: these always print and are always cut out. */
    static const char *const always_user[] = {"<|channel|>", "<|message|>", "<|start|>",
                                              "<|constrain|>"};
    for (size_t k = 0; k < sizeof always_user / sizeof always_user[0]; k++)
        set_attr_by_text(t, always_user[k], TOK_ATTR_USER_DEFINED);
    /* gpt-oss / solar-open: <|end|> is not an end of generation there. */
    bool has_return = tokenizer_find(t, "<|return|>", 10) >= 0;
    bool has_call = tokenizer_find(t, "<|call|>", 8) >= 0 || tokenizer_find(t, "<|calls|>", 9) >= 0;
    bool has_flush = tokenizer_find(t, "<|flush|>", 9) >= 0;
    if ((has_return && has_call) || (has_call && has_flush))
        set_attr_by_text(t, "<|end|>", TOK_ATTR_USER_DEFINED);
    /* Gemma 4 / paddleocr: </s> is ordinary text there. */
    if (tokenizer_find(t, "<|tool_response>", 16) >= 0)
        set_attr_by_text(t, "</s>", TOK_ATTR_NORMAL);
}

/* Byte fallback: "<0xXX>" if present, else the one-byte text itself. */
static void build_byte_table(tokenizer *t) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        char raw = (char)b;
        int32_t id = tokenizer_find(t, name, sizeof name);
        t->byte_token[b] = id >= 0 ? id : tokenizer_find(t, &raw, 1);
    }
}

/* Adds one special token's text to the trie. Node storage was sized for
 * the sum of all special texts, so this never reallocates. */
static void trie_insert(tokenizer *t, int32_t id) {
    const unsigned char *s = (const unsigned char *)tok_text(t, id);
    size_t len = t->text_len[id];
    int32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t c = t->trie[node].child;
        while (c >= 0 && t->trie[c].byte != s[i])
            c = t->trie[c].sibling;
        if (c < 0) {
            c = (int32_t)t->n_trie++;
            t->trie[c] = (tok_trie_node){-1, t->trie[node].child, node, -1, {-1, -1},
                                         (uint32_t)i + 1, s[i]};
            t->trie[node].child = c;
            if (node == 0)
                t->root_child[s[i]] = c;
        }
        node = c;
    }
    t->trie[node].token = id;
}

/* Fills each node's `shorter` links. Parents precede children in the node
 * array, so one pass in index order sees every parent finished. */
static void link_shorter(tokenizer *t) {
    for (size_t i = 1; i < t->n_trie; i++) {
        const tok_trie_node *p = &t->trie[t->trie[i].parent];
        for (int k = 0; k < 2; k++) {
            bool cut = p->token >= 0 && tok_is_cut(t, p->token, k == 1);
            t->trie[i].shorter[k] = cut ? t->trie[i].parent : p->shorter[k];
        }
    }
}

static sw_status build_trie(tokenizer *t) {
    size_t n_nodes = 1;
    for (uint32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & TOK_ATTR_SPECIAL)
            n_nodes += t->text_len[id];
    if (n_nodes > INT32_MAX)
        return sw_errorf(SW_ERR_FORMAT, "tokenizer: special tokens too long in total");
    t->trie = malloc(n_nodes * sizeof *t->trie);
    if (t->trie == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for the special-token "
                         "trie (%zu nodes)", n_nodes);
    t->trie[0] = (tok_trie_node){-1, -1, -1, -1, {-1, -1}, 0, 0};
    t->n_trie = 1;
    for (int b = 0; b < 256; b++)
        t->root_child[b] = -1;
    for (uint32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & TOK_ATTR_SPECIAL)
            trie_insert(t, (int32_t)id);
    link_shorter(t);
    return SW_OK;
}

static int32_t checked_id(const tokenizer *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n_vocab ? id : -1;
}

static void set_config(tokenizer *t, const tokenizer_config *cfg) {
    const char *model = cfg->model ? cfg->model : "";
    snprintf(t->model, sizeof t->model, "%s", model);
    /* gemma4: BPE by merge rules, read as SentencePiece scores (gguf_merges.c) */
    t->can_encode = strcmp(model, "llama") == 0 || strcmp(model, "gemma4") == 0;
    t->split_newlines = strcmp(model, "gemma4") == 0;
    t->bos = checked_id(t, cfg->bos);
    t->eos = checked_id(t, cfg->eos);
    t->unk = checked_id(t, cfg->unk);
    t->pad = checked_id(t, cfg->pad);
    t->add_bos = cfg->add_bos && t->bos >= 0;
    t->add_eos = cfg->add_eos && t->eos >= 0;
    t->add_space_prefix = cfg->add_space_prefix;
    t->start_of_turn = tokenizer_find(t, "<start_of_turn>", 15);
    t->end_of_turn = tokenizer_find(t, "<end_of_turn>", 13);
    if (t->start_of_turn < 0 && t->end_of_turn < 0) { /* Gemma 4's markup */
        t->start_of_turn = tokenizer_find(t, "<|turn>", 7);
        t->end_of_turn = tokenizer_find(t, "<turn|>", 7);
    }
}

/* Longest piece: the text length bounds every piece (U+2581 → ' ' only
 * shrinks, a byte token prints one byte). */
static void find_max_piece(tokenizer *t) {
    t->max_piece = 1;
    for (uint32_t id = 0; id < t->n_vocab; id++)
        if (t->text_len[id] > t->max_piece)
            t->max_piece = t->text_len[id];
}

sw_status tokenizer_create(const tokenizer_config *cfg, const tokenizer_token *tokens,
                           size_t n, tokenizer **out) {
    tokenizer *t = NULL;
    sw_status st;
    if (out == NULL || cfg == NULL || (tokens == NULL && n > 0))
        return sw_errorf(SW_ERR_ARG, "tokenizer_create: NULL argument");
    *out = NULL;
    if (n > INT32_MAX - 1)
        return sw_errorf(SW_ERR_FORMAT, "tokenizer: %zu tokens exceed the 32-bit id range", n);
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory");
    t->n_vocab = (uint32_t)n;
    size_t m = n ? n : 1;
    t->text_off = malloc(m * sizeof *t->text_off);
    t->text_len = malloc(m * sizeof *t->text_len);
    t->score = malloc(m * sizeof *t->score);
    t->type = malloc(m);
    t->attr = malloc(m);
    if (!t->text_off || !t->text_len || !t->score || !t->type || !t->attr) {
        st = sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for %zu tokens", n);
        goto fail;
    }
    if ((st = fill_pool(t, tokens, n)) != SW_OK || (st = build_index(t)) != SW_OK)
        goto fail;
    apply_llama_cpp_overrides(t);
    build_byte_table(t);
    if ((st = build_trie(t)) != SW_OK)
        goto fail;
    set_config(t, cfg);
    /* A prefix is one id only when U+2581 is a token; as byte tokens it and
     * an escaped space would be six, more than SW_TOKENIZE_MAX_IDS allows. */
    if (t->can_encode && t->add_space_prefix && tokenizer_find(t, "\xe2\x96\x81", 3) < 0) {
        st = sw_errorf(SW_ERR_FORMAT, "tokenizer: a space prefix is asked for "
                       "(add_space_prefix, or a Prepend normalizer) but U+2581 is not a token");
        goto fail;
    }
    find_max_piece(t);
    *out = t;
    return SW_OK;
fail:
    tokenizer_destroy(t);
    return st;
}

void tokenizer_destroy(tokenizer *t) {
    if (t == NULL)
        return;
    free(t->pool);
    free(t->text_off);
    free(t->text_len);
    free(t->score);
    free(t->type);
    free(t->attr);
    free(t->slots);
    free(t->trie);
    free(t);
}

size_t tokenizer_n_vocab(const tokenizer *t) {
    return t ? t->n_vocab : 0;
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id, size_t *len) {
    if (t == NULL || id < 0 || (uint32_t)id >= t->n_vocab)
        return NULL;
    if (len != NULL)
        *len = t->text_len[id];
    return tok_text(t, id);
}

int32_t tokenizer_token_type(const tokenizer *t, int32_t id) {
    if (t == NULL || id < 0 || (uint32_t)id >= t->n_vocab)
        return TOK_TYPE_UNDEFINED;
    return t->type[id];
}

void tokenizer_special(const tokenizer *t, sw_special_tokens *out) {
    out->bos = t->bos;
    out->eos = t->eos;
    out->unk = t->unk;
    out->pad = t->pad;
    out->start_of_turn = t->start_of_turn;
    out->end_of_turn = t->end_of_turn;
    out->add_bos = t->add_bos;
}
