/*
 * model_bytes.c — a plan_model from an opened model: its config and its
 * bound weights. Layer sizes are counted exactly as the engine packs a
 * layer into one device buffer (engine/pack.h), from the one layer table
 * of model/weights.h: each matrix and each f32 norm vector padded to
 * PLAN_TENSOR_ALIGN; absent optional norms take no space. The planner
 * and the engine therefore agree to the byte. With
 * --weights, every matrix is priced as quant_convert_type() leaves it, the
 * same rule the engine converts by, and the converted parts are recorded
 * (they live in host memory the engine allocates, not in the mapping).
 * The --weights conversions are one table here (plan_convert: flag, shown
 * name, target type); the flag is parsed once and the plan carries the value.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "model/weights.h"
#include "plan/plan_api.h"
#include "quant/quantize.h"
#include "quant/types.h"
#include "util/error.h"

#define AS_STORED SW_TYPE_COUNT

/* A matrix as the engine holds it: padded bytes after converting to
 * `convert` (AS_STORED: none); counted in m's converted/kept tallies, in
 * *conv when it is converted, and in by_type[i] when its type is decode
 * type i (quant/types.h). */
static uint64_t matrix_bytes(const tensor_view *v, uint32_t convert, plan_model *m,
                             uint64_t *conv, uint64_t *by_type) {
    uint32_t t = v->type;
    uint64_t bytes = plan_padded(v->n_bytes), row = 0;
    if (convert != AS_STORED) {
        uint32_t ct = quant_convert_type(v->type, v->ne[0], convert);
        if (ct == v->type || !type_row_bytes(ct, v->ne[0], &row)) {
            m->n_kept++;
        } else {
            m->n_converted++;
            t = ct;
            bytes = plan_padded(row * v->ne[1] * (v->n_dims > 2 ? v->ne[2] : 1));
            *conv += bytes;
        }
    }
    int i = type_decode_index(t);
    if (i >= 0)
        by_type[i] += bytes;
    return bytes;
}

/* One layer as packed (engine/pack.c), from the layer table. */
static uint64_t layer_bytes(const model_config *c, uint32_t il, const layer_weights *w,
                            uint32_t convert, plan_model *m, uint64_t *conv, uint64_t *by_type) {
    size_t n = 0;
    const layer_tensor *table = model_layer_tensors(&n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!model_has_tensor(c, il, &table[i]))
            continue;
        if (table[i].is_norm) {
            total += plan_padded(model_dim_value(c, il, table[i].ne0) * sizeof(float));
            continue;
        }
        const uint64_t b = matrix_bytes(&w->t[table[i].role], convert, m, conv, by_type);
        total += b;
        if (model_is_expert(table[i].role))
            m->layer_expert_bytes[il] += b;
    }
    return total;
}

static void describe(const model_config *c, const struct model_weights *w, uint32_t convert,
                     plan_model *out) {
    uint64_t embd_types[SW_DOCTOR_DECODE_TYPES] = {0};
    for (uint32_t il = 0; il < c->n_layer; il++)
        out->layer_bytes[il] = layer_bytes(c, il, &w->layers[il], convert, out,
                                           &out->layer_conv_bytes[il],
                                           out->layer_type_bytes[il]);
    out->embd_bytes = matrix_bytes(&w->tok_embd, convert, out, &out->embd_conv_bytes,
                                   embd_types);
    out->tied = w->output.data == NULL || w->output.data == w->tok_embd.data;
    out->output_bytes = out->tied ? out->embd_bytes
                                  : matrix_bytes(&w->output, convert, out,
                                                 &out->output_conv_bytes,
                                                 out->output_type_bytes);
    if (out->tied)
        memcpy(out->output_type_bytes, embd_types, sizeof embd_types);
    out->output_norm_bytes = plan_padded((uint64_t)c->n_embd * sizeof(float));
    if (c->n_embd_per_layer) { /* looked up and projected as stored */
        out->ple_bytes = plan_padded(w->ple_embd.n_bytes);
        out->ple_proj_bytes = plan_padded(w->ple_proj.n_bytes) +
                              plan_padded((uint64_t)c->n_embd_per_layer * sizeof(float));
    }
}

/* The --weights conversions, indexed by plan_convert: the one table of
 * their names and of what each asks quant_convert_type() for. */
