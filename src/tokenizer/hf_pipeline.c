/*
 * hf_pipeline.c — checking that a tokenizer.json asks for nothing the
 * SentencePiece encoder (encode.c + spm.c) does not do, and reading the
 * few settings that map onto it.
 *
 * Accepted (everything Gemma's tokenizer.json files use, written by
 * transformers' converters or shipped on the Hub):
 *   normalizer      null; Replace(" " → "▁"); Prepend("▁") (= a space
 *                   prefix); or a Sequence of these, Prepend at most once.
 *   pre_tokenizer   null; Split on the string " " (a no-op once the
 *                   normalizer has replaced every space) with invert false;
 *                   Metaspace("▁", prepend_scheme "never", split false); or a
 *                   Sequence of these.
 *   post_processor  null, or TemplateProcessing whose "single" template is
 *                   [one special token] $A [one special token], each
 *                   optional, each standing for exactly one id.
 *   model           BPE, byte_fallback true, no dropout, no subword prefix
 *                   or suffix, ignore_merges false.
 * Anything else is SW_ERR_UNSUPPORTED naming it (a Unicode normalization,
 * a regex split, Metaspace's conditional prefix, WordPiece, Unigram...):
 * refusing beats tokenizing differently from the model's own tokenizer.
 * The decoder is not read: pieces always print the SentencePiece way
 * (decode.c), which is what Gemma's decoder (Replace "▁" → " ",
 * ByteFallback, Fuse) does.
 */
#include <string.h>

#include "format/json_util.h"
#include "tokenizer/hf_internal.h"
#include "util/error.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581 "▁" */

/* Spaces are turned into "▁" (by the normalizer or Metaspace). */
typedef struct steps {
    bool replaces;
    int n_prepend;
} steps;

static sw_status unsupported(const char *path, const char *what, const char *detail) {
    return sw_errorf(SW_ERR_UNSUPPORTED, "%s: %s %s is not supported: Spillway reproduces "
                     "SentencePiece BPE only (spaces as '" SPACE_MARK "', no other "
                     "normalization, no pre-splitting)", path, what, detail);
}

static sw_status null_step(const char *path, const char *what) {
    return sw_errorf(SW_ERR_FORMAT, "%s: a %s Sequence holds a null step", path, what);
}

/* A required string member. */
static sw_status get_type(const json_object *obj, const char *path, const char *what,
                          const char **type) {
    if (!json_object_is_type(obj, json_type_object))
        return sw_errorf(SW_ERR_FORMAT, "%s: %s should be an object or null", path, what);
    sw_status st = jsonu_get_str(obj, "type", path, type, NULL);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: %s has no 'type'", path, what);
    return st;
}

/* A pattern {"String": "x"} equal to `want`. Regex patterns are refused. */
static sw_status check_pattern(const json_object *step, const char *path, const char *what,
                               const char *want) {
    json_object *pattern;
    const char *s;
    size_t len;
    sw_status st = jsonu_get_obj(step, "pattern", path, &pattern);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: %s has no 'pattern'", path, what);
    if (st != SW_OK)
        return st;
    st = jsonu_get_str(pattern, "String", path, &s, &len);
    if (st == SW_ERR_ARG)
        return unsupported(path, what, "with a regex pattern");
    if (st != SW_OK)
        return st;
    if (len != strlen(want) || memcmp(s, want, len) != 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: %s on the string '%.40s' is not supported "
                         "(only '%s')", path, what, s, want);
    return SW_OK;
}

static sw_status check_normalizer(const json_object *n, const char *path, steps *s, int depth) {
    const char *type;
    sw_status st;
    if (n == NULL)
        return SW_OK;
    if ((st = get_type(n, path, "normalizer", &type)) != SW_OK)
        return st;
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        json_object *list;
        if ((st = jsonu_get_arr(n, "normalizers", path, &list)) != SW_OK)
            return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: normalizer Sequence has no "
                                                "'normalizers'", path) : st;
        for (size_t i = 0; i < json_object_array_length(list) && st == SW_OK; i++) {
            json_object *step = json_object_array_get_idx(list, i);
            st = step ? check_normalizer(step, path, s, depth + 1) : null_step(path, "normalizer");
        }
        return st;
    }
    if (strcmp(type, "Replace") == 0) {
        const char *content;
        if ((st = check_pattern(n, path, "normalizer Replace", " ")) != SW_OK)
            return st;
        if ((st = jsonu_get_str(n, "content", path, &content, NULL)) != SW_OK)
            return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: normalizer Replace has no "
                                                "'content'", path) : st;
        if (strcmp(content, SPACE_MARK) != 0)
            return unsupported(path, "normalizer Replace", "of ' ' by anything but '▁'");
        s->replaces = true;
        return SW_OK;
    }
    if (strcmp(type, "Prepend") == 0) {
        const char *prepend;
        if ((st = jsonu_get_str(n, "prepend", path, &prepend, NULL)) != SW_OK)
            return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: normalizer Prepend has no "
                                                "'prepend'", path) : st;
        if (strcmp(prepend, SPACE_MARK) != 0 || s->n_prepend++ > 0)
            return unsupported(path, "normalizer Prepend", "of anything but one '▁'");
        return SW_OK;
    }
    return unsupported(path, "normalizer type", type);
}

