/*
 * kld_file.c — see kld_file.h. Integers are read and written as
 * little-endian bytes, whatever the host.
 */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */

#include "eval/kld_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/logprob.h"
#include "util/error.h"

#define MAGIC "_logits_"
#define HEADER_BYTES 20u

struct kld_file {
    FILE *f;
    char path[1024];
    uint32_t n_ctx, n_vocab, n_chunk, chunks_done;
    int32_t *tokens;
    uint16_t *io;        /* one chunk of records in file order */
    int writing;
};

uint32_t kld_file_n_ctx(const kld_file *f) { return f->n_ctx; }
uint32_t kld_file_n_vocab(const kld_file *f) { return f->n_vocab; }
uint32_t kld_file_n_chunk(const kld_file *f) { return f->n_chunk; }
const int32_t *kld_file_tokens(const kld_file *f) { return f->tokens; }

static uint64_t chunk_words(const kld_file *f) {
    return (uint64_t)kld_scored(f->n_ctx) * lp_record_u16(f->n_vocab);
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void free_file(kld_file *f) {
    if (f == NULL)
        return;
    if (f->f != NULL)
        fclose(f->f);
    free(f->tokens);
    free(f->io);
    free(f);
}

/* A file of n_ctx x n_chunk tokens and their records, with the sizes
 * checked so that none of the products overflows. */
static sw_status make(const char *path, uint32_t n_ctx, uint32_t n_vocab, uint32_t n_chunk,
                      kld_file **out) {
    if (n_ctx < 4 || n_ctx > (1u << 20) || n_vocab == 0 || n_vocab > (1u << 24) ||
        n_chunk == 0 || (uint64_t)n_chunk * n_ctx > (1u << 28))
        return sw_errorf(SW_ERR_FORMAT, "%s: a base of %u chunks of %u tokens over %u "
                         "tokens of vocabulary is outside what this reader takes", path, n_chunk,
                         n_ctx, n_vocab);
    kld_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a base file");
    snprintf(f->path, sizeof f->path, "%s", path);
    f->n_ctx = n_ctx, f->n_vocab = n_vocab, f->n_chunk = n_chunk;
    f->tokens = malloc((size_t)n_chunk * n_ctx * sizeof *f->tokens);
    f->io = malloc((size_t)chunk_words(f) * sizeof *f->io);
    if (f->tokens == NULL || f->io == NULL) {
        free_file(f);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a base of %u chunks",
                         n_chunk);
    }
    *out = f;
    return SW_OK;
}

sw_status kld_file_create(const char *path, uint32_t n_ctx, uint32_t n_vocab, uint32_t n_chunk,
                          const int32_t *tokens, kld_file **out) {
    kld_file *f = NULL;
    uint8_t head[HEADER_BYTES];
    *out = NULL;
    if (path == NULL || tokens == NULL)
        return sw_errorf(SW_ERR_ARG, "kld_file_create: NULL argument");
    sw_status st = make(path, n_ctx, n_vocab, n_chunk, &f);
    if (st != SW_OK)
        return st == SW_ERR_FORMAT ? SW_ERR_ARG : st;
    f->writing = 1;
    memcpy(f->tokens, tokens, (size_t)n_chunk * n_ctx * sizeof *tokens);
    memcpy(head, MAGIC, 8);
    put_u32(head + 8, n_ctx), put_u32(head + 12, n_vocab), put_u32(head + 16, n_chunk);
    if ((f->f = fopen(path, "wb")) == NULL) {
        st = sw_errorf(SW_ERR_IO, "cannot write the base %s: %s", path, strerror(errno));
        free_file(f);
        return st;
    }
    int ok = fwrite(head, 1, sizeof head, f->f) == sizeof head;
    for (uint64_t i = 0; ok && i < (uint64_t)n_chunk * n_ctx; i++) {
        uint8_t b[4];
        put_u32(b, (uint32_t)tokens[i]);
        ok = fwrite(b, 1, 4, f->f) == 4;
    }
    if (!ok) {
        st = sw_errorf(SW_ERR_IO, "cannot write the base %s: %s", path, strerror(errno));
        free_file(f);
        remove(path);
        return st;
    }
    *out = f;
    return SW_OK;
}

