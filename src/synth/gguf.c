/*
 * gguf.c — synth's GGUF output: the metadata llama.cpp's converter writes
 * for Gemma 1/2/3 (gemma-facts §3.2, §3.5) and Gemma 4 (gemma4-facts,
 * "Names": per-layer arrays, the sliding pattern as bools), the synthetic
 * vocabulary (Gemma 4's with its merge rules), then the tensors in the
 * model's order. Matrices and the (tied) embedding in the requested type,
 * norm vectors in F32 holding 1 + w (Gemma 4's: the multiplier itself).
 * Written to PATH.tmp.<pid>, fsynced, renamed over PATH.
 */
#define _POSIX_C_SOURCE 200809L /* getpid, lstat */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/gguf.h"
#include "quant/types.h"
#include "synth/synth_internal.h"
#include "util/error.h"

/* Gemma's chat format (gemma-facts §5), as the official files carry it. */
#define GEMMA_CHAT_TEMPLATE                                                                  \
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"  \
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"        \
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}" \
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"

/* Gemma 4's turns (gemma4-facts): a system turn of its own. */
#define GEMMA4_CHAT_TEMPLATE                                                                 \
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"  \
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"        \
    "{{ '<|turn>' + role + '\\n' + message['content'] | trim + '<turn|>\\n' }}"            \
    "{% endfor %}{% if add_generation_prompt %}{{ '<|turn>model\\n' }}{% endif %}"

const char *synth_chat_template(bool gemma4) {
    return gemma4 ? GEMMA4_CHAT_TEMPLATE : GEMMA_CHAT_TEMPLATE;
}

/* llama.cpp's general.file_type for a file of mostly `type`. */
static uint32_t file_type(uint32_t type) {
    switch (type) {
    case SW_TYPE_F16: return 1;
    case SW_TYPE_Q8_0: return 7;
    case SW_TYPE_Q4_K: return 14; /* MOSTLY_Q4_K_S: every matrix Q4_K */
    default: return 32;           /* BF16 */
    }
}

/* gemma4.<key>: one value when every layer has it, else an array. */
static sw_status put_per_layer(gguf_writer *w, const char *key, const model_config *c,
                               uint32_t (*get)(const model_config *, uint32_t)) {
    bool same = true;
    for (uint32_t il = 1; il < c->n_layer; il++)
        same = same && get(c, il) == get(c, 0);
    if (same)
        return gguf_writer_kv_u32(w, key, get(c, 0));
    sw_status st = gguf_writer_array_begin(w, key, GGUF_VT_I32, c->n_layer);
    for (uint32_t il = 0; st == SW_OK && il < c->n_layer; il++)
        st = gguf_writer_array_i32(w, (int32_t)get(c, il));
    return st;
}

static uint32_t layer_ff(const model_config *c, uint32_t il) { return model_layer_n_ff(c, il); }
static uint32_t layer_kv(const model_config *c, uint32_t il) {
    return model_layer_n_head_kv(c, il);
}

/* Head sizes of full and sliding layers (the catalog's, whichever layers
 * --layers kept). */
static void head_dims(const model_config *c, uint32_t *full, uint32_t *swa) {
    *full = c->n_embd_head;
    *swa = c->n_embd_head;
    for (uint32_t il = 0; il < c->n_layer; il++)
        if (model_layer_is_local(c, il))
            *swa = model_layer_head_dim(c, il);
}

