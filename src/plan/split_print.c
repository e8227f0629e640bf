/*
 * split_print.c — a split over several devices for people (one block per
 * device, in the model's layer numbers, then the shared host, the hops and
 * the predictions) and for programs (JSON with each device's whole plan,
 * whose layer numbers are its stage's: add first_layer).
 */
#include <inttypes.h>
#include <string.h>

#include "format/json_write.h"
#include "plan/plan_api.h"
#include "plan/split.h"

/* Sum of the device buffers of `kind` in a stage plan. */
static uint64_t device_kind(const plan *p, plan_buffer_kind kind) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].tier == TIER_DEVICE && p->buffers[i].kind == kind)
            total += p->buffers[i].bytes;
    return total;
}

/* "resident 0-27, streamed 28-30": runs of one placement, in the model's
 * layer numbers. */
static void print_ranges(FILE *out, const plan *p, uint32_t first) {
    const uint32_t n = p->model.config.n_layer;
    const char *sep = "";
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && p->layer_place[j + 1] == p->layer_place[i])
            j++;
        fprintf(out, "%s%s %u", sep, plan_place_name(p->layer_place[i]), first + i);
        if (j > i)
            fprintf(out, "-%u", first + j);
        sep = ", ";
        i = j + 1;
    }
}

static void print_device(FILE *out, const plan_split *s, uint32_t d) {
    const plan *p = &s->stage[d];
    char budget[32], planned[32], w[32], kv[32], ring[32], other[32];
    const uint64_t weights = device_kind(p, BUF_LAYER) + device_kind(p, BUF_EXPERT_CACHE);
    const uint64_t kvb = device_kind(p, BUF_KV), rb = device_kind(p, BUF_RING_SLOT);
    plan_format_size(p->budget.device_bytes, budget, sizeof budget);
    plan_format_size(p->tier_bytes[TIER_DEVICE], planned, sizeof planned);
    plan_format_size(weights, w, sizeof w);
    plan_format_size(kvb, kv, sizeof kv);
    plan_format_size(rb, ring, sizeof ring);
    plan_format_size(p->tier_bytes[TIER_DEVICE] - weights - kvb - rb, other, sizeof other);
    fprintf(out, "device %u (%s): layers %u-%u%s\n  ", d, p->budget.device_name, s->first[d],
            s->end[d] - 1, d + 1 == s->n_dev ? " and the LM head" : "");
    print_ranges(out, p, s->first[d]);
    fprintf(out, "%s\n", d + 1 == s->n_dev ? (p->lm_head_place == PLACE_RESIDENT
                                                  ? "; LM head on the device"
                                                  : "; LM head on the host")
                                           : "");
    fprintf(out, "  device memory %s of %s: weights %s, KV %s, ring %s, activations and "
            "the rest %s\n", planned, budget, w, kv, ring, other);
    if (p->budget.drafter_bytes) {
        char dr[32];
        plan_format_size(p->budget.drafter_bytes, dr, sizeof dr);
        fprintf(out, "  drafter %s: %s beside the budget above\n", p->budget.drafter, dr);
    }
    if (p->expert_slots) {
        char cache[32];
        plan_format_size(p->expert_cache_bytes, cache, sizeof cache);
        fprintf(out, "  expert cache: %u of %u experts per layer, %u layers (%s, in the "
                "weights), hit rate %.0f%%%s\n", p->expert_slots, p->model.config.n_expert,
                p->expert_layers, cache, 100 * p->expert_hit_rate,
                p->expert_hit_given ? " (given)" : " (slots/experts)");
    }
    fprintf(out, "  alone: decode %.2f tok/s (%s), prefill %.1f tok/s (%s); busy %.0f%% of a "
            "pipelined prefill\n", p->decode_tokens_per_s, p->decode_bottleneck,
            p->prefill_tokens_per_s, p->prefill_bottleneck, 100 * s->busy_share[d]);
}

