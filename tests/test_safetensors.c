/*
 * test_safetensors.c — the safetensors reader (src/format/safetensors*.c).
 *
 * Good files: built in memory (every dtype, scalars, zero-size tensors,
 * escaped and non-ASCII names, metadata), read from disk through the mmap
 * path, and the tiny Hugging Face checkpoints checked tensor by tensor
 * against tests/data/safetensors_table.tsv (written by the `safetensors`
 * package: tools/golden/make_safetensors_table.py). Bad files: named
 * hostile cases, every truncation of a good file, byte mutations of a
 * header, and paths that are not files. Every in-memory input is copied
 * into an exact-size heap block so ASan (the sanitizer build) catches any
 * over-read; a failed open must leave *out NULL and leak nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/safetensors.h"
#include "safetensors_build.h"
#include "util/sha256.h"

#define BAD_NAME "bad.safetensors"

/* ---- helpers -------------------------------------------------------------------- */

/* Opens data[0..n) from an exact-size heap copy; on success *out holds the
 * file and *copy the buffer (free both), on failure both are NULL. */
static sw_status open_copy(const uint8_t *data, size_t n, st_file **out, uint8_t **copy) {
    *copy = malloc(n ? n : 1);
    *out = (st_file *)copy; /* must come back NULL on failure */
    if (*copy == NULL)
        return SW_ERR_OOM_HOST;
    if (n)
        memcpy(*copy, data, n);
    sw_status st = st_open_memory(*copy, n, BAD_NAME, out);
    if (st != SW_OK) {
        SW_CHECK(*out == NULL, "failed open leaves *out NULL");
        free(*copy);
        *copy = NULL;
        *out = NULL;
    }
    return st;
}

static sw_status open_exact(const uint8_t *data, size_t n) {
    st_file *f;
    uint8_t *copy;
    sw_status st = open_copy(data, n, &f, &copy);
    st_close(f);
    free(copy);
    return st;
}

/* The file in b must be rejected as a format error whose message starts
 * with the file name and contains `fragment`. */
static void expect_bad(const char *name, sb *b, const char *fragment) {
    SW_CHECK(!b->failed, "%s: build failed", name);
    sw_status st = open_exact(b->data, b->len);
    const char *msg = sw_last_error();
    SW_CHECK(st == SW_ERR_FORMAT, "%s: got %s, want format error (%s)", name,
             sw_status_name(st), msg);
    SW_CHECK(strncmp(msg, BAD_NAME ": ", strlen(BAD_NAME) + 2) == 0,
             "%s: message lacks the file name: %s", name, msg);
    SW_CHECK(strstr(msg, fragment) != NULL, "%s: message lacks '%s': %s", name, fragment,
             msg);
    if (getenv("SW_VERBOSE"))
        printf("%-24s %s\n", name, msg);
    sb_free(b);
}

/* The header text padded with spaces so that the data section starts at a
 * file offset that is `rem` modulo 8, then n_data bytes. */
static void raw_file(sb *b, const char *json, size_t rem, uint64_t n_data) {
    size_t len = strlen(json), pad = (rem + 16 - (8 + len) % 8) % 8;
    sb_init(b);
    sb_u64(b, len + pad);
    sb_raw(b, json, len);
    for (size_t i = 0; i < pad; i++)
        sb_raw(b, " ", 1);
    sb_fill(b, (size_t)n_data);
}

/* Every byte of t's data is the builder's pattern at its offset. */
static bool data_matches(const st_tensor *t) {
    for (uint64_t i = 0; i < t->n_bytes; i++)
        if (t->data[i] != sb_pattern(t->offset + i))
            return false;
    return true;
}

/* ---- good files built in memory -------------------------------------------------- */

static const sb_tensor sample_tensors[] = {
    {"big.f64", "F64", 2, {2, 3}, 8},   {"w.f32", "F32", 2, {3, 4}, 4},
    {"scalar", "F32", 0, {0}, 4},       {"empty", "F32", 2, {0, 5}, 4},
    {"h.f16", "F16", 1, {5}, 2},        {"b.bf16", "BF16", 1, {3}, 2},
    {"i8", "I8", 1, {3}, 1},            {"flag", "BOOL", 1, {1}, 1},
};
#define N_SAMPLE (sizeof sample_tensors / sizeof sample_tensors[0])
#define SAMPLE_META "{\"format\":\"pt\",\"z\":\"last\",\"a\":\"first \\u00e9\"}"

