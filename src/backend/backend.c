/*
 * backend.c — what all backends share behind backend.h: the destructor
 * callers use for any backend, and op names. Which memory each op reads
 * and writes is described once, in operands.c.
 */
#include "backend/backend.h"

void backend_destroy(backend *b) {
    if (b != NULL)
        b->vt->destroy(b);
}

const char *bop_name(bop_kind kind) {
    static const char *const names[BOP_COUNT] = {
        "get_rows", "rmsnorm", "matmul", "rope", "kv_append", "attention",
        "geglu", "add", "scale", "softcap", "gather", "moe route", "moe experts",
        "moe cached"};
    return kind < BOP_COUNT ? names[kind] : "?";
}
