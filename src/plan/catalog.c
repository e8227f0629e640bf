/*
 * catalog.c — official Gemma shapes (1 to 4) and the byte size of each
 * tensor in a given weight type (see catalog.h). Sizes follow llama-quantize's choices
 * (gemma-facts §4): a file quantized by another tool may differ, which is
 * why plans of real files use the file's own tensor table instead.
 *
 * Invariant: a layer's bytes are computed exactly as the engine packs a
 * layer (plan_padded() per matrix and per f32 norm vector), so a catalog
 * plan of gemma3-270m q4_k_m equals the plan of the real file.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/weights.h"
#include "plan/catalog.h"
#include "quant/types.h"
#include "util/error.h"

/* What Gemma 4 adds to an entry (gemma4-facts, "Text configs"); there
 * the entry's n_head_kv, n_embd_head and n_ff are the sliding layers' and
 * the non-shared layers'. */
typedef struct gemma4_shape {
    uint32_t period;               /* (sliding x period-1, full) repeated */
    uint32_t n_head_kv_full, head_dim_full;
    bool k_eq_v;                   /* full layers take values from the keys */
    uint32_t n_kv_shared;          /* the last layers read earlier caches */
    uint32_t n_ff_shared;          /* their MLP width (double-wide in E2B) */
    uint32_t n_pl;                 /* per-layer embedding width */
    uint32_t n_expert, n_expert_used, n_ff_exp;
} gemma4_shape;

typedef struct catalog_entry {
    const char *name;
    int family;                    /* 1, 2, 3 or 4 */
    uint32_t n_layer, n_embd, n_head, n_head_kv, n_embd_head, n_ff, n_vocab, n_ctx;
    uint32_t window;               /* 0: no sliding window */
    float rope_scale_global;       /* 1 / linear factor */
    float query_pre_attn;          /* q scale = 1/sqrt(this); 1 for Gemma 4 */
    const gemma4_shape *g4;        /* family 4 only */
} catalog_entry;

static const gemma4_shape g4_e2b = {5, 1, 512, false, 20, 12288, 256, 0, 0, 0};
static const gemma4_shape g4_e4b = {6, 2, 512, false, 18, 10240, 256, 0, 0, 0};
static const gemma4_shape g4_26b = {6, 2, 512, true, 0, 2112, 0, 128, 8, 704};
static const gemma4_shape g4_31b = {6, 4, 512, true, 0, 21504, 0, 0, 0, 0};

/* gemma-facts §2 and gemma4-facts. G3 and G4 vocab is the GGUF's 262144
 * rows. */
static const catalog_entry catalog[] = {
    {"gemma-2b", 1, 18, 2048, 8, 1, 256, 16384, 256000, 8192, 0, 1.0f, 256, NULL},
    {"gemma-7b", 1, 28, 3072, 16, 16, 256, 24576, 256000, 8192, 0, 1.0f, 256, NULL},
    {"gemma2-2b", 2, 26, 2304, 8, 4, 256, 9216, 256000, 8192, 4096, 1.0f, 256, NULL},
    {"gemma2-9b", 2, 42, 3584, 16, 8, 256, 14336, 256000, 8192, 4096, 1.0f, 256, NULL},
    {"gemma2-27b", 2, 46, 4608, 32, 16, 128, 36864, 256000, 8192, 4096, 1.0f, 144, NULL},
    {"gemma3-270m", 3, 18, 640, 4, 1, 256, 2048, 262144, 32768, 512, 1.0f, 256, NULL},
    {"gemma3-1b", 3, 26, 1152, 4, 1, 256, 6912, 262144, 32768, 512, 1.0f, 256, NULL},
    {"gemma3-4b", 3, 34, 2560, 8, 4, 256, 10240, 262144, 131072, 1024, 0.125f, 256, NULL},
    {"gemma3-12b", 3, 48, 3840, 16, 8, 256, 15360, 262144, 131072, 1024, 0.125f, 256, NULL},
    {"gemma3-27b", 3, 62, 5376, 32, 16, 128, 21504, 262144, 131072, 1024, 0.125f, 168, NULL},
    {"gemma4-e2b", 4, 35, 1536, 8, 1, 256, 6144, 262144, 131072, 512, 1.0f, 1, &g4_e2b},
    {"gemma4-e4b", 4, 42, 2560, 8, 2, 256, 10240, 262144, 131072, 512, 1.0f, 1, &g4_e4b},
    {"gemma4-26b-a4b", 4, 30, 2816, 16, 8, 256, 2112, 262144, 262144, 1024, 1.0f, 1, &g4_26b},
    {"gemma4-31b", 4, 60, 5376, 32, 16, 256, 21504, 262144, 262144, 1024, 1.0f, 1, &g4_31b},
};
#define N_CATALOG (sizeof catalog / sizeof catalog[0])

