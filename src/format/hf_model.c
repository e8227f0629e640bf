/*
 * hf_model.c — Hugging Face folder → model description (hf_model.h):
 * finds and opens the safetensors files, maps tensor names, converts
 * norm vectors, and hands everything to gguf_mem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/gguf_mem.h"
#include "format/hf_model.h"
#include "format/json_util.h"
#include "format/safetensors.h"
#include "quant/dequant.h"
#include "quant/types.h"
#include "util/error.h"

#define HF_MAX_SHARDS 4096
#define HF_PATH_BYTES 4096
#define HF_MAX_CONFIG_BYTES ((size_t)16 << 20)

typedef struct shard_set {
    uint32_t n;
    st_file **files;
} shard_set;

static void shards_release(void *ctx) {
    shard_set *s = ctx;
    if (s == NULL)
        return;
    for (uint32_t i = 0; i < s->n; i++)
        st_close(s->files[i]);
    free(s->files);
    free(s);
}

bool hf_is_folder(const char *path) {
    struct stat sb;
    return path != NULL && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static sw_status join(char *out, size_t cap, const char *dir, const char *name) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    if ((size_t)snprintf(out, cap, "%.*s/%s", (int)dl, dir, name) >= cap)
        return sw_errorf(SW_ERR_ARG, "path too long: %s/%s", dir, name);
    return SW_OK;
}

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A shard file name from the index: a plain file name, nothing that could
 * reach outside the folder. */
