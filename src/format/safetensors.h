/*
 * safetensors.h — reader for the safetensors format (Hugging Face): an
 * 8-byte little-endian header length N, N bytes of JSON header, then the
 * data section. The header maps tensor names to {dtype, shape,
 * data_offsets: [begin, end)} relative to the data section, plus an
 * optional "__metadata__" object of string → string.
 *
 * A safetensors file is untrusted input. st_open() validates everything
 * once: header length against the file size (and a 100 MB cap), strict
 * UTF-8 and strict JSON (json_util.h), every entry's dtype, shape (rank <=
 * ST_MAX_DIMS, element count without overflow), offsets within the data
 * section with end - begin == elements * dtype size, no two tensors
 * overlapping, every data byte belonging to some tensor (no holes, as the
 * format requires), each tensor's data aligned to its element size. Names
 * are non-empty, at most ST_MAX_NAME_BYTES, free of control characters and
 * unique: duplicate keys (which json-c would silently merge) are found by
 * scanning the header text, as are \u0000 and unpaired surrogate escapes.
 * Stricter than the reference reader on purpose: misaligned data, entries
 * with keys besides dtype/shape/data_offsets, rank > 8, empty or control-
 * character names and dtypes outside st_dtype are refused. Failures are
 * SW_ERR_FORMAT with a message naming the file, the tensor and the
 * problem ("m.safetensors: tensor 'w': data_offsets [0, 6] span 6 bytes but
 * F32 shape [2] needs 8"); code past this border trusts the tensor table.
 *
 * Tensors are views into a read-only mapping of the whole file: nothing is
 * copied. Shapes are as stored: row-major, shape[0] the slowest dimension
 * (a GGUF ne[] is the reverse).
 *
 *   st_file *f;
 *   if (st_open("model.safetensors", &f) != SW_OK) return ...;  // sw_last_error()
 *   const st_tensor *t = st_find(f, "model.norm.weight");     // NULL if absent
 *   if (t && t->dtype == ST_BF16) use(t->data, t->n_elements);
 *   st_close(f);
 *
 * Thread-safety: an open st_file is immutable; any number of threads may
 * read it. Opening and closing touch nothing shared.
 */
#ifndef SW_FORMAT_SAFETENSORS_H
#define SW_FORMAT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER_BYTES ((uint64_t)100 << 20)
#define ST_MAX_NAME_BYTES 1024

/* Every dtype the format defines. Only F32, F16 and BF16 hold weights
 * Spillway can run; the others are read (so a file with, say, an I64
 * position buffer still opens) and refused when a model needs them. */
typedef enum st_dtype {
    ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8,
    ST_U16, ST_U32, ST_U64, ST_BOOL, ST_F8_E4M3, ST_F8_E5M2, ST_DTYPE_COUNT
} st_dtype;

typedef struct st_tensor {
    const char *name;           /* NUL-terminated UTF-8, owned by the file */
    st_dtype dtype;
    uint32_t n_dims;            /* 0..ST_MAX_DIMS (0: a scalar) */
    uint64_t shape[ST_MAX_DIMS];/* shape[0] slowest */
    uint64_t n_elements;
    uint64_t n_bytes;
    uint64_t offset;            /* from the start of the data section */
    const uint8_t *data;        /* in the mapping, aligned to the dtype size;
                                   valid until st_close */
} st_tensor;

typedef struct st_file {
    char *path;                 /* copy, for messages */
    const uint8_t *map;         /* whole file, read-only */
    uint64_t size;
    uint64_t data_offset;       /* 8 + header length */
    uint64_t n_tensors;
    st_tensor *tensors;         /* sorted by name */
    uint64_t n_meta;
    const char **meta_keys;     /* "__metadata__" entries, sorted by key */
    const char **meta_values;
    void *priv;
} st_file;

/* Opens, maps and validates `path`. Caller owns *out (st_close). Errors:
 * SW_ERR_ARG, SW_ERR_IO (missing, unreadable, not a regular file),
 * SW_ERR_FORMAT, SW_ERR_OOM_HOST. */
sw_status st_open(const char *path, st_file **out);

/* As st_open over a caller-owned buffer that must outlive the result
 * (tests, the fuzzer) and be 8-byte aligned (malloc's is), so that tensor
 * data is aligned. `name` (NULL: "<memory>") is used in messages. Errors:
 * SW_ERR_ARG (NULL out, NULL data with size > 0, misaligned data),
 * SW_ERR_FORMAT, SW_ERR_OOM_HOST. */
sw_status st_open_memory(const void *data, size_t size, const char *name, st_file **out);

/* Unmaps and frees. Accepts NULL. */
void st_close(st_file *f);

/* The tensor called `name`, NULL when absent (binary search); the pointer
 * lives until st_close. f->tensors is sorted by name (strcmp order). */
const st_tensor *st_find(const st_file *f, const char *name);

/* The __metadata__ value for `key`, NULL when absent (binary search);
 * the string lives until st_close. */
const char *st_meta(const st_file *f, const char *key);

/* "F32", "BF16", ...; "?" for bad values. Bytes per element (1 for BOOL
 * and the F8 types). */
const char *st_dtype_name(st_dtype t);
size_t st_dtype_size(st_dtype t);

#endif
