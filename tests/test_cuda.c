/*
 * test_cuda.c — the CUDA backend running whole models on a GPU, against
 * the cpu backend's f32 path (--cpu-dots f32, bit-exact to transformers):
 *   - teacher-forced over every golden prompt (or N random ids for a model
 *     without goldens): the same argmax at every position, and logits
 *     within REL_TOL of the row's largest |logit| (a bf16-level bound; the
 *     worst seen is printed), for the default kernels and for exact mode;
 *   - the greedy continuation (decode steps: the integer path, 8-bit
 *     activations, where the weight type has one) equal to the cpu
 *     default's (also 8-bit activations), its logits within REL_TOL of
 *     them (whether bit-identical is printed);
 *   - resident, streamed (every layer through the ring), per-op and exact
 *     resident plans bit-identical to each other where they run the same
 *     kernels; a plan mixing host, streamed and resident layers with a
 *     host LM head giving the same continuation;
 *   - the device peak: our accounting within the plan, and the driver's
 *     (cudaMemGetInfo deltas) within it plus allocation granularity.
 * Without a visible device it prints why and exits 77 (CTest: skipped).
 *
 * usage: test_cuda GOLDEN.swgold MODEL.gguf|--default-model
 *        test_cuda --ids N MODEL.gguf
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
#include "util/error.h"

#define SKIP 77
#define REL_TOL 4e-3      /* of the row's max |logit|: bf16's 2^-8 */
#define EXACT_REL_TOL 1e-4
#define N_GREEDY 8
#define MAX_T 256
#define GRANULE (2u << 20) /* the driver hands out device memory in 2 MiB pages */

typedef struct variant {
    const char *name;
    const char *place;
    bool per_op, exact;
    bool same_bits;        /* as the resident plan's (same kernels) */
} variant;

static const variant variants[] = {
    {"resident", "all=resident,lm_head=resident", false, false, true},
    {"streamed", "all=streamed,lm_head=resident", false, false, true},
    {"streamed per op", "all=streamed,lm_head=resident", true, false, true},
    {"resident per op", "all=resident,lm_head=resident", true, false, true},
    {"mixed with host", "0=host,1=streamed,2-=resident,lm_head=host", false, false, false},
};

static sw_plan_options options(const char *be, const char *place, bool exact) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = be;
    o.place = place;
    o.n_ctx = 256;           /* the tiny models' trained context */
    o.n_batch = 64;
    o.cpu_dots = exact ? "f32" : NULL;
    return o;
}

/* The largest |a - b| over the largest |b|, over n values. */
static double rel_diff(const float *a, const float *b, size_t n) {
    double worst = 0, top = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        worst = d > worst || isnan(d) ? d : worst;
        top = fabs((double)b[i]) > top ? fabs((double)b[i]) : top;
    }
    return top > 0 ? worst / top : worst;
}

static void compare_plans(const sw_model *m, const mc_prompts *p, uint32_t V, sw_engine *cpu) {
    uint32_t n = p->len[0] > 64 ? 64 : p->len[0];
    int32_t ref[N_GREEDY], got[N_GREEDY], on_cpu[N_GREEDY];
    float *ref_logits = calloc((size_t)N_GREEDY * V, sizeof(float));
    float *logits = calloc((size_t)N_GREEDY * V, sizeof(float));
    for (size_t i = 0; ref_logits && logits && i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        sw_plan_options o = options("cuda", v->place, v->exact);
        engine_hooks hooks = {.backend = {.per_op = v->per_op}};
        sw_engine *e = NULL;
        SW_CHECK_OK(runtime_launch(m, &o, NULL, &hooks, &e));
        if (e == NULL)
            continue;
        memset(got, 0xff, sizeof got);
        mc_greedy(e, p->ids[0], n, V, N_GREEDY, got, i == 0 ? ref_logits : logits);
        mc_check_peak(e, v->name, GRANULE);
        sw_engine_destroy(e);
        if (i == 0) {
            memcpy(ref, got, sizeof ref);
            memset(on_cpu, 0xff, sizeof on_cpu);
            mc_greedy(cpu, p->ids[0], n, V, N_GREEDY, on_cpu, logits);
            const size_t nl = (size_t)N_GREEDY * V;
            const double rd = rel_diff(ref_logits, logits, nl);
            SW_CHECK(!memcmp(ref, on_cpu, sizeof ref), "cuda greedy continuation differs "
                     "from the cpu default's (8-bit activations)");
            SW_CHECK(rd <= REL_TOL, "cuda greedy logits %.3g of the largest from the cpu "
                     "default's (bound %.3g)", rd, REL_TOL);
            printf("  cuda %-16s greedy", v->name);
            for (int k = 0; k < N_GREEDY; k++)
                printf(" %d", got[k]);
            printf("  (cpu default: %s; logits %.3g of the largest apart, bit-identical: %s)\n",
                   memcmp(ref, on_cpu, sizeof ref) ? "DIFFERS" : "same", rd,
                   memcmp(ref_logits, logits, nl * sizeof(float)) ? "no" : "yes");
            continue;
        }
        bool same = !memcmp(ref, got, sizeof ref);
        bool bits = !memcmp(ref_logits, logits, (size_t)N_GREEDY * V * sizeof(float));
        SW_CHECK(same, "cuda %s: greedy continuation differs from resident", v->name);
        if (v->same_bits)
            SW_CHECK(bits, "cuda %s: logits not bit-identical to resident", v->name);
        printf("  cuda %-16s same greedy: %s, bit-identical logits: %s\n", v->name,
               same ? "yes" : "NO", bits ? "yes" : "no");
    }
    free(ref_logits);
    free(logits);
}

