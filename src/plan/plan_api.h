/*
 * plan_api.h — everything around plan_build(): the inputs it needs (model
 * descriptions, rates, budgets, pins, sizes) and its outputs' printers.
 *
 * Pure helpers (sizes, pins, catalog, printing) do no I/O besides writing
 * to the FILE they are given; the two that read the machine are marked
 * "reads" (plan_rates_load_cache, plan_host_available) and belong to the
 * CLI/engine layer, never to plan_build.
 */
#ifndef SW_PLAN_PLAN_API_H
#define SW_PLAN_PLAN_API_H

#include <stdio.h>

#include "plan/catalog.h"
#include "plan/plan.h"

struct model_weights;

/* ---- model descriptions ------------------------------------------------ */

/* Describes an opened model: layer_bytes[il] = the layer's matrices each
 * plan_padded(n_bytes) plus its norm vectors each plan_padded(n * 4) (the
 * engine's packing, engine/pack.h); embd_bytes = plan_padded(token
 * embedding); output_bytes likewise, == embd_bytes when tied. `name` is
 * shown in plans (the file name), `weight_type` too ("Q4_K_M").
 * Errors: SW_ERR_ARG (NULL argument, too many layers). */
sw_status plan_model_from_weights(const model_config *c, const struct model_weights *w,
                                  const char *name, const char *weight_type,
                                  uint64_t file_bytes, plan_model *out);

/* As plan_model_from_weights, with every matrix priced as converting it
 * at load by `convert` (quant_convert_type() of plan_convert_tensor_type()
 * says which matrices change) leaves it: layer_bytes, embd_bytes and
 * output_bytes are the converted sizes; convert, layer_conv_bytes,
 * embd_conv_bytes, output_conv_bytes, stored_bytes, n_converted and
 * n_kept say what changed. PLAN_CONVERT_NONE: as stored.
 * Errors: SW_ERR_ARG (as above, or a value outside plan_convert). */
sw_status plan_model_converted(const model_config *c, const struct model_weights *w,
                               const char *name, const char *weight_type, uint64_t file_bytes,
                               plan_convert convert, plan_model *out);

/* The plan_model of an opened file, sized exactly as the engine packs it,
 * with its matrices converted by `convert` as the engine converts them at
 * load. Errors: as model_weights_bind, SW_ERR_ARG. */
sw_status plan_describe_file(const sw_model *model, plan_convert convert, plan_model *out);

/* Whether two descriptions are of the same model to the byte (what the
 * engine checks before executing a plan). */
bool plan_model_same(const plan_model *a, const plan_model *b);

/* The plan inside a public handle (NULL for NULL), and a new handle
 * holding a copy of p. Errors: SW_ERR_OOM_HOST. */
const plan *plan_of(const sw_plan *sp);
sw_status plan_copy(const plan *p, sw_plan **out);

/* Parses a --weights value for a model file, case-insensitively: "bf16",
 * "f16", "q8_0" or "bf16-dequant"; NULL gives PLAN_CONVERT_NONE. The one
 * place these names are read. Errors: SW_ERR_ARG naming the choices. */
sw_status plan_parse_weights(const char *s, plan_convert *out);

/* A conversion's names: as plans show it ("BF16-DEQUANT"; "" for NONE),
 * and as the --weights flag takes it ("bf16-dequant"; NULL for NONE).
 * Static strings; out-of-range values name themselves "?". */
const char *plan_convert_name(plan_convert c);
const char *plan_convert_flag(plan_convert c);

/* The target handed to quant_convert_type(): SW_TYPE_BF16, _F16, _Q8_0,
 * or SW_TYPE_BF16 | QUANT_DEQUANT; SW_TYPE_COUNT for NONE (and for values
 * outside plan_convert). */
uint32_t plan_convert_tensor_type(plan_convert c);

/* "Q4_K_M", "BF16", ... for GGUF general.file_type; "?" when unknown. */
const char *plan_file_type_name(uint32_t file_type);

/* ---- rates --------------------------------------------------------------- */

/* Conservative stated defaults (measured == false):
 *   h2d pinned 20 GB/s, pageable 8 GB/s (PCIe 4.0 x16, achieved not peak);
 *   host memory 20 GB/s (what host matvec kernels stream, not DRAM peak);
 *   device memory 1 TB/s; disk 1 GB/s (NVMe);
 *   host 1e11 flop/s; device 2e13 flop/s. */
void plan_rates_default(plan_rates *out);

/* Rates for the simulated device: it computes with the host's kernels in
 * host memory, so its memory and flop rates are the host's, and its link
 * is the sim's cap (sim_link_Bps; 0 = uncapped memcpy, taken as the host
 * memory rate). Use the same in the engine and in `spillway plan` so both
 * plan the sim alike. */
