/*
 * expert_trace.c — --expert-trace FILE: after each layer with experts, the
 * experts its router chose for each token of the forward, one JSON line
 * per (forward, layer, token):
 *   {"step":12,"layer":3,"seq":0,"pos":41,"experts":[5,17,2,99,...]}
 * (step: the engine's forward count; experts as the router lists them). `spillway bench --expert-trace FILE --cache-slots ...`
 * replays it against expert caches (plan/expert_sim.h) without the model.
 * The routing is read where the block computed it: host memory, or a copy
 * back from the device that the host waits for (tracing costs a wait per
 * layer; it is a measurement mode).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/error.h"

sw_status expert_trace_open(sw_engine *e, const sw_engine_options *opt) {
    if (opt == NULL || opt->expert_trace == NULL)
        return SW_OK;
    const model_config *c = &e->config;
    if (c->n_expert == 0)
        return sw_errorf(SW_ERR_ARG, "--expert-trace: %s has no experts to trace (Gemma 4 "
                         "26B-A4B's kind has)", c->arch);
    e->trace_ids = malloc((size_t)e->n_tok * c->n_expert_used * sizeof *e->trace_ids);
    if (e->trace_ids == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the expert trace");
    if ((e->expert_trace = fopen(opt->expert_trace, "w")) == NULL)
        return sw_errorf(SW_ERR_IO, "--expert-trace: cannot write '%s'", opt->expert_trace);
    return SW_OK;
}

void expert_trace_close(sw_engine *e) {
    if (e->expert_trace != NULL)
        fclose(e->expert_trace);
    e->expert_trace = NULL;
    free(e->trace_ids);
    e->trace_ids = NULL;
}

/* Layer il's routing of n tokens into e->trace_ids (n, k). */
static sw_status read_ids(sw_engine *e, uint32_t il, side_id side, uint32_t n) {
    const uint64_t bytes = (uint64_t)n * e->config.n_expert_used * sizeof(int32_t);
    /* a device layer whose experts the host computed routed on the host */
    if (side == SIDE_HOST || e->plan->experts_host[il]) {
        memcpy(e->trace_ids, (const void *)(uintptr_t)e->side[SIDE_HOST].act.moe_ids.off,
               bytes);
        return SW_OK;
    }
    engine_side *d = &e->side[SIDE_DEVICE];
    SW_TRY(d->be->vt->copy_d2h(d->be, BQ_COMPUTE, e->trace_ids, d->act.moe_ids, bytes));
    SW_TRY(d->be->vt->event_record(d->be, d->done, BQ_COMPUTE));
    return d->be->vt->event_sync(d->be, d->done);
}

sw_status expert_trace_layer(sw_engine *e, uint32_t il, side_id side, uint32_t n) {
    const uint32_t k = e->config.n_expert_used;
    SW_TRY(read_ids(e, il, side, n));
    const uint8_t *meta = e->side[SIDE_HOST].host_base; /* this forward's, on the host */
    const int32_t *pos = (const int32_t *)(const void *)(meta + e->act.pos);
    const int32_t *seq = (const int32_t *)(const void *)(meta + e->act.seq);
    FILE *f = e->expert_trace;
    for (uint32_t t = 0; t < n; t++) {
        fprintf(f, "{\"step\":%llu,\"layer\":%u,\"seq\":%d,\"pos\":%d,\"experts\":[",
                (unsigned long long)e->n_forwards, il, seq[t], pos[t]);
        for (uint32_t j = 0; j < k; j++)
            fprintf(f, "%s%d", j ? "," : "", e->trace_ids[(size_t)t * k + j]);
        fputs("]}\n", f);
    }
    if (ferror(f))
        return sw_errorf(SW_ERR_IO, "--expert-trace: writing the trace failed (disk full?)");
    return SW_OK;
}
