/*
 * safetensors_build.h — a tiny in-memory safetensors writer for tests and
 * the fuzz seed corpus (tests/fuzz/make_corpus_safetensors.c).
 *
 * Two layers. sb_file() writes whatever header text it is given (padded
 * with spaces to a multiple of 8, as the safetensors library does) followed
 * by n data bytes, so a test can write any malformed header; sb_raw/sb_u64
 * write bytes exactly (a lying length field). sb_tensors() on top writes a
 * complete valid file from a list of tensors, laid out back to back in list
 * order, with a deterministic data pattern (sb_pattern).
 *
 *   sb b; sb_init(&b);
 *   sb_file(&b, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
 *   ... st_open_memory(b.data, b.len, "w.safetensors", &f) ...; sb_free(&b);
 *
 * Allocation failure is sticky (b.failed) and checked once at the end.
 */
#ifndef SW_TESTS_SAFETENSORS_BUILD_H
#define SW_TESTS_SAFETENSORS_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sb {
    uint8_t *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data is incomplete */
} sb;

void sb_init(sb *b);
void sb_free(sb *b);

/* ---- raw layer ---- */
void sb_raw(sb *b, const void *bytes, size_t n);
void sb_u64(sb *b, uint64_t v); /* little-endian */
/* n bytes of sb_pattern(0..n). */
void sb_fill(sb *b, size_t n);
/* Byte i of every data section the builder writes. */
uint8_t sb_pattern(uint64_t i);

/* Length, the header text padded with spaces to a multiple of 8, then
 * n_data pattern bytes. */
void sb_file(sb *b, const char *json, uint64_t n_data);

/* ---- valid files ---- */
typedef struct sb_tensor {
    const char *name;   /* written as is between quotes: may hold escapes */
    const char *dtype;  /* "F32", ... */
    uint32_t n_dims;
    uint64_t shape[8];
    uint32_t elem_bytes;
} sb_tensor;

/* A complete file: "__metadata__" (when meta_json, an object's text, is
 * not NULL) then the tensors in list order, back to back from offset 0. */
void sb_tensors(sb *b, const sb_tensor *t, size_t n, const char *meta_json);

#endif
