#!/usr/bin/env python3
"""make_hf_sharded.py — a sharded Hugging Face checkpoint for the folder reader.

Loads tests/data/tiny/gemma2-hf (written by make_tiny_models.py) with
transformers and saves it again with a small max_shard_size, so
transformers itself writes model-0000K-of-0000N.safetensors files and
model.safetensors.index.json, into tests/data/tiny/gemma2-hf-sharded/.
The weights are unchanged, so the golden logits of gemma2 still apply
(tests: forward_gemma2_hf_sharded).

Run:  /work/refenv/bin/python tools/golden/make_hf_sharded.py
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "tests/data/tiny/gemma2-hf"
DST = REPO / "tests/data/tiny/gemma2-hf-sharded"


def main() -> int:
    model = AutoModelForCausalLM.from_pretrained(SRC, dtype=torch.bfloat16)
    if DST.exists():
        shutil.rmtree(DST)
    model.save_pretrained(DST, max_shard_size="100KB")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (SRC / name).exists():
            shutil.copy(SRC / name, DST / name)
    index = json.loads((DST / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    print(f"{DST.relative_to(REPO)}: {len(index['weight_map'])} tensors in {len(shards)} shards")
    if len(shards) < 2:
        print("expected several shards", file=sys.stderr)
        return 1
    again = AutoModelForCausalLM.from_pretrained(DST, dtype=torch.bfloat16)
    for (n1, p1), (n2, p2) in zip(model.state_dict().items(), again.state_dict().items()):
        assert n1 == n2 and torch.equal(p1, p2), n1
    print("reloaded: identical weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
