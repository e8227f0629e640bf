/*
 * hf_vocab.c — tokenizer_create_from_hf: a Gemma tokenizer from a Hugging
 * Face model folder (tokenizer.json, tokenizer_config.json), built into the
 * same struct tokenizer the GGUF path builds, so that both encode alike.
 *
 * Token types are the ones llama.cpp's convert_hf_to_gguf.py writes from
 * the same files, since the GGUF tokenizer must be matched:
 *   added_tokens with special true, or that look special (<mask>, <2mass>,
 *     [@BOS@], <unused…>, <|…|>, <｜…｜>)                       CONTROL
 *   other added_tokens ("\n", "<td>", "▁▁"), each "▁" spelled as a space
 *     as llama.cpp stores them (encode.c cuts them out before the spaces
 *     are escaped)                                              USER_DEFINED
 *   pieces <0x00>..<0xFF>                                       BYTE
 *   model.unk_token when it is not an added token               UNKNOWN
 *   every other piece                                           NORMAL
 * One Gemma quirk: Gemma's SentencePiece model declares the runs of 2..31
 * "▁" user-defined, and Hub files list them in added_tokens, but
 * transformers' GGUF → tokenizers converter drops them from added_tokens.
 * So with tokenizer_class Gemma*, a piece of two or more "▁" and nothing
 * else is USER_DEFINED too (without tokenizer_config.json this is not
 * known, and space runs over 31 would merge differently).
 *
 * Special ids: tokenizer_config.json's bos/eos/unk/pad_token, else
 * config.json's *_token_id, else the post-processor template (BOS, EOS)
 * and model.unk_token. BOS/EOS are added as add_bos_token / add_eos_token
 * say, else as the template does, else BOS only (GemmaTokenizer's default).
 * Scores come from the merge list (hf_merges.c), the checks of the
 * pipeline from hf_pipeline.c. Any malformed input is SW_ERR_FORMAT with a
 * message naming the file and the entry.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/json_util.h"
#include "tokenizer/hf_internal.h"
#include "util/error.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581 "▁" */
#define NOT_NAMED (-2)

/* What tokenizer_config.json (and config.json) say; NOT_NAMED / -1 when
 * they say nothing. */
typedef struct hf_config {
    int32_t bos, eos, unk, pad;
    int add_bos, add_eos;   /* 1 / 0, -1 when absent */
    bool gemma_class;       /* tokenizer_class "Gemma..." */
} hf_config;

/* Everything one call owns; freed in one place. */
typedef struct reader {
    const char *dir;
    char *path;             /* DIR/tokenizer.json */
    json_object *root;      /* tokenizer.json */
    hf_vocab v;
    hf_pipeline pipe;
    hf_config cfg;
    const char *model_unk;  /* model.unk_token, borrowed */
    tokenizer_token *list;  /* (v.n) what tokenizer_create gets */
    float *score;           /* (v.n) */
    char *respelled;        /* texts of tokens stored with spaces */
    hf_pairs pairs;
} reader;

static int clip(size_t len) {
    return len < 60 ? (int)len : 60;
}

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p != NULL) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static sw_status oom(const char *what) {
    return sw_errorf(SW_ERR_OOM_HOST, "tokenizer: out of host memory for %s", what);
}

/* ---- the text index --------------------------------------------------------- */

int32_t hf_vocab_find(const hf_vocab *v, const char *text, size_t len) {
    uint64_t h = tok_hash(text, len);
    uint64_t tag = h & 0xffffffff00000000ull;
    for (size_t i = (size_t)h & v->slot_mask;; i = (i + 1) & v->slot_mask) {
        uint64_t e = v->slots[i];
        if (e == 0)
            return -1;
        int32_t id = (int32_t)(uint32_t)e - 1;
        if ((e & 0xffffffff00000000ull) == tag && v->len[id] == len &&
            memcmp(v->text[id], text, len) == 0)
            return id;
    }
}

/* Gives id its text; the caller checked that both are free. */
void hf_vocab_put(hf_vocab *v, uint32_t id, const char *text, size_t len) {
    uint64_t h = tok_hash(text, len);
    size_t i = (size_t)h & v->slot_mask;
    v->text[id] = text;
    v->len[id] = (uint32_t)len;
    while (v->slots[i] != 0)
        i = (i + 1) & v->slot_mask;
    v->slots[i] = (h & 0xffffffff00000000ull) | (id + 1);
}

