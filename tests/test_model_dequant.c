/*
 * test_model_dequant.c — every tensor of the real default model (Gemma 3
 * 270M Q4_K_M), dequantized through the public API, against the gguf
 * Python package: tests/data/model_tensor_digests.tsv holds the sha256 of
 * each tensor's little-endian f32 values as gguf.quants.dequantize gives
 * them (tools/golden/make_model_digests.py).
 *
 * Needs the model at sw_test_default_model(); without it the test fails and
 * says to run `spillway fetch` (CI fetches first). One buffer the size of
 * the largest tensor (token_embd, 671 MB of f32) is reused for all.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "util/sha256.h"
#include "util/clock.h"

#define MODEL_SHA256 "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
#define MAX_ROWS 1024

typedef struct digest_row {
    char name[128];
    char type[16];
    uint64_t n_elements;
    char sha[65];
} digest_row;

/* Reads the tsv's data lines into rows; returns the count, or -1. */
static int read_digests(const char *path, digest_row *rows, int cap) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (n == cap) {
            n = -1;
            break;
        }
        digest_row *r = &rows[n];
        if (sscanf(line, "%127[^\t]\t%15[^\t]\t%" SCNu64 "\t%64s", r->name, r->type,
                   &r->n_elements, r->sha) != 4) {
            fprintf(stderr, "%s: bad line: %s", path, line);
            n = -1;
            break;
        }
        n++;
    }
    fclose(f);
    return n;
}

/* sha256 of n floats as little-endian bytes (byte-swapped on big-endian). */
static void hash_f32_le(const float *x, uint64_t n, char hex[65]) {
    const uint32_t one = 1;
    uint8_t le_host, digest[32], chunk[4096];
    memcpy(&le_host, &one, 1);
    sha256_ctx c;
    sha256_init(&c);
    if (le_host) {
        sha256_update(&c, x, (size_t)(n * sizeof *x));
    } else {
        for (uint64_t i = 0; i < n;) {
            size_t k = 0;
            for (; k < sizeof chunk && i < n; i++, k += 4) {
                uint32_t u;
                memcpy(&u, &x[i], 4);
                for (int b = 0; b < 4; b++)
                    chunk[k + b] = (uint8_t)(u >> (8 * b));
            }
            sha256_update(&c, chunk, k);
        }
    }
    sha256_final(&c, digest);
    sha256_hex(digest, hex);
}

/* Checks the model file is the one the digests were made from. */
static int check_model_file(const char *path) {
    uint8_t digest[32];
    char hex[65];
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (f == NULL) {
        SW_CHECK(0, "default model not found at '%s': run `spillway fetch` first", path);
        return 0;
    }
    fclose(f);
    SW_CHECK_OK(sha256_file(path, digest, NULL, NULL));
    sha256_hex(digest, hex);
    SW_CHECK(strcmp(hex, MODEL_SHA256) == 0,
             "%s has sha256 %s, digests are for %s: run `spillway fetch`", path, hex,
             MODEL_SHA256);
    return strcmp(hex, MODEL_SHA256) == 0;
}

/* Dequantizes tensor i into buf and compares it with its digest row. */
static void check_tensor(sw_model *m, size_t i, const digest_row *want, float *buf) {
    sw_tensor_info info;
    char hex[65];
    SW_CHECK_OK(sw_model_tensor_at(m, i, &info));
    SW_CHECK(strcmp(info.name, want->name) == 0 && strcmp(info.type_name, want->type) == 0 &&
                 info.n_elements == want->n_elements,
             "tensor %zu: %s %s %" PRIu64 ", digests say %s %s %" PRIu64, i, info.name,
             info.type_name, info.n_elements, want->name, want->type, want->n_elements);
    if (info.n_elements != want->n_elements)
        return;
    sw_status st = sw_model_tensor_to_f32(m, i, buf);
    SW_CHECK(st == SW_OK, "tensor %zu: %s", i, sw_last_error());
    if (st != SW_OK)
        return;
    hash_f32_le(buf, info.n_elements, hex);
    SW_CHECK(strcmp(hex, want->sha) == 0, "tensor '%s' (%s, %" PRIu64 " elements): f32 sha256 %s,"
             " gguf gives %s", info.name, info.type_name, info.n_elements, hex, want->sha);
}

int main(void) {
    static digest_row rows[MAX_ROWS];
    const char *tsv = sw_test_data("model_tensor_digests.tsv");
    int n_rows = read_digests(tsv, rows, MAX_ROWS);
    SW_CHECK(n_rows == 236, "%s: %d digest rows, want 236", tsv, n_rows);
    const char *path = sw_test_default_model();
    sw_model *m = NULL;
    float *buf = NULL;
    if (n_rows <= 0 || !check_model_file(path))
        goto done;
    double t0 = sw_clock_s();
    SW_CHECK_OK(sw_model_open(path, &m));
    if (m == NULL)
        goto done;
    size_t n = sw_model_tensor_count(m);
    SW_CHECK(n == (size_t)n_rows, "model has %zu tensors, digests list %d", n, n_rows);
    uint64_t max_elems = 0;
    for (int i = 0; i < n_rows; i++)
        max_elems = rows[i].n_elements > max_elems ? rows[i].n_elements : max_elems;
    buf = malloc((size_t)max_elems * sizeof *buf);
    SW_CHECK(buf != NULL, "cannot allocate %" PRIu64 " floats", max_elems);
    for (size_t i = 0; buf != NULL && i < n && i < (size_t)n_rows; i++)
        check_tensor(m, i, &rows[i], buf);
    printf("dequantized and hashed %zu tensors in %.2f s\n", n, sw_clock_s() - t0);
done:
    free(buf);
    sw_model_close(m);
    return sw_check_finish("test_model_dequant");
}
