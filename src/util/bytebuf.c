/*
 * bytebuf.c — the growable byte buffer of bytebuf.h: capacity doubles, so
 * appending n bytes in pieces costs O(n).
 */
#include "util/bytebuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool sw_bytebuf_add(sw_bytebuf *b, const void *data, size_t n) {
    if (n > SIZE_MAX - 1 - b->len)
        return false;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return false;
        b->p = p;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

void sw_bytebuf_free(sw_bytebuf *b) {
    free(b->p);
    *b = (sw_bytebuf){0};
}
