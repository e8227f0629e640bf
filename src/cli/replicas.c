/*
 * replicas.c — the engines of --replicas N (replicas.h).
 */
#include <string.h>

#include "cli/replicas.h"

int cli_replicas_check(long n, const gen_opts *o) {
    const char *b = o->plan.backend;
    if (n > 1 && o->n_split && o->n_devices) {
        cli_error("--replicas %ld with a split: replica r takes the devices r x %u to r x %u "
                  "+ %u in order; drop --devices", n, o->n_split, o->n_split, o->n_split - 1);
        return CLI_EXIT_USAGE;
    }
    if (n <= 1 || b == NULL || strcmp(b, "cuda") != 0)
        return CLI_EXIT_OK; /* pjrt: the client's devices, checked as each replica starts */
    const long per = o->n_split ? (long)o->n_split : 1, need = n * per;
    sw_device_report rep;
    if (sw_devices_query(&rep) != SW_OK)
        memset(&rep, 0, sizeof rep);
    if ((size_t)need <= rep.n_devices)
        return CLI_EXIT_OK;
    cli_error("--replicas %ld on cuda: %ld GPU%s per replica, %ld in all, and %zu %s visible",
              n, per, per == 1 ? "" : "s", need, rep.n_devices,
              rep.n_devices == 1 ? "is" : "are");
    return CLI_EXIT_USAGE;
}

int cli_replica_engine(gen_opts *o, const sw_model *m, size_t i, sw_engine **out) {
    if (i == 0)
        return gen_opts_start_engine(o, m, out);
    /* the drafter's reservation is already in o->plan; replica i on device i
     * (cuda:i, the PJRT client's ith; the sim's and cpu's are their own), or
     * a split's replica on the devices i x N .. i x N + N - 1 */
    sw_engine_options eo = o->engine;
    sw_status st;
    uint32_t first = (uint32_t)i;
    if (o->n_split) {
        uint32_t ids[PLAN_MAX_DEVICES];
        first = (uint32_t)i * o->n_split;
        for (uint32_t d = 0; d < o->n_split; d++)
            ids[d] = first + d;
        st = sw_engine_launch_split(m, &o->plan, o->split, ids, o->n_split, &eo, out);
    } else {
        eo.device = (uint32_t)i;
        st = sw_engine_launch(m, &o->plan, &eo, out);
    }
    if (st == SW_OK)
        return CLI_EXIT_OK;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sw_last_error());
    cli_error("replica %zu (device %u%s): %s", i, first, o->n_split ? " on" : "", msg);
    return cli_exit_code(st);
}
