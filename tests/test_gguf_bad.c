/*
 * test_gguf_bad.c — the GGUF reader on hostile input. Each case builds one
 * malformed file (gguf_build's raw layer) and expects SW_ERR_FORMAT, no
 * result, and a message that names the byte offset and the problem; paths
 * that are not model files expect SW_ERR_IO naming the path. A valid file
 * cut at every length must fail cleanly too. Leaks and over-reads are caught
 * by running this under ASan (the sanitizer build): every in-memory input is
 * copied into an exact-size heap block first.
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

/* Opens data[0..n) from an exact-size copy; returns the status. */
static sw_status open_exact(const uint8_t *data, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    gguf_file *f = (gguf_file *)&f; /* must come back NULL */
    if (copy == NULL)
        return SW_ERR_OOM_HOST;
    if (n)
        memcpy(copy, data, n);
    sw_status st = gguf_open_memory(copy, n, &f);
    if (st != SW_OK)
        SW_CHECK(f == NULL, "failed open leaves *out NULL");
    gguf_close(st == SW_OK ? f : NULL);
    free(copy);
    return st;
}

/* One named case: the file in b must be rejected as a format error whose
 * message starts with the offset and contains `fragment`. */
static void expect_bad(const char *name, gb *b, const char *fragment) {
    SW_CHECK(!b->failed, "%s: build failed", name);
    sw_status st = open_exact(b->data, b->len);
    const char *msg = sw_last_error();
    SW_CHECK(st == SW_ERR_FORMAT, "%s: got %s, want format error (%s)", name,
             sw_status_name(st), msg);
    SW_CHECK(strncmp(msg, "at offset 0x", 12) == 0, "%s: message lacks offset: %s", name,
             msg);
    SW_CHECK(strstr(msg, fragment) != NULL, "%s: message lacks '%s': %s", name, fragment,
             msg);
    if (getenv("SW_VERBOSE"))
        printf("%-28s %s\n", name, msg);
    gb_free(b);
}

/* A header with one key whose value the caller writes next. */
static void one_kv(gb *b, const char *key, uint32_t vtype) {
    gb_init(b);
    gb_header(b, 3, 0, 1);
    gb_kv_begin(b, key, vtype);
}

/* One tensor described by the arguments, followed by 4 KiB of data so that
 * only the described defect is wrong. */
static void one_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                       uint32_t type, uint64_t offset) {
    gb_init(b);
    gb_header(b, 3, 1, 0);
    gb_tensor_info(b, name, n_dims, ne, type, offset);
    gb_pad(b, 32);
    gb_fill(b, 4096, 1);
}

static void test_header(void) {
    gb b;
    gb_init(&b);
    expect_bad("empty_file", &b, "file is empty");
    gb_init(&b), gb_raw(&b, "GG", 2);
    expect_bad("two_bytes", &b, "truncated");
    gb_init(&b), gb_raw(&b, "GGML", 4), gb_u32(&b, 3), gb_u64(&b, 0), gb_u64(&b, 0);
    expect_bad("wrong_magic", &b, "magic");
    gb_init(&b), gb_raw(&b, "\x7f" "ELF", 4), gb_fill(&b, 60, 0);
    expect_bad("elf_file", &b, "not a GGUF file");
    gb_init(&b), gb_header(&b, 1, 0, 0);
    expect_bad("version_1", &b, "version 1");
    gb_init(&b), gb_header(&b, 4, 0, 0);
    expect_bad("version_4", &b, "version 4");
    gb_init(&b), gb_header(&b, 0, 0, 0);
    expect_bad("version_0", &b, "version 0");
    gb_init(&b), gb_header(&b, 0x03000000u, 0, 0);
    expect_bad("big_endian", &b, "big-endian GGUF is not supported");
    gb_init(&b), gb_raw(&b, "GGUF", 4), gb_u32(&b, 3), gb_u32(&b, 0);
    expect_bad("truncated_counts", &b, "truncated");
    gb_init(&b), gb_header(&b, 3, 0, UINT64_MAX);
    expect_bad("absurd_kv_count", &b, "metadata count");
    gb_init(&b), gb_header(&b, 3, UINT64_MAX, 0);
    expect_bad("absurd_tensor_count", &b, "tensor count");
    gb_init(&b), gb_header(&b, 3, 0, 1000), gb_fill(&b, 1000, 0);
    expect_bad("kv_count_past_end", &b, "does not fit");
}

