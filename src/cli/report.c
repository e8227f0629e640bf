/*
 * report.c — --report and --report-json: what the engine measured beside
 * what its plan predicted (memory per tier, bytes moved, overlap, speed),
 * and, when the scheduler drafted, what speculative decoding kept.
 */
#include <inttypes.h>

#include "cli/cli.h"
#include "engine/split_engine.h"

static double mib(uint64_t b) { return (double)b / 1048576.0; }

const sw_scheduler_stats *cli_spec_stats(sw_scheduler *q, sw_scheduler_stats *buf) {
    if (q == NULL || sw_scheduler_draft_max(q) == 0)
        return NULL;
    sw_scheduler_get_stats(q, buf);
    return buf;
}

/* Drafts kept of those verified, and tokens output per verify (0 when
 * there were none). */
static double spec_rate(const sw_scheduler_stats *t) {
    return t->drafted_tokens ? (double)t->accepted_tokens / (double)t->drafted_tokens : 0.0;
}

static double spec_per_verify(const sw_scheduler_stats *t) {
    return t->verify_forwards ? (double)t->verify_tokens / (double)t->verify_forwards : 0.0;
}

/* Output tokens per second of the scheduler's decode steps, drafting
 * included: with drafts, the engine counts a verify forward (several
 * tokens of one sequence) as prefill, so its decode rate leaves them out. */
static double spec_decode_tps(const sw_scheduler_stats *t) {
    return t->decode_s > 0 ? (double)t->decode_tokens / t->decode_s : 0.0;
}

void cli_print_spec(const sw_scheduler_stats *t, FILE *out) {
    fprintf(out, "speculative: %" PRIu64 " drafted, %" PRIu64 " accepted (%.1f%%), %.2f tokens "
            "per verify over %" PRIu64 " verifies; decode %.1f tok/s with drafting\n",
            t->drafted_tokens, t->accepted_tokens, 100.0 * spec_rate(t), spec_per_verify(t),
            t->verify_forwards, spec_decode_tps(t));
}

/* The same as cli_print_spec, as a JSON member of an open object. */
static void spec_json(const sw_scheduler_stats *t, FILE *f) {
    fprintf(f, ",\"speculative\":{\"drafted_tokens\":%" PRIu64 ",\"accepted_tokens\":%" PRIu64
            ",\"acceptance_rate\":%.6f,\"tokens_per_verify\":%.6f,\"verify_forwards\":%" PRIu64
            ",\"verify_tokens\":%" PRIu64 ",\"decode_tokens_per_s\":%.3f}", t->drafted_tokens,
            t->accepted_tokens, spec_rate(t), spec_per_verify(t), t->verify_forwards,
            t->verify_tokens, spec_decode_tps(t));
}

/* Where the cache's copies came from (sw_expert_report.copy_source). */
static const char *copy_source_name(uint32_t s) {
    switch (s) {
    case SW_EXPERT_COPY_REGISTERED: return "registered";
    case SW_EXPERT_COPY_PINNED_STAGING: return "pinned_staging";
    case SW_EXPERT_COPY_PAGEABLE_STAGING: return "pageable_staging";
    case SW_EXPERT_COPY_PAGEABLE: return "pageable";
    default: return "none";
    }
}

static const char *copy_source_text(uint32_t s) {
    switch (s) {
    case SW_EXPERT_COPY_REGISTERED: return "from the mapping, registered with the device";
    case SW_EXPERT_COPY_PINNED_STAGING: return "through pinned staging";
    case SW_EXPERT_COPY_PAGEABLE_STAGING: return "through staging (the page lock refused)";
    case SW_EXPERT_COPY_PAGEABLE: return "from the mapping, pageable";
    default: return "none";
    }
}

