/*
 * heap.h — a binary heap over an array of one element type, its order
 * given by a `before` function: SW_HEAP_DEFINE(prefix, type, before)
 * defines
 *   static void prefix_push(type *h, size_t *n, type x);   (room for *n + 1)
 *   static type prefix_pop(type *h, size_t *n);            (*n > 0)
 * where pop returns the element for which before(e, other) holds against
 * every other (ties: any). Typed code per element type, so the compiler
 * keeps the elements in registers: the tokenizer's inner loops run on it.
 */
#ifndef SW_UTIL_HEAP_H
#define SW_UTIL_HEAP_H

#include <stddef.h>

#define SW_HEAP_DEFINE(prefix, type, before)                                 \
    static void prefix##_push(type *h, size_t *n, type x) {                 \
        size_t i = (*n)++;                                                  \
        while (i > 0) {                                                     \
            size_t parent = (i - 1) / 2;                                    \
            if (!before(&x, &h[parent]))                                    \
                break;                                                      \
            h[i] = h[parent];                                               \
            i = parent;                                                     \
        }                                                                   \
        h[i] = x;                                                           \
    }                                                                       \
    static type prefix##_pop(type *h, size_t *n) {                          \
        type top = h[0], last = h[--(*n)];                                  \
        size_t i = 0;                                                       \
        for (;;) {                                                          \
            size_t c = 2 * i + 1;                                           \
            if (c >= *n)                                                    \
                break;                                                      \
            if (c + 1 < *n && before(&h[c + 1], &h[c]))                     \
                c++;                                                        \
            if (!before(&h[c], &last))                                      \
                break;                                                      \
            h[i] = h[c];                                                    \
            i = c;                                                          \
        }                                                                   \
        if (*n > 0)                                                         \
            h[i] = last;                                                    \
        return top;                                                         \
    }

#endif
