/*
 * gateway_metrics.c — the part of `spillway serve`'s /metrics that
 * Kubernetes inference gateways read (server.h): the endpoint picker of the
 * Gateway API Inference Extension, now developed as llm-d's router, scrapes
 * each model server's Prometheus text and routes on a few series that it
 * reads under vLLM's names. The facts this file follows, checked Dec 2026:
 *
 * - The model server protocol (the series, their types and meanings):
 *   https://github.com/kubernetes-sigs/gateway-api-inference-extension/blob/main/docs/proposals/003-model-server-protocol/README.md
 * - The picker's defaults for an unlabelled ("vllm") pod, and how it reads
 *   them: https://github.com/llm-d/llm-d-router (pkg/epp/framework/plugins/
 *   datalayer/extractor/metrics/factories.go, extractor.go, spec.go,
 *   loraspec.go; source/metrics/datasource.go). It GETs /metrics on the
 *   pool's target port over plain HTTP with no Authorization header, parses
 *   the classic text format, and takes a sample's value only from a gauge or
 *   a counter (an untyped sample reads as 0), so every series here has its
 *   # TYPE. Labels other than those it asks for are ignored.
 * - vLLM's meanings: https://github.com/vllm-project/vllm/blob/main/docs/design/metrics.md
 *   (kv_cache_usage_perc is a fraction, 0 to 1; cache_config_info is an
 *   "info" gauge fixed at 1; lora_requests_info's value is the wall-clock
 *   time of its last update).
 *
 * Spillway's KV cache has no pages: each of the -np sequences owns a
 * region of -c positions from the start. So "a block" is one sequence's
 * region (block_size = -c tokens, num_gpu_blocks = -np), which is what the
 * memory is allocated in; and since Spillway reuses no prefix between
 * requests, the picker's prefix-cache scorer (approximateprefix; with
 * its auto-tuning it hashes prompts in blocks of block_size tokens) then
 * sees a block only in a prompt about a context long, so it gives
 * Spillway pods next to no prefix affinity, which is the truth.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdio.h>
#include <time.h>

#include "serve/server.h"

/* A Prometheus label value: backslash, quote and newline escaped. */
static void put_label(FILE *f, const char *v) {
    for (; v != NULL && *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

/* "# HELP name help\n# TYPE name gauge\nname{model_name="..."" — the
 * caller adds further labels and "} value\n". */
static void gauge_head(FILE *f, const char *name, const char *help, const char *model) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s{model_name=\"", name, help, name, name);
    put_label(f, model);
    fputc('"', f);
}

void srv_gateway_metrics(FILE *f, const char *model, size_t queued, size_t running,
                         size_t n_seq, const srv_metrics *m) {
    const double kv = m->kv_capacity_tokens
                          ? (double)m->kv_used_tokens / (double)m->kv_capacity_tokens : 0.0;
    gauge_head(f, "vllm:num_requests_waiting",
               "Requests waiting to be scheduled (Spillway's queue).", model);
    fprintf(f, "} %zu\n", queued);
    gauge_head(f, "vllm:num_requests_running",
               "Requests in the running batch (at most -np).", model);
    fprintf(f, "} %zu\n", running);
    /* V1's name, then V0's: pickers older than vLLM V1 read the second */
    gauge_head(f, "vllm:kv_cache_usage_perc",
               "KV cache in use, a fraction from 0 to 1 (1 = full).", model);
    fprintf(f, "} %.6f\n", kv);
    gauge_head(f, "vllm:gpu_cache_usage_perc",
               "The same as vllm:kv_cache_usage_perc (vLLM V0's name).", model);
    fprintf(f, "} %.6f\n", kv);
    /* known once the engine is up (the pod is not ready before, so no
     * picker scrapes it then) */
    if (n_seq > 0 && m->kv_capacity_tokens > 0) {
        gauge_head(f, "vllm:cache_config_info",
                   "KV cache layout (always 1): block_size tokens per sequence (-c), "
                   "num_gpu_blocks sequences (-np).", model);
        fprintf(f, ",block_size=\"%llu\",num_gpu_blocks=\"%zu\",enable_prefix_caching=\"False\"}"
                " 1\n", (unsigned long long)(m->kv_capacity_tokens / n_seq), n_seq);
    }
    /* Spillway loads no LoRA adapters: max_lora 0 and empty lists say so.
     * The picker reads the same from a missing series (vLLM leaves it out
     * until an adapter is loaded), but an explicit one tells an operator
     * and a mixed pool's picker that no adapter can be loaded here. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    gauge_head(f, "vllm:lora_requests_info",
               "LoRA adapters (none: Spillway serves the base model only); the value is "
               "the time of the last update.", model);
    fprintf(f, ",max_lora=\"0\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} %.3f\n",
            (double)now.tv_sec + (double)now.tv_nsec * 1e-9);
    fprintf(f, "# HELP spillway_kv_cache_tokens KV cache positions in use.\n"
            "# TYPE spillway_kv_cache_tokens gauge\nspillway_kv_cache_tokens %llu\n"
            "# HELP spillway_kv_cache_capacity_tokens KV cache positions planned (-np x -c).\n"
            "# TYPE spillway_kv_cache_capacity_tokens gauge\n"
            "spillway_kv_cache_capacity_tokens %llu\n",
            (unsigned long long)m->kv_used_tokens, (unsigned long long)m->kv_capacity_tokens);
}
