/*
 * golden.h — reader for .swgold golden files (tests only).
 *
 * A .swgold file is a flat list of named arrays written by
 * tools/golden/make_forward_golden.py (writer: tools/golden/golden_format.py;
 * spec: tools/golden/README.md). All little-endian:
 *
 *   magic    8 bytes "SWGOLD\0\1"          (last byte = format version 1)
 *   u32      n_entries
 *   per entry:
 *     u32    name_len, then name_len bytes of UTF-8 (unique, non-empty)
 *     u32    dtype     GOLDEN_F32 0 | GOLDEN_I32 1 | GOLDEN_TEXT 2
 *     u32    n_dims    0..4 (text: exactly 1)
 *     u64    dims[n_dims]   outermost first (C order)
 *     data   product(dims)*4 bytes (0 dims = 1 element), text: dims[0] bytes
 *   nothing after the last entry.
 *
 * Example
 *   golden_file *g = NULL;
 *   if (golden_load(sw_test_data("golden/gemma3.swgold"), &g) != SW_OK) ...
 *   const golden_entry *e = golden_find(g, "p0.ids");   // i32 [T]
 *   const int32_t *ids = e->data;
 *   golden_free(g);
 *
 * Every length is checked against the file size before use; a malformed
 * file gives SW_ERR_FORMAT with a message (sw_last_error()) naming the entry
 * and byte offset. Entry data is copied to 8-byte-aligned memory, and text
 * data is followed by a NUL (not counted in n_bytes), so `(const char *)
 * e->data` is a C string. Big-endian hosts are not supported.
 */
#ifndef SW_TESTS_GOLDEN_H
#define SW_TESTS_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

#define GOLDEN_MAGIC "SWGOLD\0\1"
#define GOLDEN_MAX_DIMS 4

enum { GOLDEN_F32 = 0, GOLDEN_I32 = 1, GOLDEN_TEXT = 2 };

typedef struct golden_entry {
    const char *name;      /* NUL-terminated */
    uint32_t dtype;        /* GOLDEN_F32 / GOLDEN_I32 / GOLDEN_TEXT */
    uint32_t n_dims;       /* 0..4; unused dims are 1 */
    uint64_t dims[4];
    const void *data;      /* 8-byte aligned; text is NUL-terminated */
    uint64_t n_bytes;      /* product(dims)*4, or dims[0] for text */
} golden_entry;

typedef struct golden_file golden_file;

/* Reads and validates the file at `path`. On success *out owns everything;
 * free it with golden_free. Errors: SW_ERR_ARG, SW_ERR_IO, SW_ERR_FORMAT,
 * SW_ERR_OOM_HOST, SW_ERR_UNSUPPORTED (big-endian host). */
sw_status golden_load(const char *path, golden_file **out);

/* Same, from `n_bytes` bytes in memory (not retained: data is copied). */
sw_status golden_parse(const void *bytes, size_t n_bytes, golden_file **out);

/* Frees; accepts NULL. Entries and their data die with the file. */
void golden_free(golden_file *g);

/* The entry named `name`, or NULL. Borrowed from g. */
const golden_entry *golden_find(const golden_file *g, const char *name);

/* Entries in file order: golden_count(g) of them, index 0.. (borrowed). */
size_t golden_count(const golden_file *g);
const golden_entry *golden_at(const golden_file *g, size_t i);

/* Number of elements of a numeric entry (product of dims; 1 for 0 dims). */
uint64_t golden_elements(const golden_entry *e);

#endif
