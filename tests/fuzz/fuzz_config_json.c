/*
 * fuzz_config_json.c — libFuzzer harness for config.json: the Hugging Face
 * config reader (format/hf_config*.c: Gemma 1, 2, 3 and 4, both of Gemma
 * 4's layouts, multimodal text_config wrappers) and the model description
 * read from what it writes (model/config*.c), as hf_model_open and
 * sw_model_open chain them.
 *
 * The input is parsed as config.json and translated into GGUF keys; when
 * that succeeds the keys are translated once more with a token embedding
 * of the stated shape beside them (model_config_from_gguf reads n_vocab
 * from it; its data is never read) and read as a model_config. A refusal
 * must be SW_ERR_FORMAT or SW_ERR_UNSUPPORTED with a message; an accepted
 * config must hold what the planner and the forward pass rely on (layer
 * counts, head counts that divide, even head sizes, KV sources earlier,
 * finite positive scales). A broken invariant traps. Built as
 * fuzz_config_json with -fsanitize=fuzzer (tools/fuzz.sh) and as
 * fuzz_config_json_replay (fuzz_replay.c) for CTest.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/hf_config.h"
#include "model/config.h"
#include "quant/types.h"
#include "util/error.h"

#include "fuzz_common.h"

static const uint8_t g_dummy[16]; /* token_embd's data: never read */

static bool refused_well(sw_status st) {
    return (st == SW_ERR_FORMAT || st == SW_ERR_UNSUPPORTED) && sw_last_error()[0] != '\0';
}

/* config.json into a finished description; with embd (n_embd, n_vocab)
 * also the token embedding. */
static sw_status translate(const json_object *root, const uint64_t *embd, gguf_file **out,
                           hf_config *hc) {
    gguf_mem *b = NULL;
    sw_status st = gguf_mem_create(&b);
    *out = NULL;
    if (st != SW_OK)
        return st;
    st = hf_config_translate(root, "config.json", b, hc);
    if (st == SW_OK && embd != NULL)
        st = gguf_mem_add_tensor(b, "token_embd.weight", SW_TYPE_F32, 2, embd, g_dummy, 0);
    if (st != SW_OK) {
        gguf_mem_destroy(b);
        return st;
    }
    return gguf_mem_finish(b, 0, out);
}

/* What every translation states: the architecture, width and vocabulary. */
static void read_shape(const gguf_file *f, uint64_t embd[2]) {
    gguf_str arch;
    char key[64];
    FUZZ_REQUIRE(gguf_get_str(f, "general.architecture", &arch) == SW_OK && arch.len < 16);
    snprintf(key, sizeof key, "%.*s.embedding_length", (int)arch.len, arch.ptr);
    FUZZ_REQUIRE(gguf_get_uint(f, key, &embd[0]) == SW_OK && embd[0] > 0);
    snprintf(key, sizeof key, "%.*s.vocab_size", (int)arch.len, arch.ptr);
    FUZZ_REQUIRE(gguf_get_uint(f, key, &embd[1]) == SW_OK && embd[1] > 0);
}

static bool finite_nonneg(float x) {
    return isfinite(x) && x >= 0.0f;
}

static void check_config(const model_config *c, const uint64_t embd[2]) {
    FUZZ_REQUIRE(c->n_layer >= 1 && c->n_layer <= MODEL_MAX_LAYERS);
    FUZZ_REQUIRE(c->n_embd == embd[0] && c->n_vocab == embd[1]);
    FUZZ_REQUIRE(c->n_ff > 0 && c->n_head > 0 && c->n_head_kv > 0);
    FUZZ_REQUIRE(c->n_head_kv <= c->n_head && c->n_head % c->n_head_kv == 0);
    FUZZ_REQUIRE(c->n_embd_head > 0 && c->n_embd_head % 2 == 0 && c->n_ctx_train > 0);
    FUZZ_REQUIRE(isfinite(c->query_scale) && c->query_scale > 0.0f);
    FUZZ_REQUIRE(isfinite(c->embd_scale) && c->embd_scale > 0.0f);
    FUZZ_REQUIRE(finite_nonneg(c->norm_eps) && finite_nonneg(c->attn_softcap) &&
                 finite_nonneg(c->final_softcap));
    FUZZ_REQUIRE(finite_nonneg(c->rope_base_global) && finite_nonneg(c->rope_base_local));
    FUZZ_REQUIRE(c->rope_scale_global > 0.0f && c->rope_scale_global <= 1.0f &&
                 c->rope_scale_local > 0.0f && c->rope_scale_local <= 1.0f);
    if (strcmp(c->arch, "gemma4") != 0) /* Gemma 4 marks local layers one by one */
        FUZZ_REQUIRE((c->swa_pattern == 0) == (c->sliding_window == 0));
    else
        FUZZ_REQUIRE(c->swa_pattern == 0);
    FUZZ_REQUIRE(c->rope_pairs_global <= c->n_embd_head / 2);
    FUZZ_REQUIRE(c->n_expert == 0 ||
                 (c->n_expert_used >= 1 && c->n_expert_used <= c->n_expert && c->n_ff_exp > 0));
    FUZZ_REQUIRE(model_config_check_layers(c) == SW_OK);
    FUZZ_REQUIRE(model_attn_group(c) >= 1);
    for (uint32_t il = 0; il < c->n_layer; il++) {
        const uint32_t owner = model_layer_kv_owner(c, il);
        FUZZ_REQUIRE(owner <= il && model_layer_owns_kv(c, owner));
        FUZZ_REQUIRE(model_layer_head_dim(c, il) <= c->n_embd_head &&
                     model_layer_n_ff(c, il) <= c->n_ff &&
                     model_layer_n_head_kv(c, il) <= c->n_head_kv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_object *root = NULL;
    gguf_file *f = NULL;
    hf_config hc;
    uint64_t embd[2];
    model_config *c = NULL;
    if (jsonu_parse((const char *)data, size, "config.json", &root) != SW_OK) {
        FUZZ_REQUIRE(root == NULL && refused_well(SW_ERR_FORMAT));
        return 0;
    }
    sw_status st = translate(root, NULL, &f, &hc);
    if (st != SW_OK) {
        FUZZ_REQUIRE(f == NULL && refused_well(st));
        goto done;
    }
    FUZZ_REQUIRE(hc.family >= HF_GEMMA1 && hc.family <= HF_GEMMA4 && hc.architecture[0]);
    read_shape(f, embd);
    gguf_close(f);
    if (translate(root, embd, &f, &hc) != SW_OK) /* a shape too large for one tensor */
        goto done;
    c = malloc(sizeof *c);
    if (c == NULL)
        goto done;
    st = model_config_from_gguf(f, c);
    if (st == SW_OK)
        check_config(c, embd);
    else
        FUZZ_REQUIRE(refused_well(st));
done:
    free(c);
    gguf_close(f);
    json_object_put(root);
    return 0;
}
