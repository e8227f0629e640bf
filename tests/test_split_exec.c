/*
 * test_split_exec.c — a split over 2-4 simulated devices executes its plan
 * exactly, with the default model (issue 39's tests): for splits that keep
 * every layer resident, that stream and compute on the host, and with two
 * sequences batched in one forward, and on Gemma 4's tiny models with
 * experts on the host (with an expert cache on each device too),
 * KV-shared layers and per-layer inputs (handed on
 * with the stream, to resident and host layers), the logits are bit-identical
 * to the cpu backend's, and each device's accounted peak is within its plan and
 * its plan within its budget. With the argument `pjrt`: a split over two
 * and three of XLA's CPU plugin devices against that plugin on one device
 * (the same programs, so the same numerics), the stream copied device to
 * device by the plugin.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "engine/split_engine.h"
#include "runtime/launch.h"

#define N_PROMPT 10
#define N_DECODE 2
#define MIB (1024ull * 1024)

static const char prompt_text[] =
    "The river rose all night, and by morning the spillway carried more water than the "
    "old engineers had ever planned for.";
static int32_t prompt[2][N_PROMPT];   /* two sequences: the text, and its later words */

static sw_plan_options opts(const char *be_name, uint32_t n_seq) {
    sw_plan_options o = sw_plan_options_default();
    o.n_threads = 2;
    o.n_ctx = 256;
    o.n_batch = 16;
    o.n_seq = n_seq;
    o.backend = be_name;
    o.device_mem_bytes = 1ull << 30;
    return o;
}

/* Each sequence's prompt (all logits), then greedy decode steps of all
 * sequences together, one batch per step: logits (n_seq, N_PROMPT +
 * N_DECODE, n_vocab). */
static float *run(sw_engine *e, uint32_t n_seq, uint32_t n_vocab) {
    const size_t per = (size_t)(N_PROMPT + N_DECODE) * n_vocab;
    float *logits = calloc(n_seq * per, sizeof(float));
    sw_session *s[2] = {NULL, NULL};
    for (uint32_t q = 0; q < n_seq; q++) {
        SW_CHECK_OK(sw_session_create(e, &s[q]));
        SW_CHECK_OK(sw_session_eval(s[q], prompt[q], N_PROMPT, logits + q * per, 1));
    }
    float *out = malloc(2 * (size_t)n_vocab * sizeof(float));
    for (int i = 0; i < N_DECODE; i++) {
        sw_batch_item items[2];
        for (uint32_t q = 0; q < n_seq; q++) {
            const float *last = logits + q * per + (size_t)(N_PROMPT - 1 + i) * n_vocab;
            int32_t best = 0;
            for (uint32_t v = 1; v < n_vocab; v++)
                best = last[v] > last[best] ? (int32_t)v : best;
            items[q] = (sw_batch_item){.session = s[q], .token = best, .logits = 1};
        }
        SW_CHECK_OK(sw_engine_eval_batch(e, items, n_seq, out));
        for (uint32_t q = 0; q < n_seq; q++)
            memcpy(logits + q * per + (size_t)(N_PROMPT + i) * n_vocab, out + q * n_vocab,
                   n_vocab * sizeof(float));
    }
    for (uint32_t q = 0; q < n_seq; q++)
        sw_session_destroy(s[q]);
    free(out);
    return logits;
}

static uint32_t parts_seen; /* splits whose forwards went in micro-batches */

