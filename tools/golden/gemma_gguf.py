"""gemma_gguf.py — shared helpers: Hugging Face Gemma models <-> GGUF.

Writes a GGUF from an HF Gemma 1/2/3 model the way llama.cpp's
convert_hf_to_gguf.py lays it out (tensor names, +1 on every *norm.weight,
metadata keys of docs gemma-facts.md section 3.2, SPM tokenizer keys of 3.5),
and loads any Gemma GGUF (F32 or quantized) back into an HF model in float32
(dequantized with gguf.quants.dequantize, norms minus 1). Both directions
derive everything from one name table and one config mapping so that
"write then load" is an exact round trip; make_tiny_models.py checks that.

Limits: text-only Gemma 1/2/3 (no vision tower, no Gemma-3n). Quantities
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
    return {"gemma": (GemmaConfig, GemmaForCausalLM),
            "gemma2": (Gemma2Config, Gemma2ForCausalLM),
            "gemma3": (Gemma3TextConfig, Gemma3ForCausalLM)}[arch]


def arch_of_config(config) -> str:
    """GGUF architecture name of an HF Gemma (text) config."""
    return {"gemma": "gemma", "gemma2": "gemma2",
            "gemma3_text": "gemma3"}[config.model_type]


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
