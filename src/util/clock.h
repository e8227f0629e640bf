/*
 * clock.h — the one clock Spillway times things with: monotonic seconds
 * (never steps back when the wall clock is set), as a double.
 */
#ifndef SW_UTIL_CLOCK_H
#define SW_UTIL_CLOCK_H

/* Seconds on CLOCK_MONOTONIC since an arbitrary start. */
double sw_clock_s(void);

#endif
