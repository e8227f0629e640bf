/*
 * gguf_write.c — the streaming GGUF writer behind gguf_write.h.
 *
 * Header bytes (metadata, then tensor infos) accumulate in two growable
 * buffers; tensor data never passes through memory owned here. Invariant:
 * written (bytes of data streamed so far) always lies inside tensor `cur`
 * or at its end, so padding is emitted exactly when a tensor completes.
 */
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "format/gguf_write.h"
#include "quant/types.h"
#include "util/error.h"

#define GW_ALIGN GGUF_DEFAULT_ALIGNMENT

typedef struct gw_buf {
    uint8_t *data;
    size_t len, cap;
} gw_buf;

typedef struct gw_tensor {
    char *name;
    uint64_t offset;  /* in the data section */
    uint64_t n_bytes;
} gw_tensor;

struct gguf_writer {
    gw_buf kv;             /* key/value pairs, serialized */
    gw_buf info;           /* tensor infos, serialized */
    uint64_t n_kv;
    char **keys;           /* for the duplicate check */
    gw_tensor *tensors;
    size_t n_tensors, cap_tensors;
    uint64_t data_bytes;   /* next tensor's offset (aligned) */
    uint32_t arr_type;     /* element type of the open array */
    uint64_t arr_left;     /* elements still expected; 0: none open */
    bool header_done;
    size_t cur;            /* tensor being streamed */
    uint64_t cur_done;     /* its bytes written so far */
};

static uint64_t align_up(uint64_t x) { return (x + GW_ALIGN - 1) / GW_ALIGN * GW_ALIGN; }

static sw_status buf_put(gw_buf *b, const void *p, size_t n) {
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2)
                return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: header too large");
            cap *= 2;
        }
        uint8_t *grown = realloc(b->data, cap);
        if (grown == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory for the header "
                             "(%zu bytes)", cap);
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return SW_OK;
}

static sw_status buf_le(gw_buf *b, uint64_t v, size_t n) {
    uint8_t bytes[8];
    for (size_t k = 0; k < n; k++)
        bytes[k] = (uint8_t)(v >> (8 * k));
    return buf_put(b, bytes, n);
}

static sw_status buf_str(gw_buf *b, const char *s, size_t len) {
    sw_status st = buf_le(b, len, 8);
    return st != SW_OK ? st : buf_put(b, s, len);
}

sw_status gguf_writer_create(gguf_writer **out) {
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "gguf_writer_create: NULL argument");
    *out = calloc(1, sizeof **out);
    if (*out == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory");
    return SW_OK;
}

void gguf_writer_destroy(gguf_writer *w) {
    if (w == NULL)
        return;
    for (uint64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    for (size_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name);
    free(w->keys);
    free(w->tensors);
    free(w->kv.data);
    free(w->info.data);
    free(w);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* Checks the writer accepts a new key or tensor (no array left open, no
 * header written yet). */
static sw_status check_open(const gguf_writer *w, const char *what) {
    if (w->header_done)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: %s after the header was written", what);
    if (w->arr_left != 0)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: %s while an array still expects %llu "
                         "elements", what, (unsigned long long)w->arr_left);
    return SW_OK;
}

/* Starts key `key` of value type vt: duplicate check, key string, type. */
static sw_status kv_begin(gguf_writer *w, const char *key, uint32_t vt) {
    sw_status st = check_open(w, "a key");
    if (st != SW_OK)
        return st;
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key))
            return sw_errorf(SW_ERR_ARG, "GGUF writer: key '%s' written twice", key);
    char **keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    if (keys == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory");
    w->keys = keys;
    if ((keys[w->n_kv] = dup_str(key)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory");
    w->n_kv++;
    if ((st = buf_str(&w->kv, key, strlen(key))) != SW_OK)
        return st;
    return buf_le(&w->kv, vt, 4);
}

sw_status gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v) {
    sw_status st = kv_begin(w, key, GGUF_VT_U32);
    return st != SW_OK ? st : buf_le(&w->kv, v, 4);
}

sw_status gguf_writer_kv_f32(gguf_writer *w, const char *key, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    sw_status st = kv_begin(w, key, GGUF_VT_F32);
    return st != SW_OK ? st : buf_le(&w->kv, bits, 4);
}

sw_status gguf_writer_kv_bool(gguf_writer *w, const char *key, bool v) {
    sw_status st = kv_begin(w, key, GGUF_VT_BOOL);
    return st != SW_OK ? st : buf_le(&w->kv, v ? 1 : 0, 1);
}

sw_status gguf_writer_kv_str(gguf_writer *w, const char *key, const char *s) {
    sw_status st = kv_begin(w, key, GGUF_VT_STRING);
    return st != SW_OK ? st : buf_str(&w->kv, s, strlen(s));
}

sw_status gguf_writer_array_begin(gguf_writer *w, const char *key, uint32_t elem_type,
                                  uint64_t n) {
    if (elem_type != GGUF_VT_STRING && elem_type != GGUF_VT_F32 && elem_type != GGUF_VT_I32 &&
        elem_type != GGUF_VT_BOOL)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: arrays of %s are not supported",
                         gguf_vtype_name(elem_type));
    sw_status st = kv_begin(w, key, GGUF_VT_ARRAY);
    if (st == SW_OK)
        st = buf_le(&w->kv, elem_type, 4);
    if (st == SW_OK)
        st = buf_le(&w->kv, n, 8);
    if (st == SW_OK) {
        w->arr_type = elem_type;
        w->arr_left = n;
    }
    return st;
}

