/*
 * clock.c — sw_clock_s() (clock.h).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <time.h>

#include "util/clock.h"

double sw_clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
