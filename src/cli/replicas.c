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
    if (n <= 1 || (b != NULL && (!strcmp(b, "cpu") || !strcmp(b, "sim"))))
        return CLI_EXIT_OK;
    cli_error("--replicas %ld: replicas run on --backend cpu or sim for now (each its own "
              "engine; a cuda or pjrt process drives one device until device lists land)", n);
    return CLI_EXIT_USAGE;
}

int cli_replica_engine(gen_opts *o, const sw_model *m, size_t i, sw_engine **out) {
    if (i == 0)
        return gen_opts_start_engine(o, m, out);
    /* the drafter's reservation is already in o->plan */
    sw_engine_options eo = o->engine;
    const sw_status st = sw_engine_launch(m, &o->plan, &eo, out);
    return st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
}