static void test_keys(void) {
    gb b;
    one_kv(&b, "", GGUF_VT_U8), gb_u8(&b, 1);
    expect_bad("empty_key", &b, "key is empty");
    one_kv(&b, "bad\xff" "key", GGUF_VT_U8), gb_u8(&b, 1);
    expect_bad("key_invalid_utf8", &b, "not valid UTF-8");
    one_kv(&b, "new\nline", GGUF_VT_U8), gb_u8(&b, 1);
    expect_bad("key_control_char", &b, "control character");
    gb_init(&b), gb_header(&b, 3, 0, 1), gb_u64(&b, UINT64_MAX - 3), gb_fill(&b, 64, 0);
    expect_bad("key_length_absurd", &b, "truncated");
    one_kv(&b, "k", 13), gb_u64(&b, 0);
    expect_bad("unknown_value_type", &b, "unknown value type 13");
    one_kv(&b, "k", UINT32_MAX), gb_u64(&b, 0);
    expect_bad("unknown_value_type_max", &b, "unknown value type");
    gb_init(&b), gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "general.alignment", 32), gb_kv_u32(&b, "general.alignment", 64);
    expect_bad("duplicate_key", &b, "duplicate key");
    gb_init(&b), gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "b", 1), gb_kv_str(&b, "a", "x"), gb_kv_u32(&b, "b", 2);
    expect_bad("duplicate_key_apart", &b, "key 'b': duplicate key");
}

static void test_values(void) {
    gb b;
    one_kv(&b, "s", GGUF_VT_STRING), gb_str(&b, "ab\xc0\xaf"); /* overlong '/' */
    expect_bad("string_overlong_utf8", &b, "not valid UTF-8");
    one_kv(&b, "s", GGUF_VT_STRING), gb_str(&b, "\xed\xa0\x80"); /* surrogate */
    expect_bad("string_surrogate", &b, "not valid UTF-8");
    one_kv(&b, "s", GGUF_VT_STRING), gb_str(&b, "\xf4\x90\x80\x80"); /* > U+10FFFF */
    expect_bad("string_past_max_code_point", &b, "not valid UTF-8");
    one_kv(&b, "s", GGUF_VT_STRING), gb_str(&b, "cut \xe2\x9c"); /* cut sequence */
    expect_bad("string_cut_sequence", &b, "not valid UTF-8");
    one_kv(&b, "s", GGUF_VT_STRING), gb_u64(&b, 1u << 20), gb_raw(&b, "abc", 3);
    expect_bad("string_length_past_end", &b, "truncated");
    one_kv(&b, "b", GGUF_VT_BOOL), gb_u8(&b, 2);
    expect_bad("bool_not_0_or_1", &b, "bool value 2");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, GGUF_VT_BOOL, 2), gb_u8(&b, 1);
    gb_u8(&b, 7);
    expect_bad("bool_array_element", &b, "bool array element 1");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, 13, 0);
    expect_bad("unknown_array_type", &b, "unknown array element type 13");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, GGUF_VT_U64, UINT64_MAX / 4);
    expect_bad("array_length_absurd", &b, "array length");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, GGUF_VT_STRING, 1u << 30);
    expect_bad("string_array_length_absurd", &b, "array length");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, GGUF_VT_ARRAY, UINT64_MAX);
    expect_bad("nested_array_length_absurd", &b, "array length");
    one_kv(&b, "a", GGUF_VT_ARRAY), gb_array_begin(&b, GGUF_VT_STRING, 2);
    gb_str(&b, "ok"), gb_str(&b, "\x80");
    expect_bad("string_array_bad_utf8", &b, "not valid UTF-8");
    one_kv(&b, "deep", GGUF_VT_ARRAY);
    for (int level = 0; level < GGUF_MAX_DEPTH; level++)
        gb_array_begin(&b, GGUF_VT_ARRAY, 1);
    gb_array_begin(&b, GGUF_VT_U8, 0);
    expect_bad("arrays_nested_too_deep", &b, "nested deeper");
}

static void test_alignment(void) {
    static const uint32_t bad[] = {0, 4, 12, 24, 100};
    gb b;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[48];
        snprintf(name, sizeof name, "alignment_%" PRIu32, bad[i]);
        gb_init(&b), gb_header(&b, 3, 0, 1), gb_kv_u32(&b, "general.alignment", bad[i]);
        expect_bad(name, &b, "alignment");
    }
    one_kv(&b, "general.alignment", GGUF_VT_U64), gb_u64(&b, 32);
    expect_bad("alignment_not_u32", &b, "expected u32");
    gb_init(&b), gb_header(&b, 3, 1, 1), gb_kv_u32(&b, "general.alignment", 64);
    gb_tensor_info(&b, "t", 1, (uint64_t[]){8}, SW_TYPE_F32, 32);
    gb_pad(&b, 64), gb_fill(&b, 128, 0);
    expect_bad("offset_not_aligned_custom", &b, "multiple of the alignment 64");
}