/* The expert cache's counters (issue 38), when there is one. */
static void experts_text(const sw_expert_report *x, FILE *out) {
    if (x->slots == 0)
        return;
    fprintf(out, "expert cache           %u slots x %u layers, %.1f MiB: %" PRIu64 " experts needed "
            "in %" PRIu64 " layer steps, %" PRIu64 " hits (%.1f%%), %" PRIu64 " misses\n",
            x->slots, x->layers, mib(x->cache_bytes), x->needed, x->steps, x->hits,
            x->needed ? 100.0 * (double)x->hits / (double)x->needed : 0.0, x->misses);
    fprintf(out, "expert misses          %" PRIu64 " copied (%.1f MiB", x->copied,
            mib(x->copied_bytes));
    if (x->copy_source != SW_EXPERT_COPY_NONE)
        fprintf(out, " %s", copy_source_text(x->copy_source));
    if (x->staging_bytes)
        fprintf(out, " buffers of %.2f MiB", mib(x->staging_bytes));
    fprintf(out, "), %" PRIu64 " computed on the host (%" PRIu64 " expert-tokens)\n",
            x->host_experts, x->host_tokens);
    if (x->prefetched)
        fprintf(out, "expert prefetch        %" PRIu64 " experts copied ahead, %" PRIu64 " needed "
                "at the next step (%.1f%%)\n", x->prefetched, x->prefetch_hits,
                100.0 * (double)x->prefetch_hits / (double)x->prefetched);
}

static void experts_json(const sw_expert_report *x, FILE *f) {
    if (x->slots == 0)
        return;
    fprintf(f, ",\"expert_cache\":{\"slots\":%u,\"layers\":%u,\"bytes\":%" PRIu64
            ",\"steps\":%" PRIu64 ",\"routings\":%" PRIu64 ",\"needed\":%" PRIu64
            ",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"copied\":%" PRIu64
            ",\"copied_bytes\":%" PRIu64 ",\"host_experts\":%" PRIu64
            ",\"host_expert_tokens\":%" PRIu64 ",\"prefetched\":%" PRIu64
            ",\"prefetch_hits\":%" PRIu64 ",\"copy_source\":\"%s\",\"staging_bytes\":%" PRIu64
            "}", x->slots, x->layers, x->cache_bytes,
            x->steps, x->routings, x->needed, x->hits, x->misses, x->copied, x->copied_bytes,
            x->host_experts, x->host_tokens, x->prefetched, x->prefetch_hits,
            copy_source_name(x->copy_source), x->staging_bytes);
}

int cli_print_report(const sw_engine *e, const sw_scheduler_stats *spec, FILE *out) {
    sw_report r;
    sw_status st = sw_engine_report(e, &r);
    if (st != SW_OK)
        return cli_fail(st);
    double hidden = r.copy_busy_s > r.copy_stall_s ? r.copy_busy_s - r.copy_stall_s : 0;
    fprintf(out, "\nreport                 measured        planned\n");
    fprintf(out, "device peak            %8.1f MiB    %8.1f MiB  (budget %.1f MiB)\n",
            mib(r.peak_device_bytes), mib(r.plan_device_bytes), mib(r.device_budget_bytes));
    for (uint32_t d = 0; engine_n_devices(e) > 1 && d < engine_n_devices(e); d++) {
        engine_device_stat ds; /* a split: each device within its own budget */
        const double wall = r.n_prefill_tokens + r.n_decode_tokens > 0
                                ? (r.prefill_tokens_per_s > 0
                                       ? r.n_prefill_tokens / r.prefill_tokens_per_s : 0) +
                                      (r.decode_tokens_per_s > 0
                                           ? r.n_decode_tokens / r.decode_tokens_per_s : 0)
                                : 0;
        if (engine_device_stats(e, d, &ds) != SW_OK)
            continue;
        fprintf(out, "  device %u (layers %u-%u) %6.1f MiB    %8.1f MiB  (budget %.1f MiB); "
                "busy %.2f s, %.0f%% of the forwards' time", d, ds.first_layer,
                ds.end_layer - 1, mib(ds.peak_bytes), mib(ds.plan_bytes), mib(ds.budget_bytes),
                ds.busy_s, wall > 0 ? 100 * ds.busy_s / wall : 0.0);
        if (d > 0)
            fprintf(out, "; its input %s", ds.peer_in ? "device to device" : "through the host");
        fputc('\n', out);
    }
    if (r.peak_device_driver_bytes)
        fprintf(out, "device peak (driver)   %8.1f MiB    (cudaMemGetInfo: granularity included)\n",
                mib(r.peak_device_driver_bytes));
    fprintf(out, "host peak RSS          %8.1f MiB\n", mib(r.peak_host_rss_bytes));
    if (r.plan_pinned_bytes || r.pinned_bytes)
        fprintf(out, "pinned                 %8.1f MiB    %8.1f MiB  (%s)\n",
                mib(r.pinned_bytes), mib(r.plan_pinned_bytes),
                r.pinned_bytes == 0 ? "none allocated: the expert copies read the mapping"
                : r.pinned_locked   ? "page-locked"
                                    : "lock refused: pageable");
    if (r.converted_bytes)
        fprintf(out, "converted weights      %8.1f MiB    (host, incl. load staging)\n",
                mib(r.converted_bytes));
    fprintf(out, "to device              %8.1f MiB    link busy %.2f s: %.2f s hidden behind "
            "compute, %.2f s stalled\n", mib(r.bytes_to_device), r.copy_busy_s, hidden,
            r.copy_stall_s);
    fprintf(out, "prefill                %8.1f tok/s  %8.1f tok/s  (%" PRIu64 " tokens)\n",
            r.prefill_tokens_per_s, r.pred_prefill_tokens_per_s, r.n_prefill_tokens);
    fprintf(out, "decode                 %8.1f tok/s  %8.1f tok/s  (%" PRIu64 " tokens)\n",
            r.decode_tokens_per_s, r.pred_decode_tokens_per_s, r.n_decode_tokens);
    experts_text(&r.experts, out);
    if (spec != NULL)
        cli_print_spec(spec, out);
    if (r.n_replans)
        fprintf(out, "re-planned %u time(s): %s", r.n_replans, sw_engine_notes(e));
    return CLI_EXIT_OK;
}

