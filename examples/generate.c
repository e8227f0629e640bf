/*
 * generate.c — Spillway end to end through its public API only: open a
 * model, plan and start an engine, tokenize a prompt, evaluate it, and
 * decode greedily, printing each token as it comes; then close everything,
 * sessions before their engine, the engine before its model.
 *
 *   cc generate.c $(pkg-config --cflags --libs spillway) -o generate
 *   ./generate MODEL.gguf "The capital of France is" 16 [BACKEND]
 *
 * BACKEND: cpu (default), sim, pjrt or cuda. Exit status 0 on success, 1
 * with Spillway's message on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spillway.h>

static int fail(const char *what) {
    fprintf(stderr, "generate: %s: %s\n", what, sw_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL PROMPT N_TOKENS [BACKEND]\n", argv[0]);
        return 2;
    }
    const char *prompt = argv[2];
    const int n_predict = atoi(argv[3]);
    sw_model *model = NULL;
    sw_engine *engine = NULL;
    sw_session *session = NULL;
    sw_sampler *sampler = NULL;
    int32_t *ids = NULL;
    float *logits = NULL;
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
    logits = malloc(sw_engine_n_vocab(engine) * sizeof *logits);
    if (ids == NULL || logits == NULL) {
        fprintf(stderr, "generate: out of memory\n");
        goto done;
    }
    sw_sampler_options so = sw_sampler_options_default();
    so.temp = 0.0f; /* greedy */
    if (sw_tokenize(model, prompt, len, SW_TOK_ADD_BOS, ids, SW_TOKENIZE_MAX_IDS(len),
                    &n_ids) != SW_OK ||
        sw_session_create(engine, &session) != SW_OK ||
        sw_sampler_create(&so, sw_engine_n_vocab(engine), &sampler) != SW_OK) {
        rc = fail("prepare");
        goto done;
    }
    /* The prompt in one call (prefill), then one token at a time. */
    if (sw_session_eval(session, ids, n_ids, logits, 0) != SW_OK) {
        rc = fail("prompt");
        goto done;
    }
    sw_special_tokens sp;
    if (sw_model_special_tokens(model, &sp) != SW_OK) {
        rc = fail("special tokens");
        goto done;
    }
    for (int i = 0; i < n_predict; i++) {
        int32_t next = sw_sampler_sample(sampler, logits);
        if (next == sp.eos)
            break;
        char piece[256];
        size_t plen = 0;
        if (sw_token_to_piece(model, next, piece, sizeof piece, &plen) != SW_OK) {
            rc = fail("piece");
            goto done;
        }
        fwrite(piece, 1, plen < sizeof piece ? plen : sizeof piece, stdout);
        fflush(stdout);
        if (sw_session_eval(session, &next, 1, logits, 0) != SW_OK) {
            rc = fail("decode");
            goto done;
        }
    }
    printf("\n");
    rc = 0;
done:
    sw_sampler_destroy(sampler);
    sw_session_destroy(session); /* sessions before their engine */
    sw_engine_destroy(engine);   /* the engine before its model */
    sw_model_close(model);
    free(ids);
    free(logits);
    return rc;
}
