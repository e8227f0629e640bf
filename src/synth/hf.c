/*
 * hf.c — synth's Hugging Face output: a folder as transformers 5.x
 * save_pretrained writes it for GemmaForCausalLM / Gemma2ForCausalLM /
 * Gemma3ForCausalLM (config.json with its key set, sorted, indent 2), the
 * weights as safetensors with HF names (norms without the +1), sharded at
 * 5 GB with model.safetensors.index.json, plus tokenizer.json and
 * tokenizer_config.json (hf_tokenizer.c); a Gemma 4 assistant
 * (Gemma4AssistantForCausalLM) has no tokenizer files, as it uses its
 * target's, and one I64 tensor (its token ordering).
 *
 * Everything is written into PATH.tmp.<pid>/, each file fsynced, and the
 * folder renamed to PATH at the end; on failure the temporary folder is
 * removed. An existing PATH is replaced (with --force) only if it holds
 * nothing but files of these names.
 */
#define _XOPEN_SOURCE 700 /* getpid, lstat, opendir, mkdir */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/safetensors_write.h"
#include "quant/types.h"
#include "synth/synth_internal.h"
#include "util/error.h"

#define SHARD_MAX_BYTES 5000000000ull /* transformers' "5GB" */
#define HF_VERSION "5.24.0"          /* the transformers whose format this copies */

/* ---- folders -------------------------------------------------------------- */

/* Whether `name` is a file an HF model folder written here may hold. */
static bool known_name(const char *name) {
    static const char *const fixed[] = {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "chat_template.jinja", "model.safetensors",
        "model.safetensors.index.json"};
    unsigned a, b;
    char tail[32];
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(name, fixed[i]))
            return true;
    return sscanf(name, "model-%5u-of-%5u%31s", &a, &b, tail) == 3 &&
           !strcmp(tail, ".safetensors");
}

/* Deletes the entries of `dir` (all of them, or only known names) and the
 * folder. Returns false if something is left. */
static bool remove_dir(const char *dir, bool only_known) {
    DIR *d = opendir(dir);
    if (d == NULL)
        return false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (only_known && !known_name(e->d_name))
            continue;
        char *p = synth_strf("%s/%s", dir, e->d_name);
        if (p != NULL)
            unlink(p);
        free(p);
    }
    closedir(d);
    return rmdir(dir) == 0;
}

/* PATH may exist only with --force, as a folder of known names. */
static sw_status check_target(const char *path, bool force) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return SW_OK;
    if (!S_ISDIR(sb.st_mode))
        return sw_errorf(SW_ERR_IO, "'%s' exists and is not a folder; --format hf writes a "
                         "folder: choose another -o", path);
    if (!force)
        return sw_errorf(SW_ERR_IO, "'%s' exists; pass --force to replace it or choose "
                         "another -o", path);
    DIR *d = opendir(path);
    if (d == NULL)
        return sw_errorf(SW_ERR_IO, "cannot read folder '%s': %s", path, strerror(errno));
    struct dirent *e;
    sw_status st = SW_OK;
    while (st == SW_OK && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !known_name(e->d_name))
            st = sw_errorf(SW_ERR_IO, "'%s' holds '%s', which synth did not write; remove the "
                           "folder yourself or choose another -o", path, e->d_name);
    closedir(d);
    return st;
}

/* ---- JSON files ----------------------------------------------------------- */

typedef void (*json_body_fn)(jsonw *j, const void *ctx);

