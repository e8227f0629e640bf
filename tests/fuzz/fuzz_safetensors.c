/*
 * fuzz_safetensors.c — libFuzzer harness for the safetensors reader.
 *
 * Opens the input with st_open_memory() (from an exact-size, 8-byte-aligned
 * copy, so ASan sees any over-read); when it is accepted, checks the
 * invariants the rest of Spillway relies on — names sorted and found by
 * st_find, sizes consistent with dtype and shape, data inside the input and
 * aligned, the tensors tiling the data section, metadata found by st_meta —
 * and touches each tensor's first and last byte. A failure must leave no
 * result and a message, and never the reader's internal-inconsistency
 * message (DISAGREE). A broken invariant traps so the fuzzer
 * reports it.
 * Built as fuzz_safetensors with -fsanitize=fuzzer (tools/fuzz.sh) and as
 * fuzz_safetensors_replay (fuzz_replay.c) for CTest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/safetensors.h"

#include "fuzz_common.h"

/* The reader's message when its text scan and json-c disagree. */
#define DISAGREE "fuzz.safetensors: the header text and its JSON parse disagree"

static volatile uint64_t sink;

static void walk_tensor(const st_file *f, const st_tensor *t) {
    FUZZ_REQUIRE(st_find(f, t->name) == t);
    FUZZ_REQUIRE(t->name[0] != '\0' && strlen(t->name) <= ST_MAX_NAME_BYTES);
    FUZZ_REQUIRE(t->dtype < ST_DTYPE_COUNT && t->n_dims <= ST_MAX_DIMS);
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->shape[d];
    FUZZ_REQUIRE(n == t->n_elements && t->n_bytes == n * st_dtype_size(t->dtype));
    FUZZ_REQUIRE(t->data == f->map + f->data_offset + t->offset);
    FUZZ_REQUIRE(t->offset <= f->size - f->data_offset &&
                 t->n_bytes <= f->size - f->data_offset - t->offset);
    FUZZ_REQUIRE((uintptr_t)t->data % st_dtype_size(t->dtype) == 0);
    if (t->n_bytes > 0)
        sink += t->data[0] + t->data[t->n_bytes - 1];
}

static void walk(const st_file *f) {
    uint64_t total = 0;
    FUZZ_REQUIRE(f->data_offset >= 10 && f->data_offset <= f->size);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        if (i > 0)
            FUZZ_REQUIRE(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0);
        walk_tensor(f, &f->tensors[i]);
        total += f->tensors[i].n_bytes;
    }
    FUZZ_REQUIRE(total == f->size - f->data_offset); /* no hole, no overlap */
    for (uint64_t i = 0; i < f->n_meta; i++) {
        FUZZ_REQUIRE(st_meta(f, f->meta_keys[i]) == f->meta_values[i]);
        sink += strlen(f->meta_values[i]);
    }
    sink += st_find(f, "model.embed_tokens.weight") != NULL;
    sink += st_meta(f, "format") != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    st_file *f = NULL;
    if (copy == NULL)
        return 0;
    if (size)
        memcpy(copy, data, size);
    if (st_open_memory(copy, size, "fuzz.safetensors", &f) != SW_OK) {
        FUZZ_REQUIRE(f == NULL && sw_last_error()[0] != '\0');
        /* The reader's text scan and json-c must never disagree. */
        FUZZ_REQUIRE(strncmp(sw_last_error(), DISAGREE, strlen(DISAGREE)) != 0);
    } else {
        walk(f);
        st_close(f);
    }
    free(copy);
    return 0;
}
