/* sha256.h - SHA-256 (FIPS 180-4) for checking downloaded model files.
 *
 * Portable C11, no dependencies, no allocation. Streaming: init, then any
 * number of updates of any length (including 0), then final. A context is
 * owned by its caller and is not thread-safe; use one per thread.
 *
 *     sha256_ctx c; uint8_t d[32]; char hex[65];
 *     sha256_init(&c);
 *     sha256_update(&c, "abc", 3);
 *     sha256_final(&c, d);
 *     sha256_hex(d, hex);   // "ba7816bf..."
 */
#ifndef SW_UTIL_SHA256_H
#define SW_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

typedef struct sha256_ctx {
    uint32_t state[8];   /* running hash H0..H7 */
    uint64_t n_bytes;    /* total message length so far */
    uint8_t  block[64];  /* pending partial block */
    size_t   n_block;    /* bytes used in block, < 64 */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
/* Absorbs n bytes; data may be NULL when n == 0. */
void sha256_update(sha256_ctx *c, const void *data, size_t n);
/* Writes the 32-byte digest; the context must be re-inited to reuse it. */
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* Lower-case hex, NUL-terminated (64 chars + NUL). */
void sha256_hex(const uint8_t digest[32], char out[65]);

/* Called after each chunk with bytes hashed so far and the file size. */
typedef void (*sha256_progress_fn)(uint64_t done_bytes, uint64_t total_bytes,
                                   void *user);

/* Hashes the whole file at `path` into out. progress may be NULL.
 * Errors: SW_ERR_ARG (NULL path/out), SW_ERR_IO with a message naming the
 * path and strerror ("cannot read X: Input/output error"); errno is kept as
 * set by the failing call. */
sw_status sha256_file(const char *path, uint8_t out[32],
                      sha256_progress_fn progress, void *user);

#endif /* SW_UTIL_SHA256_H */