static sw_status put_gemma4(gguf_writer *w, const model_config *c) {
    char key[96];
    uint32_t full, swa, shared = 0;
#define KEY(suffix) (snprintf(key, sizeof key, "gemma4." suffix), key)
    head_dims(c, &full, &swa);
    for (uint32_t il = 0; il < c->n_layer; il++)
        shared += !model_layer_owns_kv(c, il);
    SW_TRY(put_per_layer(w, KEY("feed_forward_length"), c, layer_ff));
    SW_TRY(put_per_layer(w, KEY("attention.head_count_kv"), c, layer_kv));
    SW_TRY(gguf_writer_kv_f32(w, KEY("rope.freq_base"), c->rope_base_global));
    SW_TRY(gguf_writer_kv_f32(w, KEY("rope.freq_base_swa"), c->rope_base_local));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.key_length"), full));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.value_length"), full));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.key_length_swa"), swa));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.value_length_swa"), swa));
    SW_TRY(gguf_writer_kv_u32(w, KEY("rope.dimension_count"), full));
    SW_TRY(gguf_writer_kv_u32(w, KEY("rope.dimension_count_swa"), swa));
    SW_TRY(gguf_writer_kv_f32(w, KEY("final_logit_softcapping"), c->final_softcap));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.shared_kv_layers"), shared));
    SW_TRY(gguf_writer_kv_u32(w, KEY("embedding_length_per_layer_input"), c->n_embd_per_layer));
    SW_TRY(gguf_writer_array_begin(w, KEY("attention.sliding_window_pattern"), GGUF_VT_BOOL,
                                c->n_layer));
    for (uint32_t il = 0; il < c->n_layer; il++)
        SW_TRY(gguf_writer_array_bool(w, model_layer_is_local(c, il)));
    if (c->n_expert != 0) {
        SW_TRY(gguf_writer_kv_u32(w, KEY("expert_count"), c->n_expert));
        SW_TRY(gguf_writer_kv_u32(w, KEY("expert_used_count"), c->n_expert_used));
        SW_TRY(gguf_writer_kv_u32(w, KEY("expert_feed_forward_length"), c->n_ff_exp));
    }
#undef KEY
    return SW_OK;
}

static sw_status put_arch(gguf_writer *w, const synth_model *m, uint32_t type) {
    const model_config *c = &m->c;
    char key[96], name[96];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, c->arch), key)
    snprintf(name, sizeof name, "synthetic %s", m->name);
    SW_TRY(gguf_writer_kv_str(w, "general.architecture", c->arch));
    SW_TRY(gguf_writer_kv_str(w, "general.type", "model"));
    SW_TRY(gguf_writer_kv_str(w, "general.name", name));
    SW_TRY(gguf_writer_kv_u32(w, KEY("context_length"), c->n_ctx_train));
    SW_TRY(gguf_writer_kv_u32(w, KEY("embedding_length"), c->n_embd));
    SW_TRY(gguf_writer_kv_u32(w, KEY("block_count"), c->n_layer));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.head_count"), c->n_head));
    SW_TRY(gguf_writer_kv_f32(w, KEY("attention.layer_norm_rms_epsilon"), c->norm_eps));
    /* 15: MOSTLY_Q4_K_M */
    SW_TRY(gguf_writer_kv_u32(w, "general.file_type", m->q4_k_m ? 15 : file_type(type)));
    if (c->sliding_window != 0)
        SW_TRY(gguf_writer_kv_u32(w, KEY("attention.sliding_window"), c->sliding_window));
    if (type == SW_TYPE_Q8_0 || type == SW_TYPE_Q4_K)
        SW_TRY(gguf_writer_kv_u32(w, "general.quantization_version", 2));
    if (m->family == 4)
        return put_gemma4(w, c);
    SW_TRY(gguf_writer_kv_u32(w, KEY("feed_forward_length"), c->n_ff));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.head_count_kv"), c->n_head_kv));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.key_length"), c->n_embd_head));
    SW_TRY(gguf_writer_kv_u32(w, KEY("attention.value_length"), c->n_embd_head));
    if (m->family == 2) {
        SW_TRY(gguf_writer_kv_f32(w, KEY("attn_logit_softcapping"), c->attn_softcap));
        SW_TRY(gguf_writer_kv_f32(w, KEY("final_logit_softcapping"), c->final_softcap));
    }
    if (m->family == 3)
        SW_TRY(gguf_writer_kv_f32(w, KEY("rope.freq_base"), c->rope_base_global));
    /* Readers infer the 27B query scale from the depth, which --layers
     * changes: state it (model/config.c prefers a stated scale). */
    SW_TRY(gguf_writer_kv_f32(w, KEY("attention.scale"), c->query_scale));
    if (c->rope_scale_global != 1.0f) {
        SW_TRY(gguf_writer_kv_str(w, KEY("rope.scaling.type"), "linear"));
        SW_TRY(gguf_writer_kv_f32(w, KEY("rope.scaling.factor"), 1.0f / c->rope_scale_global));
    }
