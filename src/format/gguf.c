/*
 * gguf.c — opening GGUF files (read-only mmap, or a caller's buffer), the
 * arena behind the parsed tables, lookups and typed getters.
 *
 * Validation lives in gguf_parse.c; everything here runs on a file that
 * already passed it, except the path checks in map_path(), which turn
 * "not a file" cases (missing, directory, FIFO, /dev/null) into SW_ERR_IO
 * before anything is read. Lookups are binary searches over the sorted
 * indexes the parser built.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/gguf_internal.h"
#include "util/error.h"
#include "util/mapfile.h"

/* Small allocations share chunks of this size; larger ones get their own. */
#define GGUF_CHUNK_BYTES (64 * 1024)

struct gguf_chunk {
    gguf_chunk *next;
    size_t used, cap;
    max_align_t mem[]; /* cap bytes */
};

/* ---- value types ------------------------------------------------------------- */

size_t gguf_vtype_size(uint32_t t) {
    static const uint8_t sizes[GGUF_VT_COUNT] = {
        [GGUF_VT_U8] = 1, [GGUF_VT_I8] = 1, [GGUF_VT_U16] = 2, [GGUF_VT_I16] = 2,
        [GGUF_VT_U32] = 4, [GGUF_VT_I32] = 4, [GGUF_VT_F32] = 4, [GGUF_VT_BOOL] = 1,
        [GGUF_VT_U64] = 8, [GGUF_VT_I64] = 8, [GGUF_VT_F64] = 8,
    };
    return t < GGUF_VT_COUNT ? sizes[t] : 0;
}

const char *gguf_vtype_name(uint32_t t) {
    static const char *const names[GGUF_VT_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32",
        "bool", "string", "array", "u64", "i64", "f64",
    };
    return t < GGUF_VT_COUNT ? names[t] : "unknown";
}

static uint64_t load_le(const uint8_t *b, size_t n) {
    uint64_t x = 0;
    for (size_t k = 0; k < n; k++)
        x |= (uint64_t)b[k] << (8 * k);
    return x;
}

/* Two's complement sign extension without implementation-defined casts. */
static int64_t sign_extend(uint64_t x, unsigned bits) {
    if (bits < 64 && (x >> (bits - 1)) & 1)
        return -(int64_t)((~x & ((UINT64_C(1) << bits) - 1)) + 1);
    if (bits == 64 && x > (uint64_t)INT64_MAX)
        return -(int64_t)(~x) - 1;
    return (int64_t)x;
}

void gguf_decode_scalar(uint32_t t, const uint8_t *b, gguf_value *v) {
    size_t n = gguf_vtype_size(t);
    uint64_t x = load_le(b, n);
    v->type = t;
    switch (t) {
    case GGUF_VT_I8: case GGUF_VT_I16: case GGUF_VT_I32: case GGUF_VT_I64:
        v->i = sign_extend(x, (unsigned)(8 * n));
        break;
    case GGUF_VT_F32: {
        uint32_t bits = (uint32_t)x;
        float f;
        memcpy(&f, &bits, sizeof f);
        v->f = f;
        break;
    }
    case GGUF_VT_F64:
        memcpy(&v->f, &x, sizeof v->f);
        break;
    default:
        v->u = x;
        break;
    }
}

/* ---- arena ------------------------------------------------------------------- */

void *gguf_arena_alloc(gguf_priv *priv, uint64_t n, size_t elem_bytes) {
    const size_t align = alignof(max_align_t);
    if (elem_bytes != 0 && n > (SIZE_MAX - align - sizeof(gguf_chunk)) / elem_bytes)
        return NULL;
    size_t bytes = ((size_t)n * elem_bytes + align - 1) / align * align;
    gguf_chunk *c = priv->chunks;
    if (c == NULL || c->cap - c->used < bytes) {
        size_t cap = bytes > GGUF_CHUNK_BYTES ? bytes : GGUF_CHUNK_BYTES;
        /* calloc: memory is never reused, so a fresh chunk is all the
         * zeroing needed, and big blocks come lazily zeroed from the OS. */
        gguf_chunk *fresh = calloc(1, sizeof *fresh + cap);
        if (fresh == NULL)
            return NULL;
        fresh->cap = cap;
        /* A big block goes behind the current chunk, which keeps serving
         * the small allocations that follow. */
        if (c != NULL && cap > GGUF_CHUNK_BYTES) {
            fresh->next = c->next;
            c->next = fresh;
        } else {
            fresh->next = c;
            priv->chunks = fresh;
        }
        c = fresh;
    }
    void *p = (char *)c->mem + c->used;
    c->used += bytes;
    return p;
}

