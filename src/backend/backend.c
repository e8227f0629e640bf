/*
 * backend.c — what all backends share behind backend.h: for now, the one
 * destructor callers use for any backend, so code that holds a `backend *`
 * never needs to know which constructor made it.
 */
#include "backend/backend.h"

void backend_destroy(backend *b) {
    if (b != NULL)
        b->vt->destroy(b);
}
