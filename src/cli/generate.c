#define _POSIX_C_SOURCE 200809L
/*
 * generate.c — run's and chat's generation on the library's scheduler
 * (generate.h). Progress for long prefills goes to stderr; generated text
 * to the caller's stream, flushed per token so it appears as produced.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/generate.h"
#include "cli/interrupt.h"
#include "util/clock.h"


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

void gen_print_piece(void *user, sw_request *r, int32_t id, const char *piece, size_t len) {
    (void)r;
    (void)id;
    fwrite(piece, 1, len, (FILE *)user);
    fflush((FILE *)user);
}

/* "prefill 512/2048 tokens (25%)" on one updated stderr line, only for
 * prompts long enough to need it; *state: 0 nothing shown yet, 1 shown,
 * 2 done. */
static void prefill_progress(const sw_request_info *in, double t0, int *state) {
    const size_t total = in->n_prompt, done = in->n_fed;
    if (*state == 2 || total < 256 || (*state == 0 && sw_clock_s() - t0 < 0.5))
        return;
    *state = done == total ? 2 : 1;
    fprintf(stderr, "\rprefill %zu/%zu tokens (%zu%%)", done, total, done * 100 / total);
    if (done == total)
        fputc('\n', stderr);
}

int gen_wait(sw_scheduler *q, sw_request *r, uint32_t n_ctx, gen_stats *stats) {
    sw_request_info in;
    int shown = 0;
    const double t0 = sw_clock_s();
    for (;;) {
        uint32_t n = 0;
        sw_status st = sw_scheduler_step(q, &n);
        if (st != SW_OK)
            return cli_fail(st);
        sw_request_get_info(q, r, &in);
        prefill_progress(&in, t0, &shown);
        if (in.state == SW_REQ_DONE || n == 0)
            break;
    }
    *stats = (gen_stats){.n_prompt = in.n_prompt, .n_generated = in.n_generated,
                         .prefill_s = in.t_first - in.t_started,
                         .decode_s = in.t_end - in.t_first,
                         .stopped_by_eog = in.finish == SW_FINISH_EOG};
    if (in.finish == SW_FINISH_CONTEXT)
        fprintf(stderr, "\n[context of %u tokens is full: stopping]\n", n_ctx);
    if (in.finish == SW_FINISH_ERROR) {
        const char *why = "";
        const sw_status st = sw_request_error(q, r, &why);
        cli_error("generation stopped: %s", why[0] ? why : "the request failed");
        return st != SW_OK ? cli_exit_code(st) : CLI_EXIT_FAILURE;
    }
    if (in.finish == SW_FINISH_CANCELLED && cli_interrupt_signal) {
        cli_error("generation stopped: interrupted (signal %d)", (int)cli_interrupt_signal);
        return CLI_EXIT_SIGNAL + (int)cli_interrupt_signal;
    }
    if (in.finish == SW_FINISH_CANCELLED) {
        cli_error("generation stopped: the request was cancelled before it ended");
        return CLI_EXIT_CANCELLED;
    }
    return CLI_EXIT_OK;
}
