#!/usr/bin/env python3
"""make_tiny_models.py — tiny random Gemma 1/2/3 models for forward tests.

Writes, for each of gemma1, gemma2, gemma3:
  tests/data/tiny/<name>.gguf   all-F32 GGUF (norms stored +1), with a
                                512-token SPM vocabulary: a complete model
  tests/data/tiny/<name>-hf/    HF save_pretrained folder (config.json +
                                model.safetensors, weights in bfloat16)
Every weight is drawn from a fixed seed and rounded to a bfloat16 value, so
the bf16 safetensors, the f32 GGUF and the f32 reference model all hold the
very same numbers (load the HF folder with dtype=torch.float32).
Norm weights are multiples of 1/128 in [-0.5, 0.5] ([1, 2] for the final
norm, see EMBD_STD): random, so a missing or doubled +1 is caught, and exact
in bf16 as w and in f32 as 1 + w.

Checks run every time (the script fails if one does not hold):
  - GGUF -> HF loader (gemma_gguf.load_gguf_as_hf) gives logits bit-equal to
    the model that was written, and so does the saved HF folder;
  - gemma2: a good fraction of attention scores and final logits lie beyond
    cap/2, so the softcaps really bend them;
  - gemma3: rope inverse frequencies are 1e6-based / 8 on the global layer
    and 10000-based on local layers.

Run:  /work/refenv/bin/python tools/golden/make_tiny_models.py [out_dir]
"""
from __future__ import annotations

import copy
import json
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gemma_gguf as gg  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N_VOCAB = 512
SEEDS = {"gemma1": 1001, "gemma2": 1002, "gemma3": 1003}
CONTEXT_LENGTH = 256      # > longest prompt + 32 greedy tokens

# Shared sizes (issue spec): hidden 64, 4 heads of 16, ffn 128, vocab 512.
COMMON = dict(vocab_size=N_VOCAB, hidden_size=64, num_attention_heads=4,
              head_dim=16, intermediate_size=128, rms_norm_eps=1e-6,
              max_position_embeddings=CONTEXT_LENGTH, tie_word_embeddings=True,
              bos_token_id=2, eos_token_id=1, pad_token_id=0)


def tiny_configs() -> dict:
    from transformers import GemmaConfig, Gemma2Config, Gemma3TextConfig
    return {
        # Gemma 1 in transformers 5.x has `hidden_act` (no hidden_activation).
        "gemma1": GemmaConfig(**COMMON, num_hidden_layers=3, num_key_value_heads=1,
                              hidden_act="gelu_pytorch_tanh"),
        # Caps small enough that the random model's scores/logits reach them.
        "gemma2": Gemma2Config(**COMMON, num_hidden_layers=4, num_key_value_heads=2,
                               hidden_activation="gelu_pytorch_tanh",
                               sliding_window=8, query_pre_attn_scalar=16,
                               attn_logit_softcapping=5.0,
                               final_logit_softcapping=3.0),
        # 7 layers: 0-4 and 6 local, 5 global. Global rope: base 1e6, linear
        # scaling 8 (as in G3 4B+); local: base 10000, no scaling.
        "gemma3": Gemma3TextConfig(
            **COMMON, num_hidden_layers=7, num_key_value_heads=2,
            hidden_activation="gelu_pytorch_tanh", sliding_window=8,
            query_pre_attn_scalar=16, final_logit_softcapping=None,
            attn_logit_softcapping=None,
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 8.0,
                                   "rope_theta": 1_000_000.0},
                "sliding_attention": {"rope_type": "default",
                                      "rope_theta": 10_000.0}}),
    }


# ---- weights ------------------------------------------------------------------

# Tied embeddings make a random model predict its input token: the logit of
# the current token grows with the share of E[token] in the residual stream.
# So the embedding is small (x0 = 8·E has RMS ~0.8, well below what the
# layers add), and the final norm's weight is large (1 + w in [2, 3]) to bring
# the logits' spread back to ~2.
EMBD_STD = 0.1
FINAL_NORM_BASE = 1.5   # w = 1.5 + k/128, k in [-64, 64]
QK_GAIN = 2.0           # sharper attention (and a clearly active G2 attn cap)
OUT_GAIN = 1.5          # o_proj and down_proj: what each layer adds to x