static void build_sample(sb *b) {
    sb_init(b);
    sb_tensors(b, sample_tensors, N_SAMPLE, SAMPLE_META);
}

/* The sample's tensors, found by name, in name order, with their data. */
static void check_sample(const st_file *f, const uint8_t *base) {
    static const uint64_t offsets[N_SAMPLE] = {0, 48, 96, 100, 100, 110, 116, 119};
    SW_CHECK(f->n_tensors == N_SAMPLE, "n_tensors %" PRIu64, f->n_tensors);
    SW_CHECK(f->data_offset % 8 == 0 && f->data_offset > 8, "data_offset %" PRIu64,
             f->data_offset);
    for (uint64_t i = 1; i < f->n_tensors; i++)
        SW_CHECK(strcmp(f->tensors[i - 1].name, f->tensors[i].name) < 0, "not sorted at %"
                 PRIu64, i);
    for (size_t i = 0; i < N_SAMPLE; i++) {
        const sb_tensor *want = &sample_tensors[i];
        const st_tensor *t = st_find(f, want->name);
        SW_CHECK(t != NULL, "st_find(%s)", want->name);
        if (t == NULL)
            continue;
        uint64_t n = 1;
        for (uint32_t d = 0; d < want->n_dims; d++)
            n *= want->shape[d];
        SW_CHECK(strcmp(st_dtype_name(t->dtype), want->dtype) == 0, "%s: dtype %s",
                 want->name, st_dtype_name(t->dtype));
        SW_CHECK(t->n_dims == want->n_dims, "%s: n_dims %" PRIu32, want->name, t->n_dims);
        for (uint32_t d = 0; d < want->n_dims; d++)
            SW_CHECK(t->shape[d] == want->shape[d], "%s: shape[%u]", want->name, d);
        SW_CHECK(t->n_elements == n, "%s: n_elements %" PRIu64, want->name, t->n_elements);
        SW_CHECK(t->n_bytes == n * want->elem_bytes, "%s: n_bytes", want->name);
        SW_CHECK(t->offset == offsets[i], "%s: offset %" PRIu64, want->name, t->offset);
        SW_CHECK(t->data == base + f->data_offset + t->offset, "%s: data pointer", want->name);
        SW_CHECK(((uintptr_t)t->data) % want->elem_bytes == 0, "%s: aligned", want->name);
        SW_CHECK(data_matches(t), "%s: data bytes", want->name);
    }
    SW_CHECK(st_find(f, "nope") == NULL && st_find(f, "") == NULL && st_find(f, NULL) == NULL,
             "absent names");
    SW_CHECK(f->n_meta == 3, "n_meta %" PRIu64, f->n_meta);
    SW_CHECK(st_meta(f, "format") && strcmp(st_meta(f, "format"), "pt") == 0, "meta format");
    SW_CHECK(st_meta(f, "a") && strcmp(st_meta(f, "a"), "first \xc3\xa9") == 0, "meta a");
    SW_CHECK(st_meta(f, "z") && strcmp(st_meta(f, "z"), "last") == 0, "meta z");
    SW_CHECK(st_meta(f, "__metadata__") == NULL && st_meta(f, "b") == NULL, "meta absent");
    SW_CHECK(st_find(f, "__metadata__") == NULL, "__metadata__ is no tensor");
}

static void test_sample(void) {
    sb b;
    st_file *f;
    uint8_t *copy;
    build_sample(&b);
    SW_CHECK(!b.failed, "build");
    SW_CHECK_OK(open_copy(b.data, b.len, &f, &copy));
    if (f != NULL)
        check_sample(f, copy);
    st_close(f);
    free(copy);
    sb_free(&b);
}