static const char *const type_names[] = {"f32", "f16", "bf16", "q8_0", "q4_k_m"};
#define N_TYPES (sizeof type_names / sizeof type_names[0])

size_t plan_catalog_count(void) { return N_CATALOG; }

const char *plan_catalog_name(size_t i) { return i < N_CATALOG ? catalog[i].name : NULL; }

void plan_catalog_list(char *buf, size_t cap) {
    size_t len = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < N_CATALOG && len < cap; i++) {
        int n = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", catalog[i].name);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

/* Lower-case `s` without '-', '_' and '.', so name spellings compare. */
static void squash(const char *s, char *out, size_t cap) {
    size_t n = 0;
    for (; *s && n + 1 < cap; s++)
        if (*s != '-' && *s != '_' && *s != '.')
            out[n++] = (char)tolower((unsigned char)*s);
    out[n] = '\0';
}

const char *plan_catalog_type(const char *type) {
    char want[32], have[32];
    if (type == NULL)
        return NULL;
    squash(type, want, sizeof want);
    for (size_t i = 0; i < N_TYPES; i++) {
        squash(type_names[i], have, sizeof have);
        if (!strcmp(want, have))
            return type_names[i];
    }
    return NULL;
}

static const catalog_entry *find_entry(const char *name) {
    char want[64], have[64];
    squash(name, want, sizeof want);
    for (size_t i = 0; i < N_CATALOG; i++) {
        squash(catalog[i].name, have, sizeof have);
        if (!strcmp(want, have))
            return &catalog[i];
    }
    return NULL;
}

static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Gemma 4's layers: sliding ones at the entry's head shape, full ones at
 * the wider head and their own KV heads (and keys as values), the MLP
 * width of the KV-shared layers, and the sharing itself. */
static sw_status gemma4_layers(const catalog_entry *e, model_config *c) {
    const gemma4_shape *g = e->g4;
    c->n_head_kv = max_u32(e->n_head_kv, g->n_head_kv_full);
    c->n_embd_head = max_u32(e->n_embd_head, g->head_dim_full);
    c->n_ff = max_u32(e->n_ff, g->n_ff_shared);
    c->swa_pattern = g->period;
    c->qk_norm = c->v_norm = c->layer_scale = true;
    c->final_softcap = 30.0f;
    c->rope_base_global = 1000000.0f;
    c->rope_pairs_global = g->head_dim_full / 8; /* proportional RoPE turns 25% of a head */
    c->n_embd_per_layer = g->n_pl;
    c->n_expert = g->n_expert;
    c->n_expert_used = g->n_expert_used;
    c->n_ff_exp = g->n_ff_exp;
    for (uint32_t il = 0; il < c->n_layer; il++) {
        model_layer_shape *l = &c->layer[il];
        const bool local = model_layer_is_local(c, il);
        l->n_head_kv = local ? e->n_head_kv : g->n_head_kv_full;
        l->head_dim = local ? e->n_embd_head : g->head_dim_full;
        l->k_eq_v = !local && g->k_eq_v;
        l->n_ff = il >= c->n_layer - g->n_kv_shared ? g->n_ff_shared : e->n_ff;
    }
    sw_status st = model_config_share_kv(c, g->n_kv_shared);
    return st != SW_OK ? st : model_config_check_layers(c);
}

static sw_status entry_config(const catalog_entry *e, model_config *c) {
    memset(c, 0, sizeof *c);
    static const char *const arch[] = {"gemma", "gemma2", "gemma3", "gemma4"};
    snprintf(c->arch, sizeof c->arch, "%s", arch[e->family - 1]);
    c->n_layer = e->n_layer;
    c->n_embd = e->n_embd;
    c->n_ff = e->n_ff;
    c->n_head = e->n_head;
    c->n_head_kv = e->n_head_kv;
    c->n_embd_head = e->n_embd_head;
    c->n_vocab = e->n_vocab;
    c->n_ctx_train = e->n_ctx;
    c->norm_eps = 1e-6f;
    c->embd_scale = sqrtf((float)e->n_embd);
    c->query_scale = 1.0f / sqrtf(e->query_pre_attn);
    c->attn_softcap = e->family == 2 ? 50.0f : 0.0f;
    c->final_softcap = e->family == 2 ? 30.0f : 0.0f;
    c->sliding_window = e->window;
    c->swa_pattern = e->family == 2 ? 2 : e->family == 3 ? 6 : 0;
    c->rope_base_global = e->family == 3 ? 1000000.0f : 10000.0f;
    c->rope_scale_global = e->rope_scale_global;
    c->rope_base_local = 10000.0f;
    c->rope_scale_local = 1.0f;
    c->qk_norm = e->family == 3;
    c->post_norms = e->family != 1;
    return e->g4 != NULL ? gemma4_layers(e, c) : SW_OK;
}

/* llama.cpp's use_more_bits(i, n): the layers whose attn_v and ffn_down
 * Q4_K_M bumps to Q6_K. */
static bool use_more_bits(uint32_t i, uint32_t n) {
    return i < n / 8 || i >= 7 * n / 8 || (i >= n / 8 && (i - n / 8) % 3 == 2);
}

/* The type llama-quantize falls back to when a row of ne0 elements is not
 * a whole number of 256-element K-quant blocks. */
static uint32_t k_fallback(uint32_t type, uint64_t ne0) {
    if (ne0 % 256 == 0)
        return type;
    uint32_t fb = type == SW_TYPE_Q6_K ? SW_TYPE_Q8_0
                : type == SW_TYPE_Q5_K ? SW_TYPE_Q5_1 : SW_TYPE_Q5_0;
    return ne0 % 32 == 0 ? fb : SW_TYPE_F16;
}

/* The stored type of a matrix in role `role` (BW_COUNT: the token
 * embedding) of layer il under
 * weight type `type`, as llama-quantize chooses it (it never quantizes
 * the router, ffn_gate_inp). */
static uint32_t matrix_type(const char *type, block_weight role, uint32_t il, uint32_t n_layer,
                            uint64_t ne0) {
    if (!strcmp(type, "f32") || role == BW_ROUTER)
        return SW_TYPE_F32;
    if (!strcmp(type, "f16"))
        return SW_TYPE_F16;
    if (!strcmp(type, "bf16"))
        return SW_TYPE_BF16;
    if (!strcmp(type, "q8_0"))
        return ne0 % 32 == 0 ? SW_TYPE_Q8_0 : SW_TYPE_F16;
    uint32_t t = SW_TYPE_Q4_K; /* q4_k_m */
    if (role == BW_COUNT)
        t = SW_TYPE_Q6_K;
    else if ((role == BW_V || role == BW_DOWN || role == BW_DOWN_EXPS) &&
             use_more_bits(il, n_layer))
        t = SW_TYPE_Q6_K;
    return k_fallback(t, ne0);
}

/* Bytes of a (rows, ne0) matrix of `type`. */
static uint64_t matrix_bytes(uint32_t type, uint64_t ne0, uint64_t rows) {
    uint64_t row = 0;
    if (!type_row_bytes(type, ne0, &row))
        return 0; /* unreachable for the types chosen above */
    return row * rows;
}

/* One layer as packed, from the layer table of model/weights.h; by_type
 * gets the bytes of each decode type (quant/types.h), *experts the part
 * that is experts. */
static uint64_t layer_bytes(const model_config *c, const char *type, uint32_t il,
                            uint64_t *by_type, uint64_t *experts) {
    size_t n = 0;
    const layer_tensor *table = model_layer_tensors(&n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const layer_tensor *t = &table[i];
        if (!model_has_tensor(c, il, t))
            continue;
        uint64_t ne0 = model_dim_value(c, il, t->ne0);
        if (t->is_norm) {
            total += plan_padded(ne0 * 4);
            continue;
        }
        uint32_t mt = matrix_type(type, t->role, il, c->n_layer, ne0);
        uint64_t b = plan_padded(matrix_bytes(mt, ne0, model_tensor_elems(c, il, t) / ne0));
        total += b;
        *experts += model_is_expert(t->role) ? b : 0;
        if (type_decode_index(mt) >= 0)
            by_type[type_decode_index(mt)] += b;
    }
    return total;
}

sw_status plan_model_for_type(const model_config *c, const char *type, plan_model *out) {
    const char *t = plan_catalog_type(type);
    if (c == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_model_for_type: NULL argument");
    if (t == NULL)
        return sw_errorf(SW_ERR_ARG, "unknown weight type '%s' (f32, f16, bf16, q8_0, q4_k_m)",
                         type ? type : "(null)");
    if (c->n_layer == 0 || c->n_layer > PLAN_MAX_LAYERS)
        return sw_errorf(SW_ERR_ARG, "%u layers is outside 1..%u", c->n_layer, PLAN_MAX_LAYERS);
    memset(out, 0, sizeof *out);
    out->config = *c;
    for (uint32_t il = 0; il < c->n_layer; il++)
        out->layer_bytes[il] = layer_bytes(c, t, il, out->layer_type_bytes[il],
                                           &out->layer_expert_bytes[il]);
    uint32_t et = matrix_type(t, BW_COUNT, 0, c->n_layer, c->n_embd);
    out->embd_bytes = plan_padded(matrix_bytes(et, c->n_embd, c->n_vocab));
    out->output_bytes = out->embd_bytes;
    if (type_decode_index(et) >= 0)
        out->output_type_bytes[type_decode_index(et)] = out->output_bytes;
    out->tied = true;
    out->output_norm_bytes = plan_padded((uint64_t)c->n_embd * 4);
    if (c->n_embd_per_layer) {
        const uint64_t pl = (uint64_t)c->n_layer * c->n_embd_per_layer;
        /* llama-quantize's Q4_K_M keeps this table in Q5_K: E4B's is 1.94 GB
         * of the 4.96 GB file (gemma4-facts), 10752 x 262144 x 5.5 bits */
        const uint32_t tt = !strcmp(t, "q4_k_m") ? k_fallback(SW_TYPE_Q5_K, pl)
                                                 : matrix_type(t, BW_COUNT, 0, c->n_layer, pl);
        const uint32_t pt = matrix_type(t, BW_Q, 0, c->n_layer, c->n_embd);
        out->ple_bytes = plan_padded(matrix_bytes(tt, pl, c->n_vocab));
        out->ple_proj_bytes = plan_padded(matrix_bytes(pt, c->n_embd, pl)) +
                              plan_padded((uint64_t)c->n_embd_per_layer * 4);
    }
    char upper[16];
    size_t i = 0;
    for (; t[i] && i + 1 < sizeof upper; i++)
        upper[i] = (char)toupper((unsigned char)t[i]);
    upper[i] = '\0';
    snprintf(out->weight_type, sizeof out->weight_type, "%s", upper);
    return SW_OK;
}

sw_status plan_model_from_catalog(const char *name, const char *type, plan_model *out) {
    char list[256];
    if (name == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_model_from_catalog: NULL argument");
    const catalog_entry *e = find_entry(name);
    if (e == NULL) {
        plan_catalog_list(list, sizeof list);
        return sw_errorf(SW_ERR_ARG, "'%s' is neither a model file nor a catalog model (%s)",
                         name, list);
    }
    model_config c;
    sw_status st = entry_config(e, &c);
    if (st != SW_OK)
        return sw_error_prefix(st, "catalog model '%s'", e->name);
    st = plan_model_for_type(&c, type ? type : PLAN_CATALOG_DEFAULT_TYPE, out);
    if (st != SW_OK)
        return st;
    snprintf(out->name, sizeof out->name, "%s", e->name);
    return SW_OK;
}

uint64_t plan_model_total_bytes(const plan_model *m) {
    uint64_t total = m->embd_bytes + m->output_norm_bytes + (m->tied ? 0 : m->output_bytes) +
                     m->ple_bytes + m->ple_proj_bytes;
    for (uint32_t il = 0; il < m->config.n_layer && il < PLAN_MAX_LAYERS; il++)
        total += m->layer_bytes[il];
    return total;
}
