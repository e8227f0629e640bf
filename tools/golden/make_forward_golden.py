#!/usr/bin/env python3
"""make_forward_golden.py — forward-pass golden files (.swgold) for Spillway.

Reference: Hugging Face transformers, PyTorch on the CPU, float32, eager
attention, no KV cache. Writes tests/data/golden/<name>.swgold for
  gemma1, gemma2, gemma3   tiny random models of make_tiny_models.py (the HF
                           folders, loaded in f32; the GGUF loaded through
                           gemma_gguf must give bit-equal logits)
  gemma4-ple, gemma4-kv, gemma4-moe
                           tiny random Gemma 4 models of make_tiny_gemma4.py
                           (same checks; the GGUF is llama.cpp's conversion)
  gemma3-270m-q4km         the real Gemma 3 270M Q4_K_M GGUF, dequantized to
                           f32 (norms minus 1) into Gemma3ForCausalLM
Entries (format and meaning: tools/golden/README.md), per prompt N:
  p<N>.ids [T] i32, p<N>.argmax [T] i32, p<N>.lse [T] f32,
  p<N>.logits [T, n_vocab] f32 (tiny) | p<N>.top_ids, p<N>.top_logits [T, 16]
  (real), p<N>.hidden_pos [P] i32, p<N>.hidden [n_layer+1, P, n_embd] f32,
  p<N>.greedy [32] i32, p<N>.greedy_margin [32] f32, p<N>.text (real only).
It also prints the numbers that justify a test tolerance: repeatability of
the f32 reference and its distance from float64 forwards.

Run:  /work/refenv/bin/python tools/golden/make_forward_golden.py \
          [--model PATH_TO_270M_GGUF] [--only NAME ...] [--out DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemma_gguf as gg                       # noqa: E402
from golden_format import GoldenWriter, read_golden   # noqa: E402

GENERATOR = "make_forward_golden.py v1"
REPO = Path(__file__).resolve().parents[2]
TINY = ("gemma1", "gemma2", "gemma3")
TINY_G4 = ("gemma4-ple", "gemma4-kv", "gemma4-moe")
REAL_NAME = "gemma3-270m-q4km"
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"   # canonical name (spillway fetch)
REAL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
N_GREEDY = 32
TOP_K = 16
TINY_LENGTHS = (5, 23, 40)         # incl. BOS; 23 and 40 exceed the window 8

NOTES = """\
Reference: transformers, PyTorch CPU, float32, eager attention, no KV cache.
hidden[0] = scaled token embeddings (input of layer 0); hidden[l+1] = the
residual stream after layer l, before the final norm. lse = logsumexp of the
f32 logits, computed in float64, stored f32. argmax/greedy take the first
maximal index. greedy: exactly 32 tokens, EOS ignored, each step a full
recompute of prompt + tokens so far; greedy_margin = top1 - top2 logit at
that step (a test can only expect agreement where the margin exceeds its
noise). Tiny-model prompts are BOS + random ids in [4, 512)."""

# Real-model prompts: prose, Chinese, source code, chat. Tokenized with BOS.
REAL_PROMPTS = [
    "The river had been rising for three days before anyone in the valley "
    "took it seriously. At first it was only a darker shade of brown against "
    "the reeds, then a soft sound under the bridge at night, and finally a "
    "sheet of water moving across the lower meadow where the sheep usually "
    "grazed. The old engineer who had built the spillway forty years earlier "
    "walked down to the dam each morning with a notebook, measured the "
    "height of the water against the painted marks on the concrete, and "
    "wrote the numbers in a careful, slanted hand. \"It will hold,\" he told "
    "the mayor, \"as long as nobody",
    "长江是中国最长的河流，全长约六千三百公里，发源于青藏高原的唐古拉山脉，"
    "自西向东流经青海、西藏、四川、云南、重庆、湖北、湖南、江西、安徽、江苏"
    "和上海等省区市，最后注入东海。长江流域气候温和，雨量充沛，土地肥沃，"
    "自古以来就是中国重要的农业区。沿江的城市如重庆、武汉、南京和上海，"
    "都是经济和文化的中心。三峡大坝建成以后，",
    "/* Returns the index of `key` in the open-addressing table, or -1. */\n"
    "static long table_find(const struct table *t, uint64_t key)\n"
    "{\n"
    "    size_t mask = t->n_slots - 1;\n"
    "    size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & mask;\n"
    "    for (size_t probe = 0; probe < t->n_slots; probe++) {\n"
    "        if (!t->used[i])\n"
    "            return -1;\n"
    "        if (t->keys[i] == key)\n"
    "            return (long)i;\n"
    "        i = (i + 1) & mask;\n"
    "    }\n"
    "    return -1;\n"
    "}\n\n"
    "int main(void)\n{\n",
    "<start_of_turn>user\n"
    "I am planning a three-day hiking trip in the mountains in early October. "
    "What should I pack, and how should I prepare for cold nights?<end_of_turn>\n"
    "<start_of_turn>model\n"
    "Great plan! Pack warm layers (a base layer, a fleece and a waterproof "
    "jacket), a hat and gloves, a sleeping bag rated below freezing, a "
    "headlamp, and enough water and food.<end_of_turn>\n"
    "<start_of_turn>user\n"
    "Thanks. Which of those matters most if I can only carry a small "
    "backpack?<end_of_turn>\n"
    "<start_of_turn>model\n",
]


# ---- reference runs -------------------------------------------------------------

@torch.no_grad()
def forward_with_hidden(model, ids: list[int], hidden_pos: list[int]):
    """Teacher-forced forward. Returns (logits [T, V] f32, hidden
    [n_layer+1, P, n_embd]); hidden[0] is the embedding output (scaled),
    hidden[l+1] the output of decoder layer l (pre final norm)."""
    captured = []

    def keep(_module, _inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        captured.append(out[0, hidden_pos].detach().clone())

    inner = model.model
    handles = [inner.embed_tokens.register_forward_hook(keep)]
    handles += [layer.register_forward_hook(keep) for layer in inner.layers]
    try:
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
    finally:
        for h in handles:
            h.remove()
    assert len(captured) == len(inner.layers) + 1
    return logits, torch.stack(captured)


@torch.no_grad()
def greedy(model, ids: list[int], n: int = N_GREEDY, keep_all: bool = False):
    """n greedy tokens, EOS ignored, full recompute each step (no cache).
    keep_all: compute every position's logits (Gemma 4: with logits_to_keep=1
    transformers would run its KV-shared layers on the last position only)."""
    seq, margins = list(ids), []
    for _ in range(n):
        last = model(input_ids=torch.tensor([seq]), use_cache=False,
                     logits_to_keep=0 if keep_all else 1).logits[0, -1]
        top2 = torch.topk(last, 2)
        seq.append(int(torch.argmax(last)))
        margins.append(float(top2.values[0] - top2.values[1]))
    return seq[len(ids):], margins


def lse_f32(logits: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(logits.double(), dim=-1).float()


def add_prompt(w: GoldenWriter, model, n: int, ids: list[int],
               hidden_pos: list[int], full_logits: bool, text: str | None):
    logits, hidden = forward_with_hidden(model, ids, hidden_pos)
    tokens, margins = greedy(model, ids,
                             keep_all=model.config.model_type == "gemma4_text")
    p = f"p{n}."
    if text is not None:
        w.add_text(p + "text", text)
    w.add_i32(p + "ids", ids)
    w.add_i32(p + "argmax", torch.argmax(logits, dim=-1).numpy())
    w.add_f32(p + "lse", lse_f32(logits).numpy())
    if full_logits:
        w.add_f32(p + "logits", logits.numpy())
    else:
        top = torch.topk(logits, TOP_K, dim=-1, sorted=True)
        w.add_i32(p + "top_ids", top.indices.numpy())
        w.add_f32(p + "top_logits", top.values.numpy())
    w.add_i32(p + "hidden_pos", hidden_pos)
    w.add_f32(p + "hidden", hidden.numpy())
    w.add_i32(p + "greedy", tokens)
    w.add_f32(p + "greedy_margin", margins)
    return logits, hidden


NOTES_G4 = """
Gemma 4: hidden[l+1] is the decoder layer's output, i.e. after its
layer_scalar multiply (and after the per-layer-embedding block where there is
one). MoE experts run transformers' eager per-expert loop. Greedy steps
compute all positions (logits_to_keep=0), so each equals the teacher-forced
logits of the longer sequence."""


def add_header(w: GoldenWriter, model, description: str, n_prompts: int,
               tokenizer: str) -> None:
    cfg = model.config
    w.add_text("generator", GENERATOR)
    w.add_text("torch_version", torch.__version__)
    w.add_text("transformers_version", version("transformers"))
    w.add_text("gguf_version", version("gguf"))
    w.add_text("numpy_version", np.__version__)
    w.add_text("config_json", cfg.to_json_string(use_diff=False))
    w.add_text("model", description)
    w.add_text("tokenizer", tokenizer)
    w.add_text("notes", NOTES + (NOTES_G4 if cfg.model_type == "gemma4_text" else ""))
    w.add_text("architecture", gg.arch_of_config(cfg))
    w.add_i32("n_prompts", n_prompts)
    w.add_i32("n_vocab", cfg.vocab_size)
    w.add_i32("n_layer", cfg.num_hidden_layers)
    w.add_i32("n_embd", cfg.hidden_size)
    w.add_i32("n_greedy", N_GREEDY)
    scale = model.model.embed_tokens.embed_scale.to(torch.float32)
    w.add_f32("embd_scale_f32", scale.numpy())


# ---- float64 comparison -----------------------------------------------------------

def _eager_same_dtype(module, query, key, value, attention_mask, scaling=None,
                      dropout=0.0, softcap=None, **_):
    """HF's eager attention, but the softmax stays in the input dtype."""
    from transformers.models.gemma3.modeling_gemma3 import repeat_kv
    k = repeat_kv(key, module.num_key_value_groups)
    v = repeat_kv(value, module.num_key_value_groups)
    s = torch.matmul(query, k.transpose(2, 3)) * scaling
    if softcap is not None:
        s = torch.tanh(s / softcap) * softcap
    if attention_mask is not None:
        s = s + attention_mask
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v).transpose(1, 2).contiguous(), p