/* ---- open / close ------------------------------------------------------------ */

/* Builds and parses a gguf_file over data[0..size). Takes ownership of
 * `mapping` (unmapped on failure too). */
static sw_status open_over(const void *data, size_t size, void *mapping, gguf_file **out) {
    sw_status status;
    gguf_file *file = calloc(1, sizeof *file);
    gguf_priv *priv = calloc(1, sizeof *priv);
    if (file == NULL || priv == NULL) {
        free(file);
        free(priv);
        if (mapping != NULL)
            munmap(mapping, size);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening a GGUF file");
    }
    priv->mapping = mapping;
    priv->mapping_bytes = size;
    file->priv = priv;
    file->map = data;
    file->size = size;
    status = gguf_parse(file);
    if (status != SW_OK)
        goto fail;
    *out = file;
    return SW_OK;
fail:
    gguf_close(file);
    return status;
}

sw_status gguf_open(const char *path, gguf_file **out) {
    void *map;
    size_t size;
    if (out == NULL || path == NULL)
        return sw_errorf(SW_ERR_ARG, "gguf_open: NULL %s", out ? "path" : "out");
    *out = NULL;
    sw_status status = util_map_readonly(path, "not a model file", &map, &size);
    if (status != SW_OK)
        return status;
    status = open_over(map, size, map, out);
    if (status == SW_ERR_FORMAT)
        return sw_error_prefix(status, "%s", path);
    return status;
}

sw_status gguf_open_memory(const void *data, size_t size, gguf_file **out) {
    if (out == NULL || (data == NULL && size != 0))
        return sw_errorf(SW_ERR_ARG, "gguf_open_memory: NULL %s", out ? "data" : "out");
    *out = NULL;
    return open_over(data, size, NULL, out);
}

void gguf_close(gguf_file *file) {
    if (file == NULL)
        return;
    gguf_priv *priv = file->priv;
    if (priv != NULL) {
        while (priv->chunks != NULL) {
            gguf_chunk *next = priv->chunks->next;
            free(priv->chunks);
            priv->chunks = next;
        }
        if (priv->mapping != NULL)
            munmap(priv->mapping, priv->mapping_bytes);
        if (priv->release != NULL)
            priv->release(priv->release_ctx);
        free(priv);
    }
    free(file);
}

/* ---- lookups ------------------------------------------------------------------ */

