"""gemma_gguf.py — shared helpers: Hugging Face Gemma models <-> GGUF.

Writes a GGUF from an HF Gemma 1/2/3 model the way llama.cpp's
convert_hf_to_gguf.py lays it out (tensor names, +1 on every *norm.weight,
metadata keys of docs gemma-facts.md section 3.2, SPM tokenizer keys of 3.5),
and loads any Gemma GGUF (F32 or quantized) back into an HF model in float32
(dequantized with gguf.quants.dequantize, norms minus 1). Both directions
derive everything from one name table and one config mapping so that
"write then load" is an exact round trip; make_tiny_models.py checks that.

Gemma 4 (architecture "gemma4", written by llama.cpp's own converter, see
the section at the end) is read only: load_gguf_as_hf and gemma4_gguf_name.

Limits: text-only Gemma 1/2/3/4 (no vision tower, no Gemma-3n). Quantities
GGUF does not store are filled in the way llama.cpp hard-codes them:
query_pre_attn_scalar (head_dim, or n_embd/n_head for the 27B models), the
Gemma-3 local rope base (10000) and the window patterns (2 and 6).
"""
from __future__ import annotations

import numpy as np
import torch
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType
from gguf.quants import dequantize

# GGUF architectures (general.architecture) this module handles.
ARCHES = ("gemma", "gemma2", "gemma3")

# Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6

# Gemma-3 local (sliding) layers: rope base hard-coded by llama.cpp.
G3_LOCAL_ROPE_BASE = 10000.0


def hf_classes(arch: str):
    """(config class, causal-LM class) of transformers for a GGUF arch."""
    from transformers import (GemmaConfig, GemmaForCausalLM, Gemma2Config,
                              Gemma2ForCausalLM, Gemma3TextConfig,
                              Gemma3ForCausalLM)
    if arch == "gemma4":
        from transformers import Gemma4TextConfig, Gemma4ForCausalLM
        return Gemma4TextConfig, Gemma4ForCausalLM
    return {"gemma": (GemmaConfig, GemmaForCausalLM),
            "gemma2": (Gemma2Config, Gemma2ForCausalLM),
            "gemma3": (Gemma3TextConfig, Gemma3ForCausalLM)}[arch]


def arch_of_config(config) -> str:
    """GGUF architecture name of an HF Gemma (text) config."""
    return {"gemma": "gemma", "gemma2": "gemma2",
            "gemma3_text": "gemma3", "gemma4_text": "gemma4"}[config.model_type]


# ---- tensor names ---------------------------------------------------------

