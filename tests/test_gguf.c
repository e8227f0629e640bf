/*
 * test_gguf.c — the GGUF reader on valid input: files built in memory by
 * gguf_build (v2 and v3, every value type, nested arrays, custom and
 * default alignment, several tensor types) with every parsed field checked,
 * the same through a real file and mmap, and the real default model
 * (which must be present: CI runs `spillway fetch` first).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "gguf_build.h"
#include "quant/types.h"

static bool str_eq(gguf_str s, const char *c) {
    return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0;
}

static void check_kv_order(const gguf_file *f) {
    static const char *const keys[GB_SAMPLE_N_KV - 1] = {
        "general.architecture", "general.name", "test.u8", "test.i8", "test.u16",
        "test.i16", "test.u32", "test.i32", "test.f32", "test.bool", "test.u64",
        "test.i64", "test.f64", "test.empty_str", "test.arr_i32", "test.arr_every",
        "test.arr_str", "test.nested"};
    for (size_t i = 0; i < GB_SAMPLE_N_KV - 1 && i < f->n_kv; i++) {
        SW_CHECK(str_eq(f->kv[i].key, keys[i]), "kv %zu is '%.*s', want %s", i,
                 (int)f->kv[i].key.len, f->kv[i].key.ptr, keys[i]);
        SW_CHECK(gguf_find_kv(f, keys[i]) == &f->kv[i], "find_kv(%s)", keys[i]);
        if (i > 0)
            SW_CHECK(f->kv[i].file_offset > f->kv[i - 1].file_offset, "kv offsets grow");
    }
    SW_CHECK(gguf_find_kv(f, "test") == NULL, "prefix is not a key");
    SW_CHECK(gguf_find_kv(f, "test.u8x") == NULL, "longer key is absent");
    SW_CHECK(gguf_find_kv(f, "") == NULL, "empty key is absent");
}

static void check_scalars(const gguf_file *f) {
    uint64_t u = 0;
    double d = 0;
    bool b = false;
    gguf_str s;
    SW_CHECK_OK(gguf_get_uint(f, "test.u8", &u));
    SW_CHECK(u == 200, "u8 %" PRIu64, u);
    SW_CHECK_OK(gguf_get_uint(f, "test.u16", &u));
    SW_CHECK(u == 60000, "u16 %" PRIu64, u);
    SW_CHECK_OK(gguf_get_uint(f, "test.u32", &u));
    SW_CHECK(u == 4000000000u, "u32 %" PRIu64, u);
    SW_CHECK_OK(gguf_get_uint(f, "test.u64", &u));
    SW_CHECK(u == UINT64_C(0x8000000000000005), "u64 %" PRIu64, u);
    SW_CHECK(gguf_find_kv(f, "test.i8")->value.i == -100, "i8");
    SW_CHECK(gguf_find_kv(f, "test.i16")->value.i == -30000, "i16");
    SW_CHECK(gguf_find_kv(f, "test.i32")->value.i == -2000000000, "i32");
    SW_CHECK(gguf_find_kv(f, "test.i64")->value.i == INT64_MIN + 7, "i64");
    SW_CHECK_OK(gguf_get_float(f, "test.f32", &d));
    SW_CHECK(d == 1.5, "f32 %g", d);
    SW_CHECK_OK(gguf_get_float(f, "test.f64", &d));
    SW_CHECK(d == -2.25e300, "f64 %g", d);
    SW_CHECK_OK(gguf_get_bool(f, "test.bool", &b));
    SW_CHECK(b, "bool");
    SW_CHECK_OK(gguf_get_str(f, "general.architecture", &s));
    SW_CHECK(str_eq(s, "gemma3"), "architecture");
    SW_CHECK_OK(gguf_get_str(f, "general.name", &s));
    SW_CHECK(str_eq(s, "tiny \xc3\xbcn\xc3\xaf" "code \xe2\x9c\x93"), "utf-8 name");
    SW_CHECK_OK(gguf_get_str(f, "test.empty_str", &s));
    SW_CHECK(s.len == 0, "empty string");
}

static void check_getter_errors(const gguf_file *f) {
    uint64_t u;
    double d;
    bool b;
    gguf_str s;
    const gguf_value *a;
    SW_CHECK(gguf_get_uint(f, "no.such.key", &u) == SW_ERR_ARG, "absent -> ARG");
    SW_CHECK(gguf_get_uint(f, "test.i8", &u) == SW_ERR_FORMAT, "negative -> FORMAT");
    SW_CHECK(strstr(sw_last_error(), "test.i8") != NULL, "message names key: %s",
             sw_last_error());
    SW_CHECK(gguf_get_uint(f, "test.f32", &u) == SW_ERR_FORMAT, "float as uint");
    SW_CHECK(strstr(sw_last_error(), "f32") != NULL, "message names type: %s",
             sw_last_error());
    SW_CHECK(gguf_get_float(f, "test.u32", &d) == SW_ERR_FORMAT, "uint as float");
    SW_CHECK(gguf_get_bool(f, "test.u8", &b) == SW_ERR_FORMAT, "u8 as bool");
    SW_CHECK(gguf_get_str(f, "test.arr_str", &s) == SW_ERR_FORMAT, "array as string");
    SW_CHECK(gguf_get_array(f, "general.name", &a) == SW_ERR_FORMAT, "string as array");
    SW_CHECK(gguf_get_str(NULL, "x", &s) == SW_ERR_ARG, "NULL file");
}

static void check_arrays(const gguf_file *f) {
    const gguf_value *a;
    SW_CHECK_OK(gguf_get_array(f, "test.arr_i32", &a));
    SW_CHECK(a->arr.elem_type == GGUF_VT_I32 && a->arr.n == 4 && a->arr.raw, "arr_i32");
    SW_CHECK(gguf_array_int(a, 0) == -1 && gguf_array_int(a, 2) == INT32_MAX &&
                 gguf_array_int(a, 3) == INT32_MIN, "arr_i32 values");
    SW_CHECK(gguf_array_float(a, 3) == (double)INT32_MIN, "arr_i32 as float");
    SW_CHECK(gguf_array_int(a, 4) == 0, "out of range reads 0");

    SW_CHECK_OK(gguf_get_array(f, "test.arr_every", &a));
    SW_CHECK(a->arr.elem_type == GGUF_VT_ARRAY && a->arr.n == 11 && a->arr.items, "every");
    for (uint64_t t = 0; a->arr.items && t < a->arr.n; t++) {
        const gguf_value *e = &a->arr.items[t];
        SW_CHECK(e->type == GGUF_VT_ARRAY && e->arr.n == 3, "every[%" PRIu64 "]", t);
        for (uint64_t k = 0; k < 3; k++) {
            double want = e->arr.elem_type == GGUF_VT_BOOL ? 1.0 : (double)(k + 1);
            SW_CHECK(gguf_array_float(e, k) == want, "every[%" PRIu64 "] %s elem %" PRIu64,
                     t, gguf_vtype_name(e->arr.elem_type), k);
        }
    }

    SW_CHECK_OK(gguf_get_array(f, "test.arr_str", &a));
    SW_CHECK(a->arr.elem_type == GGUF_VT_STRING && a->arr.n == 3 && a->arr.items, "arr_str");
    if (a->arr.items) {
        SW_CHECK(str_eq(a->arr.items[0].s, "a") && a->arr.items[1].s.len == 0 &&
                     str_eq(a->arr.items[2].s, "\xc3\xbc\xe2\x9c\x93"), "arr_str values");
        SW_CHECK(gguf_array_uint(a, 0) == 0, "string array reads 0 as scalar");
    }

    SW_CHECK_OK(gguf_get_array(f, "test.nested", &a)); /* [[[1, 2], [3]], [[]]] */
    SW_CHECK(a->arr.n == 2 && a->arr.items && a->arr.items[0].arr.n == 2, "nested shape");
    if (a->arr.items && a->arr.items[0].arr.items && a->arr.items[1].arr.items) {
        const gguf_value *inner = a->arr.items[0].arr.items;
        SW_CHECK(inner[0].arr.n == 2 && gguf_array_uint(&inner[0], 1) == 2 &&
                     inner[1].arr.n == 1 && gguf_array_uint(&inner[1], 0) == 3, "nested");
        SW_CHECK(a->arr.items[1].arr.items[0].arr.n == 0, "nested empty");
    }
}

