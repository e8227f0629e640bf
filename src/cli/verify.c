/*
 * verify.c — `spillway verify`: the check to run after changing memory
 * settings. Four short prompts run under the chosen plan and under the
 * all-host reference plan (cpu backend); it prints each plan's peak device
 * memory and bytes streamed, and how the outputs agree: max |Δlogit| over
 * every prompt position, same argmax, and equal greedy continuations.
 * Exit 0 only when argmax and continuations agree everywhere. The
 * reference keeps the chosen --kv-type and --weights: verify checks that
 * placement changes nothing (bit for bit on one backend), not what a
 * lower precision costs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gen_opts.h"
#include "cli/model_arg.h"

#define N_CONTINUE 16

static const char *const prompts[] = {
    "The quick brown fox jumps over the lazy dog because",
    "In 1969, the first humans landed on the Moon. The mission was called",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "春天来了，公园里的花都开了，",
};
#define N_PROMPTS (sizeof prompts / sizeof prompts[0])

typedef struct side_run {
    sw_engine *engine;
    sw_session *session;
    float *logits;         /* (n_ids, n_vocab) */
    int32_t cont[N_CONTINUE];
} side_run;

static int32_t argmax(const float *x, uint32_t n) {
    int32_t b = 0;
    for (uint32_t i = 1; i < n; i++)
        b = x[i] > x[b] ? (int32_t)i : b;
    return b;
}

/* Evaluates ids (all logits), then greedily continues N_CONTINUE tokens. */
static sw_status run_side(side_run *r, const int32_t *ids, size_t n, uint32_t V) {
    sw_status st;
    if ((st = sw_session_create(r->engine, &r->session)) != SW_OK ||
        (st = sw_session_eval(r->session, ids, n, r->logits, 1)) != SW_OK)
        goto done;
    float *last = r->logits + (n - 1) * V;
    float *step = malloc(V * sizeof *step);
    if (step == NULL) {
        st = SW_ERR_OOM_HOST;
        goto done;
    }
    memcpy(step, last, V * sizeof *step);
    for (int i = 0; i < N_CONTINUE && st == SW_OK; i++) {
        r->cont[i] = argmax(step, V);
        st = sw_session_eval(r->session, &r->cont[i], 1, step, 0);
    }
    free(step);
done:
    sw_session_destroy(r->session);
    r->session = NULL;
    return st;
}

static void print_side(const char *name, const sw_engine *e) {
    sw_report rep;
    sw_engine_report(e, &rep);
    printf("%-10s device peak %8.1f MiB (plan %.1f MiB, budget %.1f MiB), to device %8.1f MiB\n",
           name, rep.peak_device_bytes / 1048576.0, rep.plan_device_bytes / 1048576.0,
           rep.device_budget_bytes / 1048576.0, rep.bytes_to_device / 1048576.0);
}

static int compare(sw_model *m, side_run *a, side_run *b) {
    uint32_t V = sw_engine_n_vocab(a->engine);
    int bad = 0;
    printf("%-6s %6s %12s %8s %10s\n", "prompt", "tokens", "max|dlogit|", "argmax", "greedy");
    for (size_t p = 0; p < N_PROMPTS; p++) {
        int32_t ids[256];
        size_t n = 0;
        sw_status st = sw_tokenize(m, prompts[p], strlen(prompts[p]), SW_TOK_ADD_BOS, ids,
                                   256, &n);
        if (st != SW_OK || (st = run_side(a, ids, n, V)) != SW_OK ||
            (st = run_side(b, ids, n, V)) != SW_OK)
            return cli_fail(st);
        double maxd = 0;
        size_t same = 0;
        for (size_t t = 0; t < n; t++) {
            const float *x = a->logits + t * V, *y = b->logits + t * V;
            for (uint32_t v = 0; v < V; v++)
                maxd = fmax(maxd, fabs((double)x[v] - y[v]));
            same += argmax(x, V) == argmax(y, V);
        }
        int greedy = !memcmp(a->cont, b->cont, sizeof a->cont);
        bad += same != n || !greedy;
        printf("%-6zu %6zu %12.3g %4zu/%-3zu %10s\n", p + 1, n, maxd, same, n,
               greedy ? "equal" : "DIFFERENT");
    }
    printf("%s\n", bad ? "verify: outputs DISAGREE" : "verify: outputs agree");
    return bad ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static void usage(FILE *out) {
    fputs("usage: spillway verify [-m MODEL] [memory options]\n"
          "  runs four prompts under the chosen plan and the all-host plan and compares\n"
          "  their logits, argmax and greedy continuations\n", out);
    gen_opts_usage(out);
}

int cmd_verify(int argc, char **argv) {
    gen_opts o;
    gen_opts_init(&o);
    int parsed = gen_opts_parse_all(&o, argc, argv, usage);
    if (parsed != CLI_EXIT_OK)
        return parsed < 0 ? CLI_EXIT_OK : parsed;
    sw_model *m = NULL;
    side_run a = {0}, b = {0};
    if (o.plan.n_ctx == 0)
        o.plan.n_ctx = 512;
    gen_opts ref = o;   /* the all-host plan, same precision and workload */
    ref.plan.backend = "cpu";
    ref.plan.place = NULL;
    ref.plan.n_gpu_layers = -1;
    ref.plan.device_mem_bytes = 0;
    ref.plan.device_mem_fraction = 0;
    ref.n_split = ref.n_devices = 0; /* one engine on the host, whatever o splits over */
    ref.plan_json = NULL;
    int rc = cli_open_model(o.model, &m);
    if (rc != CLI_EXIT_OK)
        return rc;
    sw_plan_summary sum;
    if ((rc = gen_opts_start_engine(&o, m, &a.engine)) != CLI_EXIT_OK)
        goto done;
    /* The reference computes on the weights the plan does, also when the
     * backend chose them (pjrt dequantizes to bf16). */
    if (sw_plan_get_summary(sw_engine_plan(a.engine), &sum) == SW_OK && sum.weights[0])
        ref.plan.weights = o.plan.weights = sum.weights;
    if ((rc = gen_opts_start_engine(&ref, m, &b.engine)) != CLI_EXIT_OK)
        goto done;
    size_t V = sw_engine_n_vocab(a.engine);
    a.logits = malloc(256 * V * sizeof(float));
    b.logits = malloc(256 * V * sizeof(float));
    if (a.logits == NULL || b.logits == NULL) {
        cli_error("out of host memory for logits");
        rc = CLI_EXIT_OOM_HOST;
        goto done;
    }
    sw_engine_print_plan(a.engine, stdout, 0);
    if (o.plan.kv_type || o.plan.weights)
        printf("\nreference: all-host plan with the same --kv-type %s and --weights %s\n",
               o.plan.kv_type ? o.plan.kv_type : "default",
               o.plan.weights ? o.plan.weights : "(as stored)");
    printf("\n");
    rc = compare(m, &a, &b);
    print_side("plan", a.engine);
    print_side("all-host", b.engine);
done:
    free(a.logits);
    free(b.logits);
    sw_engine_destroy(a.engine);
    sw_engine_destroy(b.engine);
    sw_model_close(m);
    return rc;
}
