/*
 * model_compare.h — what the backend-against-backend model tests share
 * (test_pjrt.c, test_cuda.c): the argmax of a logit row, teacher-forced
 * logits of a prompt and their comparison between two engines, and a
 * greedy continuation, each through a fresh session of the engine.
 * Failures are recorded with SW_CHECK.
 */
#ifndef SW_TESTS_MODEL_COMPARE_H
#define SW_TESTS_MODEL_COMPARE_H

#include <stdint.h>

#include "spillway.h"

int32_t mc_argmax(const float *x, uint32_t n);

/* Every position's logits (n rows of V) for ids, malloc'd; NULL on failure. */
float *mc_forced(sw_engine *e, const int32_t *ids, uint32_t n, uint32_t V);

/* The n_greedy tokens greedy decoding adds to ids into out, and the logits
 * each was chosen from into logits (n_greedy rows of V). */
void mc_greedy(sw_engine *e, const int32_t *ids, uint32_t n, uint32_t V, int n_greedy,
               int32_t *out, float *logits);

/* The device's peak by the backend's accounting within the engine's plan
 * (checked); with granule > 0 also the driver's view of it within the plan
 * plus granule bytes per buffer (checked and printed). */
void mc_check_peak(sw_engine *e, const char *name, uint64_t granule);

/* A test's prompts: token ids borrowed from golden files or the caller. */
#define MC_MAX_PROMPTS 16
typedef struct mc_prompts {
    int n;
    const int32_t *ids[MC_MAX_PROMPTS];
    uint32_t len[MC_MAX_PROMPTS];
} mc_prompts;

/* The golden file's prompts (p0.ids, p1.ids, ...), each cut to max_len. */
struct golden_file;
void mc_prompts_from_golden(const struct golden_file *g, uint32_t max_len, mc_prompts *p);

/* Teacher-forced logits of every prompt on dev against ref: the same
 * argmax at every position and every row within tol of the row's largest
 * |logit| (checked); prints one line labelled `what`. */
void mc_compare_forced(const mc_prompts *p, sw_engine *ref, sw_engine *dev, uint32_t V,
                       const char *what, double tol);

#endif