static void test_all_dtypes(void) {
    static const char *const names[] = {"F64", "I64", "U64", "F32", "I32", "U32", "F16",
                                        "BF16", "I16", "U16", "I8", "U8", "BOOL",
                                        "F8_E4M3", "F8_E5M2"};
    static const uint32_t sizes[] = {8, 8, 8, 4, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1};
    sb_tensor t[15];
    char tname[15][16];
    for (int i = 0; i < 15; i++) {
        snprintf(tname[i], sizeof tname[i], "t.%s", names[i]);
        t[i] = (sb_tensor){tname[i], names[i], 1, {3}, sizes[i]};
    }
    sb b;
    st_file *f;
    uint8_t *copy;
    sb_init(&b);
    sb_tensors(&b, t, 15, NULL);
    SW_CHECK_OK(open_copy(b.data, b.len, &f, &copy));
    for (int i = 0; f != NULL && i < 15; i++) {
        const st_tensor *x = st_find(f, tname[i]);
        SW_CHECK(x != NULL && strcmp(st_dtype_name(x->dtype), names[i]) == 0 &&
                 st_dtype_size(x->dtype) == sizes[i] && x->n_bytes == 3 * sizes[i] &&
                 data_matches(x), "dtype %s", names[i]);
    }
    SW_CHECK(f == NULL || f->n_meta == 0, "no metadata");
    st_close(f);
    free(copy);
    sb_free(&b);
    SW_CHECK(strcmp(st_dtype_name(ST_DTYPE_COUNT), "?") == 0 &&
             st_dtype_size(ST_DTYPE_COUNT) == 0 && strcmp(st_dtype_name((st_dtype)-1), "?") == 0,
             "bad dtype values");
}

/* Escapes decode; non-ASCII names work; a name may be 1024 bytes; rank 8. */
static void test_names_and_edges(void) {
    static char long_name[1025];
    memset(long_name, 'n', 1024);
    sb_tensor t[] = {
        {"caf\\u00e9", "U8", 1, {1}, 1},         {"\\ud83d\\ude00", "U8", 1, {1}, 1},
        {"quote\\\"d\\\\/\\/", "U8", 1, {1}, 1}, {"na\xc3\xafve", "U8", 1, {1}, 1},
        {long_name, "U8", 1, {2}, 1},            {"rank8", "U8", 8, {1, 2, 1, 1, 1, 1, 1, 3}, 1},
        {"zero.end", "F32", 1, {0}, 4},
    };
    static const char *const decoded[] = {"caf\xc3\xa9", "\xf0\x9f\x98\x80", "quote\"d\\//",
                                          "na\xc3\xafve"};
    sb b;
    st_file *f;
    uint8_t *copy;
    sb_init(&b);
    sb_tensors(&b, t, sizeof t / sizeof t[0], "{}");
    SW_CHECK_OK(open_copy(b.data, b.len, &f, &copy));
    for (int i = 0; f != NULL && i < 4; i++)
        SW_CHECK(st_find(f, decoded[i]) != NULL, "decoded name %d", i);
    const st_tensor *r8 = f ? st_find(f, "rank8") : NULL;
    SW_CHECK(r8 != NULL && r8->n_dims == 8 && r8->n_elements == 6 && r8->shape[7] == 3,
             "rank 8");
    SW_CHECK(f != NULL && st_find(f, long_name) != NULL, "1024-byte name");
    const st_tensor *z = f ? st_find(f, "zero.end") : NULL;
    SW_CHECK(z != NULL && z->n_bytes == 0 && z->n_elements == 0 && z->offset == 12,
             "zero-size tensor at the end");
    st_close(f);
    free(copy);
    sb_free(&b);

    static const char *const minimal[] = {"{}", "{\"__metadata__\":{}}", "  {}  ",
                                          "{\"__metadata__\":{\"k\":\"\"}}"};
    for (int i = 0; i < 4; i++) {
        sb_init(&b);
        sb_file(&b, minimal[i], 0);
        SW_CHECK_OK(open_copy(b.data, b.len, &f, &copy));
        SW_CHECK(f == NULL || f->n_tensors == 0, "minimal %d", i);
        st_close(f);
        free(copy);
        sb_free(&b);
    }
}