static sw_status array_elem(gguf_writer *w, uint32_t type) {
    if (w->arr_left == 0 || w->arr_type != type)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: no open array of %s", gguf_vtype_name(type));
    w->arr_left--;
    return SW_OK;
}

sw_status gguf_writer_array_str(gguf_writer *w, const char *s, size_t len) {
    sw_status st = array_elem(w, GGUF_VT_STRING);
    return st != SW_OK ? st : buf_str(&w->kv, s, len);
}

sw_status gguf_writer_array_f32(gguf_writer *w, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    sw_status st = array_elem(w, GGUF_VT_F32);
    return st != SW_OK ? st : buf_le(&w->kv, bits, 4);
}

sw_status gguf_writer_array_i32(gguf_writer *w, int32_t v) {
    sw_status st = array_elem(w, GGUF_VT_I32);
    return st != SW_OK ? st : buf_le(&w->kv, (uint32_t)v, 4);
}

sw_status gguf_writer_array_bool(gguf_writer *w, bool v) {
    sw_status st = array_elem(w, GGUF_VT_BOOL);
    return st != SW_OK ? st : buf_le(&w->kv, v ? 1 : 0, 1);
}

/* Bytes of a tensor of shape ne[0..n_dims) and `type` into *out. */
static sw_status tensor_size(const char *name, uint32_t n_dims, const uint64_t *ne,
                             uint32_t type, uint64_t *out) {
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s' has %u dimensions", name, n_dims);
    uint64_t row = 0, rows = 1;
    if (!type_row_bytes(type, ne[0], &row) || ne[0] == 0)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s': a row of %llu elements does "
                         "not fit type %s", name, (unsigned long long)ne[0], type_name(type));
    for (uint32_t d = 1; d < n_dims; d++) {
        if (ne[d] == 0 || rows > UINT64_MAX / ne[d])
            return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s' has a bad shape", name);
        rows *= ne[d];
    }
    if (rows > UINT64_MAX / row)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s' is too large", name);
    *out = row * rows;
    return SW_OK;
}

sw_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t n_dims,
                                 const uint64_t *ne, uint32_t type) {
    uint64_t n_bytes = 0;
    sw_status st = check_open(w, "a tensor");
    if (st != SW_OK || (st = tensor_size(name, n_dims, ne, type, &n_bytes)) != SW_OK)
        return st;
    for (size_t i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name))
            return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s' declared twice", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        gw_tensor *grown = realloc(w->tensors, cap * sizeof *grown);
        if (grown == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory");
        w->tensors = grown;
        w->cap_tensors = cap;
    }
    gw_tensor *t = &w->tensors[w->n_tensors];
    if ((t->name = dup_str(name)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "GGUF writer: out of host memory");
    t->offset = w->data_bytes;
    t->n_bytes = n_bytes;
    w->n_tensors++;
    w->data_bytes = align_up(t->offset + n_bytes);
    if ((st = buf_str(&w->info, name, strlen(name))) != SW_OK ||
        (st = buf_le(&w->info, n_dims, 4)) != SW_OK)
        return st;
    for (uint32_t d = 0; d < n_dims; d++)
        if ((st = buf_le(&w->info, ne[d], 8)) != SW_OK)
            return st;
    if ((st = buf_le(&w->info, type, 4)) != SW_OK)
        return st;
    return buf_le(&w->info, t->offset, 8);
}