def _rmsnorm_same_dtype(self, x):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    return y * (1.0 + self.weight)


def _rope_f64(self, x, position_ids, layer_type=None):
    inv = getattr(self, f"{layer_type}_inv_freq") if layer_type else self.inv_freq
    freqs = position_ids[..., None].double() * inv.double()
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


@contextmanager
def true_f64(model):
    """Makes a float64 model compute everything in float64: HF otherwise
    keeps RMSNorm, softmax and the rope angles in float32 even then."""
    if model.config.model_type == "gemma4_text":
        with true_f64_gemma4(model):
            yield
        return
    import importlib
    mods = [importlib.import_module(f"transformers.models.{m}.modeling_{m}")
            for m in ("gemma", "gemma2", "gemma3")]
    saved = []
    for m in mods:
        for cls_name in ("GemmaRMSNorm", "Gemma2RMSNorm", "Gemma3RMSNorm"):
            if hasattr(m, cls_name):
                saved.append((getattr(m, cls_name), "forward"))
        for cls_name in ("GemmaRotaryEmbedding", "Gemma2RotaryEmbedding",
                         "Gemma3RotaryEmbedding"):
            if hasattr(m, cls_name):
                saved.append((getattr(m, cls_name), "forward"))
        saved.append((m, "eager_attention_forward"))
    originals = [(obj, attr, getattr(obj, attr)) for obj, attr in saved]
    for obj, attr, _ in originals:
        if attr == "eager_attention_forward":
            setattr(obj, attr, _eager_same_dtype)
        elif obj.__name__.endswith("RMSNorm"):
            setattr(obj, attr, _rmsnorm_same_dtype)
        else:
            setattr(obj, attr, _rope_f64)
    # Exact inverse frequencies and embedding scale in float64.
    rot, cfg = model.model.rotary_emb, model.config
    hd = cfg.head_dim
    j = torch.arange(0, hd, 2, dtype=torch.float64) / hd
    kept = {}
    for name, buf in list(rot.named_buffers()):
        if name.endswith("inv_freq") and not name.endswith("original_inv_freq"):
            layer_type = name[:-len("_inv_freq")] if name != "inv_freq" else None
            rp = cfg.rope_parameters[layer_type] if layer_type else cfg.rope_parameters
            inv = 1.0 / (float(rp["rope_theta"]) ** j)
            if rp.get("rope_type", "default") == "linear":
                inv = inv / float(rp["factor"])
            kept[name] = buf
            setattr(rot, name, inv)
    emb = model.model.embed_tokens
    kept_scale = emb.embed_scale
    emb.embed_scale = torch.tensor(math.sqrt(cfg.hidden_size), dtype=torch.float64)
    try:
        yield
    finally:
        for obj, attr, orig in originals:
            setattr(obj, attr, orig)
        for name, buf in kept.items():
            setattr(rot, name, buf)
        emb.embed_scale = kept_scale