/* Room for ids below cap (the number of entries: dense ids never reach it). */
sw_status hf_vocab_alloc(hf_vocab *v, size_t cap) {
    size_t n_slots = 16;
    if (cap > INT32_MAX - 1)
        return sw_errorf(SW_ERR_FORMAT, "%s: %zu tokens exceed the 32-bit id range", v->path,
                         cap);
    while (n_slots < 2 * cap)
        n_slots *= 2;
    v->text = calloc(cap ? cap : 1, sizeof *v->text);
    v->len = calloc(cap ? cap : 1, sizeof *v->len);
    v->added = calloc(cap ? cap : 1, 1);
    v->slots = calloc(n_slots, sizeof *v->slots);
    v->slot_mask = n_slots - 1;
    if (!v->text || !v->len || !v->added || !v->slots)
        return oom("the vocabulary index");
    return SW_OK;
}

void hf_vocab_free(hf_vocab *v) {
    free(v->text);
    free(v->len);
    free(v->added);
    free(v->slots);
}

static sw_status id_range(const hf_vocab *v, int64_t id, size_t cap, const char *where,
                          const char *text, size_t len) {
    if (id >= 0 && (uint64_t)id < cap)
        return SW_OK;
    return sw_errorf(SW_ERR_FORMAT, "%s: %s gives '%.*s' id %lld, but there are only %zu "
                     "tokens: ids must run 0..%zu without gaps", v->path, where, clip(len), text,
                     (long long)id, cap, cap ? cap - 1 : 0);
}

/* ---- model.vocab and added_tokens --------------------------------------------- */

static sw_status read_model_vocab(hf_vocab *v, json_object *vocab, size_t cap) {
    struct json_object_iterator it = json_object_iter_begin(vocab);
    struct json_object_iterator end = json_object_iter_end(vocab);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        json_object *val = json_object_iter_peek_value(&it);
        size_t len = strlen(key);
        if (!json_object_is_type(val, json_type_int))
            return sw_errorf(SW_ERR_FORMAT, "%s: model.vocab maps '%.*s' to something other "
                             "than an integer id", v->path, clip(len), key);
        int64_t id = json_object_get_int64(val);
        sw_status st = id_range(v, id, cap, "model.vocab", key, len);
        if (st != SW_OK)
            return st;
        if (v->text[id] != NULL)
            return sw_errorf(SW_ERR_FORMAT, "%s: model.vocab gives id %lld to both '%.*s' and "
                             "'%.*s'", v->path, (long long)id, clip(v->len[id]), v->text[id],
                             clip(len), key);
        if (hf_vocab_find(v, key, len) >= 0) /* json-c cut a key at an escaped NUL */
            return sw_errorf(SW_ERR_FORMAT, "%s: model.vocab holds '%.*s' twice", v->path,
                             clip(len), key);
        hf_vocab_put(v, (uint32_t)id, key, len);
    }
    return SW_OK;
}

/* An optional flag of an added token that must be false. */
static sw_status flag_off(const json_object *tok, const char *key, const char *where) {
    bool on = false;
    sw_status st = jsonu_get_bool(tok, key, where, &on);
    if (st != SW_OK && st != SW_ERR_ARG)
        return st;
    if (on)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s has %s true (whitespace around it is stripped "
                         "or matched specially), which the SentencePiece tokenizer does not do",
                         where, key);
    return SW_OK;
}

