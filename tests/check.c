/*
 * check.c — implementation of the test harness (see check.h).
 */
#include "check.h"

#include <stdarg.h>
#include <stdlib.h>

int sw_check_failures = 0;
int sw_check_count = 0;

void sw_check_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    sw_check_failures++;
    if (sw_check_failures > 50)
        return; /* keep the log readable; the count is still reported */
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int sw_check_finish(const char *name) {
    if (sw_check_count == 0) {
        fprintf(stderr, "%s: no checks ran\n", name);
        return 1;
    }
    printf("%s: %d checks, %d failed\n", name, sw_check_count, sw_check_failures);
    return sw_check_failures == 0 ? 0 : 1;
}

const char *sw_test_data(const char *relative) {
    static char buf[4096];
    const char *dir = getenv("SW_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", relative);
    return buf;
}

const char *sw_test_default_model(void) {
    static char buf[4096];
    if (sw_default_model_path(buf, sizeof buf) != SW_OK)
        return "";
    return buf;
}

uint64_t sw_test_rng_next(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545f4914f6cdd1dull;
}

float sw_test_rng_float(uint64_t *state, float lo, float hi) {
    return lo + (hi - lo) * (float)((sw_test_rng_next(state) >> 40) * (1.0 / 16777216.0));
}
