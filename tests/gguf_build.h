/*
 * gguf_build.h — a tiny in-memory GGUF writer for tests and the fuzz corpus.
 *
 * Two layers. The raw layer appends exactly what it is told (gb_u32,
 * gb_str, gb_tensor_info, ...), so a test can write any malformed file byte
 * by byte. gb_sample() on top of it writes one complete valid file with
 * metadata of every value type, nested arrays and several tensor types, and
 * describes where its parts landed so tests can corrupt them precisely.
 *
 *   gb b; gb_init(&b);
 *   gb_header(&b, 3, 0, 1); gb_kv_u32(&b, "general.alignment", 64);
 *   ... gguf_open_memory(b.data, b.len, &f) ...; gb_free(&b);
 *
 * Allocation failure is sticky (b.failed) and checked once at the end.
 */
#ifndef SW_TESTS_GGUF_BUILD_H
#define SW_TESTS_GGUF_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gb {
    uint8_t *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data is incomplete */
} gb;

void gb_init(gb *b);
void gb_free(gb *b);

/* ---- raw layer: little-endian values appended at the end ---- */
void gb_raw(gb *b, const void *bytes, size_t n);
void gb_u8(gb *b, uint8_t v);
void gb_u16(gb *b, uint16_t v);
void gb_u32(gb *b, uint32_t v);
void gb_u64(gb *b, uint64_t v);
void gb_f32(gb *b, float v);
void gb_f64(gb *b, double v);
/* A GGUF string: u64 length then the bytes (no NUL). */
void gb_strn(gb *b, const void *s, uint64_t len);
void gb_str(gb *b, const char *s);
/* Zero bytes up to the next multiple of `alignment`. */
void gb_pad(gb *b, uint32_t alignment);
/* n bytes of a deterministic pattern that depends on `seed`. */
void gb_fill(gb *b, size_t n, uint8_t seed);
/* Overwrites 4 / 8 bytes at `at` (must lie inside the buffer). */
void gb_patch_u32(gb *b, size_t at, uint32_t v);
void gb_patch_u64(gb *b, size_t at, uint64_t v);

/* magic "GGUF", version, tensor count, metadata count. */
void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);

/* A key plus its value-type tag; the caller then writes the value. */
void gb_kv_begin(gb *b, const char *key, uint32_t vtype);
void gb_kv_u32(gb *b, const char *key, uint32_t v);
void gb_kv_str(gb *b, const char *key, const char *s);
/* Array header: element type and count; the caller writes the elements. */
void gb_array_begin(gb *b, uint32_t elem_type, uint64_t n);

/* One tensor info: name, n_dims, ne[0..n_dims), ggml type, data offset. */
void gb_tensor_info(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                    uint32_t type, uint64_t offset);

/* ---- a complete valid file ---- */

typedef struct gb_tensor {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
} gb_tensor;

/* Bytes of a tensor's data (0 when the shape does not fit the type). */
uint64_t gb_tensor_bytes(const gb_tensor *t);

/* Writes infos for n tensors with offsets packed at `alignment` (data in
 * file order), pads, and writes the data (gb_fill with seed = index). The
 * last tensor gets no trailing padding, so cutting the file anywhere short
 * of its end breaks it. Offsets go to offsets[i] when offsets != NULL. */
void gb_tensors(gb *b, const gb_tensor *t, size_t n, uint32_t alignment, uint64_t *offsets);

/* The tensors gb_sample() writes: every plain type plus Q8_0, Q4_K, Q6_K. */
extern const gb_tensor gb_sample_tensors[];
extern const size_t gb_sample_n_tensors;
#define GB_SAMPLE_N_KV 19

/* Where gb_sample() put things. */
typedef struct gb_layout {
    size_t kv_start;       /* first key/value pair */
    size_t tensor_info_start;
    size_t data_start;     /* aligned data section */
    uint64_t offsets[16];  /* data offsets of gb_sample_tensors */
} gb_layout;

/* Writes a valid file: GB_SAMPLE_N_KV keys covering every value type (one
 * of each scalar, a string, arrays of every scalar type, an array of
 * strings, nested arrays 3 deep, general.alignment when alignment != 32),
 * then gb_sample_tensors. version is 2 or 3. */
void gb_sample(gb *b, uint32_t version, uint32_t alignment, gb_layout *layout);

#endif
