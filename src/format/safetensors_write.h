/*
 * safetensors_write.h — streaming safetensors writer: tensors are declared
 * (name, dtype, shape), the header goes out, then the data is streamed in
 * declaration order in chunks of any size.
 *
 *   st_writer *w; st_writer_create(&w);
 *   st_writer_add(w, "model.norm.weight", ST_BF16, 1, (uint64_t[]){2304});
 *   st_writer_write_header(w, sink);
 *   while (...) st_writer_write_data(w, sink, chunk, n);
 *   st_writer_finish(w); st_writer_destroy(w);
 *
 * The file is what the safetensors library writes: u64 header length, a
 * compact JSON header ({"__metadata__":{"format":"pt"}, then the tensors in
 * declaration order) padded with spaces to a multiple of 8, then the data
 * back to back with no holes (declare as safetensors.torch.save_file
 * sorts: wider dtypes first, so each tensor's data is aligned to its
 * elements, then by name). The header is serialized with
 * json-c. byte_sink is declared in byte_sink.h.
 */
#ifndef SW_FORMAT_SAFETENSORS_WRITE_H
#define SW_FORMAT_SAFETENSORS_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "format/gguf_write.h"
#include "format/safetensors.h"

typedef struct st_writer st_writer;

/* Errors: SW_ERR_OOM_HOST. */
sw_status st_writer_create(st_writer **out);
void st_writer_destroy(st_writer *w); /* accepts NULL */

/* Declares the next tensor; shape[0] is the slowest dimension. Errors:
 * SW_ERR_ARG (after the header, duplicate name, rank > ST_MAX_DIMS, a
 * dtype other than F32/F16/BF16/I64, size overflow), SW_ERR_OOM_HOST. */
sw_status st_writer_add(st_writer *w, const char *name, st_dtype dtype, uint32_t n_dims,
                        const uint64_t *shape);

/* Data bytes of tensor i; the whole file's size (valid once every tensor
 * is declared: it serializes the header to measure it). */
uint64_t st_writer_tensor_bytes(const st_writer *w, size_t i);
sw_status st_writer_file_bytes(st_writer *w, uint64_t *out);

/* Writes the length prefix and the header. No more tensors after it. */
sw_status st_writer_write_header(st_writer *w, const byte_sink *sink);

/* Appends n data bytes (tensors back to back in declaration order).
 * Errors: SW_ERR_ARG (more than declared), the sink's errors. */
sw_status st_writer_write_data(st_writer *w, const byte_sink *sink, const void *data,
                               size_t n);

/* Errors: SW_ERR_ARG when fewer bytes were written than declared. */
sw_status st_writer_finish(st_writer *w);

#endif
