/*
 * gguf_write.h — streaming GGUF v3 writer: metadata and tensor infos are
 * collected in memory (kilobytes to a few MiB: the vocabulary arrays are
 * the largest part), then the header goes out in one piece and the tensor
 * data is streamed through in file order, in chunks of any size, so a
 * 50 GB file is written with a few MiB of memory.
 *
 *   gguf_writer *w; gguf_writer_create(&w);
 *   gguf_writer_kv_str(w, "general.architecture", "gemma2");
 *   gguf_writer_add_tensor(w, "token_embd.weight", 2, ne, SW_TYPE_BF16);
 *   gguf_writer_write_header(w, sink);
 *   while (...) gguf_writer_write_data(w, sink, chunk, n);   // in add order
 *   gguf_writer_finish(w, sink); gguf_writer_destroy(w);
 *
 * Layout is what gguf-py writes: keys in the order added, tensor data
 * offsets aligned to 32 bytes, zero padding after every tensor. Counts and
 * lengths are u64 as the GGUF v3 spec says. Bytes go to a byte_sink, a
 * write callback (format/byte_sink.h) that src/format/safetensors_write.h
 * and the JSON writer share.
 */
#ifndef SW_FORMAT_GGUF_WRITE_H
#define SW_FORMAT_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/byte_sink.h"
#include "spillway.h"

typedef struct gguf_writer gguf_writer;

/* A writer with no keys and no tensors. Errors: SW_ERR_OOM_HOST. */
sw_status gguf_writer_create(gguf_writer **out);
void gguf_writer_destroy(gguf_writer *w); /* accepts NULL */

/* Metadata, appended in call order; keys must be unique (SW_ERR_ARG
 * otherwise), UTF-8 strings are the caller's responsibility. Errors also:
 * SW_ERR_OOM_HOST; SW_ERR_ARG after write_header. */
sw_status gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v);
sw_status gguf_writer_kv_f32(gguf_writer *w, const char *key, float v);
sw_status gguf_writer_kv_bool(gguf_writer *w, const char *key, bool v);
sw_status gguf_writer_kv_str(gguf_writer *w, const char *key, const char *s);

/* An array key of n elements of elem_type (GGUF_VT_STRING, _F32, _I32,
 * _BOOL):
 * begin, then exactly n calls of the matching push. The next kv/tensor
 * call fails with SW_ERR_ARG if fewer or more elements were pushed. */
sw_status gguf_writer_array_begin(gguf_writer *w, const char *key, uint32_t elem_type,
                                  uint64_t n);
sw_status gguf_writer_array_str(gguf_writer *w, const char *s, size_t len);
sw_status gguf_writer_array_f32(gguf_writer *w, float v);
sw_status gguf_writer_array_i32(gguf_writer *w, int32_t v);
sw_status gguf_writer_array_bool(gguf_writer *w, bool v);

/* Declares the next tensor: ne[0] is the contiguous dimension (GGUF order),
 * type a ggml type id. Errors: SW_ERR_ARG (duplicate name, bad shape, a
 * row length that is not a whole number of the type's blocks). */
sw_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t n_dims,
                                 const uint64_t *ne, uint32_t type);

/* Bytes of tensor i's data (its n_bytes), and the whole file's size once
 * all tensors are declared (header + data + padding). */
uint64_t gguf_writer_tensor_bytes(const gguf_writer *w, size_t i);
uint64_t gguf_writer_file_bytes(const gguf_writer *w);

/* Writes magic, counts, metadata, tensor infos and the padding up to the
 * data section. After it, no more keys or tensors. */
sw_status gguf_writer_write_header(gguf_writer *w, const byte_sink *sink);

/* Appends n bytes of tensor data: the tensors' bytes back to back in the
 * order declared, split anywhere; padding is inserted between tensors.
 * Errors: SW_ERR_ARG (more bytes than declared), the sink's errors. */
sw_status gguf_writer_write_data(gguf_writer *w, const byte_sink *sink, const void *data,
                                 size_t n);

/* Checks every declared byte was written and writes the final padding.
 * Errors: SW_ERR_ARG naming the first incomplete tensor. */
sw_status gguf_writer_finish(gguf_writer *w, const byte_sink *sink);

#endif
