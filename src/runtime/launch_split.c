/*
 * launch_split.c — the public face of a split over several devices
 * (spillway.h: sw_engine_launch_split, sw_engine_n_devices,
 * sw_engine_device_report): plan_split_create, then engine_create_split,
 * which keeps the split so that sw_engine_print_plan prints it. The CLI's
 * `--device-mem A,B,...` comes here too.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/split_engine.h"
#include "plan/split.h"
#include "util/error.h"

sw_status sw_engine_launch_split(const sw_model *model, const sw_plan_options *plan_opt,
                                 const uint64_t *device_mem_bytes, const uint32_t *device_ids,
                                 size_t n_devices, const sw_engine_options *opt,
                                 sw_engine **out) {
    if (out == NULL || model == NULL || device_mem_bytes == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_launch_split: NULL argument");
    *out = NULL;
    if (n_devices < 2 || n_devices > PLAN_MAX_DEVICES)
        return sw_errorf(SW_ERR_ARG, "a split takes 2 to %d devices (%zu given); one device "
                         "is sw_engine_launch", PLAN_MAX_DEVICES, n_devices);
    for (size_t d = 0; d < n_devices; d++)
        if (device_mem_bytes[d] == 0)
            return sw_errorf(SW_ERR_ARG, "device %zu of the split has no budget: a split takes "
                             "each device's budget as a size", d);
    const sw_plan_options po = plan_opt ? *plan_opt : sw_plan_options_default();
    const sw_engine_options eo = opt ? *opt : sw_engine_options_default();
    plan_split *s = malloc(sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory planning a split");
    sw_status st = plan_split_create(model, NULL, &po, device_mem_bytes, device_ids,
                                     (uint32_t)n_devices, s);
    if (st == SW_OK)
        st = engine_create_split(model, s, &eo, NULL, out, NULL);
    if (st != SW_OK) {
        free(s);
        return st;
    }
    (*out)->split = s;
    return SW_OK;
}

uint32_t sw_engine_n_devices(const sw_engine *e) { return engine_n_devices(e); }

sw_status sw_engine_device_report(const sw_engine *e, uint32_t d, sw_engine_device *out) {
    engine_device_stat ds;
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_device_report: NULL argument");
    SW_TRY(engine_device_stats(e, d, &ds));
    *out = (sw_engine_device){.device = ds.device, .first_layer = ds.first_layer,
                              .end_layer = ds.end_layer,
                              .budget_bytes = ds.budget_bytes, .plan_bytes = ds.plan_bytes,
                              .peak_bytes = ds.peak_bytes,
                              .bytes_to_device = ds.bytes_to_device,
                              .peer_bytes = ds.peer_bytes, .peer_in = ds.peer_in,
                              .busy_s = ds.busy_s};
    return SW_OK;
}
