/*
 * safetensors_internal.h — what safetensors.c (open, mapping, lookups) and
 * safetensors_parse.c (the validating parser) share; not an interface.
 *
 * Memory: an st_file owns its path copy, the tensor array, the metadata
 * arrays and one string pool (tensor names, metadata keys and values);
 * a failed parse leaves whatever it allocated there for st_close().
 */
#ifndef SW_FORMAT_SAFETENSORS_INTERNAL_H
#define SW_FORMAT_SAFETENSORS_INTERNAL_H

#include <stddef.h>

#include "format/safetensors.h"

typedef struct st_priv {
    void *mapping;          /* mmap'd file, NULL for st_open_memory */
    size_t mapping_bytes;
    char *strings;          /* pool behind names, meta keys and values */
} st_priv;

/* Parses and validates file->map[0..size) into *file (whose path, map, size
 * and priv are set; path names the file in messages). On failure returns
 * SW_ERR_FORMAT or SW_ERR_OOM_HOST with a message. */
sw_status st_parse(st_file *file);

#endif