static sw_status write_json(const char *dir, const char *name, json_body_fn body,
                            const void *ctx, uint64_t *bytes) {
    out_file f = {.fd = -1};
    char *path = synth_strf("%s/%s", dir, name);
    if (path == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    sw_status st = out_file_create(&f, path);
    free(path);
    if (st != SW_OK)
        return st;
    jsonw j;
    jw_init(&j, &f.sink, JW_PRETTY);
    body(&j, ctx);
    if ((st = jw_finish(&j)) != SW_OK || (st = out_file_close(&f)) != SW_OK) {
        out_file_discard(&f);
        return st;
    }
    *bytes += f.written;
    out_file_free(&f);
    return SW_OK;
}

typedef struct config_ctx {
    const synth_model *m;
    uint32_t type;
} config_ctx;

static void config_rope(jsonw *j, const synth_model *m) {
    const model_config *c = &m->c;
    jw_key(j, "rope_parameters");
    jw_obj(j);
    if (m->family == 3) {
        jw_key(j, "full_attention");
        jw_obj(j);
        if (c->rope_scale_global != 1.0f) {
            jw_key(j, "factor");
            jw_float(j, 1.0 / c->rope_scale_global);
        }
        jw_key(j, "rope_theta");
        jw_float(j, c->rope_base_global);
        jw_key(j, "rope_type");
        jw_str(j, c->rope_scale_global != 1.0f ? "linear" : "default");
        jw_obj_end(j);
        jw_key(j, "sliding_attention");
        jw_obj(j);
    }
    jw_key(j, "rope_theta");
    jw_float(j, c->rope_base_local);
    jw_key(j, "rope_type");
    jw_str(j, "default");
    if (m->family == 3)
        jw_obj_end(j);
    jw_obj_end(j);
}

static void config_softcap(jsonw *j, const char *key, float cap) {
    jw_key(j, key);
    if (cap != 0.0f)
        jw_float(j, cap);
    else
        jw_null(j);
}

/* config.json: transformers writes json.dumps(indent=2, sort_keys=True);
 * the keys below are in that order. */
static void config_body(jsonw *j, const void *ctx) {
    const config_ctx *cc = ctx;
    const synth_model *m = cc->m;
    const model_config *c = &m->c;
    int f = m->family;
    if (m->c.assistant) {
        synth_gemma4_assistant_config_json(j, m, cc->type == SW_TYPE_F16);
        return;
    }
    if (f == 4) {
        synth_gemma4_config_json(j, m, cc->type == SW_TYPE_F16);
        return;
    }
    jw_obj(j);
    if (f == 3)
        jw_key_int(j, "_sliding_window_pattern", c->swa_pattern);
    jw_key(j, "architectures");
    jw_arr(j);
    jw_str(j, f == 1 ? "GemmaForCausalLM" : f == 2 ? "Gemma2ForCausalLM" : "Gemma3ForCausalLM");
    jw_arr_end(j);
    jw_key(j, "attention_bias");
    jw_bool(j, false);
    jw_key(j, "attention_dropout");
    jw_float(j, 0.0);
    if (f != 1)
        config_softcap(j, "attn_logit_softcapping", c->attn_softcap);
    jw_key_int(j, "bos_token_id", 2);
    jw_key(j, "dtype");
    jw_str(j, cc->type == SW_TYPE_F16 ? "float16" : "bfloat16");
    jw_key_int(j, "eos_token_id", 1);
    if (f != 1)
        config_softcap(j, "final_logit_softcapping", c->final_softcap);
    jw_key_int(j, "head_dim", c->n_embd_head);
    jw_key(j, f == 1 ? "hidden_act" : "hidden_activation");
    jw_str(j, "gelu_pytorch_tanh");
    jw_key_int(j, "hidden_size", c->n_embd);
    jw_key(j, "initializer_range");
    jw_float(j, 0.02);
    jw_key_int(j, "intermediate_size", c->n_ff);
    if (f != 1) {
        jw_key(j, "layer_types");
        jw_arr(j);
        for (uint32_t il = 0; il < c->n_layer; il++)
            jw_str(j, model_layer_is_local(c, il) ? "sliding_attention" : "full_attention");
        jw_arr_end(j);
    }
    jw_key_int(j, "max_position_embeddings", c->n_ctx_train);
    jw_key(j, "model_type");
    jw_str(j, f == 1 ? "gemma" : f == 2 ? "gemma2" : "gemma3_text");
    jw_key_int(j, "num_attention_heads", c->n_head);
    jw_key_int(j, "num_hidden_layers", c->n_layer);
    jw_key_int(j, "num_key_value_heads", c->n_head_kv);
    jw_key_int(j, "pad_token_id", 0);
    if (f != 1)
        jw_key_int(j, "query_pre_attn_scalar", m->query_pre_attn);
    jw_key(j, "rms_norm_eps");
    jw_float(j, 1e-6); /* c->norm_eps is the f32 rounding of this */
    config_rope(j, m);
    if (f != 1)
        jw_key_int(j, "sliding_window", c->sliding_window);
    jw_key(j, "tie_word_embeddings");
    jw_bool(j, true);
    jw_key(j, "transformers_version");
    jw_str(j, HF_VERSION);
    jw_key(j, "use_bidirectional_attention");
    if (f == 3)
        jw_bool(j, false);
    else
        jw_null(j);
    jw_key(j, "use_cache");
    jw_bool(j, true);
    jw_key_int(j, "vocab_size", c->n_vocab);
    jw_obj_end(j);
}

/* ---- weights ---------------------------------------------------------------- */

typedef struct shard {
    const synth_tensor **order; /* its tensors, sorted by HF name */
    size_t n;
    st_writer *w;
    char name[48];
} shard;

typedef struct hf_job {
    synth_ctx *x;
    const synth_model *m;
    uint32_t type;        /* SW_TYPE_BF16 or SW_TYPE_F16 */
    shard *shards;
    size_t n_shards;
    size_t *shard_of;     /* (m->n) shard index of each tensor */
    char *tmp;            /* PATH.tmp.<pid> */
    uint64_t data_bytes;  /* sum of tensor bytes */
} hf_job;

/* I64 for an index tensor, else the requested 2-byte float type. */
static uint64_t hf_bytes(const synth_tensor *t) {
    return t->ne0 * synth_rows(t) * (t->kind == SYNTH_INDEX ? 8 : 2);
}

static st_dtype hf_dtype(const synth_tensor *t, uint32_t type) {
    return t->kind == SYNTH_INDEX ? ST_I64 : type == SW_TYPE_F16 ? ST_F16 : ST_BF16;
}

/* Tensors transformers computes itself (rope_freqs) are GGUF only. */
static bool in_hf(const synth_tensor *t) { return t->hf_name[0] != '\0'; }

static int by_hf_name(const void *a, const void *b) {
    return strcmp((*(const synth_tensor *const *)a)->hf_name,
                  (*(const synth_tensor *const *)b)->hf_name);
}

/* The order safetensors.torch.save_file lays a file out in: wider dtypes
 * first (so every tensor's data is aligned to its elements: here the I64
 * token ordering before the 2-byte floats), then by name. */
static int by_st_order(const void *a, const void *b) {
    const synth_tensor *x = *(const synth_tensor *const *)a, *y = *(const synth_tensor *const *)b;
    const int wx = x->kind == SYNTH_INDEX, wy = y->kind == SYNTH_INDEX;
    return wx != wy ? wy - wx : strcmp(x->hf_name, y->hf_name);
}

/* Splits the state-dict order into shards of at most 5 GB, as
 * transformers' shard_checkpoint does, and declares each shard's tensors
 * in safetensors' order. */
static sw_status plan_shards(hf_job *h) {
    const synth_model *m = h->m;
    uint64_t cur = 0, max = h->x->o->shard_bytes ? h->x->o->shard_bytes : SHARD_MAX_BYTES;
    h->shard_of = malloc(m->n * sizeof *h->shard_of);
    h->shards = calloc(m->n, sizeof *h->shards);
    if (h->shard_of == NULL || h->shards == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    for (size_t i = 0; i < m->n; i++) {
        h->shard_of[i] = SIZE_MAX;
        if (!in_hf(&m->t[i]))
            continue;
        uint64_t b = hf_bytes(&m->t[i]);
        if (h->n_shards == 0 || (cur > 0 && cur + b > max)) {
            h->n_shards++;
            cur = 0;
        }
        cur += b;
        h->data_bytes += b;
        h->shard_of[i] = h->n_shards - 1;
        h->shards[h->n_shards - 1].n++;
    }
    for (size_t s = 0; s < h->n_shards; s++) {
        shard *sh = &h->shards[s];
        if (h->n_shards == 1)
            snprintf(sh->name, sizeof sh->name, "model.safetensors");
        else
            snprintf(sh->name, sizeof sh->name, "model-%05u-of-%05u.safetensors",
                     (unsigned)(s + 1) % 100000u, (unsigned)h->n_shards % 100000u);
        if ((sh->order = malloc(sh->n * sizeof *sh->order)) == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        for (size_t i = 0, k = 0; i < m->n; i++)
            if (h->shard_of[i] == s)
                sh->order[k++] = &m->t[i];
        qsort(sh->order, sh->n, sizeof *sh->order, by_st_order);
        sw_status st = st_writer_create(&sh->w);
        for (size_t k = 0; st == SW_OK && k < sh->n; k++) {
            const synth_tensor *t = sh->order[k];
            uint64_t shape[3] = {t->ne2, t->ne1, t->ne0}; /* HF order: outermost first */
            st = st_writer_add(sh->w, t->hf_name, hf_dtype(t, h->type), t->n_dims,
                               shape + 3 - t->n_dims);
        }
        uint64_t file_bytes = 0;
        if (st == SW_OK && (st = st_writer_file_bytes(sh->w, &file_bytes)) == SW_OK)
            h->x->total_bytes += file_bytes;
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

typedef struct st_emit {
    st_writer *w;
    const byte_sink *sink;
} st_emit;

static sw_status emit_data(void *user, const void *bytes, size_t n) {
    st_emit *e = user;
    return st_writer_write_data(e->w, e->sink, bytes, n);
}

static sw_status write_shard(hf_job *h, shard *sh, uint64_t *bytes) {
    out_file f = {.fd = -1};
    char *path = synth_strf("%s/%s", h->tmp, sh->name);
    if (path == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    sw_status st = out_file_create(&f, path);
    free(path);
    if (st != SW_OK)
        return st;
    if ((st = st_writer_write_header(sh->w, &f.sink)) != SW_OK ||
        (st = synth_advance(h->x, f.written + f.len)) != SW_OK)
        goto fail;
    st_emit e = {sh->w, &f.sink};
    for (size_t k = 0; k < sh->n; k++) {
        const synth_tensor *t = sh->order[k];
        st = t->kind == SYNTH_INDEX ? synth_stream_index(h->x, t, emit_data, &e)
                                    : synth_stream_tensor(h->x, t, h->type, 0.0f, emit_data, &e);
        if (st != SW_OK)
            goto fail;
    }
    if ((st = st_writer_finish(sh->w)) != SW_OK || (st = out_file_close(&f)) != SW_OK)
        goto fail;
    *bytes += f.written;
    out_file_free(&f);
    return SW_OK;
fail:
    out_file_discard(&f);
    return st;
}

/* model.safetensors.index.json: sorted keys, as transformers writes it. */
static void index_body(jsonw *j, const void *ctx) {
    const hf_job *h = ctx;
    const synth_model *m = h->m;
    uint64_t n_params = 0;
    size_t n_hf = 0;
    for (size_t i = 0; i < m->n; i++)
        if (in_hf(&m->t[i])) {
            n_params += synth_is_param(&m->t[i]) ? m->t[i].ne0 * synth_rows(&m->t[i]) : 0;
            n_hf++;
        }
    jw_obj(j);
    jw_key(j, "metadata");
    jw_obj(j);
    jw_key(j, "total_parameters");
    jw_int(j, (int64_t)n_params);
    jw_key(j, "total_size");
    jw_int(j, (int64_t)h->data_bytes);
    jw_obj_end(j);
    jw_key(j, "weight_map");
    jw_obj(j);
    const synth_tensor **all = malloc(m->n * sizeof *all);
    if (all == NULL) {
        j->st = sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        return;
    }
    for (size_t i = 0, k = 0; i < m->n; i++)
        if (in_hf(&m->t[i]))
            all[k++] = &m->t[i];
    qsort(all, n_hf, sizeof *all, by_hf_name);
    for (size_t k = 0; k < n_hf; k++) {
        jw_key(j, all[k]->hf_name);
        jw_str(j, h->shards[h->shard_of[all[k] - m->t]].name);
    }
    free(all);
    jw_obj_end(j);
    jw_obj_end(j);
}

static void job_free(hf_job *h) {
    for (size_t s = 0; h->shards && s < h->n_shards; s++) {
        free(h->shards[s].order);
        st_writer_destroy(h->shards[s].w);
    }
    free(h->shards);
    free(h->shard_of);
    free(h->tmp);
}

/* All files into h->tmp (the tokenizer's only with a vocabulary v). */
static sw_status write_files(hf_job *h, const synth_vocab *v, uint64_t *bytes) {
    config_ctx cc = {h->m, h->type};
    sw_status st;
    if ((st = write_json(h->tmp, "config.json", config_body, &cc, bytes)) != SW_OK)
        return st;
    if (v != NULL &&
        ((st = write_json(h->tmp, "tokenizer.json", synth_tokenizer_json, v, bytes)) != SW_OK ||
         (st = write_json(h->tmp, "tokenizer_config.json", synth_tokenizer_config_json, v,
                          bytes)) != SW_OK))
        return st;
    for (size_t s = 0; s < h->n_shards; s++)
        if ((st = write_shard(h, &h->shards[s], bytes)) != SW_OK)
            return st;
    if (h->n_shards > 1 &&
        (st = write_json(h->tmp, "model.safetensors.index.json", index_body, h, bytes)) != SW_OK)
        return st;
    synth_sync_dir(h->tmp);
    return SW_OK;
}

/* Moves the finished folder to PATH (replacing a checked old one). */
static sw_status publish(const hf_job *h, const char *path) {
    struct stat sb;
    char dir[4096];
    if (lstat(path, &sb) == 0 && !remove_dir(path, true))
        return sw_errorf(SW_ERR_IO, "cannot replace '%s': %s; remove it yourself", path,
                         strerror(errno));
    if (rename(h->tmp, path) != 0)
        return sw_errorf(SW_ERR_IO, "cannot rename '%s' to '%s': %s", h->tmp, path,
                         strerror(errno));
    synth_parent_dir(path, dir, sizeof dir);
    synth_sync_dir(dir);
    return SW_OK;
}

/* Room for the JSON files: tokenizer.json takes ~60 bytes per token (its
 * vocabulary entry and merges), the rest is small. */
static uint64_t json_bytes_estimate(const synth_model *m) {
    return ((uint64_t)1 << 20) + 128 * (uint64_t)m->c.n_vocab;
}

sw_status synth_write_hf(synth_ctx *x, const synth_model *m, const synth_vocab *v,
                         uint32_t type, synth_result *r) {
    /* transformers makes the last layer full whatever layer_types says */
    if (m->family == 4 && model_layer_is_local(&m->c, m->c.n_layer - 1))
        return sw_errorf(SW_ERR_ARG, "--layers %u: a Gemma 4 Hugging Face folder must end on a "
                         "full-attention layer (transformers makes the last layer full); %s "
                         "has one every %u layers: choose a multiple of %u, or --format gguf",
                         m->c.n_layer, m->name, m->c.swa_pattern, m->c.swa_pattern);
    hf_job h = {.x = x, .m = m, .type = type};
    bool made_dir = false;
    char *path = synth_strf("%s", x->o->path);
    sw_status st = SW_OK;
    if (path == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        goto done;
    }
    for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
        path[n - 1] = '\0';
    if ((st = check_target(path, x->o->force)) != SW_OK || (st = plan_shards(&h)) != SW_OK ||
        (st = synth_check_space(path, x->total_bytes + json_bytes_estimate(m))) != SW_OK)
        goto done;
    if ((h.tmp = synth_strf("%s.tmp.%ld", path, (long)getpid())) == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
        goto done;
    }
    if (mkdir(h.tmp, 0755) != 0) {
        char dir[4096];
        synth_parent_dir(path, dir, sizeof dir);
        st = sw_errorf(SW_ERR_IO, "cannot create folder '%s': %s; check that '%s' exists and "
                       "is writable, or choose another -o", h.tmp, strerror(errno), dir);
        goto done;
    }
    made_dir = true;
    uint64_t bytes = 0;
    if ((st = write_files(&h, v, &bytes)) != SW_OK || (st = publish(&h, path)) != SW_OK)
        goto done;
    made_dir = false;
    r->bytes_written = bytes;
    r->n_files = (uint32_t)h.n_shards + (v != NULL ? 3 : 1) + (h.n_shards > 1);
done:
    if (made_dir)
        remove_dir(h.tmp, false); /* best effort: every entry in it is ours */
    job_free(&h);
    free(path);
    return st;
}
