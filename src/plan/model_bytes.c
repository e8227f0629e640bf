/*
 * model_bytes.c — a plan_model from an opened model: its config and its
 * bound weights. Layer sizes are counted exactly as the engine packs a
 * layer into one device buffer (engine/pack.h): each matrix and each f32
 * norm vector padded to PLAN_TENSOR_ALIGN; absent optional norms take no
 * space. The planner and the engine therefore agree to the byte.
 */
#include <stdio.h>
#include <string.h>

#include "model/weights.h"
#include "plan/plan_api.h"
#include "util/error.h"

static uint64_t layer_bytes(const model_config *c, const layer_weights *w) {
    const tensor_view *mats[] = {&w->wq, &w->wk, &w->wv, &w->wo,
                                 &w->w_gate, &w->w_up, &w->w_down};
    const float *norms[] = {w->attn_norm, w->q_norm, w->k_norm, w->post_attn_norm,
                            w->ffn_norm, w->post_ffw_norm};
    const uint64_t norm_len[] = {c->n_embd, c->n_embd_head, c->n_embd_head,
                                 c->n_embd, c->n_embd, c->n_embd};
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        total += plan_padded(mats[i]->n_bytes);
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++)
        if (norms[i] != NULL)
            total += plan_padded(norm_len[i] * sizeof(float));
    return total;
}

sw_status plan_model_from_weights(const model_config *c, const struct model_weights *w,
                                  const char *name, const char *weight_type,
                                  uint64_t file_bytes, plan_model *out) {
    if (c == NULL || w == NULL || out == NULL || w->layers == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_model_from_weights: NULL argument");
    if (c->n_layer == 0 || c->n_layer > PLAN_MAX_LAYERS)
        return sw_errorf(SW_ERR_ARG, "%u layers is outside the planner's 1..%u", c->n_layer,
                         PLAN_MAX_LAYERS);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "model");
    snprintf(out->weight_type, sizeof out->weight_type, "%s", weight_type ? weight_type : "?");
    out->config = *c;
    for (uint32_t il = 0; il < c->n_layer; il++)
        out->layer_bytes[il] = layer_bytes(c, &w->layers[il]);
    out->embd_bytes = plan_padded(w->tok_embd.n_bytes);
    out->tied = w->output.data == NULL || w->output.data == w->tok_embd.data;
    out->output_bytes = out->tied ? out->embd_bytes : plan_padded(w->output.n_bytes);
    out->output_norm_bytes = plan_padded((uint64_t)c->n_embd * sizeof(float));
    out->file_bytes = file_bytes;
    return SW_OK;
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