# Per-layer HF suffix -> GGUF suffix (gemma-facts 3.3). Gemma 1's
# post_attention_layernorm is the *pre-FFN* norm: the "name trap".
_LAYER_NAMES = {
    "gemma": {
        "input_layernorm": "attn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "post_attention_layernorm": "ffn_norm",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    },
}
_LAYER_NAMES["gemma2"] = {
    **{k: v for k, v in _LAYER_NAMES["gemma"].items()
       if k != "post_attention_layernorm"},
    "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
}
_LAYER_NAMES["gemma3"] = {
    **_LAYER_NAMES["gemma2"],
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
}


def hf_to_gguf_name(arch: str, hf_name: str) -> str | None:
    """GGUF tensor name for an HF state-dict key; None for the tied lm_head.

    Example: ("gemma", "model.layers.3.post_attention_layernorm.weight")
             -> "blk.3.ffn_norm.weight"
    """
    if hf_name == "lm_head.weight":
        return None                      # tied to the embedding: not stored
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    parts = hf_name.split(".")
    if parts[:2] != ["model", "layers"] or parts[-1] != "weight":
        raise KeyError(f"unexpected HF tensor {hf_name!r}")
    suffix = ".".join(parts[3:-1])
    return f"blk.{parts[2]}.{_LAYER_NAMES[arch][suffix]}.weight"


def gguf_to_hf_name(arch: str, gguf_name: str) -> str:
    """Inverse of hf_to_gguf_name."""
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    _, layer, short, _ = gguf_name.split(".")
    inverse = {v: k for k, v in _LAYER_NAMES[arch].items()}
    return f"model.layers.{layer}.{inverse[short]}.weight"


def is_norm(hf_name: str) -> bool:
    """True for every RMSNorm weight: stored +1 in GGUF (gemma-facts 3.4)."""
    return hf_name.endswith("norm.weight")


# ---- config <-> metadata ----------------------------------------------------

def layer_is_sliding(arch: str, i: int) -> bool:
    """llama.cpp's fixed window patterns: G2 even layers, G3 i % 6 != 5."""
    if arch == "gemma2":
        return i % 2 == 0
    if arch == "gemma3":
        return i % 6 != 5
    return False


def _g3_rope(config) -> tuple[float, dict, float]:
    """(global base, global rope parameters, local base) of a Gemma-3 config."""
    rp = config.rope_parameters
    return (float(rp["full_attention"]["rope_theta"]), rp["full_attention"],
            float(rp["sliding_attention"]["rope_theta"]))


def check_representable(config) -> None:
    """Raises if `config` has a quirk GGUF cannot express (so a written file
    would load back as a different model)."""
    arch = arch_of_config(config)
    n_layer = config.num_hidden_layers
    if arch in ("gemma2", "gemma3"):
        want = [("sliding_attention" if layer_is_sliding(arch, i)
                 else "full_attention") for i in range(n_layer)]
        if list(config.layer_types) != want:
            raise ValueError(f"{arch}: layer_types {config.layer_types} differ "
                             "from llama.cpp's fixed pattern")
        if config.query_pre_attn_scalar != default_query_pre_attn_scalar(
                arch, n_layer, config.hidden_size,
                config.num_attention_heads, config.head_dim):
            raise ValueError("query_pre_attn_scalar is not what llama.cpp "
                             "assumes (GGUF has no key for it)")
    if arch == "gemma3":
        _, full, local = _g3_rope(config)
        if local != G3_LOCAL_ROPE_BASE:
            raise ValueError("Gemma-3 local rope base must be 10000")
        if config.attn_logit_softcapping is not None:
            raise ValueError("Gemma-3 has no attention softcap")
        if full.get("rope_type", "default") not in ("default", "linear"):
            raise ValueError("only default/linear rope scaling")


def default_query_pre_attn_scalar(arch, n_layer, n_embd, n_head, head_dim):
    """What llama.cpp uses: head_dim, except the 27B models (gemma-facts 1.5)."""
    if (arch, n_layer) in (("gemma2", 46), ("gemma3", 62)):
        return n_embd // n_head
    return head_dim


def write_gguf(path: str, model: torch.nn.Module, tokenizer: dict,
               name: str, context_length: int | None = None) -> None:
    """Writes `model` (an HF Gemma causal LM) to `path` as an all-F32 GGUF.

    tokenizer: {"tokens": [str], "scores": [float], "types": [int],
                "bos": int, "eos": int, "unk": int, "pad": int}
    Norm weights are written as (1 + w) in float32; lm_head is dropped (tied).
    """
    config = model.config
    check_representable(config)
    arch = arch_of_config(config)
    w = GGUFWriter(path, arch)           # writes general.architecture
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)  # all F32
    a = arch + "."
    w.add_uint32(a + "context_length",
                 context_length or config.max_position_embeddings)
    w.add_uint32(a + "embedding_length", config.hidden_size)
    w.add_uint32(a + "block_count", config.num_hidden_layers)
    w.add_uint32(a + "feed_forward_length", config.intermediate_size)
    w.add_uint32(a + "attention.head_count", config.num_attention_heads)
    w.add_uint32(a + "attention.head_count_kv", config.num_key_value_heads)
    w.add_uint32(a + "attention.key_length", config.head_dim)
    w.add_uint32(a + "attention.value_length", config.head_dim)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", config.rms_norm_eps)
    if arch in ("gemma2", "gemma3"):
        w.add_uint32(a + "attention.sliding_window", config.sliding_window)
    if arch == "gemma2":
        w.add_float32(a + "attn_logit_softcapping",
                      config.attn_logit_softcapping)
        w.add_float32(a + "final_logit_softcapping",
                      config.final_logit_softcapping)
    if arch == "gemma3":
        if config.final_logit_softcapping is not None:
            w.add_float32(a + "final_logit_softcapping",
                          config.final_logit_softcapping)
        base, full, _ = _g3_rope(config)
        w.add_float32(a + "rope.freq_base", base)
        if full.get("rope_type", "default") == "linear":
            w.add_string(a + "rope.scaling.type", "linear")
            w.add_float32(a + "rope.scaling.factor", float(full["factor"]))
    _write_tokenizer(w, tokenizer)

    for hf_name, t in model.state_dict().items():
        gname = hf_to_gguf_name(arch, hf_name)
        if gname is None:
            continue
        data = t.detach().to(torch.float32).cpu().numpy()
        if is_norm(hf_name):
            data = data + np.float32(1.0)
        w.add_tensor(gname, np.ascontiguousarray(data, dtype=np.float32),
                     raw_dtype=GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _write_tokenizer(w: GGUFWriter, tok: dict) -> None:
    """SPM ("llama") tokenizer keys as the Gemma converters write them."""
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", tok["tokens"])
    w.add_array("tokenizer.ggml.scores", [float(s) for s in tok["scores"]])
    w.add_array("tokenizer.ggml.token_type", [int(t) for t in tok["types"]])
    w.add_uint32("tokenizer.ggml.bos_token_id", tok["bos"])
    w.add_uint32("tokenizer.ggml.eos_token_id", tok["eos"])
    w.add_uint32("tokenizer.ggml.unknown_token_id", tok["unk"])
    w.add_uint32("tokenizer.ggml.padding_token_id", tok["pad"])
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)


