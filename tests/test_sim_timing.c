/*
 * test_sim_timing.c — with every layer streamed over a throttled simulated
 * link, decode is link-bound: the measured decode speed must be within 25%
 * of the plan's prediction, and the report must show copies overlapping
 * compute: of the evaluations' compute time (wall time less the time
 * compute stalled for copies) a good part ran while the link was busy
 * (link busy time not spent stalled). Serial copies would hide nothing.
 * Default model.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "util/clock.h"

#define LINK_BPS 100e6
#define N_DECODE 6


int main(void) {
    sw_model *m = NULL;
    sw_engine *e = NULL;
    sw_session *s = NULL;
    float *logits = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_default_model(), &m));
    if (m == NULL)
        goto done;
    sw_plan_options o = sw_plan_options_default();
    o.n_threads = 1; /* leave a core to the copy thread (CI has two) */
    o.n_ctx = 128;
    o.n_batch = 16;
    o.backend = "sim";
    o.device_mem_bytes = 64ull << 20;
    o.sim_link_Bps = LINK_BPS;
    o.place = "all=streamed,lm_head=host";
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    if (e == NULL)
        goto done;
    SW_CHECK(e->ring.n_streamed == e->config.n_layer, "expected every layer streamed");
    SW_CHECK_OK(sw_session_create(e, &s));
    logits = malloc(sw_engine_n_vocab(e) * sizeof(float));
    int32_t ids[8];
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, "The spillway", 12, SW_TOK_ADD_BOS, ids, 8, &n));
    const double t0 = sw_clock_s();
    SW_CHECK_OK(sw_session_eval(s, ids, n, logits, 0));
    for (int i = 0; i < N_DECODE; i++) {
        int32_t next = 0;
        for (uint32_t v = 1; v < sw_engine_n_vocab(e); v++)
            next = logits[v] > logits[next] ? (int32_t)v : next;
        SW_CHECK_OK(sw_session_eval(s, &next, 1, logits, 0));
    }
    const double wall = sw_clock_s() - t0;
    sw_report r;
    SW_CHECK_OK(sw_engine_report(e, &r));
    double ratio = r.decode_tokens_per_s / r.pred_decode_tokens_per_s;
    double hidden = r.copy_busy_s - r.copy_stall_s;
    double compute = wall - r.copy_stall_s;
    printf("decode measured %.3f tok/s, predicted %.3f tok/s (ratio %.3f); wall %.2f s, link "
           "busy %.2f s, stalled %.2f s, compute %.2f s of which hidden %.2f s; %.1f MiB to "
           "the device\n",
           r.decode_tokens_per_s, r.pred_decode_tokens_per_s, ratio, wall, r.copy_busy_s,
           r.copy_stall_s, compute, hidden, r.bytes_to_device / 1048576.0);
    SW_CHECK(fabs(ratio - 1.0) <= 0.25, "decode %.3f tok/s is not within 25%% of the "
             "prediction %.3f tok/s", r.decode_tokens_per_s, r.pred_decode_tokens_per_s);
    SW_CHECK(hidden > 0.3 * compute, "copies hardly overlapped compute (link busy %.2f s, "
             "stalled %.2f s: %.2f s hidden of %.2f s compute)", r.copy_busy_s, r.copy_stall_s,
             hidden, compute);
    SW_CHECK(r.peak_device_bytes <= r.plan_device_bytes, "peak above the plan");
done:
    free(logits);
    sw_session_destroy(s);
    sw_engine_destroy(e);
    sw_model_close(m);
    return sw_check_finish("test_sim_timing");
}