int cli_write_report_json(const sw_engine *e, const sw_scheduler_stats *spec,
                          const char *path) {
    sw_report r;
    sw_status st = sw_engine_report(e, &r);
    if (st != SW_OK)
        return cli_fail(st);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        cli_error("cannot write the report to '%s'", path);
        return CLI_EXIT_IO;
    }
    fprintf(f, "{\"device_budget_bytes\":%" PRIu64 ",\"plan_device_bytes\":%" PRIu64
            ",\"peak_device_bytes\":%" PRIu64 ",\"peak_host_rss_bytes\":%" PRIu64
            ",\"bytes_to_device\":%" PRIu64 ",\"copy_busy_s\":%.6f,\"copy_stall_s\":%.6f"
            ",\"n_prefill_tokens\":%" PRIu64 ",\"n_decode_tokens\":%" PRIu64
            ",\"prefill_tokens_per_s\":%.3f,\"decode_tokens_per_s\":%.3f"
            ",\"predicted_prefill_tokens_per_s\":%.3f,\"predicted_decode_tokens_per_s\":%.3f"
            ",\"n_replans\":%u,\"plan_pinned_bytes\":%" PRIu64 ",\"pinned_bytes\":%" PRIu64
            ",\"pinned_locked\":%s,\"converted_bytes\":%" PRIu64
            ",\"peak_device_driver_bytes\":%" PRIu64,
            r.device_budget_bytes, r.plan_device_bytes, r.peak_device_bytes,
            r.peak_host_rss_bytes, r.bytes_to_device, r.copy_busy_s, r.copy_stall_s,
            r.n_prefill_tokens, r.n_decode_tokens, r.prefill_tokens_per_s,
            r.decode_tokens_per_s, r.pred_prefill_tokens_per_s, r.pred_decode_tokens_per_s,
            r.n_replans, r.plan_pinned_bytes, r.pinned_bytes,
            r.pinned_locked ? "true" : "false", r.converted_bytes, r.peak_device_driver_bytes);
    experts_json(&r.experts, f);
    if (spec != NULL)
        spec_json(spec, f);
    fputs("}\n", f);
    if (fclose(f) != 0) {
        cli_error("cannot write the report to '%s'", path);
        return CLI_EXIT_IO;
    }
    return CLI_EXIT_OK;
}
