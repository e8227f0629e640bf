/*
 * paths.c — where Spillway keeps files it owns: the cache folder and the
 * default model inside it. Follows the XDG base-directory convention so a
 * user can redirect everything with XDG_CACHE_HOME.
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/error.h"

sw_status sw_cache_dir(char *buf, size_t cap) {
    if (buf == NULL || cap == 0)
        return sw_errorf(SW_ERR_ARG, "sw_cache_dir: no output buffer");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] != '\0')
        n = snprintf(buf, cap, "%s/spillway", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(buf, cap, "%s/.cache/spillway", home);
    else
        return sw_errorf(SW_ERR_ARG, "cannot locate the cache folder: neither "
                                     "XDG_CACHE_HOME nor HOME is set; pass -m FILE");
    if (n < 0 || (size_t)n >= cap)
        return sw_errorf(SW_ERR_ARG, "cache folder path is too long");
    return SW_OK;
}

sw_status sw_default_model_path(char *buf, size_t cap) {
    char dir[4096];
    sw_status st = sw_cache_dir(dir, sizeof dir);
    if (st != SW_OK)
        return st;
    int n = snprintf(buf, cap, "%s/%s", dir, SW_DEFAULT_MODEL_FILE);
    if (n < 0 || (size_t)n >= cap)
        return sw_errorf(SW_ERR_ARG, "default model path is too long");
    return SW_OK;
}
