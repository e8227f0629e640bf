#!/usr/bin/env python3
"""make_tiny_assistant.py — tiny random Gemma 4 assistants (MTP drafters)
for the tiny Gemma 4 targets, and goldens of their drafts.

Reference: Hugging Face transformers 5.25 (models/gemma4_assistant,
generation/candidate_generator.py's SinglePositionMultiTokenCandidateGenerator),
PyTorch on the CPU, float32, eager attention.

Writes:
  tests/data/tiny/<target>-assistant-hf/   config.json + model.safetensors
        (bfloat16; every weight drawn bf16-exact, so the file holds the very
        f32 weights the reference ran with)
  tests/data/golden/<target>-assistant.swgold

for two pairs:
  gemma4-kv  (like 31B: no KV sharing, keys as values on full layers)
        + a dense-head assistant (hidden 32, layers S S S F), as the 26B and
        31B assistants use the tied dense head;
  gemma4-ple (like E2B: KV sharing, MQA)
        + a centroid-head assistant (use_ordered_embeddings: 16 centroids
        of 32 tokens, top 4, token_ordering a random permutation), as the
        E2B and E4B assistants use.

Golden entries per prompt i (ids i32 [P]):
  p{i}.ids            the prompt (BOS first)
  p{i}.bonus          the target's greedy token after the prompt
  p{i}.draft_ids      i32 [K]   the assistant's greedy drafts after it
  p{i}.draft_logits   f32 [K,V] the assistant's logits at each draft step
  p{i}.output         i32 [N]   greedy assisted output (equal to plain greedy)
  p{i}.accepted       i32 [R]   drafts accepted in each of the R verify rounds
and header entries: k (drafts per round), n_new, version text.

What the drafter attends to. At a draft round the target has evaluated the
positions before the bonus token q = len(ids) - 1 ... q - 1; the drafter's
query sits at q (RoPE position q, all K steps) and attends to the target's
cached keys and values of its last full layer at positions 0..q-1 and of its
last sliding layer at positions q-W..q-1 (the window the target itself
attends with from q - 1). transformers 5.25's candidate generator hands the
assistant its cache slices as they lie after the verify forward: the full
layer's up to and including position q, which after a rejection holds the
first rejected draft's key (and after a prefill or a full acceptance does
not), and the sliding layer's last W + 1 entries written, rejected drafts
included. Those depend on what the verify wrote past the kept tokens, so
this script feeds the assistant the slices above instead (the positions
before q, in both cases); `--stock` reports how often transformers' own
slices change the accepted counts on these prompts.

Checks (the script fails if one does not hold): every weight bf16-exact;
the saved folder reloads to bit-equal drafts; assisted output equals plain
greedy output; each draft's argmax clears the runner-up by 1e-3; no output
holds an end-of-generation token.

Run:  /work/venv-ref/bin/python tools/golden/make_tiny_assistant.py [--stock]
(venv: torch, transformers==5.25.0, safetensors, numpy; nothing here runs
in CI; outputs are committed.)
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_format import GoldenWriter  # noqa: E402
from make_tiny_gemma4 import bf16_exact  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/tiny"
GOLDEN = REPO / "tests/data/golden"
S, F = "sliding_attention", "full_attention"
K = 4            # drafts per round
N_NEW = 24       # tokens generated per prompt
N_PROMPTS = 6
EOG = {1, 106}   # <eos>, <turn|>

# target -> (assistant text config, assistant config, seed)
PAIRS = {
    "gemma4-kv": (dict(num_key_value_heads=2, num_global_key_value_heads=1,
                       attention_k_eq_v=True, rope_partial=0.5),
                  dict(use_ordered_embeddings=False), 2001),
    "gemma4-ple": (dict(num_key_value_heads=1, num_global_key_value_heads=None,
                        attention_k_eq_v=False, rope_partial=0.25),
                   dict(use_ordered_embeddings=True, num_centroids=16,
                        centroid_intermediate_top_k=4), 2002),
}


def load_target(name: str):
    from transformers import Gemma4ForCausalLM
    return Gemma4ForCausalLM.from_pretrained(TINY / f"{name}-hf", dtype=torch.float32,
                                             attn_implementation="eager").eval()


def assistant_config(target, spec: dict, head: dict):
    from transformers import Gemma4AssistantConfig, Gemma4TextConfig
    t = target.config
    rope = {S: {"rope_type": "default", "rope_theta": 10_000.0},
            F: {"rope_type": "proportional", "partial_rotary_factor": spec["rope_partial"],
                "rope_theta": 1_000_000.0}}
    text = Gemma4TextConfig(
        vocab_size=t.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=spec["num_key_value_heads"], head_dim=16,
        global_head_dim=32, num_global_key_value_heads=spec["num_global_key_value_heads"],
        attention_k_eq_v=spec["attention_k_eq_v"], hidden_activation="gelu_pytorch_tanh",
        rms_norm_eps=1e-6, sliding_window=t.sliding_window,
        max_position_embeddings=t.max_position_embeddings, layer_types=[S, S, S, F],
        hidden_size_per_layer_input=0, vocab_size_per_layer_input=0,
        num_kv_shared_layers=4, tie_word_embeddings=True, final_logit_softcapping=None,
        rope_parameters=rope, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    cfg = Gemma4AssistantConfig(text_config=text, backbone_hidden_size=t.hidden_size, **head)
    cfg._attn_implementation = "eager"
    cfg.text_config._attn_implementation = "eager"
    return cfg


def randomize(model, seed: int) -> None:
    """Seeded bf16-exact values for every parameter and layer_scalar;
    norm weights 1 + k/128 (Gemma 4 norms multiply by w); a random token
    ordering for the centroid head."""
    g = torch.Generator().manual_seed(seed)
    tensors = dict(model.named_parameters())
    tensors.update((n, b) for n, b in model.named_buffers() if n.endswith("layer_scalar"))
    with torch.no_grad():
        for name in sorted(tensors):
            p = tensors[name]
            if name == "lm_head.weight":
                continue
            if name.endswith("norm.weight") or name.endswith("layer_scalar"):
                k = torch.randint(-64, 65, p.shape, generator=g).float()
                p.copy_(1.0 + k / 128.0)
            elif name == "model.embed_tokens.weight":
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * 0.5))
            else:
                p.copy_(bf16_exact(torch.randn(p.shape, generator=g) * p.shape[-1] ** -0.5))
        if model.masked_embedding is not None:
            perm = torch.randperm(model.vocab_size, generator=g)
            model.masked_embedding.token_ordering.copy_(perm)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def build_assistant(name: str):
    from transformers import Gemma4AssistantForCausalLM
    spec, head, seed = PAIRS[name]
    target = load_target(name)
    torch.manual_seed(seed)
    a = Gemma4AssistantForCausalLM(assistant_config(target, spec, head)).float().eval()
    randomize(a, seed)
    a.generation_config.num_assistant_tokens = K
    a.generation_config.num_assistant_tokens_schedule = "constant"
    return target, a


def save_assistant(a, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    b = copy.deepcopy(a).to(torch.bfloat16)
    if b.masked_embedding is not None:  # the ordering stays int64
        b.masked_embedding.token_ordering = a.masked_embedding.token_ordering.clone()
    b.save_pretrained(out, safe_serialization=True)
    for extra in out.glob("generation_config.json"):
        extra.unlink()


def load_assistant(path: Path):
    from transformers import Gemma4AssistantForCausalLM
    a = Gemma4AssistantForCausalLM.from_pretrained(path, dtype=torch.float32,
                                                   attn_implementation="eager").eval()
    a.generation_config.num_assistant_tokens = K
    a.generation_config.num_assistant_tokens_schedule = "constant"
    return a


# ---- the drafter on given target states ---------------------------------------------

def target_states(target, ids: list[int], q: int):
    """The target over ids[:q] (no cache): the final hidden state of row
    q - 1 and the store layers' keys/values cut to the drafter's view."""
    with torch.no_grad():
        out = target(input_ids=torch.tensor([ids[:q]]), use_cache=False,
                     output_hidden_states=True, return_shared_kv_states=True)
    w = target.config.sliding_window
    kv = out.shared_kv_states
    full = tuple(t[:, :, :q] for t in kv[F])
    swa = tuple(t[:, :, max(0, q - w):q] for t in kv[S])
    return out.hidden_states[-1][:, q - 1:q], {F: full, S: swa}, out.logits[0, -1]


def draft(target, a, ids: list[int], hidden, kv, k: int):
    """k greedy drafts from the token ids[-1] at position len(ids) - 1."""
    emb = target.get_input_embeddings()
    tok = torch.tensor([[ids[-1]]])
    pos = torch.tensor([[len(ids) - 1]])
    toks, logits = [], []
    for _ in range(k):
        with torch.no_grad():
            o = a(inputs_embeds=torch.cat([emb(tok), hidden], dim=-1), position_ids=pos,
                  shared_kv_states=kv, attention_mask=None)
        lg = o.logits[0, -1]
        tok = lg.argmax().view(1, 1)
        hidden = o.last_hidden_state
        toks.append(int(tok))
        logits.append(lg.clone())
    return toks, torch.stack(logits)


def top_gap(lg: torch.Tensor) -> float:
    v = torch.topk(lg, 2).values
    return float(v[0] - v[1])


# ---- assisted generation -----------------------------------------------------------

def patch_generator(matches: list, drafted: list, stock: bool):
    """Records each round's drafts and (at the next round) its accepted
    count; unless stock, gives the assistant the target's keys/values
    before the bonus token (see the module doc) in place of the verify
    forward's slices."""
    from transformers.generation import candidate_generator as cg
    cls = cg.SinglePositionMultiTokenCandidateGenerator
    orig = cls.get_candidates

    def ours(self, input_ids, model_outputs, n_last_matches):
        ids = input_ids[0].tolist()
        n = min(int(self.num_assistant_tokens), self.main_model_max_length - len(ids) - 1)
        if n <= 0:
            return input_ids, None
        hs = model_outputs.hidden_states[-1]
        hidden = hs[:, -1:] if self.is_main_model_prefill else \
            hs[:, n_last_matches:n_last_matches + 1]
        _, kv, _ = target_states(self._target, ids, len(ids) - 1)
        toks, logits = draft(self._target, self.assistant_model, ids, hidden, kv, n)
        self.is_main_model_prefill = False
        return torch.cat([input_ids, torch.tensor([toks])], dim=1), logits.unsqueeze(0)

    def get_candidates(self, input_ids, model_kwargs, model_outputs, is_first_iteration,
                       n_last_matches, **kw):
        if is_first_iteration:
            return orig(self, input_ids, model_kwargs, model_outputs, is_first_iteration,
                        n_last_matches, **kw)
        if drafted:
            matches.append(int(n_last_matches))
        if stock:
            cand, lg = orig(self, input_ids, model_kwargs, model_outputs, is_first_iteration,
                            n_last_matches, **kw)
        else:
            cand, lg = ours(self, input_ids, model_outputs, n_last_matches)
        drafted.append(cand.shape[1] - input_ids.shape[1])
        return cand, lg

    cls.get_candidates = get_candidates
    return lambda: setattr(cls, "get_candidates", orig)


