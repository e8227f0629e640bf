/*
 * stop.h — when generation stops after a sampled token: the one rule that
 * run, chat, batch and serve share (through the scheduler, or directly),
 * so that their outputs agree.
 */
#ifndef SW_SCHED_STOP_H
#define SW_SCHED_STOP_H

#include <stdbool.h>

#include "spillway.h"

/* After sampling `id` with the sequence at position pos (tokens evaluated;
 * the sampled one is not yet), *print says whether id's text is output
 * (an end-of-turn or end-of-sequence token is not) and *n_generated
 * counts output tokens. Returns SW_FINISH_EOG at an end token,
 * SW_FINISH_LIMIT after n_predict output tokens (n_predict >= 0),
 * SW_FINISH_CONTEXT when pos has reached n_ctx, else SW_FINISH_NONE. */
sw_finish sched_after_sample(const sw_special_tokens *sp, long n_predict, size_t *n_generated,
                             int32_t id, uint32_t pos, uint32_t n_ctx, bool *print);

#endif