/* Metaspace("▁") that neither splits nor prepends: the same as Replace. */
static sw_status check_metaspace(const json_object *p, const char *path, steps *s) {
    const char *repl, *scheme = "never";
    bool split = true, prefix = false;
    sw_status st = jsonu_get_str(p, "replacement", path, &repl, NULL);
    if (st != SW_OK)
        return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: pre_tokenizer Metaspace has no "
                                            "'replacement'", path) : st;
    if ((st = jsonu_get_bool(p, "split", path, &split)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if ((st = jsonu_get_str(p, "prepend_scheme", path, &scheme, NULL)) != SW_OK &&
        st != SW_ERR_ARG)
        return st;
    if ((st = jsonu_get_bool(p, "add_prefix_space", path, &prefix)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if (strcmp(repl, SPACE_MARK) != 0)
        return unsupported(path, "pre_tokenizer Metaspace", "with a replacement other than '▁'");
    if (split)
        return unsupported(path, "pre_tokenizer Metaspace", "with split true (words are merged "
                           "separately)");
    if (strcmp(scheme, "never") != 0 || prefix)
        return unsupported(path, "pre_tokenizer Metaspace", "with a prepend scheme other than "
                           "\"never\" (it prepends only where no '▁' is)");
    s->replaces = true;
    return SW_OK;
}

static sw_status check_pre_tokenizer(const json_object *p, const char *path, steps *s,
                                     int depth) {
    const char *type;
    sw_status st;
    if (p == NULL)
        return SW_OK;
    if ((st = get_type(p, path, "pre_tokenizer", &type)) != SW_OK)
        return st;
    if (strcmp(type, "Sequence") == 0 && depth < 4) {
        json_object *list;
        if ((st = jsonu_get_arr(p, "pretokenizers", path, &list)) != SW_OK)
            return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: pre_tokenizer Sequence has "
                                                "no 'pretokenizers'", path) : st;
        for (size_t i = 0; i < json_object_array_length(list) && st == SW_OK; i++) {
            json_object *step = json_object_array_get_idx(list, i);
            st = step ? check_pre_tokenizer(step, path, s, depth + 1)
                      : null_step(path, "pre_tokenizer");
        }
        return st;
    }
    if (strcmp(type, "Metaspace") == 0)
        return check_metaspace(p, path, s);
    if (strcmp(type, "Split") == 0) {
        bool invert = false;
        if ((st = check_pattern(p, path, "pre_tokenizer Split", " ")) != SW_OK)
            return st;
        if ((st = jsonu_get_bool(p, "invert", path, &invert)) != SW_OK && st != SW_ERR_ARG)
            return st;
        if (invert || !s->replaces)
            return unsupported(path, "pre_tokenizer Split", "on spaces that are still there "
                               "(no normalizer replaces them first), or inverted");
        return SW_OK; /* no space is left to split on */
    }
    return unsupported(path, "pre_tokenizer type", type);
}

/* The one id a template's SpecialToken `name` stands for. */
static sw_status template_id(const json_object *pp, const char *path, const char *name,
                             int64_t *id) {
    json_object *map, *entry, *ids;
    sw_status st = jsonu_get_obj(pp, "special_tokens", path, &map);
    if (st == SW_OK)
        st = jsonu_get_obj(map, name, path, &entry);
    if (st == SW_OK)
        st = jsonu_get_arr(entry, "ids", path, &ids);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: post_processor template names '%.40s', which its "
                         "'special_tokens' does not define with 'ids'", path, name);
    if (st != SW_OK)
        return st;
    json_object *first = json_object_array_get_idx(ids, 0);
    if (json_object_array_length(ids) != 1)
        return unsupported(path, "post_processor special token", "standing for several ids");
    if (!json_object_is_type(first, json_type_int) || json_object_get_int64(first) < 0 ||
        json_object_get_int64(first) >= INT32_MAX)
        return sw_errorf(SW_ERR_FORMAT, "%s: post_processor special token '%.40s' has an id "
                         "that is not an integer in 0..2^31-2", path, name);
    *id = json_object_get_int64(first);
    return SW_OK;
}

/* One element of the "single" template: a special token (before or after
 * the text) or the text itself ($A). */
static sw_status template_item(const json_object *pp, const json_object *item, const char *path,
                               bool *seen_a, hf_pipeline *out) {
    json_object *tok;
    const char *id;
    sw_status st = jsonu_get_obj(item, "Sequence", path, &tok);
    if (st == SW_OK) {
        if ((st = jsonu_get_str(tok, "id", path, &id, NULL)) != SW_OK || strcmp(id, "A") != 0 ||
            *seen_a)
            return st == SW_OK || st == SW_ERR_ARG
                       ? unsupported(path, "post_processor template", "other than [special] $A "
                                     "[special]") : st;
        *seen_a = true;
        return SW_OK;
    }
    if (st == SW_ERR_ARG)
        st = jsonu_get_obj(item, "SpecialToken", path, &tok);
    if (st == SW_OK)
        st = jsonu_get_str(tok, "id", path, &id, NULL);
    if (st == SW_ERR_ARG)
        return sw_errorf(SW_ERR_FORMAT, "%s: a post_processor template item is neither "
                         "{\"Sequence\": {\"id\": ...}} nor {\"SpecialToken\": {\"id\": ...}}",
                         path);
    if (st != SW_OK)
        return st;
    int64_t *slot = *seen_a ? &out->tmpl_eos : &out->tmpl_bos;
    if (*slot >= 0)
        return unsupported(path, "post_processor template", "adding two tokens on one side");
    return template_id(pp, path, id, slot);
}

static sw_status check_post_processor(const json_object *pp, const char *path,
                                      hf_pipeline *out) {
    const char *type;
    json_object *single;
    bool seen_a = false;
    sw_status st;
    if (pp == NULL)
        return SW_OK;
    if ((st = get_type(pp, path, "post_processor", &type)) != SW_OK)
        return st;
    if (strcmp(type, "TemplateProcessing") != 0)
        return unsupported(path, "post_processor type", type);
    if ((st = jsonu_get_arr(pp, "single", path, &single)) != SW_OK)
        return st == SW_ERR_ARG ? sw_errorf(SW_ERR_FORMAT, "%s: post_processor "
                                            "TemplateProcessing has no 'single'", path) : st;
    for (size_t i = 0; i < json_object_array_length(single) && st == SW_OK; i++)
        st = template_item(pp, json_object_array_get_idx(single, i), path, &seen_a, out);
    if (st == SW_OK && !seen_a)
        return unsupported(path, "post_processor template", "without the text ($A)");
    out->has_template = true;
    return st;
}

/* A member that may be absent or null (→ *out NULL). */
static json_object *member(const json_object *obj, const char *key) {
    json_object *v = NULL;
    return json_object_object_get_ex(obj, key, &v) ? v : NULL;
}

sw_status hf_read_pipeline(const json_object *root, const char *path, hf_pipeline *out) {
    steps s = {false, 0};
    sw_status st;
    *out = (hf_pipeline){false, false, -1, -1};
    if ((st = check_normalizer(member(root, "normalizer"), path, &s, 0)) != SW_OK ||
        (st = check_pre_tokenizer(member(root, "pre_tokenizer"), path, &s, 0)) != SW_OK ||
        (st = check_post_processor(member(root, "post_processor"), path, out)) != SW_OK)
        return st;
    if (!s.replaces)
        return unsupported(path, "a pipeline", "that leaves spaces as they are (no Replace "
                           "' ' → '▁' normalizer or Metaspace pre_tokenizer)");
    out->add_space_prefix = s.n_prepend > 0;
    return SW_OK;
}

/* An optional string member that must be null, absent or empty. */
static sw_status check_no_affix(const json_object *model, const char *path, const char *key) {
    const char *s;
    size_t len;
    sw_status st = jsonu_get_str(model, key, path, &s, &len);
    if (st == SW_ERR_ARG || (st == SW_OK && len == 0))
        return SW_OK;
    return st != SW_OK ? st : unsupported(path, "model", key);
}

sw_status hf_check_model(const json_object *model, const char *path, const char **unk) {
    const char *type = "BPE";
    double dropout = 0;
    bool byte_fallback = false, flag = false;
    sw_status st;
    *unk = NULL;
    if ((st = jsonu_get_str(model, "type", path, &type, NULL)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if (strcmp(type, "BPE") != 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: model type '%.40s' is not supported: only "
                         "BPE with byte fallback (Gemma's SentencePiece BPE)", path, type);
    if ((st = jsonu_get_f64(model, "dropout", path, &dropout)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if (dropout != 0)
        return unsupported(path, "model", "dropout (random merges)");
    if ((st = check_no_affix(model, path, "continuing_subword_prefix")) != SW_OK ||
        (st = check_no_affix(model, path, "end_of_word_suffix")) != SW_OK)
        return st;
    if ((st = jsonu_get_bool(model, "byte_fallback", path, &byte_fallback)) != SW_OK &&
        st != SW_ERR_ARG)
        return st;
    if (!byte_fallback)
        return unsupported(path, "model", "without byte_fallback (unknown characters would be "
                           "<unk> instead of <0xXX> byte tokens)");
    if ((st = jsonu_get_bool(model, "ignore_merges", path, &flag)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if (flag)
        return unsupported(path, "model", "ignore_merges true");
    if ((st = jsonu_get_bool(model, "fuse_unk", path, &flag)) != SW_OK && st != SW_ERR_ARG)
        return st;
    if ((st = jsonu_get_str(model, "unk_token", path, unk, NULL)) != SW_OK && st != SW_ERR_ARG)
        return st;
    return SW_OK;
}