/* The mmap path: a file on disk opens, and its messages name the path. */
static void test_disk(void) {
    char dir[] = "/tmp/sw_st_XXXXXX", path[64];
    sb b;
    st_file *f = NULL;
    SW_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/sample.safetensors", dir);
    build_sample(&b);
    FILE *fp = fopen(path, "wb");
    SW_CHECK(fp != NULL && fwrite(b.data, 1, b.len, fp) == b.len && fclose(fp) == 0,
             "write %s", path);
    SW_CHECK_OK(st_open(path, &f));
    if (f != NULL) {
        SW_CHECK(strcmp(f->path, path) == 0 && f->size == b.len, "path and size");
        check_sample(f, f->map);
    }
    st_close(f);
    b.data[12] = '#'; /* corrupt the JSON */
    fp = fopen(path, "wb");
    SW_CHECK(fp != NULL && fwrite(b.data, 1, b.len, fp) == b.len && fclose(fp) == 0, "rewrite");
    f = (st_file *)&f;
    SW_CHECK(st_open(path, &f) == SW_ERR_FORMAT && f == NULL, "corrupt file on disk");
    SW_CHECK(strncmp(sw_last_error(), path, strlen(path)) == 0, "message names the path: %s",
             sw_last_error());
    sb_free(&b);

    SW_CHECK(st_open(dir, &f) == SW_ERR_IO && f == NULL, "directory");
    SW_CHECK(strstr(sw_last_error(), dir) && strstr(sw_last_error(), "directory"),
             "directory message: %s", sw_last_error());
    unlink(path);
    SW_CHECK(st_open(path, &f) == SW_ERR_IO && f == NULL, "missing file");
    SW_CHECK(strstr(sw_last_error(), path) != NULL, "missing message: %s", sw_last_error());
    rmdir(dir);
    SW_CHECK(st_open("/dev/null", &f) == SW_ERR_IO && f == NULL, "/dev/null: %s",
             sw_last_error());
    SW_CHECK(st_open(NULL, &f) == SW_ERR_ARG && st_open(path, NULL) == SW_ERR_ARG, "NULLs");
    static uint64_t aligned[4];
    SW_CHECK(st_open_memory((const uint8_t *)aligned + 1, 8, "x", &f) == SW_ERR_ARG &&
             f == NULL, "unaligned buffer");
    SW_CHECK(st_open_memory(NULL, 8, "x", &f) == SW_ERR_ARG, "NULL data");
    st_close(NULL);
    SW_CHECK(st_find(NULL, "x") == NULL && st_meta(NULL, "x") == NULL, "NULL file");
}

/* ---- the Hugging Face files against the reference table ------------------------ */

typedef struct golden_counts {
    int tensors, meta;
} golden_counts;

static void check_golden_tensor(const st_file *f, const char *model, char **col) {
    const char *name = col[2], *dtype = col[3], *shape = col[4], *digest = col[5];
    const st_tensor *t = st_find(f, name);
    char got_shape[256] = "", hex[65];
    SW_CHECK(t != NULL, "%s: tensor %s missing", model, name);
    if (t == NULL)
        return;
    for (uint32_t d = 0, used = 0; d < t->n_dims && used < sizeof got_shape; d++)
        used += (uint32_t)snprintf(got_shape + used, sizeof got_shape - used, "%s%" PRIu64,
                                   d ? "," : "", t->shape[d]);
    sha256_ctx c;
    uint8_t sum[32];
    sha256_init(&c);
    sha256_update(&c, t->data, (size_t)t->n_bytes);
    sha256_final(&c, sum);
    sha256_hex(sum, hex);
    SW_CHECK(strcmp(st_dtype_name(t->dtype), dtype) == 0, "%s %s: dtype %s, want %s", model,
             name, st_dtype_name(t->dtype), dtype);
    SW_CHECK(strcmp(got_shape, shape) == 0, "%s %s: shape %s, want %s", model, name,
             got_shape, shape);
    SW_CHECK(strcmp(hex, digest) == 0, "%s %s: data sha256 %s, want %s", model, name, hex,
             digest);
}

/* Splits line at tabs into at most 6 columns; returns the count. */
static int split_tabs(char *line, char **col) {
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *s = line; n < 6; n++) {
        col[n] = s;
        char *tab = strchr(s, '\t');
        if (tab == NULL)
            return n + 1;
        *tab = '\0';
        s = tab + 1;
    }
    return n;
}