static void test_tensor_shapes(void) {
    gb b;
    uint64_t ne[5] = {32, 2, 2, 2, 2};
    one_tensor(&b, "t", 0, ne, SW_TYPE_F32, 0);
    expect_bad("n_dims_0", &b, "0 dimensions");
    one_tensor(&b, "t", 5, ne, SW_TYPE_F32, 0);
    expect_bad("n_dims_5", &b, "5 dimensions");
    one_tensor(&b, "t", 2, (uint64_t[]){32, 0}, SW_TYPE_F32, 0);
    expect_bad("dim_zero", &b, "dimension 1 is zero");
    one_tensor(&b, "t", 2, (uint64_t[]){UINT64_C(1) << 32, UINT64_C(1) << 32}, SW_TYPE_F32,
               0);
    expect_bad("element_count_overflow", &b, "overflow");
    one_tensor(&b, "t", 1, (uint64_t[]){UINT64_MAX}, SW_TYPE_F32, 0);
    expect_bad("dim_past_int64", &b, "overflow");
    one_tensor(&b, "t", 2, (uint64_t[]){UINT64_C(1) << 40, 1u << 20}, SW_TYPE_F32, 0);
    expect_bad("dims_absurd_for_file", &b, "past the end");
    one_tensor(&b, "t", 2, (uint64_t[]){UINT64_C(1) << 31, UINT64_C(1) << 31}, 27 /* I64 */,
               0);
    expect_bad("byte_size_overflow", &b, "data size overflows");
    one_tensor(&b, "t", 1, (uint64_t[]){100}, SW_TYPE_Q4_K, 0);
    expect_bad("ne0_not_block_multiple", &b, "elements per block");
    one_tensor(&b, "t", 1, (uint64_t[]){8}, 4 /* retired Q4_2 */, 0);
    expect_bad("unknown_type_retired", &b, "unknown tensor type 4");
    one_tensor(&b, "t", 1, (uint64_t[]){8}, 999, 0);
    expect_bad("unknown_type_999", &b, "unknown tensor type 999");
}

static void test_tensor_names_offsets(void) {
    gb b;
    uint64_t ne[1] = {8};
    one_tensor(&b, "", 1, ne, SW_TYPE_F32, 0);
    expect_bad("tensor_name_empty", &b, "tensor name is empty");
    one_tensor(&b, "w\xc3", 1, ne, SW_TYPE_F32, 0);
    expect_bad("tensor_name_bad_utf8", &b, "not valid UTF-8");
    one_tensor(&b, "a\tb", 1, ne, SW_TYPE_F32, 0);
    expect_bad("tensor_name_control", &b, "control character");
    one_tensor(&b, "a_tensor_name_that_is_much_longer_than_the_sixty_four_byte_limit_x", 1, ne,
               SW_TYPE_F32, 0);
    expect_bad("tensor_name_too_long", &b, "limit is 64");
    one_tensor(&b, "t", 1, ne, SW_TYPE_F32, 16);
    expect_bad("offset_not_aligned", &b, "multiple of the alignment 32");
    one_tensor(&b, "t", 1, ne, SW_TYPE_F32, 4096);
    expect_bad("data_past_end", &b, "past the end");
    one_tensor(&b, "t", 1, ne, SW_TYPE_F32, UINT64_MAX - 31);
    expect_bad("offset_huge", &b, "past the end");
    gb_init(&b), gb_header(&b, 3, 2, 0);
    gb_tensor_info(&b, "a", 1, (uint64_t[]){64}, SW_TYPE_F32, 0);
    gb_tensor_info(&b, "b", 1, (uint64_t[]){8}, SW_TYPE_F32, 224);
    gb_pad(&b, 32), gb_fill(&b, 512, 0);
    expect_bad("tensors_overlap", &b, "overlaps tensor 'a'");
    gb_init(&b), gb_header(&b, 3, 2, 0);
    gb_tensor_info(&b, "same", 1, ne, SW_TYPE_F32, 0);
    gb_tensor_info(&b, "same", 1, ne, SW_TYPE_F32, 32);
    gb_pad(&b, 32), gb_fill(&b, 64, 0);
    expect_bad("duplicate_tensor_name", &b, "duplicate tensor name");
    gb_init(&b), gb_header(&b, 3, 2, 0);
    gb_tensor_info(&b, "t", 1, ne, SW_TYPE_F32, 0);
    gb_u64(&b, 1);
    expect_bad("tensor_info_truncated", &b, "truncated");
}

