/*
 * model_arg.c — resolving the -m argument shared by every subcommand that
 * reads a model: an explicit path, or the fetched default model.
 */
#include <sys/stat.h>

#include "cli/model_arg.h"

int cli_open_model(const char *arg, sw_model **out) {
    char path[4096];
    sw_status st;
    if (arg == NULL) {
        struct stat sb;
        st = sw_default_model_path(path, sizeof path);
        if (st != SW_OK)
            return cli_fail(st);
        if (stat(path, &sb) != 0) {
            cli_error("the default model is not at %s; run 'spillway fetch' first, "
                      "or pass -m FILE|DIR", path);
            return CLI_EXIT_IO;
        }
        arg = path;
    }
    st = sw_model_open(arg, out);
    if (st != SW_OK)
        return cli_fail(st);
    return CLI_EXIT_OK;
}
