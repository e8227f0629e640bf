/*
 * gguf_mem.c — building a gguf_file in memory (gguf_mem.h). Entries grow
 * in malloc'd arrays while being added and move into the file's arena at
 * finish, so gguf_close() frees a built description like a parsed one.
 */
#include <stdlib.h>
#include <string.h>

#include "format/gguf_internal.h"
#include "format/gguf_mem.h"
#include "quant/types.h"
#include "util/error.h"

struct gguf_mem {
    gguf_file *file;          /* priv (arena, release hook) set up at create */
    gguf_kv *kv;
    uint64_t n_kv, cap_kv;
    gguf_tensor *tensors;
    uint64_t n_tensors, cap_tensors;
};

static sw_status oom(void) {
    return sw_errorf(SW_ERR_OOM_HOST, "out of host memory building a model description");
}

sw_status gguf_mem_create(gguf_mem **out) {
    gguf_mem *b = calloc(1, sizeof *b);
    gguf_file *f = calloc(1, sizeof *f);
    gguf_priv *priv = calloc(1, sizeof *priv);
    if (b == NULL || f == NULL || priv == NULL) {
        free(b);
        free(f);
        free(priv);
        return oom();
    }
    f->priv = priv;
    f->version = 3;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    b->file = f;
    *out = b;
    return SW_OK;
}

void gguf_mem_destroy(gguf_mem *b) {
    if (b == NULL)
        return;
    gguf_close(b->file); /* frees the arena and runs the release hook */
    free(b->kv);
    free(b->tensors);
    free(b);
}

/* Grows *arr (of elem_bytes entries) so that one more fits. */
static int grow(void **arr, uint64_t n, uint64_t *cap, size_t elem_bytes) {
    if (n < *cap)
        return 1;
    uint64_t ncap = *cap ? *cap * 2 : 32;
    void *na = realloc(*arr, (size_t)ncap * elem_bytes);
    if (na == NULL)
        return 0;
    *arr = na;
    *cap = ncap;
    return 1;
}

static char *arena_strdup(gguf_mem *b, const char *s, size_t len) {
    char *p = gguf_arena_alloc(b->file->priv, len + 1, 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static gguf_kv *new_kv(gguf_mem *b, const char *key, uint32_t type) {
    if (!grow((void **)&b->kv, b->n_kv, &b->cap_kv, sizeof *b->kv))
        return NULL;
    char *k = arena_strdup(b, key, strlen(key));
    if (k == NULL)
        return NULL;
    gguf_kv *kv = &b->kv[b->n_kv++];
    memset(kv, 0, sizeof *kv);
    kv->key = (gguf_str){k, strlen(key)};
    kv->value.type = type;
    kv->file_offset = b->n_kv - 1; /* order of addition, for messages */
    return kv;
}

sw_status gguf_mem_set_u32(gguf_mem *b, const char *key, uint32_t v) {
    gguf_kv *kv = new_kv(b, key, GGUF_VT_U32);
    if (kv == NULL)
        return oom();
    kv->value.u = v;
    return SW_OK;
}

sw_status gguf_mem_set_f32(gguf_mem *b, const char *key, float v) {
    gguf_kv *kv = new_kv(b, key, GGUF_VT_F32);
    if (kv == NULL)
        return oom();
    kv->value.f = v;
    return SW_OK;
}

sw_status gguf_mem_set_bool(gguf_mem *b, const char *key, bool v) {
    gguf_kv *kv = new_kv(b, key, GGUF_VT_BOOL);
    if (kv == NULL)
        return oom();
    kv->value.u = v ? 1 : 0;
    return SW_OK;
}

/* A scalar array: n elements of elem_type (elem_bytes each, little-endian
 * as the host stores them on the machines Spillway runs on) copied into
 * the arena. */
static sw_status set_array(gguf_mem *b, const char *key, uint32_t elem_type, size_t elem_bytes,
                           const void *v, uint64_t n) {
    gguf_kv *kv = new_kv(b, key, GGUF_VT_ARRAY);
    const uint64_t bytes = n * elem_bytes;
    uint8_t *raw = kv ? gguf_arena_alloc(b->file->priv, bytes > 0 ? bytes : 1, 1) : NULL;
    if (raw == NULL)
        return oom();
    memcpy(raw, v, n * elem_bytes);
    kv->value.arr.elem_type = elem_type;
    kv->value.arr.n = n;
    kv->value.arr.raw = raw;
    return SW_OK;
}

sw_status gguf_mem_set_arr_i32(gguf_mem *b, const char *key, const int32_t *v, uint64_t n) {
    return set_array(b, key, GGUF_VT_I32, sizeof *v, v, n);
}

sw_status gguf_mem_set_arr_bool(gguf_mem *b, const char *key, const bool *v, uint64_t n) {
    uint8_t bytes[1024];
    if (n > sizeof bytes)
        return sw_errorf(SW_ERR_ARG, "gguf_mem: '%s': %llu bools are more than %zu", key,
                         (unsigned long long)n, sizeof bytes);
    for (uint64_t i = 0; i < n; i++)
        bytes[i] = v[i] ? 1 : 0;
    return set_array(b, key, GGUF_VT_BOOL, 1, bytes, n);
}

sw_status gguf_mem_set_str(gguf_mem *b, const char *key, const char *v) {
    gguf_kv *kv = new_kv(b, key, GGUF_VT_STRING);
    char *s = kv ? arena_strdup(b, v, strlen(v)) : NULL;
    if (s == NULL)
        return oom();
    kv->value.s = (gguf_str){s, strlen(v)};
    return SW_OK;
}

sw_status gguf_mem_add_tensor(gguf_mem *b, const char *name, uint32_t type,
                              uint32_t n_dims, const uint64_t *ne, const void *data,
                              uint64_t file_offset) {
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return sw_errorf(SW_ERR_ARG, "tensor '%s': %u dimensions", name, n_dims);
    gguf_tensor t = {.n_dims = n_dims, .type = type, .offset = file_offset, .data = data,
                     .n_elements = 1};
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] != 0 && t.n_elements > UINT64_MAX / t.ne[d])
            return sw_errorf(SW_ERR_ARG, "tensor '%s': element count overflows", name);
        t.n_elements *= t.ne[d];
    }
    uint64_t row_bytes;
    if (!type_row_bytes(type, t.ne[0], &row_bytes) ||
        (t.n_elements && row_bytes > UINT64_MAX / (t.n_elements / t.ne[0])))
        return sw_errorf(SW_ERR_ARG, "tensor '%s': type %u (%s) cannot hold rows of %llu",
                         name, type, type_name(type), (unsigned long long)t.ne[0]);
    t.n_bytes = t.n_elements ? row_bytes * (t.n_elements / t.ne[0]) : 0;
    if (!grow((void **)&b->tensors, b->n_tensors, &b->cap_tensors, sizeof *b->tensors) ||
        (t.name = arena_strdup(b, name, strlen(name))) == NULL)
        return oom();
    b->tensors[b->n_tensors++] = t;
    return SW_OK;
}