# ---- GGUF -> HF ---------------------------------------------------------------

def _meta(reader: GGUFReader, key: str, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def config_from_gguf(reader: GGUFReader):
    """The HF config a Gemma GGUF describes, with llama.cpp's hard-coded
    defaults for what the file does not store (see module comment)."""
    arch = _meta(reader, "general.architecture")
    if arch not in ARCHES:
        raise ValueError(f"not a Gemma GGUF: architecture {arch!r}")
    config_cls, _ = hf_classes(arch)
    a = arch + "."
    n_layer = _meta(reader, a + "block_count")
    n_embd = _meta(reader, a + "embedding_length")
    n_head = _meta(reader, a + "attention.head_count")
    head_dim = _meta(reader, a + "attention.key_length", n_embd // n_head)
    n_vocab = int(reader.get_tensor(_tensor_index(reader, "token_embd.weight"))
                  .shape[-1])
    kw = dict(
        vocab_size=n_vocab, hidden_size=n_embd, num_hidden_layers=n_layer,
        intermediate_size=_meta(reader, a + "feed_forward_length"),
        num_attention_heads=n_head, head_dim=head_dim,
        num_key_value_heads=_meta(reader, a + "attention.head_count_kv", n_head),
        max_position_embeddings=_meta(reader, a + "context_length"),
        # f32 in the file; 1e-6 and float32(1e-6) round to the same f32 eps.
        rms_norm_eps=float(np.float32(
            _meta(reader, a + "attention.layer_norm_rms_epsilon"))),
        bos_token_id=_meta(reader, "tokenizer.ggml.bos_token_id", 2),
        eos_token_id=_meta(reader, "tokenizer.ggml.eos_token_id", 1),
        pad_token_id=_meta(reader, "tokenizer.ggml.padding_token_id", 0),
        tie_word_embeddings=True,
    )
    if arch == "gemma":
        kw.update(hidden_act="gelu_pytorch_tanh",
                  rope_parameters={"rope_type": "default",
                                   "rope_theta": _meta(reader, a + "rope.freq_base", 10000.0)})
    else:
        kw.update(hidden_activation="gelu_pytorch_tanh",
                  sliding_window=_meta(reader, a + "attention.sliding_window", 4096),
                  query_pre_attn_scalar=default_query_pre_attn_scalar(
                      arch, n_layer, n_embd, n_head, head_dim),
                  final_logit_softcapping=_meta(reader, a + "final_logit_softcapping"),
                  layer_types=[("sliding_attention" if layer_is_sliding(arch, i)
                                else "full_attention") for i in range(n_layer)])
    if arch == "gemma2":
        kw.update(attn_logit_softcapping=_meta(reader, a + "attn_logit_softcapping", 50.0),
                  final_logit_softcapping=_meta(reader, a + "final_logit_softcapping", 30.0),
                  rope_parameters={"rope_type": "default",
                                   "rope_theta": _meta(reader, a + "rope.freq_base", 10000.0)})
    if arch == "gemma3":
        full = {"rope_type": "default",
                "rope_theta": float(np.float32(_meta(reader, a + "rope.freq_base", 1e6)))}
        if _meta(reader, a + "rope.scaling.type", "none") == "linear":
            full.update(rope_type="linear",
                        factor=float(_meta(reader, a + "rope.scaling.factor")))
        kw.update(attn_logit_softcapping=None,
                  rope_parameters={"full_attention": full,
                                   "sliding_attention": {"rope_type": "default",
                                                         "rope_theta": G3_LOCAL_ROPE_BASE}})
    return config_cls(**kw)


def _tensor_index(reader: GGUFReader, name: str) -> int:
    for i, t in enumerate(reader.tensors):
        if t.name == name:
            return i
    raise KeyError(f"GGUF has no tensor {name!r}")


def dequantized_tensor(t) -> np.ndarray:
    """A GGUF tensor as float32 in HF [out, in] order (gguf's reversed ne)."""
    data = dequantize(t.data, GGMLQuantizationType(t.tensor_type))
    shape = tuple(int(d) for d in reversed(t.shape))
    return np.asarray(data, dtype=np.float32).reshape(shape)


def load_gguf_as_hf(path: str, dtype=torch.float32):
    """Builds an HF Gemma causal LM (eager attention, eval mode, `dtype`)
    from a GGUF: weights dequantized to f32, norm weights minus 1, lm_head
    tied to the embedding. Returns (model, reader)."""
    reader = GGUFReader(path)
    if _meta(reader, "general.architecture") == "gemma4":
        return _load_gemma4(reader, path, dtype), reader
    config = config_from_gguf(reader)
    config._attn_implementation = "eager"
    arch = arch_of_config(config)
    _, model_cls = hf_classes(arch)
    state = {}
    for t in reader.tensors:
        hf_name = gguf_to_hf_name(arch, t.name)
        w = dequantized_tensor(t)
        if is_norm(hf_name):
            w = w - np.float32(1.0)
        state[hf_name] = torch.from_numpy(np.array(w, dtype=np.float32))
    with torch.device("meta"):
        model = model_cls(config)
    model.load_state_dict(state, strict=False, assign=True)
    model.lm_head.weight = model.model.embed_tokens.weight      # tied
    _rebuild_buffers(model)
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ValueError(f"{path}: tensors missing for {missing}")
    assert not any(b.is_meta for b in model.buffers()), "a buffer is left on meta"
    return model.to(dtype).eval(), reader


def _rebuild_buffers(model) -> None:
    """Recreates the non-persistent buffers (embed scale, rope inverse
    frequencies) that a meta-device construction leaves empty, by building
    the small modules that own them again on the CPU."""
    inner = model.model
    emb = inner.embed_tokens
    emb.embed_scale = torch.tensor(emb.scalar_embed_scale)
    inner.rotary_emb = type(inner.rotary_emb)(model.config)


# ---- Gemma 4 (read only) -------------------------------------------------------
#
# GGUF files made by llama.cpp's convert_hf_to_gguf.py (Gemma4Model). What
# the converter does, checked by make_tiny_gemma4.py on the tiny models:
#   - every tensor keeps its values (norm weights too: Gemma4RMSNorm
#     multiplies by w, so no +1), only renamed (table below); ggml's shapes
#     are the HF shapes reversed, as for every GGUF;
#   - layer_scalar [1] -> blk.N.layer_output_scale.weight;
#     router.scale -> blk.N.ffn_gate_inp.scale; router.per_expert_scale ->
#     blk.N.ffn_down_exps.scale; experts.gate_up_proj [E, 2*I, H] stays fused
#     as blk.N.ffn_gate_up_exps.weight (gate rows first, then up);
#   - KV-shared layers have no attn_k / attn_v / attn_k_norm (transformers
#     does not create them); full layers of attention_k_eq_v models have no
#     attn_v;
#   - one extra tensor, rope_freqs.weight [global_head_dim / 2]: 1.0 for the
#     rotated frequencies of the full layers' proportional RoPE, 1e30 for the
#     rest (ggml divides the angle by it);
#   - the lm_head is tied (no output.weight).

_G4_GLOBAL_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
    "model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
    "model.per_layer_projection_norm.weight": "per_layer_proj_norm.weight",
    "model.norm.weight": "output_norm.weight",
}

# Per-layer HF suffix (after "model.layers.N.") -> GGUF suffix (after "blk.N.").
_G4_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "per_layer_input_gate.weight": "inp_gate.weight",
    "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight",
    "layer_scalar": "layer_output_scale.weight",
    "router.proj.weight": "ffn_gate_inp.weight",
    "router.scale": "ffn_gate_inp.scale",
    "router.per_expert_scale": "ffn_down_exps.scale",
    "experts.gate_up_proj": "ffn_gate_up_exps.weight",
    "experts.down_proj": "ffn_down_exps.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight",
    "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
}