static void check_golden_model(const char *model, FILE *table) {
    char rel[64], line[4096], *col[6];
    st_file *f = NULL;
    golden_counts n = {0, 0};
    snprintf(rel, sizeof rel, "tiny/%s/model.safetensors", model);
    SW_CHECK_OK(st_open(sw_test_data(rel), &f));
    if (f == NULL)
        return;
    rewind(table);
    while (fgets(line, sizeof line, table) != NULL) {
        if (line[0] == '#')
            continue;
        int n_col = split_tabs(line, col);
        if (n_col < 4 || strcmp(col[1], model) != 0)
            continue;
        if (strcmp(col[0], "meta") == 0) {
            const char *v = st_meta(f, col[2]);
            SW_CHECK(v != NULL && strcmp(v, col[3]) == 0, "%s: meta %s", model, col[2]);
            n.meta++;
        } else if (n_col == 6 && strcmp(col[0], "tensor") == 0) {
            check_golden_tensor(f, model, col);
            n.tensors++;
        }
    }
    SW_CHECK(n.tensors > 0 && (uint64_t)n.tensors == f->n_tensors, "%s: %" PRIu64
             " tensors, the table has %d", model, f->n_tensors, n.tensors);
    SW_CHECK((uint64_t)n.meta == f->n_meta, "%s: %" PRIu64 " metadata entries, table %d",
             model, f->n_meta, n.meta);
    st_close(f);
}

static void test_hf_files(void) {
    FILE *table = fopen(sw_test_data("safetensors_table.tsv"), "r");
    SW_CHECK(table != NULL, "cannot open %s", sw_test_data("safetensors_table.tsv"));
    if (table == NULL)
        return;
    check_golden_model("gemma1-hf", table);
    check_golden_model("gemma2-hf", table);
    check_golden_model("gemma3-hf", table);
    fclose(table);
}

/* ---- hostile files ------------------------------------------------------------------ */

/* One tensor "t" whose entry body is given. */
#define T1(body) "{\"t\":{" body "}}"
#define OK_ENTRY(name, off) "\"" name "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" off "}"

typedef struct bad_case {
    const char *name, *json;
    uint64_t n_data;
    const char *fragment;
} bad_case;