static bool shard_name_ok(const char *s) {
    size_t n = strlen(s);
    return n > 0 && n < 256 && s[0] != '.' && strchr(s, '/') == NULL &&
           strchr(s, '\\') == NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static sw_status open_shard(const char *dir, const char *name, shard_set *s) {
    char path[HF_PATH_BYTES];
    sw_status st = join(path, sizeof path, dir, name);
    if (st != SW_OK)
        return st;
    st = st_open(path, &s->files[s->n]);
    if (st == SW_OK)
        s->n++;
    return st;
}

/* Opens the shards named by the index's weight_map and checks that every
 * tensor it lists is in the file it names. */
static sw_status open_indexed(const char *dir, const char *index_path, shard_set *s) {
    json_object *root = NULL, *map = NULL;
    const char **names = NULL;
    size_t n_names = 0;
    sw_status st = jsonu_parse_file(index_path, HF_MAX_CONFIG_BYTES, &root);
    if (st != SW_OK)
        return st;
    if ((st = jsonu_get_obj(root, "weight_map", index_path, &map)) != SW_OK) {
        if (st == SW_ERR_ARG)
            st = sw_errorf(SW_ERR_FORMAT, "%s has no 'weight_map'", index_path);
        goto done;
    }
    size_t n_entries = (size_t)json_object_object_length(map);
    names = malloc((n_entries ? n_entries : 1) * sizeof *names);
    if (names == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory reading %s", index_path);
        goto done;
    }
    json_object_object_foreach(map, key, val) {
        if (!json_object_is_type(val, json_type_string) ||
            !shard_name_ok(json_object_get_string(val))) {
            st = sw_errorf(SW_ERR_FORMAT, "%s: weight_map['%s'] should name a .safetensors "
                           "file in the same folder", index_path, key);
            goto done;
        }
        names[n_names++] = json_object_get_string(val);
    }
    qsort(names, n_names, sizeof *names, cmp_str);
    size_t n_unique = 0;
    for (size_t i = 0; i < n_names; i++)
        if (n_unique == 0 || strcmp(names[n_unique - 1], names[i]) != 0)
            names[n_unique++] = names[i];
    if (n_unique == 0 || n_unique > HF_MAX_SHARDS) {
        st = sw_errorf(SW_ERR_FORMAT, "%s lists %zu files (expected 1 to %d)", index_path,
                       n_unique, HF_MAX_SHARDS);
        goto done;
    }
    s->files = calloc(n_unique, sizeof *s->files);
    if (s->files == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory reading %s", index_path);
        goto done;
    }
    for (size_t i = 0; i < n_unique && st == SW_OK; i++)
        st = open_shard(dir, names[i], s);
    if (st != SW_OK)
        goto done;
    json_object_object_foreach(map, tname, tfile) {
        const char *fname = json_object_get_string(tfile);
        for (uint32_t i = 0; i < s->n; i++) {
            const char *p = strrchr(s->files[i]->path, '/');
            if (strcmp(p ? p + 1 : s->files[i]->path, fname) != 0)
                continue;
            if (st_find(s->files[i], tname) == NULL) {
                st = sw_errorf(SW_ERR_FORMAT, "%s says tensor '%s' is in %s, but it is not",
                               index_path, tname, fname);
                goto done;
            }
        }
    }
done:
    free(names);
    json_object_put(root);
    return st;
}

static sw_status open_shards(const char *dir, shard_set *s) {
    char path[HF_PATH_BYTES];
    sw_status st;
    if ((st = join(path, sizeof path, dir, "model.safetensors.index.json")) != SW_OK)
        return st;
    if (exists(path))
        return open_indexed(dir, path, s);
    if ((st = join(path, sizeof path, dir, "model.safetensors")) != SW_OK)
        return st;
    if (!exists(path))
        return sw_errorf(SW_ERR_IO, "%s has no model.safetensors or "
                         "model.safetensors.index.json; Spillway reads safetensors "
                         "checkpoints (save with safe_serialization=True)", dir);
    s->files = calloc(1, sizeof *s->files);
    if (s->files == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", path);
    return open_shard(dir, "model.safetensors", s);
}

/* ---- names ------------------------------------------------------------------ */

/* How a tensor is held: a matrix as stored, a norm as f32 1 + w (Gemma
 * 1-3; Gemma 4 multiplies by w itself), a vector (scales) as f32 w,
 * experts (3-D) as stored, or integer indices (an assistant's token
 * ordering) as f32 values, exact below 2^24. */
typedef enum tensor_kind { TK_MATRIX, TK_NORM, TK_VECTOR, TK_EXPERTS, TK_INDEX } tensor_kind;

typedef struct name_map {
    const char *hf;            /* after "layers.N." */
    const char *gguf;          /* after "blk.N." */
    bool norm;
} name_map;

/* Gemma 4's other layer tensors (gemma4-facts, "Names"). */
typedef struct kind_map {
    const char *hf, *gguf;
    tensor_kind kind;
} kind_map;

static const kind_map GEMMA4_LAYER_NAMES[] = {
    {"layer_scalar", "layer_output_scale.weight", TK_VECTOR},
    {"per_layer_input_gate.weight", "inp_gate.weight", TK_MATRIX},
    {"per_layer_projection.weight", "proj.weight", TK_MATRIX},
    {"post_per_layer_input_norm.weight", "post_norm.weight", TK_NORM},
    {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight", TK_NORM},
    {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight", TK_NORM},
    {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight", TK_NORM},
    {"router.proj.weight", "ffn_gate_inp.weight", TK_MATRIX},
    {"router.scale", "ffn_gate_inp.scale", TK_VECTOR},
    {"router.per_expert_scale", "ffn_down_exps.scale", TK_VECTOR},
    {"experts.gate_up_proj", "ffn_gate_up_exps.weight", TK_EXPERTS},
    {"experts.down_proj", "ffn_down_exps.weight", TK_EXPERTS},
};

static const kind_map GEMMA4_GLOBAL_NAMES[] = {
    {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight", TK_MATRIX},
    {"per_layer_model_projection.weight", "per_layer_model_proj.weight", TK_MATRIX},
    {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight", TK_NORM},
};

/* A Gemma 4 assistant's own tensors, outside its text model (names as
 * model/config.h's assistant fields use them). */
static const kind_map ASSISTANT_NAMES[] = {
    {"pre_projection.weight", "mtp.pre_proj.weight", TK_MATRIX},
    {"post_projection.weight", "mtp.post_proj.weight", TK_MATRIX},
    {"masked_embedding.centroids.weight", "mtp.centroids.weight", TK_MATRIX},
    {"masked_embedding.token_ordering", "mtp.token_order", TK_INDEX},
};

static const name_map LAYER_NAMES[] = {
    {"input_layernorm.weight", "attn_norm.weight", true},
    {"self_attn.q_proj.weight", "attn_q.weight", false},
    {"self_attn.k_proj.weight", "attn_k.weight", false},
    {"self_attn.v_proj.weight", "attn_v.weight", false},
    {"self_attn.o_proj.weight", "attn_output.weight", false},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", true},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", true},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", true},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", true},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", true},
    {"mlp.gate_proj.weight", "ffn_gate.weight", false},
    {"mlp.up_proj.weight", "ffn_up.weight", false},
    {"mlp.down_proj.weight", "ffn_down.weight", false},
};

/* The text model's tensor prefix, from where the embedding is. */
static const char *text_prefix(const shard_set *s) {
    static const char *const prefixes[] = {"model.language_model.", "language_model.model.",
                                           "model."};
    char name[128];
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        snprintf(name, sizeof name, "%sembed_tokens.weight", prefixes[p]);
        for (uint32_t i = 0; i < s->n; i++)
            if (st_find(s->files[i], name) != NULL)
                return prefixes[p];
    }
    return "model.";
}

/* A Gemma 4 name from table[n] matching `rest`, or NULL. */
static const kind_map *find_kind(const kind_map *table, size_t n, const char *rest) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rest, table[i].hf))
            return &table[i];
    return NULL;
}

/* GGUF name for HF tensor `hf` into out; false when it is not part of the
 * text model (vision and audio towers, rotary buffers). */
static bool map_name(const char *hf, const char *prefix, const hf_config *c, char *out,
                     size_t cap, tensor_kind *kind) {
    const hf_family fam = c->family;
    const kind_map *k = NULL;
    *kind = TK_MATRIX;
    if (c->assistant &&
        (k = find_kind(ASSISTANT_NAMES, sizeof ASSISTANT_NAMES / sizeof ASSISTANT_NAMES[0],
                       hf))) {
        snprintf(out, cap, "%s", k->gguf);
        *kind = k->kind;
        return true;
    }
    if (!strcmp(hf, "lm_head.weight") || !strcmp(hf, "language_model.lm_head.weight")) {
        snprintf(out, cap, "output.weight");
        return true;
    }
    size_t pl = strlen(prefix);
    if (strncmp(hf, prefix, pl) != 0)
        return false;
    const char *rest = hf + pl;
    const bool g4 = fam == HF_GEMMA4;
    if (!strcmp(rest, "embed_tokens.weight")) {
        snprintf(out, cap, "token_embd.weight");
        return true;
    }
    if (!strcmp(rest, "norm.weight")) {
        snprintf(out, cap, "output_norm.weight");
        *kind = TK_NORM;
        return true;
    }
    if (g4 && (k = find_kind(GEMMA4_GLOBAL_NAMES, sizeof GEMMA4_GLOBAL_NAMES /
                                                       sizeof GEMMA4_GLOBAL_NAMES[0], rest))) {
        snprintf(out, cap, "%s", k->gguf);
        *kind = k->kind;
        return true;
    }
    unsigned layer;
    int used = 0;
    if (sscanf(rest, "layers.%u.%n", &layer, &used) != 1 || used == 0 || layer > 100000)
        return false;
    if (g4 && (k = find_kind(GEMMA4_LAYER_NAMES, sizeof GEMMA4_LAYER_NAMES /
                                                      sizeof GEMMA4_LAYER_NAMES[0],
                             rest + used))) {
        snprintf(out, cap, "blk.%u.%s", layer, k->gguf);
        *kind = k->kind;
        return true;
    }
    for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++) {
        if (strcmp(rest + used, LAYER_NAMES[i].hf) != 0)
            continue;
        const char *g = LAYER_NAMES[i].gguf;
        if (fam == HF_GEMMA1 && !strcmp(LAYER_NAMES[i].hf, "post_attention_layernorm.weight"))
            g = "ffn_norm.weight"; /* Gemma 1 has no post norms: this is the pre-FFN one */
        snprintf(out, cap, "blk.%u.%s", layer, g);
        *kind = LAYER_NAMES[i].norm ? TK_NORM : TK_MATRIX;
        return true;
    }
    return false;
}

