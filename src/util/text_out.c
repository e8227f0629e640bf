/*
 * text_out.c — a printer's text into a buffer (text_out.h).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/text_out.h"

sw_status text_out_format(text_printer print, const void *obj, int json, char *buf, size_t cap,
                          size_t *len, const char *what) {
    if (obj == NULL || len == NULL || (buf == NULL && cap != 0))
        return sw_errorf(SW_ERR_ARG, "%s: NULL argument", what);
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "%s: out of host memory", what);
    sw_status st = print(obj, f, json);
    if (fclose(f) != 0 && st == SW_OK)
        st = sw_errorf(SW_ERR_OOM_HOST, "%s: out of host memory", what);
    if (st == SW_OK) {
        *len = n;
        if (cap > 0) {
            const size_t k = n < cap - 1 ? n : cap - 1;
            memcpy(buf, text, k);
            buf[k] = '\0';
        }
    }
    free(text);
    return st;
}
