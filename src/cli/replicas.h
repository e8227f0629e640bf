/*
 * replicas.h — `--replicas N` (issue 39, section 2) for serve and batch:
 * N engines of one plan in one process, each with its own device (sim: its
 * own simulated card of --device-mem; cpu: its own KV, activations and -t
 * threads, the weights shared through the mapping), each with its own
 * scheduler. On cuda and pjrt, replica i runs on device i (cuda:i, the
 * PJRT client's ith), so N must not pass the devices visible; with a split
 * (--device-mem A,B,...: n budgets) replica i is that split over devices
 * i x n .. i x n + n - 1, and a drafter sits on a replica's first device.
 */
#ifndef SW_CLI_REPLICAS_H
#define SW_CLI_REPLICAS_H

#include "cli/gen_opts.h"

enum { CLI_MAX_REPLICAS = 8 };

/* CLI_EXIT_OK, or CLI_EXIT_USAGE (said) when n > 1 with a split and
 * --devices, or on cuda with fewer GPUs visible than the replicas take. */
int cli_replicas_check(long n, const gen_opts *o);

/* Replica i's engine: the first through gen_opts_start_engine (a
 * drafter's reservation, --plan-json), the others the same plan options
 * on their own device. Returns an exit status (error printed). */
int cli_replica_engine(gen_opts *o, const sw_model *m, size_t i, sw_engine **out);

#endif