#undef KEY
    return SW_OK;
}

/* Gemma 4's merge rules as "left right" strings (pieces have no spaces:
 * SentencePiece writes them as U+2581). */
typedef struct merge_put {
    gguf_writer *w;
    const synth_vocab *v;
    sw_status st;
} merge_put;

static void put_rule(void *user, uint32_t a, uint32_t b) {
    merge_put *p = user;
    size_t la, lb;
    const char *pa = synth_piece(p->v, a, &la), *pb = synth_piece(p->v, b, &lb);
    char buf[64];
    if (p->st != SW_OK || la + lb + 1 > sizeof buf)
        return;
    memcpy(buf, pa, la);
    buf[la] = ' ';
    memcpy(buf + la + 1, pb, lb);
    p->st = gguf_writer_array_str(p->w, buf, la + lb + 1);
}

static sw_status put_merges(gguf_writer *w, const synth_vocab *v) {
    uint64_t n = 0;
    for (uint32_t k = v->first_merged; k < v->n; k++)
        n += synth_vocab_merges(v, k, NULL, NULL);
    merge_put p = {w, v, gguf_writer_array_begin(w, "tokenizer.ggml.merges", GGUF_VT_STRING, n)};
    for (uint32_t k = v->first_merged; p.st == SW_OK && k < v->n; k++)
        synth_vocab_merges(v, k, put_rule, &p);
    return p.st;
}

static sw_status put_vocab(gguf_writer *w, const synth_vocab *v) {
    const bool gemma4 = v->gemma4;
    SW_TRY(gguf_writer_kv_str(w, "tokenizer.ggml.model", gemma4 ? "gemma4" : "llama"));
    if (!gemma4)
        SW_TRY(gguf_writer_kv_str(w, "tokenizer.ggml.pre", "default"));
    SW_TRY(gguf_writer_array_begin(w, "tokenizer.ggml.tokens", GGUF_VT_STRING, v->n));
    for (uint32_t i = 0; i < v->n; i++) {
        size_t len;
        const char *p = synth_piece(v, i, &len);
        SW_TRY(gguf_writer_array_str(w, p, len));
    }
    SW_TRY(gguf_writer_array_begin(w, "tokenizer.ggml.scores", GGUF_VT_F32, v->n));
    for (uint32_t i = 0; i < v->n; i++)
        SW_TRY(gguf_writer_array_f32(w, synth_vocab_score(v, i)));
    SW_TRY(gguf_writer_array_begin(w, "tokenizer.ggml.token_type", GGUF_VT_I32, v->n));
    for (uint32_t i = 0; i < v->n; i++)
        SW_TRY(gguf_writer_array_i32(w, v->type[i]));
    if (gemma4)
        SW_TRY(put_merges(w, v));
    SW_TRY(gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 2));
    SW_TRY(gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", 1));
    SW_TRY(gguf_writer_kv_u32(w, "tokenizer.ggml.unknown_token_id", 3));
    SW_TRY(gguf_writer_kv_u32(w, "tokenizer.ggml.padding_token_id", 0));
    SW_TRY(gguf_writer_kv_bool(w, "tokenizer.ggml.add_bos_token", true));
    SW_TRY(gguf_writer_kv_bool(w, "tokenizer.ggml.add_eos_token", false));
    SW_TRY(gguf_writer_kv_bool(w, "tokenizer.ggml.add_space_prefix", false));
    SW_TRY(gguf_writer_kv_str(w, "tokenizer.chat_template", synth_chat_template(gemma4)));
    return SW_OK;
}