static void check_tensors(const gguf_file *f, const uint8_t *buf, const gb_layout *lay) {
    SW_CHECK(f->n_tensors == gb_sample_n_tensors, "n_tensors %" PRIu64, f->n_tensors);
    for (size_t i = 0; i < gb_sample_n_tensors && i < f->n_tensors; i++) {
        const gb_tensor *want = &gb_sample_tensors[i];
        const gguf_tensor *t = &f->tensors[i];
        uint64_t n = 1;
        for (uint32_t d = 0; d < 4; d++)
            n *= want->ne[d];
        SW_CHECK(strcmp(t->name, want->name) == 0, "tensor %zu name %s", i, t->name);
        SW_CHECK(gguf_find_tensor(f, want->name) == t, "find %s", want->name);
        SW_CHECK(t->type == want->type && t->n_dims == want->n_dims, "%s type/dims", t->name);
        SW_CHECK(memcmp(t->ne, want->ne, sizeof t->ne) == 0, "%s shape", t->name);
        SW_CHECK(t->n_elements == n, "%s n_elements %" PRIu64, t->name, t->n_elements);
        SW_CHECK(t->n_bytes == gb_tensor_bytes(want), "%s n_bytes %" PRIu64, t->name,
                 t->n_bytes);
        SW_CHECK(t->offset == lay->offsets[i] && t->offset % f->alignment == 0,
                 "%s offset %" PRIu64, t->name, t->offset);
        SW_CHECK(t->data == f->map + f->data_offset + t->offset, "%s data pointer", t->name);
        SW_CHECK(t->data[0] == (uint8_t)(i * 31u) && t->data == buf + (t->data - f->map),
                 "%s data bytes", t->name);
        if (i > 0)
            SW_CHECK(t->info_offset > f->tensors[i - 1].info_offset, "info offsets grow");
    }
    SW_CHECK(gguf_find_tensor(f, "missing.weight") == NULL, "absent tensor");
    SW_CHECK(gguf_find_tensor(f, "output_norm") == NULL, "prefix is not a tensor");
}

