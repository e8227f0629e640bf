#!/usr/bin/env python3
"""make_tiny_gemma4.py — tiny random Gemma 4 text models for forward tests.

Writes, for each of gemma4-ple, gemma4-kv, gemma4-moe:
  tests/data/tiny/<name>-hf/   Hugging Face folder: config.json,
                               model.safetensors (bfloat16), tokenizer.json,
                               tokenizer_config.json
  tests/data/tiny/<name>.gguf  all-F32 GGUF made from that folder by
                               llama.cpp's own convert_hf_to_gguf.py
Every weight (and the layer_scalar buffers) is drawn from a fixed seed and
rounded to a bfloat16 value, so the bf16 safetensors, the f32 GGUF and the
f32 reference model hold the very same numbers (load the folder with
dtype=torch.float32). Constant-initialised tensors (norm weights,
layer_scalar, router scale, per_expert_scale) get random values too.

The three models (Gemma4TextConfig / Gemma4ForCausalLM, 5 layers, hidden 64,
4 query heads, head_dim 16 on sliding layers and global_head_dim 32 on full
layers, n_ff 64, vocabulary 512, sliding window 8, final soft-cap 4):
  gemma4-ple  like E2B: layers S S F S F, per-layer embeddings (8 per
              layer), KV sharing (layer 3 reuses layer 1's K/V, layer 4
              layer 2's), use_double_wide_mlp (n_ff 128 in those two), MQA
  gemma4-kv   like 31B: layers S S F S F, attention_k_eq_v (full layers have
              no v_proj), 2 KV heads on sliding layers, 1 on full layers,
              proportional RoPE rotating 50% of the full layers' dims
  gemma4-moe  like 26B-A4B: layers S F S S F, a 4-expert top-2 MoE block
              (expert width 16) beside the dense MLP in every layer, with
              attention_k_eq_v (4 / 2 KV heads)
config.json: gemma4-ple and gemma4-moe use the layout of the released
checkpoints (global_head_dim, num_global_key_value_heads); gemma4-kv keeps
the layout transformers 5.2x writes (per_layer_config), so readers see both.

Checks run every time (the script fails if one does not hold):
  - every parameter and buffer is bf16-exact; no norm weight, layer_scalar,
    router scale or per_expert_scale is left at its constant init;
  - the saved HF folder reloads to bit-equal logits;
  - the GGUF holds exactly the expected tensors (names, shapes, F32), each
    equal to the HF weight it comes from (the converter adds nothing to the
    norms for gemma4), rope_freqs as expected, and the expected metadata;
  - gemma_gguf.load_gguf_as_hf builds the same model from the GGUF alone
    (bit-equal logits);
  - the final soft-cap bends a good fraction of the raw logits; rope
    inverse frequencies; KV-sharing sources (transformers' rule and the one
    llama.cpp hard-codes agree); every MoE expert gets used;
  - the tokenizer: transformers and the `tokenizers` library agree, BOS added,
    decode round-trips, <|turn> is one token.

Run:  /work/refenv/bin/python tools/golden/make_tiny_gemma4.py [--only NAME ...]
      /work/refenv/bin/python tools/golden/make_tiny_gemma4.py --llama-check
The second form (after make_forward_golden.py has written the gemma4
goldens) runs llama.cpp (the peer build, through a small C program compiled
here against its libllama) on each GGUF and compares its logits and greedy
tokens with the goldens: a report, not a test.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemma_gguf as gg  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PEER = Path(os.environ.get("SPILLWAY_PEER_DIR",
                           Path.home() / ".cache/spillway-peer/llama.cpp-0.3.36"))
CONVERTER = PEER / "src/convert_hf_to_gguf.py"
N_VOCAB = 512
CONTEXT_LENGTH = 256
NAMES = ("gemma4-ple", "gemma4-kv", "gemma4-moe")
SEEDS = {"gemma4-ple": 1004, "gemma4-kv": 1005, "gemma4-moe": 1006}
S, F = "sliding_attention", "full_attention"

COMMON = dict(vocab_size=N_VOCAB, hidden_size=64, num_attention_heads=4,
              head_dim=16, global_head_dim=32, intermediate_size=64,
              hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
              sliding_window=8, max_position_embeddings=CONTEXT_LENGTH,
              tie_word_embeddings=True, bos_token_id=2, eos_token_id=1,
              pad_token_id=0, attention_bias=False)


def rope(partial: float) -> dict:
    return {S: {"rope_type": "default", "rope_theta": 10_000.0},
            F: {"rope_type": "proportional", "partial_rotary_factor": partial,
                "rope_theta": 1_000_000.0}}


# name -> (Gemma4TextConfig kwargs, config.json layout)
SPECS = {
    "gemma4-ple": (dict(
        COMMON, num_hidden_layers=5, layer_types=[S, S, F, S, F],
        num_key_value_heads=1, num_global_key_value_heads=None,
        attention_k_eq_v=False, hidden_size_per_layer_input=8,
        vocab_size_per_layer_input=N_VOCAB, num_kv_shared_layers=2,
        use_double_wide_mlp=True, enable_moe_block=False,
        final_logit_softcapping=4.0, rope_parameters=rope(0.25)), "released"),
    "gemma4-kv": (dict(
        COMMON, num_hidden_layers=5, layer_types=[S, S, F, S, F],
        num_key_value_heads=2, num_global_key_value_heads=1,
        attention_k_eq_v=True, hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=N_VOCAB, num_kv_shared_layers=0,
        use_double_wide_mlp=False, enable_moe_block=False,
        final_logit_softcapping=4.0, rope_parameters=rope(0.5)), "transformers"),
    "gemma4-moe": (dict(
        COMMON, num_hidden_layers=5, layer_types=[S, F, S, S, F],
        num_key_value_heads=4, num_global_key_value_heads=2,
        attention_k_eq_v=True, hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=N_VOCAB, num_kv_shared_layers=0,
        use_double_wide_mlp=False, enable_moe_block=True, num_experts=4,
        top_k_experts=2, moe_intermediate_size=16,
        final_logit_softcapping=4.0, rope_parameters=rope(0.25)), "released"),
}


def tiny_config(name: str):
    from transformers import Gemma4TextConfig
    cfg = Gemma4TextConfig(**copy.deepcopy(SPECS[name][0]))
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    return cfg


# ---- weights ------------------------------------------------------------------

# Gemma 4 norms multiply by w (no 1 + w). Norm-like tensors get w = 1 + k/128,
# k in [-64, 64] (exact in bf16: spacing 1/256 below 1, 1/128 above); the
# final norm 2.5 + k/64 in [2, 3] with a small embedding, as for the Gemma 3
# tiny model (a random tied-embedding model otherwise predicts its input).
# Every sub-block output is RMS-normed (sandwich norms, v_norm, PLE post
# norm), so the linear layers' scale hardly matters: N(0, 1/n_in) for all,
# except the router (spread-out expert scores, so that the top-2 choice is
# not a near tie) and the PLE table (its lookup is scaled by sqrt(8)).
EMBD_STD = 0.1
PLE_STD = 0.35
ROUTER_STD = 2.0


def bf16_exact(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(torch.float32)


def is_constant_init(name: str) -> bool:
    """Tensors transformers initialises to a constant (ones)."""
    return (name.endswith("norm.weight") or name.endswith("layer_scalar")
            or name.endswith("router.scale") or name.endswith("per_expert_scale"))


def randomize(model, seed: int) -> None:
    """Overwrites every parameter and the layer_scalar buffers with seeded,
    bf16-exact random values."""
    g = torch.Generator().manual_seed(seed)
    tensors = dict(model.named_parameters())
    tensors.update((n, b) for n, b in model.named_buffers() if n.endswith("layer_scalar"))
    with torch.no_grad():
        for name in sorted(tensors):
            p = tensors[name]
            if name == "lm_head.weight":
                continue                          # tied to embed_tokens
            if name == "model.norm.weight":
                k = torch.randint(-32, 33, p.shape, generator=g).float()
                p.copy_(2.5 + k / 64.0)
            elif is_constant_init(name):
                k = torch.randint(-64, 65, p.shape, generator=g).float()
                p.copy_(1.0 + k / 128.0)
            elif name == "model.embed_tokens.weight":
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * EMBD_STD))
            elif name == "model.embed_tokens_per_layer.weight":
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * PLE_STD))
            elif name.endswith("router.proj.weight"):
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * ROUTER_STD))
            else:                                 # Linear [out, in], experts [E, out, in]
                std = p.shape[-1] ** -0.5
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * std))
    assert model.lm_head.weight.data_ptr() == \
        model.model.embed_tokens.weight.data_ptr(), "lm_head must be tied"


def build_model(name: str):
    from transformers import Gemma4ForCausalLM
    torch.manual_seed(SEEDS[name])
    model = Gemma4ForCausalLM(tiny_config(name)).to(torch.float32).eval()
    randomize(model, SEEDS[name])
    return model


def state_tensors(model) -> dict:
    """What save_pretrained writes: the state dict without the tied lm_head."""
    return {n: t for n, t in model.state_dict().items() if n != "lm_head.weight"}


def check_weights(name: str, model) -> None:
    for n, t in state_tensors(model).items():
        if not torch.equal(t, bf16_exact(t)):
            raise SystemExit(f"{name}: {n} is not bf16-exact")
        if is_constant_init(n) and bool((t == t.flatten()[0]).all()) and t.numel() > 1:
            raise SystemExit(f"{name}: {n} is constant")
    scalars = [float(l.layer_scalar) for l in model.model.layers]
    if len(set(scalars)) < 2 or 1.0 in scalars:
        raise SystemExit(f"{name}: layer_scalar not randomised: {scalars}")


# ---- tokenizer ------------------------------------------------------------------

# Gemma 4's vocabulary starts <pad> <eos> <bos> <unk> <mask> (ids 0-4); its
# chat turns are <|turn> (105) and <turn|> (106); "\n" and "\n\n" are plain
# pieces; <0x00>..<0xFF> byte tokens for byte fallback; merges for every
# split of a piece into two pieces (as Gemma 4's tokenizer.json has).
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>"]


def tiny_vocab() -> list[str]:
    from make_tiny_models import PAIRS, WORDS
    tokens = list(SPECIALS) + ["\n", "\n\n"] + [f"<0x{b:02X}>" for b in range(256)]
    normal = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += ["\u2581" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += [str(d) for d in range(10)] + list(".,!?'-:;()") + PAIRS
    n_normal = N_VOCAB - len(tokens)
    for word in WORDS:
        piece = "\u2581" + word
        for k in range(2, len(piece) + 1):
            if piece[:k] not in normal and len(normal) < n_normal:
                normal.append(piece[:k])
    assert len(normal) == n_normal and len(set(normal)) == n_normal
    return tokens + normal


def tiny_merges(tokens: list[str]) -> list[tuple[str, str]]:
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for t in tokens:
        if t in SPECIALS or (t.startswith("<0x") and len(t) == 6):
            continue
        for k in range(len(t) - 1, 0, -1):         # longest left part first
            if t[:k] in ids and t[k:] in ids:
                merges.append((t[:k], t[k:]))
    return merges


def make_tokenizer():
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
    tokens = tiny_vocab()
    tok = GemmaTokenizer(vocab={t: i for i, t in enumerate(tokens)},
                         merges=tiny_merges(tokens), add_bos_token=True,
                         add_eos_token=False)
    tok.add_special_tokens({"additional_special_tokens": ["<|turn>", "<turn|>"]})
    return tok


TOKENIZER_PROBES = ["the people of the water", "Hello, world!\n\nNew  line",
                    "<|turn>user\nwhat time is it<turn|>\n<|turn>model\n",
                    "caf\u00e9 \u2014 \u65e5\u672c"]


def check_tokenizer(hf_dir: Path) -> list[list[int]]:
    import tokenizers
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(hf_dir)
    raw = tokenizers.Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
    vocab = tiny_vocab()
    if len(tok) != N_VOCAB or [tok.convert_ids_to_tokens(i) for i in range(N_VOCAB)] != vocab:
        raise SystemExit(f"{hf_dir}: tokenizer vocabulary differs")
    out = []
    for text in TOKENIZER_PROBES:
        a = tok(text)["input_ids"]
        b = raw.encode(text).ids
        if a != b or a[0] != 2 or tok.decode(a[1:]) != text:
            raise SystemExit(f"{hf_dir}: tokenizer check failed on {text!r}: {a} {b}")
        out.append(a)
    turn = tok("<|turn>model\n")["input_ids"]
    if turn[:2] != [2, 5]:
        raise SystemExit(f"<|turn> is not one special token: {turn}")
    return out


# ---- HF folder ------------------------------------------------------------------

def released_layout(d: dict, spec: dict) -> dict:
    """config.json the way Google's checkpoints write the text config:
    global_head_dim / num_global_key_value_heads instead of per_layer_config."""
    d = dict(d)
    d.pop("per_layer_config", None)
    d["global_head_dim"] = spec["global_head_dim"]
    d["num_global_key_value_heads"] = spec["num_global_key_value_heads"]
    return dict(sorted(d.items()))


def save_hf(name: str, model, hf_dir: Path) -> None:
    if hf_dir.exists():
        shutil.rmtree(hf_dir)
    # A bf16 copy: converting `model` in place would also round its rope
    # buffers (inv_freq) and embed scales, which are not weights.
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(hf_dir, safe_serialization=True)
    for extra in hf_dir.glob("generation_config.json"):
        extra.unlink()
    if SPECS[name][1] == "released":
        path = hf_dir / "config.json"
        d = released_layout(json.loads(path.read_text()), SPECS[name][0])
        path.write_text(json.dumps(d, indent=2) + "\n")
    make_tokenizer().save_pretrained(hf_dir)


def load_hf(hf_dir: Path):
    from transformers import Gemma4ForCausalLM
    return Gemma4ForCausalLM.from_pretrained(
        hf_dir, dtype=torch.float32, attn_implementation="eager",
        experts_implementation="eager").eval()


# ---- conversion -----------------------------------------------------------------

def llama_cpp_commit() -> str:
    return (PEER / "llama.cpp-commit").read_text().strip()


def convert(name: str, hf_dir: Path, gguf_path: Path) -> str:
    """Runs llama.cpp's converter (its own gguf-py) on hf_dir; returns its log."""
    meta = {"general.name": f"spillway-tiny-{name}",
            "general.description":
                f"tiny random {name} for Spillway's tests: tools/golden/make_tiny_gemma4.py, "
                f"transformers {version('transformers')}, torch {torch.__version__}, "
                f"converted by llama.cpp {llama_cpp_commit()} convert_hf_to_gguf.py --outtype f32"}
    env = dict(os.environ, PYTHONPATH=str(PEER / "src/gguf-py"), HF_HUB_OFFLINE="1",
               NO_LOCAL_GGUF="")
    with tempfile.TemporaryDirectory() as tmp:
        meta_path = Path(tmp) / "meta.json"
        meta_path.write_text(json.dumps(meta))
        r = subprocess.run([sys.executable, str(CONVERTER), str(hf_dir), "--outtype", "f32",
                            "--outfile", str(gguf_path), "--metadata", str(meta_path)],
                           env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{name}: convert_hf_to_gguf.py failed:\n{r.stdout}\n{r.stderr}")
    return r.stderr


# ---- checks ---------------------------------------------------------------------

def probe_ids(n: int = 40, seed: int = 7) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, N_VOCAB, (1, n), generator=g)
    ids[0, 0] = 2
    return ids