def gemma4_gguf_name(hf_name: str) -> str:
    """GGUF name llama.cpp's converter gives an HF Gemma4ForCausalLM tensor.

    Example: "model.layers.3.router.per_expert_scale" -> "blk.3.ffn_down_exps.scale"
    """
    if hf_name in _G4_GLOBAL_NAMES:
        return _G4_GLOBAL_NAMES[hf_name]
    parts = hf_name.split(".")
    if parts[:2] != ["model", "layers"]:
        raise KeyError(f"unexpected HF tensor {hf_name!r}")
    return f"blk.{parts[2]}.{_G4_LAYER_NAMES['.'.join(parts[3:])]}"


def gemma4_hf_name(gguf_name: str) -> str | None:
    """Inverse of gemma4_gguf_name; None for rope_freqs.weight (not an HF
    tensor: it encodes partial_rotary_factor)."""
    if gguf_name == "rope_freqs.weight":
        return None
    inverse = {v: k for k, v in _G4_GLOBAL_NAMES.items()}
    if gguf_name in inverse:
        return inverse[gguf_name]
    _, layer, rest = gguf_name.split(".", 2)
    layer_inverse = {v: k for k, v in _G4_LAYER_NAMES.items()}
    return f"model.layers.{layer}.{layer_inverse[rest]}"


