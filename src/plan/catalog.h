/*
 * catalog.h — the official Gemma text-model shapes (Gemma 1 to 4), so
 * `spillway plan -m gemma3-27b` can plan a model that is not on disk.
 *
 * Dimensions are gemma-facts §2; tensor bytes follow llama.cpp's type rules
 * (§4), including the Q4_K_M mix: Q6_K for attn_v/ffn_down on the
 * use_more_bits layers, Q6_K (or Q8_0) token embedding, and the fallbacks
 * for rows that are not a multiple of 256. Estimates, not files: a real
 * file's own tensor table always wins (plan_model_from_weights).
 */
#ifndef SW_PLAN_CATALOG_H
#define SW_PLAN_CATALOG_H

#include <stddef.h>

#include "plan/plan.h"

/* Weight type used when a catalog model is named without one: the type of
 * the default model and of most GGUF downloads. */
#define PLAN_CATALOG_DEFAULT_TYPE "q4_k_m"

/* Fills *out for catalog model `name` (case-insensitive; '-', '_' and '.'
 * are ignored, so "gemma-3-27b" and "Gemma3_27B" both name gemma3-27b) in
 * weight type `type` ("f32", "f16", "bf16", "q8_0", "q4_k_m"; NULL: the
 * default above). Errors: SW_ERR_ARG naming the known models or types. */
sw_status plan_model_from_catalog(const char *name, const char *type, plan_model *out);

/* Byte sizes of a model with config `c` stored as `type` (rules above);
 * name and file_bytes are left for the caller. Errors: SW_ERR_ARG. */
sw_status plan_model_for_type(const model_config *c, const char *type, plan_model *out);

/* Catalog entries in order of size within each family. */
size_t plan_catalog_count(void);
const char *plan_catalog_name(size_t i);          /* NULL past the end */

/* Writes "gemma-2b, gemma-7b, ..." (for messages). */
void plan_catalog_list(char *buf, size_t cap);

/* Canonical lower-case type name for `type` ("q4_k_m"), or NULL. */
const char *plan_catalog_type(const char *type);

/* Total weight bytes of a plan_model (layers + embedding + LM head when
 * untied + final norm + per-layer embeddings): what the file holds,
 * padded. */
uint64_t plan_model_total_bytes(const plan_model *m);

#endif
