#define _POSIX_C_SOURCE 200809L
/*
 * generate.c — prefill and decode loop (generate.h). Progress for long
 * prefills goes to stderr; generated text to the caller's stream, flushed
 * per token so it appears as produced.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/generate.h"
#include "sched/stop.h"
#include "util/clock.h"


typedef struct progress_state {
    double start_s;
    int shown;
} progress_state;

/* Prints "prefill 512/2048 tokens (25%)" on one updated stderr line, only
 * for prompts long enough to need it. */
static void on_progress(void *user, size_t done, size_t total) {
    progress_state *p = user;
    if (total < 256 || sw_clock_s() - p->start_s < 0.5)
        return;
    p->shown = 1;
    fprintf(stderr, "\rprefill %zu/%zu tokens (%zu%%)", done, total, done * 100 / total);
    if (done == total)
        fputc('\n', stderr);
}

int gen_prompt_tokens(const sw_model *m, bool no_special, bool truncate, long n_predict,
                      uint32_t n_ctx, const char *text, size_t len, const char *where,
                      int32_t **ids, size_t *n) {
    unsigned flags = SW_TOK_ADD_BOS | (no_special ? 0 : SW_TOK_PARSE_SPECIAL);
    const char *pre = where ? where : "", *sep = where ? ": " : "";
    *ids = malloc(SW_TOKENIZE_MAX_IDS(len) * sizeof **ids);
    if (*ids == NULL) {
        cli_error("%s%sout of memory tokenizing the prompt", pre, sep);
        return CLI_EXIT_OOM_HOST;
    }
    sw_status st = sw_tokenize(m, text, len, flags, *ids, SW_TOKENIZE_MAX_IDS(len), n);
    if (st != SW_OK) {
        cli_error("%s%s%s", pre, sep, sw_last_error());
        return cli_exit_code(st);
    }
    size_t reserve = n_predict > 0 ? (size_t)n_predict : 1;
    if (reserve >= n_ctx)
        reserve = n_ctx / 2;
    if (*n + reserve <= n_ctx)
        return CLI_EXIT_OK;
    if (!truncate) {
        cli_error("%s%sthe prompt is %zu tokens but the context holds %u (with %zu to "
                  "generate); raise -c, shorten the prompt, or pass --truncate", pre, sep, *n,
                  n_ctx, reserve);
        return CLI_EXIT_USAGE;
    }
    sw_special_tokens sp;
    sw_model_special_tokens(m, &sp);
    size_t keep = n_ctx - reserve;
    size_t head = ((*ids)[0] == sp.bos && keep > 1) ? 1 : 0; /* keep BOS */
    memmove(*ids + head, *ids + (*n - (keep - head)), (keep - head) * sizeof **ids);
    fprintf(stderr, "note: %s%sprompt truncated from %zu to its last %zu tokens\n", pre, sep,
            *n, keep);
    *n = keep;
    return CLI_EXIT_OK;
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
    progress_state prog = {sw_clock_s(), 0};
    sw_session_set_progress(g->session, on_progress, &prog);
    double t0 = sw_clock_s();
    st = sw_session_eval(g->session, ids, n, g->logits, 0);
    sw_session_set_progress(g->session, NULL, NULL);
    if (st != SW_OK)
        return cli_fail(st);
    double t1 = sw_clock_s();
    stats->prefill_s = t1 - t0;

    for (;;) {
        int32_t id = sw_sampler_sample(g->sampler, g->logits);
        bool print = false;
        sw_finish stop = sched_after_sample(&sp, g->n_predict, &stats->n_generated, id,
                                            sw_session_pos(g->session), g->n_ctx, &print);
        stats->last_token = id;
        if (print)
            print_token(g, id);
        stats->stopped_by_eog = stop == SW_FINISH_EOG;
        if (stop == SW_FINISH_CONTEXT) {
            fprintf(stderr, "\n[context of %u tokens is full: stopping]\n", g->n_ctx);
            stats->last_token = -1;
        }
        if (stop != SW_FINISH_NONE)
            break;
        st = sw_session_eval(g->session, &id, 1, g->logits, 0);
        if (st != SW_OK)
            return cli_fail(st);
    }
    stats->decode_s = sw_clock_s() - t1;
    return CLI_EXIT_OK;
}
