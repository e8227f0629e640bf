/*
 * launch.c — sw_engine_launch: sw_plan_create, then sw_engine_create; if
 * the device refused a buffer (another process took memory since it was
 * measured, or the device reports more than it can give), the device
 * budget is cut to the bytes it did give before refusing and the model is
 * planned again, at most MAX_REPLANS times. The planner then either finds
 * a smaller plan or fails with its own explanation (what is short, by how
 * much, what would fit). Host shortfalls are not retried: MemAvailable
 * already bounded the host plan. Each retry is a line in the notes.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/launch.h"
#include "util/error.h"

#define MAX_REPLANS 3

sw_status runtime_launch(const sw_model *model, const sw_plan_options *plan_opt,
                         const sw_engine_options *opt, const engine_hooks *hooks,
                         sw_engine **out) {
    sw_plan_options po = plan_opt ? *plan_opt : sw_plan_options_default();
    char notes[1024] = "";
    size_t len = 0;
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_engine_launch: NULL argument");
    *out = NULL;
    for (uint32_t attempt = 0;; attempt++) {
        sw_plan *plan = NULL;
        sw_alloc_failure fail;
        sw_status st = sw_plan_create(model, NULL, &po, &plan);
        if (st == SW_OK)
            st = engine_create(model, plan, opt, attempt == 0 ? hooks : NULL, out, &fail);
        sw_plan_destroy(plan);
        if (st == SW_OK) {
            engine_note(*out, "%s", notes);
            engine_set_replans(*out, attempt);
            return SW_OK;
        }
        if (st != SW_ERR_OOM_DEVICE || strcmp(fail.tier, "device") != 0 ||
            attempt == MAX_REPLANS)
            return st;
        /* What could be had: everything allocated before the refusal. */
        uint64_t had = fail.obtained_bytes ? fail.obtained_bytes : 1;
        int n = snprintf(notes + len, sizeof notes - len, "device refused %llu bytes for '%s' "
                         "(%s); re-planned with a %.1f MiB budget\n",
                         (unsigned long long)fail.bytes, fail.purpose, sw_last_error(),
                         (double)had / 1048576.0);
        len += n > 0 && (size_t)n < sizeof notes - len ? (size_t)n : 0;
        po.device_mem_bytes = had;
        po.device_mem_fraction = 0;
    }
}

sw_status sw_engine_launch(const sw_model *model, const sw_plan_options *plan_opt,
                           const sw_engine_options *opt, sw_engine **out) {
    return runtime_launch(model, plan_opt, opt, NULL, out);
}
