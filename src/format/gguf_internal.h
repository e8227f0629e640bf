/*
 * gguf_internal.h — what gguf.c (open, mapping, lookups, getters) and
 * gguf_parse.c (the validating parser) share; not part of any interface.
 *
 * Memory: every variable-sized thing the parser builds (array items, tensor
 * name copies) comes from one chunked arena owned by gguf_priv, so a failed
 * parse or gguf_close() frees everything in one walk.
 */
#ifndef SW_FORMAT_GGUF_INTERNAL_H
#define SW_FORMAT_GGUF_INTERNAL_H

#include <stddef.h>

#include "format/gguf.h"

typedef struct gguf_chunk gguf_chunk;

typedef struct gguf_priv {
    void *mapping;               /* mmap'd file, NULL for gguf_open_memory */
    size_t mapping_bytes;
    gguf_chunk *chunks;          /* arena: newest first */
    const gguf_kv **kv_by_key;   /* n_kv entries sorted by key */
    const gguf_tensor **tensor_by_name; /* n_tensors entries sorted by name */
    /* Descriptions built in memory (gguf_mem.c) borrow tensor data from
     * other mappings; release(release_ctx) frees those at gguf_close(). */
    void (*release)(void *ctx);
    void *release_ctx;
} gguf_priv;

/* Allocates n * elem_bytes zeroed, max_align_t-aligned bytes from the
 * file's arena; they live until gguf_close(). NULL when out of memory or
 * when the product overflows. */
void *gguf_arena_alloc(gguf_priv *priv, uint64_t n, size_t elem_bytes);

/* Decodes one little-endian scalar of type t (not STRING/ARRAY) at b into
 * v->u / v->i / v->f and sets v->type. b holds gguf_vtype_size(t) bytes. */
void gguf_decode_scalar(uint32_t t, const uint8_t *b, gguf_value *v);

/* Parses and validates file->map[0..size) into *file (whose map, size and
 * priv are set). On failure returns SW_ERR_FORMAT or SW_ERR_OOM_HOST with a
 * message; whatever was allocated is left in file/priv for gguf_close(). */
sw_status gguf_parse(gguf_file *file);

/* Orders keys / tensor names like the sorted indexes (bytewise). */
int gguf_key_cmp(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