sw_status kld_file_open(const char *path, kld_file **out) {
    kld_file *f = NULL;
    uint8_t head[HEADER_BYTES];
    struct stat sb;
    *out = NULL;
    FILE *in = path ? fopen(path, "rb") : NULL;
    if (in == NULL)
        return sw_errorf(SW_ERR_IO, "cannot read the base %s: %s", path ? path : "(null)",
                         strerror(errno));
    if (fread(head, 1, sizeof head, in) != sizeof head || memcmp(head, MAGIC, 8) != 0 ||
        fstat(fileno(in), &sb) != 0) {
        fclose(in);
        return sw_errorf(SW_ERR_FORMAT, "%s is not a log-probability base (llama.cpp's "
                         "_logits_ file)", path);
    }
    sw_status st = make(path, get_u32(head + 8), get_u32(head + 12), get_u32(head + 16), &f);
    if (st != SW_OK) {
        fclose(in);
        return st;
    }
    f->f = in;
    const uint64_t want = HEADER_BYTES + 4ull * f->n_chunk * f->n_ctx +
                          2ull * chunk_words(f) * f->n_chunk;
    if ((uint64_t)sb.st_size != want) {
        free_file(f);
        return sw_errorf(SW_ERR_FORMAT, "%s: %llu bytes, but %u chunks of %u tokens over a "
                         "vocabulary of %u take %llu (truncated or not a base)", path,
                         (unsigned long long)sb.st_size, get_u32(head + 16), get_u32(head + 8),
                         get_u32(head + 12), (unsigned long long)want);
    }
    for (uint64_t i = 0; i < (uint64_t)f->n_chunk * f->n_ctx; i++) {
        uint8_t b[4];
        if (fread(b, 1, 4, in) != 4 || get_u32(b) >= f->n_vocab) {
            st = sw_errorf(SW_ERR_FORMAT, "%s: token %llu is outside the vocabulary of %u",
                           path, (unsigned long long)i, f->n_vocab);
            free_file(f);
            return st;
        }
        f->tokens[i] = (int32_t)get_u32(b);
    }
    *out = f;
    return SW_OK;
}

sw_status kld_file_write_chunk(kld_file *f, const uint16_t *records) {
    if (!f->writing || f->chunks_done == f->n_chunk)
        return sw_errorf(SW_ERR_ARG, "%s: every chunk is written", f->path);
    const uint64_t n = chunk_words(f);
    for (uint64_t i = 0; i < n; i++) { /* little-endian words */
        const uint16_t w = records[i];
        ((uint8_t *)f->io)[2 * i] = (uint8_t)w;
        ((uint8_t *)f->io)[2 * i + 1] = (uint8_t)(w >> 8);
    }
    if (fwrite(f->io, 2, (size_t)n, f->f) != n)
        return sw_errorf(SW_ERR_IO, "cannot write the base %s: %s", f->path, strerror(errno));
    f->chunks_done++;
    return SW_OK;
}

sw_status kld_file_read_chunk(kld_file *f, uint16_t *records) {
    if (f->writing || f->chunks_done == f->n_chunk)
        return sw_errorf(SW_ERR_ARG, "%s: every chunk is read", f->path);
    const uint64_t n = chunk_words(f);
    if (fread(f->io, 2, (size_t)n, f->f) != n)
        return sw_errorf(SW_ERR_IO, "%s: cannot read chunk %u: %s", f->path, f->chunks_done + 1,
                         feof(f->f) ? "the file ends early" : strerror(errno));
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *b = (const uint8_t *)f->io + 2 * i;
        records[i] = (uint16_t)(b[0] | b[1] << 8);
    }
    f->chunks_done++;
    return SW_OK;
}

sw_status kld_file_close(kld_file *f) {
    sw_status st = SW_OK;
    if (f == NULL)
        return SW_OK;
    if (f->writing) {
        int bad = fflush(f->f) != 0;
        bad |= fclose(f->f) != 0;
        f->f = NULL;
        if (bad)
            st = sw_errorf(SW_ERR_IO, "cannot write the base %s: %s", f->path, strerror(errno));
        if (bad || f->chunks_done != f->n_chunk)
            remove(f->path);
    }
    free_file(f);
    return st;
}
