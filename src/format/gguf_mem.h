/*
 * gguf_mem.h — a model description built in memory rather than read from
 * a GGUF file: the same gguf_file (metadata keys, named tensors) that the
 * rest of Spillway reads, so other containers feed one model description.
 *
 * The Hugging Face reader (model/hf_model.c) translates config.json into
 * the GGUF keys llama.cpp's converter would write and safetensors tensors
 * into GGUF names, then finishes a gguf_file whose tensor data point into
 * the safetensors mappings (or into memory this builder owns).
 *
 *   gguf_mem *b;  gguf_mem_create(&b);
 *   gguf_mem_set_str(b, "general.architecture", "gemma2");
 *   gguf_mem_add_tensor(b, "token_embd.weight", SW_TYPE_BF16, 2, ne, data, off);
 *   gguf_mem_on_close(b, release_shards, shards);  // frees borrowed mappings
 *   gguf_mem_finish(b, total_bytes, &file);         // b is consumed
 *
 * Keys and tensor names are copied; tensor data are borrowed. Duplicate
 * keys or tensor names are refused at finish (SW_ERR_FORMAT).
 */
#ifndef SW_FORMAT_GGUF_MEM_H
#define SW_FORMAT_GGUF_MEM_H

#include <stdint.h>

#include "format/gguf.h"

typedef struct gguf_mem gguf_mem;

/* Errors: SW_ERR_OOM_HOST. */
sw_status gguf_mem_create(gguf_mem **out);

/* Discards an unfinished description (and runs its release hook). Accepts
 * NULL. */
void gguf_mem_destroy(gguf_mem *b);

/* Metadata values (U32, F32, STRING, BOOL). Errors: SW_ERR_OOM_HOST. */
sw_status gguf_mem_set_u32(gguf_mem *b, const char *key, uint32_t v);
sw_status gguf_mem_set_f32(gguf_mem *b, const char *key, float v);
sw_status gguf_mem_set_str(gguf_mem *b, const char *key, const char *v);
sw_status gguf_mem_set_bool(gguf_mem *b, const char *key, bool v);
/* Arrays of n I32 values, or of n (at most 1024) bools. Errors:
 * SW_ERR_OOM_HOST, SW_ERR_ARG. */
sw_status gguf_mem_set_arr_i32(gguf_mem *b, const char *key, const int32_t *v, uint64_t n);
sw_status gguf_mem_set_arr_bool(gguf_mem *b, const char *key, const bool *v, uint64_t n);

/* A tensor of `type` with GGUF dimension order ne[0..n_dims) (ne[0]
 * contiguous) at `data`, which must stay valid until gguf_close() of the
 * finished file. file_offset is reported by info (where the bytes lie in
 * their own file). Errors: SW_ERR_ARG (unknown type, bad shape),
 * SW_ERR_OOM_HOST. */
sw_status gguf_mem_add_tensor(gguf_mem *b, const char *name, uint32_t type,
                              uint32_t n_dims, const uint64_t *ne, const void *data,
                              uint64_t file_offset);

/* n zeroed bytes owned by the description (freed at gguf_close), e.g. for
 * tensors converted while translating. NULL when out of memory. */
void *gguf_mem_alloc(gguf_mem *b, uint64_t n_bytes);

/* release(ctx) runs once when the description is closed or destroyed. */
void gguf_mem_on_close(gguf_mem *b, void (*release)(void *ctx), void *ctx);

/* Builds the lookup indexes and hands the description over as *out (close
 * it with gguf_close). `size_bytes` is reported as the file size. b is
 * consumed whatever the result. Errors: SW_ERR_FORMAT (duplicate key or
 * tensor name: message names it), SW_ERR_OOM_HOST. */
sw_status gguf_mem_finish(gguf_mem *b, uint64_t size_bytes, gguf_file **out);

#endif