def assisted(target, a, ids: list[int], stock: bool):
    """Greedy assisted generation: the new tokens and the drafts accepted
    in each round that drafted (rounds left without room draft none)."""
    from transformers.generation import candidate_generator as cg
    matches: list[int] = []
    drafted: list[int] = []
    undo = patch_generator(matches, drafted, stock)
    cg.SinglePositionMultiTokenCandidateGenerator._target = target
    try:
        with torch.no_grad():
            out = target.generate(torch.tensor([ids]), assistant_model=a, do_sample=False,
                                  max_new_tokens=N_NEW, min_new_tokens=N_NEW)
    finally:
        undo()
    new = out[0, len(ids):].tolist()
    # the last round's count reaches no later call: it is what is left
    matches.append(len(new) - 1 - sum(m + 1 for m in matches) - 1)
    return new, [m for m, d in zip(matches, drafted) if d > 0]


def plain(target, ids: list[int]) -> list[int]:
    with torch.no_grad():
        out = target.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=N_NEW,
                              min_new_tokens=N_NEW)
    return out[0, len(ids):].tolist()


def prompts(name: str, target) -> list[list[int]]:
    g = torch.Generator().manual_seed(PAIRS[name][2] + 7)
    out = []
    while len(out) < N_PROMPTS:
        n = int(torch.randint(5, 14, (1,), generator=g))
        ids = [2] + torch.randint(8, target.config.vocab_size, (n,), generator=g).tolist()
        if not EOG & set(plain(target, ids)):
            out.append(ids)
    return out


