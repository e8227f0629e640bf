/*
 * tok_golden_reader.h — reading tests/data/tokenizer_golden.bin (written by
 * tools/golden/make_tokenizer_golden.py): little-endian u32 fields,
 * length-prefixed blobs and id lists, with a sticky "bad" flag instead of
 * a check at every read. Shared by the GGUF and tokenizer.json tests.
 */
#ifndef SW_TESTS_TOK_GOLDEN_READER_H
#define SW_TESTS_TOK_GOLDEN_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;                  /* set by any read past the end */
} reader;

uint32_t rd_u32(reader *r);
const uint8_t *rd_bytes(reader *r, size_t n);
/* A length-prefixed blob. */
const uint8_t *rd_blob(reader *r, size_t *n);
/* n little-endian i32 ids into a malloc'd array (never NULL on success). */
int32_t *rd_ids(reader *r, size_t n);

#endif