@torch.no_grad()
def logits_of(model, ids) -> torch.Tensor:
    return model(input_ids=ids, use_cache=False).logits[0]


def expected_gguf_tensors(model) -> dict:
    """GGUF name -> (HF name or None, numpy shape in HF order) that the
    converter must write, derived from the HF state dict."""
    out = {}
    for hf_name, t in state_tensors(model).items():
        out[gg.gemma4_gguf_name(hf_name)] = (hf_name, tuple(t.shape))
    cfg = model.config
    full = [i for i, t in enumerate(cfg.layer_types) if t == F]
    hd_full = cfg.per_layer_config[full[0]].head_dim
    out["rope_freqs.weight"] = (None, (hd_full // 2,))
    return out


def check_gguf(name: str, model, gguf_path: Path) -> dict:
    """GGUF tensors equal the HF weights (F32, no transform), plus the
    metadata this tiny config must produce. Returns the key table."""
    from gguf import GGUFReader
    reader = GGUFReader(str(gguf_path))
    want = expected_gguf_tensors(model)
    have = {t.name: t for t in reader.tensors}
    if set(have) != set(want):
        raise SystemExit(f"{name}: GGUF tensors differ: missing {sorted(set(want) - set(have))}, "
                         f"extra {sorted(set(have) - set(want))}")
    sd = state_tensors(model)
    cfg = model.config
    for gname, (hf_name, shape) in want.items():
        t = have[gname]
        if t.tensor_type.name != "F32":
            raise SystemExit(f"{name}: {gname} is {t.tensor_type.name}, not F32")
        data = gg.dequantized_tensor(t)
        if hf_name is None:                       # rope_freqs
            full = [i for i, lt in enumerate(cfg.layer_types) if lt == F][0]
            hd = cfg.per_layer_config[full].head_dim
            n_rot = int(cfg.rope_parameters[F]["partial_rotary_factor"] * hd / 2)
            exp = np.array([1.0] * n_rot + [1e30] * (hd // 2 - n_rot), dtype=np.float32)
        else:
            exp = sd[hf_name].numpy()
        if data.shape != exp.shape or not np.array_equal(data, exp):
            raise SystemExit(f"{name}: GGUF {gname} {data.shape} != HF {hf_name} {exp.shape}")
    # metadata
    meta = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    a = "gemma4."
    n_layer = cfg.num_hidden_layers
    kv_heads = [cfg.per_layer_config[i].num_key_value_heads for i in range(n_layer)]
    head_dims = [cfg.per_layer_config[i].head_dim for i in range(n_layer)]
    swa = [t == S for t in cfg.layer_types]
    n_ff = [m.mlp.intermediate_size for m in model.model.layers]
    expect = {
        "general.architecture": "gemma4",
        a + "block_count": n_layer,
        a + "context_length": CONTEXT_LENGTH,
        a + "embedding_length": cfg.hidden_size,
        a + "feed_forward_length": n_ff if len(set(n_ff)) > 1 else n_ff[0],
        a + "attention.head_count": cfg.num_attention_heads,
        a + "attention.head_count_kv": kv_heads if len(set(kv_heads)) > 1 else kv_heads[0],
        a + "attention.key_length": max(head_dims),
        a + "attention.value_length": max(head_dims),
        a + "attention.key_length_swa": min(head_dims),
        a + "attention.value_length_swa": min(head_dims),
        a + "attention.sliding_window": cfg.sliding_window,
        a + "attention.sliding_window_pattern": swa,
        a + "attention.shared_kv_layers": cfg.num_kv_shared_layers,
        a + "embedding_length_per_layer_input": cfg.hidden_size_per_layer_input or 0,
        a + "rope.freq_base": 1e6,
        a + "rope.freq_base_swa": 1e4,
        a + "rope.dimension_count": max(head_dims),
        a + "rope.dimension_count_swa": min(head_dims),
        a + "final_logit_softcapping": cfg.final_logit_softcapping,
        "tokenizer.ggml.model": "gemma4",
        "tokenizer.ggml.bos_token_id": 2,
        "tokenizer.ggml.eos_token_id": 1,
        "tokenizer.ggml.padding_token_id": 0,
        "tokenizer.ggml.add_bos_token": True,
    }
    if cfg.enable_moe_block:
        expect.update({a + "expert_count": cfg.num_experts,
                       a + "expert_used_count": cfg.top_k_experts,
                       a + "expert_feed_forward_length": cfg.moe_intermediate_size})
    for k, v in expect.items():
        got = meta.get(k)
        ok = (np.allclose(got, v, rtol=1e-7) if isinstance(v, float) else got == v)
        if not ok:
            raise SystemExit(f"{name}: GGUF {k} = {got!r}, expected {v!r}")
    if meta["tokenizer.ggml.tokens"] != tiny_vocab():
        raise SystemExit(f"{name}: GGUF vocabulary differs")
    return meta


def check_gguf_model(name: str, model, gguf_path: Path) -> None:
    ids = probe_ids()
    loaded, _ = gg.load_gguf_as_hf(str(gguf_path))
    if not torch.equal(logits_of(model, ids), logits_of(loaded, ids)):
        raise SystemExit(f"{name}: model rebuilt from the GGUF gives other logits")


def check_roundtrip(name: str, model, hf_dir: Path) -> None:
    ids = probe_ids()
    if not torch.equal(logits_of(model, ids), logits_of(load_hf(hf_dir), ids)):
        raise SystemExit(f"{name}: HF folder round trip differs")


def check_softcap(name: str, model) -> dict:
    cfg = model.config
    cap = cfg.final_logit_softcapping
    capped = logits_of(model, probe_ids())
    cfg.final_logit_softcapping = None
    raw = logits_of(model, probe_ids()).abs()
    cfg.final_logit_softcapping = cap
    frac = float((raw > cap / 2).float().mean())
    if frac < 0.1:
        raise SystemExit(f"{name}: only {frac:.3f} of raw logits beyond cap/2")
    return {"final_frac_over_half_cap": round(frac, 3),
            "final_max_raw": round(float(raw.max()), 3),
            "max_abs_capped_logit": round(float(capped.abs().max()), 3)}


def check_rope(name: str, model) -> None:
    cfg, rot = model.config, model.model.rotary_emb
    j = torch.arange(0, 16, 2, dtype=torch.float32) / 16
    if not torch.allclose(rot.sliding_attention_inv_freq, 1.0 / 10_000.0 ** j, rtol=1e-6):
        raise SystemExit(f"{name}: sliding rope")
    part = cfg.rope_parameters[F]["partial_rotary_factor"]
    n_rot = int(part * 32 // 2)
    j = torch.arange(0, 2 * n_rot, 2, dtype=torch.float32) / 32
    want = torch.cat([1.0 / 1_000_000.0 ** j, torch.zeros(16 - n_rot)])
    if not torch.allclose(rot.full_attention_inv_freq, want, rtol=1e-6, atol=0):
        raise SystemExit(f"{name}: full rope {rot.full_attention_inv_freq} != {want}")
    for i, layer in enumerate(model.model.layers):
        attn = layer.self_attn
        full = cfg.layer_types[i] == F
        if attn.head_dim != (32 if full else 16) or attn.sliding_window != (None if full else 8):
            raise SystemExit(f"{name}: layer {i} head_dim/window")
        if cfg.attention_k_eq_v and full and getattr(attn, "v_proj", 0) is not None:
            raise SystemExit(f"{name}: layer {i} should have no v_proj")


def kv_sources(cfg) -> list:
    """Per layer: the layer whose K/V it attends to (transformers' rule: a
    shared layer takes the last non-shared layer of its own type)."""
    n, first = cfg.num_hidden_layers, cfg.num_hidden_layers - cfg.num_kv_shared_layers
    out = []
    for i in range(n):
        if i < first:
            out.append(i)
        else:
            out.append(max(j for j in range(first) if cfg.layer_types[j] == cfg.layer_types[i]))
    return out


def check_kv_sharing(name: str, model) -> list:
    cfg = model.config
    src = kv_sources(cfg)
    n, first = cfg.num_hidden_layers, cfg.num_hidden_layers - cfg.num_kv_shared_layers
    # llama.cpp (llama-model.cpp): a shared layer il reuses layer
    # n_layer_kv_from_start - (is_swa(il) ? 2 : 1).
    llama = [i if i < first else first - (2 if cfg.layer_types[i] == S else 1) for i in range(n)]
    if cfg.num_kv_shared_layers and src != llama:
        raise SystemExit(f"{name}: KV sources {src} differ from llama.cpp's rule {llama}")
    for i, layer in enumerate(model.model.layers):
        shared = layer.self_attn.is_kv_shared_layer
        if shared != (i >= first) or (shared and hasattr(layer.self_attn, "k_proj")):
            raise SystemExit(f"{name}: layer {i} sharing state")
    return src


@torch.no_grad()
def router_stats(model, ids) -> dict:
    """Smallest gap between the k-th and (k+1)-th expert probability over all
    tokens and layers (a near tie would let rounding pick another expert),
    and how often each expert is chosen."""
    cfg = model.config
    gaps, counts = [], torch.zeros(cfg.num_experts)
    recs = []

    def hook(module, inputs, output):
        recs.append(output[0])                    # router probabilities [T, E]

    handles = [l.router.register_forward_hook(hook) for l in model.model.layers]
    try:
        logits_of(model, ids)
    finally:
        for h in handles:
            h.remove()
    for p in recs:
        top = torch.topk(p, cfg.top_k_experts + 1, dim=-1).values
        gaps.append((top[:, -2] - top[:, -1]).min())
        counts += torch.nn.functional.one_hot(
            torch.topk(p, cfg.top_k_experts, dim=-1).indices, cfg.num_experts).sum((0, 1))
    return {"router_min_prob_gap": float(min(gaps)), "expert_use": counts.int().tolist()}


def describe(model) -> dict:
    ids = probe_ids()
    logits = logits_of(model, ids)
    lse = torch.logsumexp(logits.double(), -1)
    pmax = torch.softmax(logits.double(), -1).max(-1).values
    top2 = torch.topk(logits, 2, -1).values
    return {"max_abs_logit": round(float(logits.abs().max()), 3),
            "logit_std": round(float(logits.std()), 3),
            "median_top_p": round(float(pmax.median()), 3),
            "min_top1_margin": float((top2[:, 0] - top2[:, 1]).min()),
            "frac_argmax_is_input": round(float((logits.argmax(-1) == ids[0]).float().mean()), 3),
            "lse_range": [round(float(lse.min()), 3), round(float(lse.max()), 3)]}


def make(name: str, out_dir: Path) -> int:
    model = build_model(name)
    check_weights(name, model)
    hf_dir, gguf_path = out_dir / f"{name}-hf", out_dir / f"{name}.gguf"
    save_hf(name, model, hf_dir)
    check_tokenizer(hf_dir)
    check_roundtrip(name, model, hf_dir)
    convert(name, hf_dir, gguf_path)
    check_gguf(name, model, gguf_path)
    check_gguf_model(name, model, gguf_path)
    check_rope(name, model)
    info = {"kv_source": check_kv_sharing(name, model)}
    info.update(describe(model))
    info.update(check_softcap(name, model))
    if model.config.enable_moe_block:
        info.update(router_stats(model, probe_ids()))
        if min(info["expert_use"]) == 0 or info["router_min_prob_gap"] < 1e-5:
            raise SystemExit(f"{name}: router: {info}")
    total = 0
    for f in [gguf_path] + sorted(hf_dir.iterdir()):
        total += f.stat().st_size
        print(f"  {f.relative_to(out_dir)}: {f.stat().st_size} bytes")
    print(f"{name}: {json.dumps(info)}")
    return total


# ---- llama.cpp cross-check (a report, not a test) -------------------------------

LLAMA_CHECK_C = r"""
// Teacher-forced logits for one prompt (all positions, one batch) and a
// 32-token greedy continuation with the KV cache (EOG ignored), printed as
// JSON. argv: model prompt-ids(comma) n_greedy kv_type(f16|f32)
// Or, argv: model tok text: the ids llama.cpp's tokenizer gives text (BOS
// added, special tokens parsed), comma-separated.
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void quiet(enum ggml_log_level l, const char *t, void *u) { (void)l; (void)t; (void)u; }
int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 4 && strcmp(argv[2], "tok") == 0)) return 2;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = argc == 4;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 1; }
    if (argc == 4) {
        llama_token toks[1024];
        int k = llama_tokenize(llama_model_get_vocab(model), argv[3], (int)strlen(argv[3]),
                               toks, 1024, true, true);
        for (int i = 0; i < k; i++) printf(i ? ",%d" : "%d", toks[i]);
        printf("\n");
        llama_model_free(model);
        return k < 0;
    }
    int ids[512], n = 0;
    for (char *s = strtok(argv[2], ","); s; s = strtok(NULL, ",")) ids[n++] = atoi(s);
    int n_greedy = atoi(argv[3]);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256; cp.n_batch = 256; cp.n_ubatch = 256; cp.n_threads = 2; cp.n_threads_batch = 2;
    cp.type_k = cp.type_v = strcmp(argv[4], "f32") == 0 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_batch b = llama_batch_init(256, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
    printf("{\"n_vocab\": %d, \"logits\": [", n_vocab);
    int next = 0;
    for (int i = 0; i < n; i++) {
        const float *l = llama_get_logits_ith(ctx, i);
        printf(i ? ",[" : "[");
        int best = 0;
        for (int v = 0; v < n_vocab; v++) { printf(v ? ",%.9g" : "%.9g", l[v]); if (l[v] > l[best]) best = v; }
        printf("]");
        next = best;
    }
    printf("], \"greedy\": [");
    for (int s = 0; s < n_greedy; s++) {
        printf(s ? ",%d" : "%d", next);
        b.n_tokens = 1; b.token[0] = next; b.pos[0] = n + s; b.n_seq_id[0] = 1; b.seq_id[0][0] = 0; b.logits[0] = 1;
        if (s + 1 == n_greedy) break;
        if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
        const float *l = llama_get_logits_ith(ctx, 0);
        int best = 0;
        for (int v = 0; v < n_vocab; v++) if (l[v] > l[best]) best = v;
        next = best;
    }
    printf("]}\n");
    llama_batch_free(b); llama_free(ctx); llama_model_free(model); llama_backend_free();
    return 0;
}
"""


LLAMA_TOKENIZER_EXTRA = ["", " ", "  leading spaces", "trailing  ", "\n", "\n\n\n",
                         "a\n\nb\n", "the water the water", "don't stop", "X-ray: 42!",
                         "<bos>the<eos>", "<|turn>system\nbe brief<turn|>\n"]


def build_llama_check(tmp: Path) -> Path:
    src, exe = tmp / "llama_check.c", tmp / "llama_check"
    src.write_text(LLAMA_CHECK_C)
    lib = PEER / "build/bin"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(src), f"-I{PEER / 'src/include'}",
                    f"-I{PEER / 'src/ggml/include'}", f"-L{lib}", "-lllama", "-lggml",
                    "-lggml-base", f"-Wl,-rpath,{lib}"], check=True)
    return exe


def llama_check(names) -> None:
    from golden_format import read_golden
    from transformers import AutoTokenizer
    print(f"llama.cpp {llama_cpp_commit()} (peer build {PEER / 'build/bin'})")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_llama_check(Path(tmp))
        for name in names:
            tok = AutoTokenizer.from_pretrained(REPO / f"tests/data/tiny/{name}-hf")
            same = 0
            for text in TOKENIZER_PROBES + LLAMA_TOKENIZER_EXTRA:
                r = subprocess.run([str(exe), str(REPO / f"tests/data/tiny/{name}.gguf"),
                                    "tok", text], capture_output=True, text=True, check=True)
                ours = [int(x) for x in r.stdout.split(",")]
                hf = tok(text)["input_ids"]
                same += ours == hf
                if ours != hf:
                    print(f"  {name} tokenizer differs on {text!r}: transformers {hf} "
                          f"llama.cpp {ours}")
            print(f"  {name} tokenizer: llama.cpp == transformers on {same} of "
                  f"{len(TOKENIZER_PROBES) + len(LLAMA_TOKENIZER_EXTRA)} strings")
            gold = read_golden(REPO / f"tests/data/golden/{name}.swgold")
            gguf_path = REPO / f"tests/data/tiny/{name}.gguf"
            for kv in ("f32", "f16"):
                for n in range(int(gold["n_prompts"])):
                    p = f"p{n}."
                    ids = gold[p + "ids"].tolist()
                    r = subprocess.run([str(exe), str(gguf_path), ",".join(map(str, ids)),
                                        str(int(gold["n_greedy"])), kv],
                                       capture_output=True, text=True, check=True)
                    out = json.loads(r.stdout)
                    lg = np.array(out["logits"], dtype=np.float64)
                    ref = gold[p + "logits"].astype(np.float64)
                    g_ref, g_l = gold[p + "greedy"].tolist(), out["greedy"]
                    agree = next((k for k in range(len(g_ref)) if g_ref[k] != g_l[k]), len(g_ref))
                    print(f"  {name} kv={kv} p{n} (T={len(ids)}): max|dlogit| "
                          f"{np.abs(lg - ref).max():.3g}, argmax agree "
                          f"{(lg.argmax(-1) == gold[p + 'argmax']).mean():.3f}, greedy "
                          f"{'identical' if agree == len(g_ref) else f'first {agree} of {len(g_ref)} agree'}"
                          + ("" if agree == len(g_ref) else
                             f" (margin there {float(gold[p + 'greedy_margin'][agree]):.3g};"
                             f" transformers {g_ref[agree:agree + 4]} llama.cpp {g_l[agree:agree + 4]})"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=list(NAMES), choices=NAMES)
    ap.add_argument("--out", default=str(REPO / "tests/data/tiny"))
    ap.add_argument("--llama-check", action="store_true",
                    help="compare llama.cpp with the committed goldens instead")
    args = ap.parse_args()
    if args.llama_check:
        llama_check(args.only)
        return
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, transformers {version('transformers')}, "
          f"gguf (llama.cpp tree) from {PEER / 'src/gguf-py'}, llama.cpp {llama_cpp_commit()}")
    total = sum(make(name, out_dir) for name in args.only)
    print(f"total {total} bytes ({total / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