def train(target, a, seqs: list[list[int]], first: int, steps: int = 12) -> None:
    """A short distillation so that drafts are sometimes accepted (random
    weights never are): on the target's own greedy sequences, two unrolled
    draft steps learn the target's next two tokens at every position from
    `first` on. Then every weight is rounded to bf16 again."""
    samples = []
    w = target.config.sliding_window
    for ids in seqs:
        with torch.no_grad():
            out = target(input_ids=torch.tensor([ids]), use_cache=False,
                         output_hidden_states=True, return_shared_kv_states=True)
        hs, kv = out.hidden_states[-1], out.shared_kv_states
        for q in range(first, len(ids) - 2):
            view = {F: tuple(t[:, :, :q] for t in kv[F]),
                    S: tuple(t[:, :, max(0, q - w):q] for t in kv[S])}
            samples.append((ids, q, hs[:, q - 1:q], view))
    emb = target.get_input_embeddings()
    opt = torch.optim.Adam(a.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(11)
    a.train()
    for _ in range(steps):
        for b in torch.randperm(len(samples), generator=g).split(32):
            opt.zero_grad()
            loss = 0.0
            for j in b.tolist():
                ids, q, hidden, view = samples[j]
                tok = torch.tensor([[ids[q]]])
                pos = torch.tensor([[q]])
                for step in range(2):
                    with torch.no_grad():
                        e = emb(tok)
                    o = a(inputs_embeds=torch.cat([e, hidden], dim=-1), position_ids=pos,
                          shared_kv_states=view, attention_mask=None)
                    want = torch.tensor([ids[q + 1 + step]])
                    loss = loss + torch.nn.functional.cross_entropy(o.logits[0], want)
                    tok, hidden = want.view(1, 1), o.last_hidden_state
            (loss / len(b)).backward()
            opt.step()
    a.eval()
    with torch.no_grad():
        for p in a.parameters():
            p.copy_(bf16_exact(p))


def make(name: str, stock_report: bool) -> None:
    target, a = build_assistant(name)
    ps = prompts(name, target)
    train(target, a, [ids + plain(target, ids) for ids in ps], first=min(map(len, ps)))
    folder = TINY / f"{name}-assistant-hf"
    save_assistant(a, folder)
    a = load_assistant(folder)
    w = GoldenWriter()
    w.add_text("version", f"tools/golden/make_tiny_assistant.py: transformers "
                      f"{version('transformers')}, torch {torch.__version__}, float32 eager")
    w.add_i32("k", np.array(K, dtype=np.int32))
    w.add_i32("n_new", np.array(N_NEW, dtype=np.int32))
    total = rounds = 0
    for i, ids in enumerate(ps):
        hidden, kv, last = target_states(target, ids, len(ids))
        bonus = int(last.argmax())
        toks, logits = draft(target, a, ids + [bonus], hidden, kv, K)
        gaps = [top_gap(l) for l in logits]
        if min(gaps) < 1e-3:
            raise SystemExit(f"{name} p{i}: a near tie among the drafts ({min(gaps):g})")
        new, acc = assisted(target, a, ids, stock=False)
        want = plain(target, ids)
        if new != want:
            raise SystemExit(f"{name} p{i}: assisted output differs from greedy")
        w.add_i32(f"p{i}.ids", np.array(ids, dtype=np.int32))
        w.add_i32(f"p{i}.bonus", np.array(bonus, dtype=np.int32))
        w.add_i32(f"p{i}.draft_ids", np.array(toks, dtype=np.int32))
        w.add_f32(f"p{i}.draft_logits", logits.numpy().astype(np.float32))
        w.add_i32(f"p{i}.output", np.array(new, dtype=np.int32))
        w.add_i32(f"p{i}.accepted", np.array(acc, dtype=np.int32))
        total += sum(acc)
        rounds += len(acc)
        line = f"{name} p{i}: {len(ids)} prompt tokens, drafts {toks}, accepted {acc}"
        if stock_report:
            _, acc_stock = assisted(target, a, ids, stock=True)
            line += f"; stock transformers {acc_stock}"
        print(line)
    w.add_i32("n_prompts", np.array(N_PROMPTS, dtype=np.int32))
    out = GOLDEN / f"{name}-assistant.swgold"
    w.write(out)
    print(f"{name}: {rounds} rounds, {total} drafts accepted of {rounds * K}; wrote {out}")
    # the saved folder gives the same drafts as the model that made them
    b = load_assistant(folder)
    for i in range(2):
        ids = ps[i]
        hidden, kv, last = target_states(target, ids, len(ids))
        t1, l1 = draft(target, a, ids + [int(last.argmax())], hidden, kv, K)
        t2, l2 = draft(target, b, ids + [int(last.argmax())], hidden, kv, K)
        if t1 != t2 or not torch.equal(l1, l2):
            raise SystemExit(f"{name}: the saved assistant reloads differently")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stock", action="store_true",
                    help="also report transformers' own KV slices' accepted counts")
    ap.add_argument("--only", choices=sorted(PAIRS), action="append")
    args = ap.parse_args()
    for name in args.only or sorted(PAIRS):
        make(name, args.stock)


if __name__ == "__main__":
    main()
