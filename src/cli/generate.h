/*
 * generate.h — the prefill + decode loop shared by `run` and `chat`:
 * evaluate prompt tokens with a progress line, then sample and print
 * tokens as they are produced until end of turn, N tokens or a full
 * context (the library's stop rule, sched/stop.h, which batch and serve
 * stop by through the scheduler). One session that chat continues across
 * turns, so its cache is reused. Reports timing so callers can print
 * tokens/s.
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
    int32_t last_token;      /* the token that ended generation, or -1 */
    bool stopped_by_eog;     /* end of sequence / end of turn was sampled */
} gen_stats;

typedef struct gen_ctx {
    const sw_model *model;
    sw_session *session;
    sw_sampler *sampler;
    float *logits;           /* (n_vocab) */
    long n_predict;          /* -1: until end of turn or full context */
    uint32_t n_ctx;          /* the session's context length */
    FILE *out;               /* where generated text goes */
} gen_ctx;

/* Tokenizes a prompt (BOS added; control tokens parsed unless
 * no_special) into a malloc'd *ids. A prompt that leaves no room for
 * n_predict tokens (at least one) in n_ctx is refused, or with truncate
 * keeps BOS and its tail. `where` (may be NULL) starts messages ("line 7").
 * Returns an exit status, printing the error. */
int gen_prompt_tokens(const sw_model *m, bool no_special, bool truncate, long n_predict,
                      uint32_t n_ctx, const char *text, size_t len, const char *where,
                      int32_t **ids, size_t *n);

/* Evaluates `ids` (n of them) then generates. The last sampled token
 * (stats->last_token: an end-of-generation token, or the last printed one
 * when -n stopped it; -1 when the context filled) is not evaluated: the
 * caller decides what follows it. Returns an exit
 * status (printing the error on failure). */
int generate(const gen_ctx *g, const int32_t *ids, size_t n, gen_stats *stats);

#endif
