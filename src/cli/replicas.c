/*
 * replicas.c — the engines of --replicas N (replicas.h).
 */
#include <string.h>

#include "cli/replicas.h"

int cli_replicas_check(long n, const gen_opts *o) {
    const char *b = o->plan.backend;
    if (n > 1 && o->n_split) {
        cli_error("--replicas %ld: a split over several devices (--device-mem A,B) runs as one "
                  "replica for now", n);
        return CLI_EXIT_USAGE;
    }
    if (n <= 1 || b == NULL || strcmp(b, "cuda") != 0)
        return CLI_EXIT_OK; /* pjrt: the client's devices, checked as each replica starts */
    sw_device_report rep;
    if (sw_devices_query(&rep) != SW_OK)
        memset(&rep, 0, sizeof rep);
    if ((size_t)n <= rep.n_devices)
        return CLI_EXIT_OK;
    cli_error("--replicas %ld on cuda: one replica per GPU, and %zu %s visible", n,
              rep.n_devices, rep.n_devices == 1 ? "is" : "are");
    return CLI_EXIT_USAGE;
}

int cli_replica_engine(gen_opts *o, const sw_model *m, size_t i, sw_engine **out) {
    if (i == 0)
        return gen_opts_start_engine(o, m, out);
    /* the drafter's reservation is already in o->plan; replica i on device i
     * (cuda:i, the PJRT client's ith; the sim's and cpu's are their own) */
    sw_engine_options eo = o->engine;
    eo.device = (uint32_t)i;
    const sw_status st = sw_engine_launch(m, &o->plan, &eo, out);
    if (st == SW_OK)
        return CLI_EXIT_OK;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sw_last_error());
    cli_error("replica %zu (device %zu): %s", i, i, msg);
    return cli_exit_code(st);
}
