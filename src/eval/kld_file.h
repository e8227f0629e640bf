/*
 * kld_file.h — llama.cpp's log-probability base files (.kld), which
 * llama-perplexity writes with --kl-divergence-base --save-all-logits and
 * reads with --kl-divergence-base --kl-divergence; Spillway reads and writes
 * the same bytes, so the two tools are measured against one base.
 *
 * Layout (little-endian):
 *   8 bytes   "_logits_"
 *   i32       n_ctx      chunk length
 *   i32       n_vocab
 *   i32       n_chunk
 *   i32       tokens[n_chunk * n_ctx]   the text's tokens (BOS not put in)
 *   per chunk, n_ctx - 1 - n_ctx / 2 records (logprob.h), one per scored
 *   position of its second half, in order.
 * A file is untrusted input: the header is checked against the file's size
 * before anything is allocated, every token against the vocabulary.
 */
#ifndef SW_EVAL_KLD_FILE_H
#define SW_EVAL_KLD_FILE_H

#include <stdint.h>

#include "spillway.h"

typedef struct kld_file kld_file;

/* Positions a chunk of n_ctx scores (records per chunk). */
static inline uint32_t kld_scored(uint32_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

/* Writes the header and tokens of a new base at path (replaced if there).
 * Errors: SW_ERR_ARG (sizes), SW_ERR_IO (names the path and the reason). */
sw_status kld_file_create(const char *path, uint32_t n_ctx, uint32_t n_vocab, uint32_t n_chunk,
                          const int32_t *tokens, kld_file **out);

/* Opens a base and reads its header and tokens. Errors: SW_ERR_IO,
 * SW_ERR_FORMAT (not a base, sizes that disagree with the file's length,
 * a token outside the vocabulary), SW_ERR_OOM_HOST. */
sw_status kld_file_open(const char *path, kld_file **out);

uint32_t kld_file_n_ctx(const kld_file *f);
uint32_t kld_file_n_vocab(const kld_file *f);
uint32_t kld_file_n_chunk(const kld_file *f);
/* n_chunk * n_ctx tokens; borrowed until close. */
const int32_t *kld_file_tokens(const kld_file *f);

/* The next chunk's records: kld_scored(n_ctx) of lp_record_u16(n_vocab)
 * words each. Errors: SW_ERR_IO; reading past the last chunk, SW_ERR_ARG. */
sw_status kld_file_write_chunk(kld_file *f, const uint16_t *records);
sw_status kld_file_read_chunk(kld_file *f, uint16_t *records);

/* Closes; for a file being written, reports a failed flush (SW_ERR_IO) and
 * removes the incomplete file when fewer chunks than declared were written.
 * Accepts NULL. */
sw_status kld_file_close(kld_file *f);

#endif