def _per_layer(value, n_layer: int) -> list:
    return list(value) if isinstance(value, list) else [value] * n_layer


def gemma4_config_from_gguf(reader: GGUFReader):
    """The Gemma4TextConfig a gemma4 GGUF describes. Everything comes from
    the file: the keys, the presence of attn_v / attn_k per layer and
    rope_freqs (partial_rotary_factor of the full layers). Raises where the
    file says something a Gemma4TextConfig cannot express."""
    from transformers import Gemma4TextConfig
    a = "gemma4."
    n_layer = _meta(reader, a + "block_count")
    names = {t.name for t in reader.tensors}
    swa = _per_layer(_meta(reader, a + "attention.sliding_window_pattern"), n_layer)
    layer_types = ["sliding_attention" if s else "full_attention" for s in swa]
    n_shared = _meta(reader, a + "attention.shared_kv_layers", 0)
    first_shared = n_layer - n_shared
    head_kv = _per_layer(_meta(reader, a + "attention.head_count_kv"), n_layer)
    kv_swa = {h for h, s in zip(head_kv, swa) if s}
    kv_full = {h for h, s in zip(head_kv, swa) if not s}
    if len(kv_swa) != 1 or len(kv_full) != 1:
        raise ValueError(f"head_count_kv varies within a layer type: {head_kv}")
    hd_full = _meta(reader, a + "attention.key_length")
    hd_swa = _meta(reader, a + "attention.key_length_swa")
    if (_meta(reader, a + "attention.value_length") != hd_full
            or _meta(reader, a + "attention.value_length_swa") != hd_swa):
        raise ValueError("value_length != key_length")
    if (_meta(reader, a + "rope.dimension_count", hd_full) != hd_full
            or _meta(reader, a + "rope.dimension_count_swa", hd_swa) != hd_swa):
        raise ValueError("rope.dimension_count(_swa) must be the head size "
                         "(partial rotation is in rope_freqs)")
    # attention_k_eq_v: full layers that compute K/V have no attn_v.
    full_kv = [i for i in range(first_shared) if not swa[i]]
    no_v = {f"blk.{i}.attn_v.weight" not in names for i in full_kv}
    if len(no_v) != 1 or any(f"blk.{i}.attn_v.weight" not in names
                             for i in range(first_shared) if swa[i]):
        raise ValueError("attn_v missing on some layers only")
    k_eq_v = no_v.pop()
    if kv_full != kv_swa and not k_eq_v:
        raise ValueError("different KV heads on full layers need attention_k_eq_v")
    # Proportional RoPE of the full layers from rope_freqs.
    freqs = dequantized_tensor(reader.tensors[_tensor_index(reader, "rope_freqs.weight")])
    n_rot = int((freqs == 1.0).sum())
    if (freqs.shape != (hd_full // 2,) or not (freqs[:n_rot] == 1.0).all()
            or not (freqs[n_rot:] >= 1e29).all()):
        raise ValueError(f"rope_freqs is not 1.0 x n then 1e30: {freqs}")
    n_ff = _per_layer(_meta(reader, a + "feed_forward_length"), n_layer)
    base_ff = n_ff[0]
    double = n_ff != [base_ff] * n_layer
    if double and n_ff != [base_ff if i < first_shared else 2 * base_ff
                           for i in range(n_layer)]:
        raise ValueError(f"feed_forward_length {n_ff} is not use_double_wide_mlp's")
    n_expert = _meta(reader, a + "expert_count", 0)
    n_pl = _meta(reader, a + "embedding_length_per_layer_input", 0)
    tok = reader.tensors[_tensor_index(reader, "token_embd.weight")]
    kw = dict(
        vocab_size=int(tok.shape[-1]),
        hidden_size=_meta(reader, a + "embedding_length"),
        num_hidden_layers=n_layer,
        intermediate_size=base_ff,
        num_attention_heads=_meta(reader, a + "attention.head_count"),
        num_key_value_heads=kv_swa.pop(),
        num_global_key_value_heads=kv_full.pop() if k_eq_v else None,
        head_dim=hd_swa, global_head_dim=hd_full,
        attention_k_eq_v=k_eq_v,
        hidden_activation="gelu_pytorch_tanh",
        max_position_embeddings=_meta(reader, a + "context_length"),
        rms_norm_eps=float(np.float32(_meta(reader, a + "attention.layer_norm_rms_epsilon"))),
        sliding_window=_meta(reader, a + "attention.sliding_window"),
        layer_types=layer_types,
        final_logit_softcapping=_meta(reader, a + "final_logit_softcapping"),
        num_kv_shared_layers=n_shared,
        use_double_wide_mlp=double,
        hidden_size_per_layer_input=n_pl,
        vocab_size_per_layer_input=(int(reader.tensors[_tensor_index(
            reader, "per_layer_token_embd.weight")].shape[-1]) if n_pl else int(tok.shape[-1])),
        enable_moe_block=n_expert > 0,
        num_experts=n_expert or None,
        top_k_experts=_meta(reader, a + "expert_used_count") if n_expert else None,
        moe_intermediate_size=_meta(reader, a + "expert_feed_forward_length") if n_expert else None,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": float(
                np.float32(_meta(reader, a + "rope.freq_base_swa", 10000.0)))},
            "full_attention": {"rope_type": "proportional",
                               "partial_rotary_factor": 2 * n_rot / hd_full,
                               "rope_theta": float(np.float32(
                                   _meta(reader, a + "rope.freq_base", 1e6)))}},
        bos_token_id=_meta(reader, "tokenizer.ggml.bos_token_id", 2),
        eos_token_id=_meta(reader, "tokenizer.ggml.eos_token_id", 1),
        pad_token_id=_meta(reader, "tokenizer.ggml.padding_token_id", 0),
        tie_word_embeddings=True,
    )
    return Gemma4TextConfig(**kw)