def bf16_exact(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(torch.float32)


def randomize(model, seed: int) -> None:
    """Overwrites every parameter with seeded, bf16-exact random values."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "lm_head.weight":
                continue                          # tied to embed_tokens
            if gg.is_norm(name):
                steps = torch.randint(-64, 65, p.shape, generator=g)
                base = FINAL_NORM_BASE if name == "model.norm.weight" else 0.0
                p.copy_(base + steps.to(torch.float32) / 128.0)
            elif name == "model.embed_tokens.weight":
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * EMBD_STD))
            else:                                 # Linear [out, in]
                std = p.shape[1] ** -0.5
                if name.endswith(("q_proj.weight", "k_proj.weight")):
                    std *= QK_GAIN
                if name.endswith(("o_proj.weight", "down_proj.weight")):
                    std *= OUT_GAIN
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * std))
    assert model.lm_head.weight.data_ptr() == \
        model.model.embed_tokens.weight.data_ptr(), "lm_head must be tied"


def build_model(name: str, config):
    _, cls = gg.hf_classes(gg.arch_of_config(config))
    config._attn_implementation = "eager"
    torch.manual_seed(SEEDS[name])
    model = cls(config).to(torch.float32).eval()
    randomize(model, SEEDS[name])
    return model


# ---- tokenizer ----------------------------------------------------------------

WORDS = ("the of and to in is it that was for on are with as be at by this "
         "have from or one had not but what all were when we there can an your "
         "which their said if do will each about how up out them then she many "
         "some so these would other into has more her two like him see time "
         "could no make than first been its who now people my made over did "
         "down only way find use may water long little very after words called "
         "just where most know").split()
PAIRS = ("th he in er an re on at en nd ti es or te of ed is it al ar st to nt "
         "ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce").split()


def tiny_vocab() -> dict:
    """A 512-token SPM vocabulary laid out like Gemma's: 4 specials, 256 byte
    tokens, then 252 normal pieces with descending scores. Every multi-char
    piece's one-shorter prefix is also a piece, so BPE merges can reach it."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"]
    types = [gg.TOKEN_CONTROL, gg.TOKEN_CONTROL, gg.TOKEN_CONTROL, gg.TOKEN_UNKNOWN]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gg.TOKEN_BYTE] * 256
    normal = ["\u2581"]
    normal += [chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += ["\u2581" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    normal += [str(d) for d in range(10)] + list(".,!?'-:;()")
    normal += PAIRS
    n_normal = N_VOCAB - len(tokens)
    for word in WORDS:
        piece = "\u2581" + word
        for k in range(2, len(piece) + 1):
            if piece[:k] not in normal and len(normal) < n_normal:
                normal.append(piece[:k])
    while len(normal) < n_normal:                 # WORDS is long enough; guard
        normal.append(f"\u2581w{len(normal)}")
    assert len(set(normal)) == n_normal
    scores = [0.0] * len(tokens) + [-float(i) for i in range(n_normal)]
    tokens += normal
    types += [gg.TOKEN_NORMAL] * n_normal
    return {"tokens": tokens, "scores": scores, "types": types,
            "bos": 2, "eos": 1, "unk": 3, "pad": 0}


# ---- checks -------------------------------------------------------------------

def probe_ids(n: int = 40, seed: int = 7) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, N_VOCAB, (1, n), generator=g)
    ids[0, 0] = 2
    return ids


@torch.no_grad()
def logits_of(model, ids) -> torch.Tensor:
    return model(input_ids=ids, use_cache=False).logits[0]


@contextmanager
def record_raw_scores(store: list):
    """Records scaled, pre-softcap attention scores of every eager Gemma-2
    attention call (wraps the module-level function the layers look up)."""
    from transformers.models.gemma2 import modeling_gemma2 as m
    original = m.eager_attention_forward

    def wrapped(module, query, key, value, attention_mask, **kw):
        k = m.repeat_kv(key, module.num_key_value_groups)
        s = torch.matmul(query, k.transpose(2, 3)) * kw["scaling"]
        t = s.shape[-1]
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        store.append(s[..., causal].flatten())
        return original(module, query, key, value, attention_mask, **kw)

    m.eager_attention_forward = wrapped
    try:
        yield
    finally:
        m.eager_attention_forward = original


def check_gemma2_caps(model) -> dict:
    cfg = model.config
    attn_cap, final_cap = cfg.attn_logit_softcapping, cfg.final_logit_softcapping
    scores: list = []
    with record_raw_scores(scores):
        logits = logits_of(model, probe_ids())
    s = torch.cat(scores).abs()
    # Final logits before the cap: the same model with the cap switched off.
    cfg.final_logit_softcapping = None
    raw = logits_of(model, probe_ids()).abs()
    cfg.final_logit_softcapping = final_cap
    stats = {
        "attn_frac_over_half_cap": float((s > attn_cap / 2).float().mean()),
        "attn_max_raw": float(s.max()),
        "final_frac_over_half_cap": float((raw > final_cap / 2).float().mean()),
        "final_max_raw": float(raw.max()),
        "max_abs_capped_logit": float(logits.abs().max()),
    }
    if stats["attn_frac_over_half_cap"] < 0.1 or stats["final_frac_over_half_cap"] < 0.1:
        raise SystemExit(f"gemma2 caps not active enough: {stats}")
    return stats


def check_gemma3_rope(model) -> None:
    rot = model.model.rotary_emb
    j = torch.arange(0, 16, 2, dtype=torch.float32) / 16
    want_global = 1.0 / (1_000_000.0 ** j) / 8.0
    want_local = 1.0 / (10_000.0 ** j)
    assert torch.allclose(rot.full_attention_inv_freq, want_global, rtol=1e-6), "global rope"
    assert torch.allclose(rot.sliding_attention_inv_freq, want_local, rtol=1e-6), "local rope"
    types = model.config.layer_types
    assert [t == "full_attention" for t in types] == [i % 6 == 5 for i in range(7)], types
    windows = [layer.self_attn.sliding_window for layer in model.model.layers]
    assert windows == [8, 8, 8, 8, 8, None, 8], windows


def check_roundtrip(name: str, model, gguf_path: Path, hf_dir: Path) -> None:
    """GGUF loader and the saved HF folder both reproduce the logits exactly."""
    ids = probe_ids()
    want = logits_of(model, ids)
    loaded, _ = gg.load_gguf_as_hf(str(gguf_path))
    got = logits_of(loaded, ids)
    if not torch.equal(want, got):
        raise SystemExit(f"{name}: GGUF round trip differs, max |d| "
                         f"{(want - got).abs().max():.3g}")
    _, cls = gg.hf_classes(gg.arch_of_config(model.config))
    hf = cls.from_pretrained(hf_dir, dtype=torch.float32,
                             attn_implementation="eager").eval()
    if not torch.equal(want, logits_of(hf, ids)):
        raise SystemExit(f"{name}: HF folder round trip differs")


def describe(model) -> dict:
    logits = logits_of(model, probe_ids())
    lse = torch.logsumexp(logits.double(), -1)
    ids = probe_ids()[0]
    pmax = torch.softmax(logits.double(), -1).max(-1).values
    return {"max_abs_logit": round(float(logits.abs().max()), 3),
            "logit_std": round(float(logits.std()), 3),
            "median_top_p": round(float(pmax.median()), 3),
            "frac_argmax_is_input": round(float((logits.argmax(-1) == ids).float().mean()), 3),
            "lse_range": [round(float(lse.min()), 3), round(float(lse.max()), 3)]}


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests/data/tiny"
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    total = 0
    for name, config in tiny_configs().items():
        model = build_model(name, config)
        gguf_path = out_dir / f"{name}.gguf"
        hf_dir = out_dir / f"{name}-hf"
        gg.write_gguf(str(gguf_path), model, vocab, name=f"spillway-tiny-{name}",
                      context_length=CONTEXT_LENGTH)
        if hf_dir.exists():
            shutil.rmtree(hf_dir)
        # A bf16 copy: converting `model` in place would also round its rope
        # buffers (inv_freq), which are not weights.
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(
            hf_dir, safe_serialization=True)
        for extra in hf_dir.glob("generation_config.json"):
            extra.unlink()                        # not needed; keep it small
        check_roundtrip(name, model, gguf_path, hf_dir)
        info = describe(model)
        if name == "gemma2":
            info.update(check_gemma2_caps(model))
        if name == "gemma3":
            check_gemma3_rope(model)
        files = [gguf_path] + sorted(hf_dir.iterdir())
        for f in files:
            total += f.stat().st_size
            print(f"  {f.relative_to(out_dir)}: {f.stat().st_size} bytes")
        print(f"{name}: {json.dumps(info)}")
    print(f"total {total} bytes ({total / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
