/*
 * generate.h — the prefill + decode loop shared by `run` and `chat`:
 * evaluate prompt tokens with a progress line, then sample and print
 * tokens as they are produced until end of turn, N tokens or a full
 * context. Reports timing so callers can print tokens/s.
 */
#ifndef SW_CLI_GENERATE_H
#define SW_CLI_GENERATE_H

#include "cli/cli.h"

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

/* Evaluates `ids` (n of them) then generates. The last sampled token
 * (stats->last_token: an end-of-generation token, or the last printed one
 * when -n stopped it; -1 when the context filled) is not evaluated: the
 * caller decides what follows it. Returns an exit
 * status (printing the error on failure). */
int generate(const gen_ctx *g, const int32_t *ids, size_t n, gen_stats *stats);

/* Monotonic seconds. */
double cli_now_s(void);

#endif
