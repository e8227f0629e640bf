/*
 * bytebuf.h — a growable byte buffer, kept NUL-terminated so text in it
 * can be read as a C string.
 */
#ifndef SW_UTIL_BYTEBUF_H
#define SW_UTIL_BYTEBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sw_bytebuf {
    char *p;       /* NULL until the first byte */
    size_t len;    /* bytes held; p[len] == '\0' */
    size_t cap;
} sw_bytebuf;

/* Appends n bytes of data. False when memory is short (b unchanged). */
bool sw_bytebuf_add(sw_bytebuf *b, const void *data, size_t n);

/* Frees the bytes; b is empty again. */
void sw_bytebuf_free(sw_bytebuf *b);

#endif
