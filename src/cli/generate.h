/*
 * generate.h — what `run` and `chat` share to drive the library's
 * scheduler (as batch and serve do): a request's tokens printed as they
 * come, steps until it ends (end of turn, N tokens, a full context: the
 * library's stop rule) with a progress line for long prompts, and its
 * timing for tokens/s. Chat continues one request's sequence turn after
 * turn (sw_scheduler_continue), so its cache is reused.
 */
#ifndef SW_CLI_GENERATE_H
#define SW_CLI_GENERATE_H

#include "cli/cli.h"
#include "util/clock.h"

typedef struct gen_stats {
    size_t n_prompt;
    size_t n_generated;
    double prefill_s;
    double decode_s;
    bool stopped_by_eog;     /* end of sequence / end of turn was sampled */
} gen_stats;

/* An sw_token_fn printing each piece to `user`, a FILE *, flushed. */
void gen_print_piece(void *user, sw_request *r, int32_t id, const char *piece, size_t len);

/* Steps q until request r ends (its text printed by gen_print_piece as it
 * comes), with a progress line for long prompts; stats from r's info; a
 * note when the context (n_ctx) filled. Returns an exit status (printing
 * the error on failure); a cancelled request gives CLI_EXIT_CANCELLED, or
 * CLI_EXIT_SIGNAL + the signal when a caught signal (interrupt.h) was why. */
int gen_wait(sw_scheduler *q, sw_request *r, uint32_t n_ctx, gen_stats *stats);

/* Tokenizes a prompt (BOS added; control tokens parsed unless
 * no_special) into a malloc'd *ids. A prompt that leaves no room for
 * n_predict tokens (at least one) in n_ctx is refused, or with truncate
 * keeps BOS and its tail. `where` (may be NULL) starts messages ("line 7").
 * Returns an exit status, printing the error. */
int gen_prompt_tokens(const sw_model *m, bool no_special, bool truncate, long n_predict,
                      uint32_t n_ctx, const char *text, size_t len, const char *where,
                      int32_t **ids, size_t *n);

#endif