static void check_split(const sw_plan_options *base, const sw_model *m, const uint64_t *dev,
                        uint32_t n_dev, const float *ref, uint32_t n_vocab) {
    sw_plan_options o = *base;
    const uint32_t n_seq = o.n_seq;
    plan_split *s = malloc(sizeof *s);
    sw_engine *e = NULL;
    SW_CHECK_OK(plan_split_create(m, NULL, &o, dev, NULL, n_dev, s));
    SW_CHECK_OK(engine_create_split(m, s, NULL, NULL, &e, NULL));
    if (e == NULL) {
        free(s);
        return;
    }
    float *got = run(e, n_seq, n_vocab);
    const size_t n = (size_t)n_seq * (N_PROMPT + N_DECODE) * n_vocab;
    SW_CHECK(memcmp(got, ref, n * sizeof(float)) == 0, "%u devices (%llu MiB first), %u "
             "sequences: logits differ from the cpu backend's", n_dev,
             (unsigned long long)(dev[0] / MIB), n_seq);
    uint32_t placed[3] = {0, 0, 0}, experts_host = 0, peers = 0, cached = 0;
    SW_CHECK(engine_n_devices(e) == n_dev, "%u devices driven", engine_n_devices(e));
    for (uint32_t d = 0; d < n_dev; d++) {
        engine_device_stat ds;
        SW_CHECK_OK(engine_device_stats(e, d, &ds));
        SW_CHECK(ds.peak_bytes <= ds.plan_bytes && ds.plan_bytes <= ds.budget_bytes &&
                     ds.budget_bytes == dev[d] && ds.first_layer == s->first[d],
                 "device %u: peak %llu, plan %llu, budget %llu", d,
                 (unsigned long long)ds.peak_bytes, (unsigned long long)ds.plan_bytes,
                 (unsigned long long)ds.budget_bytes);
        /* a stream from a device layer to a device layer goes device to device */
        const plan *prev = d ? &s->stage[d - 1] : NULL;
        const bool peer = prev != NULL && strcmp(o.backend, "cpu") != 0 &&
                          prev->layer_place[prev->model.config.n_layer - 1] != PLACE_HOST &&
                          s->stage[d].layer_place[0] != PLACE_HOST;
        SW_CHECK(ds.peer_in == peer && (ds.peer_bytes > 0) == peer, "device %u: peer hop %d, "
                 "%llu bytes", d, ds.peer_in, (unsigned long long)ds.peer_bytes);
        peers += ds.peer_in;
        for (uint32_t i = 0; i < s->stage[d].model.config.n_layer; i++) {
            placed[s->stage[d].layer_place[i] - PLACE_RESIDENT]++;
            experts_host += s->stage[d].experts_host[i];
        }
        cached += s->stage[d].expert_layers;
    }
    sw_report rep;
    SW_CHECK_OK(sw_engine_report(e, &rep));
    SW_CHECK(rep.experts.layers == cached && (o.experts.slots == 0) == (cached == 0) &&
                 (cached == 0 || rep.experts.needed > 0),
             "expert cache: %u layers reported, %u planned, %llu experts needed",
             rep.experts.layers, cached, (unsigned long long)rep.experts.needed);
    parts_seen += e->decode_parts > 1 || e->prefill_parts > 1;
    printf("  %s, %u devices, %u sequence(s): %u resident, %u streamed, %u host layers, %u "
           "with experts on the host (%u cached), %u hops device to device, micro-batches "
           "%u/%u: same logits\n", s->model, n_dev, n_seq, placed[0], placed[1], placed[2],
           experts_host, cached, peers, e->decode_parts, e->prefill_parts);
    free(got);
    sw_engine_destroy(e);
    free(s);
}

/* A prompt of several chunks (-b 4) wanting the last token's logits only:
 * the stages work on consecutive chunks at once (pipeline.c), and the
 * logits are the cpu backend's; so with the stages in turn and the stream
 * through host memory. */
static void pipelined_prefill(const sw_model *m, uint32_t n_vocab) {
    float *want = malloc(n_vocab * sizeof(float)), *got = malloc(n_vocab * sizeof(float));
    const uint64_t dev[3] = {60ull << 20, 60ull << 20, 60ull << 20};
    for (int k = 0; k < 3; k++) {
        sw_plan_options o = opts(k == 0 ? "cpu" : "sim", 1);
        o.n_batch = 4;
        sw_engine *e = NULL;
        sw_session *s = NULL;
        if (k == 2) { /* in turn, whole, and through host memory */
            setenv("SPILLWAY_SPLIT_PIPELINE", "0", 1);
            setenv("SPILLWAY_SPLIT_PARTS", "0", 1);
            setenv("SPILLWAY_SPLIT_PEER", "0", 1);
        }
        plan_split *sp = malloc(sizeof *sp);
        if (k == 0) {
            SW_CHECK_OK(runtime_launch(m, &o, NULL, NULL, &e));
        } else {
            SW_CHECK_OK(plan_split_create(m, NULL, &o, dev, NULL, 3, sp));
            SW_CHECK_OK(engine_create_split(m, sp, NULL, NULL, &e, NULL));
            SW_CHECK(e != NULL && (e->workers != NULL) == (k == 1), "threads %s",
                     k == 1 ? "on" : "off");
        }
        unsetenv("SPILLWAY_SPLIT_PIPELINE");
        unsetenv("SPILLWAY_SPLIT_PARTS");
        unsetenv("SPILLWAY_SPLIT_PEER");
        free(sp);
        if (e == NULL)
            continue;
        SW_CHECK_OK(sw_session_create(e, &s));
        SW_CHECK_OK(sw_session_eval(s, prompt[0], N_PROMPT, k == 0 ? want : got, 0));
        if (k > 0)
            SW_CHECK(memcmp(want, got, n_vocab * sizeof(float)) == 0, "3 chunks through 3 "
                     "devices %s: the last logits differ from the cpu backend's",
                     k == 1 ? "at once" : "in turn");
        sw_session_destroy(s);
        sw_engine_destroy(e);
    }
    printf("  a 3-chunk prompt through 3 devices, pipelined and in turn: same logits\n");
    free(want);
    free(got);
}

/* The PJRT plugin's devices: one, then splits over two and three. */
static void pjrt_devices(const sw_model *m, uint32_t n_vocab) {
    sw_engine *one = NULL;
    sw_plan_options o = opts("pjrt", 1);
    SW_CHECK_OK(runtime_launch(m, &o, NULL, NULL, &one));
    if (one == NULL)
        return;
    float *ref = run(one, 1, n_vocab);
    sw_engine_destroy(one);
    const uint64_t two[2] = {1ull << 30, 1ull << 30}, three[3] = {1ull << 30, 1ull << 30, 1ull << 30};
    check_split(&o, m, two, 2, ref, n_vocab);
    check_split(&o, m, three, 3, ref, n_vocab);
    free(ref);
}

