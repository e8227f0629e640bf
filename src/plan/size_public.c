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

/* A rate is a size per second: "16GB/s", or the size alone ("2G": 2 GiB/s,
 * as llama.cpp users write sizes). */
sw_status sw_parse_rate(const char *text, uint64_t *bytes_per_s) {
    char buf[64];
    size_t n = text ? strlen(text) : 0;
    if (n >= 2 && strcmp(text + n - 2, "/s") == 0)
        n -= 2;
    if (n == 0 || n >= sizeof buf || strchr(text, '%') != NULL)
        return sw_errorf(SW_ERR_ARG, "'%s' is not a bandwidth; write e.g. 16GB/s, 500MB/s or "
                         "2G (GiB/s)", text ? text : "");
    memcpy(buf, text, n);
    buf[n] = '\0';
    if (plan_parse_size(buf, 0, bytes_per_s) != SW_OK)
        return sw_errorf(SW_ERR_ARG, "'%s' is not a bandwidth; write e.g. 16GB/s, 500MB/s or "
                         "2G (GiB/s)", text);
    return SW_OK;
}

sw_status sw_parse_fraction(const char *text, double *out) {
    uint64_t parts = 0;
    const uint64_t whole = 1000000000000ull; /* 1e12: exact for 6 fraction digits */
    size_t n = text ? strlen(text) : 0;
    if (n < 2 || text[n - 1] != '%')
        return sw_errorf(SW_ERR_ARG, "'%s' is not a percentage (e.g. 80%%)", text ? text : "");
    sw_status st = plan_parse_size(text, whole, &parts);
    if (st != SW_OK)
        return st;
    *out = (double)parts / (double)whole;
    return SW_OK;
}
