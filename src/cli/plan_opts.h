/*
 * plan_opts.h — the flags that shape a plan (workload, memory, placement,
 * precision), parsed once into sw_plan_options for every subcommand that
 * plans: plan, run, chat, verify and batch. One parser means one meaning:
 * `spillway plan` and `spillway run` with the same flags make the same
 * plan. Values are checked for form here (numbers, sizes, rates); what
 * they mean for a model (a context past the trained one, a weight type a
 * file cannot take) the planner checks.
 */
#ifndef SW_CLI_PLAN_OPTS_H
#define SW_CLI_PLAN_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plan/split.h"
#include "spillway.h"

/* Whether `flag` is one of ours (each takes a value). */
bool plan_opts_has(const char *flag);

/* Parses flag's value into o. Returns 0, or -1 after printing a usage
 * error that names the flag. */
int plan_opts_parse(sw_plan_options *o, const char *flag, const char *value);

/* --device-mem A,B,...: a size per device (2 to PLAN_MAX_DEVICES, as
 * --device-mem takes one, without percentages) into out[], *n of them.
 * Returns 0, or -1 after printing a usage error. */
int plan_opts_parse_split(const char *value, uint64_t *out, uint32_t *n);

/* --devices N,M,...: the backend's device numbers of a split, into out[]
 * (*n of them); and whether they match the budgets (n_devices 0: not
 * given). Return 0, or -1 after printing a usage error. */
int plan_opts_parse_devices(const char *value, uint32_t *out, uint32_t *n);
int plan_opts_check_devices(uint32_t n_devices, uint32_t n_split);

/* The split over n budgets (devices: --devices, n_devices 0 for 0, 1, ...)
 * of model m or catalog model `name`, malloc'd; NULL after printing the
 * error, *rc the exit status. */
plan_split *plan_opts_split(const sw_model *m, const char *name, const sw_plan_options *o,
                            const uint64_t *budgets, uint32_t n, const uint32_t *devices,
                            uint32_t n_devices, int *rc);

/* Usage lines for these flags. */
void plan_opts_usage(FILE *out);

#endif