static const struct {
    const char *flag;   /* as --weights takes it (case-insensitive) */
    const char *name;   /* as plans show it */
    uint32_t type;      /* quant_convert_type()'s `want` */
} converts[PLAN_CONVERT_COUNT] = {
    [PLAN_CONVERT_NONE] = {NULL, "", AS_STORED},
    [PLAN_CONVERT_BF16] = {"bf16", "BF16", SW_TYPE_BF16},
    [PLAN_CONVERT_F16] = {"f16", "F16", SW_TYPE_F16},
    [PLAN_CONVERT_Q8_0] = {"q8_0", "Q8_0", SW_TYPE_Q8_0},
    [PLAN_CONVERT_BF16_DEQUANT] = {"bf16-dequant", "BF16-DEQUANT",
                                   SW_TYPE_BF16 | QUANT_DEQUANT},
};

static bool convert_valid(plan_convert c) { return (unsigned)c < PLAN_CONVERT_COUNT; }

const char *plan_convert_name(plan_convert c) { return convert_valid(c) ? converts[c].name : "?"; }

const char *plan_convert_flag(plan_convert c) { return convert_valid(c) ? converts[c].flag : "?"; }

uint32_t plan_convert_tensor_type(plan_convert c) {
    return convert_valid(c) ? converts[c].type : AS_STORED;
}

sw_status plan_model_converted(const model_config *c, const struct model_weights *w,
                               const char *name, const char *weight_type, uint64_t file_bytes,
                               plan_convert convert, plan_model *out) {
    if (c == NULL || w == NULL || out == NULL || w->layers == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_model_from_weights: NULL argument");
    if (c->n_layer == 0 || c->n_layer > PLAN_MAX_LAYERS)
        return sw_errorf(SW_ERR_ARG, "%u layers is outside the planner's 1..%u", c->n_layer,
                         PLAN_MAX_LAYERS);
    if (!convert_valid(convert))
        return sw_errorf(SW_ERR_ARG, "internal: weights conversion %d is not a plan_convert",
                         (int)convert);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "model");
    snprintf(out->weight_type, sizeof out->weight_type, "%s", weight_type ? weight_type : "?");
    out->config = *c;
    out->file_bytes = file_bytes;
    describe(c, w, AS_STORED, out);
    out->stored_bytes = plan_model_total_bytes(out);
    if (convert != PLAN_CONVERT_NONE) {
        out->convert = convert;
        describe(c, w, converts[convert].type, out);
    }
    return SW_OK;
}

sw_status plan_model_from_weights(const model_config *c, const struct model_weights *w,
                                  const char *name, const char *weight_type,
                                  uint64_t file_bytes, plan_model *out) {
    return plan_model_converted(c, w, name, weight_type, file_bytes, PLAN_CONVERT_NONE, out);
}

sw_status plan_parse_weights(const char *s, plan_convert *out) {
    char low[16];
    size_t n = 0;
    *out = PLAN_CONVERT_NONE;
    if (s == NULL)
        return SW_OK;
    for (; s[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)s[n]);
    low[n] = '\0';
    for (int i = PLAN_CONVERT_NONE + 1; s[n] == '\0' && i < PLAN_CONVERT_COUNT; i++)
        if (!strcmp(low, converts[i].flag)) {
            *out = (plan_convert)i;
            return SW_OK;
        }
    return sw_errorf(SW_ERR_ARG, "--weights '%s': a model file converts at load to bf16, f16 "
                     "or q8_0 (float and f32 matrices), or bf16-dequant (every matrix, "
                     "quantized ones dequantized)", s);
}

const char *plan_file_type_name(uint32_t ft) {
    static const struct { uint32_t id; const char *name; } names[] = {
        {0, "F32"}, {1, "F16"}, {2, "Q4_0"}, {3, "Q4_1"}, {7, "Q8_0"}, {8, "Q5_0"},
        {9, "Q5_1"}, {10, "Q2_K"}, {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"},
        {14, "Q4_K_S"}, {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"},
        {32, "BF16"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].id == ft)
            return names[i].name;
    return "?";
}

bool plan_model_same(const plan_model *a, const plan_model *b) {
    const model_config *x = &a->config, *y = &b->config;
    if (x->n_layer != y->n_layer || x->n_embd != y->n_embd || x->n_ff != y->n_ff ||
        x->n_head != y->n_head || x->n_head_kv != y->n_head_kv ||
        x->n_embd_head != y->n_embd_head || x->n_vocab != y->n_vocab ||
        x->sliding_window != y->sliding_window || x->swa_pattern != y->swa_pattern ||
        x->qk_norm != y->qk_norm || x->post_norms != y->post_norms)
        return false;
    return strcmp(a->name, b->name) == 0 && a->convert == b->convert &&
           a->file_bytes == b->file_bytes && a->embd_bytes == b->embd_bytes &&
           a->output_bytes == b->output_bytes && a->tied == b->tied &&
           memcmp(a->layer_bytes, b->layer_bytes, x->n_layer * sizeof a->layer_bytes[0]) == 0;
}