static sw_status put_tensors(gguf_writer *w, const synth_model *m) {
    for (size_t i = 0; i < m->n; i++) {
        const synth_tensor *t = &m->t[i];
        uint64_t ne[3] = {t->ne0, t->ne1, t->ne2};
        SW_TRY(gguf_writer_add_tensor(w, t->gguf_name, t->n_dims, ne, t->gguf_type));
    }
    return SW_OK;
}

/* PATH may exist only with --force, and only as a file. */
static sw_status check_target(const char *path, bool force) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return SW_OK;
    if (S_ISDIR(sb.st_mode))
        return sw_errorf(SW_ERR_IO, "'%s' is a folder; give a file name for --format gguf "
                         "(e.g. %s/model.gguf)", path, path);
    if (!force)
        return sw_errorf(SW_ERR_IO, "'%s' exists; pass --force to replace it or choose "
                         "another -o", path);
    return SW_OK;
}

typedef struct gguf_emit {
    gguf_writer *w;
    const byte_sink *sink;
} gguf_emit;

static sw_status emit_data(void *user, const void *bytes, size_t n) {
    gguf_emit *e = user;
    return gguf_writer_write_data(e->w, e->sink, bytes, n);
}

/* Header and data into the open file f. */
static sw_status write_body(synth_ctx *x, const synth_model *m, gguf_writer *w, out_file *f) {
    sw_status st = gguf_writer_write_header(w, &f->sink);
    if (st != SW_OK || (st = synth_advance(x, f->written + f->len)) != SW_OK)
        return st;
    gguf_emit e = {w, &f->sink};
    for (size_t i = 0; i < m->n; i++) {
        const synth_tensor *t = &m->t[i];
        float add = t->kind == SYNTH_NORM ? 1.0f : 0.0f; /* GGUF norms hold 1 + w */
        if ((st = synth_stream_tensor(x, t, t->gguf_type, add, emit_data, &e)) != SW_OK)
            return st;
    }
    return gguf_writer_finish(w, &f->sink);
}

sw_status synth_write_gguf(synth_ctx *x, const synth_model *m, const synth_vocab *v,
                           uint32_t type, synth_result *r) {
    gguf_writer *w = NULL;
    out_file f = {.fd = -1};
    char *tmp = NULL, dir[4096];
    const char *path = x->o->path;
    sw_status st;
    if ((st = check_target(path, x->o->force)) != SW_OK || (st = gguf_writer_create(&w)) != SW_OK ||
        (st = put_arch(w, m, type)) != SW_OK || (st = put_vocab(w, v)) != SW_OK ||
        (st = put_tensors(w, m)) != SW_OK)
        goto fail;
    x->total_bytes = gguf_writer_file_bytes(w);
    if ((st = synth_check_space(path, x->total_bytes)) != SW_OK)
        goto fail;
    if ((tmp = synth_strf("%s.tmp.%ld", path, (long)getpid())) == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        goto fail;
    }
    if ((st = out_file_create(&f, tmp)) != SW_OK)
        goto fail;
    if ((st = write_body(x, m, w, &f)) != SW_OK || (st = out_file_close(&f)) != SW_OK)
        goto fail;
    if (rename(tmp, path) != 0) {
        st = sw_errorf(SW_ERR_IO, "cannot rename '%s' to '%s'", tmp, path);
        goto fail;
    }
    synth_parent_dir(path, dir, sizeof dir);
    synth_sync_dir(dir);
    r->bytes_written = f.written;
    r->n_files = 1;
    out_file_free(&f);
    free(tmp);
    gguf_writer_destroy(w);
    return SW_OK;
fail:
    out_file_discard(&f);
    free(tmp);
    gguf_writer_destroy(w);
    return st;
}
