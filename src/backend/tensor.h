/*
 * tensor.h — a non-owning view of a weight tensor, the one type shared by
 * the model, the planner's accounting and the backends. The memory it
 * points at belongs to someone else (the file mapping, a device pool, a
 * conversion buffer); a view never frees.
 */
#ifndef SW_BACKEND_TENSOR_H
#define SW_BACKEND_TENSOR_H

#include <stdint.h>

typedef struct tensor_view {
    const char *name;   /* for messages; borrowed */
    uint32_t type;      /* ggml type id (quant/types.h) */
    uint32_t n_dims;
    uint64_t ne[4];     /* ne[0] contiguous (row length); unused dims are 1 */
    uint64_t n_bytes;
    const void *data;   /* NULL for an unbound optional tensor */
} tensor_view;

#endif