static sw_status read_added_token(hf_vocab *v, json_object *tok, size_t i, size_t cap) {
    char where[256];
    int64_t id;
    const char *text;
    size_t len;
    bool special = false, normalized = false;
    sw_status st;
    snprintf(where, sizeof where, "%s: added_tokens[%zu]", v->path, i);
    if (!json_object_is_type(tok, json_type_object))
        return sw_errorf(SW_ERR_FORMAT, "%s should be an object", where);
    if ((st = jsonu_get_i64(tok, "id", where, &id)) != SW_OK ||
        (st = jsonu_get_str(tok, "content", where, &text, &len)) != SW_OK)
        return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s needs 'id' and 'content'", where)
                                : st;
    if (((st = jsonu_get_bool(tok, "special", where, &special)) != SW_OK && st != SW_ERR_ARG) ||
        ((st = jsonu_get_bool(tok, "normalized", where, &normalized)) != SW_OK &&
         st != SW_ERR_ARG) ||
        (st = flag_off(tok, "lstrip", where)) != SW_OK ||
        (st = flag_off(tok, "rstrip", where)) != SW_OK ||
        (st = flag_off(tok, "single_word", where)) != SW_OK ||
        (st = id_range(v, id, cap, "added_tokens", text, len)) != SW_OK)
        return st;
    int32_t found = hf_vocab_find(v, text, len);
    if (found >= 0 && found != id)
        return sw_errorf(SW_ERR_FORMAT, "%s '%.*s' has id %lld, but model.vocab gives it id %d",
                         where, clip(len), text, (long long)id, found);
    if (found < 0 && v->text[id] != NULL)
        return sw_errorf(SW_ERR_FORMAT, "%s '%.*s' has id %lld, which is already '%.*s'", where,
                         clip(len), text, (long long)id, clip(v->len[id]), v->text[id]);
    if (found < 0)
        hf_vocab_put(v, (uint32_t)id, text, len);
    if (special || v->added[id] == HF_PLAIN)
        v->added[id] = special ? HF_ADDED_SPECIAL : HF_ADDED;
    return SW_OK;
}

/* Fills v from model.vocab and added_tokens; checks the ids are dense. */
static sw_status read_vocab(hf_vocab *v, const json_object *root, const json_object *model) {
    json_object *vocab, *added = NULL;
    sw_status st = jsonu_get_obj(model, "vocab", v->path, &vocab);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: model.vocab is missing", v->path);
    if (st != SW_OK ||
        ((st = jsonu_get_arr(root, "added_tokens", v->path, &added)) != SW_OK &&
         st != SW_ERR_ARG))
        return st;
    size_t n_added = added ? json_object_array_length(added) : 0;
    size_t cap = (size_t)json_object_object_length(vocab) + n_added;
    if ((st = hf_vocab_alloc(v, cap)) != SW_OK || (st = read_model_vocab(v, vocab, cap)) != SW_OK)
        return st;
    for (size_t i = 0; i < n_added && st == SW_OK; i++)
        st = read_added_token(v, json_object_array_get_idx(added, i), i, cap);
    if (st != SW_OK)
        return st;
    v->n = (uint32_t)cap;
    while (v->n > 0 && v->text[v->n - 1] == NULL)
        v->n--;
    if (v->n == 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: the vocabulary is empty", v->path);
    for (uint32_t id = 0; id < v->n; id++)
        if (v->text[id] == NULL)
            return sw_errorf(SW_ERR_FORMAT, "%s: no token has id %u, though ids run to %u: ids "
                             "must be dense", v->path, id, v->n - 1);
    return SW_OK;
}

/* ---- token types --------------------------------------------------------------- */

static bool starts_ends(const char *s, size_t len, const char *head, const char *tail) {
    size_t h = strlen(head), t = strlen(tail);
    return len >= h + t && memcmp(s, head, h) == 0 && memcmp(s + len - t, tail, t) == 0;
}

/* llama.cpp's does_token_look_special: added tokens Gemma (and others)
 * mark non-special that are control tokens all the same. */
static bool looks_special(const char *s, size_t len) {
    static const char *const exact[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
    for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
        if (len == strlen(exact[k]) && memcmp(s, exact[k], len) == 0)
            return true;
    return starts_ends(s, len, "<|", "|>") ||
           starts_ends(s, len, "<\xef\xbd\x9c", "\xef\xbd\x9c>") || /* <｜ ｜> */
           starts_ends(s, len, "<unused", ">");
}

static bool is_byte_piece(const char *s, size_t len) {
    static const char hex[] = "0123456789ABCDEF";
    return len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] != '\0' &&
           s[4] != '\0' && strchr(hex, s[3]) != NULL && strchr(hex, s[4]) != NULL;
}

/* Two or more "▁" and nothing else. */
static bool is_space_run(const char *s, size_t len) {
    if (len < 6 || len % 3 != 0)
        return false;
    for (size_t i = 0; i < len; i += 3)
        if (memcmp(s + i, SPACE_MARK, 3) != 0)
            return false;
    return true;
}

static int32_t type_of(const reader *r, uint32_t id, int32_t model_unk) {
    const hf_vocab *v = &r->v;
    if (v->added[id] == HF_ADDED_SPECIAL ||
        (v->added[id] == HF_ADDED && looks_special(v->text[id], v->len[id])))
        return TOK_TYPE_CONTROL;
    if (v->added[id] == HF_ADDED)
        return TOK_TYPE_USER_DEFINED;
    if (is_byte_piece(v->text[id], v->len[id]))
        return TOK_TYPE_BYTE;
    if ((int32_t)id == model_unk)
        return TOK_TYPE_UNKNOWN;
    if (r->cfg.gemma_class && is_space_run(v->text[id], v->len[id]))
        return TOK_TYPE_USER_DEFINED;
    return TOK_TYPE_NORMAL;
}

/* Copies text with every "▁" turned into a space; returns the bytes written. */
static size_t respell(const char *text, size_t len, char *dst) {
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        if (i + 2 < len && memcmp(text + i, SPACE_MARK, 3) == 0) {
            dst[m++] = ' ';
            i += 2;
        } else {
            dst[m++] = text[i];
        }
    }
    return m;
}

