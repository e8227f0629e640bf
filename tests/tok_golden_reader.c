/*
 * tok_golden_reader.c — see tok_golden_reader.h.
 */
#include <stdlib.h>

#include "tok_golden_reader.h"

uint32_t rd_u32(reader *r) {
    if (r->end - r->p < 4) {
        r->bad = true;
        return 0;
    }
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}

const uint8_t *rd_bytes(reader *r, size_t n) {
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

/* A length-prefixed blob. */
const uint8_t *rd_blob(reader *r, size_t *n) {
    *n = rd_u32(r);
    return rd_bytes(r, *n);
}

/* n little-endian i32 ids into a malloc'd array (never NULL on success). */
int32_t *rd_ids(reader *r, size_t n) {
    const uint8_t *p = rd_bytes(r, n * 4);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (p == NULL || ids == NULL) {
        free(ids);
        r->bad = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)((uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                           (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24);
    return ids;
}