def _g4_rmsnorm_f64(self, x):
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
    return y * self.weight if self.with_scale else y


def _g4_router_f64(self, hidden_states):
    h = self.norm(hidden_states) * self.scale * self.scalar_root_size
    probs = torch.softmax(self.proj(h), dim=-1)
    w, idx = torch.topk(probs, k=self.config.top_k_experts, dim=-1)
    w = w / w.sum(dim=-1, keepdim=True)
    return probs, w * self.per_expert_scale[idx], idx


@contextmanager
def true_f64_gemma4(model):
    """true_f64 for Gemma 4: RMSNorm (w, not 1 + w; v_norm and the router
    norm without weight), attention softmax, router softmax, rope angles and
    exact inverse frequencies (proportional on full layers), both embedding
    scales (sqrt(hidden), sqrt(per-layer width)) in float64."""
    from transformers.models.gemma4 import modeling_gemma4 as m
    cfg = model.config
    patches = [(m.Gemma4RMSNorm, "forward", _g4_rmsnorm_f64),
               (m.Gemma4TextRotaryEmbedding, "forward", _rope_f64),
               (m.Gemma4TextRouter, "forward", _g4_router_f64),
               (m, "eager_attention_forward", _eager_same_dtype)]
    originals = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in patches]
    for obj, attr, fn in patches:
        setattr(obj, attr, fn)
    rot = model.model.rotary_emb
    kept = {}
    for layer_type in set(cfg.layer_types):
        i = cfg.layer_types.index(layer_type)
        hd = cfg.per_layer_config[i].head_dim
        rp = cfg.rope_parameters[layer_type]
        n_rot = hd // 2
        if rp["rope_type"] == "proportional":
            n_rot = int(rp["partial_rotary_factor"] * hd // 2)
        elif rp["rope_type"] != "default":
            raise ValueError(f"rope type {rp['rope_type']}")
        j = torch.arange(0, 2 * n_rot, 2, dtype=torch.float64) / hd
        inv = torch.cat([1.0 / (float(rp["rope_theta"]) ** j),
                         torch.zeros(hd // 2 - n_rot, dtype=torch.float64)])
        name = f"{layer_type}_inv_freq"
        kept[name] = getattr(rot, name)
        setattr(rot, name, inv)
    inner = model.model
    embs = [(inner.embed_tokens, cfg.hidden_size)]
    if getattr(inner, "embed_tokens_per_layer", None) is not None:
        embs.append((inner.embed_tokens_per_layer, cfg.hidden_size_per_layer_input))
    kept_scales = [e.embed_scale for e, _ in embs]
    for e, width in embs:
        e.embed_scale = torch.tensor(math.sqrt(width), dtype=torch.float64)
    try:
        yield
    finally:
        for obj, attr, orig in originals:
            setattr(obj, attr, orig)
        for name, buf in kept.items():
            setattr(rot, name, buf)
        for (e, _), sc in zip(embs, kept_scales):
            e.embed_scale = sc


# MoE prompts are redrawn until every router decision they lead to (prompt
# and greedy positions, every layer) has at least this gap between the
# top_k-th and the next expert's router score (logit): a near tie would let
# an engine's rounding pick another expert and change the output wholesale.
ROUTER_GAP_MIN = 0.02


@torch.no_grad()
def router_min_gap(model, ids: list[int]) -> tuple[float, torch.Tensor]:
    """(smallest gap, over layers and positions, between the top_k-th and
    the (top_k+1)-th router score (router.proj output); last-position logits)
    for one forward of the sequence ids, computing every position."""
    k = model.config.top_k_experts
    recs = []
    handles = [layer.router.proj.register_forward_hook(
        lambda _m, _i, o: recs.append(o)) for layer in model.model.layers]
    try:
        last = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
    finally:
        for h in handles:
            h.remove()
    return min(float((v[..., k - 1] - v[..., k]).min())
               for v in (torch.topk(r, k + 1, dim=-1).values for r in recs)), last


def router_gaps_ok(model, ids: list[int]) -> bool:
    """True if no router decision of the prompt or of its greedy
    continuation (the forwards greedy() makes, and the full sequence) is
    within ROUTER_GAP_MIN of a tie; stops at the first near tie."""
    seq = list(ids)
    for _ in range(N_GREEDY + 1):
        gap, last = router_min_gap(model, seq)
        if gap < ROUTER_GAP_MIN:
            return False
        seq.append(int(torch.argmax(last)))
    return True


@torch.no_grad()
def noise_report(model, prompts: list[list[int]]) -> list[dict]:
    """Per prompt: f32 repeatability, and the largest differences between
    the f32 reference and (a) HF's own float64 path, (b) a true float64
    forward (the best available estimate of the exact result): logits, lse,
    and hidden states (max |d| over layers and positions, also relative to
    the largest |h| of the same layer)."""
    def run(m, ids):
        return forward_with_hidden(m, ids, list(range(len(ids))))
    ref = [run(model, ids) for ids in prompts]
    again = [run(model, ids)[0] for ids in prompts]
    m64 = model.double()
    try:
        hf64 = [m64(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
                for ids in prompts]
        with true_f64(m64):
            ex64 = [run(m64, ids) for ids in prompts]
    finally:
        model.float()
    rows = []
    for n, ids in enumerate(prompts):
        r, h = ref[n][0].double(), ref[n][1].double()
        x, hx = ex64[n]
        dh = (h - hx).abs().flatten(1).max(1).values           # per layer
        scale = hx.abs().flatten(1).max(1).values
        rows.append({
            "prompt": n, "T": len(ids),
            "f32_repeatable": bool(torch.equal(ref[n][0], again[n])),
            "max_abs_logit": float(r.abs().max()),
            "d_hf64": float((r - hf64[n]).abs().max()),
            "d_true64": float((r - x).abs().max()),
            "d_lse_true64": float((torch.logsumexp(r, -1) -
                                   torch.logsumexp(x, -1)).abs().max()),
            "argmax_agree_true64": float((r.argmax(-1) == x.argmax(-1))
                                         .double().mean()),
            "hidden_max_abs": float(scale.max()),
            "d_hidden_true64": float(dh.max()),
            "d_hidden_rel_true64": float((dh / scale).max()),
        })
    return rows


# ---- models -------------------------------------------------------------------------

def tokenize_real(model_path: str, texts: list[str]) -> tuple[list[list[int]], str]:
    """Token ids with BOS, special tokens parsed. llama.cpp's tokenizer if
    llama-cpp-python is installed, else transformers' GGUF tokenizer."""
    try:
        import llama_cpp
        llm = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
        ids = [llm.tokenize(t.encode("utf-8"), add_bos=True, special=True)
               for t in texts]
        return ids, f"llama-cpp-python {version('llama-cpp-python')} (vocab_only, add_bos, special)"
    except ImportError:
        from transformers import AutoTokenizer
        p = Path(model_path)
        tok = AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
        ids = [tok(t, add_special_tokens=True)["input_ids"] for t in texts]
        return ids, f"transformers {version('transformers')} GGUF tokenizer"


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_tiny(name: str, out_dir: Path) -> tuple[Path, list[dict]]:
    tiny_dir = REPO / "tests/data/tiny"
    if name in TINY_G4:
        _, cls = gg.hf_classes("gemma4")
        # experts_implementation="eager": the plain per-expert loop (the
        # default, grouped_mm, is the same arithmetic batched differently).
        model = cls.from_pretrained(tiny_dir / f"{name}-hf", dtype=torch.float32,
                                    attn_implementation="eager",
                                    experts_implementation="eager").eval()
        seed = 4342 + TINY_G4.index(name)
        maker = "make_tiny_gemma4.py"
    else:
        _, cls = gg.hf_classes({"gemma1": "gemma"}.get(name, name))
        model = cls.from_pretrained(tiny_dir / f"{name}-hf", dtype=torch.float32,
                                    attn_implementation="eager").eval()
        seed = 4242 + TINY.index(name)
        maker = "make_tiny_models.py"
    g = torch.Generator().manual_seed(seed)
    prompts, redrawn = [], 0
    moe = getattr(model.config, "enable_moe_block", False)
    for t in TINY_LENGTHS:
        while True:
            ids = torch.randint(4, model.config.vocab_size, (t,), generator=g).tolist()
            ids = [model.config.bos_token_id] + ids[1:]
            if not moe:
                break
            if router_gaps_ok(model, ids):
                break
            redrawn += 1
        prompts.append(ids)
    if moe:
        print(f"  {redrawn} MoE prompt(s) redrawn for a router gap >= {ROUTER_GAP_MIN}")
    # The committed GGUF must be the same model, bit for bit.
    from_gguf, _ = gg.load_gguf_as_hf(str(tiny_dir / f"{name}.gguf"))
    with torch.no_grad():
        for ids in prompts:
            a = model(input_ids=torch.tensor([ids]), use_cache=False).logits
            b = from_gguf(input_ids=torch.tensor([ids]), use_cache=False).logits
            if not torch.equal(a, b):
                raise SystemExit(f"{name}: GGUF and HF folder disagree")
    w = GoldenWriter()
    add_header(w, model, f"tiny random {name} (tests/data/tiny/{name}.gguf, "
               f"{name}-hf/); {maker}", len(prompts), "random ids" + (
                   f"; redrawn until every router decision (prompt and greedy "
                   f"positions) has a top-k score gap >= {ROUTER_GAP_MIN}" if moe else ""))
    for n, ids in enumerate(prompts):
        add_prompt(w, model, n, ids, list(range(len(ids))), True, None)
    path = out_dir / f"{name}.swgold"
    w.write(path)
    rows = noise_report(model, prompts)
    if moe:
        for n, row in enumerate(rows):
            row["router_min_gap"] = router_min_gap(
                model, prompts[n] + [int(x) for x in read_golden(path)[f"p{n}.greedy"]])[0]
    return path, rows


def make_real(model_path: str, out_dir: Path) -> tuple[Path, list[dict]]:
    digest = sha256_of(model_path)
    if digest != REAL_SHA256:
        raise SystemExit(f"{model_path}: sha256 {digest} is not the expected "
                         f"{REAL_SHA256}")
    ids_list, tok_desc = tokenize_real(model_path, REAL_PROMPTS)
    for ids, text in zip(ids_list, REAL_PROMPTS):
        print(f"  prompt of {len(ids)} tokens: {text[:40]!r}...")
        if not 64 <= len(ids) <= 200:
            raise SystemExit("real-model prompts must be 64..200 tokens")
    model, _ = gg.load_gguf_as_hf(model_path)
    w = GoldenWriter()
    add_header(w, model, f"{MODEL_FILE} sha256 {digest}; Gemma 3 270M "
               "Q4_K_M, dequantized to f32 with gguf.quants.dequantize, "
               "norm weights minus 1, tied embeddings", len(ids_list), tok_desc)
    for n, (ids, text) in enumerate(zip(ids_list, REAL_PROMPTS)):
        t = len(ids)
        pos = [0, t // 4, t // 2, (3 * t) // 4, t - 1]
        add_prompt(w, model, n, ids, pos, False, text)
    path = out_dir / f"{REAL_NAME}.swgold"
    w.write(path)
    return path, noise_report(model, ids_list)


def default_model_path() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ["HOME"], ".cache")
    return os.path.join(cache, "spillway", MODEL_FILE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=default_model_path(),
                    help="the Gemma 3 270M Q4_K_M GGUF (sha256 checked)")
    ap.add_argument("--only", nargs="*", default=list(TINY) + list(TINY_G4) + [REAL_NAME])
    ap.add_argument("--out", default=str(REPO / "tests/data/golden"))
    args = ap.parse_args()
    torch.manual_seed(0)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in args.only:
        t0 = time.time()
        if name == REAL_NAME:
            path, noise = make_real(args.model, out_dir)
        else:
            path, noise = make_tiny(name, out_dir)
        read_golden(path)                              # parses back cleanly
        report[name] = noise
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
              f"{path.stat().st_size} bytes ({time.time() - t0:.0f} s)")
        for row in noise:
            print("  " + json.dumps(row))
    print(f"torch threads: {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