/* Fills r->list with texts and types (scores come later). */
static sw_status classify(reader *r) {
    const hf_vocab *v = &r->v;
    int32_t model_unk = r->model_unk ? hf_vocab_find(v, r->model_unk, strlen(r->model_unk)) : -1;
    size_t bytes = 0, used = 0;
    if (r->model_unk != NULL && model_unk < 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: model.unk_token '%.60s' is not in the vocabulary",
                         v->path, r->model_unk);
    r->list = malloc(v->n * sizeof *r->list);
    if (r->list == NULL)
        return oom("the token list");
    for (uint32_t id = 0; id < v->n; id++) {
        r->list[id].type = type_of(r, id, model_unk);
        if (r->list[id].type == TOK_TYPE_USER_DEFINED)
            bytes += v->len[id];
    }
    r->respelled = malloc(bytes ? bytes : 1);
    if (r->respelled == NULL)
        return oom("user-defined token texts");
    for (uint32_t id = 0; id < v->n; id++) {
        r->list[id].text = v->text[id];
        r->list[id].len = v->len[id];
        if (r->list[id].type == TOK_TYPE_USER_DEFINED) {
            r->list[id].text = r->respelled + used;
            r->list[id].len = respell(v->text[id], v->len[id], r->respelled + used);
            used += r->list[id].len;
        }
    }
    return SW_OK;
}

/* ---- tokenizer_config.json and config.json --------------------------------------- */

/* Parses DIR/name into *out, or leaves *out NULL when the file is absent. */
static sw_status parse_optional(const char *dir, const char *name, json_object **out,
                                char **path) {
    struct stat sb;
    *out = NULL;
    *path = join_path(dir, name);
    if (*path == NULL)
        return oom("a path");
    if (stat(*path, &sb) != 0 && errno == ENOENT)
        return SW_OK;
    sw_status st = jsonu_parse_file(*path, (size_t)16 << 20, out);
    if (st == SW_OK && !json_object_is_type(*out, json_type_object))
        st = sw_errorf(SW_ERR_FORMAT, "%s: the document should be a JSON object", *path);
    return st;
}

/* bos_token etc.: a string, {"content": string}, or null. */
static sw_status special_member(const json_object *obj, const char *key, const char *path,
                                const hf_vocab *v, int32_t *id) {
    const char *text;
    size_t len;
    json_object *o;
    sw_status st = jsonu_get_str(obj, key, path, &text, &len);
    if (st == SW_ERR_FORMAT && jsonu_get_obj(obj, key, path, &o) == SW_OK) {
        st = jsonu_get_str(o, "content", path, &text, &len);
        if (st == SW_ERR_ARG)
            return sw_errorf(SW_ERR_FORMAT, "%s: '%s' is an object without 'content'", path, key);
    }
    if (st == SW_ERR_FORMAT)
        return sw_errorf(SW_ERR_FORMAT, "%s: '%s' should be a string or an object with "
                         "'content'", path, key);
    if (st != SW_OK)
        return st == SW_ERR_ARG ? SW_OK : st;
    if ((*id = hf_vocab_find(v, text, len)) < 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: %s '%.*s' is not a token of %s", path, key,
                         clip(len), text, v->path);
    return SW_OK;
}

static sw_status optional_flag(const json_object *obj, const char *key, const char *path,
                               int *out) {
    bool b;
    sw_status st = jsonu_get_bool(obj, key, path, &b);
    if (st == SW_OK)
        *out = b;
    return st == SW_ERR_ARG ? SW_OK : st;
}

