/*
 * stop.c — the stop rule (stop.h) and the names of the ways a request
 * ends.
 */
#include "sched/stop.h"

static bool is_end_of_generation(const sw_special_tokens *sp, int32_t id) {
    return id == sp->eos || (sp->end_of_turn >= 0 && id == sp->end_of_turn);
}

sw_finish sched_after_sample(const sw_special_tokens *sp, long n_predict, size_t *n_generated,
                             int32_t id, uint32_t pos, uint32_t n_ctx, bool *print) {
    *print = !is_end_of_generation(sp, id);
    if (!*print)
        return SW_FINISH_EOG;
    (*n_generated)++;
    if (n_predict >= 0 && *n_generated >= (size_t)n_predict)
        return SW_FINISH_LIMIT;
    return pos >= n_ctx ? SW_FINISH_CONTEXT : SW_FINISH_NONE;
}

const char *sw_finish_name(sw_finish finish) {
    static const char *const names[] = {"", "eog", "limit", "context", "stop", "cancelled",
                                        "error"};
    return (unsigned)finish < sizeof names / sizeof names[0] ? names[finish] : "";
}
