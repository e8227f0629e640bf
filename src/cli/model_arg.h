/*
 * model_arg.h — `-m MODEL` handling shared by subcommands.
 */
#ifndef SW_CLI_MODEL_ARG_H
#define SW_CLI_MODEL_ARG_H

#include "cli/cli.h"

/* Opens the model named by `arg`, or the default model when arg is NULL
 * (with a hint to run `spillway fetch` when it is missing). Prints the
 * error and returns a non-zero exit status on failure. */
int cli_open_model(const char *arg, sw_model **out);

#endif