uint64_t gguf_writer_tensor_bytes(const gguf_writer *w, size_t i) {
    return i < w->n_tensors ? w->tensors[i].n_bytes : 0;
}

/* Bytes before the data section: 24-byte preamble, keys, infos. */
static uint64_t header_bytes(const gguf_writer *w) {
    return 4 + 4 + 8 + 8 + (uint64_t)w->kv.len + (uint64_t)w->info.len;
}

uint64_t gguf_writer_file_bytes(const gguf_writer *w) {
    return align_up(header_bytes(w)) + w->data_bytes;
}

static sw_status write_zeros(const byte_sink *sink, uint64_t n) {
    static const uint8_t zeros[GW_ALIGN];
    return n == 0 ? SW_OK : sink->write(sink->ctx, zeros, (size_t)n);
}

sw_status gguf_writer_write_header(gguf_writer *w, const byte_sink *sink) {
    sw_status st = check_open(w, "the header");
    if (st != SW_OK)
        return st;
    gw_buf pre = {0};
    if ((st = buf_put(&pre, "GGUF", 4)) != SW_OK || (st = buf_le(&pre, 3, 4)) != SW_OK ||
        (st = buf_le(&pre, w->n_tensors, 8)) != SW_OK || (st = buf_le(&pre, w->n_kv, 8)) != SW_OK)
        goto done;
    if ((st = sink->write(sink->ctx, pre.data, pre.len)) != SW_OK ||
        (w->kv.len && (st = sink->write(sink->ctx, w->kv.data, w->kv.len)) != SW_OK) ||
        (w->info.len && (st = sink->write(sink->ctx, w->info.data, w->info.len)) != SW_OK) ||
        (st = write_zeros(sink, align_up(header_bytes(w)) - header_bytes(w))) != SW_OK)
        goto done;
    w->header_done = true;
    w->cur = 0;
    w->cur_done = 0;
done:
    free(pre.data);
    return st;
}

/* Pads after tensor `cur` and moves on to the next one. */
static sw_status next_tensor(gguf_writer *w, const byte_sink *sink) {
    const gw_tensor *t = &w->tensors[w->cur];
    sw_status st = write_zeros(sink, align_up(t->offset + t->n_bytes) - (t->offset + t->n_bytes));
    w->cur++;
    w->cur_done = 0;
    return st;
}

sw_status gguf_writer_write_data(gguf_writer *w, const byte_sink *sink, const void *data,
                                 size_t n) {
    const uint8_t *p = data;
    sw_status st;
    if (!w->header_done)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor data before the header");
    while (n > 0) {
        if (w->cur >= w->n_tensors)
            return sw_errorf(SW_ERR_ARG, "GGUF writer: %zu bytes beyond the last tensor", n);
        const gw_tensor *t = &w->tensors[w->cur];
        uint64_t left = t->n_bytes - w->cur_done;
        size_t take = n < left ? n : (size_t)left;
        if ((st = sink->write(sink->ctx, p, take)) != SW_OK)
            return st;
        p += take;
        n -= take;
        w->cur_done += take;
        if (w->cur_done == t->n_bytes && (st = next_tensor(w, sink)) != SW_OK)
            return st;
    }
    return SW_OK;
}

sw_status gguf_writer_finish(gguf_writer *w, const byte_sink *sink) {
    (void)sink; /* padding was written as each tensor completed */
    if (!w->header_done)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: finished before the header was written");
    /* Zero-byte tensors cannot occur (tensor_size rejects empty shapes). */
    if (w->cur < w->n_tensors)
        return sw_errorf(SW_ERR_ARG, "GGUF writer: tensor '%s' has %llu of %llu bytes written",
                         w->tensors[w->cur].name, (unsigned long long)w->cur_done,
                         (unsigned long long)w->tensors[w->cur].n_bytes);
    return SW_OK;
}