/* The golden file's prompts, or n random ids (a model without goldens). */
static sw_status load_prompts(const char *golden, uint32_t n_random, uint32_t V,
                              golden_file **g, int32_t **random, mc_prompts *p) {
    memset(p, 0, sizeof *p);
    if (golden == NULL) {
        uint64_t rng = 0x5eed;
        *random = malloc(n_random * sizeof(int32_t));
        if (*random == NULL)
            return SW_ERR_OOM_HOST;
        for (uint32_t i = 0; i < n_random; i++)
            (*random)[i] = 2 + (int32_t)(sw_test_rng_next(&rng) % (V - 2));
        p->n = 1;
        p->ids[0] = *random;
        p->len[0] = n_random;
        return SW_OK;
    }
    SW_TRY(golden_load(golden, g));
    mc_prompts_from_golden(*g, MAX_T, p);
    return SW_OK;
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && !strcmp(argv[1], "--ids"))) {
        fprintf(stderr, "usage: %s GOLDEN.swgold MODEL.gguf|--default-model\n"
                        "       %s --ids N MODEL.gguf\n", argv[0], argv[0]);
        return 2;
    }
    sw_device_report *rep = calloc(1, sizeof *rep);
    if (rep == NULL || sw_devices_query(rep) != SW_OK) {
        printf("test_cuda: skipped: %s\n", sw_last_error());
        free(rep);
        return SKIP;
    }
    printf("test_cuda on %s (%.1f GiB free)\n", rep->devices[0].name,
           (double)rep->devices[0].free_bytes / 1073741824.0);
    free(rep);
    const bool random_ids = argc == 4;
    const char *model = argv[argc - 1];
    const char *path = strcmp(model, "--default-model") ? model : sw_test_default_model();
    golden_file *g = NULL;
    int32_t *ids = NULL;
    sw_model *m = NULL;
    sw_engine *cpu = NULL, *cpu_q8 = NULL, *dev = NULL, *exact = NULL;
    mc_prompts p;
    SW_CHECK_OK(sw_model_open(path, &m));
    if (m == NULL)
        goto done;
    uint32_t V = (uint32_t)sw_vocab_size(m);
    SW_CHECK_OK(load_prompts(random_ids ? NULL : argv[1], random_ids ? (uint32_t)atoi(argv[2]) : 0,
                             V, &g, &ids, &p));
    sw_plan_options co = options("cpu", NULL, true), dopt = options("cuda", "all=resident,"
                                                                     "lm_head=resident", false);
    sw_plan_options eopt = options("cuda", "all=resident,lm_head=resident", true);
    sw_plan_options qo = options("cpu", NULL, false);
    SW_CHECK_OK(sw_engine_launch(m, &co, NULL, &cpu));
    SW_CHECK_OK(sw_engine_launch(m, &qo, NULL, &cpu_q8));
    SW_CHECK_OK(sw_engine_launch(m, &dopt, NULL, &dev));
    SW_CHECK_OK(sw_engine_launch(m, &eopt, NULL, &exact));
    if (cpu == NULL || cpu_q8 == NULL || dev == NULL || exact == NULL || p.n == 0)
        goto done;
    printf("%s: %d prompt(s), cuda against the cpu backend's f32 path\n", path, p.n);
    mc_compare_forced(&p, cpu, dev, V, "tensor cores (tf32x3)", REL_TOL);
    mc_compare_forced(&p, cpu, exact, V, "exact (f32 SIMT)", EXACT_REL_TOL);
    sw_engine_destroy(dev);
    sw_engine_destroy(exact);
    dev = exact = NULL;
    compare_plans(m, &p, V, cpu_q8);
done:
    sw_engine_destroy(cpu_q8);
    sw_engine_destroy(exact);
    sw_engine_destroy(dev);
    sw_engine_destroy(cpu);
    sw_model_close(m);
    golden_free(g);
    free(ids);
    return sw_check_finish("test_cuda");
}
