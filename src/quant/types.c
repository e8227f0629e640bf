/*
 * types.c — the table behind types.h. Block sizes are ggml's (they match
 * the gguf Python package's GGML_QUANT_SIZES); ids 4, 5 and 31-33, 36-38
 * were retired by ggml and are not types.
 */
#include "quant/types.h"

static const type_traits table[SW_TYPE_COUNT] = {
    [0] = {"F32", 1, 4, true},        [1] = {"F16", 1, 2, true},
    [2] = {"Q4_0", 32, 18, true},     [3] = {"Q4_1", 32, 20, true},
    [6] = {"Q5_0", 32, 22, true},     [7] = {"Q5_1", 32, 24, true},
    [8] = {"Q8_0", 32, 34, true},     [9] = {"Q8_1", 32, 40, false},
    [10] = {"Q2_K", 256, 84, true},   [11] = {"Q3_K", 256, 110, true},
    [12] = {"Q4_K", 256, 144, true},  [13] = {"Q5_K", 256, 176, true},
    [14] = {"Q6_K", 256, 210, true},  [15] = {"Q8_K", 256, 292, true},
    [16] = {"IQ2_XXS", 256, 66, false}, [17] = {"IQ2_XS", 256, 74, false},
    [18] = {"IQ3_XXS", 256, 98, false}, [19] = {"IQ1_S", 256, 50, false},
    [20] = {"IQ4_NL", 32, 18, false}, [21] = {"IQ3_S", 256, 110, false},
    [22] = {"IQ2_S", 256, 82, false}, [23] = {"IQ4_XS", 256, 136, false},
    [24] = {"I8", 1, 1, false},       [25] = {"I16", 1, 2, false},
    [26] = {"I32", 1, 4, false},      [27] = {"I64", 1, 8, false},
    [28] = {"F64", 1, 8, false},      [29] = {"IQ1_M", 256, 56, false},
    [30] = {"BF16", 1, 2, true},      [34] = {"TQ1_0", 256, 54, false},
    [35] = {"TQ2_0", 256, 66, false}, [39] = {"MXFP4", 32, 17, false},
    [40] = {"NVFP4", 64, 36, false},  [41] = {"Q1_0", 128, 18, false},
};

const type_traits *type_get_traits(uint32_t type) {
    if (type >= SW_TYPE_COUNT || table[type].name == NULL)
        return NULL;
    return &table[type];
}

const char *type_name(uint32_t type) {
    const type_traits *t = type_get_traits(type);
    return t ? t->name : "unknown";
}

bool type_row_bytes(uint32_t type, uint64_t n_elems, uint64_t *out_bytes) {
    const type_traits *t = type_get_traits(type);
    if (t == NULL || n_elems % t->block_elems != 0)
        return false;
    uint64_t n_blocks = n_elems / t->block_elems;
    if (n_blocks > UINT64_MAX / t->block_bytes)
        return false;
    *out_bytes = n_blocks * t->block_bytes;
    return true;
}

static const uint32_t decode_types[] = {SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q8_0, SW_TYPE_Q4_0,
                                        SW_TYPE_Q5_0, SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K};
_Static_assert(sizeof decode_types / sizeof decode_types[0] == SW_DOCTOR_DECODE_TYPES,
               "the decode type list and SW_DOCTOR_DECODE_TYPES disagree");

uint32_t type_decode_type(int i) {
    return i >= 0 && i < SW_DOCTOR_DECODE_TYPES ? decode_types[i] : SW_TYPE_COUNT;
}

const char *type_decode_key(int i) {
    static const char *const keys[] = {"f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_k", "q5_k",
                                       "q6_k"};
    return i >= 0 && i < SW_DOCTOR_DECODE_TYPES ? keys[i] : "?";
}

int type_decode_index(uint32_t type) {
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        if (decode_types[i] == type)
            return i;
    return -1;
}