const gguf_kv *gguf_find_kv(const gguf_file *file, const char *key) {
    if (file == NULL || key == NULL)
        return NULL;
    const gguf_priv *priv = file->priv;
    size_t key_len = strlen(key);
    uint64_t lo = 0, hi = priv->kv_by_key ? file->n_kv : 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const gguf_kv *kv = priv->kv_by_key[mid];
        int c = gguf_key_cmp(kv->key.ptr, (size_t)kv->key.len, key, key_len);
        if (c == 0)
            return kv;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *file, const char *name) {
    if (file == NULL || name == NULL)
        return NULL;
    const gguf_priv *priv = file->priv;
    uint64_t lo = 0, hi = priv->tensor_by_name ? file->n_tensors : 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(priv->tensor_by_name[mid]->name, name);
        if (c == 0)
            return priv->tensor_by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- typed getters -------------------------------------------------------------- */

/* The value under `key`, or SW_ERR_ARG (no message when merely absent). */
static sw_status find_value(const gguf_file *file, const char *key, const void *out,
                            const gguf_kv **kv) {
    *kv = NULL;
    if (file == NULL || key == NULL || out == NULL)
        return sw_errorf(SW_ERR_ARG, "gguf getter: NULL argument");
    *kv = gguf_find_kv(file, key);
    return *kv ? SW_OK : SW_ERR_ARG;
}

static sw_status wrong_type(const gguf_kv *kv, const char *key, const char *expected) {
    return sw_errorf(SW_ERR_FORMAT, "at offset 0x%" PRIx64 ": key '%s' has type %s, "
                     "expected %s", kv->file_offset, key, gguf_vtype_name(kv->value.type),
                     expected);
}

sw_status gguf_get_uint(const gguf_file *file, const char *key, uint64_t *out) {
    const gguf_kv *kv;
    sw_status status = find_value(file, key, out, &kv);
    if (status != SW_OK)
        return status;
    switch (kv->value.type) {
    case GGUF_VT_U8: case GGUF_VT_U16: case GGUF_VT_U32: case GGUF_VT_U64:
        *out = kv->value.u;
        return SW_OK;
    case GGUF_VT_I8: case GGUF_VT_I16: case GGUF_VT_I32: case GGUF_VT_I64:
        if (kv->value.i < 0)
            return sw_errorf(SW_ERR_FORMAT, "at offset 0x%" PRIx64 ": key '%s' is %" PRId64
                             ", expected a non-negative integer", kv->file_offset, key,
                             kv->value.i);
        *out = (uint64_t)kv->value.i;
        return SW_OK;
    default:
        return wrong_type(kv, key, "an unsigned integer");
    }
}

sw_status gguf_get_float(const gguf_file *file, const char *key, double *out) {
    const gguf_kv *kv;
    sw_status status = find_value(file, key, out, &kv);
    if (status != SW_OK)
        return status;
    if (kv->value.type != GGUF_VT_F32 && kv->value.type != GGUF_VT_F64)
        return wrong_type(kv, key, "f32 or f64");
    *out = kv->value.f;
    return SW_OK;
}

sw_status gguf_get_bool(const gguf_file *file, const char *key, bool *out) {
    const gguf_kv *kv;
    sw_status status = find_value(file, key, out, &kv);
    if (status != SW_OK)
        return status;
    if (kv->value.type != GGUF_VT_BOOL)
        return wrong_type(kv, key, "bool");
    *out = kv->value.u != 0;
    return SW_OK;
}

sw_status gguf_get_str(const gguf_file *file, const char *key, gguf_str *out) {
    const gguf_kv *kv;
    sw_status status = find_value(file, key, out, &kv);
    if (status != SW_OK)
        return status;
    if (kv->value.type != GGUF_VT_STRING)
        return wrong_type(kv, key, "string");
    *out = kv->value.s;
    return SW_OK;
}

sw_status gguf_get_array(const gguf_file *file, const char *key, const gguf_value **out) {
    const gguf_kv *kv;
    sw_status status = find_value(file, key, out, &kv);
    if (status != SW_OK)
        return status;
    if (kv->value.type != GGUF_VT_ARRAY)
        return wrong_type(kv, key, "array");
    *out = &kv->value;
    return SW_OK;
}

/* ---- array elements ------------------------------------------------------------- */

/* Decodes scalar element i; false for a non-scalar array or i out of range,
 * so a careless caller reads 0 instead of memory past the array. */
static bool array_elem(const gguf_value *arr, uint64_t i, gguf_value *v) {
    if (arr == NULL || arr->type != GGUF_VT_ARRAY || arr->arr.raw == NULL || i >= arr->arr.n)
        return false;
    size_t n = gguf_vtype_size(arr->arr.elem_type);
    gguf_decode_scalar(arr->arr.elem_type, arr->arr.raw + i * n, v);
    return true;
}

static bool is_signed(uint32_t t) {
    return t == GGUF_VT_I8 || t == GGUF_VT_I16 || t == GGUF_VT_I32 || t == GGUF_VT_I64;
}

static bool is_float(uint32_t t) { return t == GGUF_VT_F32 || t == GGUF_VT_F64; }

uint64_t gguf_array_uint(const gguf_value *arr, uint64_t i) {
    gguf_value v;
    if (!array_elem(arr, i, &v) || is_float(v.type))
        return 0;
    return is_signed(v.type) ? (uint64_t)v.i : v.u;
}

int64_t gguf_array_int(const gguf_value *arr, uint64_t i) {
    gguf_value v;
    if (!array_elem(arr, i, &v) || is_float(v.type))
        return 0;
    if (is_signed(v.type))
        return v.i;
    return v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.u;
}

double gguf_array_float(const gguf_value *arr, uint64_t i) {
    gguf_value v;
    if (!array_elem(arr, i, &v))
        return 0.0;
    if (is_float(v.type))
        return v.f;
    return is_signed(v.type) ? (double)v.i : (double)v.u;
}
