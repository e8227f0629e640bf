/*
 * gguf_build.c — the in-memory GGUF writer behind gguf_build.h.
 *
 * Written from the layout in the GGUF spec (ggml docs/gguf.md), not from the
 * reader, so the tests compare two independent readings of the format.
 * Block sizes come from quant/types.h, the same table the reader uses.
 */
#include "gguf_build.h"

#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "quant/types.h"

void gb_init(gb *b) { memset(b, 0, sizeof *b); }

void gb_free(gb *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static bool gb_reserve(gb *b, size_t extra) {
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *grown = realloc(b->data, cap);
    if (grown == NULL) {
        b->failed = true;
        return false;
    }
    b->data = grown;
    b->cap = cap;
    return true;
}

void gb_raw(gb *b, const void *bytes, size_t n) {
    if (n == 0 || !gb_reserve(b, n))
        return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

static void gb_le(gb *b, uint64_t v, size_t n) {
    uint8_t bytes[8];
    for (size_t k = 0; k < n; k++)
        bytes[k] = (uint8_t)(v >> (8 * k));
    gb_raw(b, bytes, n);
}

void gb_u8(gb *b, uint8_t v) { gb_le(b, v, 1); }
void gb_u16(gb *b, uint16_t v) { gb_le(b, v, 2); }
void gb_u32(gb *b, uint32_t v) { gb_le(b, v, 4); }
void gb_u64(gb *b, uint64_t v) { gb_le(b, v, 8); }

void gb_f32(gb *b, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    gb_u32(b, bits);
}

void gb_f64(gb *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    gb_u64(b, bits);
}

void gb_strn(gb *b, const void *s, uint64_t len) {
    gb_u64(b, len);
    gb_raw(b, s, (size_t)len);
}

void gb_str(gb *b, const char *s) { gb_strn(b, s, strlen(s)); }

void gb_pad(gb *b, uint32_t alignment) {
    while (b->len % alignment != 0 && !b->failed)
        gb_u8(b, 0);
}

void gb_fill(gb *b, size_t n, uint8_t seed) {
    if (!gb_reserve(b, n))
        return;
    for (size_t i = 0; i < n; i++)
        b->data[b->len + i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
    b->len += n;
}

void gb_patch_u32(gb *b, size_t at, uint32_t v) {
    for (size_t k = 0; k < 4 && at + k < b->len; k++)
        b->data[at + k] = (uint8_t)(v >> (8 * k));
}

void gb_patch_u64(gb *b, size_t at, uint64_t v) {
    for (size_t k = 0; k < 8 && at + k < b->len; k++)
        b->data[at + k] = (uint8_t)(v >> (8 * k));
}

void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_raw(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

void gb_kv_begin(gb *b, const char *key, uint32_t vtype) {
    gb_str(b, key);
    gb_u32(b, vtype);
}

void gb_kv_u32(gb *b, const char *key, uint32_t v) {
    gb_kv_begin(b, key, GGUF_VT_U32);
    gb_u32(b, v);
}

void gb_kv_str(gb *b, const char *key, const char *s) {
    gb_kv_begin(b, key, GGUF_VT_STRING);
    gb_str(b, s);
}

void gb_array_begin(gb *b, uint32_t elem_type, uint64_t n) {
    gb_u32(b, elem_type);
    gb_u64(b, n);
}

void gb_tensor_info(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                    uint32_t type, uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        gb_u64(b, ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

uint64_t gb_tensor_bytes(const gb_tensor *t) {
    uint64_t row_bytes, n_rows = 1;
    if (!type_row_bytes(t->type, t->ne[0], &row_bytes))
        return 0;
    for (uint32_t d = 1; d < t->n_dims; d++)
        n_rows *= t->ne[d];
    return row_bytes * n_rows;
}

static uint64_t align_up(uint64_t x, uint32_t alignment) {
    return (x + alignment - 1) / alignment * alignment;
}

void gb_tensors(gb *b, const gb_tensor *t, size_t n, uint32_t alignment, uint64_t *offsets) {
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        offset = align_up(offset, alignment);
        gb_tensor_info(b, t[i].name, t[i].n_dims, t[i].ne, t[i].type, offset);
        if (offsets != NULL)
            offsets[i] = offset;
        offset += gb_tensor_bytes(&t[i]);
    }
    gb_pad(b, alignment);
    size_t data_start = b->len;
    offset = 0;
    for (size_t i = 0; i < n; i++) {
        offset = align_up(offset, alignment);
        while (b->len < data_start + offset && !b->failed)
            gb_u8(b, 0);
        gb_fill(b, (size_t)gb_tensor_bytes(&t[i]), (uint8_t)i);
        offset += gb_tensor_bytes(&t[i]);
    }
}

/* ---- the sample file --------------------------------------------------------- */

const gb_tensor gb_sample_tensors[] = {
    {"output_norm.weight", SW_TYPE_F32, 1, {64, 1, 1, 1}},
    {"token_embd.weight", SW_TYPE_Q8_0, 2, {64, 8, 1, 1}},
    {"blk.0.attn_q.weight", SW_TYPE_Q4_K, 2, {256, 2, 1, 1}},
    {"blk.0.ffn_down.weight", SW_TYPE_Q6_K, 3, {256, 1, 2, 1}},
    {"f16.weight", SW_TYPE_F16, 2, {3, 5, 1, 1}},
    {"bf16.weight", SW_TYPE_BF16, 1, {7, 1, 1, 1}},
    {"i8.4d", 24 /* I8 */, 4, {2, 3, 2, 2}},
    {"f64.x", 28 /* F64 */, 1, {3, 1, 1, 1}},
    {"\xc3\xbcn\xc3\xaf.weight", SW_TYPE_F32, 1, {1, 1, 1, 1}},
};
const size_t gb_sample_n_tensors = sizeof gb_sample_tensors / sizeof gb_sample_tensors[0];

static void sample_scalars(gb *b) {
    gb_kv_begin(b, "test.u8", GGUF_VT_U8), gb_u8(b, 200);
    gb_kv_begin(b, "test.i8", GGUF_VT_I8), gb_u8(b, (uint8_t)0x9C); /* -100 */
    gb_kv_begin(b, "test.u16", GGUF_VT_U16), gb_u16(b, 60000);
    gb_kv_begin(b, "test.i16", GGUF_VT_I16), gb_u16(b, 0x8AD0); /* -30000 */
    gb_kv_u32(b, "test.u32", 4000000000u);
    gb_kv_begin(b, "test.i32", GGUF_VT_I32), gb_u32(b, 0x88CA6C00u); /* -2000000000 */
    gb_kv_begin(b, "test.f32", GGUF_VT_F32), gb_f32(b, 1.5f);
    gb_kv_begin(b, "test.bool", GGUF_VT_BOOL), gb_u8(b, 1);
    gb_kv_begin(b, "test.u64", GGUF_VT_U64), gb_u64(b, UINT64_C(0x8000000000000005));
    gb_kv_begin(b, "test.i64", GGUF_VT_I64), gb_u64(b, UINT64_C(0x8000000000000007));
    gb_kv_begin(b, "test.f64", GGUF_VT_F64), gb_f64(b, -2.25e300);
}

/* test.arr_every: one 3-element array per scalar type, element k = k + 1
 * (true for bools), so each decoder is exercised through an array. */
static void sample_array_every(gb *b) {
    static const uint32_t types[] = {GGUF_VT_U8, GGUF_VT_I8, GGUF_VT_U16, GGUF_VT_I16,
                                     GGUF_VT_U32, GGUF_VT_I32, GGUF_VT_F32, GGUF_VT_BOOL,
                                     GGUF_VT_U64, GGUF_VT_I64, GGUF_VT_F64};
    gb_kv_begin(b, "test.arr_every", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_ARRAY, 11);
    for (size_t t = 0; t < 11; t++) {
        gb_array_begin(b, types[t], 3);
        for (uint64_t k = 1; k <= 3; k++) {
            if (types[t] == GGUF_VT_F32)
                gb_f32(b, (float)k);
            else if (types[t] == GGUF_VT_F64)
                gb_f64(b, (double)k);
            else if (types[t] == GGUF_VT_BOOL)
                gb_u8(b, 1);
            else
                gb_le(b, k, gguf_vtype_size(types[t]));
        }
    }
}

/* test.nested: [[[1, 2], [3]], [[]]] of u32, three levels deep. */
static void sample_nested(gb *b) {
    gb_kv_begin(b, "test.nested", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_ARRAY, 2);
    gb_array_begin(b, GGUF_VT_ARRAY, 2);
    gb_array_begin(b, GGUF_VT_U32, 2), gb_u32(b, 1), gb_u32(b, 2);
    gb_array_begin(b, GGUF_VT_U32, 1), gb_u32(b, 3);
    gb_array_begin(b, GGUF_VT_ARRAY, 1);
    gb_array_begin(b, GGUF_VT_U32, 0);
}

static void sample_kvs(gb *b, uint32_t alignment) {
    gb_kv_str(b, "general.architecture", "gemma3");
    gb_kv_str(b, "general.name", "tiny \xc3\xbcn\xc3\xaf" "code \xe2\x9c\x93");
    sample_scalars(b);
    gb_kv_str(b, "test.empty_str", "");
    gb_kv_begin(b, "test.arr_i32", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_I32, 4);
    gb_u32(b, 0xFFFFFFFFu), gb_u32(b, 0), gb_u32(b, 0x7FFFFFFFu), gb_u32(b, 0x80000000u);
    sample_array_every(b);
    gb_kv_begin(b, "test.arr_str", GGUF_VT_ARRAY);
    gb_array_begin(b, GGUF_VT_STRING, 3);
    gb_str(b, "a"), gb_str(b, ""), gb_str(b, "\xc3\xbc\xe2\x9c\x93");
    sample_nested(b);
    if (alignment != 0) {
        gb_kv_u32(b, "general.alignment", alignment);
    } else {
        gb_kv_begin(b, "test.empty_arr", GGUF_VT_ARRAY);
        gb_array_begin(b, GGUF_VT_U8, 0);
    }
}

void gb_sample(gb *b, uint32_t version, uint32_t alignment, gb_layout *layout) {
    gb_layout local;
    if (layout == NULL)
        layout = &local;
    memset(layout, 0, sizeof *layout);
    gb_header(b, version, gb_sample_n_tensors, GB_SAMPLE_N_KV);
    layout->kv_start = b->len;
    sample_kvs(b, alignment);
    layout->tensor_info_start = b->len;
    uint32_t a = alignment ? alignment : GGUF_DEFAULT_ALIGNMENT;
    gb_tensors(b, gb_sample_tensors, gb_sample_n_tensors, a, layout->offsets);
    /* Where gb_tensors padded to: the end of the infos, aligned. */
    size_t infos_end = layout->tensor_info_start;
    for (size_t i = 0; i < gb_sample_n_tensors; i++)
        infos_end += 8 + strlen(gb_sample_tensors[i].name) + 4 +
                     8 * gb_sample_tensors[i].n_dims + 4 + 8;
    layout->data_start = (size_t)align_up(infos_end, a);
}
