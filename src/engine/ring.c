/*
 * ring.c — streamed layers: K device slots cycle through the streamed
 * layers in forward order. While streamed layer number `seq` computes in
 * slot seq % K, the uploads of the next K - 1 streamed layers are already
 * queued (the prefetcher runs K - 1 ahead); when its ops are queued, its
 * slot's refill with the streamed layer K further on is queued too,
 * wrapping into the next forward pass, so decode streams continuously.
 * With no more streamed layers than slots, each slot keeps its layer and
 * nothing is re-copied.
 *
 * Ordering is by events only; the host never waits here:
 *   fill:    copy queue waits for consumed[slot], uploads, records filled[slot]
 *   compute: compute queue waits for filled[slot], runs the layer, records
 *            consumed[slot] after its last op
 * so a slot is overwritten only after every op that reads it has run.
 * Without the copy queue's wait (what this code did when every op finished
 * before returning) the sim's race check (backend/sim/sim_exec.c) catches
 * the overwrite; tests/test_ring_race.c shows it by making the device
 * ignore copy-queue waits (ring_fill queues the engine's only ones).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/error.h"

static bool ring_cycles(const engine_ring *r) { return r->n_streamed > r->n_slots; }

static uint32_t slot_of(const engine_ring *r, uint64_t seq) {
    return ring_cycles(r) ? (uint32_t)(seq % r->n_slots) : (uint32_t)(seq % r->n_streamed);
}

/* Queues streamed layer number `seq` (over all passes) into its slot,
 * behind the slot's last reader. */
static sw_status ring_fill(sw_engine *e, uint64_t seq) {
    engine_ring *r = &e->ring;
    backend *d = e->device;
    uint32_t slot = slot_of(r, seq);
    uint32_t il = r->streamed[seq % r->n_streamed];
    const layer_pack *p = &e->packs[il];
    sw_status st = d->vt->queue_wait(d, BQ_COPY, r->consumed[slot]);
    r->holds[slot] = (int32_t)il;
    for (uint32_t i = 0; st == SW_OK && i < p->n_items; i++)
        st = d->vt->copy_h2d(d, BQ_COPY, (bmem){r->slot[slot], p->items[i].offset},
                             p->items[i].src, p->items[i].bytes);
    return st != SW_OK ? st : d->vt->event_record(d, r->filled[slot], BQ_COPY);
}

/* The first fills of a pass sequence (slots empty, nothing in flight). */
static sw_status ring_prime(sw_engine *e) {
    engine_ring *r = &e->ring;
    r->seq = 0;
    r->fill_error = SW_OK;
    for (uint32_t s = 0; s < r->n_slots; s++)
        r->holds[s] = -1;
    uint32_t first = r->n_slots < r->n_streamed ? r->n_slots : r->n_streamed;
    for (uint64_t seq = 0; seq < first; seq++) {
        sw_status st = ring_fill(e, seq);
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

static sw_status make_events(sw_engine *e) {
    engine_ring *r = &e->ring;
    for (uint32_t s = 0; s < r->n_slots; s++) {
        sw_status st;
        if (r->slot[s] == NULL)
            return sw_errorf(SW_ERR_ARG, "internal: ring slot %u was not allocated", s);
        if ((st = e->device->vt->event_create(e->device, &r->filled[s])) != SW_OK ||
            (st = e->device->vt->event_create(e->device, &r->consumed[s])) != SW_OK)
            return st;
    }
    return SW_OK;
}

sw_status ring_start(sw_engine *e) {
    engine_ring *r = &e->ring;
    const plan *pl = e->plan;
    r->n_streamed = 0;
    for (uint32_t il = 0; il < e->config.n_layer; il++)
        r->n_streamed += pl->layer_place[il] == PLACE_STREAMED;
    if (r->n_streamed == 0)
        return SW_OK;
    if (e->device == NULL || pl->ring_slots < 2 || pl->ring_slots > ENGINE_MAX_SLOTS)
        return sw_errorf(SW_ERR_ARG, "internal: %u streamed layers but %u ring slots",
                         r->n_streamed, pl->ring_slots);
    r->n_slots = pl->ring_slots;
    r->slot_bytes = pl->ring_slot_bytes;
    if ((r->streamed = malloc(r->n_streamed * sizeof *r->streamed)) == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the ring");
    for (uint32_t il = 0, j = 0; il < e->config.n_layer; il++) {
        if (pl->layer_place[il] != PLACE_STREAMED)
            continue;
        if (e->packs[il].total_bytes > r->slot_bytes)
            return sw_errorf(SW_ERR_ARG, "internal: layer %u needs %llu bytes, ring slots hold "
                             "%llu", il, (unsigned long long)e->packs[il].total_bytes,
                             (unsigned long long)r->slot_bytes);
        r->streamed[j++] = il;
    }
    sw_status st = make_events(e);
    return st != SW_OK ? st : ring_prime(e);
}

sw_status ring_acquire(sw_engine *e, uint32_t il, const dev_layer **w) {
    engine_ring *r = &e->ring;
    if (r->fill_error != SW_OK) /* a refill failed: its slot never fills */
        return r->fill_error;
    uint32_t slot = slot_of(r, r->seq);
    if (r->holds[slot] != (int32_t)il)
        return sw_errorf(SW_ERR_ARG, "internal: ring slot %u holds layer %d, layer %u was "
                         "expected", slot, r->holds[slot], il);
    sw_status st = e->device->vt->queue_wait(e->device, BQ_COMPUTE, r->filled[slot]);
    if (st != SW_OK)
        return st;
    layer_pack_bind(&e->weights.layers[il], &e->packs[il], (bmem){r->slot[slot], 0},
                    r->views.w);
    *w = &r->views;
    return SW_OK;
}

sw_status ring_release(sw_engine *e, uint32_t il) {
    engine_ring *r = &e->ring;
    (void)il;
    uint32_t slot = slot_of(r, r->seq);
    sw_status st = e->device->vt->event_record(e->device, r->consumed[slot], BQ_COMPUTE);
    /* The slot's readers are queued: refill it K layers ahead (cycling). */
    if (st == SW_OK && ring_cycles(r))
        st = ring_fill(e, r->seq + r->n_slots);
    if (st != SW_OK)
        r->fill_error = st;
    r->seq++;
    return st;
}

sw_status ring_reset(sw_engine *e) {
    if (e->ring.n_streamed == 0)
        return SW_OK;
    /* Whatever was queued lands or is dropped first; then refill afresh. */
    sw_status st = e->device->vt->sync(e->device);
    return st != SW_OK ? st : ring_prime(e);
}

void ring_free(sw_engine *e) {
    engine_ring *r = &e->ring;
    for (uint32_t s = 0; e->device != NULL && s < ENGINE_MAX_SLOTS; s++) {
        e->device->vt->event_destroy(e->device, r->filled[s]);
        e->device->vt->event_destroy(e->device, r->consumed[s]);
    }
    free(r->streamed);
    memset(r, 0, sizeof *r);
}