/* The inverse of map_name for Gemma 4, over the same tables. */
bool hf_gemma4_name(const char *gguf, char *out, size_t cap) {
    if (!strcmp(gguf, "token_embd.weight"))
        return snprintf(out, cap, "model.embed_tokens.weight") > 0;
    if (!strcmp(gguf, "output_norm.weight"))
        return snprintf(out, cap, "model.norm.weight") > 0;
    for (size_t i = 0; i < sizeof GEMMA4_GLOBAL_NAMES / sizeof GEMMA4_GLOBAL_NAMES[0]; i++)
        if (!strcmp(gguf, GEMMA4_GLOBAL_NAMES[i].gguf))
            return snprintf(out, cap, "model.%s", GEMMA4_GLOBAL_NAMES[i].hf) > 0;
    unsigned layer;
    int used = 0;
    if (sscanf(gguf, "blk.%u.%n", &layer, &used) != 1 || used == 0)
        return false;
    const char *rest = gguf + used;
    for (size_t i = 0; i < sizeof GEMMA4_LAYER_NAMES / sizeof GEMMA4_LAYER_NAMES[0]; i++)
        if (!strcmp(rest, GEMMA4_LAYER_NAMES[i].gguf))
            return snprintf(out, cap, "model.layers.%u.%s", layer,
                            GEMMA4_LAYER_NAMES[i].hf) > 0;
    for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++)
        if (!strcmp(rest, LAYER_NAMES[i].gguf))
            return snprintf(out, cap, "model.layers.%u.%s", layer, LAYER_NAMES[i].hf) > 0;
    return false;
}

