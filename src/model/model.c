/*
 * model.c — the public sw_model handle: an opened, validated model file and
 * read-only views of its metadata and tensors (include/spillway.h).
 *
 * Two containers feed one model description (a gguf_file: GGUF metadata
 * keys and tensor names): a GGUF file (format/gguf.c validates it) or a
 * Hugging Face folder (format/hf_model.c translates config.json and the
 * safetensors files). This file adds no checks of its own beyond argument
 * checks, and never copies weights: matrices stay in the mappings until
 * dequantized on request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/gguf.h"
#include "format/hf_model.h"
#include "model/model_internal.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

/* NUL-terminated copy of a metadata string, "" when absent or not a string. */
static char *dup_meta_str(const gguf_file *f, const char *key) {
    gguf_str s = {"", 0};
    if (gguf_get_str(f, key, &s) != SW_OK)
        s.len = 0;
    char *out = malloc(s.len + 1);
    if (out != NULL) {
        memcpy(out, s.ptr, s.len);
        out[s.len] = '\0';
    }
    return out;
}

/* ARCH.<suffix> as u32 (of a per-layer integer array, as Gemma 4 writes
 * where layers differ, the largest), 0 when absent or not representable. */
static uint32_t arch_u32(const gguf_file *f, const char *arch, const char *suffix) {
    char key[256];
    uint64_t v = 0;
    const gguf_value *arr = NULL;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_array(f, key, &arr) == SW_OK) {
        if (arr->arr.raw == NULL || arr->arr.elem_type == GGUF_VT_F32 ||
            arr->arr.elem_type == GGUF_VT_F64)
            return 0;
        for (uint64_t i = 0; i < arr->arr.n; i++) {
            const int64_t x = gguf_array_int(arr, i);
            v = x > 0 && (uint64_t)x > v ? (uint64_t)x : v;
        }
    } else if (gguf_get_uint(f, key, &v) != SW_OK) {
        return 0;
    }
    return v > UINT32_MAX ? 0 : (uint32_t)v;
}

/* NUL-terminated copies of all metadata keys, in one allocation: the
 * pointer table followed by the characters. */
static char **dup_keys(const gguf_file *f) {
    size_t bytes = f->n_kv * sizeof(char *);
    for (uint64_t i = 0; i < f->n_kv; i++)
        bytes += f->kv[i].key.len + 1;
    char **keys = malloc(bytes ? bytes : 1);
    if (keys == NULL)
        return NULL;
    char *p = (char *)(keys + f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        keys[i] = p;
        memcpy(p, f->kv[i].key.ptr, f->kv[i].key.len);
        p += f->kv[i].key.len;
        *p++ = '\0';
    }
    return keys;
}

static void fill_summary(sw_model *m) {
    const gguf_file *f = m->gguf;
    sw_model_summary *s = &m->summary;
    uint64_t v;
    const gguf_value *arr;

    memset(s, 0, sizeof *s);
    s->path = m->path;
    s->container = m->is_hf ? "safetensors" : "gguf";
    s->container_version = m->is_hf ? 0 : f->version;
    s->file_bytes = f->size;
    s->architecture = m->architecture;
    s->name = m->name;
    s->file_type = gguf_get_uint(f, "general.file_type", &v) == SW_OK && v <= UINT32_MAX
                       ? (uint32_t)v : UINT32_MAX;
    s->n_meta = f->n_kv;
    s->n_tensors = f->n_tensors;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        s->n_params += f->tensors[i].n_elements;
        s->tensor_bytes += f->tensors[i].n_bytes;
    }
    s->n_layer = arch_u32(f, m->architecture, "block_count");
    s->n_embd = arch_u32(f, m->architecture, "embedding_length");
    s->n_ff = arch_u32(f, m->architecture, "feed_forward_length");
    s->n_head = arch_u32(f, m->architecture, "attention.head_count");
    s->n_head_kv = arch_u32(f, m->architecture, "attention.head_count_kv");
    s->n_embd_head = arch_u32(f, m->architecture, "attention.key_length");
    s->n_ctx_train = arch_u32(f, m->architecture, "context_length");
    s->sliding_window = arch_u32(f, m->architecture, "attention.sliding_window");
    s->tokenizer_model = m->tokenizer_model;
    if (gguf_get_array(f, "tokenizer.ggml.tokens", &arr) == SW_OK)
        s->n_vocab = arr->arr.n;
    else if (m->tok != NULL)
        s->n_vocab = tokenizer_n_vocab(m->tok);
}

/* The vocabulary: GGUF metadata, or tokenizer.json in an HF folder. A
 * model without one still opens (info, plan); generating then says so. */
