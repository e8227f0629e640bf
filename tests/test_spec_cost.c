/*
 * test_spec_cost.c — the cost model of speculative decoding
 * (plan/spec.c) on catalog plans: a forward's time runs from the plan's
 * decode prediction (one token) to its prefill prediction (a chunk),
 * never decreasing; on a plan whose every layer crosses a slow link a
 * 9-token verify costs little more than one token and long drafts win;
 * on a host plan whose forward grows with its tokens drafts pay less;
 * and the expected-token formula gives k + 1 at acceptance 1.
 */
#include <math.h>

#include "check.h"
#include "spillway.h"

static sw_plan *plan_of(const char *backend, const char *place, double link_Bps) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = backend;
    o.device_mem_bytes = 64ull << 20;
    o.host_mem_bytes = 8ull << 30;
    o.place = place;
    o.sim_link_Bps = link_Bps;
    o.n_ctx = 512;
    o.n_batch = 64;
    o.n_threads = 2;
    o.default_rates = 1;
    sw_plan *p = NULL;
    SW_CHECK_OK(sw_plan_create(NULL, "gemma3-270m", &o, &p));
    return p;
}

static void check_forward_curve(const char *what, const sw_plan *p) {
    sw_plan_summary s;
    SW_CHECK_OK(sw_plan_get_summary(p, &s));
    const double t1 = sw_plan_forward_seconds(p, 1), t64 = sw_plan_forward_seconds(p, 64);
    SW_CHECK(fabs(t1 - 1.0 / s.decode_tokens_per_s) <= 1e-9 * t1 + 1e-15,
             "%s: one token %.6g s, the decode prediction %.6g s", what, t1,
             1.0 / s.decode_tokens_per_s);
    SW_CHECK(fabs(t64 - 64.0 / s.prefill_tokens_per_s) <= 1e-9 * t64 + 1e-15,
             "%s: a chunk %.6g s, the prefill prediction %.6g s", what, t64,
             64.0 / s.prefill_tokens_per_s);
    for (uint32_t n = 2; n <= 64; n++)
        SW_CHECK(sw_plan_forward_seconds(p, n) >= sw_plan_forward_seconds(p, n - 1) - 1e-12,
                 "%s: %u tokens cost less than %u", what, n, n - 1);
}

int main(void) {
    sw_plan *streamed = plan_of("sim", "all=streamed", 250e6);
    sw_plan *host = plan_of("cpu", NULL, 0);
    if (streamed == NULL || host == NULL)
        return sw_check_finish("test_spec_cost");
    check_forward_curve("streamed", streamed);
    check_forward_curve("host", host);
    const double r_streamed = sw_plan_forward_seconds(streamed, 9) /
                              sw_plan_forward_seconds(streamed, 1);
    const double r_host = sw_plan_forward_seconds(host, 9) / sw_plan_forward_seconds(host, 1);
    SW_CHECK(r_streamed < 1.3, "a 9-token verify over a 250 MB/s link costs %.2fx one token",
             r_streamed);
    SW_CHECK(r_host > r_streamed, "the host plan's verify (%.2fx) should grow more than the "
             "streamed plan's (%.2fx)", r_host, r_streamed);
    const uint32_t k_streamed = sw_plan_best_draft_max(streamed, 0.9, 0.0, 16);
    const uint32_t k_host = sw_plan_best_draft_max(host, 0.9, 0.0, 16);
    SW_CHECK(k_streamed >= 8, "streamed plan: best draft length %u at acceptance 0.9",
             k_streamed);
    SW_CHECK(k_host <= k_streamed, "host plan's best draft length %u exceeds the streamed "
             "plan's %u", k_host, k_streamed);
    const double t9 = sw_plan_forward_seconds(streamed, 9);
    SW_CHECK(fabs(sw_plan_speculative_tokens_per_s(streamed, 8, 1.0, 0.0) - 9.0 / t9) <
                 1e-9 / t9, "acceptance 1: k + 1 tokens per verify");
    SW_CHECK(fabs(sw_plan_speculative_tokens_per_s(streamed, 8, 0.0, 0.0) - 1.0 / t9) <
                 1e-9 / t9, "acceptance 0: one token per verify");
    /* a costly drafter shortens the best draft */
    const double t1 = sw_plan_forward_seconds(streamed, 1);
    SW_CHECK(sw_plan_best_draft_max(streamed, 0.9, t1 / 2, 16) < k_streamed ||
                 k_streamed == 1, "a drafter costing half a verify did not shorten drafts");
    sw_plan_destroy(streamed);
    sw_plan_destroy(host);
    return sw_check_finish("test_spec_cost");
}