void *gguf_mem_alloc(gguf_mem *b, uint64_t n_bytes) {
    return gguf_arena_alloc(b->file->priv, n_bytes ? n_bytes : 1, 1);
}

void gguf_mem_on_close(gguf_mem *b, void (*release)(void *ctx), void *ctx) {
    gguf_priv *priv = b->file->priv;
    priv->release = release;
    priv->release_ctx = ctx;
}

static int cmp_kv(const void *x, const void *y) {
    const gguf_kv *a = *(const gguf_kv *const *)x, *c = *(const gguf_kv *const *)y;
    return gguf_key_cmp(a->key.ptr, (size_t)a->key.len, c->key.ptr, (size_t)c->key.len);
}

static int cmp_tensor(const void *x, const void *y) {
    const gguf_tensor *a = *(const gguf_tensor *const *)x;
    const gguf_tensor *c = *(const gguf_tensor *const *)y;
    return strcmp(a->name, c->name);
}

/* Copies n entries into the arena and returns a sorted pointer index. */
static const void **move_and_index(gguf_priv *priv, void **dst, const void *src, uint64_t n,
                                   size_t elem_bytes, int (*cmp)(const void *, const void *)) {
    *dst = gguf_arena_alloc(priv, n ? n : 1, elem_bytes);
    const void **index = gguf_arena_alloc(priv, n ? n : 1, sizeof *index);
    if (*dst == NULL || index == NULL)
        return NULL;
    if (n)
        memcpy(*dst, src, (size_t)n * elem_bytes);
    for (uint64_t i = 0; i < n; i++)
        index[i] = (const char *)*dst + i * elem_bytes;
    qsort(index, (size_t)n, sizeof *index, cmp);
    return index;
}

sw_status gguf_mem_finish(gguf_mem *b, uint64_t size_bytes, gguf_file **out) {
    gguf_file *f = b->file;
    gguf_priv *priv = f->priv;
    sw_status st = SW_OK;
    *out = NULL;
    priv->kv_by_key = (const gguf_kv **)move_and_index(priv, (void **)&f->kv, b->kv, b->n_kv,
                                                       sizeof *b->kv, cmp_kv);
    priv->tensor_by_name = (const gguf_tensor **)move_and_index(
        priv, (void **)&f->tensors, b->tensors, b->n_tensors, sizeof *b->tensors, cmp_tensor);
    if (priv->kv_by_key == NULL || priv->tensor_by_name == NULL) {
        st = oom();
        goto fail;
    }
    f->n_kv = b->n_kv;
    f->n_tensors = b->n_tensors;
    f->size = size_bytes;
    for (uint64_t i = 1; i < f->n_kv; i++)
        if (cmp_kv(&priv->kv_by_key[i - 1], &priv->kv_by_key[i]) == 0) {
            st = sw_errorf(SW_ERR_FORMAT, "metadata key '%s' is set twice",
                           priv->kv_by_key[i]->key.ptr);
            goto fail;
        }
    for (uint64_t i = 1; i < f->n_tensors; i++)
        if (cmp_tensor(&priv->tensor_by_name[i - 1], &priv->tensor_by_name[i]) == 0) {
            st = sw_errorf(SW_ERR_FORMAT, "tensor '%s' appears twice",
                           priv->tensor_by_name[i]->name);
            goto fail;
        }
    *out = f;
    b->file = NULL;
    gguf_mem_destroy(b);
    return SW_OK;
fail:
    gguf_mem_destroy(b);
    return st;
}