def _load_gemma4(reader: GGUFReader, path: str, dtype):
    """load_gguf_as_hf for architecture gemma4 (see the notes above)."""
    config = gemma4_config_from_gguf(reader)
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    _, model_cls = hf_classes("gemma4")
    state = {}
    for t in reader.tensors:
        hf_name = gemma4_hf_name(t.name)
        if hf_name is not None:
            state[hf_name] = torch.from_numpy(np.array(dequantized_tensor(t), dtype=np.float32))
    with torch.device("meta"):
        model = model_cls(config)
    expected = {n for n in model.state_dict() if n != "lm_head.weight"}
    if set(state) != expected:
        raise ValueError(f"{path}: tensors differ from the config's: missing "
                         f"{sorted(expected - set(state))}, extra {sorted(set(state) - expected)}")
    model.load_state_dict(state, strict=False, assign=True)
    model.lm_head.weight = model.model.embed_tokens.weight      # tied
    inner = model.model
    for emb in (inner.embed_tokens, getattr(inner, "embed_tokens_per_layer", None)):
        if emb is not None:
            emb.embed_scale = torch.tensor(emb.scalar_embed_scale)
    inner.rotary_emb = type(inner.rotary_emb)(model.config)
    missing = [n for n, p in model.named_parameters() if p.is_meta]
    missing += [n for n, b in model.named_buffers() if b.is_meta]
    if missing:
        raise ValueError(f"{path}: left on meta: {missing}")
    return model.to(dtype).eval()
