/*
 * text_out.h — what a printer writes to a FILE, into a caller's buffer: the
 * *_format twins of the public *_print functions, for callers without a
 * FILE (the Python package).
 */
#ifndef SW_UTIL_TEXT_OUT_H
#define SW_UTIL_TEXT_OUT_H

#include <stdio.h>

#include "spillway.h"

typedef sw_status (*text_printer)(const void *obj, FILE *out, int json);

/* Runs print(obj, f, json) on a memory stream, then copies at most cap - 1
 * bytes and a NUL into buf (nothing when cap is 0); *len gets the full
 * length. `what` names the caller in errors. Errors: the printer's,
 * SW_ERR_ARG (NULL len, or NULL buf with cap > 0), SW_ERR_OOM_HOST. */
sw_status text_out_format(text_printer print, const void *obj, int json, char *buf, size_t cap,
                          size_t *len, const char *what);

#endif
