/*
 * error.c — thread-local error messages (see error.h).
 * Messages are truncated to SW_ERROR_MAX bytes; truncation is harmless.
 */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SW_ERROR_MAX 2048 /* room for a failed plan's list of changes that fit */

static _Thread_local char tls_message[SW_ERROR_MAX];

sw_status sw_errorf(sw_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    va_end(ap);
    return status;
}

sw_status sw_error_prefix(sw_status status, const char *fmt, ...) {
    char old[SW_ERROR_MAX];
    va_list ap;
    memcpy(old, tls_message, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    va_end(ap);
    /* Append ": old" after the prefix, truncating quietly if long. */
    size_t used = n < 0 ? 0 : (size_t)n;
    if (used < sizeof tls_message - 1) {
        size_t room = sizeof tls_message - used;
        size_t k = 0;
        const char sep[] = ": ";
        for (size_t i = 0; sep[i] && k + 1 < room; i++)
            tls_message[used + k++] = sep[i];
        for (size_t i = 0; old[i] && k + 1 < room; i++)
            tls_message[used + k++] = old[i];
        tls_message[used + k] = '\0';
    }
    return status;
}

void sw_error_clear(void) { tls_message[0] = '\0'; }

const char *sw_last_error(void) { return tls_message; }

const char *sw_status_name(sw_status status) {
    switch (status) {
    case SW_OK: return "ok";
    case SW_ERR_IO: return "i/o error";
    case SW_ERR_FORMAT: return "bad model file";
    case SW_ERR_UNSUPPORTED: return "unsupported";
    case SW_ERR_NO_DEVICE: return "no device";
    case SW_ERR_OOM_DEVICE: return "out of device memory";
    case SW_ERR_OOM_HOST: return "out of host memory";
    case SW_ERR_ARG: return "bad argument";
    case SW_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}
