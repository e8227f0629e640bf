/*
 * ring.c — streamed layers: K device slots cycle through the streamed
 * layers in forward order. While streamed layer number `seq` computes in
 * slot seq % K, the copies of the next K - 1 streamed layers are already
 * queued (the prefetcher runs K - 1 ahead); when it finishes, its slot is
 * refilled with the streamed layer K further on, wrapping into the next
 * forward pass, so decode streams continuously. With no more streamed
 * layers than slots, each slot keeps its layer and nothing is re-copied.
 *
 * Also the layer_source the forward pass asks for each layer's weights.
 */
#include <stdlib.h>

#include "engine/engine_internal.h"
#include "util/error.h"

static bool ring_cycles(const engine_ring *r) { return r->n_streamed > r->n_slots; }

static uint32_t slot_of(const engine_ring *r, uint64_t seq) {
    return ring_cycles(r) ? (uint32_t)(seq % r->n_slots) : (uint32_t)(seq % r->n_streamed);
}

/* Queues streamed layer number `seq` (over all passes) into its slot. */
static sw_status ring_fill(sw_engine *e, uint64_t seq) {
    engine_ring *r = &e->ring;
    uint32_t slot = slot_of(r, seq);
    uint32_t il = r->streamed[seq % r->n_streamed];
    const layer_pack *p = &e->packs[il];
    r->holds[slot] = (int32_t)il;
    for (uint32_t i = 0; i < p->n_items; i++) {
        sw_status st = e->device->vt->copy_async(
            e->device, (char *)r->slot[slot] + p->items[i].offset, p->items[i].src,
            p->items[i].bytes, i + 1 == p->n_items ? r->ready[slot] : NULL);
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

sw_status ring_start(sw_engine *e) {
    engine_ring *r = &e->ring;
    const plan *pl = e->plan;
    sw_status st;
    r->n_streamed = 0;
    r->seq = 0;
    for (uint32_t il = 0; il < e->config.n_layer; il++)
        r->n_streamed += pl->layer_place[il] == PLACE_STREAMED;
    if (r->n_streamed == 0)
        return SW_OK;
    if (e->device == NULL || pl->ring_slots < 2 || pl->ring_slots > ENGINE_MAX_SLOTS)
        return sw_errorf(SW_ERR_ARG, "internal: %u streamed layers but %u ring slots",
                         r->n_streamed, pl->ring_slots);
    r->n_slots = pl->ring_slots;
    r->slot_bytes = pl->ring_slot_bytes;
    r->streamed = malloc(r->n_streamed * sizeof *r->streamed);
    if (r->streamed == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the ring");
    for (uint32_t il = 0, j = 0; il < e->config.n_layer; il++)
        if (pl->layer_place[il] == PLACE_STREAMED) {
            if (e->packs[il].total_bytes > r->slot_bytes)
                return sw_errorf(SW_ERR_ARG, "internal: layer %u needs %llu bytes, ring slots "
                                 "hold %llu", il, (unsigned long long)e->packs[il].total_bytes,
                                 (unsigned long long)r->slot_bytes);
            r->streamed[j++] = il;
        }
    for (uint32_t s = 0; s < r->n_slots; s++) {
        r->holds[s] = -1;
        if (r->slot[s] == NULL)
            return sw_errorf(SW_ERR_ARG, "internal: ring slot %u was not allocated", s);
        if ((st = e->device->vt->event_create(e->device, &r->ready[s])) != SW_OK)
            return st;
    }
    uint32_t first = r->n_slots < r->n_streamed ? r->n_slots : r->n_streamed;
    for (uint64_t seq = 0; seq < first; seq++)
        if ((st = ring_fill(e, seq)) != SW_OK)
            return st;
    return SW_OK;
}

sw_status ring_acquire(void *user, uint32_t il, const layer_weights **w, int *side) {
    sw_engine *e = user;
    engine_ring *r = &e->ring;
    switch (e->plan->layer_place[il]) {
    case PLACE_RESIDENT:
        *w = &e->dev_layers[il];
        *side = SIDE_DEVICE;
        return SW_OK;
    case PLACE_STREAMED: {
        if (r->fill_error != SW_OK) /* a refill failed: its event never fires */
            return r->fill_error;
        uint32_t slot = slot_of(r, r->seq);
        if (r->holds[slot] != (int32_t)il)
            return sw_errorf(SW_ERR_ARG, "internal: ring slot %u holds layer %d, layer %u "
                             "was expected", slot, r->holds[slot], il);
        sw_status st = e->device->vt->event_wait(e->device, r->ready[slot]);
        if (st != SW_OK)
            return st;
        layer_pack_bind(&e->config, &e->weights.layers[il], &e->packs[il], r->slot[slot],
                        &r->slot_views);
        *w = &r->slot_views;
        *side = SIDE_DEVICE;
        return SW_OK;
    }
    default:
        *w = &e->weights.layers[il];
        *side = SIDE_HOST;
        return SW_OK;
    }
}

void ring_release(void *user, uint32_t il) {
    sw_engine *e = user;
    engine_ring *r = &e->ring;
    if (e->plan->layer_place[il] != PLACE_STREAMED)
        return;
    /* The slot just used is free: refill it K layers ahead (cycling ring). */
    if (ring_cycles(r) && r->fill_error == SW_OK)
        r->fill_error = ring_fill(e, r->seq + r->n_slots);
    r->seq++;
}