static const bad_case bad_json_cases[] = {
    {"not_json", "garbage!", 0, "invalid JSON"},
    {"truncated_json", "{\"t\":{\"dtype\":", 0, "ends early"},
    {"json_array_top", "[1, 2]", 0, "expected an object"},
    {"json_string_top", "\"x\"", 0, "expected an object"},
    {"json_null_top", "null", 0, "null"},
    {"json_comment", "{/* c */}", 0, "invalid JSON"},
    {"trailing_comma", "{\"__metadata__\":{},}", 0, "invalid JSON"},
    {"trailing_garbage", "{} x", 0, "invalid JSON at byte 3"},
    {"two_documents", "{}{}", 0, "invalid JSON at byte 2"},
    /* json-c takes single-quoted keys even in strict mode */
    {"single_quoted_key", "{'t':{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
     "invalid JSON at byte 1: a single-quoted string"},
    /* json-c 0.16 decodes this valid pair (U+1DA00) as U+FFFD */
    {"mangled_surrogate_pair",
     "{\"\\ud836\\ude00\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
     "decodes as U+FFFD"},
    {"single_quoted_inner_key", T1("'dtype':\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "a single-quoted string"},
    {"wrong_dtype", T1("\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "dtype \"F31\" is not one"},
    {"dtype_lowercase", T1("\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "is not one"},
    {"dtype_complex", T1("\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]"), 8,
     "is not one"},
    {"dtype_not_string", T1("\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "'dtype' should be a string"},
    {"dtype_missing", T1("\"shape\":[2],\"data_offsets\":[0,8]"), 8, "'dtype' is missing"},
    {"dtype_null", T1("\"dtype\":null,\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "'dtype' is missing"},
    {"shape_missing", T1("\"dtype\":\"F32\",\"data_offsets\":[0,8]"), 8, "'shape' is missing"},
    {"shape_not_array", T1("\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]"), 8,
     "'shape' should be an array"},
    {"offsets_missing", T1("\"dtype\":\"F32\",\"shape\":[2]"), 8, "'data_offsets' is missing"},
    {"extra_key", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1"), 8,
     "unexpected key \"x\""},
    {"entry_not_object", "{\"t\":[1,2]}", 0, "entry is a JSON array"},
    {"entry_string", "{\"t\":\"F32\"}", 0, "entry is a JSON string"},
    {"negative_dim", T1("\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]"), 8,
     "shape[0] is negative"},
    {"fractional_dim", T1("\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]"), 8,
     "shape[0] is the floating-point number 1.5"},
    {"exponent_dim", T1("\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]"), 8,
     "expected a non-negative integer"},
    {"string_dim", T1("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8,
     "shape[0] is a JSON string"},
    {"null_dim", T1("\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,8]"), 8,
     "shape[0] is a JSON null"},
    {"huge_dims_overflow",
     T1("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]"), 8,
     "overflow"},
    {"dim_2_63", T1("\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]"),
     8, "2^63 or more"},
    {"dim_2_64", T1("\"dtype\":\"F32\",\"shape\":[18446744073709551617],\"data_offsets\":[0,8]"),
     8, "2^63 or more"},
    {"bytes_overflow",
     T1("\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]"), 8,
     "overflow a 64-bit byte count"},
    {"overflow_beside_zero",
     T1("\"dtype\":\"F32\",\"shape\":[4294967296,0,4294967296],\"data_offsets\":[0,0]"), 0,
     "overflow"},
    {"rank_9", T1("\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]"), 1,
     "9 dimensions"},
    {"offsets_reversed", T1("\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]"), 8,
     "reversed"},
    {"offsets_past_end", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 4,
     "run past the end"},
    {"offsets_far_past_end",
     T1("\"dtype\":\"U8\",\"shape\":[4611686018427387904],"
        "\"data_offsets\":[0,4611686018427387904]"), 8, "run past the end"},
    {"offsets_three", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]"), 8,
     "expected [begin, end]"},
    {"offsets_one", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]"), 8,
     "expected [begin, end]"},
    {"offsets_negative", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]"), 8,
     "data_offsets[0] is negative"},
    {"offsets_fractional", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]"), 8,
     "data_offsets[1] is the floating-point number 8"},
    {"offsets_object", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{\"a\":0}"), 8,
     "'data_offsets' should be an array"},
    {"size_mismatch", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,6]"), 6,
     "span 6 bytes but F32 shape [2] needs 8"},
    {"overlap", "{" OK_ENTRY("a", "[0,8]") "," OK_ENTRY("b", "[4,12]") "}", 12, "overlaps"},
    {"same_range", "{" OK_ENTRY("a", "[0,8]") "," OK_ENTRY("b", "[0,8]") "}", 8, "overlaps"},
    {"zero_size_inside",
     "{" OK_ENTRY("a", "[0,8]") ",\"z\":{\"dtype\":\"F32\",\"shape\":[0],"
     "\"data_offsets\":[4,4]}}", 8, "overlaps"},
    {"hole", "{" OK_ENTRY("a", "[0,8]") "," OK_ENTRY("b", "[16,24]") "}", 24,
     "belong to no tensor"},
    {"hole_at_start", "{" OK_ENTRY("a", "[8,16]") "}", 16, "bytes [0, 8)"},
    {"trailing_data", "{" OK_ENTRY("a", "[0,8]") "}", 12, "the last 4 bytes"},
    {"data_without_tensors", "{}", 8, "the last 8 bytes"},
    {"empty_name", "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "name is empty"},
    {"meta_not_object", "{\"__metadata__\":\"pt\"}", 0, "__metadata__: is a JSON string"},
    {"meta_array", "{\"__metadata__\":[\"pt\"]}", 0, "__metadata__: is a JSON array"},
    {"meta_int_value", "{\"__metadata__\":{\"format\":1}}", 0, "maps strings to strings"},
    {"meta_null_value", "{\"__metadata__\":{\"format\":null}}", 0, "a JSON null"},
    {"meta_nested", "{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0, "a JSON object"},
    {"invalid_utf8_name", "{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
     1, "not valid UTF-8"},
    {"overlong_utf8", "{\"a\xc0\x80\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
     1, "not valid UTF-8"},
    {"utf8_surrogate",
     "{\"a\xed\xa0\x80\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "not valid UTF-8"},
    {"nul_in_name", "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
     1, "\\u0000"},
    {"nul_in_meta", "{\"__metadata__\":{\"k\":\"v\\u0000w\"}}", 0, "\\u0000"},
    {"nul_in_dtype", T1("\"dtype\":\"F32\\u0000\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
     "\\u0000"},
    {"lone_surrogate", "{\"\\ud800\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
     1, "surrogate"},
    {"lone_low_surrogate", "{\"__metadata__\":{\"k\":\"\\udc00\"}}", 0, "surrogate"},
    {"raw_newline_in_name",
     "{\"a\nb\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "raw control character"},
    {"escaped_control_in_name",
     "{\"a\\u0001b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "control character 0x01"},
    {"duplicate_name", "{" OK_ENTRY("a", "[0,8]") "," OK_ENTRY("a", "[8,16]") "}", 16,
     "\"a\" (key at file offset"},
    {"duplicate_name_escaped", "{" OK_ENTRY("ab", "[0,8]") "," OK_ENTRY("\\u0061b", "[8,16]") "}",
     16, "appears twice"},
    {"duplicate_name_later", "{" OK_ENTRY("a", "[0,8]") "," OK_ENTRY("b", "[8,16]") ","
     OK_ENTRY("a", "[16,24]") "}", 24, "appears twice in the header"},
    {"duplicate_name_fewer_keys",
     "{\"a\":{\"dtype\":\"F32\"}," OK_ENTRY("a", "[0,8]") "}", 8, "appears twice in the header"},
    {"duplicate_name_more_keys",
     "{" OK_ENTRY("a", "[0,8]") ",\"a\":{\"dtype\":\"F32\"}}", 8, "appears twice in the header"},
    {"duplicate_dtype", T1("\"dtype\":\"F16\",\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8]"), 8, "tensor 't': key \"dtype\""},
    {"duplicate_meta_key", "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
     "__metadata__: key \"k\""},
    {"duplicate_metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "appears twice"},
};

static void test_bad_json(void) {
    for (size_t i = 0; i < sizeof bad_json_cases / sizeof bad_json_cases[0]; i++) {
        const bad_case *c = &bad_json_cases[i];
        sb b;
        sb_init(&b);
        sb_file(&b, c->json, c->n_data);
        expect_bad(c->name, &b, c->fragment);
    }
}

/* Cases the padded-header builder cannot write. */
static void test_bad_framing(void) {
    sb b;
    sb_init(&b);
    expect_bad("empty_file", &b, "too short");
    sb_init(&b), sb_raw(&b, "\x10\0\0\0\0", 5);
    expect_bad("five_bytes", &b, "too short");
    sb_init(&b), sb_u64(&b, 0);
    expect_bad("header_len_zero", &b, "too small");
    sb_init(&b), sb_u64(&b, (uint64_t)1 << 40), sb_raw(&b, "{}", 2);
    expect_bad("header_len_huge", &b, "MiB limit");
    sb_init(&b), sb_u64(&b, ST_MAX_HEADER_BYTES + 1), sb_raw(&b, "{}", 2);
    expect_bad("header_len_over_cap", &b, "MiB limit");
    sb_init(&b), sb_u64(&b, UINT64_MAX), sb_raw(&b, "{}", 2);
    expect_bad("header_len_u64_max", &b, "MiB limit");
    sb_init(&b), sb_u64(&b, 1000), sb_raw(&b, "{}      ", 8);
    expect_bad("header_past_eof", &b, "runs past the end");
    raw_file(&b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 6, 4);
    expect_bad("misaligned_f32", &b, "not aligned to its 4-byte F32 elements");
    raw_file(&b, "{\"t\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 5, 2);
    expect_bad("misaligned_f16", &b, "not aligned");
    raw_file(&b, "{\"t\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4, 8);
    expect_bad("misaligned_f64", &b, "not aligned");
    raw_file(&b, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
             "\"b\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[1,3]}}", 0, 3);
    expect_bad("misaligned_after_u8", &b, "tensor 'b': data at file offset");
    raw_file(&b, "{\"t\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 0, 1);
    expect_bad("data_truncated", &b, "run past the end");
}

static void test_bad_generated(void) {
    sb b;
    char *text = malloc(8192);
    SW_CHECK(text != NULL, "malloc");
    if (text == NULL)
        return;
    /* 100 nested arrays inside a metadata value (json-c's cap is 64). */
    size_t n = (size_t)sprintf(text, "{\"__metadata__\":{\"k\":");
    for (int i = 0; i < 100; i++)
        text[n++] = '[';
    for (int i = 0; i < 100; i++)
        text[n++] = ']';
    memcpy(text + n, "}}", 3);
    sb_init(&b), sb_file(&b, text, 0);
    expect_bad("nested_too_deep", &b, "nesting too deep");
    /* A 1025-byte name. */
    n = (size_t)sprintf(text, "{\"");
    memset(text + n, 'x', 1025);
    n += 1025;
    sprintf(text + n, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
    sb_init(&b), sb_file(&b, text, 1);
    expect_bad("name_too_long", &b, "1025 bytes long, the limit is 1024");
    free(text);
}

/* Every proper prefix of a good file fails cleanly. */
static void test_truncations(const uint8_t *data, size_t len, size_t stride_after,
                             const char *what) {
    int bad = 0;
    for (size_t k = 0; k < len; k += k < stride_after ? 1 : 4093) {
        sw_status st = open_exact(data, k);
        if (st != SW_ERR_FORMAT || sw_last_error()[0] == '\0') {
            if (bad++ < 5)
                SW_CHECK(false, "%s cut at %zu: %s (%s)", what, k, sw_status_name(st),
                         sw_last_error());
        }
    }
    SW_CHECK(bad == 0, "%s: %d truncations not rejected", what, bad);
}

/* Byte substitutions all over a header: any outcome but a crash or a leak,
 * and an accepted file must still describe data inside the buffer. */
static void test_mutations(void) {
    static const uint8_t subst[] = {'{', '}', '[', ']', '"', '\\', ',', ':', '0', '9', '-',
                                    ' ', 'e', 0x00, 0x80, 0xff};
    sb b;
    int accepted = 0, bad = 0;
    build_sample(&b);
    size_t header_end = 8 + (size_t)(b.data[0] | b.data[1] << 8);
    for (size_t i = 8; i < header_end; i++) {
        uint8_t keep = b.data[i];
        for (size_t s = 0; s < sizeof subst; s++) {
            st_file *f;
            uint8_t *copy;
            b.data[i] = subst[s];
            sw_status st = open_copy(b.data, b.len, &f, &copy);
            if (st == SW_OK) {
                accepted++;
                for (uint64_t k = 0; k < f->n_tensors; k++)
                    bad += f->tensors[k].data < copy + f->data_offset ||
                           f->tensors[k].data + f->tensors[k].n_bytes > copy + b.len;
            } else {
                bad += st != SW_ERR_FORMAT || sw_last_error()[0] == '\0';
            }
            st_close(f);
            free(copy);
        }
        b.data[i] = keep;
    }
    SW_CHECK(bad == 0, "%d mutations misbehaved", bad);
    SW_CHECK(accepted > 0, "some mutations (in padding, names) must still open");
    sb_free(&b);
}

static void test_hostile(void) {
    test_bad_json();
    test_bad_framing();
    test_bad_generated();
    sb b;
    build_sample(&b);
    test_truncations(b.data, b.len, b.len, "sample");
    sb_free(&b);
    FILE *fp = fopen(sw_test_data("tiny/gemma1-hf/model.safetensors"), "rb");
    uint8_t *real = malloc(1 << 20);
    size_t n = fp && real ? fread(real, 1, 1 << 20, fp) : 0;
    SW_CHECK(n > 4096, "read gemma1-hf");
    if (n > 4096)
        test_truncations(real, n, 8 + 3008 + 256, "gemma1-hf");
    free(real);
    if (fp != NULL)
        fclose(fp);
    test_mutations();
}

int main(void) {
    test_sample();
    test_all_dtypes();
    test_names_and_edges();
    test_disk();
    test_hf_files();
    test_hostile();
    printf("bad cases: %zu JSON + 12 framing + 2 generated\n",
           sizeof bad_json_cases / sizeof bad_json_cases[0]);
    return sw_check_finish("test_safetensors");
}