static sw_status open_tokenizer(sw_model *m) {
    if (gguf_find_kv(m->gguf, "tokenizer.ggml.tokens") != NULL)
        return tokenizer_create_from_gguf(m->gguf, &m->tok);
    if (!m->is_hf)
        return SW_OK;
    char path[4096];
    struct stat sb;
    if ((size_t)snprintf(path, sizeof path, "%s/tokenizer.json", m->path) >= sizeof path ||
        stat(path, &sb) != 0)
        return SW_OK;
    sw_status st = tokenizer_create_from_hf(m->path, &m->tok);
    if (st == SW_OK)
        free(m->tokenizer_model), m->tokenizer_model = NULL;
    if (st == SW_OK && (m->tokenizer_model = malloc(sizeof "tokenizer.json")) != NULL)
        strcpy(m->tokenizer_model, "tokenizer.json");
    else if (st == SW_OK)
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", m->path);
    return st;
}

sw_status sw_model_open(const char *path, sw_model **out) {
    sw_model *m = NULL;
    sw_status st;

    if (out == NULL || path == NULL || path[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "sw_model_open: no model path given");
    *out = NULL;
    m = calloc(1, sizeof *m);
    if (m == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", path);
    m->is_hf = hf_is_folder(path);
    if (m->is_hf) {
        hf_model_info info;
        st = hf_model_open(path, &m->gguf, &info);
    } else {
        st = gguf_open(path, &m->gguf);
    }
    if (st != SW_OK)
        goto fail;
    m->path = malloc(strlen(path) + 1);
    m->architecture = dup_meta_str(m->gguf, "general.architecture");
    m->name = dup_meta_str(m->gguf, "general.name");
    m->tokenizer_model = dup_meta_str(m->gguf, "tokenizer.ggml.model");
    m->keys = dup_keys(m->gguf);
    if (!m->path || !m->architecture || !m->name || !m->tokenizer_model || !m->keys) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", path);
        goto fail;
    }
    strcpy(m->path, path);
    if ((st = open_tokenizer(m)) != SW_OK) {
        sw_error_prefix(st, "%s", path);
        goto fail;
    }
    fill_summary(m);
    *out = m;
    return SW_OK;
fail:
    sw_model_close(m);
    return st;
}

void sw_model_close(sw_model *m) {
    if (m == NULL)
        return;
    tokenizer_destroy(m->tok);
    gguf_close(m->gguf);
    free(m->path);
    free(m->architecture);
    free(m->name);
    free(m->tokenizer_model);
    free(m->keys);
    free(m);
}

sw_status sw_model_get_summary(const sw_model *m, sw_model_summary *out) {
    if (m == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_model_get_summary: NULL argument");
    *out = m->summary;
    return SW_OK;
}

size_t sw_model_tensor_count(const sw_model *m) {
    return m ? (size_t)m->gguf->n_tensors : 0;
}

sw_status sw_model_tensor_at(const sw_model *m, size_t index, sw_tensor_info *out) {
    if (m == NULL || out == NULL || index >= m->gguf->n_tensors)
        return sw_errorf(SW_ERR_ARG, "tensor index %zu out of range", index);
    const gguf_tensor *t = &m->gguf->tensors[index];
    out->name = t->name;
    out->type = t->type;
    out->type_name = type_name(t->type);
    out->n_dims = t->n_dims;
    for (int d = 0; d < 4; d++)
        out->ne[d] = t->ne[d];
    out->n_elements = t->n_elements;
    out->n_bytes = t->n_bytes;
    out->file_offset = m->gguf->data_offset + t->offset;
    return SW_OK;
}

sw_status sw_model_tensor_to_f32(const sw_model *m, size_t index, float *dst) {
    if (m == NULL || dst == NULL || index >= m->gguf->n_tensors)
        return sw_errorf(SW_ERR_ARG, "tensor index %zu out of range", index);
    const gguf_tensor *t = &m->gguf->tensors[index];
    sw_status st = quant_dequantize(t->type, t->data, dst, t->n_elements);
    if (st == SW_ERR_UNSUPPORTED)
        return sw_errorf(st, "unsupported tensor type %u (%s) in tensor '%s'", t->type,
                         type_name(t->type), t->name);
    if (st != SW_OK)
        return sw_error_prefix(st, "tensor '%s'", t->name);
    return SW_OK;
}

int sw_model_is_assistant(const sw_model *model) {
    return model != NULL &&
           gguf_find_kv(model->gguf, "gemma4.assistant.backbone_embedding_length") != NULL;
}
