/*
 * types.h — the ggml tensor types Spillway knows: ids, names, block layout.
 *
 * Every type a GGUF file may declare is listed so `spillway info` can show
 * any file; `dequant_supported` says which ones the portable dequantizers
 * (quant/dequant.c) handle. A type id absent from the table is unknown and
 * the GGUF reader rejects the file.
 */
#ifndef SW_QUANT_TYPES_H
#define SW_QUANT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

/* ggml type ids as stored in GGUF tensor infos. */
enum {
    SW_TYPE_F32 = 0, SW_TYPE_F16 = 1, SW_TYPE_Q4_0 = 2, SW_TYPE_Q4_1 = 3,
    SW_TYPE_Q5_0 = 6, SW_TYPE_Q5_1 = 7, SW_TYPE_Q8_0 = 8, SW_TYPE_Q8_1 = 9,
    SW_TYPE_Q2_K = 10, SW_TYPE_Q3_K = 11, SW_TYPE_Q4_K = 12, SW_TYPE_Q5_K = 13,
    SW_TYPE_Q6_K = 14, SW_TYPE_Q8_K = 15, SW_TYPE_BF16 = 30,
    SW_TYPE_COUNT = 42 /* one past the largest id in the table */
};

typedef struct type_traits {
    const char *name;        /* "Q4_K"; NULL marks an id that is not a type */
    uint32_t block_elems;    /* elements per block (1 for plain types) */
    uint32_t block_bytes;    /* bytes per block */
    bool dequant_supported;  /* quant_dequantize() handles it */
} type_traits;

/* Traits of type `type`, or NULL if the id is unknown. */
const type_traits *type_get_traits(uint32_t type);

/* Name of `type`, or "unknown" — for messages. */
const char *type_name(uint32_t type);

/* The weight types whose decode-matmul rate doctor measures, in the order
 * of SW_DOCTOR_DECODE_TYPES (spillway.h): F16 BF16 Q8_0 Q4_0 Q5_0 Q4_K Q5_K
 * Q6_K. The planner divides a layer's bytes of each of these types by its
 * measured rate (the memory rate for the rest: norms, rarer types). */
uint32_t type_decode_type(int i);
/* Index of `type` in that list, or -1. */
int type_decode_index(uint32_t type);
/* Entry i's name in lower case ("q4_k"), for doctor's cache keys. */
const char *type_decode_key(int i);

/* Bytes of a row of `n_elems` elements of `type` into *out_bytes. Returns
 * false if the type is unknown, n_elems is not a whole number of blocks, or
 * the size overflows. */
bool type_row_bytes(uint32_t type, uint64_t n_elems, uint64_t *out_bytes);

#endif