/* Every field of a gb_sample() file parsed from buf. */
static void check_sample(const gguf_file *f, const uint8_t *buf, size_t size,
                         const gb_layout *lay, uint32_t version, uint32_t alignment) {
    SW_CHECK(f->map == buf && f->size == size, "map/size");
    SW_CHECK(f->version == version, "version %" PRIu32, f->version);
    SW_CHECK(f->n_kv == GB_SAMPLE_N_KV, "n_kv %" PRIu64, f->n_kv);
    SW_CHECK(f->alignment == (alignment ? alignment : 32), "alignment %" PRIu32,
             f->alignment);
    SW_CHECK(f->data_offset == lay->data_start, "data_offset %" PRIu64 " want %zu",
             f->data_offset, lay->data_start);
    if (f->n_kv != GB_SAMPLE_N_KV)
        return;
    check_kv_order(f);
    check_scalars(f);
    check_getter_errors(f);
    check_arrays(f);
    check_tensors(f, buf, lay);
    const gguf_kv *last = &f->kv[GB_SAMPLE_N_KV - 1];
    if (alignment)
        SW_CHECK(str_eq(last->key, "general.alignment") && last->value.u == alignment,
                 "alignment key");
    else
        SW_CHECK(str_eq(last->key, "test.empty_arr") && last->value.arr.n == 0, "empty arr");
}

static void test_samples_in_memory(void) {
    static const uint32_t alignments[] = {0, 8, 32, 64, 256, 4096};
    for (uint32_t version = 2; version <= 3; version++) {
        for (size_t a = 0; a < sizeof alignments / sizeof alignments[0]; a++) {
            gb b;
            gb_layout lay;
            gguf_file *f = NULL;
            gb_init(&b);
            gb_sample(&b, version, alignments[a], &lay);
            SW_CHECK(!b.failed, "build");
            SW_CHECK_OK(gguf_open_memory(b.data, b.len, &f));
            if (f != NULL)
                check_sample(f, b.data, b.len, &lay, version, alignments[a]);
            gguf_close(f);
            gb_free(&b);
        }
    }
}

/* The same file through gguf_open(): a real path, fstat and mmap. */
static void test_sample_from_file(void) {
    char path[] = "/tmp/sw_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    gb b;
    gb_layout lay;
    gguf_file *f = NULL;
    SW_CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    gb_init(&b);
    gb_sample(&b, 3, 64, &lay);
    SW_CHECK(write(fd, b.data, b.len) == (ssize_t)b.len, "write");
    close(fd);
    SW_CHECK_OK(gguf_open(path, &f));
    if (f != NULL) {
        SW_CHECK(memcmp(f->map, b.data, b.len) == 0, "mapping holds the file");
        check_tensors(f, f->map, &lay);
        check_arrays(f);
    }
    gguf_close(f);
    unlink(path);
    gb_free(&b);
}

/* Header only: no keys, no tensors. The data section may start past the
 * end of such a file; nothing reads it. */
static void test_empty_tables(void) {
    gb b;
    gguf_file *f = NULL;
    gb_init(&b);
    gb_header(&b, 3, 0, 0);
    SW_CHECK_OK(gguf_open_memory(b.data, b.len, &f));
    if (f != NULL) {
        SW_CHECK(f->n_kv == 0 && f->n_tensors == 0 && f->alignment == 32, "empty tables");
        SW_CHECK(gguf_find_kv(f, "a") == NULL && gguf_find_tensor(f, "a") == NULL, "find");
    }
    gguf_close(f);
    gb_free(&b);
}