static sw_status read_tokenizer_config(reader *r) {
    json_object *obj;
    char *path = NULL;
    const char *cls = "";
    sw_status st = parse_optional(r->dir, "tokenizer_config.json", &obj, &path);
    if (st == SW_OK && obj != NULL &&
        ((st = optional_flag(obj, "add_bos_token", path, &r->cfg.add_bos)) != SW_OK ||
         (st = optional_flag(obj, "add_eos_token", path, &r->cfg.add_eos)) != SW_OK ||
         (st = special_member(obj, "bos_token", path, &r->v, &r->cfg.bos)) != SW_OK ||
         (st = special_member(obj, "eos_token", path, &r->v, &r->cfg.eos)) != SW_OK ||
         (st = special_member(obj, "unk_token", path, &r->v, &r->cfg.unk)) != SW_OK ||
         (st = special_member(obj, "pad_token", path, &r->v, &r->cfg.pad)) != SW_OK))
        goto done;
    if (st == SW_OK && obj != NULL &&
        (st = jsonu_get_str(obj, "tokenizer_class", path, &cls, NULL)) == SW_ERR_ARG)
        st = SW_OK;
    r->cfg.gemma_class = strncmp(cls, "Gemma", 5) == 0;
done:
    json_object_put(obj);
    free(path);
    return st;
}

/* config.json's bos/eos/pad_token_id (an id, or a list whose first id
 * counts), only where tokenizer_config.json named none. */
static sw_status config_id(const json_object *obj, const char *key, const char *path,
                           uint32_t n, int32_t *id) {
    json_object *v = NULL;
    if (*id != NOT_NAMED || !json_object_object_get_ex(obj, key, &v) || v == NULL)
        return SW_OK;
    if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
        v = json_object_array_get_idx(v, 0);
    int64_t x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
    if (x < 0 || x >= n)
        return sw_errorf(SW_ERR_FORMAT, "%s: '%s' should be a token id below %u (or a list of "
                         "them)", path, key, n);
    *id = (int32_t)x;
    return SW_OK;
}

static sw_status read_model_config(reader *r) {
    json_object *obj = NULL;
    char *path = NULL;
    sw_status st = SW_OK;
    if (r->cfg.bos != NOT_NAMED && r->cfg.eos != NOT_NAMED && r->cfg.pad != NOT_NAMED)
        return SW_OK;
    st = parse_optional(r->dir, "config.json", &obj, &path);
    if (st == SW_OK && obj != NULL &&
        ((st = config_id(obj, "bos_token_id", path, r->v.n, &r->cfg.bos)) != SW_OK ||
         (st = config_id(obj, "eos_token_id", path, r->v.n, &r->cfg.eos)) != SW_OK))
        goto done;
    if (st == SW_OK && obj != NULL)
        st = config_id(obj, "pad_token_id", path, r->v.n, &r->cfg.pad);
done:
    json_object_put(obj);
    free(path);
    return st;
}

/* ---- putting it together ------------------------------------------------------- */

/* One special token from the config, else from the post-processor template. */
static sw_status pick_special(const reader *r, const char *name, int32_t named, int64_t tmpl,
                              int add_flag, int32_t *id) {
    *id = named >= 0 ? named : tmpl >= 0 ? (int32_t)tmpl : -1;
    if (tmpl >= r->v.n)
        return sw_errorf(SW_ERR_FORMAT, "%s: post_processor adds id %lld, beyond the %u tokens",
                         r->path, (long long)tmpl, r->v.n);
    if (add_flag < 0 && tmpl >= 0 && named >= 0 && tmpl != named)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: post_processor adds token %lld as %s, but "
                         "tokenizer_config.json names token %d", r->path, (long long)tmpl,
                         name, named);
    return SW_OK;
}

