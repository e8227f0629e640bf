/*
 * error.h — how the library reports failures.
 *
 * Every fallible function returns an sw_status and, on failure, records one
 * human-readable message with sw_errorf(). The message lives in thread-local
 * storage (read back through the public sw_last_error()), so functions that
 * fail before any handle exists can still explain themselves. The library
 * never prints and never exits.
 */
#ifndef SW_UTIL_ERROR_H
#define SW_UTIL_ERROR_H

#include "spillway.h"

#if defined(__GNUC__) || defined(__clang__)
#define SW_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SW_PRINTF(a, b)
#endif

/* Records the message for the calling thread and returns `status`, so a
 * failure site reads `return sw_errorf(SW_ERR_FORMAT, "...", ...);`. */
sw_status sw_errorf(sw_status status, const char *fmt, ...) SW_PRINTF(2, 3);

/* Prepends "prefix: " to the calling thread's current message; returns
 * `status`. Used where an inner error needs context ("file X: ..."). */
sw_status sw_error_prefix(sw_status status, const char *fmt, ...) SW_PRINTF(2, 3);

/* Returns from the calling function with expr's status unless it is SW_OK:
 * for sequences of fallible steps that need no cleanup. */
#define SW_TRY(expr)                       \
    do {                                   \
        sw_status sw_try_st_ = (expr);     \
        if (sw_try_st_ != SW_OK)           \
            return sw_try_st_;             \
    } while (0)

/* Clears the calling thread's message. */
void sw_error_clear(void);

#endif
