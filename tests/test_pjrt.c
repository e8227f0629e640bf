/*
 * test_pjrt.c — the PJRT backend (XLA's runtime, here its CPU plugin)
 * against the cpu backend on the same weights:
 *   - teacher-forced over every golden prompt (tests/data/golden, token ids
 *     from transformers' tokenizer): the same argmax at every position, and
 *     logits within 1e-3 of the row's largest |logit| (f32 programs);
 *   - greedy continuation equal to the cpu backend's; resident, streamed
 *     (every layer through the ring), mixed with host layers and a host LM
 *     head, and per-op dispatch: that same continuation; device-only plans
 *     bit-identical to the resident one; with experts (Gemma 4), layers on
 *     the device whose experts the host computes (the block's programs
 *     before and after them), fused and per op: that same continuation;
 *   - the device peak (our accounting) within the plan.
 * Quantized models are dequantized to BF16 at load on both backends (the
 * PJRT backend's default; --weights bf16-dequant on the cpu one).
 *
 * usage: test_pjrt GOLDEN.swgold MODEL.gguf|--default-model [REL_TOL]
 *   REL_TOL: the logits' limit as a share of the row's largest |logit|
 *   (default 1e-3)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "golden.h"
#include "model_compare.h"
#include "plan/plan_api.h"
#include "runtime/launch.h"

#define REL_TOL 1e-3
#define N_GREEDY 8
#define MAX_T 512

typedef struct variant {
    const char *name;
    const char *place;     /* NULL: the planner's */
    uint64_t device_mem;   /* bytes */
    bool per_op;
    bool device_only;      /* every layer and the LM head on the device */
    bool experts;          /* only for a model with experts */
} variant;

static const variant variants[] = {
    {"resident", "all=resident,lm_head=resident", 1ull << 30, false, true, false},
    {"streamed", "all=streamed,lm_head=resident", 1ull << 30, false, true, false},
    {"streamed per op", "all=streamed,lm_head=resident", 1ull << 30, true, true, false},
    {"mixed with host", "0=host,1=streamed,2-=resident,lm_head=host", 1ull << 30, false, false,
     false},
    {"resident per op", "all=resident,lm_head=resident", 1ull << 30, true, true, false},
    {"exp. host", "all=resident,experts:all=host,lm_head=resident", 1ull << 30, false,
     false, true},
    {"str. exp. host", "all=streamed,experts:all=host,lm_head=resident", 1ull << 30,
     false, false, true},
    {"exp. host per op", "all=resident,experts:all=host,lm_head=resident", 1ull << 30, true,
     false, true},
};

static sw_plan_options options(const char *be, const char *place, uint64_t dev_mem,
                               const char *weights) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = be;
    o.place = place;
    o.n_threads = 2;
    o.n_ctx = 256;
    o.n_batch = 32;
    o.device_mem_bytes = dev_mem;
    o.weights = weights;
    return o;
}

/* cpu_greedy: the cpu backend's continuation of the same prompt. */
static void compare_plans(const sw_model *m, const golden_file *g, const char *weights,
                          uint32_t V, sw_engine *cpu) {
    const golden_entry *ids = golden_find(g, "p0.ids");
    if (ids == NULL)
        return;
    /* 61 tokens: not a bucket's size, so every plan's prompt runs padded */
    uint32_t n = (uint32_t)ids->dims[0] > 61 ? 61 : (uint32_t)ids->dims[0];
    int32_t ref[N_GREEDY], got[N_GREEDY];
    float *ref_logits = calloc((size_t)N_GREEDY * V, sizeof(float));
    float *logits = calloc((size_t)N_GREEDY * V, sizeof(float));
    for (size_t i = 0; ref_logits && logits && i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        if (v->experts && (cpu == NULL || cpu->config.n_expert == 0))
            continue;
        sw_plan_options o = options("pjrt", v->place, v->device_mem, weights);
        engine_hooks hooks = {.backend = {.per_op = v->per_op}};
        sw_engine *e = NULL;
        SW_CHECK_OK(runtime_launch(m, &o, NULL, &hooks, &e));
        if (e == NULL)
            continue;
        memset(got, 0xff, sizeof got);
        mc_greedy(e, ids->data, n, V, N_GREEDY, got, i == 0 ? ref_logits : logits);
        mc_check_peak(e, v->name, 0);
        sw_engine_destroy(e);
        if (i == 0) {
            int32_t on_cpu[N_GREEDY];
            memcpy(ref, got, sizeof ref);
            memset(on_cpu, 0xff, sizeof on_cpu);
            if (cpu != NULL)
                mc_greedy(cpu, ids->data, n, V, N_GREEDY, on_cpu, logits);
            SW_CHECK(!memcmp(ref, on_cpu, sizeof ref), "pjrt greedy continuation differs "
                     "from the cpu backend's");
            printf("  cpu  greedy equal to pjrt resident: %s\n",
                   memcmp(ref, on_cpu, sizeof ref) ? "NO" : "yes");
            printf("  pjrt %-16s greedy", v->name);
            for (int k = 0; k < N_GREEDY; k++)
                printf(" %d", got[k]);
            printf("\n");
            continue;
        }
        bool same = !memcmp(ref, got, sizeof ref);
        bool bits = !memcmp(ref_logits, logits, (size_t)N_GREEDY * V * sizeof(float));
        SW_CHECK(same, "pjrt %s: greedy continuation differs from resident", v->name);
        if (v->device_only && !v->per_op)
            SW_CHECK(bits, "pjrt %s: logits not bit-identical to resident", v->name);
        printf("  pjrt %-16s same greedy: %s, bit-identical logits: %s\n", v->name,
               same ? "yes" : "NO", bits ? "yes" : "no");
    }
    free(ref_logits);
    free(logits);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s GOLDEN.swgold MODEL.gguf|--default-model [REL_TOL]\n",
                argv[0]);
        return 2;
    }
    const char *path = strcmp(argv[2], "--default-model") ? argv[2] : sw_test_default_model();
    const double rel_tol = argc == 4 ? atof(argv[3]) : REL_TOL;
    golden_file *g = NULL;
    sw_model *m = NULL;
    sw_engine *cpu = NULL, *pj = NULL;
    SW_CHECK_OK(golden_load(argv[1], &g));
    SW_CHECK_OK(sw_model_open(path, &m));
    if (g == NULL || m == NULL)
        goto done;
    uint32_t V = (uint32_t)sw_vocab_size(m);
    sw_plan_options po = options("pjrt", "all=resident,lm_head=resident", 1ull << 30, NULL);
    SW_CHECK_OK(sw_engine_launch(m, &po, NULL, &pj));
    if (pj == NULL)
        goto done;
    /* The cpu reference on the weights the PJRT plan computes with. */
    const char *weights = plan_convert_flag(plan_of(sw_engine_plan(pj))->model.convert);
    sw_plan_options co = options("cpu", NULL, 0, weights);
    SW_CHECK_OK(sw_engine_launch(m, &co, NULL, &cpu));
    printf("%s on pjrt (weights %s):\n", argv[2], weights ? weights : "as stored");
    if (cpu != NULL) {
        mc_prompts prompts;
        mc_prompts_from_golden(g, MAX_T, &prompts);
        mc_compare_forced(&prompts, cpu, pj, V, "teacher-forced:", rel_tol);
    }
    sw_engine_destroy(pj);
    pj = NULL;
    compare_plans(m, g, weights, V, cpu);
done:
    sw_engine_destroy(cpu);
    sw_engine_destroy(pj);
    sw_model_close(m);
    golden_free(g);
    return sw_check_finish("test_pjrt");
}
