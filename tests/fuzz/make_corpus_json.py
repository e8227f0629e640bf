#!/usr/bin/env python3
"""make_corpus_json.py — writes the seed corpora of the JSON and text
harnesses (tests/fuzz.cmake):

  corpus_tokenizer_json  small tokenizer.json files cut from the tiny Gemma
                         1/3/4 ones (a subset of the vocabulary that is closed
                         under the merge rules, so each still builds), in each
                         pipeline form the reader accepts, some followed by a
                         NUL and tokenizer_config.json (and a NUL and
                         config.json), and a few it refuses
  corpus_config_json     the tiny models' config.json files, and the published
                         configs of every Gemma generation and size class
                         (Gemma 1 2B/7B, Gemma 2 2B/9B/27B, Gemma 3 270M/1B/
                         4B/27B, Gemma 4 E2B/E4B/26B-A4B/31B) in the layouts
                         users have: transformers 4 flat keys and 5
                         rope_parameters, multimodal text_config wrappers,
                         and Gemma 4 with global_head_dim or per_layer_config
  corpus_codec           texts (chat markup, whitespace runs, multilingual,
                         broken UTF-8, byte-token look-alikes) and token-id
                         arrays (little-endian int32)
  corpus_serve_api       /v1/completions and /v1/chat/completions bodies

  python3 tests/fuzz/make_corpus_json.py      # from the repository root

Deterministic: rerunning it rewrites identical bytes. It writes only its own
file names, so regression inputs kept beside them (regress_*) stay.
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "tests", "fuzz")
TINY = os.path.join(ROOT, "tests", "data", "tiny")
SPACE = "\u2581"


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def write(corpus, name, data):
    d = os.path.join(FUZZ, "corpus_" + corpus)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ---- tokenizer.json -------------------------------------------------------

def mini_tokenizer(tiny, chars, n_bytes):
    """tiny/<tiny>/tokenizer.json with only the added tokens, n_bytes byte
    tokens (<0x0A> first), and the pieces spelled with `chars`: a subset
    closed under the merge rules (a rule's sides are substrings of its
    product), renumbered densely."""
    tok = load(os.path.join(TINY, tiny, "tokenizer.json"))
    vocab = tok["model"]["vocab"]
    added = {a["content"] for a in tok["added_tokens"]}
    byte_keep = ["<0x0A>", "<0x20>", "<0xC3>", "<0xA9>", "<0xE2>", "<0x96>", "<0x81>",
                 "<0xF0>", "<0x9F>", "<0xFF>", "<0x00>"][:n_bytes]
    keep = []
    for text, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
        if text in added or text in byte_keep or all(c in chars for c in text):
            keep.append(text)
    new_id = {t: i for i, t in enumerate(keep)}
    tok["model"]["vocab"] = {t: new_id[t] for t in keep}
    merges = []
    for rule in tok["model"]["merges"]:
        a, b = rule if isinstance(rule, list) else rule.split(" ", 1)
        if a in new_id and b in new_id and a + b in new_id:
            merges.append([a, b])
    tok["model"]["merges"] = merges
    next_id = len(keep)
    for a in tok["added_tokens"]:
        if a["content"] in new_id:
            a["id"] = new_id[a["content"]]
        else:
            a["id"] = next_id
            next_id += 1
    tok.pop("decoder", None)
    pp = tok.get("post_processor")
    if pp:
        for st in pp.get("special_tokens", {}).values():
            st["ids"] = [new_id.get(t, 0) for t in st["tokens"]]
        pp.pop("pair", None)
    return tok


def tokenizer_seeds():
    letters = SPACE + "aehnst"
    g3 = mini_tokenizer("gemma3-hf", letters, 6)
    write("tokenizer_json", "gemma3_mini.json", dumps(g3))

    g4 = mini_tokenizer("gemma4-kv-hf", letters + "\n", 4)
    write("tokenizer_json", "gemma4_mini.json", dumps(g4))

    # Gemma 1/2 form: Prepend + Replace, merges as "a b" strings, no
    # post-processor, a space-run added token, tokenizer_config.json after
    # a NUL with bos_token as {"content": ...}.
    g1 = mini_tokenizer("gemma1-hf", letters, 4)
    g1["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
    g1["pre_tokenizer"] = None
    g1["post_processor"] = None
    g1["model"]["merges"] = [a + " " + b for a, b in g1["model"]["merges"]]
    n = len(g1["model"]["vocab"])
    g1["added_tokens"] += [
        {"id": n + 1, "content": SPACE * 2, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": False},
        {"id": n + 2, "content": "<start_of_turn>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True},
        {"id": n + 3, "content": "<td>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": False}]
    tcfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": {"content": "<bos>"},
            "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
            "tokenizer_class": "GemmaTokenizer"}
    write("tokenizer_json", "gemma1_prepend_config.json",
          dumps(g1) + b"\0" + dumps(tcfg))
    write("tokenizer_json", "gemma1_prepend_config_model.json",
          dumps(g1) + b"\0" + dumps(dict(tcfg, add_bos_token=False)) + b"\0" +
          dumps({"bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}))

    # Metaspace pre-tokenizer, template with BOS and EOS, config.json only.
    meta = json.loads(dumps(g3))
    meta["normalizer"] = None
    meta["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "never",
         "split": False}]}
    meta["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
        "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]},
                           "<eos>": {"id": "<eos>", "ids": [1], "tokens": ["<eos>"]}}}
    write("tokenizer_json", "metaspace_bos_eos.json",
          dumps(meta) + b"\0" + b"{}" + b"\0" + dumps({"bos_token_id": 2}))

    # Refused forms, one each: the fuzzer starts from both sides.
    bad = json.loads(dumps(g3))
    bad["model"]["type"] = "Unigram"
    write("tokenizer_json", "refused_unigram.json", dumps(bad))
    bad = json.loads(dumps(g3))
    bad["model"]["merges"].append(["a", "b"])
    write("tokenizer_json", "refused_merge.json", dumps(bad))
    bad = json.loads(dumps(g3))
    bad["normalizer"] = {"type": "NFKC"}
    write("tokenizer_json", "refused_nfkc.json", dumps(bad))
    write("tokenizer_json", "empty_object.json", b"{}")


# ---- config.json ----------------------------------------------------------

def layer_types(n, period):
    return ["full_attention" if (i + 1) % period == 0 else "sliding_attention"
            for i in range(n)]


def gemma1(hidden, inter, layers, heads, kv):
    return {"architectures": ["GemmaForCausalLM"], "attention_bias": False,
            "attention_dropout": 0.0, "bos_token_id": 2, "eos_token_id": 1, "head_dim": 256,
            "hidden_act": "gelu", "hidden_size": hidden, "initializer_range": 0.02,
            "intermediate_size": inter, "max_position_embeddings": 8192,
            "model_type": "gemma", "num_attention_heads": heads, "num_hidden_layers": layers,
            "num_key_value_heads": kv, "pad_token_id": 0, "rms_norm_eps": 1e-06,
            "rope_scaling": None, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
            "transformers_version": "4.38.0.dev0", "use_cache": True, "vocab_size": 256000}


def gemma2(hidden, inter, layers, heads, kv, head_dim, qpas):
    return {"architectures": ["Gemma2ForCausalLM"], "attention_bias": False,
            "attention_dropout": 0.0, "attn_logit_softcapping": 50.0, "bos_token_id": 2,
            "cache_implementation": "hybrid", "eos_token_id": 1,
            "final_logit_softcapping": 30.0, "head_dim": head_dim,
            "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
            "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
            "max_position_embeddings": 8192, "model_type": "gemma2",
            "num_attention_heads": heads, "num_hidden_layers": layers,
            "num_key_value_heads": kv, "pad_token_id": 0, "query_pre_attn_scalar": qpas,
            "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
            "torch_dtype": "bfloat16", "transformers_version": "4.42.4", "use_cache": True,
            "vocab_size": 256000}


def gemma3_text(hidden, inter, layers, heads, kv, head_dim, qpas, window, max_pos, factor):
    c = {"architectures": ["Gemma3ForCausalLM"], "attention_bias": False,
         "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2,
         "eos_token_id": 1, "final_logit_softcapping": None, "head_dim": head_dim,
         "hidden_activation": "gelu_pytorch_tanh", "hidden_size": hidden,
         "initializer_range": 0.02, "intermediate_size": inter,
         "max_position_embeddings": max_pos, "model_type": "gemma3_text",
         "num_attention_heads": heads, "num_hidden_layers": layers,
         "num_key_value_heads": kv, "pad_token_id": 0, "query_pre_attn_scalar": qpas,
         "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
         "rope_scaling": {"factor": factor, "rope_type": "linear"} if factor else None,
         "rope_theta": 1000000.0, "sliding_window": window, "sliding_window_pattern": 6,
         "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
         "use_cache": True, "vocab_size": 262208}
    return c


def gemma3_v5(c):
    """The same config as transformers 5 saves it: layer_types and
    rope_parameters per layer type."""
    c = dict(c)
    factor = (c.pop("rope_scaling") or {}).get("factor")
    full = {"rope_theta": c.pop("rope_theta"), "rope_type": "linear" if factor else "default"}
    if factor:
        full["factor"] = factor
    c["rope_parameters"] = {"full_attention": full, "sliding_attention": {
        "rope_theta": c.pop("rope_local_base_freq"), "rope_type": "default"}}
    c["layer_types"] = layer_types(c["num_hidden_layers"], c.pop("sliding_window_pattern"))
    c["transformers_version"] = "5.24.0"
    c["dtype"] = c.pop("torch_dtype")
    return c


def multimodal(arch, model_type, text):
    text = dict(text)
    text.pop("architectures")
    return {"architectures": [arch], "boi_token_index": 255999, "eoi_token_index": 256000,
            "eos_token_id": [1, 106], "image_token_index": 262144,
            "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": model_type,
            "text_config": text, "torch_dtype": "bfloat16",
            "vision_config": {"hidden_size": 1152, "image_size": 896,
                              "intermediate_size": 4304, "model_type": "siglip_vision_model",
                              "num_attention_heads": 16, "num_hidden_layers": 27,
                              "patch_size": 14, "vision_use_head": False}}


def gemma4_text(hidden, layers, period, heads, kv, kv_full, k_eq_v, inter, pl, shared,
                window, max_pos, moe=None, double_wide=False):
    c = {"architectures": ["Gemma4ForCausalLM"], "attention_bias": False,
         "attention_dropout": 0.0, "attention_k_eq_v": k_eq_v, "bos_token_id": 2,
         "enable_moe_block": moe is not None, "eos_token_id": 1,
         "final_logit_softcapping": 30.0, "global_head_dim": 512, "head_dim": 256,
         "hidden_activation": "gelu_pytorch_tanh", "hidden_size": hidden,
         "hidden_size_per_layer_input": pl, "initializer_range": 0.02,
         "intermediate_size": inter, "layer_types": layer_types(layers, period),
         "max_position_embeddings": max_pos, "model_type": "gemma4_text",
         "num_attention_heads": heads, "num_global_key_value_heads": kv_full,
         "num_hidden_layers": layers, "num_key_value_heads": kv,
         "num_kv_shared_layers": shared, "pad_token_id": 0, "rms_norm_eps": 1e-06,
         "rope_parameters": {
             "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                "rope_type": "proportional"},
             "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
         "sliding_window": window, "tie_word_embeddings": True,
         "transformers_version": "5.5.0", "use_bidirectional_attention": None,
         "use_cache": True, "use_double_wide_mlp": double_wide, "vocab_size": 262144,
         "vocab_size_per_layer_input": 262144}
    if moe:
        c.update({"num_experts": moe[0], "top_k_experts": moe[1],
                  "moe_intermediate_size": moe[2]})
    return c


def per_layer_layout(c):
    """Gemma 4 as transformers 5.2x saves it: per_layer_config entries for
    the full layers instead of global_head_dim / num_global_key_value_heads."""
    c = dict(c)
    hd, kv = c.pop("global_head_dim"), c.pop("num_global_key_value_heads")
    kv = kv if c["attention_k_eq_v"] else c["num_key_value_heads"]
    c["per_layer_config"] = {str(i): {"head_dim": hd, "num_key_value_heads": kv}
                             for i, t in enumerate(c["layer_types"]) if t == "full_attention"}
    c["transformers_version"] = "5.24.0"
    return c


def config_seeds():
    for name in sorted(os.listdir(TINY)):
        path = os.path.join(TINY, name, "config.json")
        if name.endswith("-hf") and os.path.exists(path):
            with open(path, "rb") as f:
                write("config_json", "tiny_" + name[:-3] + ".json", f.read())
    cfgs = {
        "gemma-2b": gemma1(2048, 16384, 18, 8, 1),
        "gemma-7b": gemma1(3072, 24576, 28, 16, 16),
        "gemma-2-2b": gemma2(2304, 9216, 26, 8, 4, 256, 256),
        "gemma-2-9b": gemma2(3584, 14336, 42, 16, 8, 256, 256),
        "gemma-2-27b": gemma2(4608, 36864, 46, 32, 16, 128, 144),
        "gemma-3-270m": gemma3_text(640, 2048, 18, 4, 1, 256, 256, 512, 32768, None),
        "gemma-3-1b": gemma3_text(1152, 6912, 26, 4, 1, 256, 256, 512, 32768, None),
    }
    g3_4b = gemma3_text(2560, 10240, 34, 8, 4, 256, 256, 1024, 131072, 8.0)
    g3_27b = gemma3_text(5376, 21504, 62, 32, 16, 128, 168, 1024, 131072, 8.0)
    cfgs["gemma-3-4b-it"] = multimodal("Gemma3ForConditionalGeneration", "gemma3", g3_4b)
    cfgs["gemma-3-27b-it_v5"] = multimodal("Gemma3ForConditionalGeneration", "gemma3",
                                           gemma3_v5(g3_27b))
    cfgs["gemma-3-1b_v5"] = gemma3_v5(cfgs["gemma-3-1b"])
    e2b = gemma4_text(1536, 35, 5, 8, 1, 1, False, 6144, 256, 20, 512, 131072,
                      double_wide=True)
    e4b = gemma4_text(2560, 42, 6, 8, 2, 2, False, 10240, 256, 18, 512, 131072)
    a4b = gemma4_text(2816, 30, 6, 16, 8, 2, True, 2112, 0, 0, 1024, 262144,
                      moe=(128, 8, 704))
    g31b = gemma4_text(5376, 60, 6, 32, 16, 4, True, 21504, 0, 0, 1024, 262144)
    cfgs["gemma-4-e2b-it"] = multimodal("Gemma4ForConditionalGeneration", "gemma4", e2b)
    cfgs["gemma-4-e4b_per_layer"] = per_layer_layout(e4b)
    cfgs["gemma-4-26b-a4b"] = a4b
    cfgs["gemma-4-31b_per_layer"] = per_layer_layout(g31b)
    for name, c in cfgs.items():
        write("config_json", name + ".json", dumps(c))
    # model_type only, no architectures: every default
    for t in ("gemma", "gemma2", "gemma3_text", "gemma4_text"):
        write("config_json", "defaults_" + t + ".json", dumps({"model_type": t}))


# ---- encoder / decoder ------------------------------------------------------

def codec_seeds():
    texts = {
        "hello": "Hello world",
        "chat": "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
        "chat4": "<|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n",
        "spaces": "  a  b   c    \t\td\n\n\n  \n e  ",
        "newlines": "\n\n\nline\n\n\n\n\nnext\r\n",
        "multilingual": "h\u00e9llo \u65e5\u672c\u8a9e \u0645\u0631\u062d\u0628\u0627 "
                        "\u043f\u0440\u0438\u0432\u0435\u0442 \U0001F642\U0001F44D\U0001F3FD "
                        "e\u0301 \u00df\u00e6",
        "code": "def f(x):\n    return {\"a\": [1, 2.5e-3]}  # \u2192 done\n",
        "space_mark": "\u2581the \u2581\u2581x\u2581",
        "byte_lookalikes": "<0x41><0xE2><0x0A> <0x> <0xZZ> <unused0> <pad> <mask> <bos>",
        "specials": "<bos><eos><unk><start_of_image><end_of_turn></s><|turn><turn|>",
    }
    for name, text in texts.items():
        write("codec", "text_" + name, text.encode())
    write("codec", "bytes_broken_utf8", b"\xe2\x96 a\xc3\x28\xff\xfe\xf0\x9f\x99 \xed\xa0\x80"
          b"\xc0\xaf\x00nul\x00")
    write("codec", "bytes_all", bytes(range(256)))
    # token ids: small and special ids, ids near Gemma 4 tiny's and Gemma 3's
    # vocabulary ends, byte tokens, negative and huge ids
    write("codec", "ids_small", struct.pack("<16i", *range(16)))
    write("codec", "ids_pieces", struct.pack("<8i", 2, 106, 1645, 108, 9259, 1902, 107, 1))
    write("codec", "ids_bytes", struct.pack("<6i", 238, 236, 240, 229, 169, 10))
    write("codec", "ids_edges", struct.pack("<6i", 511, 512, 262143, 262144, -1, 2**31 - 1))


# ---- server request bodies ---------------------------------------------------

def serve_seeds():
    bodies = {
        "completion": {"prompt": "Hello", "max_tokens": 8},
        "completion_full": {"model": "tiny", "prompt": ["Once upon a time"], "max_tokens": 16,
                            "temperature": 0.7, "top_p": 0.9, "seed": 42, "n": 1,
                            "stream": True, "stop": ["\n", "END", "<end_of_turn>"]},
        "completion_special": {"prompt": "<start_of_turn>user\nhi<end_of_turn>\n",
                               "stop": "x", "temperature": 0, "max_tokens": 1},
        "chat": {"messages": [{"role": "user", "content": "Hi"}]},
        "chat_full": {"model": "tiny", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "And 3+3? \u00e9\U0001F642"}],
            "max_completion_tokens": 4, "stream": False, "temperature": 2, "top_p": 1,
            "seed": 9007199254740992, "stop": ["a", "b", "c", "d"]},
        "chat_system_only": {"messages": [{"role": "system", "content": "x"}]},
        "chat_long": {"messages": [{"role": "user", "content": "word " * 40}],
                      "max_tokens": 1},
        "bad_stop": {"prompt": "x", "stop": ["a", "b", "c", "d", "e"]},
        "bad_role": {"messages": [{"role": "model", "content": "x"}]},
        "bad_model": {"model": "other", "prompt": "x"},
        "chat_json_schema": {"messages": [{"role": "user", "content": "JSON"}], "max_tokens": 8,
                             "response_format": {"type": "json_schema", "json_schema": {
                                 "name": "s", "strict": True, "schema": {
                                     "$defs": {"P": {"type": "object", "properties": {
                                         "x": {"type": "integer", "minimum": -5,
                                               "maximum": 250}}, "required": ["x"]}},
                                     "type": "object", "properties": {
                                         "p": {"$ref": "#/$defs/P"},
                                         "s": {"type": "string", "maxLength": 3},
                                         "e": {"anyOf": [{"enum": ["a", 1]}, {"type": "null"}]},
                                         "l": {"type": "array", "items": {"type": "number"},
                                               "minItems": 1, "maxItems": 2}},
                                     "required": ["p", "s"],
                                     "additionalProperties": False}}}},
        "completion_json_object": {"prompt": "x", "max_tokens": 4,
                                   "response_format": {"type": "json_object"}},
        "bad_schema_pattern": {"prompt": "x", "response_format": {
            "type": "json_schema", "json_schema": {"name": "b", "schema": {
                "type": "string", "pattern": "^a+$"}}}},
    }
    for name, body in bodies.items():
        write("serve_api", name + ".json", dumps(body))
    write("serve_api", "not_an_object.json", b"[1, 2, 3]")
    write("serve_api", "bad_utf8.json", b'{"prompt": "\xff"}')


if __name__ == "__main__":
    tokenizer_seeds()
    config_seeds()
    codec_seeds()
    serve_seeds()
