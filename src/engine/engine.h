/*
 * engine.h — the engine's internal entry points for the code above it
 * (runtime/launch.c: the re-plan loop) and for white-box tests: creation
 * with test hooks, and the notes and counters the launcher adds.
 *
 * The hooks are for tests only and are all zero in normal use: they make
 * the simulated device fail or slow down on purpose (handed as they are to
 * every backend the engine creates), and watch the residual stream after
 * each layer.
 */
#ifndef SW_ENGINE_ENGINE_H
#define SW_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend_params.h"
#include "spillway.h"

/* Called after each layer with the residual stream (n_tokens, n_embd) in
 * host memory; layer -1 is the scaled embedding. */
typedef void (*engine_layer_hook)(void *user, int layer, const float *x, uint32_t n_tokens,
                                  uint32_t n_embd);

typedef struct engine_hooks {
    backend_test_hooks backend;  /* faults and delays for the backends (all zero:
                                  * none, and they get no hooks at all) */
    engine_layer_hook layer_hook;
    void *layer_hook_user;
} engine_hooks;

/* sw_engine_create with hooks (NULL: none). */
sw_status engine_create(const sw_model *model, const sw_plan *plan,
                        const sw_engine_options *opt, const engine_hooks *hooks,
                        sw_engine **out, sw_alloc_failure *failure);

/* Appends a line to sw_engine_notes(). */
void engine_note(sw_engine *e, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The re-plans that preceded this engine (for the report). */
void engine_set_replans(sw_engine *e, uint32_t n);

/* The hooks in force (tests set layer_hook after creation). */
engine_hooks *engine_hooks_of(sw_engine *e);

#endif