static sw_status make_config(const reader *r, tokenizer_config *cfg) {
    const hf_config *c = &r->cfg;
    const hf_pipeline *p = &r->pipe;
    sw_status st;
    *cfg = (tokenizer_config){"llama", -1, -1, -1, -1, false, false, p->add_space_prefix};
    if ((st = pick_special(r, "BOS", c->bos, p->tmpl_bos, c->add_bos, &cfg->bos)) != SW_OK ||
        (st = pick_special(r, "EOS", c->eos, p->tmpl_eos, c->add_eos, &cfg->eos)) != SW_OK)
        return st;
    /* tokenizer_config.json's flags win, as transformers rebuilds the
     * post-processor from them; without either, GemmaTokenizer's default
     * (BOS on) applies when a BOS token is known. */
    cfg->add_bos = c->add_bos >= 0 ? c->add_bos : p->has_template ? p->tmpl_bos >= 0
                                                                  : cfg->bos >= 0;
    cfg->add_eos = c->add_eos >= 0 ? c->add_eos : p->tmpl_eos >= 0;
    cfg->pad = c->pad >= 0 ? c->pad : -1;
    cfg->unk = c->unk >= 0 ? c->unk
             : r->model_unk ? hf_vocab_find(&r->v, r->model_unk, strlen(r->model_unk)) : -1;
    if ((cfg->add_bos && cfg->bos < 0) || (cfg->add_eos && cfg->eos < 0))
        return sw_errorf(SW_ERR_FORMAT, "%s: BOS/EOS is to be added but no token is named for "
                         "it (tokenizer_config.json bos_token / eos_token)", r->path);
    return SW_OK;
}

/* tokenizer.json: parsed, its root and model checked. */
static sw_status read_tokenizer_json(reader *r, json_object **model) {
    sw_status st;
    if ((r->path = join_path(r->dir, "tokenizer.json")) == NULL)
        return oom("a path");
    r->v.path = r->path;
    st = jsonu_parse_file(r->path, JSONU_MAX_FILE_BYTES, &r->root);
    if (st == SW_ERR_IO)
        return sw_error_prefix(st, "Hugging Face tokenizer (the folder needs tokenizer.json)");
    if (st != SW_OK)
        return st;
    if (!json_object_is_type(r->root, json_type_object))
        return sw_errorf(SW_ERR_FORMAT, "%s: the document should be a JSON object", r->path);
    st = jsonu_get_obj(r->root, "model", r->path, model);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: 'model' is missing", r->path);
    if (st != SW_OK || (st = hf_check_model(*model, r->path, &r->model_unk)) != SW_OK)
        return st;
    return hf_read_pipeline(r->root, r->path, &r->pipe);
}

static sw_status read_scores(reader *r, const json_object *model) {
    json_object *merges;
    sw_status st = jsonu_get_arr(model, "merges", r->path, &merges);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: model.merges is missing", r->path);
    if (st != SW_OK)
        return st;
    if ((r->score = malloc(r->v.n * sizeof *r->score)) == NULL)
        return oom("token scores");
    if ((st = hf_read_merges(&r->v, merges, r->score, &r->pairs)) != SW_OK)
        return st;
    for (uint32_t id = 0; id < r->v.n; id++)
        r->list[id].score = r->score[id];
    return SW_OK;
}

sw_status tokenizer_create_from_hf(const char *dir, tokenizer **out) {
    reader r = {0};
    json_object *model = NULL;
    tokenizer_config cfg;
    tokenizer *t = NULL;
    sw_status st;
    if (dir == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "tokenizer_create_from_hf: NULL argument");
    *out = NULL;
    r.dir = dir;
    r.cfg = (hf_config){NOT_NAMED, NOT_NAMED, NOT_NAMED, NOT_NAMED, -1, -1, false};
    if ((st = read_tokenizer_json(&r, &model)) != SW_OK ||
        (st = read_vocab(&r.v, r.root, model)) != SW_OK ||
        (st = read_tokenizer_config(&r)) != SW_OK || (st = read_model_config(&r)) != SW_OK ||
        (st = classify(&r)) != SW_OK || (st = read_scores(&r, model)) != SW_OK ||
        (st = make_config(&r, &cfg)) != SW_OK)
        goto fail;
    if ((st = tokenizer_create(&cfg, r.list, r.v.n, &t)) != SW_OK) {
        sw_error_prefix(st, "%s", r.path); /* its messages name no file */
        goto fail;
    }
    if ((st = hf_check_merges_complete(t, &r.pairs, r.path)) != SW_OK)
        goto fail;
    *out = t;
    t = NULL;
fail:
    tokenizer_destroy(t);
    hf_pairs_free(&r.pairs);
    free(r.score);
    free(r.respelled);
    free(r.list);
    hf_vocab_free(&r.v);
    json_object_put(r.root);
    free(r.path);
    return st;
}
