/*
 * fetch_pjrt.h — `spillway fetch pjrt-cpu|pjrt-cuda` (fetch_pjrt.c): XLA's
 * PJRT plugins from PyPI, pinned by SHA-256, into CACHE/<target>/.
 */
#ifndef SW_CLI_FETCH_PJRT_H
#define SW_CLI_FETCH_PJRT_H

#include <stdbool.h>
#include <stdio.h>

/* Installs TARGET ("pjrt-cpu" or "pjrt-cuda") unless it is already
 * complete (force: always). Returns an exit status: CLI_EXIT_USAGE, with
 * the list of targets, for an unknown one. */
int fetch_pjrt(const char *target, bool force, bool quiet);

/* The targets section of `spillway fetch --help`. */
void fetch_pjrt_usage(FILE *out);

#endif
