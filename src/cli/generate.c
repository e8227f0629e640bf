#define _POSIX_C_SOURCE 200809L
/*
 * generate.c — prefill and decode loop (generate.h). Progress for long
 * prefills goes to stderr; generated text to the caller's stream, flushed
 * per token so it appears as produced.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/generate.h"

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct progress_state {
    double start_s;
    int shown;
} progress_state;

/* Prints "prefill 512/2048 tokens (25%)" on one updated stderr line, only
 * for prompts long enough to need it. */
static void on_progress(void *user, size_t done, size_t total) {
    progress_state *p = user;
    if (total < 256 || cli_now_s() - p->start_s < 0.5)
        return;
    p->shown = 1;
    fprintf(stderr, "\rprefill %zu/%zu tokens (%zu%%)", done, total, done * 100 / total);
    if (done == total)
        fputc('\n', stderr);
}

static bool is_end_of_generation(const sw_special_tokens *sp, int32_t id) {
    return id == sp->eos || (sp->end_of_turn >= 0 && id == sp->end_of_turn);
}

/* Writes the printable bytes of token id. */
static void print_token(const gen_ctx *g, int32_t id) {
    char buf[256];
    size_t len = 0;
    if (sw_token_to_piece(g->model, id, buf, sizeof buf, &len) != SW_OK)
        return;
    fwrite(buf, 1, len < sizeof buf ? len : sizeof buf, g->out);
    fflush(g->out);
}

int generate(const gen_ctx *g, const int32_t *ids, size_t n, gen_stats *stats) {
    sw_special_tokens sp;
    sw_status st = sw_model_special_tokens(g->model, &sp);
    if (st != SW_OK)
        return cli_fail(st);
    *stats = (gen_stats){.n_prompt = n, .last_token = -1};
    progress_state prog = {cli_now_s(), 0};
    sw_session_set_progress(g->session, on_progress, &prog);
    double t0 = cli_now_s();
    st = sw_session_eval(g->session, ids, n, g->logits, 0);
    sw_session_set_progress(g->session, NULL, NULL);
    if (st != SW_OK)
        return cli_fail(st);
    double t1 = cli_now_s();
    stats->prefill_s = t1 - t0;

    for (;;) {
        int32_t id = sw_sampler_sample(g->sampler, g->logits);
        stats->last_token = id;
        if (is_end_of_generation(&sp, id)) {
            stats->stopped_by_eog = true;
            break;
        }
        print_token(g, id);
        stats->n_generated++;
        if (g->n_predict >= 0 && stats->n_generated >= (size_t)g->n_predict)
            break;
        if (sw_session_pos(g->session) >= g->n_ctx) {
            fprintf(stderr, "\n[context of %u tokens is full: stopping]\n", g->n_ctx);
            stats->last_token = -1;
            break;
        }
        st = sw_session_eval(g->session, &id, 1, g->logits, 0);
        if (st != SW_OK)
            return cli_fail(st);
    }
    stats->decode_s = cli_now_s() - t1;
    return CLI_EXIT_OK;
}