/* ---- tensors ------------------------------------------------------------------ */

static sw_status ggml_type_of(const st_file *f, const st_tensor *t, uint32_t *out) {
    switch (t->dtype) {
    case ST_F32: *out = SW_TYPE_F32; return SW_OK;
    case ST_F16: *out = SW_TYPE_F16; return SW_OK;
    case ST_BF16: *out = SW_TYPE_BF16; return SW_OK;
    default:
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s; Spillway reads "
                         "F32, F16 and BF16 checkpoints (quantized ones: convert to GGUF)",
                         f->path, t->name, st_dtype_name(t->dtype));
    }
}

/* Adds one mapped tensor: matrices and experts borrowed as stored
 * (dimensions reversed into GGUF order), norms as f32 1 + w (Gemma 1-3:
 * HF's x * (1 + w), in f32 as transformers computes it; Gemma 4's norms
 * and every vector as f32 w). */
/* Integer indices (I64 or I32, 1-D) as f32 values, each in [0, 2^24). */
static sw_status add_index(gguf_mem *b, const st_file *f, const st_tensor *t,
                           const char *gname) {
    if ((t->dtype != ST_I64 && t->dtype != ST_I32) || t->n_dims != 1 || t->n_elements == 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: tensor '%s' should be a vector of integers "
                         "(I64 or I32), not %s with %u dimensions", f->path, t->name,
                         st_dtype_name(t->dtype), t->n_dims);
    float *w = gguf_mem_alloc(b, t->n_elements * sizeof(float));
    if (w == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory converting '%s'", t->name);
    const uint8_t *p = t->data;
    for (uint64_t i = 0; i < t->n_elements; i++) {
        int64_t v;
        if (t->dtype == ST_I64) {
            memcpy(&v, p + i * 8, 8);
        } else {
            int32_t v32;
            memcpy(&v32, p + i * 4, 4);
            v = v32;
        }
        if (v < 0 || v >= (1 << 24))
            return sw_errorf(SW_ERR_FORMAT, "%s: tensor '%s'[%llu] = %lld is out of range",
                             f->path, t->name, (unsigned long long)i, (long long)v);
        w[i] = (float)v;
    }
    const uint64_t ne[1] = {t->n_elements};
    return gguf_mem_add_tensor(b, gname, SW_TYPE_F32, 1, ne, w, f->data_offset + t->offset);
}

static sw_status add_tensor(gguf_mem *b, const st_file *f, const st_tensor *t,
                            const char *gname, tensor_kind kind, hf_family fam) {
    uint32_t type = SW_TYPE_F32;
    if (kind == TK_INDEX)
        return add_index(b, f, t, gname);
    sw_status st = ggml_type_of(f, t, &type);
    if (st != SW_OK)
        return st;
    const uint32_t dims = kind == TK_EXPERTS ? 3u : kind == TK_MATRIX ? 2u : 1u;
    if (t->n_dims != dims || t->n_elements == 0)
        return sw_errorf(SW_ERR_FORMAT, "%s: tensor '%s' has %u dimensions, expected %u",
                         f->path, t->name, t->n_dims, dims);
    uint64_t ne[3] = {1, 1, 1};
    for (uint32_t d = 0; d < dims; d++)
        ne[d] = t->shape[dims - 1 - d];
    uint64_t file_offset = f->data_offset + t->offset;
    if (kind == TK_MATRIX || kind == TK_EXPERTS)
        return gguf_mem_add_tensor(b, gname, type, dims, ne, t->data, file_offset);
    float *w = gguf_mem_alloc(b, t->n_elements * sizeof(float));
    if (w == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory converting '%s'", t->name);
    if ((st = quant_dequantize(type, t->data, w, t->n_elements)) != SW_OK)
        return sw_error_prefix(st, "tensor '%s'", t->name);
    for (uint64_t i = 0; kind == TK_NORM && fam != HF_GEMMA4 && i < t->n_elements; i++)
        w[i] += 1.0f;
    return gguf_mem_add_tensor(b, gname, SW_TYPE_F32, 1, ne, w, file_offset);
}

/* GGUF file_type of the dominant matrix dtype: ALL_F32 0, MOSTLY_F16 1,
 * MOSTLY_BF16 32. */
static uint32_t file_type_of(const uint64_t bytes_by_type[3]) {
    if (bytes_by_type[2] >= bytes_by_type[1] && bytes_by_type[2] >= bytes_by_type[0])
        return 32;
    return bytes_by_type[1] >= bytes_by_type[0] ? 1 : 0;
}

static sw_status add_tensors(gguf_mem *b, const shard_set *s, const hf_config *c,
                             hf_model_info *info) {
    const char *prefix = c->multimodal ? text_prefix(s) : "model.";
    uint64_t bytes_by_type[3] = {0, 0, 0};
    bool has_head = false;
    char gname[160];
    for (uint32_t i = 0; i < s->n; i++) {
        const st_file *f = s->files[i];
        info->total_bytes += f->size;
        for (uint64_t k = 0; k < f->n_tensors; k++) {
            const st_tensor *t = &f->tensors[k];
            tensor_kind kind;
            if (!map_name(t->name, prefix, c, gname, sizeof gname, &kind)) {
                info->n_skipped++;
                continue;
            }
            sw_status st = add_tensor(b, f, t, gname, kind, c->family);
            if (st != SW_OK)
                return st;
            has_head |= !strcmp(gname, "output.weight");
            if (kind == TK_MATRIX || kind == TK_EXPERTS)
                bytes_by_type[t->dtype == ST_F32 ? 0 : t->dtype == ST_F16 ? 1 : 2] += t->n_bytes;
        }
    }
    if (!c->tie_embeddings && !has_head)
        return sw_errorf(SW_ERR_FORMAT, "config.json says tie_word_embeddings = false but "
                         "there is no lm_head.weight");
    return gguf_mem_set_u32(b, "general.file_type", file_type_of(bytes_by_type));
}

static sw_status set_name(gguf_mem *b, const char *dir) {
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    const char *base = dir + dl;
    while (base > dir && base[-1] != '/')
        base--;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(dir + dl - base), base);
    return gguf_mem_set_str(b, "general.name", name);
}

sw_status hf_model_open(const char *dir, gguf_file **out, hf_model_info *info) {
    char path[HF_PATH_BYTES];
    json_object *config = NULL;
    gguf_mem *b = NULL;
    shard_set *shards = NULL;
    sw_status st;
    *out = NULL;
    memset(info, 0, sizeof *info);
    if ((st = join(path, sizeof path, dir, "config.json")) != SW_OK)
        return st;
    if (!exists(path))
        return sw_errorf(SW_ERR_IO, "%s is a folder without config.json; pass a GGUF file or "
                         "a Hugging Face model folder", dir);
    if ((st = jsonu_parse_file(path, HF_MAX_CONFIG_BYTES, &config)) != SW_OK ||
        (st = gguf_mem_create(&b)) != SW_OK ||
        (st = hf_config_translate(config, path, b, &info->config)) != SW_OK)
        goto fail;
    shards = calloc(1, sizeof *shards);
    if (shards == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", dir);
        goto fail;
    }
    gguf_mem_on_close(b, shards_release, shards); /* from here b owns the shards */
    if ((st = open_shards(dir, shards)) != SW_OK ||
        (st = add_tensors(b, shards, &info->config, info)) != SW_OK ||
        (st = set_name(b, dir)) != SW_OK)
        goto fail;
    info->n_shards = shards->n;
    json_object_put(config);
    return gguf_mem_finish(b, info->total_bytes, out);
fail:
    if (b == NULL)
        shards_release(shards);
    gguf_mem_destroy(b);
    json_object_put(config);
    return st;
}
