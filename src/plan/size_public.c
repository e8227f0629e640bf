/*
 * size_public.c — the public size and bandwidth parsers (spillway.h), thin
 * wrappers over plan_parse_size() so the CLI parses "8G" exactly as the
 * planner does.
 */
#include <string.h>

#include "plan/plan_api.h"
#include "util/error.h"

sw_status sw_parse_size(const char *text, uint64_t whole, uint64_t *out) {
    return plan_parse_size(text, whole, out);
}

sw_status sw_parse_rate(const char *text, uint64_t *bytes_per_s) {
    char buf[64];
    size_t n = text ? strlen(text) : 0;
    if (n < 3 || n >= sizeof buf || strcmp(text + n - 2, "/s") != 0)
        return sw_errorf(SW_ERR_ARG, "'%s' is not a bandwidth; write e.g. 16GB/s or 500MB/s",
                         text ? text : "");
    memcpy(buf, text, n - 2);
    buf[n - 2] = '\0';
    return plan_parse_size(buf, 0, bytes_per_s);
}