/* A full valid file cut at every length must fail, cleanly, every time. */
static void test_truncation_in_memory(void) {
    for (uint32_t version = 2; version <= 3; version++) {
        gb b;
        int bad = 0;
        gb_init(&b);
        gb_sample(&b, version, 64, NULL);
        SW_CHECK(open_exact(b.data, b.len) == SW_OK, "whole sample opens");
        for (size_t cut = 0; cut < b.len; cut++) {
            sw_status st = open_exact(b.data, cut);
            const char *msg = sw_last_error();
            if (st != SW_ERR_FORMAT || strstr(msg, "offset 0x") == NULL) {
                if (bad++ < 5)
                    SW_CHECK(0, "v%" PRIu32 " cut at %zu of %zu: %s: %s", version, cut,
                             b.len, sw_status_name(st), msg);
            }
        }
        SW_CHECK(bad == 0, "v%" PRIu32 ": %d of %zu cuts misbehaved", version, bad, b.len);
        gb_free(&b);
    }
}

static int write_file(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    size_t w = n ? fwrite(data, 1, n, fp) : 0;
    return (fclose(fp) == 0 && w == n) ? 0 : -1;
}

/* Prefixes at a sample of lengths, through real files and mmap. */
static void test_truncation_files(const char *dir) {
    char path[512];
    gb b;
    gb_layout lay;
    gb_init(&b);
    gb_sample(&b, 3, 32, &lay);
    snprintf(path, sizeof path, "%s/cut.gguf", dir);
    size_t cuts[] = {1, 3, 4, 7, 8, 23, 24, 40, lay.kv_start + 5, lay.tensor_info_start,
                     lay.tensor_info_start + 9, lay.data_start - 1, lay.data_start,
                     lay.data_start + 100, b.len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        gguf_file *f = NULL;
        SW_CHECK(write_file(path, b.data, cuts[i]) == 0, "write %s", path);
        sw_status st = gguf_open(path, &f);
        SW_CHECK(st == SW_ERR_FORMAT && f == NULL, "file cut at %zu: %s", cuts[i],
                 sw_status_name(st));
        SW_CHECK(strstr(sw_last_error(), path) && strstr(sw_last_error(), "offset 0x"),
                 "message names path and offset: %s", sw_last_error());
        gguf_close(f);
    }
    unlink(path);
    gb_free(&b);
}

static void expect_io(const char *name, const char *path, const char *fragment) {
    gguf_file *f = NULL;
    sw_status st = gguf_open(path, &f);
    const char *msg = sw_last_error();
    SW_CHECK(st == SW_ERR_IO && f == NULL, "%s: got %s (%s)", name, sw_status_name(st), msg);
    SW_CHECK(strstr(msg, path) != NULL, "%s: message lacks the path: %s", name, msg);
    SW_CHECK(strstr(msg, fragment) != NULL, "%s: message lacks '%s': %s", name, fragment,
             msg);
    if (getenv("SW_VERBOSE"))
        printf("%-28s %s\n", name, msg);
    gguf_close(f);
}

static void test_paths(const char *dir) {
    char path[512];
    gguf_file *f = NULL;
    snprintf(path, sizeof path, "%s/missing.gguf", dir);
    expect_io("path_missing", path, "No such file");
    expect_io("path_directory", dir, "is a directory");
    expect_io("path_dev_null", "/dev/null", "not a regular file");
    snprintf(path, sizeof path, "%s/fifo", dir);
    if (mkfifo(path, 0600) == 0) {
        expect_io("path_fifo", path, "not a regular file");
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    SW_CHECK(write_file(path, "", 0) == 0, "write empty file");
    SW_CHECK(gguf_open(path, &f) == SW_ERR_FORMAT && f == NULL, "empty file: format error");
    SW_CHECK(strstr(sw_last_error(), "file is empty") && strstr(sw_last_error(), path),
             "empty file message: %s", sw_last_error());
    unlink(path);
    SW_CHECK(gguf_open(NULL, &f) == SW_ERR_ARG, "NULL path");
    SW_CHECK(gguf_open(path, NULL) == SW_ERR_ARG, "NULL out");
    SW_CHECK(gguf_open_memory(NULL, 4, &f) == SW_ERR_ARG, "NULL data");
    gguf_close(NULL);
}

int main(void) {
    char dir[] = "/tmp/sw_gguf_bad_XXXXXX";
    test_header();
    test_keys();
    test_values();
    test_alignment();
    test_tensor_shapes();
    test_tensor_names_offsets();
    test_truncation_in_memory();
    if (mkdtemp(dir) == NULL) {
        SW_CHECK(0, "mkdtemp failed");
    } else {
        test_truncation_files(dir);
        test_paths(dir);
        rmdir(dir);
    }
    return sw_check_finish("test_gguf_bad");
}
