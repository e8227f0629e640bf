/*
 * pjrt_pinned.c — pinned_host arrays over the engine's pinned weights
 * (pjrt_pinned.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/pjrt/pjrt_pinned.h"
#include "util/error.h"

void pjrt_pinned_init(pjrt_pinned *p, pjrt_client *c) {
    memset(p, 0, sizeof *p);
    p->client = c;
    p->usable = c->pinned_memory != NULL && c->device_memory != NULL &&
                PJRT_HAS(c->plugin->api, PJRT_Buffer_CopyToMemory);
}

sw_status pjrt_pinned_add(pjrt_pinned *p, uint8_t *ptr, uint64_t bytes) {
    for (int i = 0; i < PJRT_PINNED_BLOCKS; i++)
        if (p->blocks[i].ptr == NULL) {
            p->blocks[i] = (pjrt_pinned_block){ptr, bytes};
            return SW_OK;
        }
    return SW_OK;   /* untracked: its uploads take the plain path */
}

static bool in_block(const pjrt_pinned_block *b, const uint8_t *src, uint64_t bytes) {
    return b->ptr != NULL && src >= b->ptr && bytes <= b->bytes &&
           (uint64_t)(src - b->ptr) <= b->bytes - bytes;
}

/* Destroys a's array and waits until the plugin has let go of its bytes. */
static void release(pjrt_pinned *p, pjrt_pinned_array *a) {
    pjrt_buffer_destroy(p->client, a->arr);
    (void)pjrt_event_finish(p->client, a->released, "releasing pinned weights");
}

void pjrt_pinned_remove(pjrt_pinned *p, const uint8_t *ptr) {
    for (int i = 0; i < PJRT_PINNED_BLOCKS; i++) {
        pjrt_pinned_block *b = &p->blocks[i];
        if (b->ptr != ptr)
            continue;
        for (size_t k = 0; k < p->n_arrays;) {
            if (in_block(b, p->arrays[k].src, p->arrays[k].bytes)) {
                release(p, &p->arrays[k]);
                p->arrays[k] = p->arrays[--p->n_arrays];
            } else {
                k++;
            }
        }
        *b = (pjrt_pinned_block){0};
    }
}

/* The pinned_host array over [src, src+bytes), made on first use. */
static sw_status array_for(pjrt_pinned *p, const uint8_t *src, uint64_t bytes,
                           PJRT_Buffer **out) {
    for (size_t k = 0; k < p->n_arrays; k++)
        if (p->arrays[k].src == src && p->arrays[k].bytes == bytes) {
            *out = p->arrays[k].arr;
            return SW_OK;
        }
    if (p->n_arrays == p->cap_arrays) {
        size_t cap = p->cap_arrays ? p->cap_arrays * 2 : 64;
        pjrt_pinned_array *a = realloc(p->arrays, cap * sizeof *a);
        if (a == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "out of host memory tracking pinned arrays");
        p->arrays = a;
        p->cap_arrays = cap;
    }
    PJRT_Event *done = NULL;
    /* Zero-copy: the bytes stay valid and unchanged for the array's life
     * (the engine frees the pinned memory only after this backend let go). */
    SW_TRY(pjrt_buffer_over_host(p->client, p->client->pinned_memory, src, bytes, true, out,
                                 &done));
    p->arrays[p->n_arrays++] = (pjrt_pinned_array){src, bytes, *out, done};
    return SW_OK;
}

bool pjrt_pinned_upload(pjrt_pinned *p, const void *src, uint64_t bytes, PJRT_Buffer **out,
                        sw_status *st) {
    const uint8_t *s = src;
    bool pinned = false;
    for (int i = 0; p->usable && !pinned && i < PJRT_PINNED_BLOCKS; i++)
        pinned = in_block(&p->blocks[i], s, bytes);
    if (!pinned)
        return false;
    PJRT_Buffer *arr = NULL;
    if ((*st = array_for(p, s, bytes, &arr)) != SW_OK)
        return true;
    const PJRT_Api *api = p->client->plugin->api;
    PJRT_Buffer_CopyToMemory_Args a = {.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
                                       .buffer = arr,
                                       .dst_memory = p->client->device_memory};
    *st = pjrt_status(p->client->plugin, api->PJRT_Buffer_CopyToMemory(&a),
                      "copying pinned_host weights to the device", bytes, false);
    *out = a.dst_buffer;
    p->n_device_copies += *st == SW_OK;
    return true;
}

void pjrt_pinned_free(pjrt_pinned *p) {
    for (size_t k = 0; k < p->n_arrays; k++)
        release(p, &p->arrays[k]);
    free(p->arrays);
    memset(p, 0, sizeof *p);
}
