/*
 * gguf.h — GGUF v2/v3 reader: header, metadata (every value type, nested
 * arrays), tensor infos, data section; memory-mapped and zero-copy.
 *
 * A GGUF file is untrusted input. gguf_open() validates everything once
 * (counts, lengths, dimensions, types, offsets, alignment, overlaps,
 * duplicate names, UTF-8 of keys/names/strings) against the file size and
 * against integer overflow; code past this border trusts the result.
 * Failures return SW_ERR_FORMAT with a message naming the problem and the
 * byte offset where it was found ("at offset 0x1f4: ...").
 *
 * Limits: little-endian files only (a big-endian file is detected and
 * rejected as unsupported); nesting of arrays is capped at GGUF_MAX_DEPTH.
 */
#ifndef SW_FORMAT_GGUF_H
#define SW_FORMAT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

#define GGUF_MAX_DEPTH 8
#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

/* Metadata value types as stored in the file. */
typedef enum gguf_vtype {
    GGUF_VT_U8 = 0, GGUF_VT_I8 = 1, GGUF_VT_U16 = 2, GGUF_VT_I16 = 3,
    GGUF_VT_U32 = 4, GGUF_VT_I32 = 5, GGUF_VT_F32 = 6, GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8, GGUF_VT_ARRAY = 9, GGUF_VT_U64 = 10, GGUF_VT_I64 = 11,
    GGUF_VT_F64 = 12, GGUF_VT_COUNT
} gguf_vtype;

/* A string inside the mapping: not NUL-terminated, valid UTF-8. */
typedef struct gguf_str {
    const char *ptr;
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;
struct gguf_value {
    uint32_t type;              /* gguf_vtype */
    union {
        uint64_t u;             /* U8/U16/U32/U64/BOOL (0 or 1) */
        int64_t i;              /* I8/I16/I32/I64 */
        double f;               /* F32/F64 */
        gguf_str s;             /* STRING */
        struct {
            uint32_t elem_type; /* gguf_vtype of the elements */
            uint64_t n;         /* element count */
            /* Scalar elements: raw little-endian bytes in the mapping,
             * n * gguf_vtype_size(elem_type) of them, possibly unaligned:
             * read them with gguf_array_*() below. NULL otherwise. */
            const uint8_t *raw;
            /* STRING or ARRAY elements: n parsed values. NULL otherwise. */
            gguf_value *items;
        } arr;
    };
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_value value;
    uint64_t file_offset;       /* where the key/value pair starts */
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;           /* NUL-terminated copy owned by the file */
    uint32_t n_dims;            /* 1..GGUF_MAX_DIMS */
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] contiguous; unused dims are 1 */
    uint32_t type;              /* ggml type id, known to quant/types.h */
    uint64_t offset;            /* relative to the data section */
    uint64_t n_elements;
    uint64_t n_bytes;
    const uint8_t *data;        /* map + data_offset + offset */
    uint64_t info_offset;       /* where its tensor info starts in the file */
} gguf_tensor;

typedef struct gguf_file {
    const uint8_t *map;         /* whole file, read-only */
    uint64_t size;              /* file size in bytes */
    uint32_t version;           /* 2 or 3 */
    uint64_t n_kv;
    gguf_kv *kv;                /* n_kv entries, file order */
    uint64_t n_tensors;
    gguf_tensor *tensors;       /* n_tensors entries, file order */
    uint32_t alignment;         /* general.alignment or 32 */
    uint64_t data_offset;       /* start of the data section */
    void *priv;                 /* reader-private state (mapping, arenas) */
} gguf_file;

/* Opens, maps and validates `path`. On success *out is owned by the caller
 * (gguf_close). Errors: SW_ERR_ARG, SW_ERR_IO (missing, not a regular file,
 * unreadable — message names the path), SW_ERR_FORMAT, SW_ERR_OOM_HOST. */
sw_status gguf_open(const char *path, gguf_file **out);

/* As gguf_open over a caller-owned buffer that must outlive the result
 * (used by tests and the fuzzer). Not copied. */
sw_status gguf_open_memory(const void *data, size_t size, gguf_file **out);

/* Frees and unmaps. Accepts NULL. */
void gguf_close(gguf_file *file);

/* Lookups; NULL when absent. Binary searches over name-sorted indexes
 * built at open (the parser needs them to reject duplicates anyway). */
const gguf_kv *gguf_find_kv(const gguf_file *file, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *file, const char *name);

/* Typed getters. Return SW_OK and set *out when the key exists and holds a
 * value convertible without loss (any integer type in range for _uint;
 * F32/F64 for _float; STRING for _str; BOOL for _bool). Return SW_ERR_ARG
 * when the key is absent (no message recorded) and SW_ERR_FORMAT with a
 * message naming the key when it has the wrong type or is out of range. */
sw_status gguf_get_uint(const gguf_file *file, const char *key, uint64_t *out);
sw_status gguf_get_float(const gguf_file *file, const char *key, double *out);
sw_status gguf_get_bool(const gguf_file *file, const char *key, bool *out);
sw_status gguf_get_str(const gguf_file *file, const char *key, gguf_str *out);
/* The array under `key` (any element type) into *out. */
sw_status gguf_get_array(const gguf_file *file, const char *key, const gguf_value **out);

/* Element i of a scalar array, converted (caller checks i < n and type). */
uint64_t gguf_array_uint(const gguf_value *arr, uint64_t i);
int64_t gguf_array_int(const gguf_value *arr, uint64_t i);
double gguf_array_float(const gguf_value *arr, uint64_t i);

/* Bytes of one scalar element of type t (0 for STRING/ARRAY/unknown). */
size_t gguf_vtype_size(uint32_t t);
/* "u32", "string", "array", ... ; "unknown" for bad ids. */
const char *gguf_vtype_name(uint32_t t);

#endif
