/*
 * safetensors_write.c — the streaming safetensors writer behind
 * safetensors_write.h.
 *
 * The header is built with json-c once every tensor is declared (it is
 * small: ~100 bytes per tensor) and then sealed; data bytes stream past.
 * Invariant: `written` counts data bytes so far and never exceeds the sum
 * of the declared sizes.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "format/safetensors_write.h"
#include "util/error.h"

typedef struct sw_entry {
    char *name;
    st_dtype dtype;
    uint32_t n_dims;
    uint64_t shape[ST_MAX_DIMS];
    uint64_t offset, n_bytes;
} sw_entry;

/* The dtypes written, by name and element size (kept here so the writer
 * does not depend on the reader's tables). */
static const char *dtype_name(st_dtype t) {
    return t == ST_F32 ? "F32" : t == ST_F16 ? "F16" : t == ST_BF16 ? "BF16"
         : t == ST_I64 ? "I64" : "?";
}

static uint64_t dtype_size(st_dtype t) { return t == ST_I64 ? 8 : t == ST_F32 ? 4 : 2; }

struct st_writer {
    sw_entry *t;
    size_t n, cap;
    uint64_t data_bytes;  /* sum of n_bytes */
    char *header;         /* JSON text padded with spaces; NULL until sealed */
    size_t header_len;
    uint64_t written;     /* data bytes streamed */
    int header_written;
};

sw_status st_writer_create(st_writer **out) {
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "st_writer_create: NULL argument");
    *out = calloc(1, sizeof **out);
    if (*out == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "safetensors writer: out of host memory");
    return SW_OK;
}

void st_writer_destroy(st_writer *w) {
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->n; i++)
        free(w->t[i].name);
    free(w->t);
    free(w->header);
    free(w);
}

sw_status st_writer_add(st_writer *w, const char *name, st_dtype dtype, uint32_t n_dims,
                        const uint64_t *shape) {
    if (w->header != NULL)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: tensor '%s' declared after the "
                         "header was built", name);
    if (dtype != ST_F32 && dtype != ST_F16 && dtype != ST_BF16 && dtype != ST_I64)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: tensor '%s': dtype %s is not "
                         "written", name, dtype_name(dtype));
    if (n_dims > ST_MAX_DIMS)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: tensor '%s' has %u dimensions",
                         name, n_dims);
    uint64_t n_bytes = dtype_size(dtype);
    for (uint32_t d = 0; d < n_dims; d++) {
        if (shape[d] != 0 && n_bytes > UINT64_MAX / 2 / shape[d])
            return sw_errorf(SW_ERR_ARG, "safetensors writer: tensor '%s' is too large", name);
        n_bytes *= shape[d];
    }
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name))
            return sw_errorf(SW_ERR_ARG, "safetensors writer: tensor '%s' declared twice",
                             name);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        sw_entry *grown = realloc(w->t, cap * sizeof *grown);
        if (grown == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "safetensors writer: out of host memory");
        w->t = grown;
        w->cap = cap;
    }
    sw_entry *e = &w->t[w->n];
    memset(e, 0, sizeof *e);
    size_t len = strlen(name) + 1;
    if ((e->name = malloc(len)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "safetensors writer: out of host memory");
    memcpy(e->name, name, len);
    e->dtype = dtype;
    e->n_dims = n_dims;
    for (uint32_t d = 0; d < n_dims; d++)
        e->shape[d] = shape[d];
    e->offset = w->data_bytes;
    e->n_bytes = n_bytes;
    w->data_bytes += n_bytes;
    w->n++;
    return SW_OK;
}

uint64_t st_writer_tensor_bytes(const st_writer *w, size_t i) {
    return i < w->n ? w->t[i].n_bytes : 0;
}

/* {"dtype":..,"shape":[..],"data_offsets":[b,e]} for entry e, or NULL. */
static json_object *entry_json(const sw_entry *e) {
    json_object *o = json_object_new_object(), *shape = json_object_new_array();
    json_object *offs = json_object_new_array();
    if (o == NULL || shape == NULL || offs == NULL)
        goto fail;
    for (uint32_t d = 0; d < e->n_dims; d++)
        if (json_object_array_add(shape, json_object_new_int64((int64_t)e->shape[d])) != 0)
            goto fail;
    if (json_object_array_add(offs, json_object_new_int64((int64_t)e->offset)) != 0 ||
        json_object_array_add(offs, json_object_new_int64((int64_t)(e->offset + e->n_bytes))))
        goto fail;
    if (json_object_object_add(o, "dtype", json_object_new_string(dtype_name(e->dtype))))
        goto fail;
    json_object_object_add(o, "shape", shape);
    shape = NULL;
    json_object_object_add(o, "data_offsets", offs);
    return o;
fail:
    json_object_put(o);
    json_object_put(shape);
    json_object_put(offs);
    return NULL;
}

/* Serializes the header once and seals the tensor list. */
static sw_status build_header(st_writer *w) {
    if (w->header != NULL)
        return SW_OK;
    sw_status st = sw_errorf(SW_ERR_OOM_HOST, "safetensors writer: out of host memory for "
                             "the header");
    json_object *root = json_object_new_object(), *meta = json_object_new_object();
    if (root == NULL || meta == NULL ||
        json_object_object_add(meta, "format", json_object_new_string("pt")) != 0) {
        json_object_put(meta);
        goto done;
    }
    json_object_object_add(root, "__metadata__", meta);
    for (size_t i = 0; i < w->n; i++) {
        json_object *e = entry_json(&w->t[i]);
        if (e == NULL || json_object_object_add(root, w->t[i].name, e) != 0) {
            json_object_put(e);
            goto done;
        }
    }
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (text == NULL)
        goto done;
    size_t padded = (len + 7) / 8 * 8;
    if ((w->header = malloc(padded)) == NULL)
        goto done;
    memcpy(w->header, text, len);
    memset(w->header + len, ' ', padded - len);
    w->header_len = padded;
    sw_error_clear();
    st = SW_OK;
done:
    json_object_put(root);
    return st;
}

sw_status st_writer_file_bytes(st_writer *w, uint64_t *out) {
    sw_status st = build_header(w);
    if (st == SW_OK)
        *out = 8 + (uint64_t)w->header_len + w->data_bytes;
    return st;
}

sw_status st_writer_write_header(st_writer *w, const byte_sink *sink) {
    uint8_t len[8];
    sw_status st = build_header(w);
    if (st != SW_OK)
        return st;
    if (w->header_written)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: header written twice");
    for (int k = 0; k < 8; k++)
        len[k] = (uint8_t)((uint64_t)w->header_len >> (8 * k));
    if ((st = sink->write(sink->ctx, len, sizeof len)) != SW_OK ||
        (st = sink->write(sink->ctx, w->header, w->header_len)) != SW_OK)
        return st;
    w->header_written = 1;
    return SW_OK;
}

sw_status st_writer_write_data(st_writer *w, const byte_sink *sink, const void *data,
                               size_t n) {
    if (!w->header_written)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: data before the header");
    if (n > w->data_bytes - w->written)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: %zu bytes beyond the declared %llu",
                         n, (unsigned long long)w->data_bytes);
    sw_status st = n ? sink->write(sink->ctx, data, n) : SW_OK;
    if (st == SW_OK)
        w->written += n;
    return st;
}

sw_status st_writer_finish(st_writer *w) {
    if (!w->header_written || w->written != w->data_bytes)
        return sw_errorf(SW_ERR_ARG, "safetensors writer: %llu of %llu data bytes written",
                         (unsigned long long)w->written, (unsigned long long)w->data_bytes);
    return SW_OK;
}