void plan_split_print_table(FILE *out, const plan_split *s) {
    const plan *last = &s->stage[s->n_dev - 1];
    char host[32], planned[32], pinned[32], hd[32], hp[32];
    fprintf(out, "split plan: %s %s over %u devices (%s), context %u, %u sequence%s, chunk %u\n",
            s->model, last->model.weight_type, s->n_dev, last->budget.backend,
            last->workload.n_ctx, last->workload.n_seq, last->workload.n_seq == 1 ? "" : "s",
            last->workload.n_batch);
    for (uint32_t d = 0; d < s->n_dev; d++)
        print_device(out, s, d);
    plan_format_size(s->host_bytes, host, sizeof host);
    plan_format_size(s->host_planned_bytes, planned, sizeof planned);
    plan_format_size(s->pinned_planned_bytes, pinned, sizeof pinned);
    fprintf(out, "host (shared): %s planned of %s, pinned %s\n", planned, host, pinned);
    plan_format_size(s->hop_bytes[0], hd, sizeof hd);
    plan_format_size(s->hop_bytes[1], hp, sizeof hp);
    fprintf(out, "hops: %u, each %s per decode step (%.1f us) and %s per prefill chunk (%.2f ms), "
            "priced through pinned host memory (an upper bound: sim, cuda and pjrt hop device to "
            "device where both ends are on a device)\n", s->n_dev - 1, hd, s->hop_s[0] * 1e6, hp,
            s->hop_s[1] * 1e3);
    fprintf(out, "predicted: decode %.2f tok/s (the devices in turn), prefill %.1f tok/s "
            "(chunks pipelined through the devices; one chunk alone %.1f tok/s)\n",
            s->decode_tokens_per_s, s->prefill_tokens_per_s, s->prefill_serial_tokens_per_s);
    if (s->decode_parts > 1 || s->prefill_parts > 1)
        fprintf(out, "micro-batches: a decode step in %u (%.2f tok/s), a chunk alone in %u "
                "(%.1f tok/s), through the devices at once\n", s->decode_parts,
                s->decode_parts > 1 ? s->decode_parts_tokens_per_s : s->decode_tokens_per_s,
                s->prefill_parts,
                s->prefill_parts > 1 ? s->prefill_parts_tokens_per_s
                                     : s->prefill_serial_tokens_per_s);
    if (s->single_fits)
        fprintf(out, "one device alone (the largest budget): decode %.2f tok/s\n",
                s->single_decode_tokens_per_s);
    else
        fputs("one device alone (the largest budget): no plan fits; only a split runs it\n",
              out);
}

static void put_num(FILE *out, const char *key, double v) {
    char buf[40];
    jw_py_float(v, buf, sizeof buf);
    fprintf(out, ",\"%s\":%s", key, buf);
}

void plan_split_print_json(FILE *out, const plan_split *s) {
    jsonw name; /* the one string: escaped by the writer */
    fputs("{\"split\":{\"model\":", out);
    jw_init_file(&name, out, JW_COMPACT);
    jw_str(&name, s->model);
    fprintf(out, ",\"n_devices\":%u,\"host_bytes\":%" PRIu64
            ",\"host_planned_bytes\":%" PRIu64 ",\"pinned_planned_bytes\":%" PRIu64
            ",\"hop_bytes_decode\":%" PRIu64 ",\"hop_bytes_prefill\":%" PRIu64, s->n_dev,
            s->host_bytes, s->host_planned_bytes, s->pinned_planned_bytes, s->hop_bytes[0],
            s->hop_bytes[1]);
    put_num(out, "hop_seconds_decode", s->hop_s[0]);
    put_num(out, "hop_seconds_prefill", s->hop_s[1]);
    put_num(out, "decode_tokens_per_s", s->decode_tokens_per_s);
    put_num(out, "prefill_tokens_per_s", s->prefill_tokens_per_s);
    put_num(out, "prefill_serial_tokens_per_s", s->prefill_serial_tokens_per_s);
    fprintf(out, ",\"decode_parts\":%u,\"prefill_parts\":%u", s->decode_parts,
            s->prefill_parts);
    put_num(out, "decode_parts_tokens_per_s", s->decode_parts_tokens_per_s);
    put_num(out, "prefill_parts_tokens_per_s", s->prefill_parts_tokens_per_s);
    fprintf(out, ",\"single_device_fits\":%s", s->single_fits ? "true" : "false");
    put_num(out, "single_device_decode_tokens_per_s", s->single_decode_tokens_per_s);
    fputs(",\"devices\":[", out);
    for (uint32_t d = 0; d < s->n_dev; d++) {
        fprintf(out, "%s{\"index\":%u,\"first_layer\":%u,\"end_layer\":%u", d ? "," : "", d,
                s->first[d], s->end[d]);
        put_num(out, "busy_share", s->busy_share[d]);
        fputs(",\"plan\":", out);
        plan_print_json(out, &s->stage[d]);
        fputc('}', out);
    }
    fputs("]}}\n", out);
}
