/*
 * fuzz_serve_api.c — libFuzzer harness for `spillway serve`'s request
 * bodies, in-process (no sockets, no scheduler thread): src/serve/api.c's
 * srv_api_parse on the input as a /v1/completions body and as a
 * /v1/chat/completions body (JSON, the chat messages through the model's
 * chat format, the tokenizer, stop strings, sampling and length fields),
 * on a Gemma 3 or a Gemma 4 tiny model (two chat formats; which one by the
 * size of the input, alternating between the two parses), each opened
 * once with an engine of 128 tokens of context and a library scheduler.
 *
 * Everything the parser accepts must be what the next step takes: the
 * request goes to sw_scheduler_submit as srv_submit hands it over, which
 * must accept it (and it is released at once, never run); the prompt must
 * fit the context with max_tokens; the stop strings are 1..256 bytes. The
 * response and stream chunk built for it, with the input bytes as the
 * generated text, must be valid JSON; so must every error body, with a
 * 4xx status (500 only when out of memory). A broken invariant traps.
 * Built as fuzz_serve_api with -fsanitize=fuzzer (tools/fuzz.sh) and as
 * fuzz_serve_api_replay (fuzz_replay.c) for CTest. SW_FUZZ_DATA names the
 * folder of the tiny models (default: the source tree's tests/data).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json_util.h"
#include "serve/server.h"
#include "util/error.h"

#include "fuzz_common.h"

#ifndef SW_FUZZ_DATA_DIR
#define SW_FUZZ_DATA_DIR "tests/data"
#endif

enum { N_MODEL = 2, N_CTX = 128 };

static const char *const MODELS[N_MODEL] = {"tiny/gemma3.gguf", "tiny/gemma4-ple.gguf"};

static srv_state g_srv[N_MODEL];
static sw_model *g_model[N_MODEL];

static void setup_failed(const char *path) {
    fprintf(stderr, "fuzz_serve_api: cannot set up %s: %s\n", path, sw_last_error());
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("SW_FUZZ_DATA");
    dir = dir && *dir ? dir : SW_FUZZ_DATA_DIR;
    for (int k = 0; k < N_MODEL; k++) {
        char path[1024];
        srv_state *s = &g_srv[k];
        snprintf(path, sizeof path, "%s/%s", dir, MODELS[k]);
        sw_plan_options po = sw_plan_options_default();
        po.backend = "cpu";
        po.n_ctx = N_CTX;
        po.n_threads = 1;
        po.default_rates = 1;
        if (sw_model_open(path, &g_model[k]) != SW_OK ||
            sw_engine_launch(g_model[k], &po, NULL, &s->engine) != SW_OK ||
            sw_scheduler_create(s->engine, g_model[k], &s->rep[0].sched) != SW_OK)
            setup_failed(path);
        s->rep[0] = (srv_replica){.s = s, .engine = s->engine, .sched = s->rep[0].sched};
        s->n_rep = 1;
        s->model = g_model[k];
        s->sampler = sw_sampler_options_default();
        s->model_name = "tiny";
        s->n_seq = 1;
        sw_model_special_tokens(g_model[k], &s->special);
        pthread_mutex_init(&s->mu, NULL);
    }
    return 0;
}

/* An error reply: a client error (or out of memory) with a JSON body. */
static void check_error(srv_reply *err) {
    json_object *root = NULL, *e = NULL;
    FUZZ_REQUIRE(err->body != NULL);
    FUZZ_REQUIRE(err->status == 400 || err->status == 404 || err->status == 500);
    FUZZ_REQUIRE(jsonu_parse(err->body, strlen(err->body), "error", &root) == SW_OK);
    FUZZ_REQUIRE(json_object_object_get_ex(root, "error", &e) && e != NULL);
    json_object_put(root);
    free(err->body);
}

static void check_json(char *body) {
    json_object *root = NULL;
    FUZZ_REQUIRE(body != NULL);
    FUZZ_REQUIRE(jsonu_parse(body, strlen(body), "response", &root) == SW_OK);
    json_object_put(root);
    free(body);
}

/* What the parser promised, and what srv_submit hands the library. */
static void check_request(srv_state *s, srv_req *r, bool chat, const uint8_t *data,
                          size_t size) {
    const uint32_t n_ctx = sw_engine_n_ctx(s->engine);
    const size_t n_vocab = sw_vocab_size(s->model);
    FUZZ_REQUIRE(r->chat == chat && r->refs == 1 && r->id[0] != '\0');
    FUZZ_REQUIRE(r->n_prompt >= 1 && r->n_prompt < n_ctx);
    for (size_t i = 0; i < r->n_prompt; i++)
        FUZZ_REQUIRE(r->prompt[i] >= 0 && (size_t)r->prompt[i] < n_vocab);
    FUZZ_REQUIRE(chat ? r->max_tokens == -1 || r->max_tokens >= 1 : r->max_tokens >= 1);
    FUZZ_REQUIRE(r->max_tokens < 0 || r->n_prompt + (size_t)r->max_tokens <= n_ctx);
    FUZZ_REQUIRE(r->n_stop <= SRV_MAX_STOP);
    for (size_t i = 0; i < r->n_stop; i++) {
        const size_t len = strlen(r->stop[i]);
        FUZZ_REQUIRE(len >= 1 && len <= 256 && len <= r->stop_max_len);
    }
    sw_request_options o = sw_request_options_default();
    sw_request *req = NULL;
    o.sampling = r->sampling;
    o.n_predict = r->max_tokens;
    o.stop = (const char *const *)r->stop;
    o.n_stop = r->n_stop;
    FUZZ_REQUIRE(sw_scheduler_submit(s->rep[0].sched, r->prompt, r->n_prompt, &o, &req) ==
                 SW_OK);
    sw_request_release(s->rep[0].sched, req);
    /* the replies for it, with the input as the generated text */
    if (sw_bytebuf_add(&r->text, (const char *)data, size)) {
        r->finish = "stop";
        srv_reply ok = srv_api_response(s, r);
        FUZZ_REQUIRE(ok.status == 200);
        check_json(ok.body);
        check_json(srv_api_chunk(s, r, r->text.p, r->text.len, NULL, true));
        check_json(srv_api_chunk(s, r, "", 0, "length", false));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int chat = 0; chat < 2; chat++) {
        /* each body once as a completion and once as a chat, each on one of
         * the models: half the work of all four, and mutations (which
         * change the size) still reach both */
        srv_state *s = &g_srv[(size + (size_t)chat) % N_MODEL];
        srv_req *r = NULL;
        srv_reply err = {0};
        if (srv_api_parse(s, chat, (const char *)data, size, &r, &err)) {
            FUZZ_REQUIRE(r != NULL && err.body == NULL);
            check_request(s, r, chat, data, size);
            srv_req_free(r);
        } else {
            FUZZ_REQUIRE(r == NULL);
            check_error(&err);
        }
    }
    return 0;
}
