/*
 * fuzz_gguf.c — libFuzzer harness for the GGUF reader.
 *
 * Opens the input with gguf_open_memory(); when it is accepted, walks every
 * key, value, array element and tensor, calls every getter and lookup, and
 * checks the invariants the rest of Spillway relies on (lookups find what
 * the tables hold, tensor data lies inside the input). A broken invariant
 * traps so the fuzzer reports it. Built as fuzz_gguf with -fsanitize=fuzzer
 * (tools/fuzz.sh) and as fuzz_gguf_replay (fuzz_replay.c) for CTest.
 */
#include <stdint.h>
#include <string.h>

#include "format/gguf.h"

#include "fuzz_common.h"

static volatile uint64_t sink;

static void walk_value(const gguf_file *f, const gguf_value *v) {
    if (v->type == GGUF_VT_STRING) {
        FUZZ_REQUIRE((const uint8_t *)v->s.ptr >= f->map &&
                     v->s.len <= f->size - (uint64_t)((const uint8_t *)v->s.ptr - f->map));
        if (v->s.len > 0)
            sink += (uint8_t)v->s.ptr[0] + (uint8_t)v->s.ptr[v->s.len - 1];
        return;
    }
    if (v->type != GGUF_VT_ARRAY)
        return;
    if (v->arr.raw != NULL) {
        for (uint64_t i = 0; i < v->arr.n; i++)
            sink += gguf_array_uint(v, i) + (uint64_t)gguf_array_int(v, i) +
                    (uint64_t)(gguf_array_float(v, i) != 0.0);
        return;
    }
    FUZZ_REQUIRE(v->arr.n == 0 || v->arr.items != NULL);
    for (uint64_t i = 0; i < v->arr.n; i++) {
        FUZZ_REQUIRE(v->arr.items[i].type == v->arr.elem_type);
        walk_value(f, &v->arr.items[i]);
    }
}

static void walk_kv(const gguf_file *f, const gguf_kv *kv) {
    char key[256];
    uint64_t u;
    double d;
    bool b;
    gguf_str s;
    const gguf_value *a;
    walk_value(f, &kv->value);
    if (kv->key.len >= sizeof key)
        return;
    memcpy(key, kv->key.ptr, (size_t)kv->key.len);
    key[kv->key.len] = '\0';
    FUZZ_REQUIRE(gguf_find_kv(f, key) == kv);
    sink += (uint64_t)gguf_get_uint(f, key, &u) + (uint64_t)gguf_get_float(f, key, &d) +
            (uint64_t)gguf_get_bool(f, key, &b) + (uint64_t)gguf_get_str(f, key, &s) +
            (uint64_t)gguf_get_array(f, key, &a);
}

static void walk_tensor(const gguf_file *f, const gguf_tensor *t) {
    FUZZ_REQUIRE(gguf_find_tensor(f, t->name) == t);
    FUZZ_REQUIRE(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS && t->n_bytes > 0);
    FUZZ_REQUIRE(t->offset % f->alignment == 0);
    FUZZ_REQUIRE(t->data >= f->map + f->data_offset &&
                 t->n_bytes <= f->size - (uint64_t)(t->data - f->map));
    sink += t->data[0] + t->data[t->n_bytes - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    if (gguf_open_memory(data, size, &f) != SW_OK) {
        FUZZ_REQUIRE(f == NULL);
        return 0;
    }
    for (uint64_t i = 0; i < f->n_kv; i++)
        walk_kv(f, &f->kv[i]);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        walk_tensor(f, &f->tensors[i]);
    sink += gguf_find_kv(f, "general.alignment") != NULL;
    sink += gguf_find_tensor(f, "token_embd.weight") != NULL;
    gguf_close(f);
    return 0;
}
