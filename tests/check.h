/*
 * check.h — the tiny test harness every C test uses.
 *
 *   SW_CHECK(cond, "fmt", ...)  records a failure (with file:line) and goes on
 *   SW_CHECK_OK(status_expr)    expects SW_OK, prints sw_last_error() if not
 *   return sw_check_finish("test_name");   exit status: non-zero on failure
 *
 * A test that records no check at all also fails: a test must test.
 */
#ifndef SW_TESTS_CHECK_H
#define SW_TESTS_CHECK_H

#include <stdio.h>

#include "spillway.h"

extern int sw_check_failures;
extern int sw_check_count;

void sw_check_fail(const char *file, int line, const char *fmt, ...);

#define SW_CHECK(cond, ...)                                                     \
    do {                                                                       \
        sw_check_count++;                                                      \
        if (!(cond))                                                           \
            sw_check_fail(__FILE__, __LINE__, __VA_ARGS__);                    \
    } while (0)

#define SW_CHECK_OK(expr)                                                       \
    do {                                                                       \
        sw_status sw_check_st_ = (expr);                                       \
        SW_CHECK(sw_check_st_ == SW_OK, "%s -> %s: %s", #expr,                 \
                 sw_status_name(sw_check_st_), sw_last_error());               \
    } while (0)

/* Prints a summary line and returns the process exit status. */
int sw_check_finish(const char *name);

/* Path of a file under the test data folder (env SW_TEST_DATA), in a static
 * buffer valid until the next call. */
const char *sw_test_data(const char *relative);

/* A small deterministic generator for test data (xorshift64*): the next
 * 64 random bits from *state (seed it with any non-zero value), and a float
 * uniform in [lo, hi) with 24 random bits. */
uint64_t sw_test_rng_next(uint64_t *state);
float sw_test_rng_float(uint64_t *state, float lo, float hi);

/* Path of the default model (fetched by `spillway fetch`). */
const char *sw_test_default_model(void);

#endif