/* Gemma 4's tiny models: experts computed on the host beside device
 * layers (-ncmoe), KV-shared layers kept with their cache's stage, and
 * per-layer inputs (E2B/E4B's) computed by the first stage for every layer
 * and handed on with the stream. */
static void tiny_gemma4(void) {
    const char *names[3] = {"tiny/gemma4-moe.gguf", "tiny/gemma4-kv.gguf",
                            "tiny/gemma4-ple.gguf"};
    for (int k = 0; k < 3; k++) {
        sw_model *m = NULL;
        SW_CHECK_OK(sw_model_open(sw_test_data(names[k]), &m));
        if (m == NULL)
            continue;
        const uint32_t n_vocab = (uint32_t)sw_vocab_size(m);
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < N_PROMPT; i++)
                prompt[q][i] = (int32_t)((uint32_t)(i * 7 + q * 3 + 2) % n_vocab);
        sw_engine *cpu = NULL;
        sw_plan_options o = opts("cpu", 2);
        SW_CHECK_OK(runtime_launch(m, &o, NULL, NULL, &cpu));
        if (cpu != NULL) {
            float *ref = run(cpu, 2, n_vocab);
            sw_engine_destroy(cpu);
            o = opts("sim", 2);
            o.n_cpu_moe = k == 0 ? 99 : 0; /* every device layer's experts on the host */
            const uint64_t two[2] = {4ull << 20, 4ull << 20}, three[3] = {3ull << 20, 3ull << 20,
                                                                          3ull << 20};
            check_split(&o, m, two, 2, ref, n_vocab);
            if (k < 2) {
                check_split(&o, m, three, 3, ref, n_vocab);
            }
            if (k == 0) { /* an expert cache on each device: 2 slots, then auto */
                for (int slots = 2; slots >= -1; slots -= 3) {
                    o.experts.slots = slots;
                    check_split(&o, m, two, 2, ref, n_vocab);
                    check_split(&o, m, three, 3, ref, n_vocab);
                }
                o.experts.slots = 0;
            } else if (k == 2) { /* 5 layers whose KV sharing allows one cut; host layers after it */
                const uint64_t mixed[2] = {400ull << 10, 600ull << 10};
                check_split(&o, m, mixed, 2, ref, n_vocab);
            }
            free(ref);
        }
        sw_model_close(m);
    }
}

int main(int argc, char **argv) {
    sw_model *m = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_default_model(), &m));
    if (m == NULL) {
        fprintf(stderr, "run `spillway fetch` first\n");
        return sw_check_finish("test_split_exec");
    }
    const uint32_t n_vocab = (uint32_t)sw_vocab_size(m);
    int32_t ids[256];
    size_t n_ids = 0;
    SW_CHECK_OK(sw_tokenize(m, prompt_text, sizeof prompt_text - 1, SW_TOK_ADD_BOS, ids, 256,
                            &n_ids));
    SW_CHECK(n_ids >= N_PROMPT + 6, "prompt has only %zu tokens", n_ids);
    memcpy(prompt[0], ids, sizeof prompt[0]);
    memcpy(prompt[1], ids + 6, sizeof prompt[1]);
    if (argc > 1 && !strcmp(argv[1], "pjrt")) {
        pjrt_devices(m, n_vocab);
        sw_model_close(m);
        return sw_check_finish("test_split_exec pjrt");
    }
    for (uint32_t n_seq = 1; n_seq <= 2; n_seq++) {
        sw_engine *cpu = NULL;
        sw_plan_options o = opts("cpu", n_seq);
        SW_CHECK_OK(runtime_launch(m, &o, NULL, NULL, &cpu));
        if (cpu == NULL)
            break;
        float *ref = run(cpu, n_seq, n_vocab);
        sw_engine_destroy(cpu);
        /* all resident; resident with the LM head on the host; streamed
         * and host layers beside resident ones; four devices */
        const uint64_t two[2] = {1ull << 30, 1ull << 30}, three[3] = {60 * MIB, 60 * MIB, 60 * MIB};
        const uint64_t mixed[2] = {20 * MIB, 200 * MIB};
        const uint64_t four[4] = {30 * MIB, 30 * MIB, 30 * MIB, 30 * MIB};
        const sw_plan_options sim = opts("sim", n_seq);
        check_split(&sim, m, two, 2, ref, n_vocab);
        setenv("SPILLWAY_SPLIT_PARTS", "3", 1); /* every forward wanting logits in 3 parts */
        check_split(&sim, m, three, 3, ref, n_vocab);
        unsetenv("SPILLWAY_SPLIT_PARTS");
        check_split(&sim, m, mixed, 2, ref, n_vocab);
        check_split(&sim, m, four, 4, ref, n_vocab);
        free(ref);
    }
    pipelined_prefill(m, n_vocab);
    sw_model_close(m);
    tiny_gemma4();
    SW_CHECK(parts_seen >= 2, "%u splits' forwards went in micro-batches (3 parts asked for "
             "twice)", parts_seen);
    return sw_check_finish("test_split_exec");
}
