/*
 * model_internal.h — the layout of sw_model, shared by the files in
 * src/model/ (model.c: open/close/tensors; meta.c: metadata rendering).
 */
#ifndef SW_MODEL_INTERNAL_H
#define SW_MODEL_INTERNAL_H

#include <stdbool.h>

#include "format/gguf.h"
#include "spillway.h"

struct sw_model {
    gguf_file *gguf;          /* the model description; owns the mappings */
    bool is_hf;               /* from a Hugging Face folder (else a GGUF file) */
    char *path;
    char *architecture;       /* NUL-terminated copies for the summary */
    char *name;
    char *tokenizer_model;
    char **keys;              /* n_kv NUL-terminated metadata keys */
    sw_model_summary summary; /* filled once at open */
    struct tokenizer *tok;    /* NULL when the file has no vocabulary */
};

#endif
