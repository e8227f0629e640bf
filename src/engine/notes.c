/*
 * notes.c — the lines the engine's parts leave for the run to print
 * (sw_engine_notes): a refused page lock, a re-plan, where the expert
 * cache's copies come from. Its own file, so that any part may leave one
 * without depending on the engine's creation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"

void engine_note(sw_engine *e, const char *fmt, ...) {
    size_t len = strlen(e->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->notes + len, sizeof e->notes - len, fmt, ap);
    va_end(ap);
}
