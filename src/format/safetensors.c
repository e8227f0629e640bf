/*
 * safetensors.c — opening safetensors files (read-only mmap, or a caller's
 * buffer), closing them, lookups, and the dtype table.
 *
 * Validation lives in safetensors_parse.c; everything here runs on a file
 * that already passed it, except the path checks of util_map_readonly(),
 * which turn "not a file" cases (missing, directory, FIFO, /dev/null) into SW_ERR_IO
 * before anything is read. Lookups are binary searches over the tables the
 * parser sorted.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/safetensors_internal.h"
#include "util/error.h"
#include "util/mapfile.h"

/* ---- dtypes ------------------------------------------------------------------- */

static const char *const dtype_names[ST_DTYPE_COUNT] = {
    [ST_F32] = "F32", [ST_F16] = "F16", [ST_BF16] = "BF16", [ST_F64] = "F64",
    [ST_I64] = "I64", [ST_I32] = "I32", [ST_I16] = "I16", [ST_I8] = "I8",
    [ST_U8] = "U8", [ST_U16] = "U16", [ST_U32] = "U32", [ST_U64] = "U64",
    [ST_BOOL] = "BOOL", [ST_F8_E4M3] = "F8_E4M3", [ST_F8_E5M2] = "F8_E5M2",
};

static const uint8_t dtype_sizes[ST_DTYPE_COUNT] = {
    [ST_F32] = 4, [ST_F16] = 2, [ST_BF16] = 2, [ST_F64] = 8, [ST_I64] = 8, [ST_I32] = 4,
    [ST_I16] = 2, [ST_I8] = 1, [ST_U8] = 1, [ST_U16] = 2, [ST_U32] = 4, [ST_U64] = 8,
    [ST_BOOL] = 1, [ST_F8_E4M3] = 1, [ST_F8_E5M2] = 1,
};

const char *st_dtype_name(st_dtype t) {
    return (unsigned)t < ST_DTYPE_COUNT ? dtype_names[t] : "?";
}

size_t st_dtype_size(st_dtype t) {
    return (unsigned)t < ST_DTYPE_COUNT ? dtype_sizes[t] : 0;
}

/* ---- open / close --------------------------------------------------------------- */

/* Builds and parses an st_file over data[0..size) named `name`. Takes
 * ownership of `mapping` (unmapped on failure too). */
static sw_status open_over(const void *data, size_t size, void *mapping, const char *name,
                           st_file **out) {
    sw_status status;
    st_file *file = calloc(1, sizeof *file);
    st_priv *priv = calloc(1, sizeof *priv);
    char *path = malloc(strlen(name) + 1);
    if (file == NULL || priv == NULL || path == NULL) {
        free(file);
        free(priv);
        free(path);
        if (mapping != NULL)
            munmap(mapping, size);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory opening %s", name);
    }
    memcpy(path, name, strlen(name) + 1);
    priv->mapping = mapping;
    priv->mapping_bytes = size;
    file->priv = priv;
    file->path = path;
    file->map = data;
    file->size = size;
    status = st_parse(file);
    if (status != SW_OK)
        goto fail;
    *out = file;
    return SW_OK;
fail:
    st_close(file);
    return status;
}

sw_status st_open(const char *path, st_file **out) {
    void *map;
    size_t size;
    if (out == NULL || path == NULL)
        return sw_errorf(SW_ERR_ARG, "st_open: NULL %s", out ? "path" : "out");
    *out = NULL;
    sw_status status = util_map_readonly(
        path, "not a safetensors file (pass the model.safetensors inside it)", &map, &size);
    if (status != SW_OK)
        return status;
    return open_over(map, size, map, path, out);
}

sw_status st_open_memory(const void *data, size_t size, const char *name, st_file **out) {
    if (out == NULL || (data == NULL && size != 0))
        return sw_errorf(SW_ERR_ARG, "st_open_memory: NULL %s", out ? "data" : "out");
    *out = NULL;
    if ((uintptr_t)data % 8 != 0)
        return sw_errorf(SW_ERR_ARG, "st_open_memory: the buffer must be 8-byte aligned "
                         "so that tensor data is aligned");
    return open_over(data, size, NULL, name ? name : "<memory>", out);
}

void st_close(st_file *f) {
    if (f == NULL)
        return;
    st_priv *priv = f->priv;
    if (priv != NULL) {
        if (priv->mapping != NULL)
            munmap(priv->mapping, priv->mapping_bytes);
        free(priv->strings);
        free(priv);
    }
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    free(f->path);
    free(f);
}

/* ---- lookups ------------------------------------------------------------------- */

const st_tensor *st_find(const st_file *f, const char *name) {
    if (f == NULL || name == NULL)
        return NULL;
    uint64_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[mid].name, name);
        if (c == 0)
            return &f->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *st_meta(const st_file *f, const char *key) {
    if (f == NULL || key == NULL)
        return NULL;
    uint64_t lo = 0, hi = f->n_meta;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->meta_keys[mid], key);
        if (c == 0)
            return f->meta_values[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