/* Arrays nested exactly GGUF_MAX_DEPTH deep are accepted. */
static void test_max_depth(void) {
    gb b;
    gguf_file *f = NULL;
    gb_init(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_begin(&b, "deep", GGUF_VT_ARRAY);
    for (int level = 1; level < GGUF_MAX_DEPTH; level++)
        gb_array_begin(&b, GGUF_VT_ARRAY, 1);
    gb_array_begin(&b, GGUF_VT_U8, 1);
    gb_u8(&b, 42);
    SW_CHECK_OK(gguf_open_memory(b.data, b.len, &f));
    if (f != NULL) {
        const gguf_value *v = &f->kv[0].value;
        int depth = 1;
        while (v->arr.elem_type == GGUF_VT_ARRAY && v->arr.items)
            v = &v->arr.items[0], depth++;
        SW_CHECK(depth == GGUF_MAX_DEPTH && gguf_array_uint(v, 0) == 42, "depth %d", depth);
    }
    gguf_close(f);
    gb_free(&b);
}

/* Many tensors: every name is found through the sorted index. */
static void test_many_tensors(void) {
    enum { N = 300 };
    static char names[N][32];
    static gb_tensor t[N];
    gb b;
    gguf_file *f = NULL;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "blk.%d.w%d", (i * 7919) % N, i % 3);
        t[i] = (gb_tensor){names[i], SW_TYPE_F32, 1, {4, 1, 1, 1}};
    }
    gb_init(&b);
    gb_header(&b, 3, N, 0);
    gb_tensors(&b, t, N, 32, NULL);
    SW_CHECK_OK(gguf_open_memory(b.data, b.len, &f));
    for (int i = 0; f != NULL && i < N; i++)
        SW_CHECK(gguf_find_tensor(f, names[i]) == &f->tensors[i], "find %s", names[i]);
    gguf_close(f);
    gb_free(&b);
}

static void check_real_model(const gguf_file *f) {
    gguf_str arch;
    const gguf_value *tokens;
    SW_CHECK(f->n_tensors == 236, "real model: %" PRIu64 " tensors, want 236", f->n_tensors);
    SW_CHECK(f->version == 3 && f->data_offset % f->alignment == 0, "version/data offset");
    SW_CHECK_OK(gguf_get_str(f, "general.architecture", &arch));
    SW_CHECK(str_eq(arch, "gemma3"), "architecture '%.*s'", (int)arch.len, arch.ptr);
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    SW_CHECK(t != NULL, "token_embd.weight present");
    if (t != NULL)
        SW_CHECK(t->type == SW_TYPE_Q8_0 && t->n_dims == 2 && t->ne[0] == 640 &&
                     t->ne[1] == 262144, "token_embd.weight: type %s shape [%" PRIu64
                     ", %" PRIu64 "]", type_name(t->type), t->ne[0], t->ne[1]);
    SW_CHECK_OK(gguf_get_array(f, "tokenizer.ggml.tokens", &tokens));
    if (tokens != NULL && tokens->arr.items != NULL)
        SW_CHECK(tokens->arr.n == 262144 && str_eq(tokens->arr.items[2].s, "<bos>"),
                 "tokens: %" PRIu64, tokens->arr.n);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        SW_CHECK(gguf_find_tensor(f, f->tensors[i].name) == &f->tensors[i], "find %s",
                 f->tensors[i].name);
}

/* The real default model must be there: a test that silently skips when
 * its input is missing could never fail CI. SW_MODEL overrides the path. */
static void test_real_model(void) {
    const char *path = getenv("SW_MODEL");
    struct stat st;
    gguf_file *f = NULL;
    if (path == NULL || path[0] == '\0')
        path = sw_test_default_model();
    if (stat(path, &st) != 0) {
        SW_CHECK(0, "default model '%s' is missing: run `spillway fetch` first (or set "
                    "SW_MODEL to a copy of gemma-3-270m-q4_k_m.gguf)", path);
        return;
    }
    SW_CHECK_OK(gguf_open(path, &f));
    if (f != NULL)
        check_real_model(f);
    gguf_close(f);
}

/* `test_gguf` checks built files; `test_gguf --model` the real model (its
 * own CTest entry, labelled "model" like the other tests that need it). */
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--model") == 0) {
        test_real_model();
        return sw_check_finish("test_gguf --model");
    }
    test_samples_in_memory();
    test_sample_from_file();
    test_empty_tables();
    test_max_depth();
    test_many_tensors();
    return sw_check_finish("test_gguf");
}