void plan_rates_for_sim(plan_rates *r, double sim_link_Bps);

/* Reads doctor's measurements from ${XDG_CACHE_HOME:-~/.cache}/spillway/
 * doctor.json: a flat JSON object with number values under the keys
 * h2d_pinned_Bps, h2d_pageable_Bps, host_mem_Bps, device_mem_Bps,
 * disk_read_Bps, host_flops, device_flops (unknown keys are ignored; a
 * missing or non-positive key keeps its default). On success *out is
 * complete and measured == true. Reads a file.
 * Errors: SW_ERR_IO (no cache: *out holds the defaults), SW_ERR_FORMAT. */
sw_status plan_rates_load_cache(plan_rates *out);

/* Parses the flat object above from text (what load_cache does after
 * reading the file). Errors: SW_ERR_FORMAT naming the offset. */
sw_status plan_rates_parse(const char *json, size_t len, plan_rates *out);

/* Host memory the plan may use: MemAvailable from /proc/meminfo, capped by
 * host_mem_bytes when non-zero. Falls back to sysconf's available pages,
 * then to host_mem_bytes, then to 8 GiB. Reads /proc. */
uint64_t plan_host_available(uint64_t host_mem_bytes);

/* ---- sizes and pins ------------------------------------------------------ */

/* Parses a size. Units: none or B = bytes; K M G T and KiB MiB GiB TiB are
 * binary (1024-based, as llama.cpp users expect "8G" to mean GiB); KB MB GB
 * TB are decimal; case-insensitive. Decimals allowed ("1.5G", at most 6
 * fraction digits; the result is rounded down to whole bytes). "80%" is
 * 80 percent of `whole` (0 < p <= 100; needs whole > 0).
 * Errors: SW_ERR_ARG for empty or junk text, a zero result, overflow. */
sw_status plan_parse_size(const char *s, uint64_t whole, uint64_t *out);

/* Writes a size for people: "12.0 GiB", "340.2 MiB", "17.0 KiB", "12 B". */
void plan_format_size(uint64_t bytes, char *buf, size_t cap);

/* Parses --place: sets every pin to PLACE_AUTO, then applies the items in
 * order (later items override earlier ones):
 *   SPEC  := ITEM (',' ITEM)*
 *   ITEM  := LAYERS '=' PLACE | 'lm_head' '=' ('resident' | 'device' | 'host')
 *   LAYERS:= N | N '-' M | N '-' (to the last) | 'all', or 'experts:' LAYERS
 *            (a layer's experts: host or auto)
 *   PLACE := resident | device | streamed | stream | host | cpu | auto
 *            | devN (a split's device N, 0-7: pins->device; see split.h)
 * e.g. "0-11=resident,12-20=streamed,21-=host,lm_head=host".
 * Errors: SW_ERR_ARG naming the item (bad syntax, layer >= n_layer). */
sw_status plan_parse_place(const char *spec, uint32_t n_layer, plan_pins *pins);

/* -ngl N: the first min(N, n_layer) layers RESIDENT where still AUTO (pins
 * from --place win); the rest stay AUTO for the planner. */
void plan_pins_apply_ngl(plan_pins *pins, uint32_t n_layer, uint32_t ngl);

/* -ncmoe N: the experts of the first min(N, n_layer) layers on the host
 * where still AUTO (llama.cpp's --n-cpu-moe). */
void plan_pins_apply_ncmoe(plan_pins *pins, uint32_t n_layer, uint32_t n);

/* ---- printing ------------------------------------------------------------ */

/* The plan for a person: header, tier table (budget / planned / holds),
 * layer ranges by placement, predictions with the bottleneck, a "better"
 * line when a cheaper change would speed up, and why each choice was made. */
void plan_print_table(FILE *out, const plan *p);

/* The plan as JSON, one object, fields in a fixed order, every buffer with
 * its size and purpose, totals per tier, predictions; integers exact. */
void plan_print_json(FILE *out, const plan *p);

/* Names for messages and output. */
const char *plan_place_name(plan_place place);  /* "resident", "streamed", ... */
const char *plan_tier_name(plan_tier tier);     /* "device", "pinned", ... */
const char *plan_kv_type_name(plan_kv_type t);  /* "f32", "f16", "bf16" */

/* The tensor type KV rows are stored as: SW_TYPE_F32, _F16 or _BF16. */
uint32_t plan_kv_tensor_type(plan_kv_type t);

/* Parses "f32" | "f16" | "bf16". Errors: SW_ERR_ARG. */
sw_status plan_parse_kv_type(const char *s, plan_kv_type *out);

#endif
