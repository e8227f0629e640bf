/*
 * generate.c — Spillway end to end through its public API only: open a
 * model, plan and start an engine, queue a request on a scheduler (the
 * continuous batching `spillway batch` and `serve` run on), and step it,
 * printing each token as it comes; then close everything, the scheduler
 * before its engine, the engine before its model.
 *
 *   cc generate.c $(pkg-config --cflags --libs spillway) -o generate
 *   ./generate MODEL.gguf "The capital of France is" 16 [BACKEND]
 *
 * BACKEND: cpu (default), sim, pjrt or cuda. Exit status 0 on success, 1
 * with Spillway's message on failure. More requests could be queued on
 * the same scheduler: each step would carry all of them in one forward.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spillway.h>

static int fail(const char *what) {
    fprintf(stderr, "generate: %s: %s\n", what, sw_last_error());
    return 1;
}

/* Called inside sw_scheduler_step for each output token, as it is sampled. */
static void print_piece(void *user, sw_request *request, int32_t id, const char *piece,
                        size_t len) {
    (void)user;
    (void)request;
    (void)id;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL PROMPT N_TOKENS [BACKEND]\n", argv[0]);
        return 2;
    }
    const char *prompt = argv[2];
    sw_model *model = NULL;
    sw_engine *engine = NULL;
    sw_scheduler *sched = NULL;
    sw_request *request = NULL;
    int32_t *ids = NULL;
    int rc = 1;

    if (sw_model_open(argv[1], &model) != SW_OK)
        return fail("open");
    /* The plan: where every layer lives. Defaults fit the machine; here a
     * short context and the backend asked for. */
    sw_plan_options po = sw_plan_options_default();
    po.n_ctx = 256;
    po.backend = argc > 4 ? argv[4] : "cpu";
    if (sw_engine_launch(model, &po, NULL, &engine) != SW_OK) {
        rc = fail("engine");
        goto done;
    }
    const size_t len = strlen(prompt);
    size_t n_ids = 0;
    ids = malloc(SW_TOKENIZE_MAX_IDS(len) * sizeof *ids);
    if (ids == NULL) {
        fprintf(stderr, "generate: out of memory\n");
        goto done;
    }
    sw_request_options ro = sw_request_options_default();
    ro.sampling.temp = 0.0f; /* greedy */
    ro.n_predict = atoi(argv[3]);
    ro.on_token = print_piece;
    if (sw_tokenize(model, prompt, len, SW_TOK_ADD_BOS, ids, SW_TOKENIZE_MAX_IDS(len),
                    &n_ids) != SW_OK ||
        sw_scheduler_create(engine, model, &sched) != SW_OK ||
        sw_scheduler_submit(sched, ids, n_ids, &ro, &request) != SW_OK) {
        rc = fail("prepare");
        goto done;
    }
    /* Each step is one forward: the prompt (in chunks), then one token a
     * step, until the request ends (n tokens, an end token, a full
     * context); a step with nothing to do returns 0 tokens. */
    uint32_t n = 1;
    while (n > 0) {
        if (sw_scheduler_step(sched, &n) != SW_OK) {
            rc = fail("step");
            goto done;
        }
    }
    sw_request_info info;
    sw_request_get_info(sched, request, &info);
    printf("\n");
    fprintf(stderr, "generate: %zu tokens, ended: %s\n", info.n_generated,
            sw_finish_name(info.finish));
    rc = 0;
done:
    sw_request_release(sched, request);
    sw_scheduler_destroy(sched); /* the scheduler (its sessions) before its engine */
    sw_engine_destroy(engine);   /* the engine before its model */
    sw_model_close(model);
    free(ids);
    return rc;
}
