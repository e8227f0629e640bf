/*
 * engine.h — the engine's internal entry points for the code above it
 * (runtime/launch.c: the re-plan loop) and for white-box tests: creation
 * with test hooks, and the notes and counters the launcher adds.
 *
 * The hooks are for tests only and are all zero in normal use: they make
 * the simulated device fail or slow down on purpose, bring back the ring
 * logic this engine replaced (to show the race check catches it), and
 * watch the residual stream after each layer.
 */
#ifndef SW_ENGINE_ENGINE_H
#define SW_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

/* Called after each layer with the residual stream (n_tokens, n_embd) in
 * host memory; layer -1 is the scaled embedding. */
typedef void (*engine_layer_hook)(void *user, int layer, const float *x, uint32_t n_tokens,
                                  uint32_t n_embd);

typedef struct engine_hooks {
    uint64_t sim_fail_alloc_at;  /* the sim refuses its Nth allocation */
    uint64_t sim_fail_op_at;     /* the sim refuses its Nth op or block */
    double sim_op_delay_s;       /* each sim op runs this much longer */
    bool sim_per_op;             /* the sim (and pjrt) hide their block entry */
    bool ring_unsafe_reuse;      /* refill a ring slot as soon as its readers are
                                  * queued, not after they ran (the old logic) */
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
